"""benchmarks/stream_memory.py: its synthetic log, and one measured run end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from iglearn.data.formats import read_log
from tests.benchmarks.conftest import BENCHMARKS, benchmark_module

SCRIPT = BENCHMARKS / "stream_memory.py"


@pytest.fixture(scope="module")
def stream_memory():
    with benchmark_module("stream_memory") as module:
        yield module


def test_the_synthetic_log_is_the_same_in_every_format(stream_memory, tmp_path):
    stream_memory.generate(2500, tmp_path / "log.npz", 500)
    stream_memory.generate(2500, tmp_path / "large.parquet", 500)
    stream_memory.generate(2500, tmp_path / "shards", 1000)
    small, large = read_log(tmp_path / "log.npz"), read_log(tmp_path / "large.parquet")
    assert (small.context_dim, small.feedback_dim, small.n_actions) == (64, 16, 10)
    np.testing.assert_array_equal(large.context, small.context)
    np.testing.assert_array_equal(read_log(tmp_path / "shards").action, large.action)
    assert len(list((tmp_path / "shards").iterdir())) == 3
    assert 0.05 < float(np.mean(large.reward)) < 0.15   # uniform play finds 1 in 10


@pytest.mark.slow
def test_a_run_measures_each_fit_and_the_ratio(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SCRIPT.parents[1] / "src")}
    done = subprocess.run([sys.executable, str(SCRIPT), "--rows", "2000", "4000", "--format",
                           "npz", "--out", str(tmp_path), "--fit-options",
                           "--grounding-epochs 1 --policy-epochs 0 --epochs 0 "
                           "--max-restarts 0"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    runs = results["runs"]
    assert [(r["rows"], r["exit_code"]) for r in runs] == [(2000, 0), (4000, 0)]
    assert all(r["peak_rss_mb"] > 50 and r["cpu_seconds"] > 0 for r in runs)
    ratio = results["peak_ratio_largest_to_smallest"]["npz"]
    assert ratio == round(runs[1]["peak_rss_mb"] / runs[0]["peak_rss_mb"], 3)
    assert not list(tmp_path.glob("log-*"))   # the logs are deleted without --keep
