"""End to end: ``iglearn reproduce`` and ``iglearn sweep`` on a small budget."""

from __future__ import annotations

import io
import json
import re
import socket
import subprocess
import sys
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from iglearn.cli import build_parser, experiments, main
from iglearn.cli.settings import build_settings
from iglearn.experiments.personalized import PersonalizedConfig
from tests.conftest import requires_mnist

METHODS = ("SUP", "CB", "IGL")


def accuracies(csv: Path) -> dict[str, list[float]]:
    """Each method's accuracy per trial, as a fraction, from a wide table (an ``accuracy``
    column, in %) or a long one (``metric`` and ``value`` columns)."""
    frame = pd.read_csv(csv)
    if "metric" in frame:
        frame = frame[frame["metric"] == "accuracy"].rename(columns={"value": "accuracy"})
    scale = 100.0 if frame["accuracy"].max() > 1 else 1.0
    return {method: (part.sort_values("trial")["accuracy"] / scale).tolist()
            for method, part in frame.groupby("method")}


def config_of(out: Path) -> dict:
    return json.loads((out / "config.json").read_text())["config"]


@pytest.fixture(scope="module")
def table1_run(tmp_path_factory):
    """A two-trial Table 1 on digits: its folder and what it printed."""
    out = tmp_path_factory.mktemp("table1") / "run"
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert main(["reproduce", "table1", "--dataset", "digits", "--trials", "2",
                     "--samples", "4000", "--out", str(out), "--quiet", "--jobs", "1"]) == 0
    return out, printed.getvalue()


def test_table1_writes_its_files_far_above_chance(table1_run):
    out, _ = table1_run
    for name in ("table1.csv", "table1.md", "table1.png", "config.json"):
        assert (out / name).stat().st_size > 0
    found = accuracies(out / "table1.csv")
    assert set(found) == set(METHODS) and all(len(v) == 2 for v in found.values())
    assert min(found["IGL"]) > 0.6 and min(found["SUP"]) > 0.8   # chance is 0.1
    assert config_of(out)["trials"] == 2 and config_of(out)["dataset"] == "digits"


def test_printed_table_lists_each_method_with_the_accuracy_in_the_csv(table1_run):
    out, printed = table1_run
    found = accuracies(out / "table1.csv")
    for method in METHODS:
        row = next(line for line in printed.splitlines()
                   if line.strip().strip("|").split("|")[0].strip() == method)
        numbers = [float(n) for n in re.findall(r"\d+\.\d+", row)]
        mean, low = sum(found[method]) / 2, min(found[method])
        for value in (mean, low):   # printed in % or as a fraction, to 2 decimals
            assert any(abs(n - value * scale) < 0.006 for n in numbers
                       for scale in (1, 100)), (method, value, row)


def test_a_digits_table_shows_no_paper_mnist_figures(table1_run):
    out, printed = table1_run
    for text in (printed, (out / "table1.md").read_text()):
        assert "paper accuracy" not in text and "90.62" not in text
        assert "on MNIST, not digits" in text


def test_a_setting_given_on_the_command_line_is_recorded(tmp_path):
    out = tmp_path / "run"
    assert main(["reproduce", "table1", "--lr", "0.05", "--dataset", "digits", "--trials", "1",
                 "--samples", "500", "--decoder-temperature", "0.2", "--out", str(out),
                 "--quiet", "--jobs", "1"]) == 0
    config = config_of(out)
    assert config["lr"] == 0.05 and config["decoder_temperature"] == 0.2
    assert config["samples"] == 500 and config["trials"] == 1


def test_same_seed_same_table(tmp_path):
    found = []
    for name in ("a", "b"):
        assert main(["reproduce", "table1", "--dataset", "digits", "--trials", "1",
                     "--samples", "2000", "--out", str(tmp_path / name), "--quiet", "--seed",
                     "5", "--jobs", "1"]) == 0
        found.append(accuracies(tmp_path / name / "table1.csv"))
    assert found[0] == found[1]


@requires_mnist
def test_table1_on_mnist_far_above_chance(tmp_path):
    out = tmp_path / "mnist"
    assert main(["reproduce", "table1", "--trials", "1", "--samples", "20000",
                 "--out", str(out), "--quiet"]) == 0
    found = accuracies(out / "table1.csv")
    assert found["IGL"][0] > 0.8 and found["SUP"][0] > 0.85


def test_missing_mnist_exits_2_and_offers_digits(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("IGLEARN_DATA", raising=False)
    out = tmp_path / "never"
    (tmp_path / "empty").mkdir()
    assert main(["reproduce", "table1", "--data-dir", str(tmp_path / "empty"), "--out",
                 str(out)]) == 2
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


@pytest.mark.parametrize("argv, option", [
    (["reproduce", "table1", "--seed", "-1"], "--seed"),
    (["reproduce", "table1", "--trials", "0"], "--trials"),
    (["reproduce", "table1", "--lr", "nan"], "--lr"),
    (["reproduce", "table1", "--methods", "IGL,XYZ"], "--methods"),
    (["sweep", "--set", "lr=nan"], "--set"),
    (["sweep", "--set", "samples=100,-5"], "--set"),
    (["sweep", "--set", "seed=1,2"], "--set"),
    (["reproduce", "sample-complexity", "--samples", "100,-5"], "--samples"),
    (["reproduce", "unsupervised", "--clusters", "0"], "--clusters"),
    (["reproduce", "unsupervised", "--restart-threshold", "-0.1"], "--restart-threshold"),
    (["reproduce", "figure3", "--rounds", "-3"], "--rounds"),
    (["reproduce", "figure3", "--schedule", "fast"], "--schedule"),
    (["reproduce", "figure3", "--eval-every", "150"], "--eval-every"),
    (["reproduce", "figure3", "--jobs", "0"], "--jobs"),
])
def test_bad_values_exit_2_with_one_line_and_create_nothing(tmp_path, capsys, argv, option):
    out = tmp_path / "out"
    assert main([*argv, "--dataset", "digits", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iglearn: error:") and len(err.strip().splitlines()) == 1
    assert option in err
    assert not out.exists()


@pytest.mark.parametrize("argv, given", [
    (["reproduce", "table1", "--samples", "10"], "--samples 10"),
    (["sweep", "--set", "samples=5,300"], "--samples 5"),
    (["reproduce", "sample-complexity", "--samples", "300,5"], "--samples 5"),
    (["reproduce", "action-inclusive", "--bci-samples", "5", "--methods", "CB"],
     "--bci-samples 5"),
])
def test_a_run_its_environment_refuses_creates_nothing_and_the_corrected_run_goes(
        tmp_path, capsys, argv, given):
    """A log too small to fit is refused by the trials' environment: the run exits 2 and
    leaves no folder (it used to leave OUT/trials/run.json, and the corrected command was
    refused as "a different configuration; pass --fresh"). The message names the option
    that sized the log and the least it takes (it said "ClassificationEnvironment: ... log
    more interactions", naming no option)."""
    out = tmp_path / "results" / "out"
    common = ["--dataset", "digits", "--trials", "1", "--jobs", "1", "--quiet", "--out", out]
    assert main([*map(str, argv), *map(str, common)]) == 2
    option = given.split()[0]
    least = 6 if option == "--bci-samples" else 20
    actions = 3 if option == "--bci-samples" else 10
    assert capsys.readouterr().err == (
        f"iglearn: error: {given} is too few for the experiment's {actions} actions: a fit "
        f"needs at least {least} interactions (2 per action); give {option} {least} or more\n")
    assert list(tmp_path.iterdir()) == []
    assert main(["reproduce", "table1", "--samples", "300", *map(str, common)]) == 0


def test_python_dash_m_iglearn_cli_exits_2_without_traceback():
    result = subprocess.run([sys.executable, "-m", "iglearn.cli", "reproduce", "table1",
                             "--trials", "0"], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--trials" in result.stderr


@pytest.mark.parametrize("spelling", ["personalised", "personalized"])
def test_reproduce_personalised_answers_to_both_spellings(spelling):
    args = build_parser().parse_args(["reproduce", spelling, "--trials", "3"])
    config = build_settings(args, PersonalizedConfig(), experiments.CONFIG)
    assert config == replace(PersonalizedConfig(), trials=3)
    assert args.out == "results/personalised" and callable(args.run)


def test_reproduce_help_lists_personalised_with_an_s(capsys):
    assert main(["reproduce", "--help"]) == 0
    assert "personalised (personalized)" in capsys.readouterr().out


@pytest.mark.parametrize("command", [
    ["reproduce", "table1", "--dataset", "digits", "--samples", "300", "--trials", "1"],
    ["sweep", "--dataset", "digits", "--samples", "300", "--trials", "1", "--set",
     "lr=0.01,0.02"],
], ids=["reproduce", "sweep"])
def test_a_ray_cluster_that_cannot_be_reached_is_refused_before_anything_is_written(
        command, tmp_path, capsys):
    with socket.socket() as listener:  # a port of this machine that nothing listens at
        listener.bind(("", 0))
        port = listener.getsockname()[1]
    out = tmp_path / "out"
    code = main([*command, "--backend", "ray", "--ray-address", f"127.0.0.1:{port}",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"--ray-address 127.0.0.1:{port}: cannot reach a Ray cluster there" in err
    assert not out.exists()


@pytest.mark.parametrize("command", [
    ["reproduce", "table1", "--dataset", "digits", "--samples", "300", "--trials", "1"],
    ["sweep", "--dataset", "digits", "--samples", "300", "--trials", "1", "--set", "lr=0.01"],
], ids=["reproduce", "sweep"])
def test_a_ray_address_without_the_ray_backend_is_refused(command, tmp_path, capsys):
    """--ray-address without --backend ray was dropped without a word: the trials ran on
    this machine's process pool, not on the cluster named."""
    out = tmp_path / "out"
    code = main([*command, "--ray-address", "127.0.0.1:6379", "--jobs", "1", "--quiet",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == (
        "iglearn: error: --ray-address 127.0.0.1:6379: trials run on a Ray cluster with "
        "--backend ray only; add --backend ray, or drop --ray-address to run them here")
    assert not out.exists()
