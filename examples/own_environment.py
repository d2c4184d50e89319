"""Your own environment: subclass iglearn.envs.base.Environment, declare the independence its
feedback satisfies, log interactions from it and fit a learner that suits it.

Contexts are points near one of K cluster centres; the hidden reward is 1 when the action
names the point's cluster. The feedback is a noisy 3-value "reaction" whose mean depends on the
reward alone, so the environment declares Independence.FULL (the 2021 paper's assumption,
what BatchIGL needs).

Run: python examples/own_environment.py
"""

from __future__ import annotations

import warnings

import numpy as np

from iglearn import BatchIGL, Optimisation
from iglearn.envs.base import Contexts, Environment, Independence


class ClusterEnvironment(Environment):
    """K Gaussian clusters in d dimensions; feedback y ~ N(mean_r, 0.3^2 I)."""

    independence = Independence.FULL  # y depends on the reward alone

    def __init__(self, n_actions: int = 4, context_dim: int = 6, seed: int = 0):
        self.n_actions, self.context_dim, self.feedback_dim = n_actions, context_dim, 3
        self.centres = np.random.default_rng(seed).normal(size=(n_actions, context_dim)) * 2
        self.means = np.array([[0.0, 0.0, 0.0], [1.0, 0.5, -0.5]])  # rows: r = 0, r = 1

    def contexts(self, n: int, rng: np.random.Generator) -> Contexts:
        label = rng.integers(0, self.n_actions, n)
        features = self.centres[label] + rng.normal(size=(n, self.context_dim))
        return Contexts(features.astype(np.float32), label)

    def reward(self, contexts: Contexts, action: np.ndarray) -> np.ndarray:
        return (np.asarray(action) == contexts.label).astype(np.float32)

    def feedback(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
        mean = self.means[np.asarray(reward, dtype=np.int64)]
        return (mean + 0.3 * rng.normal(size=mean.shape)).astype(np.float32)

    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        held_out = self.contexts(1000, np.random.default_rng(12345))
        return held_out.features, held_out.label


def main() -> None:
    env = ClusterEnvironment()
    log = env.log(1000, seed=1)  # uniform logging policy
    learner = BatchIGL(optimisation=Optimisation(max_steps=40), seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identifiability notes, if any
        learner.fit(log)
    contexts, labels = env.test_set()
    print(f"independence: {env.independence.value}")
    print(f"indicator: {learner.report_.indicator:.3f}")
    print(f"test accuracy: {learner.accuracy(contexts, labels):.3f} "
          f"(uniform play: {1 / env.n_actions:.3f})")


if __name__ == "__main__":
    main()
