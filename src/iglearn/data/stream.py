"""Logs larger than memory, read as a stream: shuffled mini-batches and full passes whose
memory does not grow with the log.

A :class:`LogStream` reads a log on disk piece by piece. A piece is a Parquet row group (of one
file, or of every shard of a folder, found with ``pyarrow.dataset``) or a block of
``StreamSettings.block_rows`` rows of an uncompressed ``.npz`` (read at its position in the
file, as a memory map would address it, but with plain reads, so that the pages read do not
stay in the process's memory). It offers what a fit needs:

- :meth:`LogStream.epoch`: every row once, in shuffled mini-batches. The pieces are read in
  a random order, and their rows pass through a shuffle buffer of
  ``StreamSettings.shuffle_rows`` rows from which each mini-batch is drawn at random
  (:func:`shuffled_batches`). Memory: the buffer and one piece.
- :meth:`LogStream.chunks`: every row once, in file order, a piece at a time, for the full
  passes (the corrector's statistic, the indicator, evaluation), computed as sums over
  pieces.

With ``StreamSettings.reader`` ray, Ray Data reads the Parquet files instead (on a Ray
cluster, for logs on shared storage): it shuffles the order of its blocks, and the record
batches its tasks decode stream to this process through the same shuffle buffer.

Opening a stream reads the log once to check it as reading it into memory would (every
value; error messages name the rows) and to count each action's interactions and find the
smallest logged probability, which the learners' warnings and Lemma 5's bound read.

:func:`open_log` chooses between the two paths: the log in memory
(:class:`~iglearn.data.logs.InteractionLog`) when it is small, a stream when it is large, by
``StreamSettings.stream`` and ``StreamSettings.memory_limit_gb``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from iglearn.data.formats.base import DTYPES, FeatureSchema, TableInfo, TableReader
from iglearn.data.logs import InteractionLog, importance_weight_sums
from iglearn.errors import IGLearnError, warn_caller
from iglearn.hints import check_fields

if TYPE_CHECKING:
    from iglearn.data.frames import ColumnMapping

Block = dict[str, np.ndarray]
"""Rows of some fields of a log: one array per field, all with the same number of rows."""


@dataclass(frozen=True)
class StreamSettings:
    """How a log is read for a fit (or an evaluation): into memory, or streamed from disk."""

    stream: Literal["auto", "on", "off"] = "auto"
    """on: stream the log from disk (memory independent of its size); off: read it into
    memory; auto: stream when reading it into memory would take the process above
    memory_limit_gb (and streaming would take less)."""
    memory_limit_gb: float = 2.0
    """Most memory (GB of resident memory) the whole process may take at its peak while it
    streams the log: what it already holds when the log is opened plus the stream's buffers,
    whose sizes (a fit's shuffle_rows, block_rows) are lowered to fit; a limit the process
    cannot keep is refused before any reading. With stream auto, a log is read into memory
    only when the process would stay below it (what it holds plus IN_MEMORY_COST times the
    log's fields)."""
    shuffle_rows: int = 65536
    """Most rows of the shuffle buffer each streamed mini-batch is drawn from (fewer when
    memory_limit_gb needs it)."""
    block_rows: int = 8192
    """Most rows a stream reads at once (an .npz block, or a read within a Parquet row
    group; fewer when memory_limit_gb needs it)."""
    reader: Literal["local", "ray"] = "local"
    """Who reads the rows of each epoch and full pass: local (pyarrow in this process) or ray
    (Ray Data tasks on a Ray cluster, for Parquet logs on shared storage; needs the ray
    extra). Ray reads a stream, so with ray stream auto streams a log of any size and stream
    off is refused."""
    ray_address: str | None = None
    """The Ray cluster of reader ray and of a fit with --backend ray (None: the running one,
    else a local instance)."""

    def __post_init__(self) -> None:
        if self.stream not in ("auto", "on", "off"):
            raise IGLearnError(f"stream must be auto, on or off, got {self.stream!r}")
        if self.reader not in ("local", "ray"):
            raise IGLearnError(f"reader must be local or ray, got {self.reader!r}")
        check_fields(self, positive=("shuffle_rows", "block_rows"),
                     non_negative=("memory_limit_gb",))


def row_bytes(info: TableInfo) -> int:
    """Bytes one row of the fields of ``info`` takes in memory (in iglearn's types)."""
    return sum(np.dtype(DTYPES[name]).itemsize * info.dims.get(name, 1) for name in info.fields)


def table_bytes(info: TableInfo) -> int:
    """Bytes the fields of ``info`` take in memory (in iglearn's types)."""
    return info.n_rows * row_bytes(info)


IN_MEMORY_COST = 2.1
"""Bytes a fit in memory adds to the process per byte of the log's fields, measured: the peak
resident memory of ``iglearn fit LOG --stream off --max-steps 40`` (``/usr/bin/time -v``) for
logs of 2,000, 40,000 and 120,000 rows of K = 5, 256 + 256 standard normal values, grew by
2.06 (.npz) and 2.02 (Parquet) bytes per byte of fields: the arrays read, the standardised
copies of the contexts and the feedback, the mini-batches; the fingerprint and sketches of
model.json are hashed a block at a time and add nothing that grows with the log."""

STREAM_COST = 2
"""Bytes a streamed fit adds to the process per byte of its shuffle buffer and of the piece
it reads at once: the buffer and the mini-batches drawn from it, the piece as read and in
iglearn's types, the standardised block."""

FIT_RESERVE = 192 * 2**20
"""Bytes a fit adds to the process beyond its data, whatever the log's size: the reader's
memory (Arrow's pool, its threads), torch's first operations, the models, the optimiser and
the full passes' sums (a fit of a 64 + 16-dimensional log, streamed or in memory, peaks about
180 MB above what the process held when the log was opened, benchmarks/stream_memory.md)."""

FIT_IMPORTS = 240 * 2**20
"""Bytes the imports of a fit add to a process that has not made them yet (torch, about 180
MB resident, and pyarrow's datasets, about 45 MB): the command line sizes its stream before
it imports torch, so that a bad log is told at once, and counts them here
(:func:`fit_start_bytes`)."""

MIN_SHUFFLE_ROWS = 1024
"""Fewest rows of a shuffle buffer sized down to a memory limit: fewer would shuffle the log
too coarsely; a limit that leaves less room is refused."""


def fit_start_bytes() -> int:
    """What a fit starts from: this process's resident memory now, and :data:`FIT_IMPORTS`
    while torch is not imported yet."""
    import sys

    return process_bytes() + (0 if "torch" in sys.modules else FIT_IMPORTS)


def process_bytes() -> int:
    """Resident memory of this process now, in bytes (its peak so far where the current
    figure cannot be read)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def stream_sizes(info: TableInfo, settings: StreamSettings, held: int,
                 piece_rows: int = 0) -> tuple[int, int]:
    """(shuffle_rows, block_rows) of a stream of ``info`` that keeps a process holding
    ``held`` bytes below ``settings.memory_limit_gb`` at its peak: the settings' sizes, lowered
    to fit (``piece_rows``: the most rows the reader decodes at once, a Parquet row group); an
    error naming the limit, what the process holds and what the stream needs when even
    MIN_SHUFFLE_ROWS do not fit."""
    row = max(row_bytes(info), 1)
    limit = int(settings.memory_limit_gb * 2**30)
    room = (limit - held - FIT_RESERVE) // (STREAM_COST * row) - piece_rows
    shuffle, block = settings.shuffle_rows, settings.block_rows
    if room < min(shuffle, info.n_rows):   # lowered to fit: the block no larger than the buffer
        shuffle = min(shuffle, info.n_rows, max(room, MIN_SHUFFLE_ROWS))
        block = min(block, shuffle)
    need = held + FIT_RESERVE + STREAM_COST * row * (min(shuffle, info.n_rows) + piece_rows)
    if need > limit:
        raise IGLearnError(
            f"{info.source}: memory_limit_gb {settings.memory_limit_gb:g} (--memory-limit-gb) "
            f"cannot be kept: the process holds {held / 2**30:.2f} GB (with what a fit "
            f"imports) and a stream of this log needs "
            f"{math.ceil(need / 2**30 * 100) / 100:.2f} GB at least; raise the limit")
    return shuffle, block


def in_memory_bytes(info: TableInfo, held: int) -> int:
    """The peak of a process holding ``held`` bytes that fits ``info`` read into memory."""
    return int(held + FIT_RESERVE + IN_MEMORY_COST * table_bytes(info))


def fits_in_memory(info: TableInfo, settings: StreamSettings, held: int) -> bool:
    """Whether stream auto reads ``info`` into memory: a fit in memory keeps a process holding
    ``held`` bytes below ``settings.memory_limit_gb``, or the log is no larger than a stream's
    buffer (streaming it would save nothing)."""
    return (in_memory_bytes(info, held) <= settings.memory_limit_gb * 2**30
            or info.n_rows <= settings.shuffle_rows)


def open_log(path: str | Path, settings: StreamSettings | None = None, *,
             columns: ColumnMapping | None = None, n_actions: int | None = None,
             progress: bool = False) -> InteractionLog | LogStream:
    """The interaction log in ``path`` (a file or a folder of Parquet shards), in memory or
    streamed as ``settings`` say (:func:`log_from`). Learners fit either. ``columns``: which
    columns of a ``.csv`` or ``.parquet`` table hold which field (a table in the user's own
    column names, read in memory), as ``iglearn fit``'s column options say; ``n_actions``: K,
    for a table that does not say it; ``progress``: a stream shows the progress of its
    opening check (:class:`LogStream`). A stream asked of a file that cannot be streamed is
    refused before the file is read (a CSV file too large for memory would not get there)."""
    from iglearn.data.formats import open_table

    if settings is not None and settings.stream == "on":
        suffix = Path(path).suffix.lower()
        if columns is not None or (suffix not in STREAMED and not Path(path).is_dir()):
            raise unstreamable(str(path), columns is not None)
    return log_from(open_table(path, columns=columns, n_actions=n_actions), settings,
                    progress)


STREAMED = (".parquet", ".npz")
"""The extensions of the files a stream reads (and folders of Parquet shards)."""


def unstreamable(source: str, mapped: bool) -> IGLearnError:
    """The refusal of a stream of ``source``, a table that is read in memory: one read by its
    own column names (``mapped``: the column options, or a Parquet table without the K of
    iglearn's layout in its metadata), or a file of another format."""
    if mapped:
        return IGLearnError(f"{source}: a table read by its own column names (the column "
                            f"options, or a Parquet table iglearn did not write) is read in "
                            f"memory, not streamed; convert it to iglearn's layout first, with "
                            f"the same column options if any (iglearn convert LOG "
                            f"LOG2.parquet --context ...), and stream that")
    return IGLearnError(f"{source}: only Parquet files, folders of Parquet shards and .npz "
                        f"files can be streamed; convert it first (iglearn convert LOG "
                        f"LOG.parquet)")


def log_from(reader: TableReader, settings: StreamSettings | None = None,
             progress: bool = False) -> InteractionLog | LogStream:
    """The log ``reader`` reads: a :class:`LogStream` when ``settings.stream`` is on, or auto
    and a fit in memory would take the process above ``settings.memory_limit_gb``
    (:func:`fits_in_memory`), or ``settings.reader`` is ray; else the log in memory.
    ``progress``: a stream shows the progress of its opening check."""

    settings = settings or StreamSettings()
    info = reader.info
    if not info.is_log:
        raise IGLearnError(f"{info.source}: holds contexts only; fitting needs a log with "
                           f"action, probability and feedback")
    if settings.reader == "ray":  # Ray Data reads a stream: a log in memory would not use it
        if settings.stream == "off":
            raise IGLearnError("reader ray reads the log as a stream and stream off reads it "
                               "into memory: drop one of them (--reader ray, --stream off)")
        return LogStream(reader, settings, progress)
    held = fit_start_bytes()
    large = not fits_in_memory(info, settings, held)
    peak = in_memory_bytes(info, held)
    if settings.stream == "auto" and large and not streamable(reader):
        gb = math.ceil(peak / 2**30 * 100) / 100
        raise IGLearnError(f"{info.source}: read into memory, the process would take about "
                           f"{gb:.2f} GB, above memory_limit_gb {settings.memory_limit_gb:g} "
                           f"(--memory-limit-gb), and {unstreamed(reader)} cannot be "
                           f"streamed; convert it to iglearn's Parquet layout first (iglearn "
                           f"convert LOG LOG.parquet, with the same column options if any) "
                           f"and give that, or raise the limit to {gb:.2f}")
    if settings.stream == "on" or (settings.stream == "auto" and large):
        return LogStream(reader, settings, progress)
    if settings.stream == "auto" and peak > settings.memory_limit_gb * 2**30:
        gb = math.ceil(peak / 2**30 * 100) / 100  # rounded up: a limit of that is kept
        warn_caller(f"{info.source}: read into memory, the process takes about {gb:.2f} GB, "
                    f"above memory_limit_gb {settings.memory_limit_gb:g} "
                    f"(--memory-limit-gb), since streaming this small a log would take no "
                    f"less; raise the limit to that")
    log = reader.checked(reader.arrays())
    assert isinstance(log, InteractionLog)
    return log


def streamable(reader: TableReader) -> bool:
    """Whether a :class:`LogStream` reads ``reader``'s table: a Parquet file or a folder of
    shards in iglearn's layout, or an ``.npz`` whose members are stored uncompressed."""
    from iglearn.data.formats.npz import NpzReader
    from iglearn.data.formats.parquet import ParquetReader
    from iglearn.data.formats.shards import ShardedReader

    if isinstance(reader, NpzReader):
        return all(reader.stored_plainly(name) for name in reader.info.fields)
    return isinstance(reader, ShardedReader | ParquetReader)


def unstreamed(reader: TableReader) -> str:
    """What ``reader`` reads that a stream does not, for messages: a table read by its own
    column names, a compressed ``.npz``, or a file of another format."""
    from iglearn.data.formats.columns import MappedParquetReader
    from iglearn.data.formats.npz import NpzReader

    if isinstance(reader, MappedParquetReader):
        return "a table read by its own column names (the column options)"
    if isinstance(reader, NpzReader):
        return "a compressed .npz file"
    suffix = Path(reader.info.source).suffix.lower()
    return f"a {suffix} file" if suffix else "such a file"


def changed_on_disk(path: str | Path, error: BaseException) -> IGLearnError:
    """The error of a file of a streamed log that could not be read after the log was opened:
    it was removed, replaced or cut short before the fit read it again."""
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return IGLearnError(f"{path}: could not be read while the log was streamed ({reason}); it "
                        f"was removed or changed after the log was opened: keep a log's files "
                        f"unchanged until the fit ends, then run it again")


class _Pieces:
    """The pieces of a log on disk: their rows, and a reader of each."""

    rows: list[int]

    def read(self, piece: int, fields: Sequence[str], reuse: bool = False) -> Iterator[Block]:
        """The rows of ``piece``, in blocks of at most ``block_rows`` rows; with ``reuse``, a
        block may be overwritten by the next one (the caller copies what it keeps)."""
        raise NotImplementedError


class _ParquetPieces(_Pieces):
    """The row groups of Parquet files, as a ``pyarrow.dataset`` lists them, consecutive small
    ones of a file read together (:func:`piece_groups`)."""

    def __init__(self, paths: Sequence[Path], block_rows: int):
        import pyarrow.dataset as ds

        self.paths = list(paths)
        dataset = ds.dataset([str(path) for path in paths], format="parquet")
        self.groups = []
        self.rows = []
        for fragment in dataset.get_fragments():
            sizes = [group.num_rows for group in fragment.row_groups]
            for ids in piece_groups(sizes, block_rows):
                self.groups.append(fragment.subset(row_group_ids=ids))
                self.rows.append(sum(sizes[i] for i in ids))
        self.block_rows = block_rows

    def read(self, piece: int, fields: Sequence[str], reuse: bool = False) -> Iterator[Block]:
        import pyarrow as pa

        from iglearn.data.formats.parquet import column_values

        group = self.groups[piece]
        try:
            if len(group.row_groups) > 1:  # small groups, read whole and cut into blocks
                # (each row group is one record batch, however small), by the file's reader:
                # a third of the dataset's cost
                import pyarrow.parquet as pq

                with pq.ParquetFile(group.path) as file:
                    table = file.read_row_groups([g.id for g in group.row_groups],
                                                 columns=list(fields), use_threads=False)
                batches = table.combine_chunks().to_batches(self.block_rows)
            else:
                batches = group.to_batches(columns=list(fields), batch_size=self.block_rows,
                                           batch_readahead=0, fragment_readahead=0,
                                           use_threads=False)
            for batch in batches:
                yield {name: _typed(name, column_values(group.path, name, batch.column(name)))
                       for name in fields}
        except (OSError, pa.ArrowException) as error:
            raise changed_on_disk(group.path, error) from None


def piece_groups(sizes: Sequence[int], block_rows: int) -> list[list[int]]:
    """The row groups of one Parquet file (their ``sizes`` in rows) read as one piece each:
    consecutive groups together while their rows stay within ``block_rows`` (a group of more
    rows alone), empty ones left out. A file written in many small row groups (appended a
    few rows at a time) was read a group at a time, each a record batch of its own: a
    streamed fit of 3,000 rows in groups of 7 took 14.4 s, where 1,000-row groups took
    1.0 s."""
    pieces: list[list[int]] = []
    rows = 0
    for i, size in enumerate(sizes):
        if not size:
            continue
        if pieces and rows + size <= block_rows:
            pieces[-1].append(i)
            rows += size
        else:
            pieces.append([i])
            rows = size
    return pieces


class _NpzPieces(_Pieces):
    """Blocks of ``block_rows`` consecutive rows of an uncompressed ``.npz``."""

    def __init__(self, reader: TableReader, block_rows: int):
        from iglearn.data.formats.npz import NpzReader

        assert isinstance(reader, NpzReader)
        for name in reader.info.fields:
            if not reader.stored_plainly(name):
                raise IGLearnError(f"{reader.info.source}: field '{name}' is compressed (or in "
                                   f"Fortran order), so it cannot be read in blocks; write the "
                                   f"log uncompressed (iglearn convert LOG LOG.parquet, or "
                                   f"np.savez) to stream it")
        self.reader = reader
        n = reader.info.n_rows
        self.starts = list(range(0, n, block_rows))
        self.rows = [min(block_rows, n - start) for start in self.starts]
        self._scratch: Block = {}

    def read(self, piece: int, fields: Sequence[str], reuse: bool = False) -> Iterator[Block]:
        count = self.rows[piece]
        out = None
        if reuse:   # read into the same memory every time: no fresh pages to fault in
            for name in fields:
                shape, _, dtype, _ = self.reader._header(name)
                if name not in self._scratch or self._scratch[name].dtype != dtype:
                    self._scratch[name] = np.empty((max(self.rows), *shape[1:]), dtype)
            out = {name: self._scratch[name][:count] for name in fields}
        try:
            block = self.reader.read_rows(self.starts[piece], count, tuple(fields), out)
        except OSError as error:
            raise changed_on_disk(self.reader.info.source, error) from None
        yield {name: _typed(name, value) for name, value in block.items()}


class _RayDataset:
    """Parquet files read by Ray Data: record batches of each pass computed by Ray tasks
    (wherever the cluster runs them) and streamed to this process, a few at a time."""

    def __init__(self, paths: Sequence[Path], settings: StreamSettings):
        try:
            import ray
        except ImportError as e:
            raise IGLearnError("reader ray needs Ray: pip install -e '.[ray]'") from e
        from iglearn.processes import connect_ray, quiet_ray

        if not ray.is_initialized():
            connect_ray(settings.ray_address)
        ray.data.DataContext.get_current().enable_progress_bars = False
        quiet_ray()
        from pyarrow.fs import LocalFileSystem

        self.dataset = ray.data.read_parquet([str(path) for path in paths],
                                             filesystem=LocalFileSystem())
        self.source = str(paths[0].parent if len(paths) > 1 else paths[0])
        self.block_rows = settings.block_rows

    def blocks(self, fields: Sequence[str], seed: int | None) -> Iterator[Block]:
        """Every row once, as blocks of at most ``block_rows`` rows; with ``seed``, Ray's
        blocks in an order shuffled with it."""
        from iglearn.data.formats.parquet import column_values

        dataset = self.dataset.select_columns(list(fields))
        if seed is not None:
            dataset = dataset.randomize_block_order(seed=seed)
        for batch in dataset.iter_batches(batch_size=self.block_rows, batch_format="pyarrow",
                                          prefetch_batches=1):
            table = cast(Any, batch)  # an Arrow table (batch_format="pyarrow")
            yield {name: _typed(name, column_values(self.source, name,
                                                    table.column(name).combine_chunks()))
                   for name in fields}


def _typed(name: str, value: np.ndarray) -> np.ndarray:
    """A field's values in its type, in writable memory (Arrow hands out read-only buffers,
    which torch does not take); the stream checked every value when it opened."""
    value = np.asarray(value, dtype=DTYPES[name])
    return value if value.flags.writeable else value.copy()


class LogStream:
    """An interaction log read from disk piece by piece (see the module docstring).

    It answers what learners ask of an :class:`~iglearn.data.logs.InteractionLog` before and
    after fitting (``n_actions``, ``source``, ``len``, ``context_dim``, ``feedback_dim``,
    which ``fields`` it holds, its feature ``schema``, :meth:`action_counts`,
    ``min_probability``), and streams its rows (:meth:`epoch`, :meth:`chunks`).

    Args:
        reader: the log's reader, from :func:`~iglearn.data.formats.open_table`: a Parquet
            file, a folder of Parquet shards, or an uncompressed ``.npz``.
        settings: the shuffle buffer and block sizes.
        progress: show the progress of the opening pass, which checks every row
            (:func:`watched`): minutes on a log of tens of millions of interactions.
    """

    def __init__(self, reader: TableReader, settings: StreamSettings | None = None,
                 progress: bool = False):
        from iglearn.data.formats.npz import NpzReader
        from iglearn.data.formats.parquet import ParquetReader
        from iglearn.data.formats.shards import ShardedReader

        self.settings = settings or StreamSettings()
        self.info = info = reader.info
        if not info.is_log:
            raise IGLearnError(f"{info.source}: holds contexts only; fitting needs a log with "
                               f"action, probability and feedback")
        if info.n_rows == 0:
            raise IGLearnError(f"{info.source}: the log is empty; it needs at least one "
                               f"interaction")
        held = fit_start_bytes()
        self._pieces: _Pieces
        if isinstance(reader, ShardedReader | ParquetReader):
            paths = ([shard.path for shard in reader.shards] if isinstance(reader, ShardedReader)
                     else [reader.path])
            self._pieces = _ParquetPieces(paths, self.settings.block_rows)
            shuffle, block = stream_sizes(info, self.settings, held, max(self._pieces.rows))
            self._pieces.block_rows = block
        elif isinstance(reader, NpzReader):
            shuffle, block = stream_sizes(info, self.settings, held, self.settings.block_rows)
            self._pieces = _NpzPieces(reader, block)
        else:
            from iglearn.data.formats.columns import MappedParquetReader  # imports pyarrow

            raise unstreamable(info.source, isinstance(reader, MappedParquetReader))
        if sum(self._pieces.rows) != info.n_rows:
            raise IGLearnError(f"{info.source}: its row groups hold {sum(self._pieces.rows)} "
                               f"rows but its metadata says {info.n_rows}; the file is "
                               f"corrupt, write it again")
        self.settings = replace(self.settings, shuffle_rows=shuffle, block_rows=block)
        self._counts, self._weights, self.min_probability = self._scan(reader, progress)
        self._buffer: Block = {}   # the shuffle buffer, kept from one epoch to the next
        self._ray: _RayDataset | None = None
        if self.settings.reader == "ray":
            if not isinstance(self._pieces, _ParquetPieces):
                raise IGLearnError(f"{info.source}: reader ray reads Parquet files and shard "
                                   f"folders; convert the log (iglearn convert LOG LOG.parquet) "
                                   f"or use reader local")
            self._ray = _RayDataset(self._pieces.paths, self.settings)

    def _scan(self, reader: TableReader, progress: bool = False
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Check every row as an in-memory log is checked; count each action's interactions,
        sum its importance weights 1/p and their squares, and find the smallest logged
        probability; with ``progress``, a bar of the rows checked."""
        counts = np.zeros(self.n_actions, dtype=np.int64)
        weights = np.zeros((2, self.n_actions))
        smallest = math.inf
        batches = (batch for _, batch in reader.validated_batches(self.settings.block_rows))
        for batch in watched(batches, len(self), f"checking {self.source}", progress):
            action, probability = batch["action"], batch["probability"]
            counts += np.bincount(action, minlength=self.n_actions)
            weights += importance_weight_sums(action, probability, self.n_actions)
            smallest = min(smallest, float(probability.min()))
        return counts, weights, smallest

    @property
    def n_actions(self) -> int:
        """The number of actions K."""
        return self.info.n_actions

    @property
    def source(self) -> str:
        """The file or folder name, for messages."""
        return self.info.source

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields the log holds."""
        return self.info.fields

    @property
    def schema(self) -> FeatureSchema | None:
        """The feature schema the file holds (feature names and, for a table converted with
        a column mapping, its columns), or None; a learner fitted on the stream keeps it."""
        return self.info.schema

    def __len__(self) -> int:
        return self.info.n_rows

    @property
    def context_dim(self) -> int:
        """Dimension d_x of a context."""
        return self.info.dims["context"]

    @property
    def feedback_dim(self) -> int:
        """Dimension d_y of a feedback vector."""
        return self.info.dims["feedback"]

    def action_counts(self) -> np.ndarray:
        """Interactions of each action, shape (K,)."""
        return self._counts.copy()

    def weight_sums(self) -> np.ndarray:
        """Per action, the sums of the importance weights 1{A = a} / p and of their squares,
        shape (2, K) (:func:`~iglearn.data.logs.importance_weight_sums`)."""
        return self._weights.copy()

    def chunks(self, fields: Sequence[str] | None = None) -> Iterator[Block]:
        """Every row once, in file order, in blocks of at most ``block_rows`` rows (a Parquet
        row group may give smaller ones): ``fields`` (default all) of each."""
        wanted = self._wanted(fields)
        if self._ray is not None:
            yield from self._ray.blocks(wanted, None)
            return
        for piece in range(len(self._pieces.rows)):
            yield from self._pieces.read(piece, wanted)

    def epoch(self, batch_size: int, rng: np.random.Generator,
              fields: Sequence[str] | None = None) -> Iterator[Block]:
        """Every row once, in mini-batches of ``batch_size`` rows (the last two sized by
        :func:`batch_sizes`), shuffled with ``rng``: the pieces in a random order, their
        rows through the shuffle buffer (:func:`shuffled_batches`)."""
        wanted = self._wanted(fields)
        order = rng.permutation(len(self._pieces.rows))
        blocks: Iterable[Block] = (block for piece in order
                                   for block in self._pieces.read(int(piece), wanted,
                                                                  reuse=True))
        if self._ray is not None:   # Ray shuffles the order of its blocks
            blocks = self._ray.blocks(wanted, int(rng.integers(2**31)))
        yield from shuffled_batches(blocks, batch_size, self.settings.shuffle_rows, rng,
                                    self._buffer)

    def _wanted(self, fields: Sequence[str] | None) -> tuple[str, ...]:
        if fields is None:
            return self.info.fields
        missing = [name for name in fields if name not in self.info.fields]
        if missing:
            raise IGLearnError(f"{self.source}: the log has no field '{missing[0]}'")
        return tuple(fields)


def watched(blocks: Iterable[Block], total: int, description: str, enabled: bool
            ) -> Iterator[Block]:
    """``blocks`` (rows of a log, ``total`` in all) passed on, with a progress bar of the rows
    passed (:func:`~iglearn.progress.progress_bar`) when ``enabled``: a whole pass over a
    large stream (its opening check, its statistics) takes minutes, which a fit showed as
    silence."""
    if not enabled:
        yield from blocks
        return
    from iglearn.progress import progress_bar

    bar = progress_bar(total, description)
    try:
        for block in blocks:
            yield block
            bar.update(len(next(iter(block.values()))) if block else 0)
    finally:
        bar.close()


def batch_sizes(n: int, batch_size: int) -> list[int]:
    """The sizes of the mini-batches of an epoch of ``n`` rows: ``batch_size`` each, but the
    last two share the rows of the last batch and the remainder evenly, so that no
    mini-batch holds fewer than half of ``batch_size`` rows (one of fewer rows, a few
    left over past a multiple of ``batch_size``, weighs as much in its step as a whole
    one: a digits log of 1,501 interactions, its last mini-batch one row, fitted 2021 IGL
    to 55 to 83 % against 90 % at 1,500). As many mini-batches as ``batch_size`` at a time
    gives, ceil(n / batch_size)."""
    if n <= batch_size:
        return [n] if n else []
    whole, rest = divmod(n, batch_size)
    if not rest:
        return [batch_size] * whole
    last = batch_size + rest
    return [batch_size] * (whole - 1) + [last - last // 2, last // 2]


def shuffled_batches(blocks: Iterable[Block], batch_size: int, capacity: int,
                     rng: np.random.Generator, buffer: Block | None = None) -> Iterator[Block]:
    """Mini-batches of ``batch_size`` rows (the last two of the rows left at the end sized
    by :func:`batch_sizes`) holding every row of ``blocks`` once, in an order shuffled with
    ``rng`` through a buffer of ``capacity`` rows (raised to the largest block and to twice
    ``batch_size``): the buffer fills with whole blocks in their order (the caller shuffles
    the order of the pieces they come from); when the next block does not fit, the rows in
    the buffer are permuted and emitted as consecutive mini-batches, and the last whole one
    and the rows short of a whole one stay in front of the next fill. When the blocks end,
    the rows left are permuted and emitted. Memory: the buffer and one block; each row is
    copied into the buffer once and out of it once. ``buffer`` (a dict, empty or from an
    earlier call) holds the buffer's arrays, so that later calls reuse them."""
    capacity = max(capacity, 2 * batch_size)
    buffer = {} if buffer is None else buffer
    filled = 0
    for block in blocks:
        n = len(next(iter(block.values())))
        if filled >= 2 * batch_size and filled + n > capacity:
            yield from _emit(buffer, filled, batch_size, rng, whole_only=True)
            filled = batch_size + filled % batch_size
        if set(buffer) != set(block) or n > len(next(iter(buffer.values()))) - filled:
            buffer.update(_grown(buffer, max(capacity, filled + n), block, filled))
        for name, value in block.items():
            buffer[name][filled:filled + n] = value
        filled += n
    yield from _emit(buffer, filled, batch_size, rng, whole_only=False)


def _emit(buffer: Block, filled: int, batch_size: int, rng: np.random.Generator,
          whole_only: bool) -> Iterator[Block]:
    """The first ``filled`` rows of ``buffer`` in a random order, as mini-batches (the last
    two sized by :func:`batch_sizes`); with ``whole_only``, whole mini-batches but the last,
    and the rows of the last and those short of a whole one are not emitted but moved to the
    front of the buffer, so that the rows left at the end are never fewer than a
    mini-batch."""
    order = rng.permutation(filled)
    end = filled - filled % batch_size - batch_size if whole_only else filled
    start = 0
    for size in (batch_sizes(end, batch_size) if not whole_only
                 else [batch_size] * (end // batch_size)):
        rows = order[start:start + size]
        start += size
        yield {name: value[rows] for name, value in buffer.items()}
    rest = order[end:]
    for value in buffer.values():
        value[:len(rest)] = value[rest]


def _grown(buffer: Block, rows: int, block: Block, keep: int) -> Block:
    """A buffer of ``rows`` rows for the fields of ``block``, holding the first ``keep`` rows
    of ``buffer``."""
    grown = {name: np.empty((rows, *value.shape[1:]), value.dtype)
             for name, value in block.items()}
    for name, value in buffer.items():
        if name in grown:
            grown[name][:keep] = value[:keep]
    buffer.clear()
    return grown
