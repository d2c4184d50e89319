"""Interaction logs and context sets on disk, in the format the file extension names.

- ``.npz``: arrays ``context`` (n, d_x), ``action`` (n,), ``probability`` (n,),
  ``feedback`` (n, d_y), optional ``reward`` and ``label`` (n,), and a scalar ``n_actions``;
  a context set holds ``context``, optional ``label``, and ``n_actions``; an array of
  another name is refused.
- ``.parquet``: the same fields as columns, vectors as fixed-size lists of float32, and
  ``n_actions`` in the schema metadata; streamed in row batches. A Parquet table without
  that metadata (written by pandas, pyarrow or Spark) is read whole as a ``.csv`` one is:
  its columns named as there (or by a column mapping), K from a column ``n_actions``.
- ``.csv``: a header row, then one row per interaction: ``context_0``, ..., ``action``,
  ``probability``, ``feedback_0``, ..., optional ``reward`` and ``label``, and ``n_actions``
  (K on every row), or other column names read with a
  :class:`~iglearn.data.frames.ColumnMapping`; see :mod:`iglearn.data.formats.csv` and
  :mod:`iglearn.data.frames`.
- ``.dsjson``: Vowpal Wabbit's DSJSON (see :mod:`iglearn.data.formats.dsjson`), with a
  feature schema beside it in ``<file>.schema.json``.
- a folder of ``.parquet`` shards: one log (:mod:`iglearn.data.formats.shards`).

Every problem with a file raises :class:`~iglearn.errors.IGLearnError` naming the file, the
field, the problem and the fix; a failed write leaves no output file behind. Readers check
what a file claims (types, K, dimensions, rows) against :mod:`iglearn.data.limits` and the
file's real size before they allocate memory, and open regular files only.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from iglearn.data.contexts import ContextSet
from iglearn.data.formats.base import (
    ArrayReader,
    FeatureSchema,
    TableInfo,
    TableReader,
    write_files_atomic,
)
from iglearn.data.frames import ColumnMapping
from iglearn.data.logs import InteractionLog
from iglearn.errors import IGLearnError
from iglearn.files import input_file

SUFFIXES = (".npz", ".parquet", ".csv", ".dsjson")
CONTEXT_FIELDS = ("context", "label")
"""The fields a context set holds: what predicting reads of a log."""
MAPPED = (".csv", ".parquet")
"""The formats a column mapping (``--context``, ``--action``, ...) reads."""

__all__ = [
    "SUFFIXES",
    "ArrayReader",
    "ColumnMapping",
    "FeatureSchema",
    "TableInfo",
    "TableReader",
    "convert",
    "open_table",
    "read_contexts",
    "read_log",
    "read_table",
    "write_table",
]


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        text = ""
        if suffix in (".tsv", ".tab", ".txt"):
            text = " (a tab- or semicolon-separated table reads as .csv: rename it)"
        elif suffix in (".json", ".jsonl"):
            text = (" (Vowpal Wabbit's DSJSON, one JSON object per line, reads as .dsjson: "
                    "rename it)")
        elif suffix in (".gz", ".bz2", ".xz", ".zst", ".zip"):
            text = " (a compressed file: decompress it first, gunzip -k say)"
        raise IGLearnError(f"{path}: unknown file extension {suffix or '(none)'!r}; use one of "
                           f"{', '.join(SUFFIXES)}{text}")
    return suffix


EVALUATION_FIELDS = ("label", "reward")
"""The fields only an evaluation reads."""


def model_mapping(schema: FeatureSchema | None, wanted: Collection[str] | None = None
                  ) -> ColumnMapping | None:
    """The column mapping a model (its feature ``schema``) reads a table by: the one it was
    fitted through, which to read a whole log (``wanted`` None: an evaluation) also reads the
    label and reward columns that the fit left unread by name (``--ignore label`` for a
    partly labelled log), so that the evaluation measures them."""
    if schema is None or schema.columns is None:
        return None
    if wanted is not None:
        return schema.columns
    from iglearn.data.frames import given_fields_read
    return given_fields_read(schema.columns, EVALUATION_FIELDS)


SHOWN_OPTIONS = 3
"""The most options of a column mapping that :func:`_unmapped` names one by one."""


def _unmapped(path: Path, columns: ColumnMapping) -> str:
    """Why ``columns`` cannot read ``path``, a file of a format that names its fields itself
    (``.npz``, ``.dsjson``): the options given (the entries that differ from the default
    layout, as the command line names them), and the fix. K alone (``--n-actions``) is told
    as such: those formats hold K themselves."""
    from dataclasses import fields

    default = ColumnMapping()
    given = [f.name for f in fields(ColumnMapping)
             if getattr(columns, f.name) != getattr(default, f.name)]
    if "actions" in given and "n_actions" in given:  # the names' number, not given apart
        given.remove("n_actions")
    suffix = path.suffix.lower()
    kind = f"a {suffix} file" if suffix in SUFFIXES else "this format"
    if given == ["n_actions"]:
        return (f"{path}: --n-actions (n_actions) gives K to a .csv or .parquet table that has "
                f"no column 'n_actions'; {kind} holds K itself: drop --n-actions")
    options = ("--context, --action, ..." if not given or len(given) > SHOWN_OPTIONS
               else ", ".join("--" + name.replace("_", "-") for name in given))
    return (f"{path}: a column mapping ({options}) reads .csv and .parquet files and folders "
            f"of .parquet shards only; {kind} names its fields itself: drop "
            f"{'that option' if len(given) == 1 else 'those options'}")


def open_table(path: str | Path, schema: FeatureSchema | None = None,
               columns: ColumnMapping | None = None, n_actions: int | None = None,
               wanted: Collection[str] | None = None) -> TableReader:
    """A batched reader of the log or context set in ``path``.

    Args:
        path: a ``.npz``, ``.parquet``, ``.csv`` or ``.dsjson`` file, or a folder of Parquet
            shards (named without an extension, or ``.parquet`` as Spark names them).
        schema: a model's feature schema: for DSJSON, the feature positions to use instead of
            the file's own; for CSV, and Parquet not in iglearn's layout, its column mapping
            (if any) unless ``columns`` is given.
        columns: CSV and Parquet only (a file or a folder of shards): which columns hold which
            field (Parquet so read is read whole, :mod:`iglearn.data.formats.columns`; an
            error for other formats, whose fields have fixed names).
        n_actions: K when the file does not give it (a model's): with a column mapping,
            when neither the mapping nor a column gives it; a ``.npz`` file without
            ``n_actions``.
        wanted: the fields to read (the context and labels, to predict on a log), or None
            for the whole log: with a column mapping, the columns of the others are not
            read, so a missing value there is no error; DSJSON then reads every line, those
            not to learn from too (one prediction per line). Other readers read fields when
            asked (``arrays(fields)``).
    """
    path = Path(path)
    shards = path.is_dir() and path.suffix.lower() not in (".npz", ".csv", ".dsjson")
    if columns is not None and not shards and path.suffix.lower() not in MAPPED:
        if not path.is_dir():  # an unknown extension, then a missing file, told first
            _suffix(path)
            input_file(path)
        raise IGLearnError(_unmapped(path, columns))
    if shards:
        from iglearn.data.formats.shards import ShardedReader, shard_files
        if columns is None:
            from iglearn.data.formats.parquet import iglearn_layout
            if not iglearn_layout(shard_files(path)[0]):
                columns = model_mapping(schema, wanted) or ColumnMapping()
        if columns is not None:  # the user's own column names: read whole
            from iglearn.data.formats.columns import MappedParquetReader
            return MappedParquetReader(path, columns, n_actions, wanted)
        return ShardedReader(path)
    suffix = _suffix(path)
    size = input_file(path)
    if suffix != ".dsjson" and size == 0:  # DSJSON says so with its own words
        raise IGLearnError(f"{path}: the file is empty; write the log again")
    if suffix == ".npz":
        from iglearn.data.formats.npz import NpzReader
        return NpzReader(path, n_actions)
    if suffix == ".parquet":
        from iglearn.data.formats.parquet import ParquetReader, iglearn_layout
        if columns is None and not iglearn_layout(path):
            # a table iglearn did not write (no K in its metadata): by a model's mapping, else
            # by iglearn's column names, K from a column n_actions or ``n_actions``
            columns = model_mapping(schema, wanted) or ColumnMapping()
        if columns is not None:  # the user's own column names: read whole, as a CSV file
            from iglearn.data.formats.columns import MappedParquetReader
            return MappedParquetReader(path, columns, n_actions, wanted)
        return ParquetReader(path)
    if suffix == ".csv":
        from iglearn.data.formats.csv import CsvReader
        if columns is None and schema is not None:
            columns = model_mapping(schema, wanted)
        return CsvReader(path, columns, n_actions, wanted)
    from iglearn.data.formats.dsjson import DsjsonReader
    return DsjsonReader(path, schema, skip_learn=wanted is None)


def read_table(path: str | Path, schema: FeatureSchema | None = None
               ) -> tuple[InteractionLog | ContextSet, TableInfo]:
    """The validated log (or context set) in ``path``, and what the file said about it.

    Uncompressed ``.npz`` members are memory-mapped and other formats are read batch by batch
    into preallocated arrays, so the data are held in memory once.
    """
    reader = open_table(path, schema)
    return reader.checked(reader.arrays()), reader.info


def read_log(path: str | Path, schema: FeatureSchema | None = None) -> InteractionLog:
    """The interaction log in ``path``; errors if the file holds contexts only."""
    table, info = read_table(path, schema)
    if not isinstance(table, InteractionLog):
        raise IGLearnError(f"{info.source}: holds contexts only; a log also needs fields "
                           f"action, probability and feedback")
    return table


def read_contexts(path: str | Path, schema: FeatureSchema | None = None) -> ContextSet:
    """The contexts (and labels, if any) in ``path``, from a log or a context set (a table
    read through a column mapping reads no other column's values)."""
    reader = open_table(path, schema, wanted=CONTEXT_FIELDS)
    info = reader.info
    if info.is_log:
        arrays = reader.arrays(("context", "label"))
        return ContextSet(arrays["context"], info.n_actions, arrays.get("label"), info.source,
                          info.schema)
    contexts = reader.checked(reader.arrays())
    assert isinstance(contexts, ContextSet)  # not a log, so check made a context set
    return contexts


def write_table(table: InteractionLog | ContextSet | TableReader, path: str | Path,
                schema: FeatureSchema | None = None) -> None:
    """Write a log, a context set or a reader's rows to ``path`` (format from the extension).

    The file (and a DSJSON file's schema) appear only once completely written.
    """
    path = Path(path)
    suffix = _suffix(path)
    reader = table if isinstance(table, TableReader) else ArrayReader(table, schema)
    if suffix == ".npz":
        from iglearn.data.formats.npz import write_npz
        write_files_atomic([(path, lambda tmp: write_npz(reader, tmp))])
    elif suffix == ".parquet":
        from iglearn.data.formats.parquet import write_parquet
        write_files_atomic([(path, lambda tmp: write_parquet(reader, tmp))])
    elif suffix == ".csv":
        from iglearn.data.formats.csv import write_csv
        write_files_atomic([(path, lambda tmp: write_csv(reader, tmp))])
    else:
        from iglearn.data.formats.dsjson import schema_path, write_dsjson
        holder: dict[str, Path] = {}
        write_files_atomic([
            (schema_path(path), lambda tmp: holder.setdefault("schema", tmp)),
            (path, lambda tmp: write_dsjson(reader, tmp, holder["schema"])),
        ])


def convert(source: str | Path, target: str | Path, shard_rows: int | None = None,
            columns: ColumnMapping | None = None) -> TableInfo:
    """Convert a log or context set between formats, streaming batch by batch; with
    ``shard_rows``, ``target`` is a new (or empty) folder of Parquet shards of that many rows
    (:func:`~iglearn.data.formats.shards.write_shards`); ``columns`` reads a ``.csv`` or
    ``.parquet`` ``source`` (or folder of Parquet shards) in other column names, read whole
    (a mapping that renames fields goes into the target's feature schema)."""
    source, target = Path(source), Path(target)
    if shard_rows is None:
        _suffix(target)
    elif target.suffix.lower() in SUFFIXES and target.suffix.lower() != ".parquet":
        raise IGLearnError(f"{target}: --shard-rows writes a folder of Parquet shards, which "
                           f"is read by its name without an extension (or .parquet, as Spark "
                           f"names them), not as a {target.suffix} file; name it so")
    if source.resolve() == target.resolve():
        raise IGLearnError(f"{target}: is the input file; choose another output name")
    reader = open_table(source, columns=columns)
    if shard_rows is None:
        write_table(reader, target)
    else:
        from iglearn.data.formats.shards import write_shards
        write_shards(reader, target, shard_rows)
    return reader.info
