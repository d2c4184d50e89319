"""Hypothesis strategies and helpers that damage files: JSON values put anywhere in a JSON
document, and bytes flipped, cut or inserted."""

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
"""Bounded and deterministic: the same examples on every run."""

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8)
"""Any JSON value (floats include NaN and the infinities, which json.dumps writes)."""

DELETE = object()
"""A replacement that deletes the key (or list entry) instead."""


def json_paths(value, prefix=()):
    """Every key path into a JSON value (the first three entries of a list)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from json_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            yield (*prefix, index)
            yield from json_paths(item, (*prefix, index))


def replace_at(document, path, value):
    """Put ``value`` at ``path`` in ``document`` (in place), or delete it for DELETE."""
    record = document
    for key in path[:-1]:
        record = record[key]
    if value is DELETE:
        del record[path[-1]]
    else:
        record[path[-1]] = value


def mutate_json(data, document, changes=3):
    """``document`` with 1 to ``changes`` values replaced by any JSON value or deleted."""
    for _ in range(data.draw(st.integers(1, changes))):
        paths = list(json_paths(document))
        if not paths:
            break
        replace_at(document, data.draw(st.sampled_from(paths)), data.draw(JSON | st.just(DELETE)))
    return document


def mutate_bytes(data, raw: bytes, changes=4) -> bytes:
    """``raw`` with 1 to ``changes`` bytes flipped, runs cut or bytes inserted."""
    raw = bytearray(raw)
    for _ in range(data.draw(st.integers(1, changes))):
        if not raw:
            break
        at = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            raw[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del raw[at:at + data.draw(st.integers(1, 64))]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=16))
    return bytes(raw)


def one_line(message: str) -> bool:
    """Whether an error message is one line (no line break of any kind)."""
    return len(message.splitlines()) == 1 and "\r" not in message
