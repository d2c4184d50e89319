"""Benchmark: how long one re-fit of the decision service takes, on one thread, at a given
number of logged interactions.

    python benchmarks/refit_seconds.py [--interactions 2000 20000] [--json FILE]

For each size, an SQLite service database (digits-shaped: K = 10, 64-dim contexts and
feedback, the service's default ``igl`` learner) is filled with that many joined
interactions a simulated user on scikit-learn's digits gave under uniform play (feedback
images drawn from the hidden reward), and :func:`iglearn.service.learning.refit` runs once,
as the learning worker runs it, with one torch thread. Reports the re-fit's own record,
``fit_seconds`` (wall seconds of the fit, as stored with the version), the CPU seconds of
the whole re-fit (reading the log, fitting, packing and storing the model) and its wall
seconds; on a shared machine compare the CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np


def filled_storage(folder: Path, n: int, seed: int):  # noqa: ANN201 (a Storage)
    """An SQLite service database holding ``n`` joined, learnable interactions on digits."""
    from iglearn.envs import digits_environment
    from iglearn.service.storage import Decision, Feedback, SQLiteStorage

    env, k = digits_environment(), 10
    rng = np.random.default_rng(seed)
    storage = SQLiteStorage(folder / "service.db")
    contexts = env.contexts(n, rng)
    actions = rng.integers(k, size=n)
    feedback = env.feedback(contexts, actions, env.reward(contexts, actions), rng)
    now, uniform = time.time(), np.full(k, 1.0 / k)
    ids = [f"e{i}" for i in range(n)]
    storage.add_decisions([Decision(ids[i], contexts.features[i].astype(np.float32),
                                    int(actions[i]), 1.0 / k, uniform, 0, True, True, now)
                           for i in range(n)])
    storage.add_feedback([Feedback(ids[i], feedback[i].astype(np.float32), False, now)
                          for i in range(n)], join_window=600.0)
    return storage


def main() -> None:
    import resource

    import torch

    from iglearn.service.config import load_config
    from iglearn.service.learning import refit
    from iglearn.service.process import write_config

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interactions", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for n in args.interactions:
        with tempfile.TemporaryDirectory(prefix="iglearn-refit-seconds-") as tmp:
            folder = Path(tmp)
            config = load_config(write_config(folder / "service.toml", {
                "model": {"n_actions": 10, "context_dim": 64, "feedback_dim": 64,
                          "seed": args.seed},
                "learning": {"max_interactions": max(args.interactions)},
                "server": {"db": "service.db"}}))
            storage = filled_storage(folder, n, args.seed)
            refit(storage, config, "warm-up", minimum=1)  # imports and first-call costs
            cpu = resource.getrusage(resource.RUSAGE_SELF)
            wall = time.perf_counter()
            record = refit(storage, config, "benchmark")
            wall = time.perf_counter() - wall
            after = resource.getrusage(resource.RUSAGE_SELF)
            storage.close()
        row = {"interactions": record.interactions, "fit_seconds": round(record.fit_seconds, 3),
               "refit_cpu_seconds": round(after.ru_utime + after.ru_stime
                                          - cpu.ru_utime - cpu.ru_stime, 3),
               "refit_wall_seconds": round(wall, 3),
               "indicator": record.summary.get("indicator")}
        rows.append(row)
        print(f"{row['interactions']:6d} interactions: fit_seconds {row['fit_seconds']:.2f}, "
              f"re-fit {row['refit_cpu_seconds']:.2f} CPU s, {row['refit_wall_seconds']:.2f} "
              f"wall s (one torch thread)", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
