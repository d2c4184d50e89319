"""How much data grounding costs: SUP, CB and IGL accuracy against the number of logged
samples, a sweep over ``samples`` with every method."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pandas as pd

from iglearn.envs import make_environment
from iglearn.experiments.configs import SampleComplexityConfig
from iglearn.experiments.results import (
    SCHEMA,
    markdown_table,
    mean_std,
    metric,
    percent,
    prepare_output,
    save_figure,
    std_note,
    trials_text,
    write_outputs,
)
from iglearn.experiments.runner import Execution
from iglearn.experiments.sweep import run_sweep
from iglearn.experiments.table1 import Table1Config


def plot(frame: pd.DataFrame, path: Path) -> None:
    """Accuracy (%) against log size (log scale), mean with a band of one std, per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for method, part in metric(frame, "accuracy").groupby("method", sort=False):
        stats = 100 * part.groupby("samples")["value"].agg(["mean", "std"]).fillna(0)
        ax.plot(stats.index, stats["mean"], marker="o", label=method)
        ax.fill_between(stats.index, stats["mean"] - stats["std"],
                        stats["mean"] + stats["std"], alpha=0.2)
    ax.set_xscale("log")
    ax.set_xlabel("logged interactions")
    ax.set_ylabel("policy accuracy (%)")
    ax.set_title("Sample complexity: the cost of grounding (mean ± std over trials)")
    ax.grid(alpha=0.3)
    ax.legend()
    save_figure(fig, path)


def markdown(frame: pd.DataFrame, config: SampleComplexityConfig) -> str:
    """Mean accuracy (%) per log size and method, ± its standard deviation."""
    table = mean_std(frame, ["samples", "method"], "accuracy")
    table["cell"] = [percent(m, s) for m, s in zip(table["mean"], table["std"], strict=True)]
    wide = table.pivot(index="samples", columns="method", values="cell")
    wide = wide[[m for m in ("SUP", "CB", "IGL") if m in wide]]
    wide.columns = [f"{m} accuracy (%)" for m in wide.columns]
    return (f"# Sample complexity ({config.dataset}, {trials_text(config.trials)} per size)\n\n"
            f"{markdown_table(wide.reset_index())}\n\n{std_note(config.trials)}\n")


def reproduce(config: SampleComplexityConfig, out: str | Path,
              execution: Execution | None = None) -> str:
    """Run the experiment; write sample_complexity.csv, .md, .png and config.json."""
    make_environment(config.dataset, config.data_dir)  # fails early on missing data
    folder = prepare_output(out)
    base = Table1Config(trials=config.trials, seed=config.seed, dataset=config.dataset,
                        data_dir=config.data_dir, policy=config.policy)
    sizes = sorted(config.samples)
    fingerprint = {**asdict(config), "samples": sizes, "experiment": "sample-complexity",
                   "schema": SCHEMA}  # its own options, the sizes in the order they run
    frame = run_sweep(base, {"samples": sizes}, execution, folder, "sample-complexity",
                      fingerprint)
    return write_outputs(folder, "sample_complexity", frame, markdown(frame, config), config,
                         plot)
