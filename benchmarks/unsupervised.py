"""Benchmark: the whole Section 6 experiment (``iglearn reproduce unsupervised``), timed,
against the targets.

    python benchmarks/unsupervised.py [--trials 1] [--samples 60000] [--data-dir DIR]
                                      [--jobs N] [--json results/bench-unsupervised.json]

Prints mean accuracy (a fraction) per environment and method, wall time and time per fit, and
whether the targets hold: IGL mean >= 0.85 in every environment of both families; the
baseline's decoding the same in every environment of a family, and near 0 or chance
(<= 0.20) in at least one environment of each family (Theorem 3); the whole run within the
time budget. benchmarks/unsupervised.md records a run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from iglearn.experiments.results import metric
from iglearn.experiments.runner import Execution
from iglearn.experiments.unsupervised import (
    UnsupervisedConfig,
    run,
    same_decoding,
    summary,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = UnsupervisedConfig()
    parser.add_argument("--trials", type=int, default=defaults.trials)
    parser.add_argument("--samples", type=int, default=defaults.samples)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset", default="mnist", choices=("mnist", "digits"))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--budget", type=float, default=180.0, help="seconds allowed")
    parser.add_argument("--json", default="results/bench-unsupervised.json")
    parser.add_argument("--jobs", type=int, default=None, help="fits at once (all cores)")
    args = parser.parse_args()

    config = UnsupervisedConfig(trials=args.trials, samples=args.samples, seed=args.seed,
                                dataset=args.dataset, data_dir=args.data_dir)
    start = time.perf_counter()
    frame = run(config, Execution(jobs=args.jobs))
    wall = time.perf_counter() - start
    table = summary(frame)
    pivot = table.pivot_table(index=["family", "environment"], columns="method",
                              values="mean", sort=False)
    decoding = same_decoding(frame)
    checks = {"IGL mean >= 0.85 in every environment": bool((pivot["IGL"] >= 0.85).all())}
    for family, part in pivot.groupby(level="family", sort=False):
        checks[f"{family}: baseline <= 0.20 somewhere"] = bool(
            (part["unsupervised"] <= 0.20).any())
        checks[f"{family}: baseline decodes alike in every trial"] = bool(
            decoding.loc[decoding["family"] == family, "same"].all())
    checks[f"wall time <= {args.budget:.0f} s"] = bool(wall <= args.budget)
    fits = len(metric(frame, "accuracy"))
    print("mean accuracy (fraction)")
    print(pivot.round(4).to_string())
    print(decoding.to_string(index=False))
    seconds = metric(frame, "seconds").groupby("method")["value"].mean()
    print(f"wall time: {wall:.1f} s for {fits} fits ({args.trials} trials); "
          f"seconds per fit: " + ", ".join(f"{m} {s:.2f}" for m, s in seconds.items()))
    for name, ok in checks.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    record = {"wall_seconds": wall, "fits": fits, "config": vars(args),
              "summary": table.to_dict("records"),
              "decoding": decoding.to_dict("records"), "checks": checks}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(record, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
