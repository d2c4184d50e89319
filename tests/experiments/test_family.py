"""``iglearn reproduce family`` on a tiny budget: the table, the tidy CSV, and verdicts and
paragraphs that agree with the measured numbers."""

import re

import numpy as np
import pandas as pd
import pytest

from iglearn.cli import main
from iglearn.experiments.family import ASSUMPTIONS, FAILS, TITLES, WORKS, verdict
from iglearn.experiments.results import KEY_COLUMNS
from tests.experiments.conftest import reproduce

TINY = ["--trials", "2", "--samples", "200", "--personalised-samples", "1000",
        "--family", "2021,personalised", "--methods", "IGL,IGL-P,CB"]
CHANCE = {"2021": 0.1, "personalised": 0.0}  # 10 digits; uniform topics: +1 and -1 as often
MEASURE = {"2021": "accuracy", "personalised": "reward"}


@pytest.fixture(scope="module")
def family_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("family") / "run"
    return out, reproduce("family", *TINY, "--out", out, "--quiet", "--jobs", "1")


def scores(frame: pd.DataFrame, family: str, method: str) -> np.ndarray:
    rows = frame[(frame["family"] == family) & (frame["method"] == method)
                 & (frame["metric"] == MEASURE[family])]
    return rows.sort_values("trial")["value"].to_numpy()


def expected_words(values: np.ndarray, chance: float, cb: float) -> str:
    """The verdict recomputed from the definition, independently of the module."""
    gain = (values - chance) / (cb - chance)
    if (gain >= WORKS).all():
        return "works"
    if (gain <= FAILS).all():
        return "fails"
    if ((gain >= WORKS) | (gain <= FAILS)).all():
        return "unstable"
    return "partly"


def test_writes_the_tidy_csv_and_the_table(family_run):
    out, printed = family_run
    for name in ("family.csv", "family.md", "config.json"):
        assert (out / name).stat().st_size > 0
    assert (out / "family.md").read_text() == printed.split("wrote ")[0].rstrip("\n") + "\n"
    frame = pd.read_csv(out / "family.csv")
    assert list(frame.columns) == [*KEY_COLUMNS, "family", "environment", "metric", "value"]
    assert set(frame["family"]) == {"2021", "personalised"}
    assert set(frame["environment"]) == {"digits", "personalised"}
    assert set(frame["method"]) == {"IGL", "IGL-P", "CB"}
    assert set(frame["trial"]) == {0, 1}
    assert frame.loc[frame["family"] == "2021", "step"].eq(200).all()
    assert frame.loc[frame["family"] == "personalised", "step"].eq(1000).all()
    assert set(frame.loc[frame["family"] == "personalised", "metric"]) == {
        "accuracy", "reward", "negative", "seconds"}
    assert set(frame.loc[frame["family"] == "2021", "metric"]) == {
        "accuracy", "reward", "seconds"}
    accuracy = frame[frame["metric"] == "accuracy"]["value"]
    assert accuracy.between(0, 1).all()
    # on a classification task the expected reward is the accuracy
    digits = frame[frame["family"] == "2021"]
    assert np.allclose(digits[digits["metric"] == "accuracy"]["value"].to_numpy(),
                       digits[digits["metric"] == "reward"]["value"].to_numpy())
    assert len(scores(frame, "2021", "CB")) == 2
    assert scores(frame, "personalised", "CB").min() > 0.5  # chance is 0


def test_cells_and_paragraphs_agree_with_the_numbers(family_run):
    out, _ = family_run
    frame = pd.read_csv(out / "family.csv")
    text = (out / "family.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines()
            if line.startswith("| ")}
    header = rows["method"].split(" | ")
    assert "accuracy (%)" in header[1] and "expected true reward" in header[2]
    sections = dict(re.findall(r"^## (.+)\n\n(.+)$", text, flags=re.MULTILINE))
    for column, family in enumerate(("2021", "personalised"), start=1):
        cb = scores(frame, family, "CB").mean()
        paragraph = sections[TITLES[family]]
        assert "Measured:" in paragraph
        for method in ("IGL", "IGL-P", "CB"):
            values = scores(frame, family, method)
            cell = rows[method].strip("| ").split(" | ")[column]
            shown = (f"{100 * values.mean():.1f} %" if family == "2021"
                     else f"{values.mean():+.3f}")
            assert cell.startswith(shown.removesuffix(" %") + " ± ")
            assert f"{method}: {shown} (worst trial" in paragraph
            words = expected_words(values, CHANCE[family], cb)
            assert cell.endswith(f"({words})")
            if method != "CB":
                assert re.search(rf"(?<![-\w]){re.escape(method)}: [^()]*\([^()]*\), {words}",
                                 paragraph)
                assert ASSUMPTIONS[family, method] in paragraph
    assert "+0.000" in rows["chance (uniform play)"] and "10.0" in rows["chance (uniform play)"]


def test_verdict_words_follow_the_thresholds():
    cb = 0.9  # chance 0.1: the gap is 0.8
    assert verdict(np.array([0.85, 0.9]), 0.1, cb).words == "works"
    assert verdict(np.array([0.1, 0.2]), 0.1, cb).words == "fails"
    unstable = verdict(np.array([0.9, 0.1, 0.88]), 0.1, cb)
    assert unstable.words == "unstable: works in 2, fails in 1 of 3 trials"
    assert (unstable.works, unstable.fails, unstable.worst) == (2, 1, 0.1)
    assert verdict(np.array([0.5, 0.5]), 0.1, cb).words.startswith("partly: 50 %")
    assert verdict(np.array([0.5]), 0.1, 0.1).words == "no reference (CB not above chance)"
    assert verdict(np.array([0.5]), 0.1, None).words == ("no reference (CB not run: add CB "
                                                         "to --methods)")


def test_refuses_a_family_given_twice(tmp_path, capsys):
    assert main(["reproduce", "family", "--family", "2021,2021", "--out",
                 str(tmp_path / "x")]) == 2
    assert "--families lists a value twice" in capsys.readouterr().err


def test_refuses_personalised_samples_without_the_personalised_family(tmp_path, capsys):
    """--personalised-samples without the personalised family was dropped without a word."""
    assert main(["reproduce", "family", "--families", "2021", "--methods", "CB", "--trials",
                 "1", "--samples", "300", "--personalised-samples", "500", "--jobs", "1",
                 "--quiet", "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip() == (
        "iglearn: error: --personalised-samples 500 is read by the personalised family only, "
        "which --families leaves out; drop --personalised-samples, or add personalised to "
        "--families")
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_the_noisy_family_and_vi_igl_have_their_column_and_row(tmp_path):
    from iglearn.experiments.configs import FAMILIES, METHODS

    for family in FAMILIES:
        for method in METHODS:
            if method not in ("CB", "SUP"):
                assert (family, method) in ASSUMPTIONS
    out = tmp_path / "noisy"
    reproduce("family", "--trials", "1", "--samples", "1500", "--family", "2021,noisy",
              "--methods", "VI-IGL,CB", "--out", out, "--quiet", "--jobs", "1")
    frame = pd.read_csv(out / "family.csv")
    assert set(frame["environment"]) == {"digits", "noisy-independent-digits"}
    text = (out / "family.md").read_text()
    assert "noisy (noisy-independent-digits), accuracy (%)" in text
    assert text.count("| VI-IGL | ") == 1 and ASSUMPTIONS["noisy", "VI-IGL"] in text
    accuracy = frame[(frame["family"] == "noisy") & (frame["method"] == "VI-IGL")
                     & (frame["metric"] == "accuracy")]["value"]
    assert accuracy.min() > 0.6   # chance is 0.1
