"""Table 1 of the paper: SUP, CB and IGL in batch mode on the MNIST environment.

Each trial draws a fresh uniform log of ``samples`` interactions, fits the three learners
with the same policy class, and scores the argmax policy on the held-out test images.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from iglearn.envs import make_environment
from iglearn.experiments.results import (
    format_std,
    mean_std,
    prepare_output,
    write_atomic,
    write_outputs,
)
from iglearn.experiments.runner import Execution, StackedTrials, fingerprint, run_trials
from iglearn.learners import BatchIGL, ContextualBandit, Optimisation, Supervised
from iglearn.seeding import integer_seed

# The paper's Table 1 (policy accuracy, %, mean +/- std over 16 trials).
PAPER = {"SUP": (90.62, 1.02), "CB": (85.58, 4.50), "IGL": (82.21, 4.33)}


@dataclass
class Table1Config:
    """Settings of the Table 1 reproduction."""

    trials: int = 16
    """Independent trials (fresh log and initialisation each)."""
    samples: int = 60000
    """Logged interactions per trial (uniform logging policy)."""
    seed: int = 0
    """Root seed; trial seeds are spawned from it."""
    dataset: str = "mnist"
    """'mnist' (the paper's infinite-MNIST environment) or 'digits' (scikit-learn, offline)."""
    data_dir: str | None = None
    """Folder with the four MNIST .gz files (else $IGLEARN_DATA, the cache, a download)."""
    policy: str = "linear"
    """Policy class for all three learners: 'linear' (the paper's) or 'mlp'."""
    decoder: str = "linear"
    """IGL decoder class: 'linear' (the paper's) or 'mlp'."""
    lr: float = 0.02
    """Peak learning rate of every learner."""
    decoder_temperature: float = 0.1
    """Temperature of IGL's sigmoid decoder (Appendix B: 0.1)."""
    methods: tuple[str, ...] = ("SUP", "CB", "IGL")
    """Which learners to fit."""


def run_stacked(config: Table1Config, trials: list[int],
                seeds: list[np.random.SeedSequence]) -> list[list[dict]]:
    """Fit SUP, CB and IGL on one fresh log per trial, each method's fits side by side as one
    batched computation (``fit_many``, the same models as fitting each alone); per trial, one
    tidy row per method."""
    env = make_environment(config.dataset, config.data_dir)
    trial_seeds = [integer_seed(seed) for seed in seeds]
    # per trial: the log's seed, then one per method, so that skipping one changes no other
    spawned = [np.random.SeedSequence(trial_seed).spawn(4) for trial_seed in trial_seeds]
    logs = [env.log(config.samples, np.random.default_rng(log_seed))
            for log_seed, *_ in spawned]
    test_x, test_y = env.test_set()
    optimisation = Optimisation(lr=config.lr)
    learners = {
        "SUP": lambda seed: Supervised(config.policy, optimisation, seed=seed),
        "CB": lambda seed: ContextualBandit(config.policy, optimisation, seed=seed),
        "IGL": lambda seed: BatchIGL(config.policy, config.decoder, optimisation,
                                     decoder_temperature=config.decoder_temperature,
                                     seed=seed),
    }
    rows: list[list[dict]] = [[] for _ in trials]
    for m, (method, make) in enumerate(learners.items()):
        if method not in config.methods:
            continue
        batch = [make(method_seeds[1 + m]) for method_seeds in spawned]
        fitted = batch[0].fit_many(batch, logs)
        for t, learner in enumerate(fitted):
            row = {"method": method, "trial": trials[t], "seed": trial_seeds[t],
                   "accuracy": 100 * learner.accuracy(test_x, test_y)}
            if isinstance(learner, BatchIGL):
                report = learner.report_
                row.update(seconds=report.seconds, indicator=report.indicator,
                           restarts=report.restarts, flipped=report.flipped)
            else:
                row.update(seconds=learner.seconds_)
            rows[t].append(row)
    return rows


def run_trial(config: Table1Config, trial: int, seed: np.random.SeedSequence) -> list[dict]:
    """Fit SUP, CB and IGL on one fresh log; one tidy row per method."""
    return run_stacked(config, [trial], [seed])[0]


def run(config: Table1Config, execution: Execution | None = None,
        folder: Path | None = None) -> pd.DataFrame:
    """Run every trial (recording each in ``folder`` when given, and skipping those already
    there) and return the tidy table, one row per method and trial."""
    rows = run_trials(StackedTrials(partial(run_stacked, config)), config.trials, config.seed,
                      execution or Execution(), folder, fingerprint(config), "Table 1 trials")
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean +/- std per method beside the paper's numbers."""
    table = mean_std(frame, ["method"], "accuracy")
    table["paper_mean"] = table["method"].map(lambda m: PAPER[m][0])
    table["paper_std"] = table["method"].map(lambda m: PAPER[m][1])
    seconds = frame.groupby("method", sort=False)["seconds"].mean()
    table["seconds_per_fit"] = table["method"].map(seconds)
    return table


def markdown(table: pd.DataFrame, config: Table1Config) -> str:
    """The summary as a Markdown table."""
    lines = [
        f"# Table 1: batch mode, {config.dataset}, {config.samples} uniform samples, "
        f"{config.trials} trials, {config.policy} policy",
        "",
        "| Setting | iglearn accuracy (%) | min (%) | paper accuracy (%) | seconds per fit |",
        "|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        lines.append(f"| {row.method} | {row.mean:.2f} ± {format_std(row.std)} | {row.min:.2f} | "
                     f"{row.paper_mean:.2f} ± {row.paper_std:.2f} | {row.seconds_per_fit:.2f} |")
    return "\n".join(lines) + "\n"



def plot(frame: pd.DataFrame, path: Path) -> None:
    """Per-method accuracy: iglearn's trials and mean +/- std beside the paper's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(PAPER)
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, method in enumerate(methods):
        ours = frame.loc[frame["method"] == method, "accuracy"].to_numpy()
        jitter = np.linspace(-0.08, 0.08, len(ours)) if len(ours) > 1 else np.zeros(1)
        ax.scatter(i - 0.15 + jitter, ours, s=12, color="C0", alpha=0.5)
        ax.errorbar(i - 0.15, ours.mean(), yerr=ours.std(ddof=1) if len(ours) > 1 else 0,
                    fmt="o", color="C0", capsize=4, label="iglearn" if i == 0 else None)
        mean, std = PAPER[method]
        ax.errorbar(i + 0.15, mean, yerr=std, fmt="s", color="C3", capsize=4,
                    label="paper" if i == 0 else None)
    ax.set_xticks(range(len(methods)), methods)
    ax.set_ylabel("policy accuracy (%)")
    ax.set_title("Table 1: batch mode on MNIST")
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)


def reproduce(config: Table1Config, out: str | Path, execution: Execution | None = None) -> str:
    """Run Table 1 and write table1.csv, table1.md, table1.png and config.json to ``out``;
    finished trials are recorded in ``out/trials`` so an interrupted run resumes."""
    make_environment(config.dataset, config.data_dir)  # fails early on missing data
    folder = prepare_output(out)
    frame = run(config, execution, folder)
    return write_outputs(folder, "table1", frame, markdown(summary(frame), config), config,
                         plot)
