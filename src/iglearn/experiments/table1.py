"""Table 1 of the paper: SUP, CB and IGL in batch mode on the MNIST environment.

Each trial draws a fresh uniform log of ``samples`` interactions, fits the three learners
with the same policy class, and scores the argmax policy on the held-out test images.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from iglearn.envs import make_environment
from iglearn.experiments.configs import PAPER, Table1Config
from iglearn.experiments.results import (
    fit_measures,
    mean_std,
    metric,
    percent,
    prepare_output,
    save_figure,
    std_note,
    tidy_frame,
    tidy_rows,
    trials_text,
    write_outputs,
)
from iglearn.experiments.runner import Execution, StackedTrials, fingerprint, run_trials
from iglearn.learners import BatchIGL, ContextualBandit, Optimisation, Supervised
from iglearn.learners.base import StackableLearner
from iglearn.seeding import integer_seed

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PAPER_TRIALS = 16
"""The trials behind the paper's Table 1."""
PAPER_SAMPLES = 60000
"""The uniform samples of each log behind the paper's Table 1."""
PAPER_DATASET = "mnist"
"""The dataset of the paper's Table 1: its figures are shown beside a run on this one only."""


def run_stacked(config: Table1Config, trials: list[int],
                seeds: list[np.random.SeedSequence],
                experiment: str = "table1") -> list[list[dict]]:
    """Fit SUP, CB and IGL on one fresh log per trial, each method's fits side by side as one
    batched computation (``fit_many``, the models of fitting each alone up to rounding); per
    trial, the tidy rows (:func:`~iglearn.experiments.results.tidy_rows`) of every method at
    step ``config.samples``: accuracy and seconds, and for IGL its indicator, restarts and
    whether the corrector flipped."""
    env = make_environment(config.dataset, config.data_dir)
    trial_seeds = [integer_seed(seed) for seed in seeds]
    # per trial: the log's seed, then one per method, so that skipping one changes no other
    spawned = [np.random.SeedSequence(trial_seed).spawn(4) for trial_seed in trial_seeds]
    logs = [env.log(config.samples, np.random.default_rng(log_seed))
            for log_seed, *_ in spawned]
    test_x, test_y = env.test_set()
    optimisation = Optimisation(lr=config.lr)
    learners: dict[str, Callable[[np.random.SeedSequence], StackableLearner]] = {
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
            metrics = {"accuracy": learner.accuracy(test_x, test_y), **fit_measures(learner)}
            rows[t] += tidy_rows(experiment, method, trials[t], trial_seeds[t],
                                 config.samples, metrics)
    return rows


def run(config: Table1Config, execution: Execution | None = None,
        folder: Path | None = None) -> pd.DataFrame:
    """Run every trial (recording each in ``folder`` when given, and skipping those already
    there) and return the tidy table."""
    rows = run_trials(StackedTrials(partial(run_stacked, config)), config.trials, config.seed,
                      execution or Execution(), folder, fingerprint(config), "Table 1 trials")
    return tidy_frame(rows)


def summary(frame: pd.DataFrame, dataset: str = PAPER_DATASET) -> pd.DataFrame:
    """Accuracy (a fraction) per method: mean, std (ddof=1), min and trials, beside the
    paper's when ``dataset`` is the paper's (MNIST), and the mean seconds per fit."""
    table = mean_std(frame, ["method"], "accuracy")
    if dataset == PAPER_DATASET:
        table["paper_mean"] = table["method"].map(lambda m: PAPER[m][0])
        table["paper_std"] = table["method"].map(lambda m: PAPER[m][1])
    seconds = metric(frame, "seconds").groupby("method", sort=False)["value"].mean()
    table["seconds_per_fit"] = table["method"].map(seconds)
    return table


def markdown(table: pd.DataFrame, config: Table1Config) -> str:
    """The summary as a Markdown table (accuracy in percent), with the paper's column only
    for a run on the paper's dataset."""
    paper = config.dataset == PAPER_DATASET
    lines = [
        f"# Table 1: batch mode, {config.dataset}, {config.samples} uniform samples, "
        f"{trials_text(config.trials)}, {config.policy} policy",
        "",
        "| Setting | iglearn accuracy (%) | min (%) | "
        + ("paper accuracy (%) | " if paper else "") + "seconds per fit |",
        "|---|---|---|---|" + ("---|" if paper else ""),
    ]
    for row in table.itertuples():
        reported = f"{percent(row.paper_mean, row.paper_std)} | " if paper else ""
        lines.append(f"| {row.method} | {percent(row.mean, row.std)} | {100 * row.min:.2f} | "
                     f"{reported}{row.seconds_per_fit:.2f} |")
    if paper:
        note = (f"The paper's columns are its reported Table 1, over {PAPER_TRIALS} "
                f"trials.")
        if config.samples != PAPER_SAMPLES:
            note += (f" This run fitted {config.samples} samples, not the paper's "
                     f"{PAPER_SAMPLES}: its figures are not comparable with the paper's (run "
                     f"with --samples {PAPER_SAMPLES} to compare).")
        elif config.trials < PAPER_TRIALS:
            note += (f" This run has {trials_text(config.trials)}: its mean and spread "
                     f"are rougher than the paper's.")
    else:
        note = (f"The paper's Table 1 is on MNIST, not {config.dataset}: its figures are not "
                f"comparable and are not shown (run with --dataset mnist to compare).")
    lines += ["", f"{std_note(config.trials)} {note}"]
    return "\n".join(lines) + "\n"


def plot(frame: pd.DataFrame, path: Path, dataset: str = PAPER_DATASET) -> None:
    """Per-method accuracy (%) on ``dataset``: iglearn's trials and mean +/- std, beside the
    paper's on MNIST."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    draw(ax, frame, dataset)
    save_figure(fig, path)


def draw(ax: Axes, frame: pd.DataFrame, dataset: str = PAPER_DATASET) -> None:
    """Draw :func:`plot`'s panel on ``ax``: the paper's figures only for its dataset."""
    accuracy = metric(frame, "accuracy")
    methods = list(PAPER)
    labelled = False
    for i, method in enumerate(methods):
        ours = 100 * accuracy.loc[accuracy["method"] == method, "value"].to_numpy()
        if len(ours):
            jitter = np.linspace(-0.08, 0.08, len(ours)) if len(ours) > 1 else np.zeros(1)
            ax.scatter(i - 0.15 + jitter, ours, s=12, color="C0", alpha=0.5)
            ax.errorbar(i - 0.15, ours.mean(), yerr=ours.std(ddof=1) if len(ours) > 1 else 0,
                        fmt="o", color="C0", capsize=4, label=None if labelled else "iglearn")
            labelled = True
        if dataset == PAPER_DATASET:
            mean, std = PAPER[method]
            ax.errorbar(i + 0.15, 100 * mean, yerr=100 * std, fmt="s", color="C3", capsize=4,
                        label="paper" if i == 0 else None)
    ax.set_xticks(range(len(methods)), methods)
    ax.set_ylabel("policy accuracy (%)")
    ax.set_title(title(dataset))
    ax.grid(axis="y", alpha=0.3)
    ax.legend()


def title(dataset: str) -> str:
    """The title of :func:`plot`'s panel, naming the dataset of the run."""
    name = "MNIST" if dataset == "mnist" else dataset
    return f"Table 1: batch mode on {name} (mean ± std over trials)"


def reproduce(config: Table1Config, out: str | Path, execution: Execution | None = None) -> str:
    """Run Table 1 and write table1.csv, table1.md, table1.png and config.json to ``out``;
    finished trials are recorded in ``out/trials`` so an interrupted run resumes."""
    make_environment(config.dataset, config.data_dir)  # fails early on missing data
    folder = prepare_output(out)
    frame = run(config, execution, folder)
    return write_outputs(folder, "table1", frame,
                         markdown(summary(frame, config.dataset), config), config,
                         lambda f, path: plot(f, path, config.dataset))
