"""Benchmark: the whole Table 1 reproduction, timed, against the targets.

    python benchmarks/table1.py [--trials 16] [--samples 60000] [--data-dir DIR] [--stack 4]
                                [--json results/bench-table1.json]

Prints accuracy (a fraction: mean, std, min per method), wall time and time per fit, and
whether the targets hold: IGL mean >= 0.90, std <= 0.01, every trial >= 0.88; SUP and CB at
least the paper's means; the whole table within the time budget.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from iglearn.experiments.results import metric
from iglearn.experiments.runner import Execution
from iglearn.experiments.table1 import PAPER, Table1Config, run, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (all cores)")
    parser.add_argument("--stack", type=int, default=Execution.stack,
                        help="trials each worker fits side by side")
    parser.add_argument("--backend", default="local")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds allowed")
    parser.add_argument("--json", default="results/bench-table1.json")
    args = parser.parse_args()

    config = Table1Config(trials=args.trials, samples=args.samples, seed=args.seed,
                          data_dir=args.data_dir)
    start = time.perf_counter()
    frame = run(config, Execution(backend=args.backend, jobs=args.jobs, stack=args.stack))
    wall = time.perf_counter() - start
    table = summary(frame).set_index("method")
    igl = table.loc["IGL"]
    checks = {
        "IGL mean >= 0.90": bool(igl["mean"] >= 0.90),
        "IGL std <= 0.01": bool(igl["std"] <= 0.01),
        "IGL every trial >= 0.88": bool(igl["min"] >= 0.88),
        "SUP mean >= paper": bool(table.loc["SUP", "mean"] >= PAPER["SUP"][0]),
        "CB mean >= paper": bool(table.loc["CB", "mean"] >= PAPER["CB"][0]),
        f"wall time <= {args.budget:.0f} s": bool(wall <= args.budget),
    }
    fits = len(metric(frame, "accuracy"))
    print("accuracy (fraction; std ddof=1 over trials) and mean seconds per fit")
    print(table[["mean", "std", "min", "seconds_per_fit"]].round(4).to_string())
    print(f"wall time: {wall:.1f} s for {fits} fits ({args.trials} trials)")
    for name, ok in checks.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    record = {"wall_seconds": wall, "fits": fits, "config": vars(args),
              "summary": table.reset_index().to_dict("records"), "checks": checks}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(record, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
