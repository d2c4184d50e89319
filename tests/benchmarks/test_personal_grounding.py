"""benchmarks/personal_grounding.py: the seed list, and a short run end to end."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pandas as pd
import pytest

from tests.benchmarks.conftest import benchmark_module


@pytest.fixture(scope="module")
def personal_grounding():
    with benchmark_module("personal_grounding") as module:
        yield module


def test_seed_lists(personal_grounding):
    assert personal_grounding.seeds("0-3") == [0, 1, 2, 3]
    assert personal_grounding.seeds("2,5") == [2, 5]


def test_a_short_run_writes_one_row_per_seed(personal_grounding, tmp_path):
    out = io.StringIO()
    with redirect_stdout(out):
        personal_grounding.main(["--seeds", "0,1", "--rounds", "300", "--ik-starts", "2",
                                 "--gamma0", "2", "--csv", str(tmp_path / "rows.csv")])
    rows = pd.read_csv(tmp_path / "rows.csv")
    assert rows["seed"].tolist() == [0, 1]
    assert rows[["reward", "reward_last", "extreme_last_fit"]].stack().between(0, 1).all()
    assert (rows["cpu_seconds"] > 0).all()
    assert "mean over 2 seeds" in out.getvalue() and "(ik_starts 2)" in out.getvalue()
