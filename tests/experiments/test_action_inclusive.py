"""``iglearn reproduce action-inclusive`` on digits and a small BCI budget."""

import json

import numpy as np
import pandas as pd
import pytest

from iglearn.cli import main
from iglearn.experiments.action_inclusive import (
    PAPER_BCI,
    PAPER_OPENML,
    ActionInclusiveConfig,
    run_stacked,
)
from iglearn.experiments.results import KEY_COLUMNS
from iglearn.seeding import spawn_seeds
from tests.experiments.conftest import reproduce

SMALL = ["--dataset", "digits", "--trials", "2", "--samples", "3000", "--bci-samples", "3000",
         "--noise", "0.01,0.2"]


@pytest.fixture(scope="module")
def ai_run(tmp_path_factory):
    """A two-trial run on action-inclusive digits and the BCI at two noise levels."""
    out = tmp_path_factory.mktemp("action_inclusive") / "run"
    return out, reproduce("action-inclusive", *SMALL, "--out", out, "--quiet", "--jobs", "1")


def accuracy(frame: pd.DataFrame, task: str, method: str, noise: float | None = None):
    rows = frame[(frame["metric"] == "accuracy") & (frame["task"] == task)
                 & (frame["method"] == method)]
    rows = rows[rows["noise"].isna()] if noise is None else rows[rows["noise"] == noise]
    return rows.sort_values("trial")["value"].to_numpy()


def test_writes_the_tidy_table_and_ai_igl_learns_where_igl_fails(ai_run):
    out, _ = ai_run
    for name in ("action_inclusive.csv", "action_inclusive.md", "action_inclusive.png",
                 "config.json"):
        assert (out / name).stat().st_size > 0
    frame = pd.read_csv(out / "action_inclusive.csv")
    assert list(frame.columns) == [*KEY_COLUMNS, "task", "noise", "metric", "value"]
    assert set(frame["task"]) == {"action-inclusive-digits", "bci"}
    assert set(frame["method"]) == {"AI-IGL", "IGL", "CB", "SUP"}
    assert frame.loc[frame["task"] == "bci", "step"].eq(3000).all()
    images = "action-inclusive-digits"
    assert len(accuracy(frame, images, "AI-IGL")) == 2
    assert accuracy(frame, images, "AI-IGL").min() > 0.7       # chance is 0.1
    assert accuracy(frame, images, "IGL").max() < 0.3
    assert accuracy(frame, "bci", "AI-IGL", 0.01).min() > 0.9   # chance is 1/3
    assert accuracy(frame, "bci", "CB", 0.01).min() > 0.9
    assert accuracy(frame, "bci", "AI-IGL", 0.2).mean() < accuracy(frame, "bci", "AI-IGL",
                                                                   0.01).mean()
    values = frame.loc[frame["metric"] == "accuracy", "value"]
    assert values.between(0, 1).all()
    assert json.loads((out / "config.json").read_text())["config"]["noise"] == [0.01, 0.2]


def test_markdown_shows_percent_and_the_papers_figures_as_its_own(ai_run):
    out, printed = ai_run
    text = (out / "action_inclusive.md").read_text()
    assert text in printed
    frame = pd.read_csv(out / "action_inclusive.csv")
    mean = 100 * accuracy(frame, "bci", "AI-IGL", 0.01).mean()
    row = next(line for line in text.splitlines() if line.startswith("| bci | 0.01 |"))
    assert f"{mean:.2f} ±" in row and f"{100 * PAPER_BCI[0.01]:.1f}" in row
    assert "about 33" in row
    assert next(line for line in text.splitlines()
                if line.startswith("| bci | 0.2 |")).endswith("| – | – |")
    assert "unverified" in text and "not the same data" in text and "standard deviation" in text
    assert f"{100 * PAPER_OPENML['AI-IGL']:.1f} %" in text


def test_a_trial_gives_the_same_rows_alone_and_stacked():
    config = ActionInclusiveConfig(dataset="digits", samples=2000, bci_samples=2000,
                                   noise=(0.05,), methods=("AI-IGL", "CB"))
    seeds = spawn_seeds(3, 2)
    together = run_stacked(config, [0, 1], seeds)
    alone = run_stacked(config, [1], seeds[1:])[0]
    for a, b in zip(alone, together[1], strict=True):
        assert {k: v for k, v in a.items() if k != "value"} == {
            k: v for k, v in b.items() if k != "value"}
        if a["metric"] == "seconds":
            continue
        # fit_many: equal up to floating-point rounding
        assert a["value"] == pytest.approx(b["value"], rel=1e-4, abs=1e-6), a
    found = {(r["method"], r["task"], r["metric"]): r["value"] for r in alone}
    assert found[("AI-IGL", "bci", "accuracy")] > 0.85
    assert np.isfinite(found[("AI-IGL", "action-inclusive-digits", "indicator")])


def test_a_noise_level_twice_is_refused_in_one_line(tmp_path, capsys):
    code = main(["reproduce", "action-inclusive", "--noise", "0.1,0.1", "--dataset", "digits",
                 "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--noise" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()
