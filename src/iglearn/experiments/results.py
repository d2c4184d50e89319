"""Results on disk: the one tidy schema of every experiment, a config record, summaries.

Every experiment writes its results as one long table with the columns

    experiment, method, trial, seed, step, <settings>, metric, value

one row per measured ``metric`` of one ``method`` in one ``trial`` (with its integer
``seed``) at ``step``: the interactions played so far in online experiments, the logged
samples in batch ones. ``<settings>`` are the columns an experiment varies within one run
(the swept settings of a sweep, the family and environment of Section 6, the round of
Figure 3's checkpoints); they sit between ``step`` and ``metric``. Accuracies and rewards
are fractions in [0, 1]; tables for people may show percent and then say so.
"""

from __future__ import annotations

import platform
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, cast

import pandas as pd

import iglearn
from iglearn.data import safejson
from iglearn.errors import IGLearnError
from iglearn.files import write_atomic, write_text
from iglearn.learners import AIIGL, VIIGL, BatchIGL, IdentifiabilityWarning
from iglearn.learners.base import PolicyLearner

KEY_COLUMNS = ("experiment", "method", "trial", "seed", "step")
"""What identifies a measurement, in every experiment."""
RESULT_COLUMNS = (*KEY_COLUMNS, "metric", "value")
"""The columns of every experiment's CSV, with its settings between ``step`` and ``metric``."""
FLOAT_FORMAT = "%.10g"
"""How values are written: ten significant digits, so no float noise reaches a file."""
SCHEMA = "tidy-1"
"""The version of the row schema, recorded with every run's trials."""


def tidy_rows(experiment: str, method: str, trial: int, seed: int, step: int,
              metrics: Mapping[str, float | bool | None],
              settings: Mapping[str, object] | None = None) -> list[dict]:
    """One row per metric of one measurement, in the schema of :data:`RESULT_COLUMNS`;
    ``settings`` are the measurement's varying settings. Metrics whose value is None are
    left out (not measured)."""
    key = {"experiment": experiment, "method": method, "trial": int(trial), "seed": int(seed),
           "step": int(step), **(settings or {})}
    return [{**key, "metric": name, "value": float(value)}
            for name, value in metrics.items() if value is not None]


def fit_measures(learner: PolicyLearner) -> dict[str, float | None]:
    """A fitted learner's seconds and what its fit reports about itself: for ``BatchIGL`` its
    indicator, restarts and whether the corrector flipped; for ``AIIGL`` its indicator and
    restarts; for ``VIIGL`` its two information bounds and whether it flipped."""
    if isinstance(learner, BatchIGL):
        report = learner.report_
        return {"seconds": report.seconds, "indicator": report.indicator,
                "restarts": report.restarts, "flipped": report.flipped}
    if isinstance(learner, AIIGL):
        ai_report = learner.report_
        return {"seconds": ai_report.seconds, "indicator": ai_report.indicator,
                "restarts": ai_report.restarts}
    if isinstance(learner, VIIGL):
        vi_report = learner.report_
        return {"seconds": vi_report.seconds, "conditional_bound": vi_report.conditional_bound,
                "marginal_bound": vi_report.marginal_bound, "flipped": vi_report.flipped}
    return {"seconds": learner.seconds_}


def tidy_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows of :func:`tidy_rows` as a DataFrame with the schema's column order."""
    frame = pd.DataFrame(rows)
    missing = [c for c in RESULT_COLUMNS if c not in frame.columns]
    if missing:
        raise IGLearnError(f"result rows lack the columns {missing}; build them with "
                           f"iglearn.experiments.results.tidy_rows")
    settings = [c for c in frame.columns if c not in RESULT_COLUMNS]
    return frame[[*KEY_COLUMNS, *settings, "metric", "value"]]


def metric(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows of one metric."""
    return frame[frame["metric"] == name]


def wide(frame: pd.DataFrame, metrics: list[str] | None = None) -> pd.DataFrame:
    """One row per measurement and one column per metric (``metrics``: those only), in the
    order the measurements first appear."""
    if metrics is not None:
        frame = frame[frame["metric"].isin(metrics)]
    keys = [c for c in frame.columns if c not in ("metric", "value")]
    table = frame.pivot_table(index=keys, columns="metric", values="value", sort=False,
                              dropna=False)
    table.columns.name = None
    return table.reset_index()


def mean_std(frame: pd.DataFrame, by: list[str], name: str) -> pd.DataFrame:
    """Mean, standard deviation (ddof=1, as papers report), min and count of metric ``name``
    per group of ``by``."""
    grouped = metric(frame, name).groupby(by, sort=False)["value"]
    return grouped.agg(mean="mean", std="std", min="min", n="count").reset_index()


def fit_scored(cls: Any, seeds: Sequence[Any], logs: Sequence[Any], test_x: Any,
               test_y: Any) -> list[dict[str, float | None]]:
    """Fit the learner class ``cls`` (a stackable learner whose settings include ``seed``) on
    each log with its seed, side by side (``fit_many``; identifiability warnings, expected
    where the feedback breaks the 2021 assumption, silenced), and score each fit: its test
    accuracy and :func:`fit_measures`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        fitted = cls.fit_many([cls(seed=seed) for seed in seeds], logs)
    return [{"accuracy": learner.accuracy(test_x, test_y), **fit_measures(learner)}
            for learner in fitted]


def accuracy_summary(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Accuracy (a fraction) per group of ``keys``: mean, std (ddof=1), min and trials, and
    the mean seconds per fit."""
    accuracy = metric(frame, "accuracy").groupby(keys, sort=False, dropna=False)["value"]
    table = accuracy.agg(mean="mean", std="std", min="min", n="count")
    seconds = metric(frame, "seconds").groupby(keys, sort=False, dropna=False)["value"].mean()
    table["seconds_per_fit"] = seconds
    return table.reset_index()


def trials_text(n: int) -> str:
    """"1 trial", "16 trials": a count of trials for a report."""
    return f"{n} trial{'s' if n != 1 else ''}"


def std_note(trials: int) -> str:
    """The sentence that says what a table's ± is."""
    return f"± is the standard deviation over {trials_text(trials)} (ddof=1; n/a for one trial)."


def prepare_output(folder: str | Path) -> Path:
    """Create ``folder`` if needed and check it is writable, before any long work starts."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise IGLearnError(f"--out {folder}: is a file, not a folder; choose a new name for "
                           f"--out")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise IGLearnError(f"--out {folder}: cannot write there ({e.strerror}); "
                           f"choose a writable folder") from e
    return folder


def write_config(path: Path, config: object) -> None:
    """The exact configuration and the environment it ran in, as JSON."""
    record = {
        "config": (asdict(config) if is_dataclass(config) and not isinstance(config, type)
                   else dict(cast(Mapping[str, object], config))),
        "iglearn": iglearn.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    write_text(path, safejson.dumps(record, indent=2) + "\n")


def save_figure(fig: Any, path: str | Path, dpi: int = 120) -> None:
    """Lay ``fig`` out tightly, write it to ``path`` as a PNG (atomically) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    write_atomic(Path(path), lambda tmp: fig.savefig(tmp, dpi=dpi, format="png"))
    plt.close(fig)


def write_outputs(folder: Path, name: str, frame: pd.DataFrame, text: str, config: object,
                  plot: Callable[[pd.DataFrame, Path], None] | None = None) -> str:
    """An experiment's files in ``folder``: NAME.csv (the tidy table), NAME.md (``text``),
    NAME.png (``plot(frame, path)``, when given) and config.json; returns ``text``."""
    write_atomic(folder / f"{name}.csv",
                 lambda tmp: frame.to_csv(tmp, index=False, float_format=FLOAT_FORMAT))
    write_text(folder / f"{name}.md", text)
    if plot is not None:
        plot(frame, folder / f"{name}.png")
    write_config(folder / "config.json", config)
    return text


def markdown_table(frame: pd.DataFrame, digits: int = 2, exact: tuple[str, ...] = ()) -> str:
    """A DataFrame as a Markdown table: numbers rounded to ``digits`` decimals, except in the
    columns ``exact`` (settings such as a learning rate), shown as given; NaN as 'n/a'."""
    def cell(column: str, value: object) -> str:
        if isinstance(value, float) and pd.isna(value):
            return "n/a"
        if isinstance(value, float) and column not in exact:
            return f"{value:.{digits}f}"
        return str(value)

    columns = list(map(str, frame.columns))
    header = "| " + " | ".join(columns) + " |"
    rule = "|" + "---|" * len(columns)
    rows = ["| " + " | ".join(cell(c, v) for c, v in zip(columns, row, strict=True)) + " |"
            for row in frame.itertuples(False)]
    return "\n".join([header, rule, *rows])


def format_std(value: float, digits: int = 2) -> str:
    """A standard deviation for a table: 'n/a' when undefined (a single trial)."""
    return "n/a" if pd.isna(value) else f"{value:.{digits}f}"


def percent(mean: float, std: float) -> str:
    """A fraction's mean ± std as percent with two decimals ('n/a' std for one trial)."""
    return f"{100 * mean:.2f} ± {format_std(100 * std)}"
