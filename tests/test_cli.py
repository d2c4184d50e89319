"""End to end: the command line on a small budget."""

import subprocess
import sys

import pandas as pd
import pytest

from iglearn.cli import main
from tests.conftest import requires_mnist


def test_table1_on_digits_far_above_chance(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["reproduce", "table1", "--dataset", "digits", "--trials", "2",
                 "--samples", "4000", "--out", str(out), "--quiet"]) == 0
    frame = pd.read_csv(out / "table1.csv")
    assert set(frame.columns) >= {"method", "trial", "seed", "accuracy", "seconds"}
    assert len(frame) == 6 and frame["seed"].nunique() == 2
    accuracy = frame.groupby("method")["accuracy"].min()
    assert accuracy["IGL"] > 60 and accuracy["SUP"] > 80   # chance is 10 %
    text = (out / "table1.md").read_text()
    assert "82.21 ± 4.33" in text and "IGL" in text
    assert (out / "table1.png").stat().st_size > 1000 and (out / "config.json").exists()
    assert "IGL" in capsys.readouterr().out


def test_same_seed_same_table(tmp_path):
    frames = []
    for name in ("a", "b"):
        main(["reproduce", "table1", "--dataset", "digits", "--trials", "1", "--samples",
              "2000", "--out", str(tmp_path / name), "--quiet", "--seed", "5"])
        frames.append(pd.read_csv(tmp_path / name / "table1.csv"))
    pd.testing.assert_series_equal(frames[0]["accuracy"], frames[1]["accuracy"])


@requires_mnist
def test_table1_on_mnist_far_above_chance(tmp_path):
    out = tmp_path / "mnist"
    assert main(["reproduce", "table1", "--trials", "1", "--samples", "20000",
                 "--out", str(out), "--quiet"]) == 0
    frame = pd.read_csv(out / "table1.csv").set_index("method")
    assert frame.loc["IGL", "accuracy"] > 80 and frame.loc["SUP", "accuracy"] > 85


def test_missing_mnist_exits_2_and_offers_digits(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("IGLEARN_DATA", raising=False)
    out = tmp_path / "never"
    assert main(["reproduce", "table1", "--data-dir", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iglearn: error:") and "--dataset digits" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_unwritable_output_exits_2(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["reproduce", "table1", "--dataset", "digits", "--out",
                 str(blocker / "sub")]) == 2
    assert "--out" in capsys.readouterr().err


def test_bad_option_exits_2_without_traceback():
    result = subprocess.run([sys.executable, "-m", "iglearn.cli", "reproduce", "table1",
                             "--trials", "0"], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--trials" in result.stderr


@pytest.mark.parametrize("argv", [["--help"], ["reproduce", "table1", "--help"]])
def test_help(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 0 and "iglearn" in capsys.readouterr().out
