"""The standardiser: per-column statistics (feedback weighted by 1/p), constant columns,
streamed and in-memory statistics, and its model.json record."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from iglearn.data.formats import write_table
from iglearn.data.logs import InteractionLog
from iglearn.data.scaling import Moments, Standardiser, standardiser_of
from iglearn.data.stream import LogStream, StreamSettings, open_log
from iglearn.errors import IGLearnError


def log_of(n: int = 600, seed: int = 0, k: int = 3) -> InteractionLog:
    rng = np.random.default_rng(seed)
    context = (rng.normal(size=(n, 4)) * [1.0, 0.05, 3.0, 0.0] + [35.0, 2.0, -1.0, 7.0])
    action = rng.integers(0, k, n)
    probability = rng.choice([0.2, 0.5, 0.8], n)
    feedback = rng.normal(size=(n, 2)) + action[:, None] * [1.0, -2.0]
    return InteractionLog(context.astype(np.float32), action, probability,
                          feedback.astype(np.float32), k, source="synthetic")


def test_statistics_are_the_columns_mean_and_weighted_feedback_moments():
    log = log_of()
    scaler = Standardiser.of_log(log)
    x = log.context.astype(np.float64)
    np.testing.assert_allclose(scaler.context_mean, x.mean(0), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(scaler.context_scale[:3], x[:, :3].std(0), rtol=1e-6)
    w = 1.0 / log.probability
    y = log.feedback.astype(np.float64)
    mean = (w[:, None] * y).sum(0) / w.sum()
    std = np.sqrt((w[:, None] * (y - mean) ** 2).sum(0) / w.sum())
    np.testing.assert_allclose(scaler.feedback_mean, mean, rtol=1e-9)
    np.testing.assert_allclose(scaler.feedback_scale, std, rtol=1e-9)
    standardised = scaler.apply(log.context)
    assert standardised.dtype == np.float32
    np.testing.assert_allclose(standardised[:, :3].mean(0), 0.0, atol=1e-4)
    np.testing.assert_allclose(standardised[:, :3].std(0), 1.0, rtol=1e-3)


def test_a_constant_column_is_centred_not_divided_by_zero():
    log = log_of()
    scaler = Standardiser.of_log(log)
    assert scaler.context_scale[3] == 1.0
    out = scaler.apply(log.context)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[:, 3], 0.0, atol=1e-6)
    moments = Moments(1)
    moments.add(np.full((10, 1), 35.1), np.linspace(1, 3, 10))
    assert moments.statistics()[1][0] == 1.0


def test_block_updates_equal_one_pass():
    rng = np.random.default_rng(3)
    values, weights = rng.normal(5, 2, (1000, 3)), rng.uniform(1, 5, 1000)
    whole, parts = Moments(3), Moments(3)
    whole.add(values, weights)
    for rows in np.array_split(np.arange(1000), 7):
        parts.add(values[rows], weights[rows])
    for a, b in zip(whole.statistics(), parts.statistics(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10)


@pytest.mark.parametrize("name", ["log.parquet", "log.npz"])
def test_streamed_statistics_agree_with_the_in_memory_ones(tmp_path, name):
    log = log_of(2000, seed=1)
    write_table(log, tmp_path / "whole.parquet")
    pq.write_table(pq.read_table(tmp_path / "whole.parquet"), tmp_path / "log.parquet",
                   row_group_size=300)
    write_table(log, tmp_path / "log.npz")
    stream = open_log(tmp_path / name, StreamSettings(stream="on", block_rows=256))
    assert isinstance(stream, LogStream)
    streamed, memory = standardiser_of(stream), standardiser_of(open_log(tmp_path / name))
    assert (streamed.method, memory.method) == ("stream", "log")
    for field in ("context_mean", "context_scale", "feedback_mean", "feedback_scale"):
        np.testing.assert_allclose(getattr(streamed, field), getattr(memory, field),
                                   rtol=1e-9, atol=1e-12)


def test_record_round_trip_and_damage():
    scaler = Standardiser.of_log(log_of())
    again = Standardiser.from_dict(scaler.to_dict(), "model.json", 4, 2)
    x = log_of(50, seed=9).context
    np.testing.assert_array_equal(scaler.apply(x), again.apply(x))
    record = scaler.to_dict()
    with pytest.raises(IGLearnError, match="standardiser.context_scale"):
        Standardiser.from_dict({**record, "context_scale": [1.0, 0.0, 1.0, 1.0]}, "m", 4, 2)
    with pytest.raises(IGLearnError, match="standardiser.feedback_mean"):
        Standardiser.from_dict(record, "m", 4, 3)
    with pytest.raises(IGLearnError, match="fitted on 4"):
        scaler.apply(np.zeros((2, 5), np.float32))
