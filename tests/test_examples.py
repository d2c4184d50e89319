"""Every script in examples/ runs end to end (on one torch thread, their small default
budgets) and prints what it promises, so that the examples never rot."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name: str) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True,
                          text=True, env=env, timeout=300, cwd=EXAMPLES.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, text
    return float(match.group(1))


def test_every_example_has_a_test():
    tested = {"own_environment.py", "own_torch_model.py", "logs_from_dataframe.py",
              "online_loop.py", "sweep_on_ray.py", "mymodels.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


def test_own_environment_learns_its_clusters():
    out = run_example("own_environment.py")
    assert "independence: full" in out
    assert number(r"test accuracy: ([0-9.]+)", out) > 0.8


def test_own_torch_model_fits_saves_loads_and_refuses_an_instance():
    out = run_example("own_torch_model.py")
    assert number(r"test accuracy ([0-9.]+)", out) > 0.6
    assert "without opting in:" in out and "import_factories=True" in out
    assert "same predictions: True" in out
    assert "a module instance is not saved: cannot save the custom policy" in out


def test_logs_from_a_data_frame_and_csv():
    out = run_example("logs_from_dataframe.py")
    assert "CSV columns: context_0,context_1,action,probability,feedback_0,feedback_1," \
           "n_actions" in out.replace('"', "")
    assert number(r"given their best action: ([0-9.]+)", out) > 0.8


def test_online_loop_earns_more_after_the_warm_up():
    out = run_example("online_loop.py")
    before = number(r"while exploring: ([0-9.]+)", out)
    assert number(r"after the warm-up: ([0-9.]+)", out) > before + 0.1


def test_sweep_on_ray():
    pytest.importorskip("ray")
    out = run_example("sweep_on_ray.py")
    assert out.count("IGL") == 2, out
