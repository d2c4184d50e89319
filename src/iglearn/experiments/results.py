"""Tidy results on disk: atomic writes, a config record, mean +/- std summaries."""

from __future__ import annotations

import json
import platform
import tempfile
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from pathlib import Path

import pandas as pd

import iglearn
from iglearn.errors import IGLearnError
from iglearn.files import write_atomic, write_text  # noqa: F401 (re-exported)


def prepare_output(folder: str | Path) -> Path:
    """Create ``folder`` if needed and check it is writable, before any long work starts."""
    folder = Path(folder)
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
        "config": asdict(config) if is_dataclass(config) else dict(config),
        "iglearn": iglearn.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    write_text(path, json.dumps(record, indent=2, default=str) + "\n")


def write_outputs(folder: Path, name: str, frame: pd.DataFrame, text: str, config: object,
                  plot: Callable[[pd.DataFrame, Path], None] | None = None) -> str:
    """An experiment's files in ``folder``: NAME.csv (the tidy table), NAME.md (``text``),
    NAME.png (``plot(frame, path)``, when given) and config.json; returns ``text``."""
    write_atomic(folder / f"{name}.csv", lambda tmp: frame.to_csv(tmp, index=False))
    write_text(folder / f"{name}.md", text)
    if plot is not None:
        plot(frame, folder / f"{name}.png")
    write_config(folder / "config.json", config)
    return text


def mean_std(frame: pd.DataFrame, by: list[str], value: str) -> pd.DataFrame:
    """Mean, standard deviation (ddof=1, as papers report), min and count of ``value``."""
    grouped = frame.groupby(by, sort=False)[value]
    return grouped.agg(mean="mean", std="std", min="min", n="count").reset_index()


def markdown_table(frame: pd.DataFrame, digits: int = 2) -> str:
    """A DataFrame as a Markdown table (numbers rounded to ``digits``)."""
    def cell(value: object) -> str:
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)

    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([header, rule, *rows])


def format_std(value: float, digits: int = 2) -> str:
    """A standard deviation for a table: 'n/a' when undefined (a single trial)."""
    return "n/a" if pd.isna(value) else f"{value:.{digits}f}"
