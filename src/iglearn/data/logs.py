"""Interaction logs: aligned arrays of (context, action, probability, feedback).

``reward`` (the latent reward, in [-1, 1]: 1 liked, 0 ignored, -1 disliked) and ``label``
(the correct action) are optional and exist for evaluation only: no IGL learner reads them.
``definitely_bad`` is an optional part of the feedback: a per-row flag that the user gave a
rare, unmistakably negative signal (an explicit dislike), which IGL-P reads.

Every value is checked in the type it arrived in, before it is cast to the field's type
(:data:`DTYPES`), so a cast never changes a value: a float action such as 3.7, an integer
beyond int64 or a context of 1e300 is an error showing the value as given. The bounds are
settings of :mod:`iglearn.data.limits`: contexts and feedback within ``MAX_ABS_VALUE``,
probabilities at least ``PROBABILITY_FLOOR``, K at most ``MAX_ACTIONS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from iglearn.data import limits
from iglearn.errors import IGLearnError, shown, warn_caller

if TYPE_CHECKING:
    import pandas as pd

    from iglearn.data.contexts import ContextSet
    from iglearn.data.formats.base import FeatureSchema

DTYPES = {"context": np.float32, "feedback": np.float32, "action": np.int64,
          "label": np.int64, "probability": np.float64, "reward": np.float32,
          "definitely_bad": np.bool_}
"""The type each field is held in."""
MATRIX_FIELDS = ("context", "feedback")
"""Fields with one vector per row."""
OPTIONAL = ("reward", "label", "definitely_bad")
"""Fields a log may lack."""
REAL_KINDS = "biuf"
"""NumPy dtype kinds a field may arrive in: booleans, integers and floats."""
_CHUNK = 65536
_ROWS_SHOWN = 5


def _from_zero(row: int) -> int:
    return row


@dataclass(frozen=True)
class Places:
    """How the messages about a table's values name its rows and columns: by default a row by
    its position counted from 0 ('row 17') and a field by its name ('field 'feedback''); a
    table read from named columns names the column a value came from (``columns``: each
    field's columns, a vector field's in the order of its positions), and a file of text lines
    the line a row is written on (``noun`` 'line', ``number`` the line of a row:
    :class:`~iglearn.data.formats.csv.CsvReader`)."""

    noun: str = "row"
    """What a row is called: 'row' or 'line'."""
    number: Callable[[int], int] = _from_zero
    """The number a row (counted from 0) is called by."""
    columns: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """The columns each field was read from (none: the field is named)."""

    def row(self, row: int) -> str:
        """'row 17', or 'line 19'."""
        return f"{self.noun} {self.number(row)}"

    def value(self, name: str, column: int = 0) -> str:
        """What holds position ``column`` of field ``name``: "column 'dwell_ms' (feedback)",
        "column 'action'" (a column named as its field), or "field 'feedback'"."""
        columns = self.columns.get(name)
        if not columns or column >= len(columns):
            return f"field '{name}'"
        return f"column {shown(columns[column])}" + (
            "" if columns[column] == name else f" ({name})")


ROWS = Places()
"""Rows counted from 0, fields by name: how the messages of a table without names speak."""


def check_n_actions(value: object, source: str, name: str = "n_actions") -> int:
    """The number of actions K as an int in [2, MAX_ACTIONS], or an error naming the fix and
    ``name``, where K was given (a column of a table: "column 'n_actions'"). A float holding
    a whole number is one (3.0: pandas writes a column of integers with a missing value as
    floats)."""
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise IGLearnError(f"{source}: field 'n_actions' must be one integer, got shape "
                               f"{value.shape}")
        value = value.reshape(()).item()
    if isinstance(value, np.generic):   # datetime64[ns].item() would be an int: not K
        value = value.item() if value.dtype.kind in "iuf" else str(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not (
            2 <= value <= limits.MAX_ACTIONS):
        raise IGLearnError(f"{source}: {name} is {shown(value)}; it must be an integer >= 2 "
                           f"and <= {limits.MAX_ACTIONS} (the number of actions K; "
                           f"iglearn.data.limits.MAX_ACTIONS)")
    return value


def _first_bad(array: np.ndarray, ok: Callable[[np.ndarray], np.ndarray]
               ) -> tuple[tuple[int, ...], object] | None:
    """(index, value) of the first entry of ``array`` failing ``ok`` (its row first), or None;
    scans in chunks of rows so that a large (or memory-mapped) array needs no full-size
    temporary."""
    for start in range(0, len(array), _CHUNK):
        chunk = array[start:start + _CHUNK]
        good = ok(chunk)
        if not good.all():
            index = tuple(int(i) for i in np.argwhere(~good)[0])
            return (start + index[0], *index[1:]), chunk[index]
    return None


def rows_failing(array: np.ndarray, ok: Callable[[np.ndarray], np.ndarray],
                 first_row: int = 0, places: Places = ROWS) -> str:
    """The rows failing ``ok``, as 'rows 3, 9 (2 rows)' (or 'lines 5, 11 (2 rows)':
    ``places``) listing at most a few."""
    rows: list[int] = []
    count = 0
    for start in range(0, len(array), _CHUNK):
        bad = np.flatnonzero(~ok(array[start:start + _CHUNK]))
        count += len(bad)
        rows.extend(first_row + start + int(r) for r in bad[:_ROWS_SHOWN - len(rows)])
    listed = ", ".join(str(places.number(row)) for row in rows) + (
        ", ..." if count > len(rows) else "")
    plural = "s" if count > 1 else ""
    return f"{places.noun}{plural} {listed} ({count} row{plural})"


def as_array(value: object, name: str = "values", source: str = "input") -> np.ndarray:
    """``value`` (field ``name`` of ``source``, as messages name it) as a numpy array, as
    ``np.asarray`` reads it, except that: rows of different lengths are refused in one line
    (numpy's ValueError named no field); an array of Python objects that are all numbers or
    missing (what a pandas DataFrame of nullable numbers, ``Int64`` or ``Float64``, gives) is
    read as float64, a missing value as NaN; a torch tensor is read detached and on the CPU
    (bfloat16 as float32), whatever its gradient or device; and a SciPy sparse matrix is read
    as the dense array it stands for."""
    module = type(value).__module__
    if module.startswith("torch") and callable(getattr(value, "detach", None)):
        tensor = cast(Any, value).detach().cpu()
        return (tensor.float() if str(tensor.dtype) == "torch.bfloat16" else tensor).numpy()
    if module.startswith("scipy.sparse") and callable(getattr(value, "toarray", None)):
        return np.asarray(cast(Any, value).toarray())
    try:
        array = np.asarray(value)
    except ValueError:  # "inhomogeneous shape": a list of rows of different lengths
        raise IGLearnError(f"{source}: field '{name}' holds rows of different lengths, not an "
                           f"array; give every row the same number of values") from None
    if array.dtype == object and array.size:
        from iglearn.data.frames import _is_number, missing_rows  # frames imports this module

        flat = array.reshape(-1)
        missing = missing_rows(flat)
        if all(gone or _is_number(item) for gone, item in zip(missing, flat, strict=True)):
            array = np.where(missing, np.nan, flat).astype(np.float64).reshape(array.shape)
    return array


def _kind(name: str, array: np.ndarray, source: str) -> None:
    if array.dtype.kind not in REAL_KINDS or array.dtype.itemsize == 0:
        raise IGLearnError(f"{source}: field '{name}' has dtype {shown(str(array.dtype))}; "
                           f"expected real numbers (integers, floats or booleans)")


NAMES_WRITTEN_OUT = 20
"""Up to this many actions, the hint for actions numbered from 1 writes out their names, ready
to paste; more are given as an expression."""


def _numbered_from_one(array: np.ndarray, n_actions: int, named: bool) -> str | None:
    """The hint for actions outside [0, K) that run from 1 to K: numbered from 1 (as R,
    MATLAB and Julia number them); or that are K codes with gaps (0, 2, 5): to be named by
    them; or None. Only a table read from named columns (``named``: a CSV or Parquet file or
    a data frame, whose column mapping names the actions) is told to name them; other data (an
    ``.npz`` file, arrays) to renumber them."""
    if array.min() == 1 and array.max() == n_actions:
        named_fix = ""
        if named:
            listed = (f"actions=[{', '.join(repr(str(a)) for a in range(1, n_actions + 1))}], "
                      f"--actions {','.join(str(a) for a in range(1, n_actions + 1))}"
                      if n_actions <= NAMES_WRITTEN_OUT else
                      f"actions=[str(a) for a in range(1, {n_actions + 1})], --actions "
                      f"$(seq -s, 1 {n_actions})")
            named_fix = f", or read a table's column with the actions named ({listed})"
        return (f"the values run from 1 to {n_actions}, as if the actions were numbered from "
                f"1; iglearn numbers them from 0 to K - 1: subtract 1 from every value"
                f"{named_fix}")
    codes = np.unique(array)
    if len(codes) == n_actions <= NAMES_WRITTEN_OUT and codes.min() >= 0:
        # K codes with gaps (0, 2, 5): names, as the 1-based actions are
        names = [str(int(code)) for code in codes]
        renumber = ("number them from 0 to K - 1 first (numpy.searchsorted(codes, values) "
                    "gives each code's index)")
        fix = (f"read a table's column with the actions named by their codes, in the order "
               f"of their indices (actions=[{', '.join(map(repr, names))}], --actions "
               f"{','.join(names)}), or {renumber}" if named else renumber)
        return (f"the values are {len(codes)} codes ({', '.join(names)}), not the indices 0 to "
                f"K - 1; {fix}")
    return None


def _percentages(array: np.ndarray, n_actions: int | None = None) -> str | None:
    """The hint for probabilities that all lie in (0, 100], most of them above 1:
    percentages, or importance weights 1/p (all at least 1; every value K: uniform play's
    weight), or None (a few values above 1 among probabilities are typing errors, not a
    scale)."""
    low, high = float(array.min()), float(array.max())
    if not (low > 0 and 1 < high <= 100 and np.mean(array > 1) > 0.5):
        return None
    values = (f"every value is {low:.3g}" if low == high else
              f"the values run from {low:.3g} to {high:.3g}")
    percent = "percentages (divide every value by 100)"
    weights = "importance weights 1/p (take 1 / value)"
    if low < 1:  # below 1: no weight 1/p
        told = percent
    elif low == high and n_actions is not None and low == n_actions:
        told = f"{weights}: uniform play's over K = {n_actions} actions"
    elif low == high and n_actions is not None and abs(low * n_actions - 100) < n_actions:
        told = f"{percent}: uniform play's over K = {n_actions} actions"
    else:
        told = f"{percent} or {weights}"
    return f"{values}, as if they were {told}; a probability lies in (0, 1]"


def field_values(name: str, value: object, source: str, n_actions: int | None = None,
                 first_row: int = 0, single: bool = False, places: Places = ROWS,
                 bounded: bool = True) -> np.ndarray:
    """One field's values (any shape) as given, checked, then cast to ``DTYPES[name]``.

    Actions and labels must be integers in [0, n_actions); probabilities in
    [PROBABILITY_FLOOR, 1]; rewards in [-1, 1] (any finite value within ±MAX_ABS_VALUE when
    not ``bounded``: a regression's targets); definitely-bad flags 0 or 1 (booleans);
    contexts and feedback finite and within ±MAX_ABS_VALUE. Messages count rows from
    ``first_row`` and name rows and columns as ``places`` says; with ``single`` (one context
    or feedback vector, as a row), they name the vector's column instead.
    """
    array = as_array(value, name, source)
    _kind(name, array, source)
    if name == "probability" and array.dtype.kind == "b":  # True would be read as p = 1
        raise IGLearnError(f"{source}: {places.value(name, 0)} holds true/false values; a "
                           f"probability is a number in (0, 1], the chance with which the "
                           f"logged action was chosen: give those numbers")
    if array.dtype == np.float16:  # exactly, so that bounds such as K compare without overflow
        array = array.astype(np.float32)

    def require(ok: Callable[[np.ndarray], np.ndarray], problem: str,
                habit: Callable[[np.ndarray], str | None] | None = None,
                bounds: str = "") -> None:
        """Raise naming the first value failing ``ok`` and the ``problem``; or, where
        ``habit`` recognises in all the values a common way of writing them that explains
        the failure, the ``bounds`` they break and what ``habit`` tells."""
        bad = _first_bad(array, ok)
        if bad is not None:
            index, item = bad
            told = None if habit is None else habit(array)
            if told is not None:
                problem = f"{bounds}: {told}"
            if single:
                raise IGLearnError(f"{source}: this {name} holds {item!s} in column "
                                   f"{index[-1]}{problem}")
            what = places.value(name, index[1] if len(index) > 1 else 0)
            raise IGLearnError(f"{source}: {what} holds {item!s} at "
                               f"{places.row(first_row + index[0])}{problem}")

    floating = array.dtype.kind == "f"
    if name in ("action", "label"):
        if n_actions is None:
            raise TypeError(f"field_values needs n_actions to check field '{name}'")
        if floating:
            require(lambda a: np.isfinite(a) & (np.floor(a) == a),
                    f", not an integer; {name}s must be integers in [0, {n_actions})")
        require(lambda a: (a >= 0) & (a < n_actions),
                f", outside [0, {n_actions}); fix the value or set n_actions to the true "
                f"number of actions", partial(_numbered_from_one, n_actions=n_actions,
                                              named=bool(places.columns.get(name))),
                f", outside [0, {n_actions})")
    elif name == "probability":
        require(lambda a: (a > 0) & (a <= 1), ", outside (0, 1]; it must be the logging "
                "policy's probability of the logged action",
                partial(_percentages, n_actions=n_actions), ", outside (0, 1]")
        floor = limits.PROBABILITY_FLOOR
        if _first_bad(array, lambda a: a >= floor) is not None:
            raise IGLearnError(
                f"{source}: {places.value(name)} is below {floor:g} at "
                f"{rows_failing(array, lambda a: a >= floor, first_row, places)}: importance "
                f"weights 1/p above {1 / floor:g} let single interactions dominate every "
                f"estimate; check the logging, or lower iglearn.data.limits.PROBABILITY_FLOOR "
                f"if the logging policy did play them this rarely")
    elif name == "reward" and bounded:
        require(lambda a: (a >= -1) & (a <= 1),
                ", outside [-1, 1]; iglearn's rewards lie in [-1, 1] (1 rewarded, 0 not; "
                "IGL-P's -1 disliked): rescale them into it, e.g. divide by their largest "
                "magnitude")
    elif name == "definitely_bad":
        require(lambda a: (a == 0) | (a == 1),
                ", not a boolean; definitely_bad is true (1) or false (0) per interaction")
    else:
        if floating:
            require(np.isfinite, "; NaN or infinite values cannot be learned from: remove or "
                                 "impute those rows")
        bound = limits.MAX_ABS_VALUE
        if floating:  # a bound beyond the type's range holds for every finite value
            bound = min(bound, float(np.finfo(array.dtype).max))
        require(lambda a: (a >= -bound) & (a <= bound),
                f", beyond ±{bound:g}; {limits.TOO_LARGE_FIX}")
        if array.ndim == 2 and array.dtype.itemsize >= (8 if floating else 4):
            warning = lost_digits_warning(name, array, source, places)
            if warning is not None:
                warn_caller(warning)
    return array.astype(DTYPES[name], copy=False)


LOST_DIGITS_ROWS = 4096
""":func:`lost_digits_warning` reads at most this many rows (the first)."""

LOST_DIGITS_FIX = "subtract an offset (the column's first value or mean) before building the log"
"""What :func:`lost_digits_warning` tells a reader of a log to do."""


def lost_digits_warning(name: str, array: np.ndarray, source: str, places: Places = ROWS,
                        fix: str = LOST_DIGITS_FIX) -> str | None:
    """The warning of a column that varies by less than 2^-14 of its size, or None: held as
    float32 (about 7 significant digits, 2^-24 of a value's size) its values keep fewer than
    1,024 steps of their spread, and a column of timestamps in milliseconds or of values
    around 1e8 that vary in their last digits loses what it tells. Read on the first
    :data:`LOST_DIGITS_ROWS` rows of ``array`` (any float or integer type: the reader checks
    the values given, the service its stored float32 ones). ``fix``: what the user should
    do."""
    sample = array[:LOST_DIGITS_ROWS].astype(np.float64, copy=False)
    if not len(sample):
        return None
    low, high = sample.min(0), sample.max(0)
    spread, size = high - low, np.maximum(np.abs(low), np.abs(high))
    lost = np.flatnonzero((spread > 0) & (spread < size * 2.0 ** -14))
    if not len(lost):
        return None
    j = int(lost[0])
    more = f" (and {len(lost) - 1} more)" if len(lost) > 1 else ""
    column = (places.value(name, j) if name in places.columns
              else f"field '{name}' column {j}")
    return (f"{source}: {column}{more}: its values lie around {size[j]:.4g} and vary by only "
            f"{spread[j]:.3g}; iglearn holds them as float32 (about 7 significant digits), "
            f"which keeps few of their differences: {fix}")


def _shaped(name: str, value: object, source: str) -> np.ndarray:
    """``value`` as an array of the field's shape: (n, d) with d >= 1 for contexts and
    feedback (a vector becomes one column), (n,) for the others."""
    array = as_array(value, name, source)
    if name in MATRIX_FIELDS:
        if array.ndim == 1:
            array = array[:, None]
        if array.ndim != 2:
            raise IGLearnError(f"{source}: field '{name}' has shape {array.shape}; expected "
                               f"(n, d), one row per interaction")
        if array.shape[1] == 0:
            raise IGLearnError(f"{source}: field '{name}' has shape {array.shape}, no values "
                               f"per row; it needs at least one column")
    elif array.ndim != 1:
        raise IGLearnError(f"{source}: field '{name}' has shape {array.shape}; expected (n,), "
                           f"one value per interaction")
    return array


def model_rows(name: str, value: object, width: int | None, source: str,
               single: bool = False) -> np.ndarray:
    """Contexts or feedback vectors (``name`` 'context' or 'feedback') handed to a fitted model,
    checked as a log's are and cast to float32: a matrix of real numbers, one row per vector,
    with the ``width`` values the model was fitted on (None: not checked), finite and within
    ±MAX_ABS_VALUE; a vector is one column only where the model reads one value, and no rows
    at all is allowed (nothing to predict). An error names the problem and the fix; with
    ``single`` (one vector, given as one row), a bad value by its column, not by a row."""
    array = as_array(value, name, source)
    _kind(name, array, source)
    if array.ndim == 1 and width != 1:
        raise IGLearnError(f"{source}: field '{name}' has shape {array.shape}; expected (n, "
                           f"{width or 'd'}), one row per {name} vector (for a single one: "
                           f"values.reshape(1, -1))")
    array = _shaped(name, array, source)
    if width is not None and array.shape[1] != width:
        raise IGLearnError(f"{source}: the {name} vectors have {array.shape[1]} values but the "
                           f"model was fitted on {width}; give vectors of the fitted dimension")
    return field_values(name, array, source, single=single)


def row_values(name: str, value: object, n: int, source: str, n_actions: int | None = None,
               unit: str = "interaction", bounded: bool = True) -> np.ndarray:
    """One value of field ``name`` (action, probability, reward or label) for each of ``n``
    rows handed to a learner outside a log (labels to score, an online learner's
    interactions), checked as a log's are (:func:`field_values`; actions and labels against
    ``n_actions``); ``unit`` names a row in the message; ``bounded``: as for
    :func:`field_values`."""
    array = _shaped(name, value, source)
    _check_rows(name, array, n, source, unit=unit)
    return field_values(name, array, source, n_actions, bounded=bounded)


def label_accuracy(actions: np.ndarray, labels: object, n_actions: int) -> float:
    """The share of ``actions`` (a model's, one per context) equal to ``labels``, the labels
    checked as a log's are (:func:`row_values`: one integer in [0, n_actions) per context);
    no contexts is an error."""
    labels = row_values("label", labels, len(actions), "labels", n_actions, unit="context")
    if not len(actions):
        raise IGLearnError("labels: there are no contexts to measure accuracy on; give at "
                           "least one")
    return float((actions == labels).mean())


def standard_error(total: Any, squares: Any, n: int) -> Any:
    """The standard error of the mean of n values from their sum and their sum of squares
    (the sample variance over n - 1; 0 for a single value), of one sum or of an array of
    them."""
    total = np.asarray(total, np.float64)
    if n < 2:
        error = np.zeros_like(total)
    else:
        variance = np.maximum(np.asarray(squares, np.float64) - total * total / n, 0.0) / (n - 1)
        error = np.sqrt(variance / n)
    return float(error) if error.ndim == 0 else error


def importance_weight_sums(action: np.ndarray, probability: np.ndarray, n_actions: int
                           ) -> np.ndarray:
    """Per action a, the sums over rows of the importance weight 1{A = a} / p and of its
    square, shape (2, K): what :func:`probability_warning` reads, added up a block of rows
    at a time."""
    p = np.asarray(probability, np.float64)
    return np.stack([np.bincount(action, 1.0 / p, minlength=n_actions),
                     np.bincount(action, 1.0 / p ** 2, minlength=n_actions)])


WEIGHT_SIGMAS = 4.0
"""How many standard errors from 1 an action's mean importance weight 1{A = a} / p may lie
before :func:`probability_warning` warns (with :data:`WEIGHT_SLACK` besides)."""
WEIGHT_SLACK = 0.1
"""How far from 1 an action's mean importance weight may lie besides its standard errors."""


def probability_warning(sums: np.ndarray, n: int, source: str) -> str | None:
    """The warning of a log whose logged probabilities do not fit its logged actions, or
    None: for any logging policy that gives every action a positive probability, the mean
    over a log of 1{A = a} / p(A | x) is 1 for every action a (its expectation), so an
    action's mean far from 1 (beyond :data:`WEIGHT_SIGMAS` standard errors and
    :data:`WEIGHT_SLACK`) says the probability column is not the logged action's probability
    (another action's, a constant, a typo), or, below 1 only, that the policy never played
    the action in some contexts: importance-weighted fits and IPS values are biased either
    way. ``sums``: :func:`importance_weight_sums` of the ``n`` rows. Every fit that reads
    the probabilities and ``evaluate`` warn it."""
    if n < 2:
        return None
    means = sums[0] / n
    off = np.abs(means - 1.0) > WEIGHT_SIGMAS * standard_error(sums[0], sums[1], n) + WEIGHT_SLACK
    if not off.any():
        return None
    shown_means = ", ".join(f"{m:.2f}" for m in means)
    return (f"{source}: the logged probabilities do not fit the logged actions: the mean of "
            f"1/p over each action's rows, per interaction, is [{shown_means}], where a "
            f"logging policy that gives every action a chance gives about 1 each; check that "
            f"the probability column is the logged action's probability (below 1 can also "
            f"mean the policy never played the action in some contexts): importance-weighted "
            f"fits and IPS values are biased")


def _check_rows(name: str, array: np.ndarray, n: int, source: str,
                unit: str = "interaction") -> None:
    """An error unless ``array`` has one row per ``unit`` (``n`` rows, as 'context' has)."""
    if array.shape[0] != n:
        raise IGLearnError(f"{source}: field '{name}' has {array.shape[0]} rows but 'context' "
                           f"has {n}; every field needs one row per {unit}")


def same_fields(a: object, b: object) -> bool:
    """Whether two dataclass instances of one type hold the same values in every field:
    arrays by shape and value (:func:`numpy.array_equal`), the rest by ``==``. The equality of
    :class:`InteractionLog` and :class:`~iglearn.data.contexts.ContextSet`, whose generated
    one compared arrays element-wise and raised "truth value ... is ambiguous"."""
    if type(a) is not type(b):
        return False
    for f in fields(cast(Any, a)):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
                    and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


@dataclass(frozen=True, eq=False)
class InteractionLog:
    """A batch of logged interactions, validated on construction.

    Attributes:
        context: (n, d_x) float contexts x, finite and within ±MAX_ABS_VALUE.
        action: (n,) int actions a in [0, n_actions).
        probability: (n,) float in [PROBABILITY_FLOOR, 1], the logging policy's probability of
            the logged action.
        feedback: (n, d_y) float feedback vectors y, finite and within ±MAX_ABS_VALUE.
        n_actions: the number of actions K, in [2, MAX_ACTIONS].
        reward: optional (n,) latent reward in [-1, 1], for evaluation only.
        label: optional (n,) correct action, for evaluation only.
        definitely_bad: optional (n,) boolean: the feedback holds an unmistakably negative
            signal (read by IGL-P).
        source: a name used in error messages (a file name, say).
        schema: the names of the features and, read with a column mapping, the columns they
            came from (:class:`~iglearn.data.formats.base.FeatureSchema`); pass it to a
            learner's ``save`` so that the model keeps them.

    Two logs are equal (``==``) when every field holds the same values (:func:`same_fields`);
    a log is not hashable.
    """

    context: np.ndarray
    action: np.ndarray
    probability: np.ndarray
    feedback: np.ndarray
    n_actions: int
    reward: np.ndarray | None = None
    label: np.ndarray | None = None
    source: str = "interaction log"
    definitely_bad: np.ndarray | None = None
    schema: FeatureSchema | None = None

    def __post_init__(self) -> None:
        src = self.source
        k = check_n_actions(self.n_actions, src)
        object.__setattr__(self, "n_actions", k)
        shaped = {name: _shaped(name, getattr(self, name), src) for name in DTYPES
                  if getattr(self, name) is not None or name not in OPTIONAL}
        n = shaped["context"].shape[0]
        if n == 0:
            raise IGLearnError(f"{src}: the log is empty; it needs at least one interaction")
        for name, array in shaped.items():
            _check_rows(name, array, n, src)
        for name, array in shaped.items():
            object.__setattr__(self, name, field_values(name, array, src, k))

    def __len__(self) -> int:
        return int(self.context.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InteractionLog):
            return NotImplemented
        return same_fields(self, other)

    __hash__ = None  # type: ignore[assignment]  # equal by value, mutable arrays

    @property
    def context_dim(self) -> int:
        """Dimension d_x of a context."""
        return int(self.context.shape[1])

    @property
    def feedback_dim(self) -> int:
        """Dimension d_y of a feedback vector."""
        return int(self.feedback.shape[1])

    @property
    def uniform_weight(self) -> np.ndarray:
        """Importance weights (1/K) / p that re-weight the log to the uniform policy."""
        return (1.0 / self.n_actions) / self.probability

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, n_actions: int | None = None,
                   source: str = "data frame", *,
                   context: str | Sequence[str] | None = None,
                   feedback: str | Sequence[str] | None = None,
                   action: str | None = None, probability: str | None = None,
                   reward: str | None = None, label: str | None = None,
                   definitely_bad: str | None = None,
                   ignore: str | Sequence[str] | None = None,
                   actions: Sequence[str] | None = None,
                   missing: Literal["refuse", "drop"] | None = None,
                   schema: FeatureSchema | None = None) -> InteractionLog:
        """The log a pandas DataFrame holds (:mod:`iglearn.data.frames`).

        By default the columns are ``context_0``, ``context_1``, ... (or one column
        ``context`` of lists), ``action``, ``probability``, ``feedback_0``, ..., optional
        ``reward``, ``label`` and ``definitely_bad``. The keywords read other columns (a
        :class:`~iglearn.data.frames.ColumnMapping`): ``context`` and ``feedback`` are a list
        of column names, one name (a column of numbers or of lists), or ``"NAME*"`` for every
        column whose name starts with NAME (numbered ones in numeric order); the other
        fields are one column's name. Every column must be read or listed in ``ignore``.
        ``actions`` names the actions as the ``action`` and ``label`` columns write them
        (``["left", "right"]``, or ``["1", "2", "3"]`` for actions numbered from 1), in the
        order of their indices; K is their number. A row with a missing value (NaN, None,
        pandas' NA) in a column read is refused, naming it, unless ``missing='drop'``:
        such rows are left out, and a warning names them.

        Args:
            frame: the table, one row per interaction.
            n_actions: K; else a column ``n_actions`` or ``frame.attrs['n_actions']``.
            source: a name for error messages.
            schema: a feature schema whose column mapping to start from (a loaded model's
                ``schema_``, say; the label and reward columns its fit left unread by name
                are read, to evaluate it); the keywords given replace its entries.

        The log's ``schema`` holds the mapping (with the column names resolved) when it
        renames a field, so that ``learner.save(folder, schema=log.schema)`` keeps it.
        """
        from iglearn.data.formats import model_mapping
        from iglearn.data.frames import from_frame, mapping_of
        # a model's mapping reads its log's label and reward again (model_mapping)
        mapping = mapping_of(model_mapping(schema),
                             context=context, feedback=feedback, action=action,
                             probability=probability, reward=reward, label=label,
                             definitely_bad=definitely_bad, n_actions=n_actions, ignore=ignore,
                             actions=actions if actions is None or isinstance(actions, str)
                             else tuple(actions),
                             missing=missing)
        return from_frame(frame, mapping, source)

    def to_frame(self, vectors: Literal["columns", "lists"] = "columns") -> pd.DataFrame:
        """The log as a pandas DataFrame in the layout :meth:`from_frame` reads (vectors as
        columns, or with ``vectors='lists'`` one column of arrays; K in
        ``frame.attrs['n_actions']``)."""
        from iglearn.data.frames import to_frame
        return to_frame(self, vectors)

    def subset(self, index: np.ndarray | Sequence[int] | slice) -> InteractionLog:
        """The interactions at ``index``: integer positions (negative ones count from the
        end), a boolean mask of one value per interaction, or a slice. Positions out of range,
        a mask of another length, or an index selecting nothing are refused in one line."""
        rows = _row_index(index, len(self), self.source)
        values: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            values[f.name] = value[rows] if isinstance(value, np.ndarray) else value
        return InteractionLog(**values)


def _row_index(index: object, n: int, source: str) -> np.ndarray | slice:
    """``index`` of :meth:`InteractionLog.subset`, checked against a log of ``n`` rows."""
    if isinstance(index, slice):
        if not range(n)[index]:
            raise IGLearnError(f"{source}: the slice {index} selects none of its {n} "
                               f"interactions; a log needs at least one")
        return index
    array = np.asarray(index)
    if array.dtype == bool:
        if array.shape != (n,):
            raise IGLearnError(f"{source}: a boolean mask needs one value per interaction "
                               f"({n}), got shape {array.shape}")
        chosen = int(array.sum())
    else:
        if array.size == 0:
            array = array.astype(np.int64)
        if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
            given = (f"an array of shape {array.shape}" if array.ndim != 1
                     else f"{array.dtype} values")
            raise IGLearnError(f"{source}: subset takes integer positions, a boolean mask or "
                               f"a slice, got {given}")
        outside = array[(array < -n) | (array >= n)]
        if outside.size:
            raise IGLearnError(f"{source}: position {int(outside[0])} is out of range for a "
                               f"log of {n} interactions (0 to {n - 1}, or -{n} to -1 from "
                               f"the end)")
        chosen = array.size
    if not chosen:
        raise IGLearnError(f"{source}: the index selects none of its {n} interactions; a "
                           f"log needs at least one")
    return array


def _row_blocks(log: InteractionLog | ContextSet) -> Iterator[np.ndarray]:
    """The rows of ``log`` (context, action, probability, feedback, each as float32; a
    context set's contexts), :data:`_HASH_ROWS` at a time, each block one contiguous float32
    matrix, -0.0 made 0.0: what identifies an interaction (a context). A block at a time, so
    that hashing a log never copies it whole."""
    for start in range(0, len(log), _HASH_ROWS):
        part = slice(start, start + _HASH_ROWS)
        columns = ([log.context[part], log.action[part, None], log.probability[part, None],
                    log.feedback[part]] if isinstance(log, InteractionLog)
                   else [log.context[part]])
        block = np.hstack([np.asarray(c, np.float32) for c in columns])
        block += np.float32(0.0)  # -0.0 is 0.0
        yield np.ascontiguousarray(block, dtype=np.float32)


def _mixed(words: np.ndarray, multipliers: np.ndarray) -> np.ndarray:
    """Hashes of the rows of ``words`` (uint32, (n, w)), one per column of ``multipliers``
    (odd uint64, (w, m) or (w,)): the words times the multipliers, summed modulo 2^64, mixed
    by splitmix64's finaliser so that every bit depends on every word."""
    with np.errstate(over="ignore"):
        h = words.astype(np.uint64) @ multipliers
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
    return h


def _multipliers(seed: int, width: int, lanes: int | None = None) -> np.ndarray:
    """Odd uint64 multipliers for rows of ``width`` words, drawn from ``seed``: (width,), or
    (width, lanes) for ``lanes`` independent hashes."""
    shape = (width,) if lanes is None else (lanes, width)
    drawn = np.random.default_rng(seed).integers(0, 2 ** 63, shape, dtype=np.uint64)
    drawn = drawn * np.uint64(2) + np.uint64(1)
    return drawn if lanes is None else np.ascontiguousarray(drawn.T)


FINGERPRINT_VERSION = "2"
"""The version :func:`rows_fingerprint` writes first. Version 1 (fits before it; a value
without a version, ``"n:sha256"``) hashed the rows sorted by their bytes, which copied the
log three times over; a recorded version-1 fingerprint no longer matches, and ``evaluate``
tells training rows of such a model by its row sketch alone."""

_FINGERPRINT_LANES = 4
"""Independent 64-bit row hashes :func:`rows_fingerprint` sums: 256 bits in all."""


def rows_fingerprint(log: InteractionLog) -> str:
    """What identifies the interactions of ``log`` whatever their order and the file they
    were read from (a log saved again as Parquet, or its rows shuffled): the version, the
    number of rows and the SHA-256 of the sums modulo 2^64 of four independent 64-bit hashes
    of each row (context, action, probability, feedback, each as float32; :func:`_mixed`).
    A sum does not depend on the rows' order, and the rows are hashed a block at a time, so
    that the log is never copied whole. ``evaluate`` compares it with the one the fit
    recorded, to say whether its data are the training log."""
    import hashlib

    sums = np.zeros(_FINGERPRINT_LANES, np.uint64)
    multipliers = None
    with np.errstate(over="ignore"):
        for block in _row_blocks(log):
            words = block.view(np.uint32)
            if multipliers is None:
                multipliers = _multipliers(20212, words.shape[1], _FINGERPRINT_LANES)
            sums += _mixed(words, multipliers).sum(axis=0, dtype=np.uint64)
    digest = hashlib.sha256(sums.astype("<u8").tobytes()).hexdigest()
    return f"v{FINGERPRINT_VERSION}:{len(log)}:{digest}"


SKETCH_ROWS = 1024
"""How many row hashes :func:`rows_sketch` keeps: the smallest."""

_HASH_ROWS = 4096
"""Rows :func:`row_hashes` and :func:`rows_fingerprint` hash at a time."""


def row_hashes(log: InteractionLog | ContextSet) -> np.ndarray:
    """A 64-bit hash of each row of ``log`` (its float32 interaction, as
    :func:`rows_fingerprint` reads it; a context set's contexts), uint64 (n,): the row's
    32-bit words times fixed odd multipliers, summed modulo 2^64, then mixed by splitmix64's
    finaliser so that every bit depends on every word (:func:`_mixed`). Equal rows hash alike
    in any order and file format. The rows are read a block at a time: memory 8 bytes a row
    beyond the log."""
    out = np.empty(len(log), np.uint64)
    multipliers = None
    start = 0
    for block in _row_blocks(log):
        words = block.view(np.uint32)
        if multipliers is None:
            multipliers = _multipliers(20211, words.shape[1])
        out[start:start + len(words)] = _mixed(words, multipliers)
        start += len(words)
    return out


def rows_sketch(log: InteractionLog | ContextSet) -> list[str]:
    """The :data:`SKETCH_ROWS` smallest distinct row hashes of ``log`` (:func:`row_hashes`),
    as 16-digit hexadecimal strings, ascending (a bottom-k sketch): all of them for a log of
    at most that many distinct rows. The fit records it, and that of its contexts, so that
    ``evaluate`` can tell which share of its rows (of a context set's contexts) are
    training rows (:func:`training_share`)."""
    kept = np.unique(row_hashes(log))[:SKETCH_ROWS]
    return [f"{int(h):016x}" for h in kept]


def training_share(sketch: object, log: InteractionLog | ContextSet) -> float | None:
    """The share of the rows of ``log`` that are rows of the training log whose
    :func:`rows_sketch` is ``sketch``, or None when it cannot be told (no sketch, a damaged
    one, or no row of ``log`` among those the sketch describes). A training log of fewer
    than :data:`SKETCH_ROWS` distinct rows is held whole, and the share is exact; of more,
    the sketch holds every training row whose hash is at most its largest, and the rows of
    ``log`` whose hash lies there, a uniform sample of its rows, estimate the share."""
    if not (isinstance(sketch, list) and sketch and all(isinstance(h, str) for h in sketch)):
        return None
    try:
        known = np.array([int(h, 16) for h in sketch], np.uint64)
    except (ValueError, OverflowError):
        return None
    hashes = row_hashes(log)
    if len(known) >= SKETCH_ROWS:  # a sample: the rows whose hash the sketch covers
        hashes = hashes[hashes <= known.max()]
    if not len(hashes):
        return None
    return float(np.isin(hashes, known).mean())
