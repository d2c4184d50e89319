"""Interaction logs as tables of named columns: pandas DataFrames and CSV files.

The default column layout (the same for a DataFrame and a ``.csv`` file):

- a vector field (``context``, ``feedback``) is either one column per position, named
  ``<field>_0``, ``<field>_1``, ... (numbered from 0 without gaps), or, in a DataFrame only, one
  column ``<field>`` whose cells are equal-length lists or arrays;
- a scalar field is one column of its name: ``action``, ``probability``, optionally
  ``definitely_bad`` (true or false, 1 or 0: IGL-P's definitely-bad flag) and, for evaluation
  only, ``reward`` and ``label``;
- the number of actions K is given as an argument, or as a column ``n_actions`` holding the
  same value on every row.

A :class:`ColumnMapping` reads a table with other column names: the context from ``age``,
``clicks`` and every column starting with ``emg_``, say, the action from ``arm``. Every column
must be read by a field (or be K's column ``n_actions``) or be listed in ``ignore``: any other
column is an error naming it, so that a misspelt mapping cannot silently drop a feature. A row
index written with the table (a column without a name, or pandas' ``Unnamed: 0``, holding the
row numbers from 0 or 1) is left unread.
A mapping that renames a field is kept in the feature schema (:class:`FeatureSchema
<iglearn.data.formats.base.FeatureSchema>` ``.columns``, with the column names resolved), and so
in a model fitted on the table: ``predict`` on a table with the same column names needs no
mapping again.

Columns hold numbers: integers, floats, booleans (read as 1 and 0), pandas' nullable numbers
and categoricals of numbers (read as their values), decimals (read as the nearest floats), or
object columns whose every value is a number. A column of durations, dates and times, text,
or other objects is refused, naming the column and how to convert it (durations:
``frame[col].dt.total_seconds()``, say).

A log needs context, action, probability and feedback; a context set, context (and maybe
label). The values go through the checks of :class:`~iglearn.data.logs.InteractionLog` and
:class:`~iglearn.data.contexts.ContextSet`, so the messages are those of every other format.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from iglearn.data.logs import (
    MATRIX_FIELDS,
    ROWS,
    Places,
    check_n_actions,
    field_values,
    rows_failing,
)
from iglearn.errors import IGLearnError, option_list, shown, warn_caller

if TYPE_CHECKING:
    import pandas as pd

    from iglearn.data.contexts import ContextSet
    from iglearn.data.formats.base import FeatureSchema
    from iglearn.data.logs import InteractionLog

SCALAR_FIELDS = ("action", "probability", "reward", "label", "definitely_bad")
"""Fields of one value per row, each one column."""
N_ACTIONS = "n_actions"
"""The column that may hold K, the same on every row."""
ORDER = ("context", "action", "probability", "feedback", "reward", "label", "definitely_bad")
LOGGED = ("action", "probability", "feedback")
"""Fields that, with the context, make an interaction log: all of them or none."""
PREFIX = "*"
"""Ends a column mapping entry that selects every column whose name starts with the rest."""
MISSING = ("refuse", "drop")
"""What :attr:`ColumnMapping.missing` may do with a row that has a missing value."""
_POSITION = re.compile(r"(context|feedback)_(0|[1-9][0-9]{0,8})")
_UNNAMED = re.compile(r"|Unnamed: 0|__index_level_\d+__")
"""The name of a table's row index column: none, or pandas' name for an unnamed first
column."""
_SHOWN_COLUMNS = 8


@dataclass(frozen=True)
class ColumnMapping:
    """Which columns of a table (a DataFrame, a ``.csv`` file) hold which field of a log.

    The defaults are iglearn's own layout (see :mod:`iglearn.data.frames`); each field names
    other columns. A vector field is a tuple of entries, each the name of a column of numbers,
    the name of a column of equal-length lists (a DataFrame only), or ``NAME*``: every column
    whose name starts with ``NAME``, in the order of the number after it when every one ends
    in a number (``emg_2`` before ``emg_10``), else in the table's order.
    """

    context: tuple[str, ...] | None = None
    """Columns of the context: names, NAME* for every column starting with NAME, or (in a
    DataFrame) one column of lists (none: context_0, context_1, ..., or a column context)"""
    feedback: tuple[str, ...] | None = None
    """Columns of the feedback, as for the context (none: feedback_0, feedback_1, ..., or a
    column feedback)"""
    action: str = "action"
    """Column of the logged actions, integers in [0, K)"""
    probability: str = "probability"
    """Column of the logging policy's probabilities of the logged actions, or uniform when the
    actions were played uniformly at random (1/K on every row, no column)"""
    reward: str = "reward"
    """Column of the latent rewards in [-1, 1], if present (evaluation only)"""
    label: str = "label"
    """Column of the correct actions, if present (evaluation only)"""
    definitely_bad: str = "definitely_bad"
    """Column of the definitely-bad flags (true or false) IGL-P reads, if present"""
    n_actions: int | None = None
    """The number of actions K, so that the table needs no column n_actions (none: from a
    column n_actions holding K on every row)"""
    ignore: tuple[str, ...] | None = None
    """Columns to leave unread (NAME* for every column starting with NAME); any other column
    no field reads is an error (none: ignore no column)"""
    actions: tuple[str, ...] | None = None
    """The actions as the action and label columns name them, in the order of their indices
    0 to K - 1: words such as left,right, or numbers such as 1,2,3 (K is their number; none:
    the columns hold the indices)"""
    missing: Literal["refuse", "drop"] = "refuse"
    """A row with a missing value (an empty cell, NaN, None) in a column a field reads:
    refuse the table, naming the row, or drop such rows, saying how many and which (a model
    keeps refuse: predict answers every row)"""

    def __post_init__(self) -> None:
        for name in ("context", "feedback", "ignore"):
            entries = getattr(self, name)
            if entries is None:
                continue
            if isinstance(entries, str) or not isinstance(entries, Iterable):
                entries = (entries,)  # one entry: a name, or what is refused below
            entries = tuple(entries)
            if not entries and name == "ignore":  # an empty list ignores nothing
                object.__setattr__(self, name, None)
                continue
            if not entries:
                raise IGLearnError(f"column mapping: {name} selects no column; name at least "
                                   f"one, or leave it out for the default")
            for entry in entries:
                if isinstance(entry, int | np.integer) and not isinstance(entry, bool):
                    raise IGLearnError(f"column mapping: {name} holds the number {entry}; name "
                                       f"each column as text ('{entry}': a DataFrame's "
                                       f"numbered columns are read by their numbers as text)")
                if not isinstance(entry, str) or entry.rstrip(PREFIX) == "":
                    raise IGLearnError(f"column mapping: {name} holds {shown(entry)}; each "
                                       f"entry is a column name, or NAME{PREFIX} for every "
                                       f"column starting with NAME")
            object.__setattr__(self, name, entries)
        for name in SCALAR_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise IGLearnError(f"column mapping: {name} is {shown(value)}; give the name "
                                   f"of the column that holds it")
            if value.endswith(PREFIX):
                what = ("the logged action's probability (a table of one probability per "
                        "action needs the logged action's picked out into one column "
                        "first)" if name == "probability" else "one value per row")
                raise IGLearnError(f"column mapping: {name} is {shown(value)}, a prefix; "
                                   f"{name} reads one column, {what}")
        if isinstance(self.actions, str):  # a list's items, not the text's letters
            names = [name.strip() for name in self.actions.split(",")]
            raise IGLearnError(f"column mapping: actions is the text {shown(self.actions)}; give "
                               f"the names as a list, in the order of their indices "
                               f"(actions={names!r})")
        if self.actions is not None:
            # whole numbers (actions numbered 1..K) or numpy strings: the names as text, as a
            # table's column shows them
            for action in self.actions:
                if isinstance(action, float | np.floating):
                    raise IGLearnError(f"column mapping: actions holds the number "
                                       f"{float(action)!r}; name each action as text, or as "
                                       f"a whole number, as the column writes it")
            object.__setattr__(self, "actions", tuple(
                str(int(action)) if isinstance(action, int | np.integer)
                and not isinstance(action, bool | np.bool_)
                else str(action) if isinstance(action, np.str_) else action
                for action in self.actions))
        if self.n_actions is not None:
            object.__setattr__(self, "n_actions", check_n_actions(self.n_actions,
                                                                  "column mapping"))
        if self.actions is not None:
            self._check_actions()
        if self.missing not in MISSING:
            raise IGLearnError(f"column mapping: missing is {shown(self.missing)}; choose one "
                               f"of {', '.join(MISSING)}")

    def _check_actions(self) -> None:
        """``actions``: at least two distinct non-empty names, their number K (which
        ``n_actions``, when given, must be)."""
        names = tuple(cast(Sequence[str], self.actions))
        for name in names:
            if not (isinstance(name, str) and name):
                raise IGLearnError(f"column mapping: actions holds {shown(name)}; name each "
                                   f"action as the action column writes it (left, or 1)")
        twice = [name for name, count in Counter(names).items() if count > 1]
        if twice:
            raise IGLearnError(f"column mapping: actions names {shown(twice[0])} twice; each "
                               f"action needs one index")
        k = check_n_actions(len(names), "column mapping (the number of actions named)")
        if self.n_actions is not None and self.n_actions != k:
            raise IGLearnError(f"column mapping: actions names {k} actions but n_actions is "
                               f"{self.n_actions}; give one of them")
        object.__setattr__(self, "actions", names)
        object.__setattr__(self, "n_actions", k)

    @property
    def renames(self) -> bool:
        """True when a field is read from other columns than the default layout's (K and the
        ignored columns aside): such a mapping is kept in the feature schema."""
        default = ColumnMapping()
        return self.actions is not None or any(getattr(self, name) != getattr(default, name)
                                               for name in (*MATRIX_FIELDS, *SCALAR_FIELDS))

    def to_json(self) -> dict:
        """A JSON-ready dictionary (tuples as lists; ``actions`` only when named and
        ``missing`` only when not 'refuse', so that a model folder without them reads in
        iglearn versions before them)."""
        record = {f.name: list(value) if isinstance(value := getattr(self, f.name), tuple)
                  else value for f in fields(self)}
        if record["actions"] is None:
            del record["actions"]
        if record["missing"] == "refuse":
            del record["missing"]
        return record

    @classmethod
    def from_json(cls, record: object, source: str) -> ColumnMapping:
        """Parse :meth:`to_json`'s output; ``source`` names the file in error messages."""
        if not isinstance(record, dict) or set(record) - {f.name for f in fields(cls)}:
            raise IGLearnError(f"{source}: the column mapping must be an object with the keys "
                               f"{', '.join(f.name for f in fields(cls))}; write it again")
        values: dict[str, Any] = {}
        for key, value in record.items():
            if key in (*MATRIX_FIELDS, "ignore", "actions"):
                if value is not None and not (isinstance(value, list) and all(
                        isinstance(v, str) for v in value)):
                    raise IGLearnError(f"{source}: column mapping entry '{key}' must be a list "
                                       f"of column names or null")
                value = None if value is None else tuple(value)
            elif key in SCALAR_FIELDS and not isinstance(value, str):
                raise IGLearnError(f"{source}: column mapping entry '{key}' must be a column "
                                   f"name")
            values[key] = value
        try:
            return cls(**values)
        except IGLearnError as e:
            raise IGLearnError(f"{source}: {e}") from None


def mapping_of(base: ColumnMapping | None = None, **given: Any) -> ColumnMapping:
    """``base`` (default: the default layout) with the fields in ``given`` that are not None
    in place of its own; a vector field may be given as one string (one entry) or any
    sequence of strings. A column that a given field names and ``base`` ignores is read
    (:func:`given_fields_read`); a model's columns given in another order are read in the
    model's (:func:`in_model_order`)."""
    chosen = {name: value for name, value in given.items() if value is not None}
    mapping = given_fields_read(replace(base or ColumnMapping(), **chosen), chosen)
    return mapping if base is None else in_model_order(base, mapping, chosen)


ORDERED = ("context", "feedback", "actions")
"""The mapping's fields whose entries a model reads by position: its columns, the actions'
names."""


def in_model_order(model: ColumnMapping, mapping: ColumnMapping, given: Collection[str]
                   ) -> ColumnMapping:
    """``mapping`` (a ``model``'s mapping with the fields in ``given`` set anew: the columns
    of a table to predict on or evaluate) with each of its :data:`ORDERED` fields that names
    the model's own entries in another order put in the model's order: the model reads them
    by position, so ``--context score,age`` for a model fitted on ``age,score`` would read
    each column as the other. Entries of other names are new names for the model's, by
    position (a table whose columns were renamed); a model's entry given at another position
    among them is refused."""
    changed: dict[str, Any] = {}
    for field in ORDERED:
        ours, theirs = getattr(model, field), getattr(mapping, field)
        if field not in given or ours is None or theirs is None or theirs == ours:
            continue
        if any(entry.endswith(PREFIX) for entry in (*ours, *theirs)):
            continue  # a prefix stands for several columns: positions do not compare
        if sorted(theirs) == sorted(ours):
            changed[field] = ours
            continue
        for i, entry in enumerate(theirs):
            if entry in ours and ours.index(entry) != i:
                what = "action" if field == "actions" else f"{field} column"
                raise IGLearnError(
                    f"column mapping: {field} names the model's {what} {shown(entry)} at "
                    f"position {i + 1}, but the model reads it at {ours.index(entry) + 1} "
                    f"({', '.join(ours)}); give the model's {field} in its order, a new name "
                    f"at the place of the one it stands for")
    return replace(mapping, **changed) if changed else mapping


def given_fields_read(mapping: ColumnMapping, given: Collection[str]) -> ColumnMapping:
    """``mapping`` without the ``ignore`` entries that a field in ``given`` (the names of the
    fields just set: a model's mapping, then ``label=`` or ``--reward`` to evaluate) reads by
    name, unless ``ignore`` is among them: a model's mapping may ignore the column an
    evaluation reads as its reward; one mapping that both reads and ignores a column is
    refused (:meth:`_Selection.use`)."""
    if "ignore" in given or not mapping.ignore:
        return mapping
    read: set[str] = set()
    for name in given:  # the fields that name columns (not K, missing, the actions' names)
        value = getattr(mapping, name)
        if name in SCALAR_FIELDS and value is not None:
            read.add(value)
        elif name in MATRIX_FIELDS and value is not None:
            read.update(value)
    kept = tuple(entry for entry in mapping.ignore if entry not in read)
    return mapping if len(kept) == len(mapping.ignore) else replace(mapping, ignore=kept or None)


def _missing_value(value: object) -> bool:
    return (value is None or (isinstance(value, float) and value != value)
            or type(value).__name__ in ("NAType", "NaTType"))


def _missing_cell(value: object) -> bool:
    """Whether a cell is missing, or is a list (a column of lists) holding a missing value."""
    if isinstance(value, np.ndarray | list | tuple):
        return any(map(_missing_value, np.ravel(np.asarray(value, dtype=object))))
    return _missing_value(value)


def _nan_cells(cells: np.ndarray) -> np.ndarray | None:
    """Which cells of a column of lists of numbers (arrays, as pyarrow and pandas give them)
    hold a NaN, all cells at once; None when the cells are not all lists of numbers."""
    if not len(cells) or not isinstance(cells[0], np.ndarray | list | tuple):
        return None
    try:
        flat = np.concatenate(cells)
    except (TypeError, ValueError):  # a cell that is no list (None), or lists of lists
        return None
    if flat.dtype.kind not in "biufc":
        return None
    out = np.zeros(len(cells), dtype=bool)
    lengths = np.fromiter(map(len, cells), np.int64, len(cells))
    if flat.dtype.kind in "fc" and len(flat):
        nan = np.isnan(flat).reshape(len(flat), -1).any(axis=1)
        filled = lengths > 0
        out[filled] = np.logical_or.reduceat(nan, (np.cumsum(lengths) - lengths)[filled])
    return out


def missing_rows(values: np.ndarray) -> np.ndarray:
    """Which values of a column are missing: None, NaN, pandas' NA or NaT, or a list cell
    (a column of lists) holding one (booleans)."""
    if values.dtype == object:
        nan = _nan_cells(values)
        if nan is not None:
            return nan
        return np.array([_missing_cell(v) for v in values], dtype=bool)
    if values.dtype.kind in "fc":
        return np.isnan(values)
    if values.dtype.kind in "mM":
        return np.isnat(values)
    return np.zeros(len(values), dtype=bool)


def _missing(name: str, values: np.ndarray, source: str, places: Places = ROWS,
             field: str | None = None) -> None:
    """An error naming the first row of ``values`` that is missing (None, or NaN in a column
    that is not a vector's), as ``places`` names rows; ``field``: the field the column is
    read for (a label, which no fit reads, has a fix of its own)."""
    if values.dtype != object and (values.dtype.kind != "f" or name in MATRIX_FIELDS):
        return
    bad = np.flatnonzero(missing_rows(values))
    if not len(bad):
        return
    where = f"{source}: column {shown(name)} holds a missing value at {places.row(int(bad[0]))}"
    if field == "label":  # a partly labelled log
        unmap = "" if name == "label" else ", not as label"
        raise IGLearnError(f"{where}; to evaluate, read the labelled rows only "
                           f"(missing='drop', --missing drop); to fit, which reads no label, "
                           f"leave the column unread (ignore=[{name!r}]{unmap}; --ignore "
                           f"{name}{'' if name == 'label' else ' without --label'})")
    raise IGLearnError(f"{where}; remove or impute those rows (to fit or evaluate, they may "
                       f"be dropped instead: missing='drop', --missing drop; predict answers "
                       f"every row, so it takes none missing)")


def _list_column(name: str, field: str, cells: np.ndarray, source: str,
                 places: Places = ROWS) -> np.ndarray:
    """A column of equal-length sequences of numbers as an (n, d) array."""
    _missing(name, cells, source, places)
    lengths = {len(np.atleast_1d(np.asarray(cell))) for cell in cells}
    if len(lengths) > 1:
        raise IGLearnError(f"{source}: column {shown(name)} holds vectors of lengths "
                           f"{sorted(lengths)[:3]}; every row needs the same number of values")
    try:
        block = np.stack([np.atleast_1d(np.asarray(cell)) for cell in cells])
    except (TypeError, ValueError) as e:
        raise IGLearnError(f"{source}: column {shown(name)} does not hold numeric vectors "
                           f"({e}); give lists of numbers, or one column per value") from None
    return _numbers(name, field, block, source, places)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | Decimal | np.bool_ | np.integer | np.floating)


def _reads_as_number(value: object) -> bool:
    """Whether ``value`` is a number or a text that reads as one ("35.2", " 7 ")."""
    if _is_number(value):
        return True
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def _text_problem(flat: np.ndarray, bad: int) -> tuple[int, str, str] | None:
    """For a column whose first non-number, at ``bad``, is a text: where the trouble is, what
    it is and the fix, when its values read as numbers but some are written with a decimal
    comma, a few are words (a stray word among measurements) or all are texts (numbers written
    as text); None for a column of words."""
    texts = [i for i, value in enumerate(flat) if not _is_number(value)]
    stray = [i for i in texts if not _reads_as_number(flat[i])]
    if stray and all(_reads_as_number(str(flat[i]).replace(",", ".", 1)) for i in stray):
        return stray[0], "numbers with a decimal comma", (
            "write them with a decimal point (a CSV file separated by semicolons or tabs may "
            "use decimal commas throughout)")
    if not stray:
        return bad, "numbers written as text", ("convert them to numbers first, e.g. "
                                                "pandas.to_numeric(frame[col])")
    if len(stray) < len(flat) - len(stray):  # a few strays among numbers
        return stray[0], "a value that is not a number", (
            "correct or remove those rows (or impute them), or map the column to numbers")
    return None


def _what(kind: str, example: object = None) -> tuple[str, str]:
    """What values of the NumPy dtype kind ``kind`` (or the object ``example``) are, and how
    to make numbers of them."""
    if kind == "m" or (example is not None and "timedelta" in type(example).__name__.lower()):
        return "durations", "convert them to numbers first, e.g. frame[col].dt.total_seconds()"
    if kind == "M" or (example is not None and ("time" in type(example).__name__.lower()
                                                or "date" in type(example).__name__.lower())):
        return "dates or times", ("convert them to numbers first (e.g. seconds since a start) "
                                  "or leave the column unread (ignore=[...], --ignore)")
    if kind in "USa" or isinstance(example, str | bytes):
        return "text", ("map it to numbers first (codes, or one column per category) or leave "
                        "the column unread (ignore=[...], --ignore)")
    if kind == "c":
        return "complex numbers", "give their real parts, or real and imaginary as two columns"
    if isinstance(example, dict):  # the cells of a struct or map column (Parquet, Arrow)
        return "key-value maps", ("give one column per key (a struct or map column "
                                  "flattened), or leave the column unread (ignore=[...], "
                                  "--ignore)")
    what = f"{type(example).__name__} objects" if example is not None else "values"
    return what, "give numbers, or leave the column unread (ignore=[...], --ignore)"


_TEXT_FIXES = {"probability": "write each as a number in (0, 1] (0.33, not 33%)",
               "definitely_bad": "write each flag as true or false (or 1 or 0)"}
"""How to write a field whose column holds text, where mapping it to codes does not fit."""


def _numbers(name: str, field: str, values: np.ndarray, source: str, places: Places = ROWS
             ) -> np.ndarray:
    """The values of column ``name`` (read by ``field``) as a real-number array: an object
    column whose every value is a number becomes one; a column of anything else
    (durations, dates, text, other objects) is an error naming the column and the fix."""
    if values.dtype == object:
        flat = values.reshape(-1)
        bad = next((i for i, value in enumerate(flat) if not _is_number(value)), None)
        if bad is None and len(flat):
            # decimals (a SQL NUMERIC column, a Parquet decimal) as the floats nearest them
            values = np.array([float(value) if isinstance(value, Decimal) else value
                               for value in flat.tolist()]).reshape(values.shape)
            if values.dtype == object:   # Python ints beyond 64 bits
                raise IGLearnError(f"{source}: column {shown(name)} holds integers beyond 64 "
                                   f"bits; {field} columns hold numbers within ±2**63 (scale "
                                   f"them, or give them as floats)")
        if bad is not None:
            what, fix = _what("O", flat[bad])
            problem = _text_problem(flat, bad) if isinstance(flat[bad], str) else None
            if problem is not None:
                bad, what, fix = problem
            elif what == "text":
                fix = _TEXT_FIXES.get(field, fix)
            row = bad // max(1, flat.size // max(1, len(values)))
            raise IGLearnError(f"{source}: column {shown(name)} holds {what} "
                               f"({shown(flat[bad])} at {places.row(row)}); {field} columns hold "
                               f"numbers: {fix}")
    if values.dtype.kind not in "biuf":
        what, fix = _what(values.dtype.kind)
        fix = _TEXT_FIXES.get(field, fix) if what == "text" else fix
        raise IGLearnError(f"{source}: column {shown(name)} holds {what} "
                           f"({shown(str(values.dtype))}); {field} columns hold numbers: {fix}")
    return values


UNIFORM = "uniform"
"""The ``probability`` of a mapping for a log whose actions were played uniformly at random:
1/K on every row, read from no column (unless the table has a column of that name)."""
CODED_FIELDS = ("action", "label")
"""The fields that hold actions: named actions (``ColumnMapping.actions``) are read into their
indices there."""
_SHOWN_ACTIONS = 12
"""The most distinct words of an action column an error suggests as ``--actions``."""


def _action_names(values: np.ndarray) -> np.ndarray:
    """Each value of an action column as the text that names it: a text as it is, an integer
    (or a float holding one) as its digits, '3' for 3.0."""
    if values.dtype.kind in "biu":
        return values.astype(np.int64).astype(str)
    if values.dtype.kind == "f" and bool(np.all(np.floor(values) == values)):
        return values.astype(np.int64).astype(str)
    return np.array([str(int(v)) if _is_number(v) and float(v).is_integer() else str(v)
                     for v in values.tolist()], dtype=str)


def action_indices(name: str, values: np.ndarray, actions: Sequence[str], source: str,
                   places: Places = ROWS) -> np.ndarray:
    """The index (0 to K - 1) of each value of the action (or label) column ``name``, by its
    position in ``actions``; a value naming none of them is an error naming it, its row and
    the fix."""
    names, inverse = np.unique(_action_names(values), return_inverse=True)
    index = {action: i for i, action in enumerate(actions)}
    if values.dtype.kind in "biuf" and all(re.fullmatch(r"0*[0-9]+", a) for a in actions):
        # codes with leading zeros (01, 02) that a CSV reader read as numbers: by value
        by_value = {str(int(action)): i for i, action in enumerate(actions)}
        if len(by_value) == len(actions):
            index = by_value | index
    unknown = [i for i, action in enumerate(names.tolist()) if action not in index]
    if unknown:
        row = int(np.flatnonzero(np.isin(inverse, unknown))[0])  # the first such row
        raise IGLearnError(f"{source}: column {shown(name)} holds "
                           f"{shown(str(names[inverse[row]]))} at {places.row(row)}, none of the "
                           f"actions ({_listing(actions)}); name every action, in the order of "
                           f"their indices (actions=[...], --actions)")
    return np.array([index[action] for action in names.tolist()], dtype=np.int64)[inverse]


def _check_not_named(name: str, field: str, values: np.ndarray, source: str,
                     places: Places = ROWS) -> None:
    """An error when the action (or label) column ``name`` holds words, naming the first row
    that holds one: a few words among indices are told as values to correct (naming their
    rows); a column of words as actions to name, suggesting the mapping that reads them (the
    words it holds, sorted, to be put in the order of their indices)."""
    if values.dtype.kind not in "OUS":
        return
    cells = values.tolist()
    words = np.array([isinstance(cell, str | bytes) and not _reads_as_number(cell)
                      for cell in cells], dtype=bool)
    if not words.any():
        return
    first = int(np.flatnonzero(words)[0])
    where = f"{shown(cells[first])} at {places.row(first)}"
    count = int(words.sum())
    if count < len(cells) - count:  # a few words among indices: values to correct
        raise IGLearnError(f"{source}: column {shown(name)} holds a word among action "
                           f"indices ({where}); correct or remove the rows that hold words, "
                           f"{rows_failing(words, np.logical_not, 0, places)}, or, if every "
                           f"action has a name, name them all in the order of their indices "
                           f"(actions=[...], --actions)")
    names = sorted({str(cell) for cell in cells if isinstance(cell, str | bytes)})
    suggested = option_list(names[:_SHOWN_ACTIONS]) + (
        ",..." if len(names) > _SHOWN_ACTIONS else "")
    raise IGLearnError(f"{source}: column {shown(name)} names the actions in words ({where}); "
                       f"{field} columns hold indices 0 to K - 1 unless the actions are named: "
                       f"give the names in the order of their indices, actions=[...] "
                       f"(--actions {suggested}, sorted here: reorder them so that the first "
                       f"is action 0)")


def _row_numbers(values: np.ndarray) -> bool:
    """Whether ``values`` are the row numbers, from 0 or from 1."""
    if values.dtype.kind not in "iuf" or not len(values):
        return False
    first = values[0]
    return first in (0, 1) and bool(np.array_equal(values, np.arange(len(values)) + first))


def _index_like(values: np.ndarray) -> bool:
    """Whether the values of a table's unnamed first column can be the row index pandas'
    ``to_csv`` or R's ``write.csv`` writes: distinct labels (numbers of a filtered frame's
    rows, words, dates), not a measurement with fractions (38.17) nor a repeated id (a
    blank header cell over a feature, which would be dropped unseen)."""
    if values.dtype.kind == "f" and not np.all(np.isfinite(values) & (values == np.round(values))):
        return False
    try:
        return len(np.unique(values)) == len(values)
    except TypeError:  # mixed objects that do not sort: no index pandas writes
        return False


def _listing(names: Sequence[str]) -> str:
    """A few names (of columns, or of actions), for a message."""
    shown_names = ", ".join(shown(name) for name in names[:_SHOWN_COLUMNS])
    return shown_names + (", ..." if len(names) > _SHOWN_COLUMNS else "")


def near_name(wanted: str, names: Sequence[str]) -> str:
    """"did you mean 'arm'?" for a column name a mapping gives that the table lacks: the
    table's name that differs only in case, else the closest by spelling; "" when none is
    close. A ``NAME*`` entry is matched on its prefix."""
    import difflib

    prefix = wanted.endswith(PREFIX)
    stem = wanted.rstrip(PREFIX)
    candidates = sorted({name[:len(stem)] if prefix else name for name in names})
    same = [name for name in candidates if name.lower() == stem.lower()]
    close = same or difflib.get_close_matches(stem, candidates, n=1, cutoff=0.6)
    if not close or close[0] == stem:  # the name itself is no suggestion
        return ""
    return f"did you mean {shown(close[0] + (PREFIX if prefix else ''))}?"


def selects(entry: str, name: str) -> bool:
    """Whether the mapping entry ``entry`` reads the column ``name``: it is the name, or
    ``NAME*`` and the name starts with NAME."""
    return name.startswith(entry.rstrip(PREFIX)) if entry.endswith(PREFIX) else name == entry


def check_unique_names(names: Sequence[str], source: str) -> None:
    """An error naming a column name that ``names`` (a table's columns) holds twice."""
    twice = [name for name, count in Counter(names).items() if count > 1]
    if twice:
        raise IGLearnError(f"{source}: {list(names).count(twice[0])} columns are named "
                           f"{shown(twice[0])}; give each column its own name")


class _Selection:
    """The columns of one table that a :class:`ColumnMapping` reads, resolved and checked."""

    def __init__(self, names: Sequence[str], mapping: ColumnMapping, source: str):
        self.names = [str(name) for name in names]
        self.mapping = mapping
        self.source = source
        self.used: dict[str, str] = {}
        check_unique_names(self.names, source)

    def use(self, column: str, field: str) -> None:
        """Record that ``field`` reads ``column``; an error if another field (or this one)
        already does."""
        if column in self.used:
            other = self.used[column]
            where = f"twice by {field}" if other == field else f"by both {other} and {field}"
            raise IGLearnError(f"{self.source}: column {shown(column)} is read {where}; map "
                               f"each column to one field once")
        # an ignored prefix may cover columns a field reads (emg_* ignores the rest of them),
        # a column ignored by its name may not
        if column in (self.mapping.ignore or ()):
            raise IGLearnError(f"{self.source}: column {shown(column)} is read as {field} and "
                               f"ignored; keep one (drop it from ignore, or map no field to "
                               f"it)")
        self.used[column] = field

    def expand(self, entry: str, field: str) -> list[str]:
        """The columns a mapping entry names: itself, or every column it is a prefix of (a
        prefix no column starts with is an error naming it)."""
        found = self._matching(entry)
        if not found:
            near = near_name(entry, self.names)
            raise IGLearnError(f"{self.source}: no column starts with "
                               f"{shown(entry.rstrip(PREFIX))} ({field} {shown(entry)}"
                               f"{'; ' + near if near else ''}); the columns are "
                               f"{_listing(self.names)}")
        return found

    def _matching(self, entry: str) -> list[str]:
        """:meth:`expand`'s columns, none when a prefix starts no column: numbered ones in
        the order of their numbers."""
        if not entry.endswith(PREFIX):
            return [entry]
        prefix = entry.rstrip(PREFIX)
        found = [name for name in self.names if selects(entry, name)]
        rests = [name[len(prefix):] for name in found]
        if found and all(rest.isdigit() for rest in rests):
            found = [name for _, name in sorted(zip(map(int, rests), found, strict=True))]
        return found

    def vector_columns(self, field: str, strict: bool = True) -> list[str]:
        """The columns of a vector field, in order; empty when the table has none of them.
        Not ``strict`` (a field whose values are not read), those of them the table has."""
        entries = getattr(self.mapping, field)
        if entries is None:
            return self._default_columns(field)
        if not strict:
            return [name for entry in entries for name in self._matching(entry)
                    if name in self.names]
        columns = [name for entry in entries for name in self.expand(entry, field)]
        absent = [name for name in columns if name not in self.names]
        if absent and (len(absent) < len(columns) or field == "context"):
            near = near_name(absent[0], self.names)
            if f"{field}_0" in self.names:  # iglearn's layout, as convert writes a CSV
                fix = (f"the table is in iglearn's layout ({field}_0, ...), which keeps no "
                       f"column names: map those columns instead ({field}=['{field}_*'], "
                       f"--{field} '{field}_*', and the other fields likewise), or convert "
                       f"to Parquet, which keeps the names")
            else:
                fix = f"map the table's own columns ({field}=[...], --{field})"
            raise IGLearnError(f"{self.source}: no column {shown(absent[0])}, which the column "
                               f"mapping reads as {field}{f' ({near})' if near else ''}; the "
                               f"columns are {_listing(self.names)}; {fix}")
        return [] if absent else columns

    def _default_columns(self, field: str) -> list[str]:
        found = {}
        for name in self.names:
            match = _POSITION.fullmatch(name)
            if match and match.group(1) == field:
                found[int(match.group(2))] = name
        if found and field in self.names:
            raise IGLearnError(f"{self.source}: field '{field}' is given both as column "
                               f"'{field}' and as columns {field}_0, ...; keep one")
        if not found:
            return [field] if field in self.names else []
        gap = next(i for i in range(len(found) + 1) if i not in found)
        if gap < len(found):
            raise IGLearnError(f"{self.source}: columns {field}_0.. skip {field}_{gap}; number "
                               f"the {field} columns from 0 without gaps")
        return [found[i] for i in range(len(found))]

    def layout(self, field: str) -> str:
        """Where the mapping looks for ``field``, for a message."""
        entries: tuple[str, ...] | None = getattr(self.mapping, field, None)
        if field in MATRIX_FIELDS and entries is None:
            return f"columns {field}_0, {field}_1, ... or one column '{field}' of lists"
        if field in MATRIX_FIELDS and entries is not None:
            return f"{field}={','.join(entries)}"
        return f"a column {shown(getattr(self.mapping, field))}"

    def unread(self, k_column: str | None, values: Callable[[str], np.ndarray],
               index: Collection[str] = (), ignorable: bool = True) -> None:
        """An error naming the columns no field reads and ``ignore`` does not list, but for
        a row index: a column without a name (or named as pandas names one, ``Unnamed: 0``,
        ``__index_level_0__``) that comes first and looks like an index (:func:`_index_like`:
        no measurement such as 38.17, no repeated id) or holds the row numbers (``values``
        gives a column's values, :func:`_row_numbers`),
        as pandas' ``to_csv`` and R's ``write.csv`` write unless told not to (a filtered
        frame's index numbers its rows with gaps), and the ``index`` columns (a DataFrame's
        named index levels, as ``to_parquet`` stores them). Unless ``ignorable`` (a fitted
        model's columns, read from a frame by :meth:`~iglearn.learners.base.PolicyLearner.
        predict`, which takes no ``ignore``), the fix is to drop them from the frame."""
        ignored = {name for entry in self.mapping.ignore or ()
                   for name in self.names if selects(entry, name)}  # none: ignores nothing
        left = [name for name in self.names
                if name not in self.used and name != k_column and name not in ignored
                and name not in index
                and not (_UNNAMED.fullmatch(name) and (
                    (name == self.names[0] and _index_like(np.asarray(values(name))))
                    or _row_numbers(np.asarray(values(name)))))]
        if not left:
            return
        if "" in left:  # no name, so no entry of ignore reads it
            raise IGLearnError(
                f"{self.source}: column {self.names.index('') + 1} has no name but holds "
                f"values; give it a name in the header (then map it to a field or ignore it), "
                f"or remove it")
        what, it = ((f"column {shown(left[0])} is", "it") if len(left) == 1
                    else (f"columns {_listing(left)} are", "them"))
        if not ignorable:
            raise IGLearnError(
                f"{self.source}: {what} not among the model's columns "
                f"({_listing(list(self.used)) or 'none'}); drop {it} from the frame first "
                f"(frame.drop(columns={left!r}))")
        raise IGLearnError(
            f"{self.source}: {what} read by no field (the columns read are "
            f"{_listing(list(self.used)) or 'none'}); map {it} to a field (context=[...], "
            f"feedback=[...], action=..., ...; --context, ... on the command line), drop or "
            f"rename {it}, or leave {it} unread with ignore=[...] (--ignore)")


def read_columns(names: Sequence[str], whole: Callable[[str], np.ndarray],
                 mapping: ColumnMapping, source: str, default_n_actions: int | None = None,
                 places: Places = ROWS, wanted: Collection[str] | None = None,
                 index: Collection[str] = (), ignorable: bool = True
                 ) -> tuple[dict[str, np.ndarray], int, FeatureSchema | None]:
    """The fields (context, action, ...), K and the feature schema of a table whose columns
    are ``names`` (``whole(name)`` gives one column's values), read as ``mapping`` says.

    K comes from ``mapping.n_actions``, else a column ``n_actions`` (which must agree with it
    when both are given), else ``default_n_actions``. The schema is None unless the mapping
    renames a field (:attr:`ColumnMapping.renames`); then it holds the mapping with the column
    names resolved and K, and names each vector position as a DSJSON feature: column ``age``
    is ``^age`` (the default namespace), position i of a column ``emb`` of lists ``emb^i``.
    Every problem is an error naming the column, the row (as ``places`` names rows: a CSV
    file's line, say) and the fix; the fields' values are checked here (as
    :class:`~iglearn.data.logs.InteractionLog` checks them, given in the fields' types), so
    that a message about a value names the column it came from. With ``mapping.missing``
    'drop', the rows with a missing value in a column read are left out first
    (:func:`_kept_rows`), and the messages still number the rows as the table does.
    ``wanted``: the fields to read (the context and labels, to predict on a log): the
    columns of the others are mapped and checked as ever, their values not read, so a
    missing or bad value there is no error. ``index``: columns that held a DataFrame's index
    (a Parquet file's pandas metadata says which), left unread unless the mapping reads them.
    ``ignorable``: whether a column read by no field is told to be ignored (``ignore``) or,
    for a fitted model's columns, dropped (:meth:`_Selection.unread`).
    """
    from iglearn.data.formats.base import FeatureSchema

    table = _Selection(names, mapping, source)
    kept = None
    converted: dict[str, np.ndarray] = {}  # with 'drop': the columns read, converted once
    def skipped(field: str) -> bool:
        return wanted is not None and field not in wanted

    if mapping.missing == "drop":
        read = [name for field in MATRIX_FIELDS if not skipped(field)
                for name in table.vector_columns(field)] + [
            name for field in SCALAR_FIELDS
            if not skipped(field) and (name := getattr(mapping, field)) in table.names]
        converted = {name: np.asarray(whole(name)) for name in read}
        kept, places = _kept_rows(converted, source, places)

    def column(name: str) -> np.ndarray:  # the kept rows only
        values = converted.pop(name) if name in converted else np.asarray(whole(name))
        return values if kept is None else values[kept]

    fields_: dict[str, np.ndarray] = {}
    resolved: dict[str, Any] = {}
    positions: dict[str, list[str]] = {}
    resolved_columns: dict[str, tuple[str, ...]] = {}  # each field's column, position by position
    for field in MATRIX_FIELDS:
        selected = table.vector_columns(field, strict=not skipped(field))
        if not selected:
            continue
        blocks, positions[field] = [], []
        for name in selected:
            table.use(name, field)
            if skipped(field):
                continue
            values = np.asarray(column(name))
            if values.dtype == object and any(
                    isinstance(cell, Sequence | np.ndarray) and not isinstance(cell, str | bytes)
                    for cell in values[:1]):
                block = _list_column(name, field, values, source, places)
                positions[field] += [f"{name}^{i}" for i in range(block.shape[1])]
            else:
                _missing(name, values, source, places)
                block = _numbers(name, field, values, source, places)[:, None]
                positions[field].append(f"^{name}")
            blocks.append(block)
            resolved_columns[field] = (*resolved_columns.get(field, ()), *[name] * block.shape[1])
        resolved[field] = tuple(selected)
        if blocks:
            fields_[field] = blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)
    for field in SCALAR_FIELDS:
        name = getattr(mapping, field)
        if name in table.names and not (name == field and name in (mapping.ignore or ())):
            # (a column named as its field, ignored by name, is left unread: ignore=['label']
            # leaves a partly filled label column out of a fit)
            table.use(name, field)
            if skipped(field):
                continue
            values = np.asarray(column(name))
            _missing(name, values, source, places, field)
            if field in CODED_FIELDS and mapping.actions is not None:
                fields_[field] = action_indices(name, values, mapping.actions, source, places)
            else:
                if field in CODED_FIELDS:
                    _check_not_named(name, field, values, source, places)
                fields_[field] = _numbers(name, field, values, source, places)
            resolved_columns[field] = (name,)
    k_column = N_ACTIONS if N_ACTIONS in table.names and N_ACTIONS not in table.used else None
    n_actions = mapping.n_actions
    if k_column is not None:
        values = np.unique(_numbers(k_column, N_ACTIONS, np.asarray(column(k_column)), source))
        if len(values) != 1:
            raise IGLearnError(f"{source}: column 'n_actions' holds {len(values)} different "
                               f"values; it must hold K, the same on every row")
        from_column = check_n_actions(values[0], source, "column 'n_actions'")
        if n_actions is not None and n_actions != from_column:
            raise IGLearnError(f"{source}: column 'n_actions' says K = {from_column}, but "
                               f"K = {n_actions} is given (n_actions=, --n-actions, or the "
                               f"model's K when it reads the table); they must agree: drop "
                               f"or correct one, or use the model's actions")
        n_actions = from_column
    if n_actions is None:
        n_actions = default_n_actions
    if n_actions is None:
        raise IGLearnError(f"{source}: the number of actions K is unknown; pass n_actions= "
                           f"(--n-actions on the command line) or add a column 'n_actions' (K "
                           f"on every row)")
    if mapping.probability == UNIFORM and UNIFORM not in table.names and "action" in fields_:
        fields_["probability"] = np.full(len(fields_["action"]), 1.0 / n_actions)
    read_logged = [name for name in LOGGED if not skipped(name)]
    logged = [name for name in read_logged if name in fields_]
    if ("context" not in fields_ and not skipped("context")) \
            or 0 < len(logged) < len(read_logged):
        name = next(name for name in ("context", *LOGGED)
                    if name not in fields_ and not skipped(name))
        uniform = (f", or probability={UNIFORM!r} (--probability {UNIFORM}) if the actions "
                   f"were played uniformly at random" if name == "probability" else "")
        given = getattr(mapping, name)
        near = near_name(given, table.names) if isinstance(given, str) else ""
        if given in table.names:  # named as its field and ignored: left unread
            near = f"ignore lists {shown(given)}: drop it from ignore"
        raise IGLearnError(f"{source}: no column for field '{name}' ({table.layout(name)}"
                           f"{uniform}{'; ' + near if near else ''}); an interaction log "
                           f"needs context, action, probability and feedback, a context set "
                           f"the context only")
    table.unread(k_column, whole, index, ignorable)
    schema = None
    if mapping.renames:  # a model's mapping answers every row: predict drops none
        schema = FeatureSchema(tuple(positions.get("context", ())),
                               tuple(positions.get("feedback", ())),
                               replace(mapping, **resolved, n_actions=n_actions,
                                       missing="refuse"))
    places = replace(places, columns=resolved_columns)
    return ({name: field_values(name, fields_[name], source, n_actions, places=places)
             for name in ORDER if name in fields_}, n_actions, schema)


def _kept_rows(columns: Mapping[str, np.ndarray], source: str,
               places: Places) -> tuple[np.ndarray | None, Places]:
    """For ``missing='drop'``: the rows (a mask) with no missing value (:func:`missing_rows`)
    in any of the ``columns`` read (by name), or None when every row is complete; and
    ``places`` numbering the kept rows as the table does. Dropping is told in a warning naming
    the rows; a table of no complete row is an error."""
    names = list(columns)
    gone: np.ndarray | None = None
    for values in columns.values():
        missing = missing_rows(values)
        gone = missing if gone is None else gone | missing
    if gone is None or not gone.any():
        return None, places
    if gone.all():
        raise IGLearnError(f"{source}: every row has a missing value in a column read "
                           f"({_listing(names)}); impute them, or read other columns")
    warn_caller(f"{source}: dropped {rows_failing(gone, np.logical_not, 0, places)} with a "
                f"missing value in a column read; {int((~gone).sum())} rows are left")
    rows = np.flatnonzero(~gone)
    return ~gone, replace(places, number=lambda row: places.number(int(rows[row])))


def fields_to_columns(table: object,
                      vectors: Literal["columns", "lists"] = "columns") -> dict[str, Any]:
    """The columns of ``table`` (a log, a context set: any object with the fields as
    attributes, None where absent) in the layout of the module docstring (without K)."""
    out: dict[str, Any] = {}
    for name in ORDER:
        value = getattr(table, name, None)
        if value is None:
            continue
        if name in MATRIX_FIELDS and vectors == "lists":
            out[name] = list(value)
        elif name in MATRIX_FIELDS:
            out.update({f"{name}_{i}": value[:, i] for i in range(value.shape[1])})
        else:
            out[name] = value
    return out


def mapped_index(frame: pd.DataFrame, mapping: ColumnMapping) -> pd.DataFrame:
    """``frame`` with each named index level that ``mapping`` names (a field's column, one
    that a ``NAME*`` entry selects, or an ``ignore`` entry) made a column, as
    ``reset_index`` makes it: a log indexed by its action, its user or its time reads as the
    same table with a plain index. Any other index, named or not, stays unread, as a table's
    row index is; a level named as a column is left to the column."""
    columns = {str(name) for name in frame.columns}
    levels = [name for name in frame.index.names
              if isinstance(name, str) and name not in columns]
    if not levels:
        return frame
    entries = [entry for name in ("context", "feedback", "ignore")
               for entry in getattr(mapping, name) or ()]
    entries += [getattr(mapping, name) for name in SCALAR_FIELDS]
    read = [level for level in levels if any(selects(entry, level) for entry in entries)]
    if not read:
        return frame
    import pandas as pd

    # reset_index(level=read) without its column insertions, which pandas warns about on a
    # frame of many blocks (a fresh read_csv of 130 columns)
    rest = frame.reset_index(level=read, drop=True)
    levels_read = frame.index.to_frame(index=False)[read].set_axis(rest.index)
    return pd.concat([levels_read, rest], axis=1)


def is_pandas(value: object) -> bool:
    """Whether ``value`` is a pandas DataFrame (without importing pandas)."""
    return any(cls.__name__ == "DataFrame" and cls.__module__.startswith("pandas")
               for cls in type(value).__mro__)


def is_table(value: object) -> bool:
    """Whether ``value`` is a table of named columns that :func:`as_pandas` reads: a pandas
    DataFrame, or another library's table with ``to_pandas()`` and named columns (a polars
    DataFrame, a pyarrow Table)."""
    if is_pandas(value):
        return True
    named = hasattr(value, "columns") or hasattr(value, "column_names")
    return named and callable(getattr(value, "to_pandas", None))


def as_pandas(frame: object, source: str) -> pd.DataFrame:
    """``frame`` as a pandas DataFrame: itself, or another library's table converted by its
    own ``to_pandas()`` (polars, pyarrow), which keeps the column names; anything else is
    refused naming what it is."""
    if is_pandas(frame):
        return cast("pd.DataFrame", frame)
    if is_table(frame):
        converted = cast(Any, frame).to_pandas()
        if is_pandas(converted):
            return cast("pd.DataFrame", converted)
    raise IGLearnError(f"{source}: a {type(frame).__module__}.{type(frame).__name__} is not a "
                       f"table iglearn reads; pass a pandas DataFrame, or a table with "
                       f"to_pandas() (polars, pyarrow)")


def frame_columns(frame: pd.DataFrame, mapping: ColumnMapping, source: str,
                  wanted: Collection[str] | None = None, ignorable: bool = True
                  ) -> tuple[dict[str, np.ndarray], int, FeatureSchema | None]:
    """:func:`read_columns` on a DataFrame (:func:`mapped_index` first), or on another
    library's table (:func:`as_pandas`); K may also be ``frame.attrs['n_actions']``;
    ``wanted``: the fields to read; ``ignorable``: as :func:`read_columns` says."""
    frame = as_pandas(frame, source)
    attrs = frame.attrs.get(N_ACTIONS)
    frame = mapped_index(frame, mapping)
    names = [str(c) for c in frame.columns]

    def column(name: str) -> np.ndarray:  # names are unique once read_columns asks
        values = frame.iloc[:, names.index(name)].to_numpy()
        return values if values.flags.writeable else values.copy()  # pandas' copy-on-write
    return read_columns(names, column, mapping, source,
                        None if attrs is None else check_n_actions(attrs, source), ROWS, wanted,
                        ignorable=ignorable)


def from_frame(frame: pd.DataFrame, mapping: ColumnMapping | None = None,
               source: str = "data frame") -> InteractionLog:
    """The interaction log a DataFrame holds, its columns read as ``mapping`` says (default:
    the layout of the module docstring); K from the mapping, a column ``n_actions`` or
    ``frame.attrs['n_actions']``. A mapping that renames a field is the log's ``schema``."""
    from iglearn.data.logs import InteractionLog

    fields_, k, schema = frame_columns(frame, mapping or ColumnMapping(), source)
    if "action" not in fields_:
        raise IGLearnError(f"{source}: no column for field 'action' (a column "
                           f"{shown((mapping or ColumnMapping()).action)}); an interaction log "
                           f"needs context, action, probability and feedback")
    return InteractionLog(n_actions=k, source=source, schema=schema, **fields_)


def contexts_from_frame(frame: pd.DataFrame, mapping: ColumnMapping | None = None,
                        source: str = "data frame",
                        wanted: Collection[str] = ("context", "label")) -> ContextSet:
    """The contexts (and labels, if any) of a DataFrame holding a context set or a log, its
    columns read as ``mapping`` says (no other field's values are read: a missing feedback
    value is no error; ``wanted`` ("context",): not the labels either)."""
    from iglearn.data.contexts import ContextSet

    fields_, k, _ = frame_columns(frame, mapping or ColumnMapping(), source, wanted)
    return ContextSet(fields_["context"], k, fields_.get("label"), source)


def to_frame(table: InteractionLog | ContextSet,
             vectors: Literal["columns", "lists"] = "columns") -> pd.DataFrame:
    """A DataFrame of ``table``: vectors as columns ``context_0``, ... (``vectors='columns'``)
    or as one column of arrays (``'lists'``); K in ``frame.attrs['n_actions']``."""
    import pandas as pd

    if vectors not in ("columns", "lists"):
        raise IGLearnError(f"vectors={vectors!r}; use 'columns' or 'lists'")
    frame = pd.DataFrame(fields_to_columns(table, vectors))
    frame.attrs[N_ACTIONS] = table.n_actions
    return frame
