"""JSON from files, read within :mod:`iglearn.data.limits`: bounded in size and nesting,
numbers finite and integers of at most ``MAX_INTEGER_DIGITS`` digits, no NaN or Infinity
(which JSON does not allow) and no key twice in one object. Every problem is one
:class:`~iglearn.errors.IGLearnError` line."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iglearn.data import limits
from iglearn.errors import IGLearnError, shown
from iglearn.files import input_file

_SHAPE = bytes.maketrans(b"0123456789Ee+-", b"0000000000eess")
"""Digits to 0, exponent marks to e and signs to s: a number's shape, found by bytes search."""


def _long_numbers(text: str | bytes) -> bool:
    """Whether ``text`` may hold a number with more than 20 digits in a row or a 3-digit
    exponent: the only numbers that can be beyond the limits (a few others match too)."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    shape = raw.translate(_SHAPE)
    return b"0" * 21 in shape or b"e000" in shape or b"es000" in shape



class _Rejected(Exception):
    """A value the parser refuses; the message says what it is."""


def _integer(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > limits.MAX_INTEGER_DIGITS:
        raise _Rejected(f"an integer of {digits} digits ({shown(text)}), more than "
                        f"{limits.MAX_INTEGER_DIGITS} (iglearn.data.limits.MAX_INTEGER_DIGITS)")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Rejected(f"the number {shown(text)}, beyond the range of floating point")
    return value


def _constant(text: str) -> float:
    raise _Rejected(f"{text}, which is not a JSON number")


def _object(pairs: list[tuple[str, object]]) -> dict:
    record = dict(pairs)
    if len(record) != len(pairs):
        key = next(k for k, count in Counter(k for k, _ in pairs).items() if count > 1)
        raise _Rejected(f"the key {shown(key)} twice in one object")
    return record


def _too_deep(value: object) -> bool:
    """Whether ``value`` nests dicts and lists deeper than MAX_JSON_DEPTH (iteratively)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limits.MAX_JSON_DEPTH:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list))
    return False


def parse(text: str | bytes, source: str, fix: str) -> object:
    """The JSON value in ``text``, or an IGLearnError ``"{source}: {problem}; {fix}"``."""
    if len(text) > limits.MAX_JSON_BYTES:
        raise IGLearnError(f"{source}: {len(text)} bytes of JSON, more than "
                           f"{limits.MAX_JSON_BYTES} (iglearn.data.limits.MAX_JSON_BYTES); "
                           f"{fix}")
    deep = (f"nests objects and lists more than {limits.MAX_JSON_DEPTH} deep "
            f"(iglearn.data.limits.MAX_JSON_DEPTH)")
    # Only a number with more than 20 digits in a row or a 3-digit exponent can be beyond
    # the limits; the C parser reads every other number (most files: all) unhooked.
    numbers: dict[str, Any] = {}
    if _long_numbers(text):
        numbers = {"parse_int": _integer, "parse_float": _float}
    try:
        value = json.loads(text, parse_constant=_constant, object_pairs_hook=_object, **numbers)
    except _Rejected as e:
        raise IGLearnError(f"{source}: holds {e}; {fix}") from None
    except json.JSONDecodeError as e:
        raise IGLearnError(f"{source}: not valid JSON ({e.msg} at line {e.lineno} column "
                           f"{e.colno}); {fix}") from None
    except UnicodeDecodeError as e:
        raise IGLearnError(f"{source}: not UTF-8 text ({e.reason}); {fix}") from None
    except RecursionError:
        raise IGLearnError(f"{source}: {deep}; {fix}") from None
    openers = text.count("{") + text.count("[") if isinstance(text, str) else \
        text.count(b"{") + text.count(b"[")
    if openers > limits.MAX_JSON_DEPTH and _too_deep(value):
        raise IGLearnError(f"{source}: {deep}; {fix}")
    return value


def read(path: str | Path, fix: str, what: str = "file", name: str | None = None,
         check: Callable[[bytes], None] | None = None) -> object:
    """The JSON value in the file ``path`` (a regular file of at most MAX_JSON_BYTES);
    ``name``: what messages call the file, when not its path (a member of an archive);
    ``check``: called with the file's bytes before they are parsed (a budget of the
    caller's, raising IGLearnError)."""
    path = Path(path)
    size = input_file(path, what)
    shown_as = name or path
    if size > limits.MAX_JSON_BYTES:
        raise IGLearnError(f"{shown_as}: {size} bytes, more than {limits.MAX_JSON_BYTES} "
                           f"(iglearn.data.limits.MAX_JSON_BYTES); {fix}")
    try:
        data = path.read_bytes()
    except PermissionError:
        raise IGLearnError(f"{shown_as}: cannot read the {what} (permission denied); check its "
                           f"permissions") from None
    except OSError as e:
        raise IGLearnError(f"{shown_as}: cannot read the {what} ({e.strerror or e}); "
                           f"{fix}") from None
    if check is not None:
        check(data)
    return parse(data, str(shown_as), fix)
