"""Sweeps: Table-1-style batch fits over a grid of settings, written as one tidy table.

Every grid point runs the same trial seeds (common random numbers), so differences between
points are not differences between logs.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from iglearn.envs import make_environment
from iglearn.experiments.configs import SWEEPABLE as SWEEPABLE
from iglearn.experiments.results import (
    SCHEMA,
    markdown_table,
    mean_std,
    prepare_output,
    tidy_frame,
    write_outputs,
)
from iglearn.experiments.runner import Execution, StackedTrials, run_trials
from iglearn.experiments.table1 import Table1Config, run_stacked
from iglearn.seeding import spawn_seeds


def grid_points(grid: dict[str, list]) -> list[dict]:
    """Every combination of the grid's values."""
    names = list(grid)
    return [dict(zip(names, values, strict=True))
            for values in itertools.product(*(grid[n] for n in names))]


def sweep_trials(base: Table1Config, points: list[dict], experiment: str, indices: list[int],
                 seeds: list[np.random.SeedSequence]) -> list[list[dict]]:
    """Trial ``index % trials`` of grid point ``index // trials`` for every index, the trials
    of one point fitted side by side; rows carry the point's settings."""
    rows: dict[int, list[dict]] = {}
    for p, point in enumerate(points):
        members = [k for k, index in enumerate(indices) if index // base.trials == p]
        if members:
            fitted = run_stacked(replace(base, **point),
                                 [indices[k] % base.trials for k in members],
                                 [seeds[k] for k in members], experiment)
            for k, trial_rows in zip(members, fitted, strict=True):
                rows[k] = [{**row, **point} for row in trial_rows]
    return [rows[k] for k in range(len(indices))]


def sweep_fingerprint(base: Table1Config, grid: dict[str, list], experiment: str) -> dict:
    """What identifies a sweep's trials, by the options that give it: every setting of
    ``base`` that the grid does not sweep, ``trials`` among them (a trial's index depends on
    their number, so a sweep does not resume with another), each swept setting NAME as
    ``set NAME`` (``--set NAME=V1,V2``), with two or more the order of the ``--set`` options
    as ``set order`` (a trial's index depends on it too: the grid's points run in that
    order), the experiment and the rows' schema."""
    settings = {name: value for name, value in asdict(base).items() if name not in grid}
    swept: dict[str, list] = {f"set {name}": list(values) for name, values in grid.items()}
    if len(grid) > 1:
        swept["set order"] = list(grid)
    return {**settings, **swept, "experiment": experiment, "schema": SCHEMA}


def run_sweep(base: Table1Config, grid: dict[str, list], execution: Execution | None = None,
              folder: Path | None = None, experiment: str = "sweep",
              fingerprint: dict | None = None) -> pd.DataFrame:
    """All grid points x ``base.trials`` trials, as one tidy table whose settings columns are
    the grid's names; ``fingerprint`` identifies the trials recorded in ``folder`` (by
    default :func:`sweep_fingerprint`; an experiment built on a sweep names its own
    options)."""
    points = grid_points(grid)
    trial_seeds = spawn_seeds(base.seed, base.trials)
    seeds = [trial_seeds[i % base.trials] for i in range(len(points) * base.trials)]
    fingerprint = fingerprint or sweep_fingerprint(base, grid, experiment)
    rows = run_trials(StackedTrials(partial(sweep_trials, base, points, experiment)),
                      len(seeds), base.seed, execution or Execution(), folder, fingerprint,
                      experiment, seeds)
    return tidy_frame(rows)


def summary(frame: pd.DataFrame, settings: list[str]) -> pd.DataFrame:
    """Accuracy per setting and method, in percent for people to read: mean, std (ddof=1),
    min and trials."""
    table = mean_std(frame, [*settings, "method"], "accuracy")
    for column in ("mean", "std", "min"):
        table[column] = 100 * table[column]
    return table.rename(columns={"mean": "accuracy (%)", "std": "std (%)", "min": "min (%)",
                                 "n": "trials"})


def reproduce_sweep(base: Table1Config, grid: dict[str, list], out: str | Path,
                    execution: Execution | None = None) -> str:
    """Run the sweep; write sweep.csv (tidy), sweep.md and config.json to ``out``."""
    make_environment(base.dataset, base.data_dir)  # fails early on missing data
    folder = prepare_output(out)
    frame = run_sweep(base, grid, execution, folder)
    table = summary(frame, list(grid))
    trials = f"{base.trials} trial{'s' if base.trials != 1 else ''}"
    text = (f"# Sweep over {', '.join(grid)} ({base.dataset}, {trials} per point)"
            f"\n\n{markdown_table(table, exact=tuple(grid))}\n\nstd is the standard deviation "
            f"over the trials (ddof=1; n/a for one trial).\n")
    return write_outputs(folder, "sweep", frame, text, {"base": asdict(base), "grid": grid})
