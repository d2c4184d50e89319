"""Section 6: unsupervised reward decoding fails where IGL does not.

For each environment of Theorem 3's family and of the ENV(1)/ENV(2) family, each trial draws a
fresh uniform log and fits the unsupervised baseline (clustering of the feedback, then a
contextual bandit) and batch IGL, and scores the argmax policy on the held-out test images.
Logs are drawn feedback first (:meth:`~iglearn.envs.ClassificationEnvironment.feedback_first_log`)
from the trial's seed, so every environment of a family shows the same contexts and
byte-identical feedback, and the baseline's decoder is the same in each (Theorem 3).
"""

from __future__ import annotations

import time
from functools import lru_cache, partial
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from iglearn.data.logs import InteractionLog
from iglearn.envs.classification import ClassificationEnvironment
from iglearn.envs.section6 import FAMILIES, section6_environments, uniform_play_marginal
from iglearn.errors import IGLearnError
from iglearn.experiments.configs import UnsupervisedConfig
from iglearn.experiments.results import (
    mean_std,
    metric,
    percent,
    prepare_output,
    save_figure,
    std_note,
    tidy_frame,
    tidy_rows,
    trials_text,
    wide,
    write_outputs,
)
from iglearn.experiments.runner import Execution, StackedTrials, fingerprint, run_trials
from iglearn.learners import BatchIGL
from iglearn.learners.unsupervised import UnsupervisedBandit
from iglearn.seeding import integer_seed, spawn_seeds

Families = dict[str, dict[str, ClassificationEnvironment]]
METHODS = ("unsupervised", "IGL")


def family_clusters(config: UnsupervisedConfig, family: str) -> int:
    """The baseline's number of clusters in ``family``."""
    if config.clusters is not None:
        return config.clusters
    return len(uniform_play_marginal(next(iter(FAMILIES[family].values()))))


def make_families(config: UnsupervisedConfig) -> Families:
    """The configured families of environments on the configured dataset."""
    unknown = sorted(set(config.families) - set(FAMILIES))
    if unknown or not config.families:
        raise IGLearnError(f"unknown or no Section 6 families {unknown}; choose among "
                           f"{sorted(FAMILIES)}")
    families = _environments(config.dataset, config.data_dir)
    return {family: families[family] for family in config.families}


@lru_cache(maxsize=2)
def _environments(dataset: str, data_dir: str | None) -> Families:
    return section6_environments(dataset, data_dir)  # built once per process


def _units(config: UnsupervisedConfig) -> list[tuple[str, str]]:
    """The (family, environment) pairs of one trial, in order."""
    return [(family, name) for family in config.families for name in FAMILIES[family]]


class _Unit(NamedTuple):
    """One trial in one environment, with the log both methods see."""

    trial: int
    family: str
    name: str
    env: ClassificationEnvironment
    seed: int
    log: InteractionLog


def run_units(config: UnsupervisedConfig, indices: list[int],
              seeds: list[np.random.SeedSequence]) -> list[list[dict]]:
    """Units ``indices`` of the run, unit i being one trial (i // units) in one environment.
    Each fits the baseline and IGL on one fresh log (IGL's fits side by side, as each would be
    alone); per unit, the tidy rows of both methods.

    Both methods see one log drawn feedback first from the trial's seed: the same contexts
    and feedback in every environment of the family, the actions as each one's reward says."""
    names, families = _units(config), make_families(config)
    units = []
    for index, seed in zip(indices, seeds, strict=True):
        family, name = names[index % len(names)]
        env = families[family][name]
        trial_seed = integer_seed(seed)
        log = env.feedback_first_log(config.samples, np.random.default_rng([trial_seed, 0]))
        units.append(_Unit(index // len(names), family, name, env, trial_seed, log))
    igls = BatchIGL.fit_many(
        [BatchIGL(max_restarts=config.max_restarts, restart_threshold=config.restart_threshold,
                  flip_policy=config.flip_policy, seed=np.random.default_rng([unit.seed, 2]))
         for unit in units], [unit.log for unit in units])
    rows = []
    for unit, igl in zip(units, igls, strict=True):
        baseline = UnsupervisedBandit(family_clusters(config, unit.family), config.method,
                                      config.rule, seed=np.random.default_rng([unit.seed, 1]))
        start = time.perf_counter()
        baseline.fit(unit.log)
        rows.append([*_rows(unit, config.samples, "unsupervised", baseline,
                            time.perf_counter() - start),
                     *_rows(unit, config.samples, "IGL", igl, igl.report_.seconds)])
    return rows


def _rows(unit: _Unit, samples: int, method: str, learner: BatchIGL | UnsupervisedBandit,
          seconds: float) -> list[dict]:
    """The tidy rows of one method in one unit: accuracy, seconds, ``decoded_gap``
    (E[psi | r=1] - E[psi | r=0] on the log) and ``decoded_d`` (the share of digit d's test
    images decoded as reward); evaluation only: neither learner reads the reward."""
    test_x, test_y = unit.env.test_set()
    psi = learner.decode(unit.log.feedback)
    on_test = learner.decode(test_x) > 0.5
    reward = unit.log.reward
    assert reward is not None  # the simulated logs carry their hidden reward
    metrics = {"accuracy": learner.accuracy(test_x, test_y), "seconds": seconds,
               "decoded_gap": float(psi[reward > 0].mean() - psi[reward == 0].mean()),
               **{f"decoded_{d}": float(on_test[test_y == d].mean()) for d in range(10)}}
    return tidy_rows("unsupervised", method, unit.trial, unit.seed, samples, metrics,
                     {"family": unit.family, "environment": unit.name})


def run(config: UnsupervisedConfig, execution: Execution | None = None,
        folder: Path | None = None) -> pd.DataFrame:
    """Run every (trial, environment) unit, in parallel as ``execution`` says and recorded in
    ``folder`` when given; the tidy table."""
    make_families(config)  # fails early on missing data or unknown families
    per_trial = len(_units(config))
    trial_seeds = spawn_seeds(config.seed, config.trials)
    seeds = [trial_seeds[i // per_trial] for i in range(config.trials * per_trial)]
    rows = run_trials(StackedTrials(partial(run_units, config)), len(seeds), config.seed,
                      execution or Execution(), folder, fingerprint(config), "Section 6 fits",
                      seeds)
    return tidy_frame(rows)


DECODED = [f"decoded_{d}" for d in range(10)]


def decoded_digits(frame: pd.DataFrame) -> pd.Series:
    """Per measurement of a wide table (:func:`~iglearn.experiments.results.wide`), the
    digits whose test images mostly decode as reward, as text ('1 2 7')."""
    shares = frame[DECODED].to_numpy()
    return pd.Series([" ".join(str(d) for d in range(10) if row[d] > 0.5) for row in shares],
                     index=frame.index)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (a fraction) per family, environment and method: mean, std (ddof=1), min
    and trials; with the mean decoded gap, the digits decoded as reward (the most frequent
    set over trials) and the mean seconds per fit."""
    by = ["family", "environment", "method"]
    table = mean_std(frame, by, "accuracy")
    measured = wide(frame)
    measured["decoded_digits"] = decoded_digits(measured)
    extra = measured.groupby(by, sort=False).agg(
        decoded_gap=("decoded_gap", "mean"),
        decoded_digits=("decoded_digits", lambda s: s.mode().iloc[0]),
        seconds_per_fit=("seconds", "mean")).reset_index()
    return table.merge(extra, on=by, how="left")


def same_decoding(frame: pd.DataFrame, tolerance: float = 0.1) -> pd.DataFrame:
    """Per family and trial, the baseline's largest difference across the family's
    environments in the share of any digit decoded as reward (``spread``), and whether it is
    within ``tolerance`` (``same``)."""
    unsupervised = wide(frame[frame["method"] == "unsupervised"], DECODED)
    grouped = unsupervised.groupby(["family", "trial"], sort=False)[DECODED]
    spread = (grouped.max() - grouped.min()).max(axis=1).rename("spread").reset_index()
    spread["same"] = spread["spread"] <= tolerance
    profile = grouped.mean().round(2)
    spread["profile"] = [" ".join(f"{v:.2f}" for v in row) for row in profile.to_numpy()]
    return spread


def markdown(table: pd.DataFrame, frame: pd.DataFrame, config: UnsupervisedConfig) -> str:
    """The summary as Markdown (accuracy in percent): one table per family, then the
    baseline's decoding."""
    lines = [f"# Section 6: unsupervised decoding vs IGL, {config.dataset}, {config.samples} "
             f"uniform samples, {trials_text(config.trials)}", "", std_note(config.trials), ""]
    for family in dict.fromkeys(table["family"]):
        part = table[table["family"] == family]
        lines += [f"## {family} ({family_clusters(config, family)} clusters, rule "
                  f"'{config.rule}', {config.method})", "",
                  "| Environment | Method | accuracy (%) | min (%) | decoded gap | "
                  "digits decoded as reward | seconds per fit |",
                  "|---|---|---|---|---|---|---|"]
        for row in part.itertuples():
            lines.append(f"| {row.environment} | {row.method} | {percent(row.mean, row.std)} | "
                         f"{100 * row.min:.2f} | {row.decoded_gap:+.3f} | "
                         f"{row.decoded_digits or '-'} | {row.seconds_per_fit:.2f} |")
        lines.append("")
    lines += ["## The baseline's decoding across each family",
              "",
              "Share of each digit's test images decoded as reward (mean over the family), and "
              "the largest difference between two environments of the family.",
              "",
              "| Family | Trial | digits 0..9 | largest difference | same (<= 0.1) |",
              "|---|---|---|---|---|"]
    for row in same_decoding(frame).itertuples():
        lines.append(f"| {row.family} | {row.trial} | {row.profile} | {row.spread:.3f} | "
                     f"{'yes' if row.same else 'no'} |")
    return "\n".join(lines) + "\n"


def plot(frame: pd.DataFrame, path: Path) -> None:
    """Accuracy (%) per environment of each family: the baseline beside IGL (mean over
    trials), trials as dots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    accuracy = metric(frame, "accuracy").assign(value=lambda f: 100 * f["value"])
    families = [f for f in FAMILIES if (frame["family"] == f).any()]
    widths = [len(FAMILIES[f]) + 1 for f in families]
    fig, axes = plt.subplots(1, len(families), figsize=(11, 4), sharey=True, squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    for ax, family in zip(axes[0], families, strict=True):
        names = list(FAMILIES[family])
        for m, method in enumerate(METHODS):
            offset = (m - 0.5) * 0.38
            sub = accuracy[(accuracy["family"] == family) & (accuracy["method"] == method)]
            means = [sub.loc[sub["environment"] == n, "value"].mean() for n in names]
            ax.bar(np.arange(len(names)) + offset, means, 0.36, color=f"C{m}", alpha=0.7,
                   label=method)
            for i, name in enumerate(names):
                dots = sub.loc[sub["environment"] == name, "value"].to_numpy()
                ax.scatter(np.full(len(dots), i + offset), dots, s=8, color="k", zorder=3)
        ax.axhline(10, color="grey", lw=0.8, ls=":", label="chance (10%)")
        ax.set_xticks(range(len(names)), [n.replace("env ", "") for n in names])
        ax.set_title("Theorem 3: environment i" if family == "theorem3" else "ENV(1), ENV(2)")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("policy accuracy (%)")
    axes[0][0].set_ylim(0, 100)
    axes[0][-1].legend(loc="lower right", fontsize=8)
    save_figure(fig, path)


def reproduce(config: UnsupervisedConfig, out: str | Path,
              execution: Execution | None = None) -> str:
    """Run the experiment and write unsupervised.csv, unsupervised.md, unsupervised.png and
    config.json to ``out``; finished fits are recorded in ``out/trials`` for resumption."""
    make_families(config)  # fails early on missing data
    folder = prepare_output(out)
    frame = run(config, execution, folder)
    return write_outputs(folder, "unsupervised", frame, markdown(summary(frame), frame, config),
                         config, plot)
