"""Tables of named columns read whole through a :class:`~iglearn.data.frames.ColumnMapping`
(:func:`~iglearn.data.frames.read_columns`, the path of pandas DataFrames): a ``.csv`` file
(:mod:`iglearn.data.formats.csv`), and a ``.parquet`` file read with a column mapping, such
as a DataFrame written with ``to_parquet`` in the user's own column names, one column per
value (or a column of equal-length lists). iglearn's own Parquet layout, with K in its
metadata, is read batch by batch by :mod:`iglearn.data.formats.parquet` instead.

Such a table is read whole, so it needs memory for its rows.
"""

from __future__ import annotations

from collections.abc import Iterator
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
from iglearn.errors import IGLearnError
from iglearn.files import input_file


class NamedColumnsReader(TableReader):
    """A log or context set in an Arrow ``table`` of named columns, read as ``columns`` says
    (default: iglearn's layout), then served in row batches; ``n_actions``: K when neither
    ``columns`` nor a column ``n_actions`` gives it (a model's); ``places``: how messages name
    the table's rows (a CSV file's lines)."""

    def __init__(self, table: pa.Table, source: str, columns: ColumnMapping | None = None,
                 n_actions: int | None = None, places: Places = ROWS):
        def column(name: str) -> np.ndarray:
            values = table.column(name)
            if values.null_count:  # None or NaN: read_columns names the row, or drops it
                return values.to_numpy(zero_copy_only=False)
            if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)
                    or pa.types.is_boolean(values.type)):
                # text, dates, lists, ...: read_columns names them, the first one, and the fix
                return values.to_numpy()
            return numpy_of(values)

        fields, k, schema = read_columns(table.column_names, column, columns or ColumnMapping(),
                                         source, n_actions, places)
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
    """A ``.parquet`` file read whole through a column mapping (see the module docstring)."""

    def __init__(self, path: Path, columns: ColumnMapping, n_actions: int | None = None):
        import pyarrow.parquet as pq

        from iglearn.data.formats.parquet import reading

        self.path = path
        source = str(path)
        input_file(path)
        with reading(source):
            table = pq.read_table(path)
        if table.num_rows == 0:
            raise IGLearnError(f"{source}: the file has no rows; it needs at least one "
                               f"interaction")
        super().__init__(table, source, columns, n_actions)
