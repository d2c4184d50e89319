"""The benchmark suite: one command, a printed table, and JSON.

    python benchmarks/run.py [--repeats 3] [--data-dir DIR] [--json results/benchmarks.json]
                             [--quick]

Figures (each the median of --repeats runs):
- Table 1 wall time (16 trials x SUP, CB, IGL on 60000 samples, local backend, every core),
  per-fit seconds per method, and IGL accuracy (a fraction);
- Figure 3 wall time (16 trials x E2G, CB, uniform play, 10000 rounds) and E2G's final
  accuracy (a fraction);
- E2G act + learn interactions per second over a whole run, with and without its re-fits;
- act latency of a fitted linear policy (one context) and batched act throughput;
- seconds per SUP, CB and IGL fit on 4 logs one by one and side by side (``fit_many``), and
  whether both give identical weights;
- peak resident memory of this process and of its worker processes.
``--quick`` runs 4 trials on 20000 samples (Figure 3: 4 trials of 6000 rounds) instead, for a
smoke test.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from figure3 import throughput  # benchmarks/figure3.py, beside this file
from vectorised_trials import compare  # benchmarks/vectorised_trials.py

from iglearn import BatchIGL
from iglearn.envs import make_environment
from iglearn.experiments.figure3 import Figure3Config, final_values
from iglearn.experiments.figure3 import run as run_figure3
from iglearn.experiments.results import metric
from iglearn.experiments.runner import Execution
from iglearn.experiments.table1 import Table1Config, run, summary


def median_of(repeats: int, measure) -> tuple[float, list[float]]:
    values = [measure() for _ in range(repeats)]
    return statistics.median(values), values


def timed_runs(repeats: int, experiment) -> tuple[float, list[float], pd.DataFrame]:
    """Run ``experiment(execution)`` ``repeats`` times: the median wall time, every wall time
    and the last run's table."""
    frames = []

    def once() -> float:
        start = time.perf_counter()
        frames.append(experiment(Execution(show_progress=False)))
        return time.perf_counter() - start

    wall, walls = median_of(repeats, once)
    return wall, walls, frames[-1]


def table1(config: Table1Config, repeats: int) -> dict:
    wall, walls, frame = timed_runs(repeats, lambda execution: run(config, execution))
    table = summary(frame).set_index("method")
    per_fit = metric(frame, "seconds").groupby("method")["value"].median()
    return {"table1_wall_seconds": wall, "table1_wall_runs": walls,
            "fit_seconds_median": {m: float(per_fit[m]) for m in table.index},
            "igl_accuracy_mean": float(table.loc["IGL", "mean"]),
            "igl_accuracy_min": float(table.loc["IGL", "min"])}


def online(config: Figure3Config, repeats: int) -> dict:
    wall, walls, frame = timed_runs(repeats, lambda execution: run_figure3(config, execution))
    last = final_values(frame)
    accuracy = metric(last, "accuracy").query("method == 'E2G'")["value"]
    speeds = [throughput(config, "E2G") for _ in range(repeats)]
    return {"figure3_wall_seconds": wall, "figure3_wall_runs": walls,
            "e2g_accuracy_mean": float(accuracy.mean()),
            "e2g_accuracy_min": float(accuracy.min()),
            "e2g_interactions_per_second": statistics.median(
                s["per_second"] for s in speeds),
            "e2g_interactions_per_second_excluding_fits": statistics.median(
                s["per_second_excluding_fits"] for s in speeds)}


def act(config: Table1Config, repeats: int) -> dict:
    env = make_environment(config.dataset, config.data_dir)
    learner = BatchIGL(seed=0).fit(env.log(5000, 0))
    contexts, _ = env.test_set()

    def latency() -> float:
        one = contexts[:1]
        start = time.perf_counter()
        for _ in range(1000):
            learner.predict_proba(one)
        return (time.perf_counter() - start) / 1000

    def throughput() -> float:
        start = time.perf_counter()
        learner.predict_proba(contexts)
        return len(contexts) / (time.perf_counter() - start)

    return {"act_latency_us": median_of(repeats, latency)[0] * 1e6,
            "act_batched_per_second": median_of(repeats, throughput)[0]}


def side_by_side(config: Table1Config, repeats: int) -> dict:
    """Seconds per fit of each method on 4 logs, one by one and with fit_many (median of
    ``repeats``), and whether the weights are identical both ways."""
    env = make_environment(config.dataset, config.data_dir)
    logs = [env.log(config.samples, np.random.default_rng(seed)) for seed in range(4)]
    runs = [compare(logs) for _ in range(repeats)]
    methods = [r["method"] for r in runs[0]]

    def median(key: str) -> dict:
        return {m: statistics.median(run[i][key] for run in runs)
                for i, m in enumerate(methods)}
    return {"fit_seconds_one_by_one": median("seconds_per_fit_alone"),
            "fit_seconds_side_by_side": median("seconds_per_fit_stacked"),
            "side_by_side_identical": all(r["identical"] for run in runs for r in run)}


def peak_memory() -> dict:
    mb = 1024.0  # ru_maxrss is in KiB on Linux
    return {"peak_rss_mb_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / mb,
            "peak_rss_mb_workers": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", default="results/benchmarks.json")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    trials, samples = (4, 20000) if args.quick else (16, 60000)
    config = Table1Config(trials=trials, samples=samples, dataset=args.dataset,
                          data_dir=args.data_dir)
    record: dict = {"trials": trials, "samples": samples}
    record.update(table1(config, args.repeats))
    record.update(online(Figure3Config(
        trials=trials, rounds=6000 if args.quick else 10000, dataset=args.dataset,
        data_dir=args.data_dir), args.repeats))
    record.update(act(config, args.repeats))
    record.update(side_by_side(config, args.repeats))
    record.update(peak_memory())
    width = max(map(len, record))
    for name, value in record.items():
        if isinstance(value, float):
            value = f"{value:,.2f}"
        elif isinstance(value, dict):
            value = ", ".join(f"{k} {v:.2f}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(f"{v:.1f}" for v in value)
        print(f"{name:<{width}}  {value}")
    record["arguments"] = vars(args)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(record, indent=2, default=float) + "\n")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
