"""Softmax policies pi(a | x) = softmax(f(x) / temperature); temperature 1 as in Appendix B."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from iglearn.errors import check_choice
from iglearn.learners.settings import POLICY_KINDS
from iglearn.models.init import mlp, reset_parameters
from iglearn.models.kernels import Linear, log_softmax, softmax


class Policy(nn.Module):
    """A softmax policy over K actions on top of a score network."""

    kind = "policy"

    def __init__(self, net: nn.Module, temperature: float = 1.0):
        super().__init__()
        self.net = net
        self.temperature = temperature

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        """Log-probabilities log pi(. | x), shape (n, K)."""
        return log_softmax(self._tempered(context))

    def probabilities(self, context: torch.Tensor) -> torch.Tensor:
        """pi(. | x), shape (n, K)."""
        return softmax(self._tempered(context))

    def scores(self, context: torch.Tensor) -> torch.Tensor:
        """The score network's output f(x), shape (n, K) (or (T, n, K) stacked): what the
        regression learners (IGL-P's models, the online CB, AI-IGL's grounding scores) fit
        and rank actions by. A user's module (:class:`~iglearn.models.custom.CustomPolicy`)
        runs trial by trial here."""
        return self.net(context)

    def _tempered(self, context: torch.Tensor) -> torch.Tensor:
        """f(x) / temperature, shape (n, K) (no division at temperature 1: the same values);
        at another temperature each row's largest score is taken off first (the softmax is
        the same), so that a temperature near 0 gives the greedy policy, not inf / inf."""
        scores = self.scores(context)
        if self.temperature == 1.0:
            return scores
        return (scores - scores.amax(-1, keepdim=True).detach()) / self.temperature


class LinearPolicy(Policy):
    """Linear softmax policy (the paper's policy class)."""

    kind = "linear"

    def __init__(self, context_dim: int, n_actions: int, temperature: float = 1.0):
        super().__init__(Linear(context_dim, n_actions), temperature)


class MLPPolicy(Policy):
    """Softmax policy on a one-hidden-layer ReLU network."""

    kind = "mlp"

    def __init__(self, context_dim: int, n_actions: int, hidden: int = 256,
                 temperature: float = 1.0):
        super().__init__(mlp(context_dim, n_actions, hidden), temperature)


POLICIES: dict[str, type] = dict(
    zip(POLICY_KINDS, (LinearPolicy, MLPPolicy), strict=True))
"""The built-in policy classes by name."""


def make_policy(kind: str | nn.Module | Callable[[int, int, torch.Generator], nn.Module],
                context_dim: int, n_actions: int, generator: torch.Generator) -> Policy:
    """A freshly initialised policy of class ``kind`` ('linear' or 'mlp'), or on a user's
    module: a factory or a template instance (:mod:`iglearn.models.custom`)."""
    if not isinstance(kind, str):
        from iglearn.models.custom import custom_policy
        return custom_policy(kind, context_dim, n_actions, generator)
    check_choice("policy class", kind, sorted(POLICIES))
    policy = POLICIES[kind](context_dim, n_actions)
    reset_parameters(policy, generator)
    return policy
