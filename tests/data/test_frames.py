"""Logs from and to pandas DataFrames: both vector layouts, K from an argument, a column or
the frame's attrs, and the same checks and messages as every format."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iglearn import IGLearnError, InteractionLog
from iglearn.data.frames import to_frame
from tests.data.test_formats import FIELDS, assert_same, small_log


@pytest.mark.parametrize("vectors", ["columns", "lists"])
def test_a_log_round_trips_through_a_frame(vectors):
    log = small_log()
    frame = log.to_frame(vectors)
    assert frame.attrs["n_actions"] == log.n_actions
    if vectors == "columns":
        assert list(frame.columns[:6]) == [f"context_{i}" for i in range(5)] + ["action"]
    else:
        assert {"context", "feedback"} <= set(frame.columns)
    assert_same(InteractionLog.from_frame(frame, source="log"), log, FIELDS)


def test_k_comes_from_the_argument_a_column_or_the_attrs():
    log = small_log(k=4)
    plain = pd.DataFrame(log.to_frame())  # a copy without attrs
    plain.attrs = {}
    with pytest.raises(IGLearnError, match="number of actions K is unknown; pass n_actions="):
        InteractionLog.from_frame(plain)
    assert InteractionLog.from_frame(plain, n_actions=6).n_actions == 6
    assert InteractionLog.from_frame(plain.assign(n_actions=4)).n_actions == 4
    with pytest.raises(IGLearnError, match="n_actions=5 but column 'n_actions' says 4"):
        InteractionLog.from_frame(plain.assign(n_actions=4), n_actions=5)
    mixed = plain.assign(n_actions=4)
    mixed.loc[0, "n_actions"] = 3
    with pytest.raises(IGLearnError, match="holds 2 different values"):
        InteractionLog.from_frame(mixed)


def bad(frame: pd.DataFrame, change) -> pd.DataFrame:
    frame = frame.copy()
    change(frame)
    return frame


CASES = {
    "unknown column": (lambda f: f.insert(0, "user", 1), ["column 'user'", "drop or rename"]),
    "gap": (lambda f: f.pop("context_2"), ["skip context_2"]),
    "no feedback": (lambda f: [f.pop(c) for c in list(f) if c.startswith("feedback")],
                    ["no column for field 'feedback'", "feedback_0"]),
    "no action": (lambda f: f.pop("action"), ["no column for field 'action'",
                                              "a column 'action'"]),
    "float action": (lambda f: f.__setitem__("action", f["action"] + 0.5),
                     ["field 'action'", "not an integer"]),
    "missing action": (lambda f: f.__setitem__("action", f["action"].where(f.index != 3)),
                       ["column 'action'", "missing value at row 3"]),
    "probability 0": (lambda f: f.__setitem__("probability", 0.0),
                      ["field 'probability'", "outside (0, 1]"]),
    "both layouts": (lambda f: f.__setitem__("context", list(np.zeros((len(f), 5)))),
                     ["both as column 'context' and as columns context_0"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_frame_is_one_error_naming_the_column(case):
    change, words = CASES[case]
    frame = bad(small_log().to_frame(), change)
    with pytest.raises(IGLearnError) as error:
        InteractionLog.from_frame(frame, source="my frame")
    message = str(error.value)
    assert message.startswith("my frame: ") and "\n" not in message
    for word in words:
        assert word in message, message


def test_list_columns_of_unequal_length_are_refused():
    frame = small_log().to_frame("lists")
    frame.at[1, "context"] = np.zeros(3)
    with pytest.raises(IGLearnError, match="vectors of lengths \\[3, 5\\]"):
        InteractionLog.from_frame(frame)


def test_to_frame_needs_a_known_layout():
    with pytest.raises(IGLearnError, match="'columns' or 'lists'"):
        to_frame(small_log(), "wide")  # type: ignore[arg-type]


def test_the_definitely_bad_flags_round_trip_through_a_frame():
    log = small_log()
    flags = np.arange(len(log.action)) % 3 == 0
    flagged = InteractionLog(log.context, log.action, log.probability, log.feedback,
                             log.n_actions, definitely_bad=flags)
    back = InteractionLog.from_frame(flagged.to_frame(), source="log")
    assert back.definitely_bad is not None
    np.testing.assert_array_equal(back.definitely_bad, flags)
