"""How the service draws each action, with the exact probability it is drawn with.

'e2g' follows Algorithm 1's loop over the stream of decisions: round i begins with one
uniformly random action (line 2) and then plays the policy for n_i steps (line 5), n_i from
the configured schedule (:mod:`iglearn.learners.schedules`); re-fits learn from the uniform
steps only, as E2G's line 4 learns from its exploration set D. 'epsilon' mixes the uniform
distribution with the policy's, epsilon to 1 - epsilon, so every action keeps probability
at least epsilon / K and re-fits learn from every interaction, importance-weighted; epsilon
may fall linearly over the first decisions (``epsilon_rounds``, ``epsilon_final``).

Before any model exists every decision is uniform. A decision restricted to some allowed
actions draws only among them (its probabilities are zero elsewhere).
"""

from __future__ import annotations

import numpy as np

from iglearn.learners.schedules import Schedule
from iglearn.sampling import sample_actions
from iglearn.service.config import ExplorationSettings


class Explorer:
    """Draws actions for a stream of decisions.

    Args:
        settings: the ``[exploration]`` settings.
        n_actions: K.
        rounds: E2G rounds already begun (the explored decisions stored), or in the
            'epsilon' mode the decisions made, to continue the schedule after a restart.
        rng: the service's numpy Generator.
    """

    def __init__(self, settings: ExplorationSettings, n_actions: int, rounds: int,
                 rng: np.random.Generator):
        self.settings = settings
        self.n_actions = n_actions
        self.schedule: Schedule = settings.make_schedule()
        self.round = rounds
        self.exploit_left = 0
        self.rng = rng

    def next_step_explores(self, has_policy: bool, certified: bool) -> bool:
        """E2G: advance the loop by one decision; whether it explores (lines 2 and 5)."""
        if self.exploit_left > 0 and has_policy:
            self.exploit_left -= 1
            return False
        self.round += 1
        self.exploit_left = self.schedule.exploit_steps(self.round, self.n_actions, certified)
        return True

    def draw(self, policy: np.ndarray | None, allowed: np.ndarray, certified: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Actions for n decisions.

        Args:
            policy: pi(.|x) of the served model, (n, K), or None before any model.
            allowed: which actions each decision may take, boolean (n, K).
            certified: the served model passed the data-driven schedule's test.

        Returns:
            the actions (n,), the distributions they were drawn from (n, K), whether each
            explored, and whether re-fits may learn from each.
        """
        n, k = allowed.shape
        uniform = allowed / allowed.sum(1, keepdims=True)
        if policy is None:
            explored = np.ones(n, dtype=bool)
            distribution = uniform
        else:
            restricted = np.where(allowed, np.asarray(policy, np.float64), 0.0)
            total = restricted.sum(1, keepdims=True)
            restricted = np.where(total > 0, restricted / np.where(total > 0, total, 1.0),
                                  uniform)
            if self.settings.exploit == "greedy":
                exploit = np.zeros_like(restricted)
                exploit[np.arange(n), restricted.argmax(1)] = 1.0
            else:
                exploit = restricted
            if self.settings.mode == "e2g":
                explored = np.array([self.next_step_explores(True, certified)
                                     for _ in range(n)], dtype=bool)
                distribution = np.where(explored[:, None], uniform, exploit)
            else:
                eps = self.settings.epsilon_at(self.round + np.arange(n))[:, None]
                distribution = eps * uniform + (1 - eps) * exploit
                explored = np.zeros(n, dtype=bool)
        if policy is None and self.settings.mode == "e2g":
            for _ in range(n):
                self.next_step_explores(False, certified)
        if self.settings.mode == "epsilon":  # decisions so far, for epsilon's decay
            self.round += n
        actions = sample_actions(distribution, self.rng)
        if policy is not None and self.settings.mode == "epsilon":
            explored = actions != exploit.argmax(1)
        learnable = explored if self.settings.mode == "e2g" else np.ones(n, dtype=bool)
        return actions, distribution, explored, learnable
