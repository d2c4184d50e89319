"""Interaction logs as tables of named columns: pandas DataFrames and CSV files.

The column layout (the same for a DataFrame and a ``.csv`` file):

- a vector field (``context``, ``feedback``) is either one column per position, named
  ``<field>_0``, ``<field>_1``, ... (numbered from 0 without gaps), or, in a DataFrame only, one
  column ``<field>`` whose cells are equal-length lists or arrays;
- a scalar field is one column of its name: ``action``, ``probability``, optionally
  ``definitely_bad`` (true or false, 1 or 0: IGL-P's definitely-bad flag) and, for evaluation
  only, ``reward`` and ``label``;
- the number of actions K is given as an argument, or as a column ``n_actions`` holding the
  same value on every row (a CSV file always has it, since CSV holds no other metadata).

A log needs context, action, probability and feedback; a context set, context (and maybe
label). Every other column is an error naming it. The values go through the checks of
:class:`~iglearn.data.logs.InteractionLog` and
:class:`~iglearn.data.contexts.ContextSet`, so the messages are those of every other format.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from iglearn.data.logs import MATRIX_FIELDS, check_n_actions
from iglearn.errors import IGLearnError, shown

if TYPE_CHECKING:
    import pandas as pd

    from iglearn.data.contexts import ContextSet
    from iglearn.data.logs import InteractionLog

SCALAR_FIELDS = ("action", "probability", "reward", "label", "definitely_bad")
"""Fields of one value per row, each one column of its name."""
N_ACTIONS = "n_actions"
"""The column that may hold K, the same on every row."""
ORDER = ("context", "action", "probability", "feedback", "reward", "label", "definitely_bad")
_POSITION = re.compile(r"(context|feedback)_(0|[1-9][0-9]{0,8})")


def _missing(name: str, values: np.ndarray, source: str) -> None:
    """An error naming the first row of ``values`` that is missing (None, or NaN in a column
    that is not a vector's)."""
    if values.dtype == object:
        bad = np.flatnonzero([v is None or (isinstance(v, float) and v != v) for v in values])
    elif values.dtype.kind == "f" and name not in MATRIX_FIELDS:
        bad = np.flatnonzero(np.isnan(values))
    else:
        return
    if len(bad):
        raise IGLearnError(f"{source}: column '{name}' holds a missing value at row {bad[0]}; "
                           f"remove or impute those rows")


def _list_column(name: str, cells: np.ndarray, source: str) -> np.ndarray:
    """A column of equal-length sequences as an (n, d) array."""
    _missing(name, cells, source)
    lengths = {len(np.atleast_1d(np.asarray(cell))) for cell in cells}
    if len(lengths) > 1:
        raise IGLearnError(f"{source}: column '{name}' holds vectors of lengths "
                           f"{sorted(lengths)[:3]}; every row needs the same number of values")
    try:
        return np.stack([np.atleast_1d(np.asarray(cell)) for cell in cells])
    except (TypeError, ValueError) as e:
        raise IGLearnError(f"{source}: column '{name}' does not hold numeric vectors ({e}); "
                           f"give lists of numbers, or columns {name}_0, {name}_1, ...") from None


def columns_to_fields(columns: Mapping[str, np.ndarray], n_actions: int | None, source: str
                      ) -> tuple[dict[str, np.ndarray], int]:
    """The fields (context, action, ...) and K held in named columns laid out as the module
    docstring says; every problem is an error naming the column and the fix."""
    positions: dict[str, dict[int, np.ndarray]] = {"context": {}, "feedback": {}}
    fields: dict[str, np.ndarray] = {}
    k_column = None
    for name, values in columns.items():
        values = np.asarray(values)
        match = _POSITION.fullmatch(str(name))
        if match:
            positions[match.group(1)][int(match.group(2))] = values
        elif name in MATRIX_FIELDS:
            fields[name] = _list_column(name, values, source)
        elif name in SCALAR_FIELDS:
            _missing(name, values, source)
            fields[name] = values
        elif name == N_ACTIONS:
            k_column = values
        else:
            raise IGLearnError(f"{source}: column {shown(str(name))} is not an iglearn field; "
                               f"the columns are context_0.., action, probability, "
                               f"feedback_0.., and optionally reward, label, definitely_bad, "
                               f"n_actions: drop or rename it")
    for name, found in positions.items():
        if not found:
            continue
        if name in fields:
            raise IGLearnError(f"{source}: field '{name}' is given both as column '{name}' and "
                               f"as columns {name}_0, ...; keep one")
        gap = next(i for i in range(len(found) + 1) if i not in found)
        if gap < len(found):
            raise IGLearnError(f"{source}: columns {name}_0.. skip {name}_{gap}; number the "
                               f"{name} columns from 0 without gaps")
        for i in found:
            _missing(f"{name}_{i}", found[i], source)
        fields[name] = np.stack([found[i] for i in range(len(found))], axis=1)
    if k_column is not None:
        values = np.unique(k_column)
        if len(values) != 1:
            raise IGLearnError(f"{source}: column 'n_actions' holds {len(values)} different "
                               f"values; it must hold K, the same on every row")
        from_column = check_n_actions(values[0], source)
        if n_actions is not None and n_actions != from_column:
            raise IGLearnError(f"{source}: n_actions={n_actions} but column 'n_actions' says "
                               f"{from_column}; give one")
        n_actions = from_column
    if n_actions is None:
        raise IGLearnError(f"{source}: the number of actions K is unknown; pass n_actions= or "
                           f"add a column 'n_actions'")
    return {name: fields[name] for name in ORDER if name in fields}, n_actions


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


def from_frame(frame: pd.DataFrame, n_actions: int | None = None,
               source: str = "data frame") -> InteractionLog:
    """The interaction log a DataFrame holds (see the module docstring); K from
    ``n_actions``, a column ``n_actions`` or ``frame.attrs['n_actions']``."""
    from iglearn.data.logs import InteractionLog

    if n_actions is None and N_ACTIONS not in frame.columns:
        n_actions = frame.attrs.get(N_ACTIONS)
    fields, k = columns_to_fields({str(c): frame[c].to_numpy() for c in frame.columns},
                                  n_actions, source)
    missing = [name for name in ("context", "action", "probability", "feedback")
               if name not in fields]
    if missing:
        name = missing[0]
        layout = (f"columns {name}_0, {name}_1, ... or one column '{name}' of lists"
                  if name in MATRIX_FIELDS else f"a column '{name}'")
        raise IGLearnError(f"{source}: no column for field '{name}' ({layout}); an interaction "
                           f"log needs context, action, probability and feedback")
    return InteractionLog(n_actions=k, source=source, **fields)


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
