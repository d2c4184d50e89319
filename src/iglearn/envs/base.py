"""Environments: contexts, a hidden reward, and feedback that depends on the reward alone."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

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


class Environment(ABC):
    """One-step IGL environment: x ~ d0, the learner picks a, r = R(x, a) stays hidden,
    and y ~ P(y | r) is revealed (conditional independence, Assumption 1)."""

    n_actions: int
    context_dim: int
    feedback_dim: int

    @abstractmethod
    def contexts(self, n: int, rng: np.random.Generator) -> Contexts:
        """Draw ``n`` i.i.d. contexts."""

    @abstractmethod
    def reward(self, contexts: Contexts, action: np.ndarray) -> np.ndarray:
        """The hidden reward r of each (context, action); for evaluation only."""

    @abstractmethod
    def feedback(self, reward: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Feedback vectors y drawn given the reward alone."""

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
        return InteractionLog(
            context=ctx.features, action=action, probability=probability,
            feedback=self.feedback(reward, rng), n_actions=k, reward=reward, label=ctx.label,
            source=type(self).__name__,
        )
