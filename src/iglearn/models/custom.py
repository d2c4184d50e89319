"""Policies and decoders built from any ``torch.nn.Module``.

A learner's ``policy`` or ``decoder`` setting may be, besides the names of the built-in classes
('linear', 'mlp'):

- a **factory**, ``factory(in_dim, out_dim, generator) -> torch.nn.Module``: called once per
  initialisation (every restart, every trial of ``fit_many``) with the input dimension (d_x
  for a policy, d_y for a decoder), the output dimension (K for a policy, 1 for a decoder)
  and a seeded ``torch.Generator`` to draw the initial weights from; torch's global
  generator is seeded from it during the call (and restored after), so a factory that
  keeps torch's default initialisation is reproducible too;
- a **module instance**: a template, deep-copied for every initialisation, whose
  ``torch.nn.Linear`` layers are redrawn from the seeded generator (other parameters keep
  the template's values).

The contracts, checked on a probe batch before a fit starts (:func:`check_contract`):

- a policy module maps contexts of shape (n, d_x) to **scores** of shape (n, K); the policy
  is softmax(scores / temperature);
- a decoder module maps feedback of shape (n, d_y) to **one logit per row**, shape (n, 1) or
  (n,); the decoder is sigmoid(logit / temperature).

Nothing more is asked of the module. The data-driven corrector's flip (psi -> 1 - psi) and
the policy negation (scores -> -scores) are sign flags that the wrapper holds
(:class:`CustomDecoder`'s ``flipped``, :class:`CustomPolicy`'s ``negated``), applied to the
module's output, so they work whatever the module's last layer is and are saved with its
weights.

Fits of several trials side by side (``fit_many``) keep one copy of each parameter per trial
on a leading trial axis (:func:`iglearn.models.stacked.stack`) and run the module trial by
trial with ``torch.func.functional_call``: correct for any module, each trial exactly as
alone.

A model folder stores a custom module as its weights and the import path of its factory
(``module:function``), never as pickled code (:func:`factory_path`); a module given as an
instance, a lambda or a function defined inside another cannot be rebuilt safely and is
refused when saving.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable
from typing import TypeAlias

import torch
from torch import nn

from iglearn.errors import IGLearnError
from iglearn.models.decoders import DECODERS, Decoder, logistic
from iglearn.models.init import reset_parameters
from iglearn.models.kernels import log_softmax, softmax
from iglearn.models.kinds import CUSTOM
from iglearn.models.policies import POLICIES, Policy

ModelFactory: TypeAlias = Callable[[int, int, torch.Generator], nn.Module]
"""``factory(in_dim, out_dim, generator) -> torch.nn.Module``."""
ModelSpec: TypeAlias = str | nn.Module | ModelFactory
"""A policy or a decoder as a learner takes it: a built-in class's name, a module (a
template) or a factory."""
"""The class name model.json records for a module built by a factory."""


def _signed(output: torch.Tensor, flag: torch.Tensor, dims: int) -> torch.Tensor:
    """``output`` negated where ``flag`` (one per trial, or one) is set."""
    return torch.where(flag.view(*flag.shape, *[1] * dims), -output, output)


class _TrialAxis:
    """Runs a module whose parameters and buffers carry a leading trial axis (set by
    :func:`~iglearn.models.stacked.stack`) on (T, n, ...) inputs or a list of T inputs, one
    trial at a time, with ``torch.func.functional_call``."""

    net: nn.Module
    trials: int

    def _run(self, inputs: torch.Tensor | list[torch.Tensor]) -> torch.Tensor:
        if not self.trials:
            return self.net(inputs)
        state: dict[str, torch.Tensor] = dict(self.net.named_parameters())
        state.update(self.net.named_buffers())
        return torch.stack([torch.func.functional_call(
            self.net, {name: tensor[t] for name, tensor in state.items()}, (inputs[t],))
            for t in range(self.trials)])


class CustomPolicy(_TrialAxis, Policy):
    """A softmax policy on a user's score module (see the module docstring)."""

    kind = CUSTOM
    negated: torch.Tensor

    def __init__(self, net: nn.Module, temperature: float = 1.0,
                 factory: str | None = None, dims: tuple[int, int] = (0, 0)):
        super().__init__(net, temperature)
        self.dims = dims
        """(d_x, K): the module's input and output dimensions."""
        self.factory = factory
        """The import path of the factory that built ``net`` (``module:function``), if any."""
        self.trials = 0
        """T when the parameters carry a leading trial axis (a stacked fit), else 0."""
        self.register_buffer("negated", torch.tensor(False))

    def scores(self, context: torch.Tensor) -> torch.Tensor:
        """The module's scores, negated if the policy negation has flipped them."""
        return _signed(self._run(context), self.negated, 2)

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        """Log-probabilities log pi(. | x), shape (n, K)."""
        return log_softmax(self.scores(context) / self.temperature)

    def probabilities(self, context: torch.Tensor) -> torch.Tensor:
        """pi(. | x), shape (n, K)."""
        return softmax(self.scores(context) / self.temperature)


class CustomDecoder(_TrialAxis, Decoder):
    """A sigmoid decoder on a user's logit module (see the module docstring)."""

    kind = CUSTOM

    def __init__(self, net: nn.Module, temperature: float = 0.1, factory: str | None = None,
                 dims: tuple[int, int] = (0, 1)):
        super().__init__(net, temperature)
        self.dims = dims
        """(d_y, 1): the module's input and output dimensions."""
        self.factory = factory
        """The import path of the factory that built ``net`` (``module:function``), if any."""
        self.trials = 0
        """T when the parameters carry a leading trial axis (a stacked fit), else 0."""

    def raw(self, feedback: torch.Tensor) -> torch.Tensor:
        """psi(y) before the corrector, shape (n,)."""
        logit = self._run(feedback)
        rank = 3 if self.trials else 2
        if logit.dim() == rank:
            logit = logit.squeeze(-1)
        return logistic(logit / self.temperature)


def is_custom(spec: object) -> bool:
    """Whether a policy or decoder setting names a user's module rather than a built-in."""
    return not isinstance(spec, str)


def check_spec(spec: object, name: str, builtins: dict) -> None:
    """An error naming the fix unless ``spec`` is a built-in class name, a module or a
    callable (checked when a learner is constructed)."""
    if isinstance(spec, str):
        if spec not in builtins:
            raise IGLearnError(f"{name}={spec!r} is not a {name} class; give one of "
                               f"{', '.join(sorted(builtins))}, a torch.nn.Module, or a "
                               f"factory (in_dim, out_dim, generator) -> torch.nn.Module")
    elif not isinstance(spec, nn.Module) and not callable(spec):
        raise IGLearnError(f"{name} is a {type(spec).__name__}; give one of "
                           f"{', '.join(sorted(builtins))}, a torch.nn.Module, or a factory "
                           f"(in_dim, out_dim, generator) -> torch.nn.Module")


def check_specs(learner: object) -> None:
    """:func:`check_spec` of each model setting a learner has, ``policy`` and ``decoder``
    (:data:`BUILTINS`), when it is constructed."""
    for name, builtins in BUILTINS.items():
        if hasattr(learner, name):
            check_spec(getattr(learner, name), name, builtins)


def build_module(spec: nn.Module | ModelFactory, in_dim: int, out_dim: int,
                 generator: torch.Generator, name: str) -> nn.Module:
    """A fresh module from a factory, or a copy of a template module with its linear layers
    redrawn from ``generator``."""
    if isinstance(spec, nn.Module):
        module = copy.deepcopy(spec)
        reset_parameters(module, generator)
        return module
    # torch's own initialisers draw from the global generator: seed it from ``generator``
    # for the call (and restore it after), so that a factory using them is reproducible too.
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = spec(in_dim, out_dim, generator)
    if not isinstance(module, nn.Module):
        raise IGLearnError(f"the {name} factory {_name(spec)} returned a "
                           f"{type(module).__name__}; it must return a torch.nn.Module")
    return module


def check_contract(module: nn.Module, in_dim: int, out_dim: int, name: str) -> None:
    """An error naming the fix unless ``module`` maps a probe batch of shape (2, in_dim) to
    (2, out_dim) floating-point values (a decoder: (2, 1) or (2,))."""
    what = "contexts" if name == "policy" else "feedback"
    wanted = "scores, one per action" if name == "policy" else "one logit per row"
    shapes = [(2, out_dim)] + ([(2,)] if name == "decoder" else [])
    parameter = next(module.parameters(), None)
    device = parameter.device if parameter is not None else None
    probe = torch.zeros(2, in_dim, device=device)
    training = module.training
    module.eval()  # the probe leaves no trace (batch-norm statistics, say)
    try:
        with torch.no_grad():
            output = module(probe)
    except Exception as e:  # a user's module: any failure is the contract's
        raise IGLearnError(f"the {name} module {type(module).__name__} fails on {what} of "
                           f"shape (n, {in_dim}) ({type(e).__name__}: {e}); it must map "
                           f"(n, {in_dim}) {what} to (n, {out_dim}) {wanted}") from None
    finally:
        module.train(training)
    if not isinstance(output, torch.Tensor) or tuple(output.shape) not in shapes:
        got = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
        raise IGLearnError(f"the {name} module {type(module).__name__} maps {what} of shape "
                           f"(2, {in_dim}) to {got}; it must give (2, {out_dim}), {wanted}")
    if not output.is_floating_point():
        raise IGLearnError(f"the {name} module {type(module).__name__} gives {output.dtype} "
                           f"values; it must give floating-point {wanted}")


def custom_policy(spec: nn.Module | ModelFactory, context_dim: int, n_actions: int,
                  generator: torch.Generator, temperature: float = 1.0) -> CustomPolicy:
    """A freshly initialised policy on a user's module, its contract checked."""
    module = build_module(spec, context_dim, n_actions, generator, "policy")
    check_contract(module, context_dim, n_actions, "policy")
    return CustomPolicy(module, temperature, factory_or_none(spec), (context_dim, n_actions))


def custom_decoder(spec: nn.Module | ModelFactory, feedback_dim: int,
                   generator: torch.Generator, temperature: float = 0.1) -> CustomDecoder:
    """A freshly initialised decoder on a user's module, its contract checked."""
    module = build_module(spec, feedback_dim, 1, generator, "decoder")
    check_contract(module, feedback_dim, 1, "decoder")
    return CustomDecoder(module, temperature, factory_or_none(spec), (feedback_dim, 1))


def _name(spec: object) -> str:
    return getattr(spec, "__qualname__", None) or type(spec).__name__


def factory_or_none(spec: object) -> str | None:
    """The import path ``module:function`` of a factory that a model folder can record, or
    None (a module instance, a lambda, a function defined inside another or in a script)."""
    if isinstance(spec, nn.Module) or not callable(spec):
        return None
    module, qualname = getattr(spec, "__module__", None), getattr(spec, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname or \
            module == "__main__":
        return None
    return f"{module}:{qualname}"


def factory_path(spec: object, name: str) -> str:
    """The import path of a factory a model folder records, or an error saying why ``spec``
    cannot be saved and what to do instead."""
    path = factory_or_none(spec)
    if path is None:
        if isinstance(spec, nn.Module):
            why = "it was given as a module instance"
        elif getattr(spec, "__module__", None) == "__main__":
            why = f"its factory {_name(spec)} is defined in a script (__main__)"
        else:
            why = f"its factory {_name(spec)} is not a module-level function"
        raise IGLearnError(f"cannot save the custom {name}: {why}, and a model folder holds "
                           f"weights and an importable factory path, never pickled code; pass "
                           f"a factory (in_dim, out_dim, generator) -> torch.nn.Module defined "
                           f"at the top level of an importable module")
    return path


def import_factory(path: str, name: str, source: str) -> ModelFactory:
    """The factory at ``module:function`` (imports that module: its code runs)."""
    module_name, _, qualname = path.partition(":")
    try:
        target: object = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError, ValueError) as e:
        raise IGLearnError(f"{source}: the {name} factory {path!r} cannot be imported ({e}); "
                           f"install or put on the Python path the module that defines "
                           f"it") from None
    if not callable(target):
        raise IGLearnError(f"{source}: the {name} factory {path!r} is not callable")
    return target


BUILTINS = {"policy": POLICIES, "decoder": DECODERS}
