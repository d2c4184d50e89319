"""Sharded logs: a folder of Parquet files is one log.

A service that exports its interactions day by day, or a cluster job whose workers each write
their part, leaves a folder of Parquet files. iglearn reads such a folder as one log: its
``.parquet`` files in name order (hidden files, such as the temporaries of a write in
progress, and files starting with ``_`` are not shards), each checked as a Parquet log, and
all of them holding the same fields, dimensions, K and feature schema.
:func:`write_shards` writes a log as such a folder, shards of a chosen number of rows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow.parquet as pq

from iglearn.data.formats.base import BATCH_ROWS, TableInfo, TableReader
from iglearn.data.formats.parquet import (
    ParquetReader,
    arrow_schema,
    record_batch,
    row_group_rows,
)
from iglearn.errors import IGLearnError, shown
from iglearn.files import remove_folder, replace_folder, temporary_folder

if TYPE_CHECKING:
    from iglearn.data.contexts import ContextSet
    from iglearn.data.logs import InteractionLog

SHARD_NAME = "part-{:05d}.parquet"
"""Names of the shards :func:`write_shards` writes, numbered from 0."""


def shard_files(folder: Path) -> list[Path]:
    """The shards of ``folder``: its ``.parquet`` files in name order, not hidden (``.``)
    and not starting with ``_``; an error when it holds none."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except PermissionError:
        raise IGLearnError(f"{folder}: cannot list the folder (permission denied); check its "
                           f"permissions") from None
    shards = [Path(entry.path) for entry in entries
              if entry.name.lower().endswith(".parquet") and not entry.name.startswith((".", "_"))]
    for entry in entries:  # a partitioned layout (Spark's, Hive's day=1/): not read, so told
        if (entry.is_dir() and not entry.name.startswith((".", "_"))
                and any(path.name.lower().endswith(".parquet")
                        for path in Path(entry.path).rglob("*"))):
            raise IGLearnError(f"{folder}: its subfolder {shown(entry.name)} holds .parquet "
                               f"files, which iglearn does not read (the shards of a log lie "
                               f"in one folder, a partitioned layout's columns are not read); "
                               f"move the shards into one folder, or give the subfolder")
    if not shards:
        raise IGLearnError(f"{folder}: the folder holds no .parquet shards; give a folder of "
                           f"Parquet files (iglearn convert LOG FOLDER --shard-rows N writes "
                           f"one) or a log file")
    return shards


class ShardedReader(TableReader):
    """A folder of Parquet shards (:func:`shard_files`) read as one table, shard after shard."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.shards = [ParquetReader(path) for path in shard_files(self.folder)]
        first = self.shards[0].info
        for shard in self.shards[1:]:
            check_same_table(first, shard.info)
        self.info = TableInfo(str(self.folder), sum(s.info.n_rows for s in self.shards),
                              first.n_actions, first.fields, dict(first.dims), first.schema)

    def batches(self, rows: int = BATCH_ROWS, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        offset = 0
        for shard in self.shards:
            for start, batch in shard.batches(rows, fields):
                yield offset + start, batch
            offset += shard.info.n_rows

    def validated_batches(self, rows: int = BATCH_ROWS
                          ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """:meth:`TableReader.validated_batches` shard by shard: a bad value is named by its
        shard's file and its row there (the folder and the row counted over every shard said
        neither which file to open nor where in it)."""
        offset = 0
        for shard in self.shards:
            for start, batch in shard.validated_batches(rows):
                yield offset + start, batch
            offset += shard.info.n_rows

    def checked(self, arrays: dict[str, np.ndarray]) -> InteractionLog | ContextSet:
        """:meth:`TableReader.checked`; a bad value is named by its shard's file and its row
        there: each shard's rows are checked alone once the whole table is refused (a refusal
        of the whole, such as one of its size, stands as it is)."""
        try:
            return super().checked(arrays)
        except IGLearnError:
            offset = 0
            for shard in self.shards:
                end = offset + shard.info.n_rows
                shard.checked({name: values[offset:end] for name, values in arrays.items()})
                offset = end
            raise


def check_same_table(first: TableInfo, other: TableInfo) -> None:
    """An error naming the shard ``other`` unless it holds the fields, dimensions, K and
    feature schema of the shard ``first``."""
    differences = [(what, mine, theirs) for what, mine, theirs in (
        ("fields", first.fields, other.fields), ("dimensions", first.dims, other.dims),
        ("n_actions", first.n_actions, other.n_actions),
        ("feature schema", first.schema, other.schema)) if mine != theirs]
    if differences:
        what, mine, theirs = differences[0]
        raise IGLearnError(f"{other.source}: its {what} {shown(theirs)} differ from "
                           f"{shown(mine)} in {first.source}; every shard of a log needs the "
                           f"same fields, dimensions, K and feature schema: move it out of "
                           f"the folder or write it again")


def check_shard_output(target: Path) -> None:
    """An error unless ``target`` can become a folder of shards: new, or an empty folder."""
    if target.exists() and not target.is_dir():
        raise IGLearnError(f"{target}: is a file; shards are written into a folder: give a new "
                           f"or empty folder")
    if target.is_dir() and any(target.iterdir()):
        raise IGLearnError(f"{target}: the folder is not empty; give a new or empty folder "
                           f"for the shards")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise IGLearnError(f"{target}: the folder {parent} does not exist; create it first")


def write_shards(reader: TableReader, target: Path, shard_rows: int) -> int:
    """Write ``reader``'s table as a folder ``target`` of Parquet shards of ``shard_rows``
    rows each (the last one may hold fewer), named :data:`SHARD_NAME`, in one pass over the
    table. The shards are written in a temporary folder beside ``target``, which takes its
    place once every shard is complete (``target`` must be new or empty). Returns the number
    of shards."""
    target = Path(target)
    if not isinstance(shard_rows, int) or shard_rows < 1:
        raise IGLearnError(f"--shard-rows must be a whole number >= 1, got {shard_rows!r}")
    check_shard_output(target)
    info = reader.info
    schema = arrow_schema(info)
    group = min(row_group_rows(info), shard_rows)
    work = temporary_folder(target)
    shards = 0
    try:
        writer: pq.ParquetWriter | None = None
        room = 0
        try:
            for _, batch in reader.validated_batches(group):
                n = len(batch["context"])
                done = 0
                while done < n:
                    if room == 0:
                        if writer is not None:
                            writer.close()
                        writer = pq.ParquetWriter(work / SHARD_NAME.format(shards), schema)
                        shards, room = shards + 1, shard_rows
                    assert writer is not None  # opened while room was 0
                    take = min(room, n - done)
                    part = {name: value[done:done + take] for name, value in batch.items()}
                    writer.write_batch(record_batch(info, schema, part), row_group_size=group)
                    done, room = done + take, room - take
        finally:
            if writer is not None:
                writer.close()
        replace_folder(work, target)
    except OSError as e:
        remove_folder(work)
        raise IGLearnError(f"{target}: cannot write the shards ({e.strerror or e}); check the "
                           f"free space and permissions of {target.parent}") from e
    except BaseException:
        remove_folder(work)
        raise
    return shards

