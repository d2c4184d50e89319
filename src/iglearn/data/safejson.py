"""JSON (and TOML) in and out, the one way iglearn does either.

In: :func:`parse` and :func:`read` (files, service request bodies) and :func:`parse_toml`
(the service's configuration), within :mod:`iglearn.data.limits`: bounded in size and
nesting, numbers finite and integers of at most ``MAX_INTEGER_DIGITS`` digits (checked on the
digits, before conversion), no NaN or Infinity (which JSON does not allow) and no key twice
in one object. Every problem is one :class:`Refused` line naming the value refused.

Out: :func:`dumps` writes strict JSON (every command's JSON output, the files commands write,
model metadata): a number that is not finite (NaN, the infinities) is written ``null``, never
as a literal no JSON parser reads."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

from iglearn.data import limits
from iglearn.errors import IGLearnError, shown
from iglearn.files import input_file
from iglearn.progress import printable

_SHAPE = bytes.maketrans(b"0123456789Ee+-", b"0000000000eess")
"""Digits to 0, exponent marks to e and signs to s: a number's shape, found by bytes search."""


def _long_numbers(text: str | bytes) -> bool:
    """Whether ``text`` may hold a number with more than 20 digits in a row or a 3-digit
    exponent: the only numbers that can be beyond the limits. The digits of strings are
    left out (an id such as ``"5e123f"`` is not a number), looked at only when the text as a
    whole has such a shape, which is rare."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text

    def shaped(raw: bytes) -> bool:
        shape = raw.translate(_SHAPE)
        return b"0" * 21 in shape or b"e000" in shape or b"es000" in shape
    return shaped(raw) and shaped(JSON_STRING.sub(b'""', raw))



class _Refused:
    """A value the parser refuses, left in the parsed document where it stood, so that the
    error names its place; ``problem``: what is wrong, as a predicate ("holds NaN, ...");
    ``key``: a key refused in an object (given twice)."""

    __slots__ = ("problem", "key")

    def __init__(self, problem: str, key: str | None = None):
        self.problem, self.key = problem, key


def _integer(text: str) -> int | _Refused:
    digits = len(text) - text.startswith("-")
    if digits > limits.MAX_INTEGER_DIGITS:
        return _Refused(f"holds an integer of {digits} digits ({shown(text)}), more than "
                        f"{limits.MAX_INTEGER_DIGITS} (iglearn.data.limits.MAX_INTEGER_DIGITS)")
    return int(text)


def finite_float(text: str) -> float | _Refused:
    """The number ``text`` as a float, refused where it is not finite (``1e400``, ``inf``,
    ``nan``): the JSON parser's and the TOML reader's hook for every number with a fraction or
    an exponent."""
    value = float(text)
    if not math.isfinite(value):
        return _Refused(f"holds the number {shown(text)}, beyond the range of floating point"
                        if text.strip("+-").lower() not in ("inf", "nan", "infinity") else
                        f"holds {shown(text)}, not a finite number")
    return value


def _constant(text: str) -> _Refused:
    return _Refused(f"holds {text}, which is not a JSON number")


def _object(pairs: list[tuple[str, object]]) -> dict | _Refused:
    record = dict(pairs)
    if len(record) != len(pairs):
        key = next(k for k, count in Counter(k for k, _ in pairs).items() if count > 1)
        return _Refused(f"holds the key {shown(key)} twice in one object", key)
    return record


JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
"""A JSON string in JSON text (brackets inside one are not containers)."""
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")


def _depth(raw: bytes) -> int:
    """How deep the brackets of the JSON text ``raw`` nest (strings left out): read from the
    bytes, before anything is parsed."""
    brackets = JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(accumulate(1 if c in b"[{" else -1 for c in brackets), default=0)


def path_text(parts: Sequence[str | int]) -> str:
    """A place in a document as messages name it: ``contexts[0][3]``, ``model.learner.lr``;
    a key with a control character shown quoted and escaped (``format.'\\r'``), so that the
    message stays on one line."""
    text = ""
    for part in parts:
        if isinstance(part, str) and printable(part) != part:
            part = shown(part)
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text


def refused_in(value: object) -> tuple[tuple[str | int, ...], str] | None:
    """The place (keys and indices; a key given twice ends it) and the problem of the first
    refused value in a parsed document (document order): a value a parser hook refused, or
    an integer of more than MAX_INTEGER_DIGITS digits; None when it holds none."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, parts = stack.pop()
        if isinstance(item, _Refused):
            return parts + ((item.key,) if item.key is not None else ()), item.problem
        if isinstance(item, int) and not isinstance(item, bool) \
                and abs(item) >= 10 ** limits.MAX_INTEGER_DIGITS:
            refused = _integer(str(item))
            assert isinstance(refused, _Refused)
            return parts, refused.problem
        if isinstance(item, dict):
            stack.extend((child, (*parts, key)) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, (*parts, i)) for i, child in reversed(list(enumerate(item))))
    return None


class Refused(IGLearnError):
    """A JSON or TOML text refused: ``where`` names the value refused (``contexts[0][3]``,
    ``[model.learner] lr``; empty when the text as a whole is), ``parts`` is that place as
    keys and indices (``("contexts", 0, 3)``; a key given twice ends it), ``problem`` says
    what is wrong with it."""

    def __init__(self, source: str, where: str, problem: str, fix: str,
                 parts: tuple[str | int, ...] = ()):
        place = f" {where}" if where else ""
        super().__init__(f"{source}:{place} {problem}; {fix}")
        self.where, self.problem, self.parts = where, problem, parts


def parse(text: str | bytes, source: str, fix: str) -> object:
    """The JSON value in ``text``, or a :class:`Refused` ``"{source}: {problem}; {fix}"``
    (naming the value refused: ``"{source}: contexts[0][3] holds ..."``). Numbers are finite
    floats and integers of at most MAX_INTEGER_DIGITS digits (checked before conversion), no
    NaN or Infinity, no key twice in an object; every service request body and every JSON file
    iglearn reads goes through here."""
    if len(text) > limits.MAX_JSON_BYTES:
        raise Refused(source, "", f"{len(text)} bytes of JSON, more than "
                          f"{limits.MAX_JSON_BYTES} (iglearn.data.limits.MAX_JSON_BYTES)", fix)
    deep = (f"nests objects and lists more than {limits.MAX_JSON_DEPTH} deep "
            f"(iglearn.data.limits.MAX_JSON_DEPTH)")
    # Only a number with more than 20 digits in a row or a 3-digit exponent can be beyond
    # the limits; the C parser reads every other number (most files: all) unhooked.
    refused: list[_Refused] = []

    def noted(hook: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def check(item: Any) -> Any:
            value = hook(item)
            if isinstance(value, _Refused):
                refused.append(value)
            return value
        return check

    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if raw.count(b"{") + raw.count(b"[") > limits.MAX_JSON_DEPTH \
            and _depth(raw) > limits.MAX_JSON_DEPTH:
        raise Refused(source, "", deep, fix)
    numbers: dict[str, Any] = {}
    if _long_numbers(raw):
        numbers = {"parse_int": noted(_integer), "parse_float": noted(finite_float)}
    try:
        value = json.loads(text, parse_constant=noted(_constant),
                           object_pairs_hook=noted(_object), **numbers)
    except json.JSONDecodeError as e:
        raise Refused(source, "", f"not valid JSON ({e.msg} at line {e.lineno} column "
                          f"{e.colno})", fix) from None
    except UnicodeDecodeError as e:
        raise Refused(source, "", f"not UTF-8 text ({e.reason})", fix) from None
    except ValueError as e:  # an integer of more digits than int() converts
        raise Refused(source, "", f"not valid JSON ({e})", fix) from None
    except RecursionError:
        raise Refused(source, "", deep, fix) from None
    found = refused_in(value) if refused else None
    if found is not None:
        parts, problem = found
        place = parts[:-1] if problem.startswith("holds the key") else parts
        raise Refused(source, path_text(place), problem, fix, parts)
    return value


def parse_toml(text: str, source: str, fix: str) -> dict[str, Any]:
    """The TOML document in ``text`` under :func:`parse`'s rules for numbers (finite floats:
    no ``inf`` or ``nan``; integers of at most MAX_INTEGER_DIGITS digits), or a
    :class:`Refused` naming the table and key: ``"{source}: [model.learner] lr holds ..."``."""
    import tomllib

    try:
        document = tomllib.loads(text, parse_float=finite_float)
    except tomllib.TOMLDecodeError as e:
        raise Refused(source, "", f"not valid TOML ({e})", fix) from None
    except ValueError as e:  # an integer of more digits than int() converts
        raise Refused(source, "", f"not valid TOML ({e})", fix) from None
    found = refused_in(document)
    if found is not None:
        parts = found[0]
        names = 0  # the leading keys name the table, the last of them the key in it
        while names < len(parts) and isinstance(parts[names], str):
            names += 1
        table = ".".join(map(str, parts[:names - 1]))
        where = (f"[{table}] " if table else "") + path_text(parts[names - 1:])
        raise Refused(source, where, found[1], fix, parts)
    return document


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


def ready(value: object, other: Callable[[object], object] = str) -> object:
    """``value`` as strict JSON holds it: dicts (keys as strings), lists, tuples and numpy
    arrays as lists, numpy scalars as Python numbers, numbers that are not finite (NaN, the
    infinities) as None (``null``); any other object as ``other`` maps it (its string, by
    default)."""
    if isinstance(value, dict):
        return {str(key): ready(item, other) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [ready(item, other) for item in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    import numpy as np

    if isinstance(value, np.ndarray):
        return [ready(item, other) for item in value.tolist()]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value) if math.isfinite(value) else None
    return other(value)


def dumps(value: object, *, indent: int | None = None, sort_keys: bool = False,
          other: Callable[[object], object] = str) -> str:
    """Strict JSON text of ``value`` (:func:`ready`: non-finite numbers as ``null``, other
    objects as ``other`` maps them): the one JSON writer of iglearn's output."""
    return json.dumps(ready(value, other), indent=indent, sort_keys=sort_keys, allow_nan=False)
