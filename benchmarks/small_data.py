"""Small-data benchmark: every batch learner on small logs, with the features as the task gives
them, as raw measurements, and raw but standardised by hand; accuracy over many seeds and the
CPU-seconds of each fit.

    python benchmarks/small_data.py [--sizes 200,500,1000,2000,5000] [--seeds 16]
                                    [--tasks digits,action-inclusive-digits,bci,personalised]
                                    (or mnist)
                                    [--learners IGL,AI-IGL,IGL-P,CB,SUP,VI-IGL]
                                    [--features given,raw,standardised,...] [--jobs N]
                                    [--out results/small-data] [--fresh] [--quick]

Grid: task × log size × seed. Each cell logs ``size`` interactions of the task under uniform
play from its own seed and fits every learner on it once per features variant (the first three
unless ``--features`` says otherwise), with the same learner seed:

- ``given``: contexts and feedback as the task generates them (digits pixels in [0, 1], BCI
  patterns, one-hot users and tokens);
- ``raw``: both shifted and scaled as raw measurements are, x_raw = 35 + 0.05 x (voxel
  intensities around 35 with a small spread); the test contexts alike;
- ``standardised``: the raw log standardised by hand, per column, with the log's mean and
  standard deviation (a constant column is only centred), before fitting; the test contexts
  with the same statistics;
- ``raw-same-unit``: the raw log fitted with ``same_unit="both"`` (one scale for all the
  columns of each block, :mod:`iglearn.data.scaling`), as a user who knows that each block is
  measured in one unit would fit it;
- ``mixed``: raw measurements in mixed units, x_raw = 35 + 0.05 u_j x with each column j's
  unit u_j = 10^U(-2, 2) (drawn once, the same for every log of a task), as counts beside
  milliseconds are;
- ``mixed-same-unit``: the mixed log fitted with ``same_unit="both"``, which is wrong for it;
- ``dwell``: the contexts as given, the feedback replaced by measurements of the reward as an
  application logs them, dense: 4 columns of dwell times in milliseconds, 2000 + 3000 r +
  N(0, 1000²) each;
- ``clicks``: likewise, sparse: 4 columns of counts, Poisson(1 + 3 r) each (a third of the
  counts of a 0 reward are 0);
- ``clicks-on``: the clicks log fitted with ``standardise="on"`` (``"auto"`` reads counts
  of a few as they were logged);
- ``dwell-outliers``: the dwell times with a few far values, as a tab left open logs them:
  in 1 % of the rows one column (drawn per row) holds U(100, 4000) seconds instead.

Tasks (``iglearn simulate`` names): ``digits`` (the 2021 task on scikit-learn's digits, K = 10),
``action-inclusive-digits`` (the feedback shows the digit (a + 6 r - 3) mod 10),
``bci`` (the simulated BCI at noise 0.05, K = 3) and ``personalised`` (VW's IGL simulator:
one-hot users and tokens, K = 7); with ``--tasks mnist``, the 2021 task on MNIST (784 pixels,
K = 10; the MNIST files found as ``iglearn`` finds them: ``IGLEARN_DATA``, the user cache or a
verified download), where a few hundred interactions give each weight matrix far more inputs
than interactions. Learners (each with its default settings and linear models):
IGL (BatchIGL), AI-IGL (AIIGL), IGL-P (IGLP), CB (the true reward), SUP (the labels), each on
the tasks where ``iglearn reproduce family`` runs it (every learner on digits,
action-inclusive digits and personalised), and on BCI those of ``iglearn reproduce
action-inclusive`` (all but IGL-P).

Measured per fit: the greedy policy's accuracy on the task's test contexts (539 held-out
digits, 3000 BCI trials, the 4 (user, time of day) pairs of the simulator, where it is the
share on which the enjoyed topic is picked, MNIST's 10,000 test images), its expected true
reward, and the fit's CPU-seconds (``time.process_time`` around ``fit``, one torch thread)
and wall seconds; for 2021 IGL and VI-IGL also the share of the decoded reward's variance that
the logged action explains (their reports' ``action_explained``, above which they warn that
the feedback may show the action). A fit that refuses or fails with an iglearn error is
counted as failed and scored nowhere.

Writes ``OUT/small_data.csv`` (iglearn's tidy result schema: experiment, method, trial, seed,
step = the log size, task, features, metric, value), ``OUT/small_data.md`` (mean and worst
accuracy and CPU-seconds per cell, raw against standardised by hand, the action's share of the
decoded reward, the CPU-second targets)
and ``OUT/config.json``. Cells run on a process pool (``--jobs``) and finished cells are
recorded in ``OUT/trials/``: running the same command again finishes only what is missing.
A fit's CPU-seconds are surely its own only when nothing else runs beside it: fits on
neighbouring cores share their caches and memory bandwidth, which can make each cost more
(the report says how many workers fitted at once); measure the CPU-second targets with
``--jobs 1`` on an otherwise idle machine.
``--quick`` is a small grid for a smoke test (200 interactions, 2 seeds, BCI and personalised)
unless the options say otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iglearn.data.logs import InteractionLog
from iglearn.envs.base import Contexts, Environment
from iglearn.envs.named import named_environment
from iglearn.errors import IGLearnError
from iglearn.experiments import action_inclusive, family
from iglearn.experiments.results import metric, prepare_output, tidy_frame, tidy_rows, write_outputs
from iglearn.experiments.runner import Execution, fingerprint, run_trials
from iglearn.learners import IdentifiabilityWarning
from iglearn.seeding import integer_seed, spawn_seeds
from iglearn.theory import ACTION_EXPLAINED

EXPERIMENT = "small_data"
TASKS = ("digits", "action-inclusive-digits", "bci", "personalised", "mnist")
"""The tasks, by their ``iglearn simulate`` names (a task's place seeds its logs)."""
DEFAULT_TASKS = TASKS[:4]
"""The tasks run unless ``--tasks`` says otherwise: MNIST only when asked for."""
BCI_NOISE = 0.05
"""The BCI simulation's noise level."""
SIZES = (200, 500, 1000, 2000, 5000)
"""Logged interactions per fit."""
LEARNERS = family.METHODS
"""IGL (BatchIGL), AI-IGL, IGL-P, CB (true reward), SUP (labels)."""
FEATURES = ("given", "raw", "standardised", "raw-same-unit", "mixed", "mixed-same-unit",
            "dwell", "clicks", "clicks-on", "dwell-outliers")
"""The features variants: as the task gives them, raw (``SHIFT + SCALE * x``), raw standardised
by hand with the log's statistics, raw fitted with ``same_unit="both"``, raw in mixed units
(``SHIFT + SCALE * u * x``, a unit u per column), that fitted with ``same_unit="both"``, and
the task's feedback replaced by dense (:data:`DWELL`) or sparse (:data:`CLICKS`) measurements
of the reward (:func:`measured_feedback`), the latter fitted with ``standardise="on"``, and the
dense ones with a few far values (:data:`OUTLIERS`)."""
DEFAULT_FEATURES = FEATURES[:3]
"""The features variants run unless ``--features`` says otherwise."""
SETTINGS = {"raw-same-unit": {"same_unit": "both"}, "mixed-same-unit": {"same_unit": "both"},
            "clicks-on": {"standardise": "on"}}
"""The learner settings of a features variant (default settings where absent)."""
SHIFT, SCALE = 35.0, 0.05
"""Raw features: x_raw = SHIFT + SCALE * x, for contexts and feedback."""
TOLERANCE = 0.005
"""The target: raw features' mean accuracy within this (0.5 points) of the same logs
standardised by hand."""
CPU_TARGETS = {500: 0.2, 2000: 0.5}
"""The target CPU-seconds per fit of a 64-dimensional log, by log size."""
WIDE_TASKS = ("digits", "action-inclusive-digits", "bci")
"""The 64-dimensional tasks the CPU-second targets are read on."""
MEASURED_COLUMNS = 4
"""The columns of the ``dwell`` and ``clicks`` variants' feedback."""
DWELL = (2000.0, 3000.0, 1000.0)
"""The ``dwell`` variant's feedback: each column a + b r + N(0, c²) milliseconds, (a, b, c)."""
OUTLIERS = (0.01, 1e5, 4e6)
"""The ``dwell-outliers`` variant: the share of rows with one far value, and the range of that
value in milliseconds (uniform)."""
CLICKS = (1.0, 3.0)
"""The ``clicks`` variant's feedback: each column Poisson(a + b r), (a, b) (a rate below 0, of
a reward below -a / b, is 0: no clicks)."""
QUICK = {"sizes": (200,), "seeds": 2, "tasks": ("bci", "personalised")}
"""The grid of ``--quick``, where the options do not say otherwise."""


def environment(task: str, data_dir: str | None = None) -> Environment:
    """The task's environment (built once per process); ``data_dir``: the MNIST folder."""
    return named_environment(task, data_dir, BCI_NOISE)


def learners_of(task: str, data_dir: str | None = None) -> tuple[str, ...]:
    """The learners run on ``task``: those the family comparison fits there (all but those
    :func:`iglearn.experiments.family.not_run` rules out), on the BCI those of the
    action-inclusive reproduction; in :data:`LEARNERS` order."""
    env = environment(task, data_dir)
    if task == "bci":
        return tuple(m for m in LEARNERS if m in action_inclusive.METHODS)
    return tuple(m for m in LEARNERS if family.not_run(m, env) is None)


@dataclass
class SmallDataConfig:
    """Settings of the small-data benchmark."""

    sizes: tuple[int, ...] = SIZES
    """Logged interactions per fit."""
    seeds: int = 16
    """Seeds per (task, size): fresh logs and learner initialisations each."""
    tasks: tuple[str, ...] = DEFAULT_TASKS
    """Tasks, of :data:`TASKS`."""
    learners: tuple[str, ...] = LEARNERS
    """Learners, of :data:`LEARNERS` (each run only on the tasks of :func:`learners_of`)."""
    features: tuple[str, ...] = DEFAULT_FEATURES
    """Features variants, of :data:`FEATURES`."""
    seed: int = 0
    """Root seed; each seed index's sequence is spawned from it."""
    data_dir: str | None = None
    """The MNIST folder, for the task ``mnist`` (None: ``IGLEARN_DATA``, the user cache or a
    verified download)."""

    def check(self) -> None:
        """Refuse settings that cannot run."""
        for name, allowed in (("tasks", TASKS), ("learners", LEARNERS), ("features", FEATURES)):
            values = getattr(self, name)
            unknown = [v for v in values if v not in allowed]
            if unknown or not values or len(set(values)) != len(values):
                raise IGLearnError(f"--{name} {','.join(values)}: give each of "
                                   f"{', '.join(allowed)} at most once, at least one")
        if not self.sizes or min(self.sizes) < 1 or len(set(self.sizes)) != len(self.sizes):
            raise IGLearnError("--sizes: give distinct log sizes of at least 1")
        if self.seeds < 1:
            raise IGLearnError("--seeds must be at least 1")
        if not any(set(learners_of(t, self.data_dir)) & set(self.learners)
                   for t in self.tasks):
            raise IGLearnError(f"no learner of {','.join(self.learners)} runs on "
                               f"{','.join(self.tasks)}; see learners_of")

    def cells(self) -> list[tuple[str, int, int]]:
        """Every (task, size, seed index), largest logs first so workers finish together."""
        return [(task, size, s) for size in sorted(self.sizes, reverse=True)
                for task in self.tasks for s in range(self.seeds)
                if set(learners_of(task, self.data_dir)) & set(self.learners)]


def raw(values: np.ndarray) -> np.ndarray:
    """Features as raw measurements: SHIFT + SCALE * values."""
    return (SHIFT + SCALE * np.asarray(values, dtype=np.float64)).astype(np.float32)


def standardiser(values: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Per-column standardisation with the mean and standard deviation of ``values``; a
    constant column is only centred (divided by 1)."""
    data = np.asarray(values, dtype=np.float64)
    mean, std = data.mean(axis=0), data.std(axis=0)
    std = np.where(std > 0, std, 1.0)

    def apply(x: np.ndarray) -> np.ndarray:
        return ((np.asarray(x, dtype=np.float64) - mean) / std).astype(np.float32)

    return apply


UNITS_SEED = 99
"""The seed of the mixed variant's column units."""


def units(dim: int, block: int) -> np.ndarray:
    """The mixed variant's unit of each of ``dim`` columns of block ``block`` (0: contexts,
    1: feedback): 10^U(-2, 2), the same for every log of the dimension."""
    return 10.0 ** np.random.default_rng([UNITS_SEED, block, dim]).uniform(-2.0, 2.0, dim)


def measured_feedback(reward: np.ndarray, kind: str, seed: list[int]) -> np.ndarray:
    """Feedback of :data:`MEASURED_COLUMNS` columns measuring ``reward`` (n,), of ``kind``
    "dwell" (:data:`DWELL`), "dwell-outliers" (the same dwell times, then
    :data:`OUTLIERS`) or "clicks" (:data:`CLICKS`), drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    r = np.asarray(reward, np.float64)[:, None]
    shape = (len(r), MEASURED_COLUMNS)
    if kind in ("dwell", "dwell-outliers"):
        a, b, c = DWELL
        dwell = a + b * r + rng.normal(0.0, c, shape)
        if kind == "dwell-outliers":
            share, low, high = OUTLIERS
            rows = np.flatnonzero(rng.random(len(r)) < share)
            dwell[rows, rng.integers(0, MEASURED_COLUMNS, len(rows))] = rng.uniform(
                low, high, len(rows))
        return dwell.astype(np.float32)
    a, b = CLICKS
    return rng.poisson(np.maximum(a + b * r, 0.0), shape).astype(np.float32)


def logged(features: str) -> str:
    """The features variant whose log ``features`` fits (the same log, another setting)."""
    return features.removesuffix("-same-unit").removesuffix("-on")


def variant(log: InteractionLog, features: str, seed: list[int] | None = None
            ) -> tuple[InteractionLog, Callable[[np.ndarray], np.ndarray]]:
    """The log in features variant ``features`` and the map it applies to contexts (for the
    test contexts); ``seed`` draws the measured feedback of "dwell", "clicks" and
    "dwell-outliers"."""
    features = logged(features)
    if features == "given":
        return log, lambda x: x
    if features in ("dwell", "clicks", "dwell-outliers"):
        if log.reward is None:
            raise IGLearnError(f"--features {features} replaces the feedback by measurements "
                               "of the reward: the log has none")
        feedback = measured_feedback(log.reward, features, [0] if seed is None else seed)
        return dataclasses.replace(log, feedback=feedback), lambda x: x
    if features == "mixed":
        in_context, in_feedback = units(log.context_dim, 0), units(log.feedback_dim, 1)
        mixed = lambda x: raw(np.asarray(x) * in_context)  # noqa: E731
        return dataclasses.replace(log, context=mixed(log.context),
                                   feedback=raw(log.feedback * in_feedback)), mixed
    context, feedback = raw(log.context), raw(log.feedback)
    to_context: Callable[[np.ndarray], np.ndarray] = raw
    if features == "standardised":
        by_context, by_feedback = standardiser(context), standardiser(feedback)
        context, feedback = by_context(context), by_feedback(feedback)
        to_context = lambda x: by_context(raw(x))  # noqa: E731
    return dataclasses.replace(log, context=context, feedback=feedback), to_context


def scores(learner: family.Learner, env: Environment,
           to_context: Callable[[np.ndarray], np.ndarray]) -> dict[str, float]:
    """The greedy policy on the task's test contexts (seen through ``to_context``): its
    accuracy and expected true reward."""
    test_x, test_y = env.test_set()
    action = learner.predict(to_context(test_x))
    reward = env.reward(Contexts(test_x, test_y), action)
    return {"accuracy": float(np.mean(action == test_y)), "reward": float(np.mean(reward))}


def fit_once(method: str, log: InteractionLog, seed: list[int], quiet: bool = False,
             settings: dict | None = None) -> tuple[family.Learner | None, float, float]:
    """Fit ``method`` (with ``settings``, default ones where absent) on ``log``: the learner
    (None when the fit fails with an iglearn error, said on stderr unless ``quiet``), the
    fit's CPU-seconds and wall seconds."""
    learner = family.make_learner(method, np.random.default_rng(seed), **(settings or {}))
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        with warnings.catch_warnings():  # 2021 IGL's identifiability warnings are expected
            warnings.simplefilter("ignore", IdentifiabilityWarning)
            learner.fit(log)
    except IGLearnError as e:
        if not quiet:
            print(f"small_data: {method} on {log.source} ({len(log)} interactions) failed: "
                  f"{e}", file=sys.stderr)
        return None, time.process_time() - cpu, time.perf_counter() - wall
    return learner, time.process_time() - cpu, time.perf_counter() - wall


_WARM: set[str] = set()
"""The learners fitted once (untimed) in this process: the first fit of each pays for torch's
lazy start-up, which is no part of a fit's cost."""


def warm_up(method: str, log: InteractionLog) -> None:
    """Fit ``method`` on ``log`` once, untimed, the first time this process meets it."""
    if method not in _WARM:
        _WARM.add(method)
        fit_once(method, log, [0], quiet=True)


def run_cell(config: SmallDataConfig, index: int, seed: np.random.SeedSequence) -> list[dict]:
    """Cell ``index`` of :meth:`SmallDataConfig.cells`: one log, every learner and features
    variant; the tidy rows. The log depends on the seed index, task and size only, and each
    learner's seed on those and the learner, so leaving anything out changes no other
    result, and every features variant of a learner starts from the same seed."""
    task, size, s = config.cells()[index]
    seed_int = integer_seed(seed)
    t = TASKS.index(task)
    env = environment(task, config.data_dir)
    log = env.log(size, np.random.default_rng([seed_int, t, size]))
    log = dataclasses.replace(log, source=task)
    rows: list[dict] = []
    for features in config.features:
        fitted, to_context = variant(log, features,
                                     [seed_int, t, size, FEATURES.index(logged(features))])
        for method in learners_of(task, config.data_dir):
            if method not in config.learners:
                continue
            warm_up(method, fitted)
            learner, cpu, wall = fit_once(method, fitted,
                                          [seed_int, t, size, 1 + LEARNERS.index(method)],
                                          settings=SETTINGS.get(features))
            found: dict[str, float | None] = {"cpu_seconds": cpu, "seconds": wall,
                                              "failed": float(learner is None)}
            if learner is not None:
                found.update(scores(learner, env, to_context))
                explained = getattr(getattr(learner, "report_", None), "action_explained", None)
                if explained is not None:  # 2021 IGL and VI-IGL: the action's share of psi
                    found["action_explained"] = explained
            rows += tidy_rows(EXPERIMENT, method, s, seed_int, size, found,
                              {"task": task, "features": features})
    return rows


def run(config: SmallDataConfig, execution: Execution, folder: Path | None = None
        ) -> pd.DataFrame:
    """Every cell (recorded in ``folder`` when given); the tidy table."""
    config.check()
    cells = config.cells()
    by_index = spawn_seeds(config.seed, config.seeds)
    rows = run_trials(partial(run_cell, config), len(cells), config.seed, execution, folder,
                      fingerprint(config), "small-data cells",
                      seeds=[by_index[s] for _, _, s in cells])
    return tidy_frame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (task, learner, features, size): mean and worst accuracy, fits, failed fits, mean
    and max CPU-seconds per fit."""
    keys = ["task", "method", "features", "step"]
    accuracy = metric(frame, "accuracy").groupby(keys, sort=False)["value"].agg(
        mean="mean", worst="min")
    fits = metric(frame, "failed").groupby(keys, sort=False)["value"].agg(
        fits="count", failed="sum")
    cpu = metric(frame, "cpu_seconds").groupby(keys, sort=False)["value"].agg(
        cpu="mean", cpu_max="max")
    return fits.join(accuracy).join(cpu).reset_index()


def _rows(table: pd.DataFrame, config: SmallDataConfig) -> list[tuple[str, str]]:
    return [(task, m) for task in config.tasks for m in learners_of(task, config.data_dir)
            if m in config.learners and ((table["task"] == task) & (table["method"] == m)).any()]


def _accuracy_cell(row: pd.Series) -> str:
    failed = f", {int(row['failed'])} failed" if row["failed"] else ""
    if pd.isna(row["mean"]):
        return f"all {int(row['fits'])} failed · {row['cpu']:.2f} s"
    return f"{100 * row['mean']:.1f} / {100 * row['worst']:.1f}{failed} · {row['cpu']:.2f} s"


def _explained_lines(frame: pd.DataFrame, config: SmallDataConfig, sizes: list[int]
                     ) -> list[str]:
    """The table of the share of the decoded reward's variance that the logged action
    explains (the fits that measure it: 2021 IGL and VI-IGL), every features variant
    together; none without such fits."""
    explained = metric(frame, "action_explained")
    if not len(explained):
        return []
    keys = ["task", "method", "step"]
    table = explained.groupby(keys, sort=False)["value"].agg(
        low="min", high="max", warned=lambda v: int((v > ACTION_EXPLAINED).sum()),
        fits="count")
    lines = ["", "## The decoded reward explained by the logged action", "",
             f"Least and largest share of the decoded reward's variance that the logged action "
             f"explains, over every seed and features variant, and the fits warned (above "
             f"{ACTION_EXPLAINED:g}).", "",
             "| task | learner | " + " | ".join(f"{n}" for n in sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    for task in config.tasks:
        for m in learners_of(task, config.data_dir):
            cells = [f"{row.low:.2f}–{row.high:.2f}, {int(row.warned)} of {int(row.fits)}"
                     if (row := _row(table, (task, m, n))) is not None else "–" for n in sizes]
            if any(c != "–" for c in cells):
                lines.append(f"| {task} | {m} | " + " | ".join(cells) + " |")
    return lines


def _row(table: pd.DataFrame, key: tuple) -> Any:
    """The row of ``table`` at ``key``, or None."""
    return table.loc[key] if key in table.index else None


def markdown(frame: pd.DataFrame, config: SmallDataConfig, wall: float | None = None,
             workers: int | None = None) -> str:
    """The report: one table per features variant, raw against standardised by hand, the
    share of the decoded reward the logged action explains, and the CPU-seconds against the
    targets; ``wall`` and ``workers``, where given, are this run's wall seconds and worker
    processes."""
    table = summary(frame)
    cell = {(r.task, r.method, r.features, r.step): r for r in
            (row for _, row in table.iterrows())}
    sizes = sorted(config.sizes)
    pairs = _rows(table, config)
    header = "| task | learner | " + " | ".join(f"{n}" for n in sizes) + " |"
    rule = "|---|---|" + "---|" * len(sizes)
    total = metric(frame, "cpu_seconds")["value"]
    lines = [
        "# Small logs: accuracy and CPU-seconds per fit",
        "",
        f"Every learner with its default settings and linear models on uniform logs of "
        f"{', '.join(map(str, sizes))} interactions, {config.seeds} seeds per task and size "
        f"(a fresh log and initialisation each); the greedy policy scored on the task's test "
        f"contexts. Cells: mean / worst accuracy (%) over the seeds · mean CPU-seconds per fit "
        f"(one torch thread, `time.process_time` around `fit`). BCI at noise {BCI_NOISE}; "
        f"personalised: VW's IGL simulator, accuracy = share of its 4 (user, time of day) "
        f"contexts on which the enjoyed topic is picked.",
        "",
        "Learners per task (as `iglearn reproduce family` runs them; BCI as `iglearn "
        "reproduce action-inclusive`): " + "; ".join(
            f"{task}: "
            f"{', '.join(m for m in learners_of(task, config.data_dir) if m in config.learners)}"
            for task in config.tasks) + ".",
        "",
        f"{len(total)} fits, {total.sum():.0f} CPU-seconds of fitting in all"
        + (f", {wall:.0f} s wall in this run" if wall is not None else "")
        + (f", {workers} worker process{'es' if workers > 1 else ''} fitting at once"
           if workers is not None else "") + ".",
    ]
    if workers is not None and workers > 1:
        lines.append("Fits side by side share the cores' caches and memory bandwidth, which "
                     "can raise each one's CPU-seconds: read the CPU-seconds against the "
                     "targets from a run with `--jobs 1` on an otherwise idle machine.")
    (dwell_a, dwell_b, dwell_c), (clicks_a, clicks_b) = DWELL, CLICKS
    titles = {"given": "Features as the task gives them",
              "raw": f"Raw features: x_raw = {SHIFT:g} + {SCALE:g} x (contexts and feedback)",
              "standardised": "Raw features standardised by hand (per column, the log's mean "
                              "and standard deviation)",
              "raw-same-unit": "Raw features fitted with same_unit=\"both\" (one scale for "
                               "each block's columns)",
              "mixed": f"Raw features in mixed units: x_raw = {SHIFT:g} + {SCALE:g} u x, a unit "
                       f"u = 10^U(-2, 2) per column",
              "mixed-same-unit": "Raw features in mixed units fitted with same_unit=\"both\" "
                                 "(wrongly)",
              "dwell": f"Feedback of dwell times: {MEASURED_COLUMNS} columns of {dwell_a:g} + "
                       f"{dwell_b:g} r + N(0, {dwell_c:g}²) ms (dense), contexts as given",
              "clicks": f"Feedback of counts: {MEASURED_COLUMNS} columns of Poisson("
                        f"{clicks_a:g} + {clicks_b:g} r) (sparse), contexts as given",
              "clicks-on": "Feedback of counts fitted with standardise=\"on\"",
              "dwell-outliers": f"Feedback of dwell times with far values: in "
                                f"{OUTLIERS[0]:.0%} of the rows one column U({OUTLIERS[1]:g}, "
                                f"{OUTLIERS[2]:g}) ms"}
    for features in config.features:
        lines += ["", f"## {titles[features]}", "", header, rule]
        for task, m in pairs:
            cells = [_accuracy_cell(cell[task, m, features, n]) if (task, m, features, n) in cell
                     else "–" for n in sizes]
            lines.append(f"| {task} | {m} | " + " | ".join(cells) + " |")
    if {"raw", "standardised"} <= set(config.features):
        lines += ["", "## Raw against standardised by hand", "",
                  f"Mean accuracy of raw features minus that of the same logs standardised by "
                  f"hand, in points (target: within {100 * TOLERANCE:g}; ✗ marks a miss).", "",
                  header, rule]
        within = checked = 0
        for task, m in pairs:
            cells = []
            for n in sizes:
                a, b = cell.get((task, m, "raw", n)), cell.get((task, m, "standardised", n))
                if a is None or b is None or pd.isna(a["mean"]) or pd.isna(b["mean"]):
                    cells.append("–")
                    continue
                gap = float(a["mean"] - b["mean"])
                ok = abs(gap) <= TOLERANCE + 1e-12
                within, checked = within + ok, checked + 1
                cells.append(f"{100 * gap:+.1f}" + ("" if ok else " ✗"))
            lines.append(f"| {task} | {m} | " + " | ".join(cells) + " |")
        lines += ["", f"{within} of {checked} (task, learner, size) within "
                      f"{100 * TOLERANCE:g} points."]
    lines += _explained_lines(frame, config, sizes)
    targets = [n for n in sorted(CPU_TARGETS) if n in sizes]
    wide = [t for t in config.tasks if t in WIDE_TASKS]
    if targets and wide:
        lines += ["", "## CPU-seconds per fit on the 64-dimensional tasks", "",
                  f"The largest mean (over seeds) CPU-seconds per fit of each learner on "
                  f"{', '.join(wide)}, every features variant; targets: "
                  + ", ".join(f"≤ {CPU_TARGETS[n]:g} s at {n}" for n in targets) + ".", "",
                  "| learner | " + " | ".join(f"{n}" for n in targets) + " |",
                  "|---|" + "---|" * len(targets)]
        for m in config.learners:
            cells = []
            for n in targets:
                rows = table[(table["method"] == m) & (table["step"] == n)
                             & table["task"].isin(wide)]
                if not len(rows):
                    cells.append("–")
                    continue
                worst = float(rows["cpu"].max())
                cells.append(f"{worst:.2f}" + ("" if worst <= CPU_TARGETS[n] else " ✗"))
            if any(c != "–" for c in cells):
                lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def parse(argv: list[str] | None = None) -> tuple[SmallDataConfig, Execution, Path]:
    """The configuration, execution and output folder from the command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])

    def words(text: str) -> tuple[str, ...]:
        return tuple(w for w in text.split(",") if w)

    def numbers(text: str) -> tuple[int, ...]:
        try:
            return tuple(int(w) for w in words(text))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r}: give comma-separated integers") from None

    parser.add_argument("--sizes", type=numbers, help="log sizes, comma-separated "
                        f"(default {','.join(map(str, SIZES))})")
    parser.add_argument("--seeds", type=int, help="seeds per task and size (default 16)")
    parser.add_argument("--tasks", type=words, help=f"comma-separated, of {','.join(TASKS)} "
                        f"(default {','.join(DEFAULT_TASKS)})")
    parser.add_argument("--learners", type=words,
                        help=f"comma-separated, of {','.join(LEARNERS)}")
    parser.add_argument("--features", type=words,
                        help=f"comma-separated, of {','.join(FEATURES)}")
    parser.add_argument("--seed", type=int, default=0, help="root seed")
    parser.add_argument("--data-dir", help="the MNIST folder, for the task mnist (default: "
                        "IGLEARN_DATA, the user cache or a verified download)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="worker processes (default: every core; 1 runs in this process)")
    parser.add_argument("--out", default="results/small-data", help="output folder")
    parser.add_argument("--fresh", action="store_true",
                        help="forget the cells an earlier run recorded in OUT/trials")
    parser.add_argument("--quick", action="store_true", help="a small grid for a smoke test: "
                        + ", ".join(f"{k} {v}" for k, v in QUICK.items()))
    args = parser.parse_args(argv)
    given = {name: getattr(args, name) for name in ("sizes", "seeds", "tasks", "learners",
                                                    "features")
             if getattr(args, name) is not None}
    config = SmallDataConfig(**{**(QUICK if args.quick else {}), **given}, seed=args.seed,
                             data_dir=args.data_dir)
    return config, Execution(jobs=args.jobs, fresh=args.fresh), Path(args.out)


def main(argv: list[str] | None = None) -> int:
    try:
        config, execution, out = parse(argv)
        config.check()
        folder = prepare_output(out)
        cells = config.cells()
        fits = sum(len(set(learners_of(task, config.data_dir)) & set(config.learners))
                   * len(config.features)
                   for task, _, _ in cells)
        print(f"small_data: {len(cells)} cells, {fits} fits, on {execution.workers()} "
              f"worker(s); writing {folder}", flush=True)
        start = time.perf_counter()
        frame = run(config, execution, folder)
        wall = time.perf_counter() - start
    except IGLearnError as e:
        print(f"small_data: error: {e}", file=sys.stderr)
        return 2
    text = markdown(frame, config, wall, execution.workers())
    write_outputs(folder, EXPERIMENT, frame, text, config)
    print(text)
    print(f"small_data: wrote {folder / 'small_data.csv'} and {folder / 'small_data.md'} "
          f"({wall:.1f} s wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
