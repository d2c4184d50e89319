"""Streamed logs: the shuffle buffer, every row once per epoch, bounded memory, shard folders,
and the choice between memory and stream."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iglearn import IGLearnError, InteractionLog
from iglearn.data.formats import convert, open_table, read_log, write_table
from iglearn.data.formats.shards import ShardedReader, write_shards
from iglearn.data.stream import (
    FIT_RESERVE,
    IN_MEMORY_COST,
    MIN_SHUFFLE_ROWS,
    STREAM_COST,
    LogStream,
    StreamSettings,
    batch_sizes,
    fits_in_memory,
    open_log,
    process_bytes,
    row_bytes,
    shuffled_batches,
    stream_sizes,
    table_bytes,
)

N, K = 2500, 4


def numbered_log(n: int = N, source: str = "numbered") -> InteractionLog:
    """A log whose first context entry is the row's number, so rows can be traced."""
    rng = np.random.default_rng(0)
    context = rng.normal(size=(n, 3)).astype(np.float32)
    context[:, 0] = np.arange(n)
    return InteractionLog(context=context, action=rng.integers(0, K, n),
                          probability=np.full(n, 1 / K), feedback=rng.normal(size=(n, 2)),
                          n_actions=K, reward=rng.integers(0, 2, n).astype(np.float32),
                          source=source)


def rows(n: int, block: int):
    return ({"id": np.arange(start, min(start + block, n))} for start in range(0, n, block))


def test_shuffle_is_seeded_and_yields_every_row_once():
    def order(seed: int) -> np.ndarray:
        batches = list(shuffled_batches(rows(1000, 64), 50, 300, np.random.default_rng(seed)))
        assert [len(b["id"]) for b in batches] == [50] * 20
        return np.concatenate([b["id"] for b in batches])

    first = order(1)
    np.testing.assert_array_equal(np.sort(first), np.arange(1000))
    np.testing.assert_array_equal(order(1), first)
    assert not np.array_equal(order(2), first)
    assert not np.array_equal(first, np.arange(1000))


def test_shuffle_buffer_is_bounded_and_mixes_blocks():
    pulled = 0

    def counted():
        nonlocal pulled
        for block in rows(10_000, 100):
            pulled += len(block["id"])
            yield block

    emitted, spread = 0, []
    for batch in shuffled_batches(counted(), 50, 1000, np.random.default_rng(0)):
        emitted += len(batch["id"])
        assert pulled - emitted <= 1000 + 100   # the buffer and one block, never more
        spread.append(len(np.unique(batch["id"] // 100)))
    assert emitted == 10_000 and np.mean(spread) > 8   # a batch draws on many blocks


def test_the_last_two_batches_share_the_rows_left_and_small_logs_shuffle_whole():
    batches = list(shuffled_batches(rows(130, 1000), 50, 4096, np.random.default_rng(0)))
    assert [len(b["id"]) for b in batches] == [50, 40, 40]
    np.testing.assert_array_equal(np.sort(np.concatenate([b["id"] for b in batches])),
                                  np.arange(130))
    assert batch_sizes(1501, 500) == [500, 500, 251, 250]
    assert batch_sizes(1500, 500) == [500] * 3 and batch_sizes(499, 500) == [499]
    assert batch_sizes(0, 500) == []


@pytest.mark.parametrize("block", [1, 7, 64, 2000])
def test_no_streamed_batch_holds_fewer_than_half_a_batch(block):
    """Whatever the blocks and the buffer, an epoch of 1,001 rows in batches of 50 has
    ceil(1001 / 50) batches, none of fewer than 25 rows (one row left over would weigh as
    much in its step as a whole batch)."""
    batches = list(shuffled_batches(rows(1001, block), 50, 120, np.random.default_rng(0)))
    sizes = [len(b["id"]) for b in batches]
    assert len(sizes) == 21 and min(sizes) >= 25 and sum(sizes) == 1001


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The numbered log as Parquet (small row groups), uncompressed .npz and shard folder."""
    folder = tmp_path_factory.mktemp("stream")
    log = numbered_log()
    write_table(log, folder / "log.npz")
    write_table(log, folder / "whole.parquet")
    pq.write_table(pq.read_table(folder / "whole.parquet"), folder / "log.parquet",
                   row_group_size=300)
    write_shards(open_table(folder / "log.npz"), folder / "shards", 700)
    return folder


@pytest.mark.parametrize("name", ["log.parquet", "log.npz", "shards"])
def test_stream_epoch_sees_every_row_once_in_a_seeded_order(stored, name):
    log = numbered_log()
    stream = open_log(stored / name, StreamSettings(stream="on", shuffle_rows=500,
                                                    block_rows=128))
    assert isinstance(stream, LogStream) and len(stream) == N
    np.testing.assert_array_equal(stream.action_counts(), np.bincount(log.action, minlength=K))
    assert stream.min_probability == pytest.approx(1 / K)

    def epoch(seed: int) -> np.ndarray:
        ids = []
        for batch in stream.epoch(100, np.random.default_rng(seed)):
            row = batch["context"][:, 0].astype(int)
            np.testing.assert_array_equal(batch["action"], log.action[row])
            np.testing.assert_allclose(batch["feedback"], log.feedback[row])
            ids.append(row)
        return np.concatenate(ids)

    first = epoch(3)
    np.testing.assert_array_equal(np.sort(first), np.arange(N))
    np.testing.assert_array_equal(epoch(3), first)
    assert not np.array_equal(epoch(4), first)
    chunks = list(stream.chunks(("context", "reward")))
    assert max(len(c["context"]) for c in chunks) <= 700
    np.testing.assert_array_equal(np.concatenate([c["reward"] for c in chunks]), log.reward)


def test_shards_write_and_read_as_one_log(stored, tmp_path):
    names = sorted(p.name for p in (stored / "shards").iterdir())
    assert names == [f"part-{i:05d}.parquet" for i in range(4)]
    assert [pq.ParquetFile(stored / "shards" / name).metadata.num_rows for name in names] == \
        [700, 700, 700, 400]
    log, back = numbered_log(), read_log(stored / "shards")
    np.testing.assert_array_equal(back.context, log.context)
    np.testing.assert_array_equal(back.reward, log.reward)
    convert(stored / "shards", tmp_path / "joined.npz")
    np.testing.assert_array_equal(read_log(tmp_path / "joined.npz").action, log.action)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("keep")
    with pytest.raises(IGLearnError, match="not empty"):
        write_shards(open_table(stored / "log.npz"), tmp_path / "full", 100)
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["notes.txt"]


def test_a_shard_that_differs_is_named(stored, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    for name in ("part-00000.parquet", "part-00001.parquet"):
        (folder / name).write_bytes((stored / "shards" / name).read_bytes())
    other = numbered_log(10)
    write_table(InteractionLog(other.context[:, :2], other.action, other.probability,
                               other.feedback, K, reward=other.reward),
                folder / "part-00002.parquet")
    with pytest.raises(IGLearnError, match="part-00002.parquet: its dimensions"):
        ShardedReader(folder)
    with pytest.raises(IGLearnError, match="its subfolder 'mixed' holds .parquet files"):
        open_table(tmp_path)  # the shards lie one folder down


@pytest.mark.parametrize(("name", "change"), [("shards", "removed"), ("shards", "cut short"),
                                             ("log.parquet", "removed"),
                                             ("log.npz", "removed")])
def test_a_file_removed_or_cut_short_under_an_open_stream_is_named(stored, tmp_path, name,
                                                                    change):
    """A shard deleted or rewritten between opening a streamed log and reading it is named
    with what to do, not an OSError from deep inside pyarrow or numpy."""
    import shutil

    from iglearn import BatchIGL

    copy = tmp_path / name
    (shutil.copytree if (stored / name).is_dir() else shutil.copyfile)(stored / name, copy)
    stream = open_log(copy, StreamSettings(stream="on"))
    victim = copy / "part-00001.parquet" if copy.is_dir() else copy
    if change == "removed":
        victim.unlink()
    else:
        victim.write_bytes(victim.read_bytes()[:500])
    expected = (f"^{re.escape(str(victim))}: could not be read while the log was streamed "
                f".*keep a log's files unchanged")
    with pytest.raises(IGLearnError, match=expected):
        BatchIGL(seed=0).fit(stream)


def test_opening_a_stream_checks_every_value_and_names_the_rows(tmp_path):
    log = numbered_log()
    context = log.context.copy()
    context[2222, 1] = np.nan
    write_table(log, tmp_path / "good.parquet")
    table = pq.read_table(tmp_path / "good.parquet")   # rewritten unchecked, as a foreign tool
    column = pa.FixedSizeListArray.from_arrays(pa.array(context.reshape(-1)), 3)
    pq.write_table(table.set_column(0, "context", column), tmp_path / "bad.parquet",
                   row_group_size=500)
    # the batch of rows 2048-2499 holds it: named by its row in the whole file (it was the
    # batch's row 174)
    expected = r"bad.parquet: field 'context' holds nan at row 2222"
    with pytest.raises(IGLearnError, match=expected):
        open_log(tmp_path / "bad.parquet", StreamSettings(stream="on", block_rows=512))


def test_memory_or_stream_by_size_with_an_override(stored, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the default limit is kept: no warning
        assert isinstance(open_log(stored / "log.parquet"), InteractionLog)  # 2500 rows: small
    # a log no larger than the shuffle buffer is read whole: streaming it saves nothing, and
    # a warning says the limit is not kept
    with pytest.warns(UserWarning, match=r"log.parquet: read into memory, the process takes about "
                                         r"\d\.\d\d GB, above memory_limit_gb 0 "):
        log = open_log(stored / "log.parquet", StreamSettings(memory_limit_gb=0.0))
    assert isinstance(log, InteractionLog)
    # larger than the buffer: auto streams it, and a limit the process exceeds is refused
    with pytest.raises(IGLearnError, match="cannot be kept"):
        open_log(stored / "log.parquet", StreamSettings(memory_limit_gb=0.0, shuffle_rows=500))
    assert isinstance(open_log(stored / "log.npz", StreamSettings(stream="off",
                                                                  memory_limit_gb=0.0)),
                      InteractionLog)
    log = numbered_log(50)
    np.savez_compressed(tmp_path / "packed.npz", context=log.context, action=log.action,
                        probability=log.probability, feedback=log.feedback, n_actions=K)
    with pytest.raises(IGLearnError, match="compressed"):
        open_log(tmp_path / "packed.npz", StreamSettings(stream="on"))
    with pytest.raises(IGLearnError, match="shuffle_rows"):
        StreamSettings(shuffle_rows=0)
    # Ray reads a stream: with stream off it would read nothing, so the pair is refused
    with pytest.raises(IGLearnError, match=r"reader ray reads the log as a stream and stream "
                                           r"off reads it into memory: drop one"):
        open_log(stored / "log.parquet", StreamSettings(stream="off", reader="ray"))


def test_the_limit_a_log_read_into_memory_is_told_to_take_is_one_it_keeps(stored,
                                                                         monkeypatch):
    """The warning of a small log read into memory above the limit rounded the process's
    peak to the nearest hundredth, so 0.503 GB read "0.50", a limit then warned of again;
    it is rounded up, and a limit of that is kept."""
    import iglearn.data.stream as stream

    info = open_table(stored / "log.parquet").info
    held = int(0.503 * 2**30 - FIT_RESERVE - IN_MEMORY_COST * table_bytes(info))
    monkeypatch.setattr(stream, "fit_start_bytes", lambda: held)
    with pytest.warns(UserWarning, match=r"takes about \d\.\d\d GB") as told:
        open_log(stored / "log.parquet", StreamSettings(memory_limit_gb=0.3))
    gb = re.search(r"takes about (\d\.\d\d) GB", str(told[0].message)).group(1)
    assert gb == "0.51"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(open_log(stored / "log.parquet",
                                   StreamSettings(memory_limit_gb=float(gb))), InteractionLog)


@pytest.mark.slow  # starts Ray
def test_ray_data_reads_the_shards(stored):
    pytest.importorskip("ray")
    import ray

    # a log this small is read into memory by stream auto, but Ray reads it as a stream
    stream = open_log(stored / "shards", StreamSettings(reader="ray", shuffle_rows=500,
                                                        block_rows=128))
    assert isinstance(stream, LogStream)
    try:
        ids = np.concatenate([b["context"][:, 0] for b in stream.epoch(100,
                                                                     np.random.default_rng(0))])
        np.testing.assert_array_equal(np.sort(ids), np.arange(N))
        rewards = sum(float(c["reward"].sum()) for c in stream.chunks(("reward",)))
        assert rewards == pytest.approx(float(numbered_log().reward.sum()))
    finally:
        ray.shutdown()


def empty_shards(stored, folder):
    """Empty Parquet shards beside the stored ones: one with a 0-row row group, one with no
    row group at all, and an empty shard first in name order."""
    table = pq.read_table(stored / "shards" / "part-00000.parquet").slice(0, 0)
    pq.write_table(table, folder / "a-empty.parquet")
    pq.ParquetWriter(folder / "part-00001b.parquet", table.schema).close()
    pq.write_table(table, folder / "zz-empty.parquet", row_group_size=10)
    return ["a-empty.parquet", "part-00001b.parquet", "zz-empty.parquet"]


@pytest.mark.parametrize("stream", ["on", "off"])
def test_empty_shards_are_skipped(stored, tmp_path, stream):
    folder = tmp_path / "shards"
    folder.mkdir()
    for path in (stored / "shards").iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    empty_shards(stored, folder)
    log = numbered_log()
    opened = open_log(folder, StreamSettings(stream=stream, block_rows=256))
    assert len(opened) == N
    if isinstance(opened, LogStream):
        ids = np.concatenate([b["context"][:, 0] for b in opened.epoch(64,
                                                                      np.random.default_rng(0))])
        np.testing.assert_array_equal(np.sort(ids), np.arange(N))
        rewards = np.concatenate([c["reward"] for c in opened.chunks(("reward",))])
        np.testing.assert_array_equal(rewards, log.reward)
        assert opened.min_probability == pytest.approx(1 / K)
    else:
        np.testing.assert_array_equal(opened.context, log.context)


@pytest.mark.parametrize("stream", ["on", "off", "auto"])
def test_logs_without_rows_are_refused_in_one_line(stored, tmp_path, stream):
    folder = tmp_path / "all-empty"
    folder.mkdir()
    empty_shards(stored, folder)
    pq.write_table(pq.read_table(stored / "whole.parquet").slice(0, 0), tmp_path / "e.parquet")
    np.savez(tmp_path / "e.npz", context=np.zeros((0, 3), np.float32),
             action=np.zeros(0, np.int64), probability=np.zeros(0), feedback=np.zeros((0, 2)),
             n_actions=K)
    (tmp_path / "e.csv").write_text("context_0,context_1,context_2,action,probability,"
                                    "feedback_0,feedback_1,n_actions\n")
    for path in (folder, tmp_path / "e.parquet", tmp_path / "e.npz", tmp_path / "e.csv"):
        # a CSV file asked to stream is refused as such before it is read
        refusal = ("can be streamed" if stream == "on" and path.suffix == ".csv"
                   else "empty|no rows")
        with pytest.raises(IGLearnError, match=refusal) as error:
            open_log(path, StreamSettings(stream=stream))
        assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_the_memory_limit_bounds_the_process_and_sizes_the_stream():
    info = open_table.__globals__["TableInfo"]("big", 10_000_000, K, ("context", "action",
                                               "probability", "feedback"),
                                               {"context": 64, "feedback": 16})
    row = row_bytes(info)
    assert row == 4 * 64 + 8 + 8 + 4 * 16 and table_bytes(info) == 10_000_000 * row
    gb = 2**30
    held = gb // 2
    # in memory only when what the process holds plus the fit's cost stays below the limit
    fits = (held + FIT_RESERVE + IN_MEMORY_COST * table_bytes(info)) / gb
    assert fits_in_memory(info, StreamSettings(memory_limit_gb=fits + 0.01), held)
    assert not fits_in_memory(info, StreamSettings(memory_limit_gb=fits - 0.01), held)
    # a generous limit keeps the settings' sizes
    assert stream_sizes(info, StreamSettings(memory_limit_gb=2.0), held, 65536) == (65536, 8192)
    # a tighter one lowers the shuffle buffer (and the block) to what fits, for every limit
    for limit in (0.73, 0.71, 0.695):
        settings = StreamSettings(memory_limit_gb=limit)
        shuffle, block = stream_sizes(info, settings, held, 4096)
        assert MIN_SHUFFLE_ROWS <= shuffle < 65536 and block == min(8192, shuffle)
        peak = held + FIT_RESERVE + STREAM_COST * row * (shuffle + 4096)
        assert peak <= limit * gb < peak + STREAM_COST * row * 2
    # a limit the process cannot keep is refused, naming the limit and what it holds
    with pytest.raises(IGLearnError, match=r"memory_limit_gb 0.5 .*holds 0.50 GB") as error:
        stream_sizes(info, StreamSettings(memory_limit_gb=0.5), held, 4096)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("name", ["wide.parquet", "wide.npz", "wide"])
def test_a_stream_under_a_tight_limit_reads_smaller_buffers_and_still_every_row(tmp_path, name):
    n, rng = 3000, np.random.default_rng(0)
    context = rng.normal(size=(n, 512)).astype(np.float32)
    context[:, 0] = np.arange(n)
    log = InteractionLog(context=context, action=rng.integers(0, K, n),
                         probability=np.full(n, 1 / K), feedback=rng.normal(size=(n, 2)),
                         n_actions=K)
    write_table(log, tmp_path / "wide.npz")
    convert(tmp_path / "wide.npz", tmp_path / "whole.parquet")
    pq.write_table(pq.read_table(tmp_path / "whole.parquet"), tmp_path / "wide.parquet",
                   row_group_size=500)
    write_shards(open_table(tmp_path / "wide.npz"), tmp_path / "wide", 500)
    row = 4 * 512 + 8 + 8 + 4 * 2
    held = process_bytes()
    limit = (held + FIT_RESERVE + STREAM_COST * row * (2000 + 512)) / 2**30
    stream = open_log(tmp_path / name, StreamSettings(stream="on", memory_limit_gb=limit,
                                                      block_rows=512))
    assert isinstance(stream, LogStream)
    assert MIN_SHUFFLE_ROWS <= stream.settings.shuffle_rows < n   # lowered, not below MIN
    assert stream.settings.block_rows == 512
    ids = np.concatenate([b["context"][:, 0] for b in stream.epoch(100,
                                                                   np.random.default_rng(0))])
    np.testing.assert_array_equal(np.sort(ids), np.arange(n))
    with pytest.raises(IGLearnError, match="cannot be kept"):
        open_log(tmp_path / name, StreamSettings(stream="on", memory_limit_gb=held / 2**30))


def test_a_stream_keeps_the_feature_schema_and_a_learner_fitted_on_it_reads_frames_by_it(
        tmp_path):
    """A table converted with a column mapping keeps it as its feature schema: streamed, as
    in memory, a learner keeps it and reads a DataFrame by the table's own column names."""
    from iglearn import BatchIGL
    from iglearn.data.frames import ColumnMapping

    log = numbered_log(200)
    frame = pd.DataFrame({"age": log.context[:, 0], "clicks": log.context[:, 1],
                          "height": log.context[:, 2], "arm": log.action,
                          "p": log.probability, "rt": log.feedback[:, 0],
                          "taps": log.feedback[:, 1]})
    frame.to_csv(tmp_path / "own.csv", index=False)
    convert(tmp_path / "own.csv", tmp_path / "own.parquet", columns=ColumnMapping(
        context=("age", "clicks", "height"), feedback=("rt", "taps"), action="arm",
        probability="p", n_actions=K))
    stream = open_log(tmp_path / "own.parquet", StreamSettings(stream="on"))
    assert isinstance(stream, LogStream)
    schema = read_log(tmp_path / "own.parquet").schema
    assert schema is not None and stream.schema == schema
    learner = BatchIGL(seed=0)
    learner.take_statistics(stream)
    assert learner.schema_ == schema
    np.testing.assert_allclose(learner.contexts_of(frame[["age", "clicks", "height"]]),
                               log.context)


def test_open_log_reads_a_table_in_the_users_own_column_names(tmp_path):
    """open_log takes the column mapping and K that `iglearn fit` takes as options (its
    message about a missing K said to pass n_actions=, which it did not take), reading the
    table as InteractionLog.from_frame reads it."""
    from iglearn.data.frames import ColumnMapping
    from tests.data.test_frames import MAPPING, user_frame

    frame, _ = user_frame(200)
    frame.to_csv(tmp_path / "user.csv", index=False)
    with pytest.raises(IGLearnError, match="pass n_actions="):
        open_log(tmp_path / "user.csv")
    columns = ColumnMapping(context=("age", "clicks"), feedback=("emg_*",), action="arm",
                            probability="p")
    log = open_log(tmp_path / "user.csv", columns=columns, n_actions=3)
    expected = InteractionLog.from_frame(frame, **MAPPING)
    assert isinstance(log, InteractionLog) and log.schema == expected.schema
    np.testing.assert_allclose(log.context, expected.context)
    np.testing.assert_array_equal(log.action, expected.action)


def test_a_model_given_a_streamed_log_to_predict_on_says_what_to_give(tmp_path):
    from iglearn import BatchIGL
    from iglearn.learners.training import Optimisation

    log = numbered_log()
    write_table(log, tmp_path / "log.parquet")
    stream = open_log(tmp_path / "log.parquet", StreamSettings(stream="on"))
    quick = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = BatchIGL(seed=0, optimisation=quick).fit(log)
    with pytest.raises(IGLearnError, match=r"log\.parquet: a log streamed from disk is for a "
                                           r"fit; predict on contexts in memory"):
        model.predict(stream)


@pytest.mark.slow  # starts Ray
def test_ray_data_keeps_its_notices_off_standard_error(stored):
    """Ray's own lines (token authentication, three INFO lines per pass over the log, the
    progress bars it does not show) would bury a command's output: none reaches stderr."""
    pytest.importorskip("ray")
    script = f"""
import numpy as np
import ray
from iglearn.data.stream import StreamSettings, open_log
stream = open_log({str(stored / "shards")!r}, StreamSettings(reader="ray", shuffle_rows=500,
                                                              block_rows=128))
rows = [sum(len(b["context"]) for b in stream.epoch(100, np.random.default_rng(seed)))
        for seed in range(2)]
ray.shutdown()
print(rows)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"[{N}, {N}]"
    assert done.stderr.strip() == "", done.stderr


def test_a_stream_of_a_file_that_cannot_stream_is_refused_before_it_is_read(tmp_path):
    """A CSV file was parsed whole (146 MB of text: 4 s and 0.65 GB) before being told it
    cannot be streamed; one too large for memory never got the message. The refusal now
    comes first: a file that would not even parse gets it."""
    from iglearn.data.frames import ColumnMapping

    (tmp_path / "log.csv").write_text('"unclosed\n1,2,3\n')
    (tmp_path / "own.parquet").write_bytes(b"not parquet at all")
    on = StreamSettings(stream="on")
    with pytest.raises(IGLearnError, match=r"log\.csv: only Parquet files, folders of Parquet "
                                           r"shards and \.npz files can be streamed"):
        open_log(tmp_path / "log.csv", on)
    with pytest.raises(IGLearnError, match=r"own\.parquet: a table read by its own column "
                                           r"names \(the column options, or a Parquet table "
                                           r"iglearn did not write\) is read in memory"):
        open_log(tmp_path / "own.parquet", on, columns=ColumnMapping(context=("x",)))


def test_a_log_too_large_for_the_limit_that_cannot_stream_says_so_with_both_fixes(tmp_path):
    """Without stream on, a CSV file (a compressed .npz, a table read by its own column
    names) whose fit in memory would pass the limit was refused as if a stream had been
    asked ("only Parquet files ... can be streamed"); the refusal says the limit was passed,
    and gives both ways out: convert the file, or raise the limit to what the process would
    take."""
    from iglearn.data.frames import ColumnMapping

    log = numbered_log()
    write_table(log, tmp_path / "log.csv")
    frame = pd.DataFrame({"x0": log.context[:, 0], "x1": log.context[:, 1],
                          "x2": log.context[:, 2], "arm": log.action, "p": log.probability,
                          "y0": log.feedback[:, 0], "y1": log.feedback[:, 1]})
    frame.to_parquet(tmp_path / "own.parquet", index=False)
    mapping = ColumnMapping(context=("x0", "x1", "x2"), feedback=("y0", "y1"), action="arm",
                            probability="p")
    np.savez_compressed(tmp_path / "packed.npz", context=log.context, action=log.action,
                        probability=log.probability, feedback=log.feedback, n_actions=K)
    tight = StreamSettings(memory_limit_gb=0.0, shuffle_rows=500)
    for path, columns, what in ((tmp_path / "log.csv", None, "a .csv file"),
                                (tmp_path / "packed.npz", None, "a compressed .npz file"),
                                (tmp_path / "own.parquet", mapping,
                                 "a table read by its own column names")):
        with pytest.raises(IGLearnError) as error:
            open_log(path, tight, columns=columns, n_actions=K)
        message = str(error.value)
        assert re.match(rf"{re.escape(str(path))}: read into memory, the process would take "
                        rf"about (\d\.\d\d) GB, above memory_limit_gb 0 \(--memory-limit-gb\), "
                        rf"and {what}", message), message
        assert "iglearn convert LOG LOG.parquet" in message and "raise the limit to" in message
        assert "\n" not in message


def test_a_stream_shows_its_opening_check_and_a_learner_its_statistics_pass(tmp_path, capsys):
    """Both whole passes before a streamed fit's first step showed nothing, whatever the
    learner's ``progress``; each now shows the rows it has read when asked, and only then."""
    from iglearn import ContextualBandit

    path = tmp_path / "log.parquet"
    write_table(numbered_log(), path)
    quiet = open_log(path, StreamSettings(stream="on"))
    ContextualBandit(seed=0).take_statistics(quiet)
    assert capsys.readouterr().err == ""
    log = open_log(path, StreamSettings(stream="on"), progress=True)
    err = capsys.readouterr().err
    assert f"checking {path}: 0/{N} (0 %), starting" in err
    assert f"checking {path}: {N}/{N} (100 %) done in" in err and "statistics" not in err
    ContextualBandit(seed=0, progress=True).take_statistics(log)
    err = capsys.readouterr().err
    assert f"statistics of {path}: {N}/{N} (100 %) done in" in err and "checking" not in err


def test_a_file_of_many_small_row_groups_is_read_in_blocks_of_several(tmp_path):
    """A Parquet file written a few rows at a time (row groups of 7 rows) was read a row
    group at a time, each a record batch of its own: a streamed fit of 3,000 such rows took
    14 s where 1,000-row groups took 1. Consecutive small groups are now one piece, read
    together and cut into blocks of ``block_rows``; every row is still read once, in file
    order by ``chunks`` and once an epoch."""
    log = numbered_log()
    write_table(log, tmp_path / "whole.parquet")
    pq.write_table(pq.read_table(tmp_path / "whole.parquet"), tmp_path / "small.parquet",
                   row_group_size=7)
    assert pq.ParquetFile(tmp_path / "small.parquet").metadata.num_row_groups == -(-N // 7)
    stream = open_log(tmp_path / "small.parquet", StreamSettings(stream="on", block_rows=1000,
                                                                 shuffle_rows=500))
    assert isinstance(stream, LogStream)
    sizes = [len(chunk["action"]) for chunk in stream.chunks()]
    assert sum(sizes) == N and len(sizes) <= 2 * (-(-N // 1000)) and max(sizes) <= 1000
    order = np.concatenate([chunk["context"][:, 0] for chunk in stream.chunks()]).astype(int)
    np.testing.assert_array_equal(order, np.arange(N))
    seen = np.concatenate([batch["context"][:, 0] for batch in
                           stream.epoch(100, np.random.default_rng(0))]).astype(int)
    np.testing.assert_array_equal(np.sort(seen), np.arange(N))
    assert (seen != np.arange(N)).any()  # shuffled


def test_row_groups_are_read_together_while_their_rows_stay_within_a_block():
    from iglearn.data.stream import piece_groups

    assert piece_groups([7] * 5, 20) == [[0, 1], [2, 3], [4]]
    assert piece_groups([300, 7, 7, 0, 400, 5], 100) == [[0], [1, 2], [4], [5]]
    assert piece_groups([0, 0], 100) == []
