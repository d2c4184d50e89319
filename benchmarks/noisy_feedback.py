"""Benchmark: VI-IGL on noisy MNIST feedback, against 2021 IGL on the same logs.

    IGLEARN_DATA=/path/to/mnist python benchmarks/noisy_feedback.py [--trials 16]
        [--samples 60000] [--p 0,0.1] [--kind independent] [--methods VI-IGL,IGL]
        [--jobs N] [--json results/bench-noisy-feedback.json]

Every trial logs fresh uniform interactions of the 2021 MNIST task (infinite MNIST, accuracy on
the 10000 test images) with a share p of the feedback images replaced by a noise digit of
``--kind`` (:mod:`iglearn.envs.noisy`), and fits each method with its default settings and a
linear policy on the same log. Prints test accuracy (mean, std, min) and CPU seconds per fit
(``time.process_time``, one torch thread), each trial as it finishes, and whether the targets
hold: VI-IGL's mean >= 75 % at p = 0.1 and >= 85 % at p = 0; and, plainly, every p where 2021
IGL's mean is above VI-IGL's.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import cache
from pathlib import Path

import pandas as pd

from iglearn import BatchIGL
from iglearn.envs.noisy import NoisyFeedbackEnvironment, noisy_environment
from iglearn.experiments.runner import one_thread
from iglearn.learners.vi_igl import VIIGL
from iglearn.seeding import integer_seed, spawn_seeds

METHODS = {"VI-IGL": VIIGL, "IGL": BatchIGL}
TARGETS = {0.0: 85.0, 0.1: 75.0}
"""VI-IGL's target mean accuracy (%) by p (independent noise, 60000 samples)."""


@cache
def environment(kind: str, p: float, data_dir: str | None) -> NoisyFeedbackEnvironment:
    """The task, built once per process."""
    return noisy_environment("mnist", kind, p, data_dir)


def trial(job: dict) -> list[dict]:
    """Fit every method of ``job`` on one log; test accuracy (%) and CPU seconds."""
    env = environment(job["kind"], job["p"], job["data_dir"])
    log = env.log(job["samples"], job["seed"])
    test_x, test_y = env.test_set()
    rows = []
    with one_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identifiability warnings
        for method in job["methods"]:
            start = time.process_time()
            learner = METHODS[method](seed=job["seed"]).fit(log)
            rows.append({"p": job["p"], "trial": job["trial"], "method": method,
                         "cpu_seconds": time.process_time() - start,
                         "accuracy": 100 * learner.accuracy(test_x, test_y)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--p", default="0,0.1")
    parser.add_argument("--kind", default="independent")
    parser.add_argument("--methods", default="VI-IGL,IGL")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    seeds = [integer_seed(s) % 2**31 for s in spawn_seeds(args.seed, args.trials)]
    jobs = [{"p": float(p), "kind": args.kind, "trial": t, "seed": seed,
             "samples": args.samples, "methods": args.methods.split(","),
             "data_dir": args.data_dir}
            for t, seed in enumerate(seeds) for p in args.p.split(",")]
    start = time.perf_counter()
    rows: list[dict] = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for done in as_completed([pool.submit(trial, job) for job in jobs]):
            for row in done.result():
                rows.append(row)
                print(json.dumps(row), flush=True)
    frame = pd.DataFrame(rows)
    table = frame.groupby(["p", "method"]).agg(
        mean=("accuracy", "mean"), std=("accuracy", "std"), min=("accuracy", "min"),
        trials=("accuracy", "count"), cpu_seconds=("cpu_seconds", "mean"))
    print(f"\n{args.kind} noise, {args.samples} samples, linear policy; "
          f"wall {time.perf_counter() - start:.0f} s\n")
    print(table.round(2).to_string())
    means = frame.groupby(["p", "method"])["accuracy"].mean()
    for p, target in TARGETS.items():
        if (p, "VI-IGL") in means and args.kind == "independent":
            value = means[p, "VI-IGL"]
            print(f"target VI-IGL mean >= {target:.0f} % at p = {p:g}: {value:.2f} % "
                  f"({'met' if value >= target else 'NOT met'})")
    for p in sorted({p for p, _ in means.index}):
        if (p, "IGL") in means and (p, "VI-IGL") in means and means[p, "IGL"] > means[p, "VI-IGL"]:
            print(f"2021 IGL beats VI-IGL at p = {p:g}: {means[p, 'IGL']:.2f} % against "
                  f"{means[p, 'VI-IGL']:.2f} %")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
