"""A simulated brain-computer interface: number guessing from imagined and perceived symbols,
in the spirit of the AI-IGL paper's simulated fMRI task (Xie et al. 2022, Section 5).

A user imagines one of K symbols (the intended one, uniform over the K); the interface reads a
brain pattern (the context) and displays a symbol (the action); the reward is whether it
displayed the intended symbol, and the interface never sees it. What it sees instead is the
user's brain response to the display (the feedback): the perception pattern of the displayed
symbol, plus an error-related component when that symbol was wrong. The response depends on
the displayed symbol as well as on the reward, so the feedback is action-inclusive:
y independent of x given (a, r).

Every pattern is a vector of ``dim`` (64) i.i.d. N(0, pattern_scale^2) entries, drawn once from
``seed``: one imagination pattern I_k and one perception pattern P_k per symbol k, and one
error-related pattern E. With noise level s and independent standard normal vectors z, z':

    context   x = I_label + s z
    feedback  y = P_a + (1 - r) E + s z'

With the defaults (pattern_scale 0.02, so patterns of norm about 0.16 and two symbols' patterns
about 0.23 apart), noise 0.01 leaves the symbols all but perfectly separable, and at noise 0.1
the best classifier of the context errs on about a fifth of them (K = 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iglearn.envs.base import Contexts, Environment, Independence
from iglearn.envs.classification import realised_reward
from iglearn.errors import IGLearnError


@dataclass(frozen=True)
class BCIPatterns:
    """The fixed patterns of one simulated user."""

    imagination: np.ndarray
    """I_k, the brain pattern of imagining symbol k, shape (K, dim)."""
    perception: np.ndarray
    """P_k, the brain pattern of seeing symbol k displayed, shape (K, dim)."""
    error: np.ndarray
    """E, the error-related component added when the displayed symbol is wrong, (dim,)."""


class BCIEnvironment(Environment):
    """Simulated BCI number guessing (see the module docstring); action-inclusive feedback.

    Args:
        n_symbols: K, the symbols a user may intend (and the interface may display).
        dim: dimension of every brain pattern (context and feedback).
        noise: the noise level s: standard deviation of the Gaussian noise added to each
            entry of the context and of the feedback.
        pattern_scale: standard deviation of the patterns' entries.
        test_size: contexts in the held-out test set.
        seed: seed of the patterns and of the test set (interactions draw from the
            generator given to ``log``).
    """

    independence = Independence.ACTION_INCLUSIVE

    def __init__(self, n_symbols: int = 3, dim: int = 64, noise: float = 0.05,
                 pattern_scale: float = 0.02, test_size: int = 3000, seed: int = 0):
        if not isinstance(n_symbols, int) or n_symbols < 2:
            raise IGLearnError(f"n_symbols must be a whole number >= 2, got {n_symbols!r}")
        if not isinstance(dim, int) or dim < 1:
            raise IGLearnError(f"dim must be a whole number >= 1, got {dim!r}")
        for name, value in (("noise", noise), ("pattern_scale", pattern_scale)):
            if not (np.isfinite(value) and value >= 0):
                raise IGLearnError(f"{name} must be a finite number >= 0, got {value!r}")
        self.n_actions = n_symbols
        self.context_dim = self.feedback_dim = dim
        self.noise = float(noise)
        self.patterns = draw_patterns(n_symbols, dim, pattern_scale,
                                      np.random.default_rng([seed, 0]))
        test = self.contexts(test_size, np.random.default_rng([seed, 1]))
        self._test = (test.features, test.label)

    def contexts(self, n: int, rng: np.random.Generator) -> Contexts:
        """Intended symbols uniform over the K, each read as its imagination pattern plus
        noise."""
        label = rng.integers(0, self.n_actions, n)
        return Contexts(self._noisy(self.patterns.imagination[label], rng), label)

    def reward(self, contexts: Contexts, action: np.ndarray) -> np.ndarray:
        """r = 1 if the displayed symbol is the intended one."""
        return (np.asarray(action) == contexts.label).astype(np.float32)

    def feedback(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
        """The perception pattern of the displayed symbol, plus the error-related component
        when r = 0, plus noise (contexts are not read)."""
        wrong = 1 - realised_reward(reward, rng)
        response = (self.patterns.perception[np.asarray(actions)]
                    + wrong[:, None] * self.patterns.error)
        return self._noisy(response, rng)

    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        return self._test

    def _noisy(self, patterns: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return (patterns + self.noise * rng.standard_normal(patterns.shape)).astype(np.float32)


def draw_patterns(n_symbols: int, dim: int, scale: float,
                  rng: np.random.Generator) -> BCIPatterns:
    """A user's patterns: entries i.i.d. N(0, scale^2), imagination, perception, then error."""
    return BCIPatterns(imagination=scale * rng.standard_normal((n_symbols, dim)),
                       perception=scale * rng.standard_normal((n_symbols, dim)),
                       error=scale * rng.standard_normal(dim))
