"""``iglearn reproduce personalized`` on a small budget."""


import pandas as pd

from iglearn.experiments.personalized import vw_status
from iglearn.experiments.results import KEY_COLUMNS
from tests.experiments.conftest import reproduce

SMALL = ["--trials", "1", "--rounds", "500", "--report-at", "250", "--eval-every", "250",
         "--batch-samples", "1500", "--tasks", "personalised", "--methods", "IGL-P,CB",
         "--quiet", "--jobs", "1"]


def test_small_run_writes_the_tidy_table_the_report_and_the_plot(tmp_path):
    printed = reproduce("personalized", *SMALL, "--out", tmp_path)
    frame = pd.read_csv(tmp_path / "personalized.csv")
    assert list(frame.columns) == [*KEY_COLUMNS, "task", "round", "metric", "value"]
    reward = frame[frame["metric"] == "average_reward"]
    status = vw_status()
    # VW joins by default where the vowpalwabbit package can play it
    assert set(reward["method"]) == {"IGL-P", "CB"} | ({"VW"} if status is None else set())
    reward = reward[reward["method"] != "VW"]
    assert set(reward["round"]) == {250, 500}
    final = reward[reward["round"] == 500]
    # both learn the enjoyed topics; uniform play would earn 0
    assert (final["value"] > 0.25).all()
    batch = frame[(frame["metric"] == "accuracy") & (frame["round"] == 0)]
    assert set(batch["method"]) == {"IGL-P", "IGL"}
    text = (tmp_path / "personalized.md").read_text()
    assert "Vowpal Wabbit" in text and "IGL-P" in text
    assert ("not run" in text) == (status is not None)
    assert (tmp_path / "personalized.png").stat().st_size > 0
    assert "wrote" in printed


def test_gamma0_without_inverse_gap_weighting_is_refused(tmp_path, capsys):
    """--gamma0 with --exploration epsilon played epsilon-greedy without a word."""
    from iglearn.cli import main

    assert main(["reproduce", "personalised", *SMALL, "--exploration", "epsilon",
                 "--gamma0", "10", "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip() == (
        "iglearn: error: --gamma0 10.0 is read by --exploration igw only (--exploration is "
        "epsilon); drop --gamma0, or add --exploration igw")
    assert not (tmp_path / "x").exists()
