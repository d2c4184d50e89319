"""Action-inclusive feedback (Xie et al., "Interaction-Grounded Learning with Action-inclusive
Feedback", NeurIPS 2022): AI-IGL against the 2021 objective and the baselines.

Each trial draws fresh uniform logs, one on action-inclusive MNIST (the feedback shows the
digit (a + 6 r - 3) mod 10) and one on the simulated BCI at every noise level, and fits on each
AI-IGL (:class:`~iglearn.learners.AIIGL`), 2021 IGL (:class:`~iglearn.learners.BatchIGL`), CB
(the true reward) and SUP (the labels), all with their default settings and linear models; it
scores the argmax policy on the task's test contexts. Each method fits a worker's trials side
by side (``fit_many``), each trial ending as its own fit would, up to floating-point rounding.

The AI-IGL paper's reported figures are on its own tasks (a simulated fMRI task and OpenML data
sets), not these; they stand beside ours as the paper's, unverified.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from iglearn.envs.named import named_environment
from iglearn.experiments.configs import ActionInclusiveConfig, check_distinct
from iglearn.experiments.results import (
    accuracy_summary,
    fit_scored,
    markdown_table,
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
from iglearn.learners import AIIGL, BatchIGL, ContextualBandit, Supervised
from iglearn.seeding import integer_seed

EXPERIMENT = "action_inclusive"
METHODS = {"AI-IGL": AIIGL, "IGL": BatchIGL, "CB": ContextualBandit, "SUP": Supervised}
"""The learners compared, in the order their seeds are drawn."""
BCI = "bci"
"""The task name of the BCI simulation."""

PAPER_BCI = {0.01: 0.891, 0.05: 0.766, 0.1: 0.643}
"""The AI-IGL paper's reported AI-IGL accuracy (a fraction) on its own simulated fMRI/BCI
number-guessing task (K = 3), by noise level. Unverified (read from a secondary summary); the
paper's own task, not the same data as the BCI simulation here."""
PAPER_BCI_IGL = 0.33
"""The 2021 IGL accuracy the AI-IGL paper reports on that task: about 33 % (chance, K = 3) at
every noise level of :data:`PAPER_BCI`. Unverified, the paper's own task."""
PAPER_OPENML = {"AI-IGL": 0.357, "IGL": 0.157}
"""The AI-IGL paper's reported accuracy on its OpenML classification tasks with K >= 3, made
action-inclusive. Unverified, the paper's own tasks, not run here."""


def tasks(config: ActionInclusiveConfig) -> list[tuple[str, float | None]]:
    """The (task, noise) pairs a trial runs: the action-inclusive image task (no noise level),
    then the BCI simulation at each noise level."""
    return [(f"action-inclusive-{config.dataset}", None)] + [(BCI, n) for n in config.noise]


def task_seeds(trial_seed: int, task: str, noise: float | None) -> list[np.random.SeedSequence]:
    """The seeds of one task in one trial: the log's, then one per method of :data:`METHODS`;
    they depend on the trial, the task and its noise level only, so that leaving out a task,
    a noise level or a method changes no other result."""
    key = [trial_seed, 0 if noise is None else 1, round(1e6 * (noise or 0.0))]
    return np.random.SeedSequence(key).spawn(1 + len(METHODS))


def run_stacked(config: ActionInclusiveConfig, trials: list[int],
                seeds: list[np.random.SeedSequence]) -> list[list[dict]]:
    """Per trial, the tidy rows of every method on every task (settings columns ``task`` and
    ``noise``) at step = the log's size: accuracy, seconds, and the fit's own measures."""
    trial_seeds = [integer_seed(seed) for seed in seeds]
    rows: list[list[dict]] = [[] for _ in trials]
    for task, noise in tasks(config):
        env = (named_environment(task, config.data_dir) if noise is None
               else named_environment(task, noise=noise))
        samples = config.samples if noise is None else config.bci_samples
        spawned = [task_seeds(trial_seed, task, noise) for trial_seed in trial_seeds]
        logs = [env.log(samples, np.random.default_rng(log_seed)) for log_seed, *_ in spawned]
        test_x, test_y = env.test_set()
        for m, method in enumerate(METHODS):
            if method not in config.methods:
                continue
            scored = fit_scored(METHODS[method], [each[1 + m] for each in spawned], logs,
                                test_x, test_y)
            for t, found in enumerate(scored):
                rows[t] += tidy_rows(EXPERIMENT, method, trials[t], trial_seeds[t], samples,
                                     found, {"task": task, "noise": noise})
        del logs
    return rows


def run(config: ActionInclusiveConfig, execution: Execution | None = None,
        folder: Path | None = None) -> pd.DataFrame:
    """Run every trial (recording each in ``folder`` when given, and skipping those already
    there) and return the tidy table."""
    rows = run_trials(StackedTrials(partial(run_stacked, config)), config.trials, config.seed,
                      execution or Execution(), folder, fingerprint(config), "AI-IGL trials")
    return tidy_frame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (a fraction) per task, noise level and method: mean, std (ddof=1), min and
    trials, and the mean seconds per fit
    (:func:`~iglearn.experiments.results.accuracy_summary`)."""
    return accuracy_summary(frame, ["task", "noise", "method"])


def _paper(task: str, noise: float | None) -> tuple[str, str]:
    """The paper's AI-IGL and 2021 IGL figures (%) for one row, or '–' where it reports none."""
    if task != BCI or noise not in PAPER_BCI:
        return "–", "–"
    return f"{100 * PAPER_BCI[noise]:.1f}", f"about {100 * PAPER_BCI_IGL:.0f}"


def markdown(table: pd.DataFrame, config: ActionInclusiveConfig) -> str:
    """The summary as Markdown tables (accuracy in percent) with the paper's figures beside."""
    methods = [m for m in METHODS if m in set(table["method"])]
    lines = [
        "# Action-inclusive feedback: AI-IGL, 2021 IGL, CB and SUP",
        "",
        f"Action-inclusive {config.dataset}: {config.samples} uniform samples; BCI simulation "
        f"(K = 3, 64-dim patterns): {config.bci_samples} uniform samples per noise level; "
        f"{trials_text(config.trials)}; linear models, each learner's default settings.",
        "",
        "| task | noise | " + " | ".join(f"{m} accuracy (%)" for m in methods)
        + " | paper AI-IGL (%) | paper 2021 IGL (%) |",
        "|---|---|" + "---|" * (len(methods) + 2),
    ]
    cells = {(row.task, _noise_key(row.noise), row.method): row for row in table.itertuples()}
    seconds = []
    for task, noise in dict.fromkeys((row.task, _noise_key(row.noise))
                                     for row in table.itertuples()):
        found = [cells.get((task, noise, m)) for m in methods]
        shown = [percent(r.mean, r.std) if r is not None else "–" for r in found]
        lines.append(f"| {task} | {'–' if noise is None else f'{noise:g}'} | "
                     + " | ".join(shown) + " | " + " | ".join(_paper(task, noise)) + " |")
        seconds.append({"task": task, "noise": "–" if noise is None else f"{noise:g}",
                        **{m: r.seconds_per_fit for m, r in zip(methods, found, strict=True)
                           if r is not None}})
    lines += [
        "",
        f"{std_note(config.trials)} Chance is 10 % on the image task and 33.3 % on the BCI "
        f"simulation.",
        "",
        "The paper's columns are the AI-IGL paper's reported accuracies on its own simulated "
        "fMRI/BCI task (K = 3): unverified (read from a secondary summary), the paper's own "
        "tasks, not the same data; its simulation is not this one. On its OpenML tasks with "
        f"K >= 3 it reports AI-IGL {100 * PAPER_OPENML['AI-IGL']:.1f} % against 2021 IGL "
        f"{100 * PAPER_OPENML['IGL']:.1f} % (unverified, the paper's own tasks, not the same "
        "data; not run here).",
        "",
        "## Mean seconds per fit",
        "",
        markdown_table(pd.DataFrame(seconds)),
    ]
    return "\n".join(lines) + "\n"


def _noise_key(noise: float) -> float | None:
    """A noise level as a table key: None for the image task (NaN in the frame)."""
    return None if pd.isna(noise) else float(noise)


def plot(frame: pd.DataFrame, path: Path) -> None:
    """Accuracy (%) against the BCI noise level, one line per method (mean ± std) with the
    paper's reported figures, and beside it each method's accuracy on the image task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    accuracy = metric(frame, "accuracy")
    bci = accuracy[accuracy["task"] == BCI]
    images = accuracy[accuracy["task"] != BCI]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), width_ratios=(3, 2))
    for i, method in enumerate(METHODS):
        ours = bci[bci["method"] == method].groupby("noise")["value"]
        if len(ours):
            mean, std = 100 * ours.mean(), 100 * ours.std().fillna(0)
            left.errorbar(mean.index, mean, yerr=std, marker="o", capsize=3, color=f"C{i}",
                          label=method)
    levels = sorted(PAPER_BCI)
    left.plot(levels, [100 * PAPER_BCI[n] for n in levels], "s--", color="C0", alpha=0.5,
              label="paper AI-IGL (its own task)")
    left.plot(levels, [100 * PAPER_BCI_IGL] * len(levels), "s:", color="C1", alpha=0.5,
              label="paper 2021 IGL (its own task)")
    left.set_xscale("log")
    ticks = sorted(set(bci["noise"]) | set(levels))
    left.set_xticks(ticks, [f"{n:g}" for n in ticks])
    left.minorticks_off()
    left.set_xlabel("BCI noise level")
    left.set_ylabel("policy accuracy (%)")
    left.set_title("BCI simulation (K = 3)")
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    names = [m for m in METHODS if m in set(images["method"])]
    for i, method in enumerate(names):
        ours = 100 * images.loc[images["method"] == method, "value"].to_numpy()
        jitter = np.linspace(-0.1, 0.1, len(ours)) if len(ours) > 1 else np.zeros(1)
        right.scatter(i + jitter, ours, s=10, alpha=0.5, color=f"C{list(METHODS).index(method)}")
        right.errorbar(i, ours.mean(), yerr=ours.std(ddof=1) if len(ours) > 1 else 0, fmt="o",
                       capsize=4, color="black")
    right.set_xticks(range(len(names)), names)
    task = images["task"].iloc[0] if len(images) else "action-inclusive images"
    right.set_title(task)
    right.set_ylabel("policy accuracy (%)")
    right.grid(axis="y", alpha=0.3)
    fig.suptitle("Action-inclusive feedback (mean ± std over trials)")
    save_figure(fig, path)


def check(config: ActionInclusiveConfig) -> None:
    """Refuse settings that would run a task or a method twice."""
    check_distinct(config, ("noise", "methods"))


def reproduce(config: ActionInclusiveConfig, out: str | Path,
              execution: Execution | None = None) -> str:
    """Run the comparison and write action_inclusive.csv, .md, .png and config.json to
    ``out``; finished trials are recorded in ``out/trials`` so an interrupted run resumes."""
    check(config)
    named_environment(f"action-inclusive-{config.dataset}", config.data_dir)  # data first
    folder = prepare_output(out)
    frame = run(config, execution, folder)
    return write_outputs(folder, EXPERIMENT, frame, markdown(summary(frame), config), config,
                         plot)
