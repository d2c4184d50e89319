"""Logs from and to pandas DataFrames: both vector layouts, K from an argument, a column or
the frame's attrs, and the same checks and messages as every format."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from iglearn import IGLearnError, InteractionLog
from iglearn.data.contexts import ContextSet
from iglearn.data.frames import ColumnMapping, to_frame
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
    with pytest.raises(IGLearnError, match=r"column 'n_actions' says K = 4, but K = 5 is given "
                                           r"\(n_actions=, --n-actions, or the model's K"):
        InteractionLog.from_frame(plain.assign(n_actions=4), n_actions=5)
    mixed = plain.assign(n_actions=4)
    mixed.loc[0, "n_actions"] = 3
    with pytest.raises(IGLearnError, match="holds 2 different values"):
        InteractionLog.from_frame(mixed)


def test_k_written_as_a_whole_float_is_k_and_a_bad_k_column_is_named(tmp_path):
    """pandas writes a column of integers with a missing value as floats (K as 3.0), as it
    writes float actions 1.0, 2.0, which read: K 3.0 reads as 3 (it was "n_actions is 3.0;
    it must be an integer", naming no column), in a file and as an argument alike."""
    from iglearn.data.formats import open_table

    plain = pd.DataFrame(small_log(k=4).to_frame())
    plain.attrs = {}
    floats = plain.assign(n_actions=4.0)
    assert InteractionLog.from_frame(floats).n_actions == 4
    assert InteractionLog.from_frame(plain, n_actions=4.0).n_actions == 4
    floats.to_csv(tmp_path / "log.csv", index=False)
    assert "4.0" in (tmp_path / "log.csv").read_text().splitlines()[1]
    assert open_table(tmp_path / "log.csv").info.n_actions == 4
    with pytest.raises(IGLearnError, match=r"data frame: column 'n_actions' is 4.5; it must be "
                                           r"an integer >= 2"):
        InteractionLog.from_frame(plain.assign(n_actions=4.5))


@pytest.mark.parametrize(("field", "text", "fix"), [
    ("probability", "33%", "write each as a number in (0, 1] (0.33, not 33%)"),
    ("definitely_bad", "yes", "write each flag as true or false (or 1 or 0)")])
def test_text_in_a_probability_or_flag_column_gets_the_fix_of_its_field(field, text, fix):
    """A probability or a flag written as text got the advice for categories ("map it to
    numbers first (codes, or one column per category) or leave the column unread"), which
    fits neither: the fix names how the field is written."""
    frame = pd.DataFrame(small_log(k=4).to_frame()).assign(**{field: text})
    with pytest.raises(IGLearnError) as error:
        InteractionLog.from_frame(frame, definitely_bad="definitely_bad")
    assert str(error.value).endswith(f"{field} columns hold numbers: {fix}")


@pytest.mark.parametrize("actions, names", [
    ([1, 2, 3, 1], "(actions=['1', '2', '3'], --actions 1,2,3)"),  # they were "1,2,3,...,K"
    ([0, 2, 5, 0], "(actions=['0', '2', '5'], --actions 0,2,5)"),
])
def test_a_column_of_actions_written_its_own_way_is_told_to_name_them(actions, names):
    """A table read from named columns can name its actions, ready to paste; an .npz file or
    arrays cannot, and are told to renumber them instead (the names were offered to them,
    and --actions then refused an .npz file)."""
    log = small_log(k=3)
    frame = pd.DataFrame(log.to_frame()).iloc[:4].assign(action=actions)
    with pytest.raises(IGLearnError, match=re.escape(names)):
        InteractionLog.from_frame(frame, n_actions=3)


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
                     ["column 'action' holds 0.5 at row 0", "not an integer"]),
    "missing action": (lambda f: f.__setitem__("action", f["action"].where(f.index != 3)),
                       ["column 'action'", "missing value at row 3"]),
    "probability 0": (lambda f: f.__setitem__("probability", 0.0),
                      ["column 'probability' holds 0.0 at row 0", "outside (0, 1]"]),
    "infinite feedback": (lambda f: f.__setitem__("feedback_1", f["feedback_1"].where(
        f.index != 4, np.inf)), ["column 'feedback_1' (feedback) holds inf at row 4"]),
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


# Column mappings: a frame with its own column names.

def user_frame(n: int = 600, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """A log with a user's column names (context age, clicks; feedback emg_0, emg_1, emg_2,
    emg_10; action arm; probability p; K = 3) and the best action of each row: the reward is
    1 when arm is the best action, which age shows, and the feedback is the reward plus
    noise."""
    rng = np.random.default_rng(seed)
    best = rng.integers(0, 3, n)
    arm = rng.integers(0, 3, n)
    reward = (arm == best).astype(float)
    frame = pd.DataFrame({"age": best + rng.normal(0, 0.2, n), "clicks": rng.normal(0, 1, n)})
    for i in (0, 1, 2, 10):
        frame[f"emg_{i}"] = reward + rng.normal(0, 0.3, n)
    frame["arm"] = arm
    frame["p"] = 1 / 3
    return frame, best


MAPPING = dict(context=["age", "clicks"], feedback="emg_*", action="arm", probability="p",
               n_actions=3)


def test_a_frame_with_its_own_column_names_fits_and_predicts_through_a_saved_model(tmp_path):
    from iglearn import BatchIGL
    from iglearn.learners.registry import load_model
    from iglearn.learners.training import Optimisation

    frame, _ = user_frame()
    log = InteractionLog.from_frame(frame, **MAPPING)
    np.testing.assert_allclose(log.context, frame[["age", "clicks"]], rtol=1e-6)
    emg = ["emg_0", "emg_1", "emg_2", "emg_10"]  # numeric order, not text order
    np.testing.assert_allclose(log.feedback, frame[emg], rtol=1e-6)
    np.testing.assert_array_equal(log.action, frame["arm"])
    assert log.n_actions == 3 and log.schema is not None
    assert log.schema.columns is not None and log.schema.columns.feedback == tuple(emg)
    assert log.schema.context == ("^age", "^clicks")
    quick = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=60)
    learner = BatchIGL(seed=0, optimisation=quick).fit(log)
    learner.save(tmp_path / "model", schema=log.schema)
    model = load_model(tmp_path / "model")
    assert model.schema_ == log.schema
    test, best = user_frame(300, seed=1)
    contexts = ContextSet.from_frame(test[["clicks", "age"]], schema=model.schema_)
    assert contexts.n_actions == 3
    np.testing.assert_allclose(contexts.context, test[["age", "clicks"]], rtol=1e-6)
    assert (model.predict(contexts.context) == best).mean() > 0.5  # chance is 1/3
    # the model's columns named in another order are read in the model's order
    reordered = ContextSet.from_frame(test, schema=model.schema_, context=["clicks", "age"])
    np.testing.assert_array_equal(reordered.context, contexts.context)
    # the whole log reads back through the model's mapping too
    assert len(InteractionLog.from_frame(test, schema=model.schema_)) == 300
    # its contexts only: a missing feedback value, an action no log could hold are no error
    holed = test.assign(arm=test["arm"] + 5.0)
    holed.loc[7, "emg_1"] = np.nan
    with pytest.raises(IGLearnError, match="column 'emg_1' holds a missing value at row 7"):
        InteractionLog.from_frame(holed, schema=model.schema_)
    np.testing.assert_array_equal(model.predict(holed), model.predict(contexts.context))
    assert ContextSet.from_frame(holed, schema=model.schema_).context.shape == (300, 2)
    with pytest.raises(IGLearnError, match="no column 'clicks', which the column mapping reads "
                                           "as context"):
        ContextSet.from_frame(test[["age"]], schema=model.schema_)


@pytest.mark.parametrize("library", ["pyarrow", "polars"])
def test_another_librarys_table_is_read_by_its_column_names(library):
    """A polars DataFrame or a pyarrow Table reads as the pandas frame of the same columns:
    a log by the mapping, and contexts to predict on by the model's names (not by position,
    as an array of its columns would be read)."""
    from iglearn import BatchIGL
    from iglearn.learners.training import Optimisation

    module = pytest.importorskip(library)
    convert = module.Table.from_pandas if library == "pyarrow" else module.from_pandas
    frame, _ = user_frame()
    log = InteractionLog.from_frame(frame, **MAPPING)
    theirs = InteractionLog.from_frame(convert(frame), **MAPPING)
    for name in ("context", "feedback", "action", "probability"):
        np.testing.assert_array_equal(getattr(theirs, name), getattr(log, name), name)
    assert theirs.schema == log.schema
    quick = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=60)
    learner = BatchIGL(seed=0, optimisation=quick).fit(log)
    learner.schema_ = log.schema
    test, _ = user_frame(300, seed=1)
    expected = learner.predict(test[["age", "clicks"]].to_numpy())
    np.testing.assert_array_equal(learner.predict(convert(test[["clicks", "age"]])), expected)


def test_what_is_no_table_is_refused_naming_what_it_is():
    with pytest.raises(IGLearnError, match=r"^data frame: a builtins.dict is not a table "
                                           r"iglearn reads; pass a pandas DataFrame, or a "
                                           r"table with to_pandas\(\) \(polars, pyarrow\)$"):
        InteractionLog.from_frame({"age": [1.0]}, **MAPPING)


def test_a_prefix_orders_numbered_columns_by_number_and_others_as_the_frame_does():
    frame, _ = user_frame(20)
    frame = frame.rename(columns={"clicks": "z_b", "age": "z_a"})[
        ["z_b", "z_a", *frame.columns[2:]]]
    log = InteractionLog.from_frame(frame, context="z_*", feedback=["emg_10", "emg_0"],
                                    action="arm", probability="p", n_actions=3,
                                    ignore="emg_*")
    np.testing.assert_allclose(log.context, frame[["z_b", "z_a"]], rtol=1e-6)
    np.testing.assert_allclose(log.feedback, frame[["emg_10", "emg_0"]], rtol=1e-6)


def test_a_list_column_is_one_vector_field_and_columns_concatenate():
    frame, _ = user_frame(20)
    frame["history"] = list(np.arange(60.0).reshape(20, 3))
    log = InteractionLog.from_frame(frame, context=["age", "history"], feedback="emg_*",
                                    action="arm", probability="p", n_actions=3,
                                    ignore="clicks")
    assert log.context.shape == (20, 4)
    np.testing.assert_allclose(log.context[:, 1:], np.arange(60.0).reshape(20, 3))
    assert log.schema is not None
    assert log.schema.context == ("^age", "history^0", "history^1", "history^2")


MAPPING_ERRORS = {
    "missing column": (dict(MAPPING, context=["age", "height"]),
                       ["no column 'height'", "reads as context", "'age', 'clicks'"]),
    "column in two fields": (dict(MAPPING, context=["age", "p"]),
                             ["column 'p' is read by both context and probability"]),
    "column twice in one field": (dict(MAPPING, context=["age", "age"]),
                                  ["column 'age' is read twice by context"]),
    "empty list": (dict(MAPPING, context=[]), ["context selects no column"]),
    "prefix without match": (dict(MAPPING, feedback="eeg_*"), ["no column starts with 'eeg_'"]),
    "a prefix with no name": (dict(MAPPING, feedback="*"), ["NAME*"]),
    "unmapped column": (dict(MAPPING, context=["age"]),
                        ["column 'clicks' is read by no field", "ignore="]),
    "mapped action absent": (dict(MAPPING, action="choice"),
                             ["no column for field 'action'", "'choice')"]),
    # a name in another case, or misspelt, is named with the table's own
    "action in another case": (dict(MAPPING, action="Arm"),
                               ["(a column 'Arm'; did you mean 'arm'?);"]),
    "probability misspelt": (dict(MAPPING, probability="pp"), ["did you mean 'p'?"]),
    "context in another case": (dict(MAPPING, context=["age", "Clicks"]),
                                ["no column 'Clicks', which the column mapping reads as context "
                                 "(did you mean 'clicks'?)"]),
    "read and ignored": (dict(MAPPING, ignore=["age"]),
                         ["column 'age' is read as context and ignored; keep one"]),
    "prefix in another case": (dict(MAPPING, feedback="EMG_*"),
                               ["(feedback 'EMG_*'; did you mean 'emg_*'?)"]),
    # it suggested the prefix itself ("did you mean 'p_*'?")
    "probability per action": (dict(MAPPING, probability="p_*"),
                               ["probability is 'p_*', a prefix; probability reads one column",
                                "the logged action's picked out"]),
    "a numbered column": (dict(MAPPING, context=[0, "clicks"]),
                          ["context holds the number 0; name each column as text ('0'"]),
    "actions as fractions": (dict(MAPPING, actions=[0.0, 1.0, 2.0]),
                             ["actions holds the number 0.0; name each action as text, or as "
                              "a whole number"]),
    # read as its letters ('l', 'e', 'f', ...), then refused as a column of other names
    "actions as one text": (dict(MAPPING, actions="left,middle,right"),
                            ["actions is the text 'left,middle,right'; give the names as a "
                             "list, in the order of their indices (actions=['left', 'middle', "
                             "'right'])"]),
    # a TypeError: 'int' object is not iterable
    "a column number alone": (dict(MAPPING, context=3),
                              ["context holds the number 3; name each column as text ('3'"]),
}


@pytest.mark.parametrize("case", sorted(MAPPING_ERRORS))
def test_a_bad_mapping_is_one_error_naming_the_column(case):
    mapping, words = MAPPING_ERRORS[case]
    frame, _ = user_frame(20)
    with pytest.raises(IGLearnError) as error:
        InteractionLog.from_frame(frame, source="my frame", **mapping)
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message


def test_a_column_name_twice_in_the_frame_is_refused_and_ignore_leaves_columns_unread():
    frame, _ = user_frame(20)
    twice = pd.concat([frame, frame[["age"]]], axis=1)
    with pytest.raises(IGLearnError, match="2 columns are named 'age'; give each column its "
                                           "own name"):
        InteractionLog.from_frame(twice, **MAPPING)
    extra = frame.assign(user="u7", session=1)
    with pytest.raises(IGLearnError, match="columns 'user', 'session' are read by no field"):
        InteractionLog.from_frame(extra, **MAPPING)
    log = InteractionLog.from_frame(extra, **MAPPING, ignore=["user", "session"])
    assert log.context_dim == 2


def test_the_default_layout_keeps_no_schema_and_k_alone_is_no_renaming():
    log = small_log(k=4)
    plain = pd.DataFrame(log.to_frame())
    plain.attrs = {}
    assert InteractionLog.from_frame(plain, n_actions=4).schema is None
    contexts = ContextSet.from_frame(plain[[c for c in plain if c.startswith("context_")]],
                                     n_actions=4)
    assert_same(contexts, log, ("context",))


def _set(name, values):
    def change(frame: pd.DataFrame) -> None:
        frame[name] = values(len(frame))
    return change


def _lists(values):
    def change(frame: pd.DataFrame) -> None:
        for column in [c for c in frame if c.startswith("context_")]:
            frame.pop(column)
        frame["context"] = [values] * len(frame)
    return change


NON_NUMERIC = {
    "timedelta context": (_set("context_1", lambda n: pd.to_timedelta(np.arange(n), unit="s")),
                          ["column 'context_1'", "durations", "total_seconds"]),
    "timedelta action": (_set("action", lambda n: pd.to_timedelta(np.ones(n), unit="s")),
                         ["column 'action'", "durations"]),
    "timedelta n_actions": (_set("n_actions", lambda n: pd.to_timedelta([3] * n)),
                            ["column 'n_actions'", "durations"]),
    "datetime feedback": (_set("feedback_0", lambda n: pd.date_range("2024-01-01", periods=n)),
                          ["column 'feedback_0'", "dates or times"]),
    "datetime with zone": (_set("context_0", lambda n: pd.date_range("2024", periods=n,
                                                                      tz="UTC")),
                           ["column 'context_0'", "dates or times"]),
    "datetime n_actions": (_set("n_actions", lambda n: pd.to_datetime([3] * n)),
                           ["column 'n_actions'", "dates or times"]),
    "categorical text": (_set("reward", lambda n: pd.Categorical(["yes", "no"] * (n // 2))),
                         ["column 'reward'", "text", "'yes'"]),
    "object strings": (_set("probability", lambda n: ["0.5"] * n),
                       ["column 'probability'", "numbers written as text", "to_numeric"]),
    "a stray word among numbers": (_set("context_3", lambda n: [0.5] * 3 + ["high"]
                                        + [0.25] * (n - 4)),
                                   ["column 'context_3'", "not a number ('high' at row 3)",
                                    "remove those rows"]),
    "object dicts in n_actions": (_set("n_actions", lambda n: [{"k": 3}] * n),
                                  ["column 'n_actions'", "key-value maps"]),
    "mixed n_actions": (_set("n_actions", lambda n: [3, "three"] * (n // 2)),
                        ["column 'n_actions'", "text", "row 1"]),
    "periods": (_set("context_2", lambda n: pd.period_range("2024-01", periods=n, freq="M")),
                ["column 'context_2'", "Period objects"]),
    "huge python ints": (_set("context_0", lambda n: [10**30] * n),
                         ["column 'context_0'", "beyond 64 bits"]),
    "list column of durations": (_lists([pd.Timedelta(1, "s")] * 3),
                                 ["column 'context'", "durations"]),
    "list column of text": (_lists(["a", "b", "c"]), ["column 'context'", "text"]),
    "missing in an object column": (_set("context_1", lambda n: [1.0, pd.NA] * (n // 2)),
                                    ["column 'context_1'", "missing value at row 1"]),
}


@pytest.mark.parametrize("case", sorted(NON_NUMERIC))
def test_non_numeric_columns_are_refused_naming_the_column(case):
    change, words = NON_NUMERIC[case]
    frame = bad(small_log().to_frame(), change)
    frame["n_actions"] = frame.get("n_actions", frame.attrs["n_actions"])
    for read in (InteractionLog.from_frame, ContextSet.from_frame):
        if read == ContextSet.from_frame and not any(w in words[0] for w in ("context", "n_")):
            continue
        with pytest.raises(IGLearnError) as error:
            read(frame, source="my frame")
        message = str(error.value)
        assert message.startswith("my frame: ") and "\n" not in message
        for word in words:
            assert word in message, message


def test_booleans_nullable_numbers_categoricals_of_numbers_and_object_numbers_are_read():
    log = small_log()
    frame = log.to_frame()
    n = len(frame)
    frame["context_0"] = np.arange(n) % 2 == 1                         # booleans: 1 and 0
    frame["context_1"] = pd.array(np.arange(n, dtype=float), dtype="Float64")
    frame["context_2"] = pd.Categorical(np.arange(n) % 3 * 0.5)        # its values
    frame["action"] = np.asarray(log.action, dtype=object)           # Python ints
    frame["probability"] = pd.array(log.probability, dtype="Float64")
    back = InteractionLog.from_frame(frame)
    np.testing.assert_array_equal(back.context[:, 0], np.arange(n) % 2)
    np.testing.assert_array_equal(back.context[:, 1], np.arange(n))
    np.testing.assert_array_equal(back.context[:, 2], np.arange(n) % 3 * 0.5)
    np.testing.assert_array_equal(back.action, log.action)
    np.testing.assert_allclose(back.probability, log.probability)


def test_a_parquet_file_of_its_own_column_names_reads_through_a_mapping(tmp_path):
    """A DataFrame written with ``to_parquet`` in the user's column names reads through the
    column mapping as the same frame written as CSV does; the feature schema keeps the
    mapping, so a table of those columns reads again by it alone; iglearn's own Parquet
    layout (a converted log, which keeps the mapping in its schema) still reads as it is."""
    from iglearn.data.formats import convert, open_table, read_log
    from iglearn.data.frames import ColumnMapping

    frame, _ = user_frame(200)
    frame.to_parquet(tmp_path / "own.parquet", index=False)
    frame.to_csv(tmp_path / "own.csv", index=False)
    mapping = ColumnMapping(context=("age", "clicks"), feedback=("emg_*",), action="arm",
                            probability="p", n_actions=3)
    readers = [open_table(tmp_path / f"own.{kind}", columns=mapping) for kind in ("parquet",
                                                                                  "csv")]
    logs = [InteractionLog(**reader.arrays(), n_actions=3) for reader in readers]
    for name in ("context", "action", "probability", "feedback"):
        np.testing.assert_array_equal(getattr(logs[0], name), getattr(logs[1], name))
    schema = readers[0].info.schema
    assert schema is not None and schema.columns is not None
    again = open_table(tmp_path / "own.parquet", schema)  # a model's schema: no options
    np.testing.assert_array_equal(again.arrays()["context"], logs[0].context)
    frame.drop(columns="age").to_parquet(tmp_path / "less.parquet", index=False)
    with pytest.raises(IGLearnError, match="no column 'age'"):
        open_table(tmp_path / "less.parquet", schema)
    convert(tmp_path / "own.csv", tmp_path / "ours.parquet", columns=mapping)
    assert len(read_log(tmp_path / "ours.parquet", schema)) == 200  # iglearn's layout
    from iglearn.data.stream import LogStream

    with pytest.raises(IGLearnError, match="read by its own column names .* is read in "
                                           "memory, not streamed; convert it"):
        LogStream(readers[0])  # streamed only once converted
    assert len(LogStream(open_table(tmp_path / "ours.parquet"))) == 200


def test_a_list_cell_holding_a_missing_value_is_a_missing_value(tmp_path):
    """A cell of a column of lists that holds a null (a Parquet list<double> with a null
    entry) or a NaN is a missing value, as an empty cell is: refused naming the row, with
    missing='drop' (--missing drop) as the way out, or dropped. It was refused as a NaN that
    "cannot be learned from", and missing='drop' kept the row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from iglearn.data.formats import open_table

    frame, _ = user_frame(40)
    frame["emg"] = [[a, b] for a, b in zip(frame.pop("emg_0"), frame.pop("emg_1"),
                                            strict=True)]
    frame = frame.drop(columns=["emg_2", "emg_10"])
    table = pa.Table.from_pandas(frame, preserve_index=False)
    emg = frame["emg"].tolist()
    emg[3], emg[7] = [None, 1.0], [np.nan, 1.0]
    table = table.set_column(table.column_names.index("emg"), "emg",
                             pa.array(emg, pa.list_(pa.float64())))
    pq.write_table(table, tmp_path / "lists.parquet")
    mapping = ColumnMapping(context=("age", "clicks"), feedback=("emg",), action="arm",
                            probability="p", n_actions=3)
    with pytest.raises(IGLearnError, match="column 'emg' holds a missing value at row 3; .*"
                                           "--missing drop"):
        open_table(tmp_path / "lists.parquet", columns=mapping)
    with pytest.warns(UserWarning, match=r"dropped rows 3, 7 \(2 rows\)"):
        arrays = open_table(tmp_path / "lists.parquet",
                            columns=replace(mapping, missing="drop")).arrays()
    assert len(arrays["feedback"]) == 38 and np.isfinite(arrays["feedback"]).all()
    frame["emg"] = emg  # a DataFrame's Python lists alike
    with pytest.raises(IGLearnError, match="column 'emg' holds a missing value at row 3"):
        InteractionLog.from_frame(frame, **{**MAPPING, "feedback": "emg"})


def test_decimal_columns_read_as_the_nearest_floats(tmp_path):
    """A decimal column (SQL's NUMERIC as pandas' read_sql gives it, a Parquet decimal as
    Spark writes DecimalType) holds numbers: it reads as the floats nearest them, its nulls
    as missing values; it was refused as "holds Decimal objects"."""
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    from iglearn.data.formats import open_table

    frame, _ = user_frame(40)
    exact = frame.copy()
    frame["p"] = [Decimal("0.333333")] * 40
    frame["arm"] = [Decimal(int(a)) for a in frame["arm"]]
    log = InteractionLog.from_frame(frame, **MAPPING)
    np.testing.assert_allclose(log.probability, 0.333333)
    np.testing.assert_array_equal(log.action, exact["arm"])
    table = pa.Table.from_pandas(exact, preserve_index=False)
    table = table.set_column(table.column_names.index("p"), "p", pa.array(
        [None] + [Decimal("0.333333")] * 39, pa.decimal128(7, 6)))
    pq.write_table(table, tmp_path / "decimal.parquet")
    mapping = ColumnMapping(**{**MAPPING, "context": ("age", "clicks"),
                               "feedback": ("emg_*",)})
    with pytest.raises(IGLearnError, match="column 'p' holds a missing value at row 0"):
        open_table(tmp_path / "decimal.parquet", columns=mapping)
    with pytest.warns(UserWarning, match="dropped row 0"):
        arrays = open_table(tmp_path / "decimal.parquet",
                            columns=replace(mapping, missing="drop")).arrays()
    np.testing.assert_allclose(arrays["probability"], 0.333333)
    np.testing.assert_allclose(arrays["context"], exact[["age", "clicks"]].to_numpy()[1:],
                               rtol=1e-6)


def test_a_column_name_twice_in_a_parquet_file_is_told_as_in_a_csv_file(tmp_path):
    """A Parquet file with a column name given twice (which pyarrow writes) is told as a
    CSV file or a DataFrame tells it: it was "not a readable Parquet file (... Multiple
    matches for FieldRef.Name(x) ...); the file is truncated or corrupt"; iglearn's own
    layout says the same."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from iglearn.data.formats import open_table
    from iglearn.data.frames import ColumnMapping

    columns = [pa.array([0.5, 1.5]), pa.array([1.0, 2.0]), pa.array([0, 1]),
               pa.array([0.5, 0.5])]
    pq.write_table(pa.Table.from_arrays(columns, names=["x", "x", "arm", "p"]),
                   tmp_path / "own.parquet")
    (tmp_path / "own.csv").write_text("x,x,arm,p\n0.5,1.0,0,0.5\n1.5,2.0,1,0.5\n")
    ours = pa.Table.from_arrays(columns, names=["context", "feedback", "action", "action"])
    pq.write_table(ours.replace_schema_metadata({"n_actions": "2"}), tmp_path / "ours.parquet")
    mapping = ColumnMapping(context=("x",), feedback=("x",), action="arm", probability="p",
                            n_actions=2)
    for name, twice in (("own.parquet", "x"), ("own.csv", "x"), ("ours.parquet", "action")):
        with pytest.raises(IGLearnError, match=f"{name}: 2 columns are named '{twice}'; give "
                                               f"each column its own name$"):
            open_table(tmp_path / name, columns=None if name == "ours.parquet" else mapping)


# Named actions: the action and label columns write the actions their own way.

def named_frame(n: int = 60) -> pd.DataFrame:
    """A small log whose actions are the words left, middle, right (K = 3), and its labels
    too."""
    rng = np.random.default_rng(3)
    arm = rng.integers(0, 3, n)
    names = np.array(["left", "middle", "right"])
    return pd.DataFrame({"x": rng.normal(35, 0.05, n), "arm": names[arm], "p": 1 / 3,
                         "latency": rng.normal(400, 30, n),
                         "correct": names[rng.integers(0, 3, n)]})


NAMED = dict(context="x", feedback="latency", action="arm", probability="p", label="correct")


def test_named_actions_read_into_their_indices_and_the_model_keeps_the_names(tmp_path):
    frame = named_frame()
    log = InteractionLog.from_frame(frame, **NAMED, actions=["right", "left", "middle"])
    order = {"right": 0, "left": 1, "middle": 2}  # the order given, not the text's
    np.testing.assert_array_equal(log.action, frame["arm"].map(order))
    np.testing.assert_array_equal(log.label, frame["correct"].map(order))
    assert log.n_actions == 3
    assert log.schema is not None and log.schema.columns is not None
    assert log.schema.columns.actions == ("right", "left", "middle")
    from iglearn.data.formats import FeatureSchema

    again = FeatureSchema.from_json(log.schema.to_json(), "model.json")
    assert again == log.schema
    contexts = ContextSet.from_frame(frame[["x", "correct"]], schema=again)
    np.testing.assert_array_equal(contexts.label, frame["correct"].map(order))


def test_actions_numbered_from_one_are_named_by_their_numbers():
    frame = named_frame().drop(columns="correct")
    numbers = {"left": 1, "middle": 2, "right": 3}
    for written in (frame["arm"].map(numbers), frame["arm"].map(numbers).astype(float),
                    frame["arm"].map(numbers).astype(str)):
        for actions in (["1", "2", "3"], [1, 2, 3], np.arange(1, 4)):  # as text or numbers
            log = InteractionLog.from_frame(frame.assign(arm=written),
                                            **dict(NAMED, label=None), actions=actions)
            np.testing.assert_array_equal(log.action, frame["arm"].map(numbers) - 1)
            assert log.schema is not None and log.schema.action_names == ("1", "2", "3")


@pytest.mark.parametrize(("actions", "n_actions", "words"), [
    (["left", "right"], None, ["column 'arm' holds 'middle' at row ",
                               "none of the actions ('left', 'right')", "--actions"]),
    (["left", "left", "right"], None, ["actions names 'left' twice"]),
    (["left"], None, ["n_actions"]),
    (["left", ""], None, ["actions holds ''"]),
    (["left", "middle", "right"], 4, ["actions names 3 actions but n_actions is 4"]),
])
def test_named_actions_that_do_not_fit_the_column_are_refused(actions, n_actions, words):
    with pytest.raises(IGLearnError) as error:
        InteractionLog.from_frame(named_frame(), n_actions, **NAMED, actions=actions)
    for word in words:
        assert word in str(error.value), str(error.value)


def test_actions_in_words_without_their_names_are_refused_with_the_option_to_give():
    with pytest.raises(IGLearnError) as error:
        InteractionLog.from_frame(named_frame(), 3, **NAMED)
    message = str(error.value)
    assert "column 'arm' names the actions in words" in message
    assert "--actions left,middle,right" in message


def test_a_word_among_action_indices_is_named_at_its_row_as_a_value_to_correct():
    """A stray word among integers (a pandas column of objects, or of texts as a CSV reader
    gives it) names its own row and says to correct it; it named the first row's valid
    index and suggested --actions with the indices and the word."""
    frame = named_frame().drop(columns="correct")
    indices = frame["arm"].map({"left": 0, "middle": 1, "right": 2})
    for column in (indices.astype(object), indices.astype(str)):
        column = column.copy()
        column.iloc[7] = "two"
        with pytest.raises(IGLearnError) as error:
            InteractionLog.from_frame(frame.assign(arm=column), 3, **dict(NAMED, label=None))
        message = str(error.value)
        assert "column 'arm' holds a word among action indices ('two' at row 7)" in message
        assert "correct or remove the rows that hold words, row 7 (1 row)" in message
        assert "--actions 0" not in message


def test_actions_in_words_are_named_by_the_first_row_and_the_names_to_order():
    """A column of words names its first row (it named the alphabetically first word's first
    row) and asks for the names in the order of their indices."""
    frame = named_frame().drop(columns="correct")
    frame.loc[0, "arm"] = "right"
    with pytest.raises(IGLearnError) as error:
        InteractionLog.from_frame(frame, 3, **dict(NAMED, label=None))
    message = str(error.value)
    assert "names the actions in words ('right' at row 0)" in message
    assert "give the names in the order of their indices" in message
    assert "reorder them so that the first is action 0" in message


def test_a_name_outside_the_actions_given_is_the_one_at_the_row_named():
    """With --actions, the value an error shows is the one at the row it names (it showed
    the alphabetically first unknown name, at another name's row)."""
    frame = named_frame().drop(columns="correct")
    frame.loc[2, "arm"], frame.loc[5, "arm"] = "zigzag", "aside"
    with pytest.raises(IGLearnError, match="column 'arm' holds 'zigzag' at row 2, none of"):
        InteractionLog.from_frame(frame, **dict(NAMED, label=None),
                                  actions=["left", "middle", "right"])


def test_an_empty_ignore_list_ignores_nothing():
    """ignore=[] (an empty list, as a program builds it) reads as no ignore; it was refused
    as "ignore selects no column"."""
    frame, _ = user_frame(20)
    log = InteractionLog.from_frame(frame, **MAPPING, ignore=[])
    assert_same(log, InteractionLog.from_frame(frame, **MAPPING), FIELDS)
    assert ColumnMapping(ignore=()).ignore is None
    with pytest.raises(IGLearnError, match="column 'user' is read by no field"):
        InteractionLog.from_frame(frame.assign(user=1), **MAPPING, ignore=[])
    with pytest.raises(IGLearnError, match="context selects no column"):
        ColumnMapping(context=())


def test_a_mapping_without_named_actions_records_none():
    from iglearn.data.frames import ColumnMapping

    assert "actions" not in ColumnMapping(action="arm").to_json()
    assert ColumnMapping(action="arm").renames
    assert ColumnMapping(actions=("a", "b")).renames and ColumnMapping(actions=("a", "b")
                                                                       ).n_actions == 2


def test_uniform_logging_needs_no_probability_column():
    frame = named_frame().drop(columns=["p", "correct"])
    mapping = dict(NAMED, probability="uniform", label=None)
    log = InteractionLog.from_frame(frame, **mapping, actions=["left", "middle", "right"])
    np.testing.assert_allclose(log.probability, 1 / 3)
    assert log.schema is not None and log.schema.columns is not None
    assert log.schema.columns.probability == "uniform"   # the model reads logs so again
    # a column of that name is read as any other
    weights = InteractionLog.from_frame(frame.assign(uniform=0.5), **mapping,
                                        actions=["left", "middle", "right"])
    np.testing.assert_allclose(weights.probability, 0.5)
    with pytest.raises(IGLearnError, match=r"no column for field 'probability' \(a column 'p', "
                                           r"or probability='uniform' \(--probability "
                                           r"uniform\) if the actions were played uniformly"):
        InteractionLog.from_frame(frame, **dict(NAMED, label=None),
                                  actions=["left", "middle", "right"])


def test_an_action_named_but_never_logged_is_warned_of_by_its_name():
    from iglearn.learners.batch_igl import identifiability_warnings

    frame = named_frame()
    log = InteractionLog.from_frame(frame[frame["arm"] != "middle"], **NAMED,
                                    actions=["left", "middle", "right"])
    assert any("action 1 ('middle') never occurs in the log" in note
               for note in identifiability_warnings(log))


def test_a_row_index_written_with_the_table_is_left_unread(tmp_path):
    """pandas' ``to_csv`` writes the index as a first column without a name (read back as
    ``Unnamed: 0``), R's ``write.csv`` its row names from 1, a filtered frame's index numbers
    its rows with gaps, ``to_parquet`` keeps it as ``__index_level_0__`` or its levels' names
    (in its pandas metadata): such columns are no field and no error (the filtered ones were
    "column '' is read by no field", with no option to ignore a column without a name); an
    unnamed column of anything else, not first, is."""
    from iglearn.data.formats import open_table

    frame = named_frame().drop(columns="correct")
    mapping = dict(NAMED, label=None)
    names = ["left", "middle", "right"]
    plain = InteractionLog.from_frame(frame, **mapping, actions=names)
    frame.to_csv(tmp_path / "pandas.csv")                  # index 0, 1, ...
    frame.set_axis(range(1, len(frame) + 1)).to_csv(tmp_path / "r.csv", index_label="")
    gaps = frame.set_axis(range(3, 3 * len(frame) + 3, 3))  # as a filter leaves it
    gaps.to_csv(tmp_path / "filtered.csv")
    gaps.to_parquet(tmp_path / "filtered.parquet")
    gaps.rename_axis("row").set_index("p", append=True).to_parquet(tmp_path / "levels.parquet")
    for path in (tmp_path / "pandas.csv", tmp_path / "r.csv", tmp_path / "filtered.csv",
                 tmp_path / "filtered.parquet", tmp_path / "levels.parquet"):
        reader = open_table(path, columns=ColumnMapping(
            context=("x",), feedback=("latency",), action="arm", probability="p",
            actions=tuple(names)))
        log = InteractionLog(**reader.arrays(), n_actions=3)
        np.testing.assert_array_equal(log.action, plain.action)
        np.testing.assert_allclose(log.context, plain.context)
    indexed = pd.read_csv(tmp_path / "pandas.csv")
    assert indexed.columns[0] == "Unnamed: 0"
    assert len(InteractionLog.from_frame(indexed, **mapping, actions=names)) == len(frame)
    last = indexed[[*indexed.columns[1:], "Unnamed: 0"]]
    with pytest.raises(IGLearnError, match="column 'Unnamed: 0' is read by no field"):
        InteractionLog.from_frame(last.assign(**{"Unnamed: 0": 7}), **mapping, actions=names)
    # first, but a feature under a blank header cell (measurements, a repeated id): refused,
    # not dropped unseen; distinct words (row names) are an index
    for values in (38.0 + np.arange(len(frame)) % 7 / 10, np.arange(len(frame)) % 5):
        blank = indexed.assign(**{"Unnamed: 0": values})
        with pytest.raises(IGLearnError, match="column 'Unnamed: 0' is read by no field"):
            InteractionLog.from_frame(blank, **mapping, actions=names)
        blank.rename(columns={"Unnamed: 0": ""}).to_csv(tmp_path / "blank.csv", index=False)
        with pytest.raises(IGLearnError, match="column 1 has no name but holds values"):
            open_table(tmp_path / "blank.csv", columns=ColumnMapping(
                context=("x",), feedback=("latency",), action="arm", probability="p",
                actions=tuple(names)))
    words = indexed.assign(**{"Unnamed: 0": [f"row{i}" for i in range(len(frame))]})
    assert len(InteractionLog.from_frame(words, **mapping, actions=names)) == len(frame)


def test_missing_drop_leaves_out_the_rows_with_a_missing_value_and_names_them():
    """NaN in a float column, pandas' NA in a nullable integer or boolean one, None in a column
    of lists: those rows are left out, a warning names them, the other rows are read as the
    same frame without them; a later bad value is named by its row in the frame as given."""
    log = small_log(n=40)
    frame = log.to_frame().astype({"action": "Int64"})
    frame["definitely_bad"] = pd.array([i % 5 == 0 for i in range(40)], dtype="boolean")
    frame["notes"] = [[1.0, 2.0]] * 40
    frame.loc[3, "feedback_1"] = np.nan
    frame.loc[11, "action"] = pd.NA
    frame.loc[20, "definitely_bad"] = pd.NA
    frame.at[27, "notes"] = None
    read = dict(context=["context_*", "notes"], definitely_bad="definitely_bad")
    with pytest.raises(IGLearnError, match=r"column 'notes' holds a missing value at row 27; "
                                           r".*missing='drop'"):  # the context is read first
        InteractionLog.from_frame(frame, **read)
    with pytest.warns(UserWarning, match=r"dropped rows 3, 11, 20, 27 \(4 rows\) with a "
                                         r"missing value in a column read; 36 rows are left"):
        dropped = InteractionLog.from_frame(frame, missing="drop", **read)
    complete = frame.drop(index=[3, 11, 20, 27]).astype({"action": "int64",
                                                         "definitely_bad": "bool"})
    assert_same(dropped, InteractionLog.from_frame(complete, **read), FIELDS)
    assert dropped.schema is not None and dropped.schema.columns.missing == "refuse"
    frame.loc[30, "probability"] = 1.5
    with pytest.warns(UserWarning, match="dropped"), pytest.raises(
            IGLearnError, match=r"column 'probability' holds 1.5 at row 30, outside"):
        InteractionLog.from_frame(frame, missing="drop", **read)
    frame.loc[:, "feedback_0"] = np.nan
    with pytest.raises(IGLearnError, match="every row has a missing value in a column read"):
        InteractionLog.from_frame(frame, missing="drop", **read)
    with pytest.raises(IGLearnError, match="missing is 'skip'; choose one of refuse, drop"):
        ColumnMapping(missing="skip")


def test_a_named_index_level_the_mapping_names_is_read_as_its_column():
    """A log indexed by its action (``set_index("arm")``), or by a user the context reads, reads
    as the table with a plain index; an index the mapping does not name stays unread, and a
    model's contexts indexed alike read too."""
    frame, _ = user_frame(60)
    plain = InteractionLog.from_frame(frame, **MAPPING)
    for indexed in (frame.set_index("arm"), frame.set_index(["p", "arm"]),
                    frame.set_index("emg_10")):
        log = InteractionLog.from_frame(indexed, **MAPPING)
        np.testing.assert_array_equal(log.action, plain.action)
        np.testing.assert_allclose(log.context, plain.context)
        np.testing.assert_allclose(log.feedback, plain.feedback)  # emg_* selects emg_10
        assert log.schema == plain.schema
    users = frame.assign(user=np.arange(60) % 4).set_index("user")
    with_user = InteractionLog.from_frame(users, **dict(MAPPING,
                                                        context=["age", "clicks", "user"]))
    np.testing.assert_array_equal(with_user.context[:, 2], np.arange(60) % 4)
    assert len(InteractionLog.from_frame(users, **MAPPING)) == 60  # not named: unread
    assert len(InteractionLog.from_frame(users, **MAPPING, ignore=["user"])) == 60
    contexts = ContextSet.from_frame(frame.set_index("age")[["clicks"]], schema=plain.schema)
    np.testing.assert_allclose(contexts.context, plain.context)


@pytest.mark.filterwarnings("error")
def test_a_wide_fresh_table_indexed_by_its_action_reads_without_pandas_warnings(tmp_path):
    """A CSV of many columns read by pandas (one block a column) and indexed by its action
    reads as the plain table, and pandas does not warn of a fragmented frame from inside
    iglearn (reset_index inserts a column into it)."""
    frame, _ = user_frame(60)
    more = pd.DataFrame({f"emg_{i}": frame["emg_0"] + i for i in range(3, 130) if i != 10})
    wide = pd.concat([frame, more], axis=1)
    wide.to_csv(tmp_path / "log.csv", index=False)
    read = pd.read_csv(tmp_path / "log.csv")
    plain = InteractionLog.from_frame(read, **MAPPING)
    log = InteractionLog.from_frame(read.set_index("arm"), **MAPPING)
    np.testing.assert_array_equal(log.action, plain.action)
    np.testing.assert_allclose(log.feedback, plain.feedback)
    assert log.feedback.shape[1] == 130


def test_a_model_fitted_on_named_actions_measures_labels_given_as_those_names():
    """model.accuracy(frame, labels) with the labels written as the model's action names
    (it said "dtype '<U5'; expected real numbers"); a name the model lacks is refused
    naming it."""
    from iglearn import Supervised

    frame = named_frame(120)
    log = InteractionLog.from_frame(frame, **NAMED, actions=["right", "left", "middle"])
    model = Supervised(seed=0).fit(log)
    by_index = model.accuracy(frame, log.label)
    assert model.accuracy(frame, frame["correct"]) == by_index
    assert model.accuracy(frame, frame["correct"].to_numpy(dtype=object)) == by_index
    with pytest.raises(IGLearnError, match="holds 'up' at row 0, none of the actions"):
        model.accuracy(frame, np.array(["up"] * len(frame)))


def test_action_codes_with_leading_zeros_read_as_numbers_match_their_names(tmp_path):
    """A CSV column of codes 01, 02, 03 is parsed as the numbers 1, 2, 3: named
    actions=('01', '02', '03') they are read by value (it said "holds '1', none of the
    actions ('01', '02', '03')"), while a column read as text matches them as written."""
    from iglearn.data.formats import open_table

    frame = named_frame()
    codes = frame.assign(arm=frame["arm"].map({"left": "01", "middle": "02", "right": "03"}))
    codes.drop(columns="correct").to_csv(tmp_path / "codes.csv", index=False)
    mapping = ColumnMapping(context=("x",), feedback=("latency",), action="arm",
                            probability="p", actions=("01", "02", "03"))
    read = open_table(tmp_path / "codes.csv", columns=mapping).arrays()
    as_text = InteractionLog.from_frame(codes.drop(columns="correct"), context="x",
                                        feedback="latency", action="arm", probability="p",
                                        actions=["01", "02", "03"])
    np.testing.assert_array_equal(read["action"], as_text.action)
    np.testing.assert_array_equal(read["action"],
                                  frame["arm"].map({"left": 0, "middle": 1, "right": 2}))


def test_a_mapped_column_missing_from_a_table_in_iglearns_layout_names_the_fix():
    """A table written in iglearn's layout (context_0, ...: a CSV from convert) keeps no
    column names: read by a mapping of named columns, the message says so and how to map
    the layout's columns; another table's message says to map its own columns."""
    frame, _ = user_frame(60)
    log = InteractionLog.from_frame(frame, **MAPPING)
    layout = to_frame(log)
    assert "context_0" in layout.columns
    with pytest.raises(IGLearnError, match=r"no column 'age', which the column mapping reads "
                                           r"as context; the columns are 'context_0', .*; the "
                                           r"table is in iglearn's layout \(context_0, \.\.\.\)"
                                           r".*context=\['context_\*'\], --context 'context_\*'"):
        InteractionLog.from_frame(layout, **MAPPING)
    renamed = InteractionLog.from_frame(layout, context=["context_*"], feedback=["feedback_*"],
                                        n_actions=3)
    np.testing.assert_allclose(renamed.context, log.context)
    with pytest.raises(IGLearnError, match=r"no column 'clicks', .*; map the table's own "
                                           r"columns \(context=\[\.\.\.\], --context\)$"):
        InteractionLog.from_frame(frame.drop(columns="clicks"), **MAPPING)
