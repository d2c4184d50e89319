"""Tables of named columns read whole through a :class:`~iglearn.data.frames.ColumnMapping`
(:func:`~iglearn.data.frames.read_columns`, the path of pandas DataFrames): a ``.csv`` file
(:mod:`iglearn.data.formats.csv`), and a ``.parquet`` file read with a column mapping, such
as a DataFrame written with ``to_parquet`` in the user's own column names, one column per
value (or a column of equal-length lists). iglearn's own Parquet layout, with K in its
metadata, is read batch by batch by :mod:`iglearn.data.formats.parquet` instead.

Such a table is read whole, so it needs memory for its rows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from iglearn.data.formats.arrow import numpy_of
from iglearn.data.formats.base import (
    BATCH_ROWS,
    MATRIX_FIELDS,
    TableInfo,
    TableReader,
    required_fields,
)
from iglearn.data.frames import ColumnMapping, read_columns
from iglearn.data.logs import ROWS, Places
from iglearn.errors import IGLearnError, shown
from iglearn.files import input_file


class NamedColumnsReader(TableReader):
    """A log or context set in an Arrow ``table`` of named columns, read as ``columns`` says
    (default: iglearn's layout), then served in row batches; ``n_actions``: K when neither
    ``columns`` nor a column ``n_actions`` gives it (a model's); ``places``: how messages name
    the table's rows (a CSV file's lines); ``wanted``: the fields to read, the others' columns
    left unread (:func:`~iglearn.data.frames.read_columns`)."""

    def __init__(self, table: pa.Table, source: str, columns: ColumnMapping | None = None,
                 n_actions: int | None = None, places: Places = ROWS,
                 wanted: Collection[str] | None = None):
        index = index_columns(table)
        def column(name: str) -> np.ndarray:
            values = table.column(name)
            if pa.types.is_map(values.type):  # key-value pairs: dicts, as a struct's cells
                return np.array([None if cell is None else dict(cell)
                                 for cell in values.to_pylist()], dtype=object)
            if values.null_count:  # None or NaN: read_columns names the row, or drops it
                return values.to_numpy(zero_copy_only=False)
            if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)
                    or pa.types.is_boolean(values.type)):
                # text, dates, lists, ...: read_columns names them, the first one, and the fix
                return values.to_numpy()
            return numpy_of(values)

        fields, k, schema = read_columns(table.column_names, column, columns or ColumnMapping(),
                                         source, n_actions, places, wanted, index)
        present = required_fields(set(fields), source)
        self._fields = fields
        dims = {name: int(fields[name].shape[1]) for name in MATRIX_FIELDS if name in fields}
        n_rows = len(next(iter(fields.values())))  # without the rows a mapping drops
        self.info = TableInfo(source, n_rows, k, present, dims, schema)

    def batches(self, rows: int = BATCH_ROWS, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        for start in range(0, self.info.n_rows, rows):
            yield start, {name: self._fields[name][start:start + rows]
                          for name in fields or self.info.fields}


class MappedParquetReader(NamedColumnsReader):
    """A ``.parquet`` file, or a folder of Parquet shards (a Spark job's output, one file per
    day, :func:`~iglearn.data.formats.shards.shard_files`), read whole through a column
    mapping (see the module docstring); the shards must hold the same columns."""

    def __init__(self, path: Path, columns: ColumnMapping, n_actions: int | None = None,
                 wanted: Collection[str] | None = None):
        self.path = path
        source = str(path)
        table = _shards_table(path) if path.is_dir() else _parquet_table(path)
        if table.num_rows == 0:
            raise IGLearnError(f"{source}: the {'shards have' if path.is_dir() else 'file has'} "
                               f"no rows; a log needs at least one interaction")
        super().__init__(table, source, columns, n_actions, wanted=wanted)


def index_columns(table: pa.Table) -> tuple[str, ...]:
    """The columns of ``table`` that held a pandas DataFrame's index (its ``to_parquet``
    metadata's ``index_columns``; a RangeIndex is stored as no column)."""
    try:
        metadata = table.schema.pandas_metadata or {}
    except (ValueError, TypeError):  # metadata that is not pandas' JSON: no index known
        return ()
    names = metadata.get("index_columns", []) if isinstance(metadata, dict) else []
    return tuple(name for name in names if isinstance(name, str))


def _parquet_table(path: Path) -> pa.Table:
    """The Parquet file ``path`` read whole."""
    import pyarrow.parquet as pq

    from iglearn.data.formats.parquet import reading

    input_file(path)
    with reading(str(path)):
        # the file's reader, not read_table's dataset, which refuses a column name given
        # twice as a corrupt file ("Multiple matches for FieldRef"): the mapping names it
        return pq.ParquetFile(path).read()


def _shards_table(folder: Path) -> pa.Table:
    """The shards of ``folder`` read whole, one after the other, each shard's columns taken by
    name in the first shard's order (a mapping reads columns by name: shards written by
    different jobs may order them differently); an error naming the first shard whose columns
    (names or types) differ from the first shard's."""
    from iglearn.data.formats.shards import shard_files

    shards = shard_files(folder)
    tables = [_parquet_table(path) for path in shards]
    first = tables[0].schema.remove_metadata()
    unique = len(set(first.names)) == len(first.names)
    for i, (path, table) in enumerate(zip(shards[1:], tables[1:], strict=True), start=1):
        if unique and table.schema.names != first.names and (
                sorted(table.schema.names) == sorted(first.names)):
            table = tables[i] = table.select(first.names)
        schema = table.schema.remove_metadata()
        if schema.equals(first):
            continue
        if schema.names != first.names:
            gone = [name for name in first.names if name not in schema.names]
            added = [name for name in schema.names if name not in first.names]
            problem = (f"lacks the column {shown(gone[0])}" if gone else
                       f"has the column {shown(added[0])}" if added else
                       "holds the columns in another order")
        else:
            name = next(f.name for f, g in zip(schema, first, strict=True) if not f.equals(g))
            problem = (f"holds the column {shown(name)} as {schema.field(name).type}, not "
                       f"{first.field(name).type}")
        raise IGLearnError(f"{path}: {problem}, unlike the folder's first shard "
                           f"{shards[0].name}; every shard of a log needs the same columns "
                           f"of the same types (write the shards again alike)")
    return pa.concat_tables(tables)
