"""Several models of one architecture run side by side, as one module with a leading trial
axis: how learners fit many trials (seeds, logs) as one batched computation.

``stack(models)`` copies T models into one module whose linear layers hold (T, out, in)
weights. They multiply (T, n, in) inputs by batched matmuls
(:func:`~iglearn.models.kernels.linear`), and a list of T (n, in) inputs (a full pass over T
logs, which are never copied into one tensor) trial by trial; buffers get the same leading
axis. Each trial's slice of every result equals what the model computes alone up to float32
rounding (the batched kernels may round differently from the single-trial ones, as they do
on some CPUs; a test checks the tolerance), so a stacked fit gives each trial the weights it
would have had alone, up to rounding. ``unstack_into`` copies the trained slices back into
the original models.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import cast

import torch
from torch import nn

from iglearn.models.kernels import linear


class StackedLinear(nn.Module):
    """T independent linear layers applied to T batches at once: (T, n, in) -> (T, n, out)."""

    def __init__(self, layers: Sequence[nn.Linear]):
        super().__init__()
        self.weight = nn.Parameter(torch.stack([layer.weight.detach() for layer in layers]))
        self.bias = nn.Parameter(torch.stack([layer.bias.detach() for layer in layers]))

    def forward(self, inputs: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
        """(T, n, in) inputs, or T tensors of shape (n, in), to (T, n, out) outputs."""
        if self.weight.shape[1] == 1 or not isinstance(inputs, torch.Tensor):
            # Trial by trial. With one output the batched kernel rounds differently for
            # different numbers of trials; each trial's matrix-vector product does not.
            return torch.stack([torch.nn.functional.linear(x, w, b) for x, w, b
                                in zip(inputs, self.weight, self.bias, strict=True)])
        return linear(inputs, self.weight, self.bias)


def stack(models: Sequence[nn.Module]) -> nn.Module:
    """One module running ``models`` (same class and shapes, linear layers with biases) side
    by side on a leading trial axis; its parameters are copies, not views. A user's module
    (:mod:`iglearn.models.custom`) keeps its layers: each parameter and buffer gets the trial
    axis and the module runs trial by trial (``torch.func.functional_call``)."""
    from iglearn.models.custom import CustomDecoder, CustomPolicy

    if isinstance(models[0], CustomPolicy | CustomDecoder):
        return _stack_custom(models)
    if isinstance(models[0], nn.Linear):
        return StackedLinear(cast(Sequence[nn.Linear], models))  # one class, as required
    stacked = copy.deepcopy(models[0])
    for name, layer in list(stacked.named_modules()):
        if isinstance(layer, nn.Linear):
            owner, _, attribute = name.rpartition(".")
            setattr(stacked.get_submodule(owner), attribute,
                    StackedLinear([cast(nn.Linear, m.get_submodule(name)) for m in models]))
    for name, _ in list(stacked.named_buffers()):
        owner, _, attribute = name.rpartition(".")
        setattr(stacked.get_submodule(owner), attribute,
                torch.stack([m.get_buffer(name) for m in models]))
    return stacked


def _stack_custom(models: Sequence[nn.Module]) -> nn.Module:
    """A copy of ``models[0]`` whose every parameter and buffer holds the T models' values on a
    leading trial axis, run trial by trial."""
    stacked = copy.deepcopy(models[0])
    for name, _ in list(stacked.named_parameters()):
        owner, _, attribute = name.rpartition(".")
        setattr(stacked.get_submodule(owner), attribute, nn.Parameter(
            torch.stack([m.get_parameter(name).detach() for m in models])))
    for name, _ in list(stacked.named_buffers()):
        owner, _, attribute = name.rpartition(".")
        stacked.get_submodule(owner).register_buffer(
            attribute, torch.stack([m.get_buffer(name) for m in models]))
    # a plain attribute of the custom wrapper; nn.Module's __setattr__ is typed for modules
    stacked.trials = len(models)  # type: ignore[assignment]
    return stacked


def unstack_into(stacked: nn.Module, models: Sequence[nn.Module]) -> None:
    """Copy trial t's slice of every parameter and buffer of ``stacked`` into ``models[t]``."""
    stacked_state = stacked.state_dict()
    with torch.no_grad():
        for t, model in enumerate(models):
            for name, tensor in model.state_dict().items():
                tensor.copy_(stacked_state[name][t])


def last_linear(stacked: nn.Module) -> StackedLinear:
    """The last linear layer of a stacked model: the one that outputs scores."""
    return [m for m in stacked.modules() if isinstance(m, StackedLinear)][-1]
