"""Environments: contexts, a hidden reward, and feedback drawn given the context, the action
and the reward; each environment declares which conditional independence its feedback
satisfies (:class:`Independence`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

import numpy as np

from iglearn.data.logs import InteractionLog
from iglearn.sampling import sample_actions
from iglearn.seeding import SeedLike, as_generator

# A logging policy maps contexts (n, d_x) to action probabilities (n, K).
LoggingPolicy = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Contexts:
    """Contexts shown to the learner, with the hidden label the reward is computed from."""

    features: np.ndarray
    label: np.ndarray

    def __len__(self) -> int:
        return len(self.features)


class Independence(Enum):
    """What the feedback y may depend on besides the hidden reward r: the conditional
    independence an environment satisfies, and so which learners its feedback suits."""

    FULL = "full"
    """y is independent of (x, a) given r: the 2021 paper's Assumption 1 (``BatchIGL``)."""
    ACTION_INCLUSIVE = "action-inclusive"
    """y is independent of x given (a, r): the feedback may depend on the action too
    (AI-IGL, Xie et al. 2022; ``AIIGL``)."""
    PERSONALISED = "personalised"
    """y may depend on the context (each user signals in their own way) as well as on the
    action and r (IGL-P, Maghakian et al. 2023)."""


class Environment(ABC):
    """One-step IGL environment: x ~ d0, the learner picks a, r = R(x, a) stays hidden,
    and y ~ P(y | x, a, r) is revealed; ``independence`` says which of x and a the feedback
    may depend on besides r."""

    n_actions: int
    context_dim: int
    feedback_dim: int
    independence: ClassVar[Independence]
    """The conditional independence the feedback satisfies."""

    @abstractmethod
    def contexts(self, n: int, rng: np.random.Generator) -> Contexts:
        """Draw ``n`` i.i.d. contexts."""

    @abstractmethod
    def reward(self, contexts: Contexts, action: np.ndarray) -> np.ndarray:
        """The hidden reward r of each (context, action); for evaluation only."""

    @abstractmethod
    def feedback(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
        """Feedback vectors y (n, feedback_dim), one per (context, action, reward), drawn
        from P(y | x, a, r); what they may depend on is ``independence``."""

    def observe(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
        """The feedback vectors and, where the environment has one, each interaction's
        definitely-bad flag (an unmistakably negative signal; None when it has none)."""
        return self.feedback(contexts, actions, reward, rng), None

    @abstractmethod
    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        """Held-out (contexts, correct actions) for measuring policy accuracy."""

    def log(self, n: int, seed: SeedLike = None,
            policy: LoggingPolicy | None = None) -> InteractionLog:
        """``n`` interactions played by ``policy`` (uniform when None), as a validated log."""
        rng = as_generator(seed)
        ctx = self.contexts(n, rng)
        k = self.n_actions
        if policy is None:
            action = rng.integers(0, k, n)
            probability = np.full(n, 1.0 / k)
        else:
            probs = np.asarray(policy(ctx.features), dtype=np.float64)
            if probs.shape != (n, k) or not np.allclose(probs.sum(1), 1.0, atol=1e-5):
                raise ValueError(f"a logging policy must return (n, {k}) rows summing to one")
            action = sample_actions(probs, rng)
            probability = probs[np.arange(n), action]
        reward = self.reward(ctx, action)
        feedback, definitely_bad = self.observe(ctx, action, reward, rng)
        return InteractionLog(
            context=ctx.features, action=action, probability=probability,
            feedback=feedback, n_actions=k, reward=reward, label=ctx.label,
            source=type(self).__name__, definitely_bad=definitely_bad,
        )
