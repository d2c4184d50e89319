"""CSV: one row per interaction, one column per scalar field and per vector position, in the
layout of :mod:`iglearn.data.frames`: ``context_0``, ``context_1``, ..., ``action``,
``probability``, ``feedback_0``, ..., optional ``reward``, ``label`` and ``definitely_bad``,
and ``n_actions`` (K, the same on every row: CSV has no other place for it). A context set
has ``context_*``, optional ``label``, and ``n_actions``.

A :class:`~iglearn.data.frames.ColumnMapping` reads other column names (and may give K, so
that no column ``n_actions`` is needed); iglearn writes its own layout.

Its values may be separated by commas, semicolons or tabs, as its header line shows
(:func:`dialect`: spreadsheets export semicolons where the comma is the decimal mark); with
semicolons or tabs, numbers may be written with a decimal comma (``35,2``). iglearn writes
commas and decimal points.

An empty cell is a missing value; in a column of numbers, so are ``NA``, ``NaN``, ``null``
and Arrow's other null texts, which in a column of text are text (:func:`read_table`).

Messages about a value name the column it is in and the line of the file its row begins on
(:class:`RecordLines`), as a text editor numbers lines (the header is line 1).

A CSV file is parsed whole (with Apache Arrow's reader) before it is checked, so it needs
memory for its rows; use Parquet for logs larger than memory. Written batch by batch.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import re
from array import array
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from iglearn.data.formats.arrow import arrow_array
from iglearn.data.formats.base import TableReader
from iglearn.data.formats.columns import NamedColumnsReader
from iglearn.data.frames import N_ACTIONS, ColumnMapping, fields_to_columns
from iglearn.data.logs import DTYPES, Places
from iglearn.errors import IGLearnError, shown
from iglearn.files import input_file

DELIMITERS = (",", ";", "\t")
"""The separators a ``.csv`` file may use, told by its first lines (:func:`dialect`)."""

_DECIMAL = {mark: re.compile(rb"^\s*[-+]?\d+" + re.escape(mark.encode()) + rb"\d+\s*$")
            for mark in ".,"}
"""A number written with a decimal point (``35.2``), or with a decimal comma (``35,2``)."""

SNIFFED_LINES = 64
"""The data lines :func:`dialect` reads for a decimal comma."""


_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
         (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
"""The byte-order marks of text that is not UTF-8, and their encodings."""


def check_utf8(path: Path, source: str) -> None:
    """An error naming the fix when the header line of the CSV file ``path`` (named
    ``source``) is not UTF-8 text: UTF-16 or UTF-32 (its byte-order mark says so, as in
    Excel's "Unicode text"; NUL bytes without one), or bytes UTF-8 does not read (Latin-1,
    Windows-1252)."""
    with open(path, "rb") as file:
        header = file.readline(2**20)
    encoding = next((name for bom, name in _BOMS if header.startswith(bom)), None)
    if encoding is not None:
        problem = f"is {encoding} text (its byte-order mark says so)"
    elif b"\x00" in header:
        problem = "holds NUL bytes, as UTF-16 text does"
    else:
        try:  # (incremental: a header cut at 1 MiB may end within a character)
            codecs.getincrementaldecoder("utf-8")().decode(header)
            return
        except UnicodeDecodeError as e:
            problem = (f"is not UTF-8 text (its header line holds the byte "
                       f"0x{header[e.start]:02x}: Latin-1 or Windows-1252 text, perhaps)")
    raise IGLearnError(f"{source}: the file {problem}; save it as UTF-8 (in Excel: Save As, "
                       f"CSV UTF-8)")


def dialect(path: Path) -> tuple[str, str]:
    """The separator and decimal mark of the CSV file ``path``. The separator is the one of
    :data:`DELIMITERS` (outside quotes) that splits the header line into the most columns and
    its first :data:`SNIFFED_LINES` data lines into as many each (a header ``temp, C;f0;f1``
    is separated by semicolons); when none splits every line alike, the one that splits the
    header into the most (a comma on a tie; a row of another count is then named). With
    another separator than the comma, the decimal mark is a comma when a value of those
    lines is written with one and none with a decimal point (both: the values that do not
    read are named as text)."""
    with open(path, "rb") as file:  # a line is read up to 1 MiB (a hostile file: one line)
        header = file.readline(2**20)
        lines = [file.readline(2**20) for _ in range(SNIFFED_LINES)]
        whole = not file.read(1)
    text = b"".join([header, *lines]).decode("utf-8", errors="replace")
    delimiter = max(DELIMITERS, key=lambda d: _split(text, d, whole))
    values = [value.strip().strip(b'"') for line in lines
              for value in line.split(delimiter.encode())]
    marks = {mark for mark, number in _DECIMAL.items() if any(map(number.match, values))}
    return delimiter, "," if delimiter != "," and marks == {","} else "."


def _split(text: str, delimiter: str, whole: bool) -> tuple[bool, int]:
    """How well ``delimiter`` splits ``text``, the first lines of a CSV file (``whole``: the
    file entire, else its last row may be cut): whether it splits the header into several
    columns and every row into as many, and the header's number of columns."""
    try:
        rows = [row for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
                if row]
    except csv.Error:  # a field beyond the csv module's limit: no telling
        return False, 0
    if not rows:
        return False, 0
    header, data = rows[0], rows[1:] if whole else rows[1:-1]
    return len(header) > 1 and all(len(row) == len(header) for row in data), len(header)


class CsvReader(NamedColumnsReader):
    """Reads a ``.csv`` log or context set (parsed whole, then served in row batches).

    Args:
        path: the file.
        columns: which columns hold which field (default: iglearn's layout).
        n_actions: K when neither ``columns`` nor a column ``n_actions`` gives it (a model's).
        wanted: the fields to read (default: all the file holds).
    """

    def __init__(self, path: Path, columns: ColumnMapping | None = None,
                 n_actions: int | None = None, wanted: Collection[str] | None = None):
        self.path = path
        source = str(path)
        input_file(path)
        check_utf8(path, source)
        try:
            delimiter, decimal = dialect(path)
            table = read_table(path, delimiter, decimal)
        except PermissionError:
            raise IGLearnError(f"{source}: cannot read the file (permission denied); check its "
                               f"permissions") from None
        except (pa.ArrowException, OSError, UnicodeDecodeError) as e:
            ragged = _ragged_row(path, delimiter) if isinstance(e, pa.ArrowException) else None
            if ragged is not None:
                raise IGLearnError(
                    f"{source}, line {ragged.number}: {ragged.actual_columns} "
                    f"field{'s' if ragged.actual_columns != 1 else ''} "
                    f"({shown(ragged.text)}) where the header names {ragged.expected_columns} "
                    f"columns; give every row one field per header column (an empty field "
                    f"for a missing value), or remove the line") from None
            raise IGLearnError(f"{source}: not a readable CSV file ({shown(str(e))}); write it "
                               f"with a header row of column names and one row per "
                               f"interaction") from None
        if table.num_rows == 0:
            raise IGLearnError(f"{source}: the file has a header but no rows; it needs at least "
                               f"one interaction")
        super().__init__(table, source, columns, n_actions,
                         Places("line", RecordLines(path, delimiter)), wanted)


def read_table(path: Path, delimiter: str, decimal: str) -> pa.Table:
    """The CSV file ``path`` as an Arrow table. An empty cell is a missing value in every
    column (an unlabelled row of named actions, say); a column of numbers also reads
    Arrow's null texts (``NA``, ``NaN``, ``null``, ``N/A``, ...) as missing, as R and other
    tools write a missing number, while a column of text keeps them as text: actions or
    labels named ``NA`` (a region) or ``null`` are names. A column of no name and no value
    (a separator ending every line) is left out."""
    parse = pacsv.ParseOptions(delimiter=delimiter)
    table = pacsv.read_csv(path, parse_options=parse, convert_options=pacsv.ConvertOptions(
        decimal_point=decimal, null_values=[""], strings_can_be_null=True))
    # a separator ending every line (as spreadsheets export): an empty column of no name
    table = table.select([i for i, name in enumerate(table.column_names)
                          if name.strip() or table.column(i).null_count < table.num_rows])
    names = table.column_names
    text = [name for i, name in enumerate(names)  # (a name given twice is refused later)
            if pa.types.is_string(table.schema.field(i).type) and names.count(name) == 1]
    if not text:
        return table
    # the columns of text again, Arrow's null texts missing: those that are numbers so
    numbers = pacsv.read_csv(path, parse_options=parse, convert_options=pacsv.ConvertOptions(
        decimal_point=decimal, include_columns=text))
    for name in text:
        column = numbers.column(name)
        if not (pa.types.is_string(column.type) or pa.types.is_null(column.type)):
            table = table.set_column(names.index(name), name, column)
    return table


class RecordLines:
    """The line of a CSV file on which each of its rows (counted from 0 after the header)
    begins, as the file is parsed: empty lines are skipped, and a quoted value may span lines.
    The file is read again for it on the first call only, so a file whose values are all
    good (no message names a row) is read once."""

    def __init__(self, path: Path, delimiter: str):
        self.path, self.delimiter = path, delimiter
        self._lines: array | None = None

    def __call__(self, row: int) -> int:
        if self._lines is None:
            self._lines = self._scan()
        return self._lines[row] if 0 <= row < len(self._lines) else row + 2

    def _scan(self) -> array:
        lines = array("q")
        with open(self.path, newline="", encoding="utf-8", errors="replace") as file:
            reader = csv.reader(file, delimiter=self.delimiter)
            header = False
            while True:
                first = reader.line_num + 1
                try:
                    record = next(reader)
                except (StopIteration, csv.Error):
                    return lines
                if not record:  # an empty line
                    continue
                if header:
                    lines.append(first)
                header = True


def _ragged_row(path: Path, delimiter: str) -> Any:
    """The first row of the CSV file ``path`` whose number of fields differs from the
    header's (pyarrow's ``InvalidRow``: its line number, counts and text), or None. Read again
    on one thread, the one way pyarrow knows the row's line number."""
    found = []

    def keep(row: Any) -> str:
        found.append(row)
        return "error"

    with contextlib.suppress(pa.ArrowException, OSError, UnicodeDecodeError):
        pacsv.read_csv(path, read_options=pacsv.ReadOptions(use_threads=False),
                       parse_options=pacsv.ParseOptions(delimiter=delimiter,
                                                        invalid_row_handler=keep))
    return found[0] if found and found[0].number is not None else None


def write_csv(reader: TableReader, tmp: Path) -> None:
    """Write ``reader``'s table to ``tmp`` batch by batch, in the layout of the module
    docstring; floats with enough digits to read back the same value."""
    info = reader.info
    writer = None
    try:
        for _, batch in reader.validated_batches():
            rows = len(batch["context"])
            columns = fields_to_columns(_Batch(batch, info.n_actions))
            columns[N_ACTIONS] = np.full(rows, info.n_actions, dtype=np.int64)
            table = pa.table({name: arrow_array(value) for name, value in columns.items()})
            if writer is None:
                writer = pacsv.CSVWriter(str(tmp), table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


class _Batch:
    """A batch of fields seen as a table (what :func:`fields_to_columns` reads)."""

    def __init__(self, batch: dict[str, np.ndarray], n_actions: int):
        self.n_actions = n_actions
        for name in DTYPES:
            setattr(self, name, batch.get(name))
