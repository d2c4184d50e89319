"""What every file format shares: a table description, batched readers, atomic writes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from iglearn.data import limits
from iglearn.data.contexts import ContextSet
from iglearn.data.frames import ColumnMapping
from iglearn.data.logs import (  # noqa: F401 (check_n_actions re-exported)
    DTYPES,
    MATRIX_FIELDS,
    InteractionLog,
    check_n_actions,
    field_values,
)
from iglearn.errors import IGLearnError
from iglearn.files import output_folder, write_files_atomic  # noqa: F401 (re-exported)

LOG_FIELDS = ("context", "action", "probability", "feedback")
"""Fields every interaction log holds."""
OPTIONAL_FIELDS = ("reward", "label", "definitely_bad")
"""Fields a log or a context set may hold: the first two for evaluation only, the flag of an
unmistakably negative feedback (read by IGL-P) in a log only."""
ALL_FIELDS = LOG_FIELDS + OPTIONAL_FIELDS
BATCH_ROWS = 65536

ARRAY_ROWS = 8192
"""Rows :meth:`TableReader.arrays` reads at a time: what a batch holds while it is decoded
(Parquet's lists, the batch before its cast) stays small beside the log read into memory
(65,536 rows of 256 + 256 float32 values took 0.49 GiB to read a log of 0.08 GiB from
Parquet, 8,192 rows 0.27 GiB, from a process of 0.06 GiB)."""


@dataclass(frozen=True)
class FeatureSchema:
    """Names of the vector positions: feature i of a context is ``context[i]``.

    Names are ``namespace^feature`` as in Vowpal Wabbit's audit output. DSJSON files carry
    named features; the schema maps them to (and from) the vectors iglearn learns on, and is
    stored beside a DSJSON file and inside a saved model. A table read with a column mapping
    that renames fields (:class:`~iglearn.data.frames.ColumnMapping`) keeps that mapping in
    ``columns``, so that a model fitted on it reads tables with the same column names.
    """

    context: tuple[str, ...]
    feedback: tuple[str, ...] = ()
    columns: ColumnMapping | None = None

    @property
    def action_names(self) -> tuple[str, ...] | None:
        """The actions' names in the order of their indices, when the table named them
        (``ColumnMapping.actions``); else None."""
        return None if self.columns is None else self.columns.actions

    def to_json(self) -> dict:
        """A JSON-ready dictionary."""
        record: dict = {"context": list(self.context), "feedback": list(self.feedback)}
        if self.columns is not None:
            record["columns"] = self.columns.to_json()
        return record

    @classmethod
    def from_json(cls, record: object, source: str) -> FeatureSchema:
        """Parse :meth:`to_json`'s output; ``source`` names the file in error messages."""
        if not isinstance(record, dict) or not isinstance(record.get("context"), list):
            raise IGLearnError(f"{source}: the feature schema needs a list 'context' of "
                               f"feature names; rewrite it with 'iglearn convert'")
        names = {}
        for key in ("context", "feedback"):
            value = record.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise IGLearnError(f"{source}: feature schema entry '{key}' must be a list of "
                                   f"feature names (strings)")
            if len(set(value)) != len(value):
                raise IGLearnError(f"{source}: feature schema entry '{key}' repeats a name; "
                                   f"each feature needs one position")
            names[key] = tuple(value)
        columns = record.get("columns")
        return cls(names["context"], names["feedback"],
                   None if columns is None else ColumnMapping.from_json(
                       columns, f"{source} (columns)"))

    @classmethod
    def default(cls, context_dim: int, feedback_dim: int) -> FeatureSchema:
        """Positional names: ``x^x0`` ... for contexts, ``y^y0`` ... for feedback."""
        return cls(tuple(f"x^x{i}" for i in range(context_dim)),
                   tuple(f"y^y{i}" for i in range(feedback_dim)))


@dataclass
class TableInfo:
    """What a file holds, known before reading its rows."""

    source: str
    """The file name, for error messages."""
    n_rows: int
    n_actions: int
    fields: tuple[str, ...]
    """Fields present, in the order of ``ALL_FIELDS``."""
    dims: dict[str, int] = field(default_factory=dict)
    """Width of each matrix field present (context, feedback)."""
    schema: FeatureSchema | None = None

    @property
    def is_log(self) -> bool:
        """True for an interaction log, False for a context set."""
        return set(LOG_FIELDS) <= set(self.fields)


class TableReader(ABC):
    """A file (or arrays) read in row batches, so that large files stream."""

    info: TableInfo

    @abstractmethod
    def batches(self, rows: int = BATCH_ROWS, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """Yield (first row, {field: array}) batches covering every row in order; ``fields``
        (default all) are the fields wanted, and a reader may skip reading the others."""

    def arrays(self, fields: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
        """Every field (or those in ``fields``) as one array, filled batch by batch into
        preallocated memory. A batch in another type than the field's is checked before it is
        cast (:func:`~iglearn.data.logs.field_values`), so the cast changes no value."""
        info = self.info
        wanted = info.fields if fields is None else tuple(f for f in info.fields if f in fields)
        out: dict[str, np.ndarray] = {
            name: np.empty((info.n_rows, info.dims[name]) if name in MATRIX_FIELDS
                           else (info.n_rows,), dtype=DTYPES[name])
            for name in wanted}
        for start, batch in self.batches(ARRAY_ROWS, fields=wanted):
            for name in wanted:
                value, target = batch[name], out[name]
                if start + len(value) > info.n_rows or value.shape[1:] != target.shape[1:]:
                    raise IGLearnError(f"{info.source}: field '{name}' holds more rows or "
                                       f"values than the file announced; the file is corrupt, "
                                       f"write it again")
                if value.dtype != target.dtype:
                    value = field_values(name, value, info.source, info.n_actions, start)
                target[start:start + len(value)] = value
        return out

    def checked(self, arrays: dict[str, np.ndarray]) -> InteractionLog | ContextSet:
        """``arrays`` (every row of this table, as :meth:`arrays` reads them) validated as a
        log or a context set (:func:`check`)."""
        return check(self.info, arrays, self.info.source)

    def validated_batches(self, rows: int = BATCH_ROWS
                          ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """:meth:`batches`, each checked like a whole log (error messages name the rows) and
        given in the fields' types."""
        info = self.info
        for start, batch in self.batches(rows):
            n = len(batch["context"])
            try:
                table = check(info, batch, f"{info.source} (rows {start}-{start + n - 1})")
            except IGLearnError:  # a bad value: named by its row in the whole table
                for name, values in batch.items():
                    field_values(name, values, info.source, info.n_actions, first_row=start)
                raise
            yield start, {name: getattr(table, name) for name in batch}


class ArrayReader(TableReader):
    """An in-memory log or context set seen as a table."""

    def __init__(self, table: InteractionLog | ContextSet, schema: FeatureSchema | None = None):
        self.table = table
        present = tuple(name for name in ALL_FIELDS if getattr(table, name, None) is not None)
        dims = {name: int(getattr(table, name).shape[1]) for name in MATRIX_FIELDS
                if name in present}
        if schema is None:
            schema = getattr(table, "schema", None)
        self.info = TableInfo(table.source, len(table), table.n_actions, present, dims, schema)

    def batches(self, rows: int = BATCH_ROWS, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        for start in range(0, self.info.n_rows, rows):
            yield start, {name: getattr(self.table, name)[start:start + rows]
                          for name in fields or self.info.fields}


def check(info: TableInfo, arrays: dict[str, np.ndarray], source: str
          ) -> InteractionLog | ContextSet:
    """Validate ``arrays`` as a log (or a context set) and return it."""
    if info.is_log:
        return InteractionLog(n_actions=info.n_actions, source=source, schema=info.schema,
                              **arrays)
    return ContextSet(context=arrays["context"], n_actions=info.n_actions,
                      label=arrays.get("label"), source=source, schema=info.schema)


def required_fields(present: set[str], source: str) -> tuple[str, ...]:
    """The fields to read, in canonical order; errors when a log or context set is incomplete."""
    if "context" not in present:
        raise IGLearnError(f"{source}: missing field 'context'; every log and context set "
                           f"needs the (n, d) contexts")
    logged = [name for name in LOG_FIELDS[1:] if name in present]
    if logged and len(logged) < 3:
        missing = next(name for name in LOG_FIELDS[1:] if name not in present)
        raise IGLearnError(f"{source}: missing field '{missing}'; an interaction log needs "
                           f"context, action, probability and feedback (a context set needs "
                           f"context only)")
    for name in ("reward", "definitely_bad"):
        if not logged and name in present:
            raise IGLearnError(f"{source}: field '{name}' without the logged actions; it "
                               f"belongs to an interaction log (add action, probability and "
                               f"feedback) or remove it")
    return tuple(name for name in ALL_FIELDS if name in present)


def check_table_size(info: TableInfo, file_bytes: int) -> None:
    """An error unless the table ``info`` describes has a plausible size for a file of
    ``file_bytes`` bytes: every dimension in [1, MAX_DIM], and the arrays it decodes to at most
    MAX_EXPANSION times the file. Readers call it before allocating anything."""
    for name, width in info.dims.items():
        if not 1 <= width <= limits.MAX_DIM:
            raise IGLearnError(f"{info.source}: field '{name}' has {width} values per row; "
                               f"expected between 1 and {limits.MAX_DIM} "
                               f"(iglearn.data.limits.MAX_DIM)")
    row = sum(np.dtype(DTYPES[name]).itemsize * info.dims.get(name, 1) for name in info.fields)
    total = info.n_rows * row
    if info.n_rows < 0 or total > limits.MAX_EXPANSION * max(file_bytes, 1):
        raise IGLearnError(
            f"{info.source}: claims {info.n_rows} rows of {row} bytes ({total} bytes) in a file "
            f"of {file_bytes} bytes, more than {limits.MAX_EXPANSION} times its size "
            f"(iglearn.data.limits.MAX_EXPANSION); the file is damaged, write it again (or "
            f"raise the limit if it really holds that much)")
