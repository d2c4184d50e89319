"""Figure 3 end to end on digits with a tiny budget."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from iglearn.cli import main
from iglearn.errors import IGLearnError
from iglearn.experiments.figure3 import Figure3Config, run_trial, value_bound
from iglearn.experiments.results import RESULT_COLUMNS
from iglearn.experiments.runner import one_thread

TINY = ["--jobs", "1", "--dataset", "digits", "--trials", "2", "--rounds", "1200",
        "--warmup", "1000", "--iota", "10", "--eval-every", "200", "--quiet"]


def test_cli_figure3_writes_tidy_results(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["reproduce", "figure3", *TINY, "--out", str(out)]) == 0
    frame = pd.read_csv(out / "figure3.csv")
    assert list(frame.columns) == [*RESULT_COLUMNS[:5], "round", *RESULT_COLUMNS[5:]]
    assert set(frame["experiment"]) == {"figure3"}
    assert set(frame["method"]) == {"E2G", "CB", "Uniform"} and frame["seed"].nunique() == 2
    reward = frame[frame["metric"] == "average_reward"]
    last = reward.sort_values("step").groupby(["method", "trial"])["value"].last()
    assert (last["CB"] > 2 * last["Uniform"]).all()  # uniform play earns about 0.1
    accuracy = frame[frame["metric"] == "accuracy"]
    assert set(accuracy["method"]) == {"E2G", "CB"}
    assert accuracy["value"].between(0, 1).all() and accuracy["value"].max() > 0.5
    assert accuracy["round"].min() == 1000  # no greedy policy before the warm-up ends
    # Algorithm 1 with 1000 warm-up rounds: round i > 1000 adds 1 + floor(sqrt(i / 100)).
    e2g = frame[(frame["method"] == "E2G") & (frame["metric"] == "average_reward")]
    expected = 1200 + sum(int(np.sqrt(i / 100)) for i in range(1001, 1200))
    assert e2g["step"].max() == expected
    # no float noise: at most ten significant digits (a timing below 0.01 s has leading zeros)
    digits = [len((m.group(1) + m.group(2)).lstrip("0")) for m in
              re.finditer(r"(\d+)\.(\d+)", (out / "figure3.csv").read_text())]
    assert max(digits) <= 10
    text = (out / "figure3.md").read_text()
    assert "| E2G |" in text and "| CB |" in text and "accuracy (%)" in text
    assert "± is the standard deviation over 2 trials" in text
    assert (out / "figure3.png").stat().st_size > 1000
    config = json.loads((out / "config.json").read_text())["config"]
    assert config["rounds"] == 1200 and config["schedule"] == "paper"
    assert "figure3.csv" in capsys.readouterr().out


def test_same_seed_same_curve():
    config = Figure3Config(trials=1, rounds=600, warmup=500, iota=10.0, eval_every=100,
                           dataset="digits")
    seed = np.random.SeedSequence(11)
    with one_thread():
        first = run_trial(config, 0, seed)
        second = run_trial(config, 0, seed)
    assert len(first) > 20
    assert [r for r in first if r["metric"] != "seconds"] == \
        [r for r in second if r["metric"] != "seconds"]


def test_bad_settings_are_user_errors(tmp_path, capsys):
    assert main(["reproduce", "figure3", "--dataset", "digits", "--eval-every", "150",
                 "--out", str(tmp_path / "x")]) == 2
    assert "--eval-every" in capsys.readouterr().err
    with pytest.raises(IGLearnError, match="eta"):
        Figure3Config(schedule="theory", eta=2.0).check(10)
    # an option of another schedule than --schedule ran without it, and without a word
    for options, words in ((["--eta", "0.5"], "--eta 0.5 is read by the theory schedule only "
                            "(--schedule is paper); drop --eta, or add --schedule theory"),
                           (["--schedule", "data-driven", "--warmup", "100"],
                            "--warmup 100 is read by the paper schedule only (--schedule is "
                            "data-driven); drop --warmup, or add --schedule paper")):
        assert main(["reproduce", "figure3", "--dataset", "digits", *options,
                     "--out", str(tmp_path / "x")]) == 2
        assert capsys.readouterr().err.strip() == f"iglearn: error: {words}"
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("options, words", [
    (["--rounds", "300", "--warmup", "400"], "warm-up of 400 rounds.*lower --warmup"),
    (["--rounds", "400", "--warmup", "400"], "raise --rounds above 400"),
    (["--rounds", "300", "--schedule", "theory"], "warm-up of 40816 rounds.*--iota"),
    (["--rounds", "50", "--schedule", "data-driven"], "first fit at round 100"),
])
def test_runs_that_end_before_any_exploitation_are_refused(tmp_path, capsys, options, words):
    out = tmp_path / "never"
    assert main(["reproduce", "figure3", "--dataset", "digits", "--trials", "1", "--jobs", "1",
                 "--quiet", *options, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert re.search(words, err)
    assert not out.exists()


def test_data_driven_markdown_says_when_no_fit_was_certified(tmp_path):
    out = tmp_path / "run"
    # iota = 1000: K eps_D on a few dozen held-out samples is far above any indicator.
    assert main(["reproduce", "figure3", "--dataset", "digits", "--trials", "1", "--jobs", "1",
                 "--quiet", "--schedule", "data-driven", "--iota", "1000", "--rounds", "300",
                 "--eval-every", "100", "--out", str(out)]) == 0
    text = (out / "figure3.md").read_text()
    assert "E2G: no fit was certified" in text and "CB: no fit was certified" in text
    frame = pd.read_csv(out / "figure3.csv")
    assert (frame.loc[frame["metric"] == "certified", "value"] == 0).all()


@pytest.mark.parametrize("iota", [0.01, 1000.0])
def test_value_bound_is_reported_only_where_the_indicator_certifies_it(iota):
    config = Figure3Config(trials=1, rounds=400, warmup=300, iota=iota, eval_every=100,
                           dataset="digits")
    with one_thread():
        rows = pd.DataFrame(run_trial(config, 0, np.random.SeedSequence(2)))
    measured = rows.pivot_table(index=["method", "round"], columns="metric", values="value")
    assert measured["indicator"].notna().sum() >= 4  # E2G and CB at rounds 300 and 400
    if iota > 1:  # K eps_D >= 10 sqrt(1000 / 800) on at most 400 samples: nothing certifies
        assert "value_lower_bound" not in measured or measured["value_lower_bound"].isna().all()
    else:
        bound = measured["value_lower_bound"].dropna()
        assert len(bound) >= 2 and bound.between(0, 1).all()
        assert (bound <= measured.loc[bound.index, "indicator"] + 0.1).all()


def test_value_bound_needs_a_certificate_and_stays_in_the_unit_interval():
    # K eps_D = 10 sqrt(100 / 2000) = 2.24: no indicator certifies Delta_psi > 0.
    assert value_bound({"indicator": 0.9, "indicator_samples": 1000}, 10, 100.0) is None
    assert value_bound({"indicator": 0.5, "indicator_samples": 10**6}, 10, 1.0) == \
        pytest.approx(0.5 - 10 * np.sqrt(1 / 2e6) + 0.1)
    assert value_bound({"indicator": 1.2, "indicator_samples": 10**9}, 10, 1.0) == 1.0
