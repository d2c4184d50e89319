"""Benchmark: iglearn's registered coba learners on coba's grounded (IGL) tasks, played by
coba itself.

    python benchmarks/coba_grounded.py [--interactions 1000] [--seeds 1]
        [--tasks linear neighbors digits] [--learners NAME ...] [--users 10] [--words 10]
        [--good 3] [--csv FILE]

(the issue's full run: ``--interactions 10000 --seeds 4``). For each task (coba's
``from_linear_synthetic`` and ``from_neighbors_synthetic`` with K = 5 fixed actions and 5
context features; scikit-learn's handwritten digits, K = 10 and 64 pixels, drawn with
replacement), each seed and each user setting ("normal": every user says a good word
when the action is the best one; "half swapped": half the users swap good and bad words),
``Environments.grounded(users, normal, words, good)`` turns the task into an IGL one and a
coba ``Experiment`` plays each learner on it alone (so its CPU seconds are its own): the IGL
learners (``iglearn.IGLP`` with epsilon-greedy and with IGW exploration, each with one
meaning per word for all users and grounding each word per user (the default: IGW per user,
decoded from the feedback with the estimator 'auto'; the per-user entries naming an estimator
and 'feedback' or 'interaction' set ``estimator`` and ``decode_from``), ``iglearn.E2G``,
``iglearn.AIIGL``; ``--learners`` picks some) and coba's ``RandomLearner`` with
``SequentialIGL`` (feedback only), the true-reward contextual bandit ``iglearn.RegressionCB``
with ``SequentialCB`` (it reads the reward). Every learner is measured on the same true
reward, 1 for the task's best action (coba's grounding makes the reward binary).

Reports, per task, user setting and learner, over the seeds: the mean true reward, the
normalised score (learner - random) / (CB - random) and the CPU seconds per 1,000
interactions (coba's own overhead included).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

IGL_LEARNERS: dict[str, tuple[str, dict[str, Any]]] = {
    "IGL-P (epsilon)": ("iglearn.IGLP", {"exploration": "epsilon", "personal": False}),
    "IGL-P (IGW)": ("iglearn.IGLP", {"exploration": "igw", "personal": False}),
    "IGL-P (epsilon, per user)": ("iglearn.IGLP", {"exploration": "epsilon",
                                                   "personal": True}),
    "IGL-P (IGW, per user)": ("iglearn.IGLP", {"exploration": "igw", "personal": True}),
    "IGL-P (IGW, per user, lipschitz, feedback)": ("iglearn.IGLP", {
        "exploration": "igw", "personal": True, "estimator": "lipschitz"}),
    "IGL-P (IGW, per user, zhang, interaction)": ("iglearn.IGLP", {
        "exploration": "igw", "personal": True, "estimator": "zhang",
        "decode_from": "interaction"}),
    "IGL-P (IGW, per user, lipschitz, interaction)": ("iglearn.IGLP", {
        "exploration": "igw", "personal": True, "estimator": "lipschitz",
        "decode_from": "interaction"}),
    "E2G": ("iglearn.E2G", {"warmup": 500, "iota": 1.0}),
    "AI-IGL": ("iglearn.AIIGL", {"warmup": 500, "iota": 1.0}),
}
"""The IGL learners by coba's registered names and their settings (a seed is added)."""
RANDOM, CB = "random", "true-reward CB"


class Digits:
    """scikit-learn's handwritten digits (1,797 images of 8 x 8 pixels, scaled to [0, 1]) as a
    coba environment: ``interactions`` images drawn with replacement, K = 10 actions (the
    digits), reward 1 for the image's digit."""

    def __init__(self, interactions: int, seed: int):
        self.interactions, self.seed = interactions, seed

    @property
    def params(self) -> dict[str, Any]:
        """coba's record of the environment."""
        return {"env_type": "digits", "seed": self.seed}

    def read(self) -> Any:  # noqa: ANN401 (coba interactions)
        """The interactions, as coba's environments yield them."""
        import coba
        from sklearn.datasets import load_digits

        digits = load_digits()
        rng = np.random.default_rng(self.seed)
        actions = list(range(10))
        for row in rng.integers(0, len(digits.target), self.interactions):
            rewards = [float(action == digits.target[row]) for action in actions]
            yield {"context": (digits.data[row] / 16).tolist(), "actions": actions,
                   "rewards": coba.DiscreteReward(actions, rewards)}


def task(name: str, interactions: int, seed: int) -> Any:  # noqa: ANN401 (coba Environments)
    """coba's synthetic task ``name`` ('linear' or 'neighbors'): K = 5 actions that are the
    same at every interaction, 5 context features."""
    import coba

    if name == "linear":
        return coba.Environments.from_linear_synthetic(interactions, n_actions=5,
                                                       n_action_features=0, seed=seed)
    if name == "neighbors":
        return coba.Environments.from_neighbors_synthetic(interactions, n_actions=5,
                                                          n_action_features=0, seed=seed)
    if name == "digits":
        return coba.Environments.from_custom(Digits(interactions, seed))
    raise SystemExit(f"unknown task {name!r}; choose linear, neighbors or digits")


def true_reward_only(environment: Any) -> Any:  # noqa: ANN401 (coba Environments)
    """The grounded ``environment`` without its feedback and user ids (which coba's
    SequentialCB would try to record), for the learner that reads the true reward."""
    from coba.primitives import EnvironmentFilter

    class TrueReward(EnvironmentFilter):
        def filter(self, interactions: Any) -> Any:  # noqa: ANN401
            for interaction in interactions:
                yield {key: value for key, value in interaction.items()
                       if key not in ("feedbacks", "userid", "isnormal")}

    return environment.filter(TrueReward())


def learner(name: str, seed: int) -> Any:  # noqa: ANN401 (a coba Learner)
    """One of the compared learners, made by coba's registry where it is iglearn's."""
    import coba
    from coba.registry import JsonMakerV2

    import iglearn.integrations.coba_register  # noqa: F401 (registers iglearn's names)

    if name == RANDOM:
        return coba.RandomLearner(seed=seed)
    if name == CB:
        return JsonMakerV2().make({"iglearn.RegressionCB": {"seed": seed}})
    registered, settings = IGL_LEARNERS[name]
    return JsonMakerV2().make({registered: {**settings, "seed": seed}})


def play(environment: Any, name: str, seed: int) -> tuple[float, float, int]:  # noqa: ANN401
    """Mean true reward, CPU seconds and interactions of one learner on one environment."""
    import coba

    evaluator = coba.SequentialIGL()
    if name == CB:
        environment, evaluator = true_reward_only(environment), coba.SequentialCB()
    start = time.process_time()
    result = coba.Experiment(environment, [learner(name, seed)], evaluator).run(
        quiet=True, processes=1)
    seconds = time.process_time() - start
    frame = result.interactions.to_pandas()
    if frame.empty or "reward" not in frame:
        raise SystemExit(f"{name} produced no interactions: coba logged its exception")
    return float(frame["reward"].mean()), seconds, len(frame)


def run(tasks: list[str], interactions: int, seeds: int, users: int, words: int,
        good: int, learners: list[str] | None = None) -> pd.DataFrame:
    """One row per (task, user setting, seed, learner): mean reward, CPU seconds, count;
    ``learners``: the IGL learners to play (all by default; random and the CB always)."""
    rows = []
    names = [*(IGL_LEARNERS if learners is None else learners), RANDOM, CB]
    for task_name in tasks:
        for setting, normal in (("normal", users), ("half swapped", users // 2)):
            for seed in range(seeds):
                environment = task(task_name, interactions, seed + 1).grounded(
                    users, normal, words, good, seed=seed + 1)
                for name in names:
                    reward, seconds, count = play(environment, name, seed)
                    rows.append({"task": task_name, "users": setting, "seed": seed,
                                 "learner": name, "reward": reward, "cpu_seconds": seconds,
                                 "interactions": count})
    return pd.DataFrame(rows)


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (task, user setting, learner): mean reward over the seeds, the normalised score
    (learner - random) / (CB - random) of the seed means and CPU seconds per 1,000
    interactions."""
    keys = ["task", "users", "learner"]
    table = rows.groupby(keys, sort=False).agg(
        reward=("reward", "mean"), cpu=("cpu_seconds", "sum"),
        interactions=("interactions", "sum")).reset_index()
    table["cpu_s_per_1000"] = 1000 * table.pop("cpu") / table.pop("interactions")
    base = table.set_index(keys)["reward"]
    random = base.xs(RANDOM, level="learner")
    cb = base.xs(CB, level="learner")
    index = pd.MultiIndex.from_frame(table[["task", "users"]])
    table["normalised"] = ((table["reward"].to_numpy() - random.reindex(index).to_numpy())
                           / (cb.reindex(index).to_numpy() - random.reindex(index).to_numpy()))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interactions", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--tasks", nargs="+", default=["linear", "neighbors", "digits"],
                        choices=["linear", "neighbors", "digits"])
    parser.add_argument("--learners", nargs="+", default=None, choices=list(IGL_LEARNERS),
                        help="the IGL learners to play (default: all); random and the "
                             "true-reward CB always play")
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--words", type=int, default=10)
    parser.add_argument("--good", type=int, default=3)
    parser.add_argument("--csv", type=Path, default=None, help="write the per-seed rows here")
    args = parser.parse_args()
    rows = run(args.tasks, args.interactions, args.seeds, args.users, args.words, args.good,
               args.learners)
    if args.csv is not None:
        from iglearn.files import write_text

        write_text(args.csv, rows.to_csv(index=False))
    print(f"coba grounded tasks: {args.interactions} interactions, {args.seeds} seed(s), "
          f"{args.users} users, {args.words} words ({args.good} good)")
    print(summary(rows).to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
