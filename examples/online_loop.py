"""An online loop: E2G (Algorithm 1) acts on one context at a time, sees only the feedback,
and learns; the reward stays hidden from it (this script counts it to show progress). The
environment is the one of examples/own_environment.py.

Run: python examples/online_loop.py
"""

from __future__ import annotations

import warnings

import numpy as np
from own_environment import ClusterEnvironment  # beside this script

from iglearn import Optimisation
from iglearn.learners.e2g import E2G
from iglearn.learners.schedules import PaperSchedule


def main(rounds: int = 900, warm_up: int = 600) -> None:
    env = ClusterEnvironment()
    rng = np.random.default_rng(0)
    quick = Optimisation(max_steps=40)  # short fits for the example
    learner = E2G(env.n_actions, env.context_dim, env.feedback_dim,
                  schedule=PaperSchedule(warmup_rounds=warm_up), update_every=300,
                  optimisation=quick, refit_optimisation=quick, seed=0)
    earned = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(rounds):
            contexts = env.contexts(1, rng)
            action, probability = learner.act(contexts.features[0])
            reward = env.reward(contexts, np.array([action]))
            feedback = env.feedback(contexts, np.array([action]), reward, rng)
            learner.learn(contexts.features[0], action, probability, feedback[0])
            earned.append(float(reward[0]))
    before, after = np.mean(earned[:warm_up]), np.mean(earned[warm_up:])
    print(f"average reward while exploring: {before:.3f}; after the warm-up: {after:.3f}")


if __name__ == "__main__":
    main()
