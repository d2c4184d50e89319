"""The standardiser: per-column statistics (feedback weighted by 1/p), constant and
near-constant columns, the "auto" rule, streamed and in-memory statistics, and its model.json
record."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from iglearn.data.formats import write_table
from iglearn.data.logs import InteractionLog
from iglearn.data.scaling import (
    CLIP,
    DEFAULT_ORIGINS,
    MAX_SHIFT,
    NORMAL_IQR,
    SAMPLE_ROWS,
    Moments,
    Standardiser,
    check_origin,
    column_spread,
    off_scale,
    sparse_block,
    standardiser_of,
)
from iglearn.data.stream import LogStream, StreamSettings, open_log
from iglearn.envs import named_environment
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
    std = x[:, :3].std(0)
    assert std[1] < 0.1 * std.max()  # a near-constant column is divided by its own std too
    spread = column_spread(3)  # three columns that are not constant
    np.testing.assert_allclose(scaler.context_scale[:3], std / spread, rtol=1e-6)
    w = 1.0 / log.probability
    y = log.feedback.astype(np.float64)
    mean = (w[:, None] * y).sum(0) / w.sum()
    std = np.sqrt((w[:, None] * (y - mean) ** 2).sum(0) / w.sum())
    np.testing.assert_allclose(scaler.feedback_mean, mean, rtol=1e-9)
    np.testing.assert_allclose(scaler.feedback_scale, std / column_spread(2), rtol=1e-9)
    standardised = scaler.apply(log.context)
    assert standardised.dtype == np.float32
    # before clipping the rows spread ROW_SPREAD: their columns' variances sum to its square
    z = (x - scaler.context_mean) / scaler.context_scale
    np.testing.assert_allclose(z[:, :3].mean(0), 0.0, atol=1e-6)
    np.testing.assert_allclose(z[:, :3].std(0), spread, rtol=1e-6)
    np.testing.assert_allclose(np.sqrt(z.var(0).sum()), 2.0, rtol=1e-6)
    # then each value is clipped to CLIP standard deviations of its column
    assert scaler.context_limit == pytest.approx(CLIP * spread)
    np.testing.assert_allclose(standardised, np.clip(z, -CLIP * spread, CLIP * spread),
                               atol=1e-5)
    assert np.abs(z[:, 1]).max() > CLIP * spread  # the near-constant column is clipped


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


class Gathering:
    """A reducer of a data-parallel fit whose other processes hold ``others``' moments."""

    def __init__(self, others: list[Moments]):
        self.others = others

    def gather(self, tensor):
        import torch

        return torch.stack([tensor, *(torch.from_numpy(m.packed()) for m in self.others)])


def test_the_share_of_rows_at_the_least_value_is_the_same_in_chunks_and_across_processes():
    rng = np.random.default_rng(4)
    counts = rng.poisson([0.2, 2.0, 6.0], (900, 3)).astype(np.float64)
    weights = rng.uniform(1, 5, 900)
    whole = Moments(3)
    whole.add(counts, weights)
    least = counts.min(0)
    expected = ((counts == least) * weights[:, None]).sum(0) / weights.sum()
    np.testing.assert_allclose(whole.floor_shares(), expected, rtol=1e-12)
    parts = [Moments(3) for _ in range(4)]  # chunks whose own least values differ
    for part, rows in zip(parts, np.array_split(np.argsort(counts[:, 2]), 4), strict=True):
        for chunk in np.array_split(rows, 3):
            part.add(counts[chunk], weights[chunk])
    merged = parts[0].across(Gathering(parts[1:]))
    np.testing.assert_allclose(merged.floor_shares(), expected, rtol=1e-12)
    np.testing.assert_array_equal(merged.least, least)
    for a, b in zip(whole.statistics(), merged.statistics(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_sparse_feedback_of_many_columns_is_shifted_and_the_rest_centred():
    """The default feedback origin "sparse": a block of many columns that mostly rest at
    their least value (blank pixels, raw or not) is shifted to non-negative values; a block
    of few such columns (4 columns of clicks: its limit, 3, is above MAX_SHIFT) and a
    measurement (milliseconds, voxel intensities) are centred."""
    assert DEFAULT_ORIGINS == ("mean", "sparse")
    rng = np.random.default_rng(5)
    n = 800
    context = rng.normal(size=(n, 3)).astype(np.float32)
    pixels = rng.uniform(size=(n, 64)) * (rng.uniform(size=(n, 64)) < 0.4)
    clicks = rng.poisson(0.5, (n, 4))
    dwell = 2000.0 + 3000.0 * rng.uniform(size=(n, 2)) + rng.normal(0, 1000, (n, 2))
    for feedback, sparse, shifted_by_default in (
            (pixels, True, True), (35.0 + 0.05 * pixels, True, True),
            (pixels[:, :16], True, False), (clicks, True, False), (dwell, False, False),
            (37.0 + rng.normal(0, 0.3, (n, 64)), False, False)):
        y = np.asarray(feedback, np.float32)
        scaler = Standardiser.of_arrays(context, y, mode="on")
        moments = Moments(y.shape[1])
        moments.add(y)
        assert sparse_block(moments) == sparse
        if shifted_by_default:
            assert scaler.feedback_limit is not None and scaler.feedback_limit <= MAX_SHIFT
            assert scaler.feedback_offset == pytest.approx(scaler.feedback_limit)
            assert scaler.apply_feedback(y).min() >= 0.0
        else:
            assert scaler.feedback_offset == 0.0
            out = scaler.apply_feedback(y)
            assert out.min() < 0.0 < out.max()
        # the other origins keep their meaning whatever the block
        shifted = Standardiser.of_arrays(context, y, mode="on", origins=("mean", "limit"))
        assert shifted.feedback_offset == pytest.approx(shifted.feedback_limit)
        centred = Standardiser.of_arrays(context, y, mode="on", origins=("mean", "mean"))
        assert centred.feedback_offset == 0.0
    moments = Moments(2)
    moments.add(np.full((10, 2), 3.0))
    assert sparse_block(moments)  # constant columns only: nothing to centre


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


LEAST = ("least", "least")
SHIFTED = ("mean", "limit")


def test_blocks_start_at_each_columns_least_value_with_origin_least():
    log = log_of()
    scaler = Standardiser.of_log(log, origins=LEAST)
    centred = Standardiser.of_log(log, origins=SHIFTED)
    for block, values in (("context", log.context), ("feedback", log.feedback)):
        mean, scale = getattr(scaler, f"{block}_mean"), getattr(scaler, f"{block}_scale")
        offset, limit = getattr(scaler, f"{block}_offset"), getattr(scaler, f"{block}_limit")
        x = values.astype(np.float64)
        np.testing.assert_allclose(offset, np.clip((mean - x.min(0)) / scale, 0, limit),
                                   rtol=1e-9, atol=1e-12)
        out = (scaler.apply(values) if block == "context"
               else scaler.apply_feedback(values))
        # the same statistics as centred, shifted per column and clipped no lower than the
        # least value: each column's least value reads 0, none below
        z = (x - mean) / scale
        np.testing.assert_allclose(out, np.clip(z, -offset, limit) + offset, atol=1e-5)
        assert out.min() >= 0.0
        least = x.argmin(0)
        np.testing.assert_allclose(out[least, np.arange(x.shape[1])], 0.0, atol=1e-6)
        np.testing.assert_array_equal(mean, getattr(centred, f"{block}_mean"))
    assert scaler.context_offset[3] == 0.0  # the constant column
    below = log.context[:1] - 1000.0  # a context below the log's least values: clipped to 0
    assert (scaler.apply(below)[0, :3] == 0.0).all()
    # the feedback's origin "limit" shifts by the limit, one number for every column
    assert centred.feedback_offset == centred.feedback_limit and centred.context_offset == 0


def test_a_far_outlier_leaves_the_zero_at_the_clip_limit():
    """A least value farther below the mean than the clip limit (a missing value written as
    0 among milliseconds) does not move the zero: the column starts at the limit below its
    mean, where the outlier is clipped, and a quiet column still starts at its least
    value."""
    rng = np.random.default_rng(5)
    ms = rng.normal(300.0, 60.0, 500)
    ms[7] = 0.0
    pixel = (rng.random(500) < 0.1).astype(float)  # unlit (0) in nine rows in ten
    scaler = Standardiser.of_arrays(np.c_[ms, pixel], mode="on", origins=LEAST)
    limit = scaler.context_limit
    assert scaler.context_offset[0] == pytest.approx(limit)
    assert 0 < scaler.context_offset[1] < limit
    out = scaler.apply(np.c_[ms, pixel])
    assert out[7, 0] == 0.0 and out[:, 0].min() == 0.0
    np.testing.assert_allclose(out[pixel == 0, 1], 0.0, atol=1e-6)
    middle = scaler.apply(np.array([[scaler.context_mean[0], 0.0]]))
    assert middle[0, 0] == pytest.approx(limit, rel=1e-5)


def test_least_values_agree_streamed_and_by_blocks(tmp_path):
    rng = np.random.default_rng(4)
    values = rng.normal(5, 2, (1000, 3))
    whole, parts = Moments(3), Moments(3)
    whole.add(values)
    for rows_ in np.array_split(np.arange(1000), 7):
        parts.add(values[rows_])
    np.testing.assert_array_equal(whole.least, values.min(0))
    np.testing.assert_array_equal(parts.least, values.min(0))
    log = log_of(2000, seed=1)
    write_table(log, tmp_path / "log.npz")
    stream = open_log(tmp_path / "log.npz", StreamSettings(stream="on", block_rows=256))
    streamed = standardiser_of(stream, origins=LEAST)
    memory = standardiser_of(open_log(tmp_path / "log.npz"), origins=LEAST)
    for field in ("context_offset", "feedback_offset"):
        np.testing.assert_allclose(getattr(streamed, field), getattr(memory, field),
                                   rtol=1e-9, atol=1e-12)


def test_per_column_offsets_round_trip_and_damage():
    scaler = Standardiser.of_log(log_of(), origins=LEAST)
    record = scaler.to_dict()
    assert isinstance(record["context_offset"], list) and len(record["context_offset"]) == 4
    again = Standardiser.from_dict(record, "model.json", 4, 2)
    x = log_of(50, seed=9)
    np.testing.assert_array_equal(scaler.apply(x.context), again.apply(x.context))
    np.testing.assert_array_equal(scaler.apply_feedback(x.feedback),
                                  again.apply_feedback(x.feedback))
    old = {key: value for key, value in Standardiser.of_log(log_of()).to_dict().items()
           if key != "context_offset"}  # a model saved before the contexts' offset
    assert Standardiser.from_dict(old, "model.json", 4, 2).context_offset == 0.0
    for damage in ([1.0, 2.0], [1.0, -1.0, 0.0, 0.0], "x", [1.0, float("nan"), 0.0, 0.0]):
        with pytest.raises(IGLearnError, match="standardiser.context_offset.*a list of 4"):
            Standardiser.from_dict({**record, "context_offset": damage}, "m", 4, 2)
    with pytest.raises(IGLearnError, match="origin is 'median'; choose one of mean, limit"):
        check_origin("median")


def rows(rng: np.random.Generator, kind: str, n: int = 2000) -> np.ndarray:
    """A block of 8 columns of one kind of data."""
    if kind == "images":
        return (rng.random((n, 8)) < [0.002, 0.05, 0.3, 0.5, 0.5, 0.7, 0.0, 1.0]).astype(float)
    if kind == "z-scored":
        return rng.normal(size=(n, 8))
    if kind == "one-hot":
        return np.eye(8)[rng.integers(0, 8, n)]
    if kind == "raw":
        return rng.random((n, 8)) * 0.05 + 35
    if kind == "voxels":
        return rng.normal(37.5, 0.02, (n, 8))
    if kind == "counts":
        return rng.poisson(12.0, (n, 8)).astype(float)
    if kind == "clicks":  # counts of a few, averaging 1.3 (above MAX_RMS_MEAN)
        return rng.poisson(1.3, (n, 8)).astype(float)
    if kind == "rare clicks":  # averaging 0.6, a spread of 0.8: on the unit scale
        return rng.poisson(0.6, (n, 8)).astype(float)
    if kind == "milliseconds":
        return rng.normal(300.0, 60.0, (n, 8))
    assert kind == "tiny"
    return rng.normal(0.0, 0.001, (n, 8))


@pytest.mark.parametrize("kind,off", [("images", False), ("z-scored", True),
                                      ("one-hot", False), ("raw", True), ("voxels", True),
                                      ("counts", True), ("clicks", True),
                                      ("rare clicks", False), ("milliseconds", True),
                                      ("tiny", True)])
def test_auto_standardises_blocks_off_the_unit_scale_only(kind, off):
    x = rows(np.random.default_rng(0), kind)
    assert off_scale(x.mean(0), x.std(0)) is off
    scaler = Standardiser.of_arrays(x, mode="auto")
    assert scaler.context_rule == ("auto: off scale" if off else "auto: unit scale")
    out = scaler.apply(x)
    if off:  # centred, of the row spread, then clipped to CLIP standard deviations
        z = (x - scaler.context_mean) / scaler.context_scale
        assert np.abs(z.mean(0)).max() < 1e-6
        np.testing.assert_allclose(z.std(0), column_spread(8), rtol=1e-6)
        limit = CLIP * column_spread(8)
        assert scaler.context_limit == pytest.approx(limit)
        np.testing.assert_allclose(out, np.clip(z, -limit, limit), atol=1e-3)  # float32
    else:  # identity statistics: the values as they are, never clipped
        np.testing.assert_array_equal(scaler.context_mean, 0.0)
        np.testing.assert_array_equal(scaler.context_scale, 1.0)
        assert scaler.context_limit is None
        np.testing.assert_array_equal(out, x.astype(np.float32))
    on = Standardiser.of_arrays(x, mode="on")
    assert on.context_rule == "on"
    assert np.abs(((x - on.context_mean) / on.context_scale).mean(0)).max() < 1e-6
    assert np.abs(on.apply(x)).max() <= on.context_limit


def test_standardised_values_are_clipped_at_clip_standard_deviations():
    """A pixel lit in 1 row of 500 lies about 22 of its column's standard deviations out: it
    is clipped to CLIP of them, and values within them are untouched; rows beyond anything
    the log held (at predict time) are clipped alike."""
    rng = np.random.default_rng(5)
    x = 35 + 0.05 * rng.uniform(size=(500, 16))
    x[:, 3] = 35.0
    x[17, 3] = 35.05
    scaler = Standardiser.of_arrays(x, mode="auto")
    limit = CLIP * column_spread(16)
    assert scaler.context_limit == pytest.approx(limit)
    out = scaler.apply(x)
    assert out[17, 3] == pytest.approx(limit)  # 22 standard deviations, clipped
    z = (x - x.mean(0)) / x.std(0) * column_spread(16)
    np.testing.assert_allclose(out[:, [0, 1, 2]], z[:, [0, 1, 2]], atol=1e-3)  # float32 of 35
    far = scaler.apply(np.full((1, 16), 1e6))
    np.testing.assert_allclose(far, limit)


def test_a_record_without_limits_loads_unclipped_and_a_bad_limit_is_refused():
    """Models saved before clipping keep their behaviour; a damaged limit is one error."""
    x = 35 + 0.05 * np.random.default_rng(6).uniform(size=(200, 4))
    record = Standardiser.of_arrays(x, mode="auto").to_dict()
    assert record["context_limit"] > 0 and record["feedback_limit"] is None
    old = {k: v for k, v in record.items() if not k.endswith("_limit")}
    loaded = Standardiser.from_dict(old, "model.json", 4, 0)
    assert loaded.context_limit is None
    far = np.full((1, 4), 1e6)
    assert loaded.apply(far).min() > 1e3  # not clipped
    for bad in (0, -1.0, True, "4", float("inf")):
        with pytest.raises(IGLearnError, match="standardiser.context_limit"):
            Standardiser.from_dict({**record, "context_limit": bad}, "m", 4, 0)


def test_auto_decides_each_block_on_its_own():
    rng = np.random.default_rng(1)
    x, y = rows(rng, "counts"), rows(rng, "one-hot")
    scaler = Standardiser.of_arrays(x, y, mode="auto")
    assert scaler.rules == {"context": "auto: off scale", "feedback": "auto: unit scale"}
    np.testing.assert_array_equal(scaler.apply_feedback(y), y.astype(np.float32))
    assert Standardiser.of_arrays(x, mode="auto").feedback_rule == "not read"
    again = Standardiser.from_dict(scaler.to_dict(), "model.json", 8, 8)
    assert again.rules == scaler.rules
    np.testing.assert_array_equal(again.apply(x), scaler.apply(x))


@pytest.mark.parametrize("name", ["digits", "action-inclusive-digits", "personalised",
                                  "personalised-continuous", "personalised-many",
                                  "grounded-digits"])
def test_the_built_in_image_and_token_tasks_are_on_the_unit_scale(name):
    log = named_environment(name).log(1000, seed=0)
    assert Standardiser.of_log(log, mode="auto").rules == {"context": "auto: unit scale",
                                                           "feedback": "auto: unit scale"}


@pytest.mark.parametrize(("noise", "rule"), [(0.0, "auto: off scale"),
                                             (0.05, "auto: off scale"),
                                             (0.2, "auto: unit scale")])
def test_the_simulated_bci_is_standardised_where_its_noise_leaves_it_a_small_spread(noise, rule):
    """The BCI's patterns spread 0.02 (no noise) to 0.2 (noise 0.2): below MIN_RMS_STD the
    learners' defaults see too little of them."""
    log = named_environment("bci", noise=noise).log(1000, seed=0)
    assert Standardiser.of_log(log, mode="auto").rules == {"context": rule, "feedback": rule}


def test_a_block_scaled_down_to_a_small_spread_is_standardised():
    """The digits task's images scaled by 0.05 (an RMS spread of 0.01 to 0.014) are off the
    unit scale as much as the same images scaled by 20 are."""
    log = named_environment("digits").log(1000, seed=0)
    for factor in (0.05, 0.5, 20.0):
        scaler = Standardiser.of_arrays(factor * log.context, factor * log.feedback,
                                        mode="auto")
        assert scaler.rules == {"context": "auto: off scale", "feedback": "auto: off scale"}


def test_off_takes_no_statistics_and_an_unknown_mode_is_refused():
    x = rows(np.random.default_rng(2), "raw")
    with pytest.raises(IGLearnError, match="takes no statistics"):
        Standardiser.of_arrays(x, mode="off")
    with pytest.raises(IGLearnError, match="choose one of auto, on, off"):
        Standardiser.of_arrays(x, mode="yes")  # type: ignore[arg-type]
    record = Standardiser.of_arrays(x, mode="auto").to_dict()
    with pytest.raises(IGLearnError, match="standardiser.context_rule"):
        Standardiser.from_dict({**record, "context_rule": "maybe"}, "m", 8, 0)


def test_raw_features_standardise_as_z_scoring_by_hand_does():
    """Raw measurements (35 + 0.05 x) of image-like contexts, with near-constant columns (a
    pixel lit in a few rows) and a constant one, standardise to the z-scores by hand."""
    rng = np.random.default_rng(3)
    x = rng.uniform(size=(500, 6))
    x[:, 4] = 0.0
    x[[7, 90, 311], 4] = [0.5, 1.0, 0.25]  # near-constant
    x[:, 5] = 0.0  # constant
    raw = (35.0 + 0.05 * x).astype(np.float32)
    scaler = Standardiser.of_arrays(raw, mode="auto")
    assert scaler.context_rule == "auto: off scale"
    data = raw.astype(np.float64)
    std = data.std(0)
    hand = (data - data.mean(0)) / np.where(std > 0, std, 1.0)
    limit = CLIP * column_spread(5)
    np.testing.assert_allclose(scaler.apply(raw), np.clip(column_spread(5) * hand, -limit,
                                                          limit), atol=1e-3)
    assert np.abs(hand[:, 4]).max() > 10  # the lit pixel's rare values stand out by hand...
    assert np.abs(scaler.apply(raw)[:, 4]).max() == pytest.approx(limit)  # ... and are clipped
    # the same log z-scored by hand is narrowed the same way ("auto: off scale")
    again = Standardiser.of_arrays(hand.astype(np.float32), mode="auto")
    assert again.context_rule == "auto: off scale"
    np.testing.assert_allclose(again.apply(hand.astype(np.float32)), scaler.apply(raw),
                               atol=1e-3)


def test_raw_values_standardise_to_float32_rounding_of_the_exact_values():
    """Values around 35 with a spread of a few hundredths: the standardised values are those
    of float64 arithmetic up to float32 rounding (the mean taken off in two float32 steps),
    not shifted by the float32 rounding of the mean (up to 4e-5 of a standard deviation)."""
    rng = np.random.default_rng(7)
    raw = (35.0 + 0.05 * rng.uniform(size=(400, 5))).astype(np.float32)
    scaler = Standardiser.of_arrays(raw, (raw[:, :2] + 2.0).astype(np.float32), mode="on")
    data = raw.astype(np.float64)
    exact = (data - scaler.context_mean) / scaler.context_scale
    assert np.abs(scaler.apply(raw) - exact).max() < 1e-6 * np.abs(exact).max() + 1e-7
    feedback = data[:, :2] + 2.0
    exact = np.clip((feedback - scaler.feedback_mean) / scaler.feedback_scale,
                    -scaler.feedback_limit, scaler.feedback_limit) + scaler.feedback_offset
    assert np.abs(scaler.apply_feedback(feedback) - exact).max() < 1e-6


def test_standardised_feedback_is_shifted_to_non_negative_values_and_contexts_stay_centred():
    """Origin "limit": the feedback clipped to ±limit, then shifted by the limit into
    [0, 2 limit]; the shift is the offset the standardiser records. Contexts: centred, no
    offset."""
    log = log_of()
    scaler = Standardiser.of_log(log, origins=SHIFTED)
    limit = scaler.feedback_limit
    assert limit is not None and scaler.feedback_offset == pytest.approx(limit)
    y = log.feedback.astype(np.float64)
    z = np.clip((y - scaler.feedback_mean) / scaler.feedback_scale, -limit, limit)
    out = scaler.apply_feedback(log.feedback)
    np.testing.assert_allclose(out, z + limit, atol=1e-5)
    assert out.min() >= 0.0 and out.max() <= 2 * limit + 1e-6
    assert np.abs(np.average(out - limit, axis=0, weights=1 / log.probability)).max() < 0.05
    context = scaler.apply(log.context)
    assert context.min() < 0 < context.max()  # centred: values on both sides of 0
    # a feedback block left as it is ("auto", on the unit scale) gets no offset
    tokens = np.eye(4, dtype=np.float32)[np.random.default_rng(0).integers(0, 4, 600)]
    kept = Standardiser.of_arrays(log.context, tokens, mode="auto")
    assert kept.feedback_rule == "auto: unit scale" and kept.feedback_offset == 0.0
    np.testing.assert_array_equal(kept.apply_feedback(tokens), tokens)


def test_the_feedback_offset_round_trips_an_old_record_has_none_and_a_bad_one_is_refused():
    log = log_of()
    scaler = Standardiser.of_log(log, origins=SHIFTED)
    record = scaler.to_dict()
    assert record["feedback_offset"] == pytest.approx(scaler.feedback_limit)
    again = Standardiser.from_dict(record, "model.json", 4, 2)
    np.testing.assert_array_equal(again.apply_feedback(log.feedback),
                                  scaler.apply_feedback(log.feedback))
    old = {k: v for k, v in record.items() if k != "feedback_offset"}  # saved before
    before = Standardiser.from_dict(old, "model.json", 4, 2)
    assert before.feedback_offset == 0.0
    np.testing.assert_allclose(before.apply_feedback(log.feedback),
                               scaler.apply_feedback(log.feedback) - scaler.feedback_offset,
                               atol=1e-6)
    for bad in (-0.5, True, "1", float("nan")):
        with pytest.raises(IGLearnError, match="standardiser.feedback_offset"):
            Standardiser.from_dict({**record, "feedback_offset": bad}, "m", 4, 2)



def test_a_block_in_one_unit_has_one_scale_and_keeps_its_columns_relative_spreads():
    """``same_unit``: a standardised block it names gets one scale (the RMS standard
    deviation of its non-constant columns); a constant column is still only centred, the rows
    spread as with a scale each, the other block keeps a scale per column, and a block left
    as it is stays so."""
    rng = np.random.default_rng(4)
    x = rng.uniform(size=(500, 6)) * [1.0, 0.5, 0.1, 0.02, 1.0, 0.0]
    raw = (35.0 + 0.05 * x).astype(np.float32)
    feedback = (rng.uniform(size=(500, 3)) * [1.0, 100.0, 0.01]).astype(np.float32)
    one = Standardiser.of_arrays(raw, feedback, mode="auto", same_unit="context")
    each = Standardiser.of_arrays(raw, feedback, mode="auto")
    assert one.rules == {"context": "auto: off scale, one scale", "feedback": "auto: off scale"}
    np.testing.assert_array_equal(one.feedback_scale, each.feedback_scale)
    std = raw.astype(np.float64).std(0)
    rms = np.sqrt(np.mean(np.square(std[:5])))
    np.testing.assert_allclose(one.context_scale, [rms / column_spread(5)] * 5 + [1.0],
                               rtol=1e-6)
    np.testing.assert_allclose(one.context_mean, each.context_mean)
    def spreads(scaler: Standardiser) -> np.ndarray:  # the columns' before clipping
        return ((raw - scaler.context_mean) / scaler.context_scale).std(0)

    np.testing.assert_allclose(spreads(one)[:5] / spreads(one)[0], std[:5] / std[0],
                               rtol=1e-4)  # the columns keep their relative spreads
    assert np.linalg.norm(spreads(one)) == pytest.approx(np.linalg.norm(spreads(each)),
                                                         rel=1e-4)  # the rows spread alike
    # a block measured in one unit standardises to the same values, whatever the unit
    again = Standardiser.of_arrays((raw * 1000.0 - 7.0).astype(np.float32), mode="auto",
                                   same_unit="both")
    np.testing.assert_allclose(again.apply(raw * 1000.0 - 7.0), one.apply(raw), atol=1e-3)
    record = Standardiser.from_dict(one.to_dict(), "model.json", 6, 3)
    assert record.rules == one.rules
    np.testing.assert_array_equal(record.apply(raw), one.apply(raw))
    # a block on the unit scale is left as it is, named or not
    unit = Standardiser.of_arrays(x.astype(np.float32), mode="auto", same_unit="both")
    assert unit.context_rule == "auto: unit scale"
    with pytest.raises(IGLearnError, match="same_unit is 'yes'; choose one of none, context"):
        Standardiser.of_arrays(raw, mode="auto", same_unit="yes")  # type: ignore[arg-type]
    damaged = {**one.to_dict(), "feedback_rule": "auto: unit scale, one scale"}
    with pytest.raises(IGLearnError, match="standardiser.feedback_rule"):
        Standardiser.from_dict(damaged, "model.json", 6, 3)


def dwell_times(n: int, seed: int, far: float = 0.01) -> np.ndarray:
    """Four columns of dwell times (ms) of rewards drawn 1 in 10, and in a share ``far`` of
    the rows one column (each in turn) holding minutes to an hour (a tab left open)."""
    rng = np.random.default_rng(seed)
    reward = rng.random(n) < 0.1
    dwell = 2000.0 + 3000.0 * reward[:, None] + rng.normal(0.0, 1000.0, (n, 4))
    rows = np.flatnonzero(rng.random(n) < far)
    dwell[rows, np.arange(len(rows)) % 4] = rng.uniform(1e5, 4e6, len(rows))
    return dwell


def test_a_column_of_a_few_far_values_is_scaled_by_its_quartiles():
    """The mean and standard deviation of a column with a few far values describe those
    values: the rows standardised by them would crowd at one value. Such a column is centred
    at its median and scaled by IQR / 1.349; its far values are clipped at the limit, and
    the rest of its rows spread as a clean column's do."""
    clean, noisy = dwell_times(800, 0, far=0.0), dwell_times(800, 0)
    moments = Moments(4)
    moments.add(noisy)
    out, median, robust = moments.outlying()
    assert out.all()  # every column got some far values
    q1, q3 = np.quantile(noisy, [0.25, 0.75], axis=0, method="inverted_cdf")
    np.testing.assert_allclose(median, np.quantile(noisy, 0.5, axis=0, method="inverted_cdf"))
    np.testing.assert_allclose(robust, (q3 - q1) / NORMAL_IQR)
    assert (noisy.std(0) > 20 * robust).all()  # what the mean and std would have used
    scaler = Standardiser.of_arrays(np.zeros((800, 1)), noisy, mode="auto")
    reference = Standardiser.of_arrays(np.zeros((800, 1)), clean, mode="auto")
    body = (noisy < 1e5).all(1)
    z, z_clean = scaler.apply_feedback(noisy), reference.apply_feedback(clean)
    np.testing.assert_allclose(z[body].std(0), z_clean[body].std(0), rtol=0.2)
    np.testing.assert_allclose(z[body].mean(0), z_clean[body].mean(0), atol=0.2)
    np.testing.assert_allclose(z[~body].max(1), scaler.feedback_limit, rtol=1e-6)
    # without the far values, the same log keeps its mean and standard deviation
    assert not Moments.outlying(_moments_of(clean))[0].any()
    np.testing.assert_allclose(reference.feedback_mean, clean.mean(0), rtol=1e-9)
    # the standardiser names the columns, and model.json keeps them
    assert scaler.feedback_outlying == (0, 1, 2, 3) and scaler.context_outlying == ()
    assert reference.feedback_outlying == ()
    record = scaler.to_dict()
    assert record["feedback_outlying"] == [0, 1, 2, 3]
    again = Standardiser.from_dict(record, "model.json", 1, 4)
    assert again.feedback_outlying == (0, 1, 2, 3)
    np.testing.assert_array_equal(again.apply_feedback(noisy), z)
    older = {k: v for k, v in record.items() if not k.endswith("_outlying")}
    assert Standardiser.from_dict(older, "model.json", 1, 4).feedback_outlying == ()
    for damage in ([4], "all", [True], [0.5]):
        with pytest.raises(IGLearnError, match="standardiser.feedback_outlying.*0 to 3"):
            Standardiser.from_dict({**record, "feedback_outlying": damage}, "m", 1, 4)


def _moments_of(values: np.ndarray, weights: np.ndarray | None = None) -> Moments:
    moments = Moments(values.shape[1])
    moments.add(values, weights)
    return moments


@pytest.mark.parametrize("task", ["digits", "action-inclusive-digits", "bci", "personalised"])
def test_no_column_of_the_built_in_tasks_is_outlying(task):
    """An image's lit pixels lie far out of quartiles that its blank pixels set, but in many
    rows, not a few: the tasks' columns, as given and raw, keep their mean and standard
    deviation."""
    for n in (200, 2000):
        log = named_environment(task).log(n, np.random.default_rng(n))
        for block, weights in ((log.context, None), (log.feedback, 1.0 / log.probability)):
            for values in (block, 35.0 + 0.05 * block):
                assert not _moments_of(values, weights).outlying()[0].any()


def test_the_sample_is_the_same_in_blocks_of_any_size_and_streamed(tmp_path):
    """The quartiles come from a uniform sample of at most SAMPLE_ROWS rows (all of a
    smaller log), drawn row by row from a fixed seed: the same in one block, in chunks and
    streamed from disk; pooled across processes, all of their rows where they fit."""
    n = 3 * SAMPLE_ROWS + 17
    values = dwell_times(n, 1)
    weights = np.random.default_rng(2).uniform(1, 5, n)
    whole = _moments_of(values, weights)
    assert len(whole.sample) == SAMPLE_ROWS and whole.rows == n
    parts = Moments(4)
    for rows in np.array_split(np.arange(n), 11):
        parts.add(values[rows], weights[rows])
    np.testing.assert_array_equal(parts.sample, whole.sample)
    np.testing.assert_array_equal(parts.sample_weight, whole.sample_weight)
    single = Moments(4)  # algorithm R as written: one row at a time
    for row in range(n):
        single.add(values[row:row + 1], weights[row:row + 1])
    np.testing.assert_array_equal(single.sample, whole.sample)
    for a, b in zip(whole.moments(), parts.moments(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    # the sample is uniform: its quartiles are the log's, within sampling error
    median = whole.outlying()[1]
    np.testing.assert_allclose(median, np.quantile(values, 0.5, axis=0), rtol=0.05)
    # pooled across processes: the union of samples of logs small enough
    small = values[:600]
    shares = [_moments_of(small[rows]) for rows in np.array_split(np.arange(600), 3)]
    pooled = shares[0].across(Gathering(shares[1:]))
    alone = _moments_of(small)
    assert pooled.rows == 600 and len(pooled.sample) == 600
    for a, b in zip(alone.moments(), pooled.moments(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    # and of larger ones a sample of SAMPLE_ROWS rows, each process's in proportion
    shares = [_moments_of(values[rows]) for rows in np.array_split(np.arange(n), 3)]
    pooled = shares[0].across(Gathering(shares[1:]))
    assert pooled.rows == n and len(pooled.sample) == SAMPLE_ROWS
    assert pooled.outlying()[0].all()
    np.testing.assert_allclose(pooled.outlying()[1], median, rtol=0.05)
    # streamed from disk in blocks of 256 rows: the statistics of the log in memory
    context = np.random.default_rng(3).normal(size=(n, 2)).astype(np.float32)
    log = InteractionLog(context, np.zeros(n, int), np.full(n, 0.5),
                         values.astype(np.float32), 2, source="dwell")
    write_table(log, tmp_path / "log.npz")
    stream = open_log(tmp_path / "log.npz", StreamSettings(stream="on", block_rows=256))
    streamed = standardiser_of(stream, mode="auto")
    memory = standardiser_of(open_log(tmp_path / "log.npz"), mode="auto")
    for field in ("feedback_mean", "feedback_scale"):
        np.testing.assert_allclose(getattr(streamed, field), getattr(memory, field),
                                   rtol=1e-9)
    np.testing.assert_allclose(memory.feedback_mean, np.median(values, 0), rtol=0.05)


def test_auto_reads_far_values_when_it_decides_and_quartiles_when_it_scales():
    """Features on the unit scale but for a few far values (a sensor's glitch): "auto"
    decides on every value, so the block is standardised and the glitches clipped, not fed
    to the models as logged; its body is scaled as if they were absent."""
    rng = np.random.default_rng(6)
    context = rng.normal(0.5, 0.2, (500, 3))
    glitched = context.copy()
    glitched[::100, 0] = 1000.0
    scaler = Standardiser.of_arrays(glitched, mode="auto")
    assert scaler.rules["context"] == "auto: off scale"
    body = np.ones(500, bool)
    body[::100] = False
    z = scaler.apply(glitched)
    assert z[~body, 0].max() == pytest.approx(scaler.context_limit)
    clean = Standardiser.of_arrays(context, mode="on")
    np.testing.assert_allclose(z[body, 0].std(), clean.apply(context)[body, 0].std(), rtol=0.1)
