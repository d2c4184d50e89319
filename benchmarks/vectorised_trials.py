"""Measure: fitting several trials side by side (``fit_many``) against one after another.

    python benchmarks/vectorised_trials.py [--trials 4] [--samples 60000] [--data-dir DIR]
                                           [--json results/bench-vectorised.json]

Draws ``trials`` uniform MNIST logs, fits SUP, CB and IGL on each log alone and then all
trials of a method with ``fit_many``, on one torch thread. Prints seconds per fit both ways,
the speed-up, and whether every trial's fitted weights are bitwise identical both ways.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from iglearn.envs import make_environment
from iglearn.experiments.runner import one_thread
from iglearn.learners import BatchIGL, ContextualBandit, Supervised


def same_weights(a, b) -> bool:
    pairs = [(a.policy_, b.policy_)]
    if isinstance(a, BatchIGL):
        pairs.append((a.decoder_, b.decoder_))
    return all(torch.equal(x, y) for m, n in pairs
               for x, y in zip(m.state_dict().values(), n.state_dict().values(), strict=True))


def compare(logs: list) -> list[dict]:
    """For SUP, CB and IGL: seconds per fit one by one and side by side on ``logs`` (one torch
    thread), the speed-up, and whether every trial's weights are identical both ways."""
    records = []
    trials = len(logs)
    with one_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cls in (Supervised, ContextualBandit, BatchIGL):
            cls(seed=0).fit(logs[0].subset(np.arange(1000)))  # first-use costs, not timed
            start = time.perf_counter()
            alone = [cls(seed=t).fit(log) for t, log in enumerate(logs)]
            one_by_one = (time.perf_counter() - start) / trials
            start = time.perf_counter()
            together = cls.fit_many([cls(seed=t) for t in range(trials)], logs)
            stacked = (time.perf_counter() - start) / trials
            identical = all(same_weights(a, b) for a, b in zip(alone, together, strict=True))
            records.append({"method": cls.__name__, "seconds_per_fit_alone": one_by_one,
                            "seconds_per_fit_stacked": stacked,
                            "speed_up": one_by_one / stacked, "identical": identical})
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--json", default="results/bench-vectorised.json")
    args = parser.parse_args()
    env = make_environment("mnist", args.data_dir)
    logs = [env.log(args.samples, np.random.default_rng(seed)) for seed in range(args.trials)]
    records = compare(logs)
    for r in records:
        print(f"{r['method']:>16}: alone {r['seconds_per_fit_alone']:.2f} s/fit, side by side "
              f"{r['seconds_per_fit_stacked']:.2f} s/fit, {r['speed_up']:.2f}x, identical "
              f"weights: {r['identical']}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"config": vars(args), "methods": records},
                                          indent=2) + "\n")


if __name__ == "__main__":
    main()
