"""Vowpal Wabbit's --experimental_igl in ``iglearn reproduce personalized``: the probe, the
round-by-round learner, the VW row of a small run, and a missing vowpalwabbit package."""

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from iglearn.envs.named import named_environment
from iglearn.envs.play import play
from iglearn.experiments.vowpal import (
    VW_INSTALL,
    VowpalIGL,
    learning_line,
    prediction_line,
    vw_status,
)
from tests.experiments.conftest import reproduce

SMALL = ["--trials", "2", "--rounds", "300", "--report-at", "100", "--eval-every", "100",
         "--batch-samples", "0", "--tasks", "personalised", "--methods", "IGL-P", "--quiet",
         "--jobs", "1"]


def test_lines_carry_the_actions_the_context_and_the_feedback():
    import json

    predict = json.loads(prediction_line(np.array([1.0, 0.0, 0.5]), 3))
    assert predict["a"] == [0, 1, 2]
    assert predict["c"]["User"] == {"x0": 1.0, "x2": 0.5}
    assert predict["c"]["_multi"][2] == {"Action": {"action=2": 1}}
    learn = json.loads(learning_line(np.array([0.0, 1.0]), 2, np.array([0.1, 0.1, 0.8]),
                                     np.array([0.0, 0.0, 1.0]), True))
    assert (learn["_label_Action"], learn["_labelIndex"]) == (3, 2)
    assert learn["_label_probability"] == pytest.approx(0.8)
    assert learn["o"] == [{"v": {"v2": 1.0}, "_definitely_bad": True}]
    assert learn["p"] == pytest.approx([0.1, 0.1, 0.8])


def test_vw_status_says_the_installed_package_can_play():
    pytest.importorskip("vowpalwabbit")
    assert vw_status() is None


def test_vowpal_igl_learns_the_enjoyed_topics_on_vws_simulator():
    pytest.importorskip("vowpalwabbit")
    env = named_environment("personalised")
    learner = VowpalIGL(env.n_actions, 0.2, seed=np.random.default_rng(0))
    points = play(learner, env, 300, np.random.default_rng(1))
    assert learner.round_ == learner.interactions_ == 300
    assert math.isfinite(points[-1].average_reward)
    # the same seeds play the same rounds
    again = VowpalIGL(env.n_actions, 0.2, seed=np.random.default_rng(0))
    assert play(again, env, 300, np.random.default_rng(1)) == points
    again.close()
    test_x, test_y = env.test_set()
    assert 0.0 <= learner.accuracy(test_x, test_y) <= 1.0
    # the probabilities are epsilon-greedy: the greedy action and epsilon spread over all
    pmf = learner.probabilities(test_x[0])
    assert pmf.sum() == pytest.approx(1.0, abs=1e-5)
    assert pmf.max() == pytest.approx(0.8 + 0.2 / env.n_actions, abs=1e-5)
    learner.close()


def test_small_run_has_a_vw_row_in_the_csv_and_the_report(tmp_path):
    pytest.importorskip("vowpalwabbit")
    reproduce("personalized", *SMALL, "--vw", "on", "--out", tmp_path)
    frame = pd.read_csv(tmp_path / "personalized.csv")
    vw = frame[frame["method"] == "VW"]
    assert set(vw["trial"]) == {0, 1}
    reward = vw[vw["metric"] == "average_reward"]
    assert set(reward["round"]) == {100, 200, 300}
    assert np.isfinite(reward["value"]).all() and (reward["value"].abs() <= 1).all()
    cpu = vw[vw["metric"] == "cpu_per_1000"]["value"]
    assert len(cpu) == 2 and (cpu > 0).all() and np.isfinite(cpu).all()
    # IGL-P played the same contexts: same trials, same checkpoints
    iglp = frame[(frame["method"] == "IGL-P") & (frame["metric"] == "average_reward")]
    assert set(iglp["round"]) == set(reward["round"])
    text = (tmp_path / "personalized.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| personalised | VW |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "300" and math.isfinite(float(cells[-1]))
    assert "not run" not in text


def _without_vowpalwabbit(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    """``iglearn *argv`` in a fresh interpreter where importing vowpalwabbit fails, as when the
    package is not installed: a meta-path finder on PYTHONPATH (sitecustomize) refuses it."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(textwrap.dedent("""
        import sys

        class NoVowpalWabbit:
            def find_spec(self, name, path=None, target=None):
                if name == "vowpalwabbit" or name.startswith("vowpalwabbit."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, NoVowpalWabbit())
    """))
    src = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "src")
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(blocker), os.path.abspath(src)])}
    return subprocess.run([sys.executable, "-m", "iglearn", *argv], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.mark.slow
def test_without_vowpalwabbit_the_report_says_so_in_one_line(tmp_path):
    out = tmp_path / "out"
    result = _without_vowpalwabbit(tmp_path, "reproduce", "personalized", "--trials", "1",
                                   "--rounds", "100", "--report-at", "50", "--eval-every", "50",
                                   *SMALL[8:], "--out", str(out))
    assert result.returncode == 0, result.stderr
    text = (out / "personalized.md").read_text()
    lines = [line for line in text.splitlines() if line.startswith("VW")]
    assert lines == [f"VW: not run: the vowpalwabbit package is not installed; install it "
                     f"with {VW_INSTALL}."]
    assert "VW" not in set(pd.read_csv(out / "personalized.csv")["method"])
    assert "Traceback" not in result.stderr


def test_without_vowpalwabbit_asking_for_vw_stops_with_the_install_command(tmp_path):
    out = tmp_path / "out"
    result = _without_vowpalwabbit(tmp_path, "reproduce", "personalized", *SMALL, "--vw", "on",
                                   "--out", str(out))
    assert result.returncode == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert "vowpalwabbit" in message and VW_INSTALL in message
    assert not out.exists()
