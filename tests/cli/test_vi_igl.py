"""``iglearn simulate noisy-*`` and ``iglearn fit --algorithm vi-igl`` end to end."""

import json

import pytest

from iglearn.cli import main
from iglearn.learners import VIIGL, registry
from tests.cli.conftest import run


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    """Digits with 10 % of the feedback replaced by independent noise digits (real images:
    the fake MNIST fixture's random pixels carry no digit to learn), and a VI-IGL model."""
    folder = tmp_path_factory.mktemp("vi")
    assert main(["simulate", "noisy-independent-digits", "--samples", "2000", "--noise", "0.1",
                 "--out", str(folder / "log.npz"), "--seed", "1", "--test-out",
                 str(folder / "test.npz")]) == 0
    assert main(["fit", str(folder / "log.npz"), "--out", str(folder / "model"),
                 "--algorithm", "vi-igl", "--divergence", "chi2-kl", "--seed", "3"]) == 0
    return folder


def test_vi_igl_is_far_above_chance_at_ten_percent_noise(noisy, capsys):
    code, out, _ = run(capsys, "evaluate", noisy / "model", noisy / "test.npz")
    assert code == 0
    measured = json.loads(out)
    assert measured["algorithm"] == "vi-igl" and measured["accuracy"] > 0.6  # chance is 0.1
    model = registry.load_model(noisy / "model")
    assert type(model) is VIIGL and model.divergence == "chi2-kl"


def test_simulate_records_the_replacement_probability(tmp_path, capsys):
    code, out, _ = run(capsys, "simulate", "noisy-both-digits", "--samples", "50", "--out",
                       tmp_path / "log.npz")
    assert code == 0
    record = json.loads(out)
    assert record["noise"] == 0.1 and record["independence"] == "personalised"
    code, _, err = run(capsys, "simulate", "noisy-action-digits", "--samples", "50",
                       "--noise", "1.5", "--out", tmp_path / "bad.npz")
    assert code == 2 and "[0, 1]" in err and not (tmp_path / "bad.npz").exists()


def test_fit_summary_and_foreign_options(noisy, capsys, tmp_path):
    code, out, _ = run(capsys, "fit", noisy / "log.npz", "--out", tmp_path / "m",
                       "--algorithm", "vi-igl", "--beta", "5", "--max-steps", "30")
    assert code == 0
    summary = json.loads(out)
    assert summary["algorithm"] == "vi-igl" and summary["settings"]["beta"] == 5.0
    assert {"conditional_bound", "marginal_bound", "reward_rate", "flipped", "restarts",
            "attempt_bounds"} <= set(summary)
    assert len(summary["attempt_bounds"]) == summary["restarts"] + 1
    code, _, err = run(capsys, "fit", noisy / "log.npz", "--out", tmp_path / "n", "--beta", "5")
    assert code == 2 and "--beta is an option of --algorithm vi-igl, which" in err
    code, _, err = run(capsys, "fit", noisy / "log.npz", "--out", tmp_path / "n",
                       "--algorithm", "ai-igl", "--restart-bound", "0.1")
    assert code == 2 and "--restart-bound is an option of --algorithm vi-igl, which" in err
    assert not (tmp_path / "n").exists()
