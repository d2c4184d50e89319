"""``iglearn fit --algorithm igl|ai-igl`` on action-inclusive feedback, and evaluate, predict and
simulate for every algorithm."""

import json

import numpy as np
import pytest

from iglearn.cli import main
from iglearn.data.formats import read_log
from iglearn.learners import AIIGL, BatchIGL, registry
from iglearn.models import io
from tests.cli.conftest import run


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """An action-inclusive digits log, its test contexts, and a model of each algorithm."""
    folder = tmp_path_factory.mktemp("ai")
    assert main(["simulate", "action-inclusive-digits", "--samples", "3000", "--out",
                 str(folder / "log.npz"), "--seed", "1", "--test-out",
                 str(folder / "test.npz")]) == 0
    for algorithm in ("ai-igl", "igl"):
        assert main(["fit", str(folder / "log.npz"), "--out", str(folder / algorithm),
                     "--algorithm", algorithm]) == 0
    return folder


def test_ai_igl_learns_action_inclusive_digits_and_igl_does_not(workspace, capsys):
    found = {}
    for algorithm in ("ai-igl", "igl"):
        code, out, _ = run(capsys, "evaluate", workspace / algorithm, workspace / "test.npz")
        assert code == 0
        found[algorithm] = json.loads(out)["accuracy"]
    assert found["ai-igl"] > 0.7 and found["igl"] < 0.25, found   # chance is 0.1
    assert type(registry.load_model(workspace / "ai-igl")) is AIIGL
    assert type(registry.load_model(workspace / "igl")) is BatchIGL


def test_fit_summary_reports_what_the_algorithm_measures(workspace, capsys, tmp_path):
    code, out, _ = run(capsys, "fit", workspace / "log.npz", "--out", tmp_path / "m",
                       "--algorithm", "ai-igl", "--lr", "0.03", "--refinements", "0",
                       "--temperature", "0.5", "--max-steps", "60", "--seed", "2")
    assert code == 0
    summary = json.loads(out)
    assert summary["algorithm"] == "ai-igl" and summary["samples"] == 3000
    assert len(summary["covariance"]) == 10 and len(summary["flipped"]) == 10
    assert summary["indicator"] == pytest.approx(sum(summary["covariance"]))
    assert "lemma5" not in summary and "identifiability_warnings" in summary
    settings = summary["settings"]
    assert (settings["refinements"], settings["temperature"], settings["seed"]) == (0, 0.5, 2)
    assert settings["optimisation"]["lr"] == 0.03
    assert settings["optimisation"]["grounding_epochs"] == AIIGL().optimisation.grounding_epochs
    meta = json.loads((tmp_path / "m" / io.METADATA).read_text())
    assert meta["algorithm"] == "ai-igl" and meta["training"]["settings"] == settings


@pytest.mark.parametrize("algorithm", ["ai-igl", "igl"])
def test_evaluate_on_the_log_reports_the_algorithms_own_indicator(workspace, capsys,
                                                                   algorithm):
    code, out, _ = run(capsys, "evaluate", workspace / algorithm, workspace / "log.npz")
    assert code == 0
    measures = json.loads(out)
    assert measures["algorithm"] == algorithm
    learner = registry.load_model(workspace / algorithm)
    log = read_log(workspace / "log.npz")
    assert measures["indicator"] == pytest.approx(learner.indicator(log), rel=1e-5, abs=1e-7)
    assert measures["indicator"] == pytest.approx(learner.report_.indicator, rel=1e-5,
                                                  abs=1e-7)
    pi = learner.predict_proba(log.context)[np.arange(len(log)), log.action]
    psi = (learner.decode(log.feedback, log.action) if algorithm == "ai-igl"
           else learner.decode(log.feedback))
    assert measures["decoded_value"] == pytest.approx(np.mean(pi * psi / log.probability),
                                                      rel=1e-5)


def test_predict_works_for_every_algorithm(workspace, capsys, tmp_path):
    for algorithm in ("ai-igl", "igl"):
        out = tmp_path / f"{algorithm}.csv"
        code, printed, _ = run(capsys, "predict", workspace / algorithm,
                               workspace / "test.npz", "--out", out)
        assert code == 0
        actions = np.loadtxt(out, delimiter=",", skiprows=1)[:, 0]
        with np.load(workspace / "test.npz") as test:
            expected = registry.load_model(workspace / algorithm).predict(test["context"])
        np.testing.assert_array_equal(actions, expected)
        assert sum(json.loads(printed)["action_counts"]) == len(expected)


REFUSED = [
    (["--algorithm", "ai-igl", "--restart-threshold", "0.2"],
     ["--restart-threshold", "--algorithm igl"]),
    (["--restart-fraction", "0.5"], ["--restart-fraction", "--algorithm ai-igl"]),
    (["--algorithm", "ai-igl", "--no-corrector"], ["--corrector", "--algorithm igl"]),
    (["--algorithm", "ai-igl", "--objective", "paper"], ["--objective", "--algorithm igl"]),
    (["--algorithm", "ai-igl", "--iota", "3"], ["--iota", "--algorithm igl"]),
    (["--refinements", "0"], ["--refinements", "--algorithm ai-igl"]),
    (["--algorithm", "igl", "--temperature", "2"], ["--temperature", "--algorithm ai-igl"]),
]


@pytest.mark.parametrize("options, words", REFUSED)
def test_an_option_of_the_other_algorithm_is_refused_in_one_line(workspace, capsys, tmp_path,
                                                                options, words):
    code, out, err = run(capsys, "fit", workspace / "log.npz", "--out", tmp_path / "m",
                         *options)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    for word in words:
        assert word in err, err
    assert not (tmp_path / "m").exists()


def test_fit_help_groups_the_options_and_gives_each_algorithms_default(capsys):
    code, out, _ = run(capsys, "fit", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "--algorithm {igl,ai-igl,igl-p,vi-igl}" in text
    assert "settings of --algorithm igl only (BatchIGL)" in text
    assert "settings of --algorithm ai-igl only (AIIGL)" in text
    assert "settings of --algorithm igl and ai-igl" in text
    assert "settings of --algorithm igl-p only (IGLP)" in text
    assert "settings of --algorithm vi-igl only (VIIGL)" in text
    assert "vi-igl reads those it has too: --decoder, --decoder-temperature" in text
    assert "vi-igl reads those it has too: --decoder, --decoder-temperature, --max-restarts" in text
    # --decoder-temperature and --max-restarts, with vi-igl's defaults too
    assert "(default: 0.1 for igl, 0.5 for ai-igl, 1.0 for vi-igl)" in text
    assert "(default: 4 for igl, 2 for ai-igl, 2 for vi-igl)" in text


def test_simulate_names_the_action_inclusive_environments_and_the_bci(tmp_path, capsys):
    code, out, _ = run(capsys, "simulate", "bci", "--samples", "500", "--noise", "0.1",
                       "--out", tmp_path / "bci.npz", "--test-out", tmp_path / "test.npz")
    assert code == 0
    record = json.loads(out)
    assert (record["n_actions"], record["context_dim"], record["feedback_dim"]) == (3, 64, 64)
    assert record["noise"] == 0.1 and record["independence"] == "action-inclusive"
    log = read_log(tmp_path / "bci.npz")
    assert len(log) == 500 and log.n_actions == 3
    code, out, err = run(capsys, "simulate", "digits", "--samples", "10", "--noise", "0.1",
                         "--out", tmp_path / "d.npz")
    assert code == 2 and "--noise" in err and not (tmp_path / "d.npz").exists()
