"""Apache Parquet: one column per field (vectors as fixed-size lists of float32), with K in
the schema metadata (``n_actions``). Read and written in row batches, so files larger than
memory can be converted and scanned."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from iglearn.data import safejson
from iglearn.data.formats.arrow import arrow_array, list_values, numpy_of
from iglearn.data.formats.base import (
    BATCH_ROWS,
    DTYPES,
    MATRIX_FIELDS,
    FeatureSchema,
    TableInfo,
    TableReader,
    check_n_actions,
    check_table_size,
    required_fields,
)
from iglearn.data.frames import check_unique_names
from iglearn.errors import IGLearnError, shown
from iglearn.files import input_file

_ARROW = {"action": pa.int64(), "label": pa.int64(), "probability": pa.float64(),
          "reward": pa.float32(), "definitely_bad": pa.bool_()}
_DIGITS = re.compile(rb"[0-9]{1,19}")


@contextmanager
def reading(source: str) -> Iterator[None]:
    """The errors of opening or reading the Parquet file ``source`` as one line naming it."""
    try:
        yield
    except PermissionError:
        raise IGLearnError(f"{source}: cannot read the file (permission denied); check its "
                           f"permissions") from None
    except (pa.ArrowException, OSError, UnicodeDecodeError) as e:
        raise IGLearnError(f"{source}: not a readable Parquet file ({shown(str(e))}); the "
                           f"file is truncated or corrupt, write it again") from None


def iglearn_layout(path: Path) -> bool:
    """Whether the Parquet file ``path`` is in iglearn's layout (K in its schema metadata), as
    iglearn and ``iglearn convert`` write it, rather than a table of the user's own columns; a
    file whose schema cannot be read counts as iglearn's (its reader says what is wrong)."""
    try:
        metadata = pq.read_schema(path).metadata or {}
    except (pa.ArrowException, OSError):
        return True
    return b"n_actions" in metadata


class ParquetReader(TableReader):
    """Reads a ``.parquet`` log or context set batch by batch."""

    def __init__(self, path: Path):
        self.path = path
        source = str(path)
        size = input_file(path)
        with reading(source):
            # pre_buffer off: with it, iter_batches buffers the column chunks of every row
            # group it will read, so a pass over the file would hold the whole file
            self._file = pq.ParquetFile(path, pre_buffer=False)
            metadata = self._file.metadata
            schema = self._file.schema_arrow
        check_unique_names(schema.names, source)
        meta = schema.metadata or {}
        if b"n_actions" not in meta:
            raise IGLearnError(f"{source}: missing 'n_actions' in the schema metadata (the "
                               f"number of actions K): a table iglearn did not write needs K "
                               f"(n_actions=, --n-actions on the command line) and, if its "
                               f"columns are not named as iglearn writes them, which hold "
                               f"which field (--context, --action, --probability, --feedback)")
        text = meta[b"n_actions"]
        if not _DIGITS.fullmatch(text):
            raise IGLearnError(f"{source}: the 'n_actions' metadata is {shown(text)}; it must be "
                               f"the number of actions K in decimal digits")
        k = check_n_actions(int(text), source)
        fields = required_fields(set(schema.names), source)
        dims = {}
        for name in fields:
            kind = schema.field(name).type
            if name in MATRIX_FIELDS:
                if pa.types.is_fixed_size_list(kind) and _numeric(kind.value_type):
                    dims[name] = kind.list_size
                elif _numeric(kind):
                    dims[name] = 1
                else:
                    raise IGLearnError(f"{source}: column '{name}' has type "
                                       f"{shown(str(kind))}; expected fixed-size lists of "
                                       f"float32 (one vector per row); a column of lists of "
                                       f"any length (as Spark writes arrays) is read with "
                                       f"the column options (--context context --feedback "
                                       f"feedback --action action --probability probability "
                                       f"...), or converted with them once (iglearn convert "
                                       f"LOG LOG2.parquet --context context ...)")
            elif not _numeric(kind):
                raise IGLearnError(f"{source}: column '{name}' has type {shown(str(kind))}; "
                                   f"expected numbers")
        feature_schema = None
        if b"feature_schema" in meta:
            record = safejson.parse(meta[b"feature_schema"],
                                    f"{source} (metadata 'feature_schema')",
                                    "remove it or write the file again")
            feature_schema = FeatureSchema.from_json(record, f"{source} (feature_schema)")
        n = metadata.num_rows
        if n != sum(metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)):
            raise IGLearnError(f"{source}: its metadata says {n} rows but its row groups hold "
                               f"another number; the file is corrupt, write it again")
        self.info = TableInfo(source, n, k, fields, dims, feature_schema)
        check_table_size(self.info, size)

    def batches(self, rows: int = BATCH_ROWS, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        wanted = list(fields or self.info.fields)
        start = 0
        try:
            for batch in self._file.iter_batches(batch_size=rows, columns=wanted):
                yield start, {name: self._column(name, batch.column(name)) for name in wanted}
                start += batch.num_rows
                del batch
                # Arrow's pool (mimalloc) keeps what a decoded batch freed: reading a log of
                # 82 MB into memory left the process 0.35 GB larger without this
                pa.default_memory_pool().release_unused()
        except (pa.ArrowException, OSError, UnicodeDecodeError) as e:
            raise IGLearnError(f"{self.path}: reading rows from {start} failed "
                               f"({shown(str(e))}); the file is truncated or corrupt, write it "
                               f"again") from None
        if start != self.info.n_rows:
            raise IGLearnError(f"{self.path}: holds {start} rows but its metadata says "
                               f"{self.info.n_rows}; the file is corrupt, write it again")

    def _column(self, name: str, column: pa.Array) -> np.ndarray:
        return column_values(self.path, name, column)


def column_values(path: Path | str, name: str, column: pa.Array) -> np.ndarray:
    """One column of a batch read from the Parquet file ``path`` as a numpy array, (n, d) for
    contexts and feedback; an error naming the file and the column when it holds nulls."""
    if column.null_count:
        raise IGLearnError(f"{path}: column '{name}' holds missing (null) values; "
                           f"remove or impute those rows")
    if pa.types.is_fixed_size_list(column.type):
        values = list_values(column)
        if values.null_count:
            raise IGLearnError(f"{path}: column '{name}' holds missing (null) vector "
                               f"entries; remove or impute those rows")
        return numpy_of(values).reshape(len(column), column.type.list_size)
    array = numpy_of(column)
    return array[:, None] if name in MATRIX_FIELDS else array


def _numeric(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)


def arrow_schema(info: TableInfo) -> pa.Schema:
    """The Parquet schema iglearn writes for ``info``."""
    columns = []
    for name in info.fields:
        if name in MATRIX_FIELDS:
            columns.append(pa.field(name, pa.list_(pa.float32(), info.dims[name])))
        else:
            columns.append(pa.field(name, _ARROW[name]))
    metadata = {"n_actions": str(info.n_actions)}
    if info.schema is not None:
        metadata["feature_schema"] = json.dumps(info.schema.to_json())
    return pa.schema(columns, metadata=metadata)


ROW_GROUP_BYTES = 32 * 2**20
"""Rows of a Parquet row group hold about this many bytes (uncompressed) when iglearn writes
them: a streaming fit (:mod:`iglearn.data.stream`) reads and shuffles whole row groups, so
small groups bound its memory and mix the log finely."""


def row_group_rows(info: TableInfo) -> int:
    """Rows per row group for ``info``'s fields: about ROW_GROUP_BYTES, between 1024 and
    BATCH_ROWS."""
    row = sum(np.dtype(DTYPES[name]).itemsize * info.dims.get(name, 1) for name in info.fields)
    return max(1024, min(BATCH_ROWS, ROW_GROUP_BYTES // max(row, 1)))


def record_batch(info: TableInfo, schema: pa.Schema, batch: dict[str, np.ndarray]
                 ) -> pa.RecordBatch:
    """One batch of checked rows (fields of ``info``) as an Arrow record batch of ``schema``."""
    columns = []
    for name in info.fields:
        value: np.ndarray = np.ascontiguousarray(batch[name], dtype=DTYPES[name])
        if name in MATRIX_FIELDS:
            value = value.reshape(len(value), -1)
            columns.append(pa.FixedSizeListArray.from_arrays(
                arrow_array(value.reshape(-1)), info.dims[name]))
        else:
            columns.append(arrow_array(value))
    return pa.record_batch(columns, schema=schema)


def write_parquet(reader: TableReader, tmp: Path) -> None:
    """Write ``reader``'s table to ``tmp`` batch by batch, in row groups of
    :func:`row_group_rows` rows."""
    info = reader.info
    schema = arrow_schema(info)
    group = row_group_rows(info)
    with pq.ParquetWriter(tmp, schema) as writer:
        for _, batch in reader.validated_batches(group):
            writer.write_batch(record_batch(info, schema, batch), row_group_size=group)
