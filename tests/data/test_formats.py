"""Logs and context sets on disk: round trips, streaming, DSJSON layout, bad files."""

import io
import json
import os
import resource
import signal
import subprocess
import sys
import warnings
import zipfile
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iglearn import IGLearnError, InteractionLog
from iglearn.cli import main
from iglearn.data.contexts import ContextSet
from iglearn.data.formats import (
    FeatureSchema,
    convert,
    open_table,
    read_contexts,
    read_log,
    write_table,
)
from iglearn.data.formats.dsjson import schema_path

FIELDS = ("context", "action", "probability", "feedback", "reward", "label")


def small_log(n=40, k=4, seed=0, source="log"):
    rng = np.random.default_rng(seed)
    context = rng.normal(size=(n, 5)).astype(np.float32)
    context[rng.random((n, 5)) < 0.3] = 0
    return InteractionLog(
        context=context, action=rng.integers(0, k, n), probability=rng.uniform(0.1, 1, n),
        feedback=(rng.random((n, 3)) < 0.5).astype(np.float32), n_actions=k,
        reward=rng.integers(0, 2, n).astype(np.float32), label=rng.integers(0, k, n),
        source=source)


def assert_same(a, b, fields=FIELDS):
    assert a.n_actions == b.n_actions
    for name in fields:
        left, right = getattr(a, name), getattr(b, name)
        assert (left is None) == (right is None), name
        if left is not None:
            np.testing.assert_array_equal(left, right, err_msg=name)


@pytest.mark.parametrize("first", [".npz", ".parquet", ".dsjson"])
@pytest.mark.parametrize("second", [".npz", ".parquet", ".dsjson"])
def test_round_trip_through_every_pair_of_formats(tmp_path, first, second):
    log = small_log()
    write_table(log, tmp_path / f"a{first}")
    convert(tmp_path / f"a{first}", tmp_path / f"b{second}")
    assert_same(log, read_log(tmp_path / f"b{second}"))


@pytest.mark.parametrize(("delimiter", "decimal"), [(";", ","), (";", "."), ("\t", "."),
                                                  ("\t", ",")])
def test_a_csv_file_separated_by_semicolons_or_tabs_reads_as_one_with_commas(
        tmp_path, delimiter, decimal):
    """Spreadsheets in locales whose decimal mark is the comma export semicolons (and tabs):
    the header line tells the separator, the first data line a decimal comma; the log reads
    as the same log written with commas, BOM or not."""
    log = small_log()
    write_table(log, tmp_path / "commas.csv")
    lines = (tmp_path / "commas.csv").read_text().splitlines()
    assert "," in lines[0] and ";" not in lines[0]
    turned = [lines[0].replace(",", delimiter)] + [
        delimiter.join(value.replace(".", decimal) for value in line.split(","))
        for line in lines[1:]]
    other = tmp_path / "other.csv"
    other.write_bytes(b"\xef\xbb\xbf" + "\n".join(turned + [""]).encode())
    assert_same(read_log(tmp_path / "commas.csv"), read_log(other))


@pytest.mark.parametrize(("header", "name", "sep"), [
    ("temp, C;f0;f1;arm;p", "temp, C", ";"), ('"temp, C";f0;f1;arm;p', "temp, C", ";"),
    ("temp, C\tf0\tf1\tarm\tp", "temp, C", "\t"), ('"t;x, y",f0,f1,arm,p', "t;x, y", ",")])
def test_a_csv_separator_is_the_one_that_splits_every_line_alike(tmp_path, header, name, sep):
    """A column name holding another separator (a comma in a file of semicolons, quoted or
    not) does not decide the separator: it was the comma whenever the header held one, so a
    file of semicolons whose header read "temp, C" was refused ("1 field where the header
    names 2 columns"). Values quoted with a decimal comma are told as such."""
    from iglearn.data.formats.csv import dialect
    from iglearn.data.frames import ColumnMapping
    rows = [sep.join([f'"{i},5"' if sep != "," else str(i), "0", "1", str(i % 2),
                      '"0,5"' if sep != "," else "0.5"]) for i in range(6)]
    (tmp_path / "log.csv").write_text("\n".join([header, *rows]) + "\n")
    assert dialect(tmp_path / "log.csv") == (sep, "," if sep != "," else ".")
    reader = open_table(tmp_path / "log.csv", columns=ColumnMapping(
        context=(name,), feedback=("f0", "f1"), action="arm", probability="p", n_actions=2))
    context = reader.arrays()["context"][:, 0]
    np.testing.assert_allclose(context, np.arange(6) + (0.5 if sep != "," else 0))


@pytest.mark.parametrize(("encoding", "words"), [
    ("utf-16", "the file is UTF-16 text (its byte-order mark says so); save it as UTF-8"),
    ("utf-16-le", "the file holds NUL bytes, as UTF-16 text does; save it as UTF-8"),
    ("utf-32", "the file is UTF-32 text (its byte-order mark says so); save it as UTF-8"),
    ("latin-1", "the file is not UTF-8 text (its header line holds the byte 0xe9: Latin-1 "
                "or Windows-1252 text, perhaps); save it as UTF-8")])
def test_a_csv_file_not_in_utf8_is_one_line_saying_so(tmp_path, encoding, words):
    """Excel's "Unicode text" (UTF-16) was "line 302: 1 field ('\\x00') where the header
    names 5 columns", a Latin-1 header "cannot be read (UnicodeDecodeError ...)"."""
    path = tmp_path / "log.csv"
    path.write_bytes("temp\u00e9,f0,arm,p\n1.5,0,1,0.5\n2.5,1,0,0.5\n".encode(encoding))
    with pytest.raises(IGLearnError) as error:
        open_table(path, columns=own_csv(tmp_path / "other.csv", [0]))
    assert str(error.value) == f"{path}: {words} (in Excel: Save As, CSV UTF-8)"


def messy_csv(path, bad_record, cell):
    """A log in the user's own column names with empty lines, Windows line ends and a quoted
    note spanning two lines; ``cell`` (column, value) written into record ``bad_record``
    (from 0). Returns the line that record begins on."""
    rows = ["age,hour,arm,p,dwell_ms,clicks,note"]
    begins = None
    for i in range(12):
        values = {"age": f"{35 + i / 10}", "hour": str(i % 24), "arm": str(i % 3),
                  "p": "0.3333", "dwell_ms": f"{1000 + 37 * i}", "clicks": str(i % 2),
                  "note": '"two\r\nlines"' if i == 3 else "ok"}
        if i == bad_record:
            values[cell[0]] = cell[1]
            begins = sum(row.count("\n") + 1 for row in rows) + 1
        rows.append(",".join(values.values()))
        if i in (1, 5):
            rows.append("")  # an empty line, which the reader skips
    path.write_bytes("\r\n".join(rows).encode() + b"\r\n")
    return begins


@pytest.mark.parametrize(("cell", "words"), [
    (("dwell_ms", "inf"), "column 'dwell_ms' (feedback) holds inf at line {line}"),
    (("dwell_ms", ""), "column 'dwell_ms' holds a missing value at line {line}"),
    (("age", "old"), "('old' at line {line})"),
    (("p", "1.5"), "column 'p' (probability) holds 1.5 at line {line}, outside (0, 1]"),
    (("arm", "3"), "column 'arm' (action) holds 3 at line {line}, outside [0, 3)"),
    # a word among the indices: its own line and the fix (it named '0' at line 2, and
    # suggested --actions 0,1,2,two)
    (("arm", "two"), "column 'arm' holds a word among action indices ('two' at line {line}); "
                     "correct or remove the rows that hold words, line {line} (1 row)"),
    (("p", "1e-9"), "column 'p' (probability) is below 1e-06 at line {line} (1 row)"),
    (("age", "1764666000"), "column 'age' (context) holds 1764666000.0 at line {line}, "
                            "beyond ±1e+09; subtract an origin or change the unit (a time "
                            "stamp: seconds since the log began)")])
@pytest.mark.parametrize("record", [0, 4, 11])
def test_a_csv_value_is_named_by_its_column_and_the_line_it_is_on(tmp_path, cell, words,
                                                                 record):
    """A text editor's line numbers, whatever empty lines, line ends and quoted line breaks
    come before the row."""
    path = tmp_path / "log.csv"
    line = messy_csv(path, record, cell)
    text = path.read_bytes().decode().split("\r\n")
    assert text[line - 1].split(",")[1] == str(record)  # the hour column: the record's own
    with pytest.raises(IGLearnError) as error:
        read_log_of(path)
    assert words.format(line=line) in str(error.value)


def read_log_of(path):
    from iglearn.data.frames import ColumnMapping
    reader = open_table(path, columns=ColumnMapping(
        context=("age", "hour"), action="arm", probability="p",
        feedback=("dwell_ms", "clicks"), ignore=("note",), n_actions=3))
    return reader


def test_a_clean_messy_csv_reads_every_row(tmp_path):
    path = tmp_path / "log.csv"
    messy_csv(path, -1, None)
    reader = read_log_of(path)
    assert reader.info.n_rows == 12
    np.testing.assert_allclose(reader.arrays()["feedback"][:, 0], 1000 + 37 * np.arange(12))


def own_csv(path, arms, rows=None):
    """A CSV log of the user's own columns x, f0, f1, arm and p (the actions as ``arms``
    writes them, row by row, or ``rows``: the lines as written); returns its mapping."""
    from iglearn.data.frames import ColumnMapping
    lines = rows or ["x,f0,f1,arm,p"] + [f"{i / 10},{i % 2},{i % 3},{arm},0.5"
                                         for i, arm in enumerate(arms)]
    path.write_text("\n".join(lines) + "\n")
    return ColumnMapping(context=("x",), feedback=("f*",), action="arm", probability="p")


def test_actions_named_as_null_texts_are_names_and_a_number_column_keeps_them_missing(
        tmp_path):
    """Actions named NA (a region), null or N/A are actions, not missing values (NA read as
    missing, every such row was refused, or dropped with missing='drop'); an empty cell is
    missing in every column, and NA or NaN in a column of numbers (R writes NA) too."""
    from dataclasses import replace
    names = ("NA", "EU", "null", "N/A", "nan")
    arms = [names[i % 5] for i in range(20)]
    mapping = replace(own_csv(tmp_path / "log.csv", arms), actions=names)
    action = open_table(tmp_path / "log.csv", columns=mapping).arrays()["action"]
    np.testing.assert_array_equal(action, np.arange(20) % 5)
    own_csv(tmp_path / "empty.csv", ["EU"] + [""] + arms[2:])
    with pytest.raises(IGLearnError, match="column 'arm' holds a missing value at line 3"):
        open_table(tmp_path / "empty.csv", columns=mapping)
    for missing in ("NA", "NaN", ""):
        lines = ["x,f0,f1,arm,p"] + [f"{missing if i == 4 else i},0,1,NA,0.5"
                                     for i in range(6)]
        own_csv(tmp_path / "numbers.csv", [], lines)
        with pytest.raises(IGLearnError, match="column 'x' holds a missing value at line 6"):
            open_table(tmp_path / "numbers.csv", columns=mapping)


def test_a_separator_ending_every_csv_line_is_no_column_and_a_nameless_one_is_told(
        tmp_path):
    """Spreadsheets export a separator at the end of every line: the empty column of no name
    it makes is left out (it was "column '' is read by no field ... ignore=[...]", and no
    ignore entry can name it); a column of no name holding values is told by its position,
    with a fix that reads."""
    from dataclasses import replace
    arms = [i % 2 for i in range(8)]
    mapping = replace(own_csv(tmp_path / "plain.csv", arms), n_actions=2)
    lines = (tmp_path / "plain.csv").read_text().splitlines()
    own_csv(tmp_path / "ends.csv", [], [line + "," for line in lines])
    own_csv(tmp_path / "twice.csv", [], [line + ";;" for line in
                                         (line.replace(",", ";") for line in lines)])
    plain = open_table(tmp_path / "plain.csv", columns=mapping).arrays()
    for name in ("ends.csv", "twice.csv"):
        read = open_table(tmp_path / name, columns=mapping).arrays()
        for field in ("context", "action", "probability", "feedback"):
            np.testing.assert_array_equal(read[field], plain[field])
    own_csv(tmp_path / "held.csv", [], [lines[0] + ","] + [line + ",7" for line in lines[1:]])
    with pytest.raises(IGLearnError, match=r"column 6 has no name but holds values; give it "
                                           r"a name in the header"):
        open_table(tmp_path / "held.csv", columns=mapping)


@pytest.mark.parametrize("suffix", [".npz", ".parquet", ".dsjson"])
def test_context_set_round_trip_and_contexts_of_a_log(tmp_path, suffix):
    contexts = ContextSet(np.eye(3, dtype=np.float32) * 2, 5, np.array([0, 4, 2]), "c")
    write_table(contexts, tmp_path / f"c{suffix}")
    back = read_contexts(tmp_path / f"c{suffix}")
    np.testing.assert_array_equal(back.context, contexts.context)
    np.testing.assert_array_equal(back.label, contexts.label)
    log = small_log()
    write_table(log, tmp_path / f"l{suffix}")
    from_log = read_contexts(tmp_path / f"l{suffix}")
    np.testing.assert_array_equal(from_log.context, log.context)
    with pytest.raises(IGLearnError, match="contexts only"):
        read_log(tmp_path / f"c{suffix}")


def test_npz_is_memory_mapped_and_compressed_npz_reads(tmp_path):
    log = small_log()
    write_table(log, tmp_path / "a.npz")
    with zipfile.ZipFile(tmp_path / "a.npz") as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
    read = read_log(tmp_path / "a.npz")
    base = read.context
    while not isinstance(base, np.memmap) and getattr(base, "base", None) is not None:
        base = base.base
    assert isinstance(base, np.memmap)
    np.savez_compressed(tmp_path / "c.npz", context=log.context, action=log.action,
                        probability=log.probability, feedback=log.feedback, n_actions=4)
    assert_same(log, read_log(tmp_path / "c.npz"), FIELDS[:4])


def test_parquet_is_streamed_in_batches_with_fixed_size_float32_lists(tmp_path):
    log = small_log(n=50)
    write_table(log, tmp_path / "a.parquet")
    schema = pq.read_schema(tmp_path / "a.parquet")
    assert schema.field("context").type == pa.list_(pa.float32(), 5)
    assert schema.metadata[b"n_actions"] == b"4"
    batches = list(open_table(tmp_path / "a.parquet").batches(rows=16))
    assert [start for start, _ in batches] == [0, 16, 32, 48]
    np.testing.assert_array_equal(batches[1][1]["context"], log.context[16:32])


def test_parquet_vectors_as_lists_of_any_length_are_refused_naming_the_column_options(
        tmp_path):
    """A log in iglearn's column names whose vectors are lists of any length (as Spark
    writes arrays) was refused as "expected fixed-size lists of float32" without a way out;
    the refusal names the column options, which read such a table as it is."""
    from iglearn.data.frames import ColumnMapping
    from iglearn.data.stream import open_log

    log = small_log(n=50)
    write_table(log, tmp_path / "a.parquet")
    table = pq.read_table(tmp_path / "a.parquet")
    for name in ("context", "feedback"):
        table = table.set_column(table.schema.get_field_index(name), name,
                                 table.column(name).cast(pa.list_(pa.float32())))
    pq.write_table(table, tmp_path / "spark.parquet")
    with pytest.raises(IGLearnError, match=r"column 'context' has type 'list<element: float>'; "
                                           r"expected fixed-size lists .* is read with the "
                                           r"column options \(--context context --feedback "
                                           r"feedback") as error:
        read_log(tmp_path / "spark.parquet")
    assert "\n" not in str(error.value)
    mapping = ColumnMapping(context="context", feedback="feedback", action="action",
                            probability="probability", reward="reward", label="label")
    assert_same(open_log(tmp_path / "spark.parquet", columns=mapping, n_actions=4), log)


VW_LINE = ('{"_label_cost": 0, "_label_probability": 0.25, "_label_Action": 2, '
           '"_labelIndex": 1, "o": [{"v": {"v=click": 1}, "_definitely_bad": false}], '
           '"a": [2, 1, 3, 4], "c": {"User": {"user=Tom": 1, "time": "afternoon"}, '
           '"_multi": [{"Action": {"a=politics": 1}}, {"Action": {"a=sports": 1}}, '
           '{"Action": {"a=music": 1}}, {"Action": {"a=food": 1}}]}, "p": [0.25, 0.25, 0.25, '
           '0.25]}')


def test_reads_vw_igl_dsjson_and_builds_the_schema(tmp_path):
    none_line = VW_LINE.replace('"v=click"', '"v=none"').replace('"user=Tom"', '"user=Anna"')
    path = tmp_path / "vw.dsjson"
    path.write_text(VW_LINE + "\n\n" + none_line + "\n")
    log = read_log(path)
    assert log.n_actions == 4 and len(log) == 2
    reader = open_table(path)
    assert reader.info.schema == FeatureSchema(("User^user=Tom", "User^timeafternoon",
                                                "User^user=Anna"), ("v^v=click", "v^v=none"))
    np.testing.assert_array_equal(log.context, [[1, 1, 0], [0, 1, 1]])
    np.testing.assert_array_equal(log.feedback, [[1, 0], [0, 1]])
    np.testing.assert_array_equal(log.action, [1, 1])
    np.testing.assert_allclose(log.probability, 0.25)
    # with a model's schema, a feature it lacks (a new user) is read as 0, with one warning
    # naming the line, as VW reads a feature it has no weight for
    with pytest.warns(UserWarning, match=r"line 3: context feature 'User\^user=Anna' is not "
                                         r"among the features of the schema given .* read as "
                                         r"0") as told:
        known = read_log(path, schema=FeatureSchema(("User^user=Tom", "User^timeafternoon"),
                                                    ("v^v=click", "v^v=none")))
    assert len(told) == 1
    np.testing.assert_array_equal(known.context, [[1, 1], [0, 1]])
    # the file's own sidecar naming other features is a damaged pair: refused
    schema_path(path).write_text(json.dumps({"format": "iglearn-dsjson-schema", "version": 1,
                                             "context": ["User^user=Tom"],
                                             "feedback": ["v^v=click", "v^v=none"]}))
    with pytest.raises(IGLearnError, match=r"line 1: context feature 'User\^timeafternoon' "
                                           r"is not in the feature schema beside the file "
                                           r"\(.*\.dsjson\.schema\.json\), which is another "
                                           r"log's: delete it"):
        read_log(path)


def test_vw_outcome_event_bookkeeping_is_not_feedback(tmp_path):
    """A joined VW log's outcome events carry an event id and whether the action was taken
    beside the value: only the value is feedback (each event id read as a feature was one
    more feedback dimension, seen on its own line alone)."""
    lines = []
    for i, value in enumerate([1.0, 0.0, 1.0]):
        record = json.loads(VW_LINE)
        record["o"] = [{"v": value, "EventId": f"ev{i}", "ActionTaken": False}]
        lines.append(json.dumps(record))
    (tmp_path / "joined.dsjson").write_text("\n".join(lines) + "\n")
    log = read_log(tmp_path / "joined.dsjson")
    assert log.schema is not None and log.schema.feedback == ("^v",)
    np.testing.assert_array_equal(log.feedback[:, 0], [1.0, 0.0, 1.0])
    # several outcome events of one decision: a feature's values add up, as VW adds them
    # (the last event's was kept)
    record = json.loads(VW_LINE)
    record["o"] = [{"v": 1.0, "EventId": "e1"}, {"v": 0.5, "EventId": "e2"},
                   {"w": {"click": 1}}]
    (tmp_path / "events.dsjson").write_text(json.dumps(record) + "\n")
    events = read_log(tmp_path / "events.dsjson")
    assert dict(zip(events.schema.feedback, events.feedback[0].tolist(), strict=True)) == {
        "^v": 1.5, "w^click": 1.0}


def test_dsjson_lines_marked_skip_learn_are_not_read(tmp_path):
    """VW's joiner marks an event not to learn from (a deferred action never activated) with
    "_skipLearn": true; such a line is left out of the log, with one warning naming the
    count, and a file of only such lines is refused."""
    lines = []
    for i, value in enumerate([1.0, 0.0, 1.0, 0.5]):
        record = json.loads(VW_LINE)
        record["o"] = [{"v": value}]
        if i in (1, 3):
            record["_skipLearn"] = True
        elif i == 2:
            record["_skipLearn"] = False
        lines.append(json.dumps(record))
    path = tmp_path / "joined.dsjson"
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match=r"2 of 4 lines have \"_skipLearn\": true"):
        log = read_log(path)
    np.testing.assert_array_equal(log.feedback[:, 0], [1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # contexts to predict on: every line, one row each
        assert len(read_contexts(path)) == 4
    skipped = [line for i, line in enumerate(lines) if i in (1, 3)]
    path.write_text("\n".join(skipped) + "\n")
    with pytest.raises(IGLearnError, match="every line has \"_skipLearn\": true"):
        read_log(path)
    record = json.loads(VW_LINE)
    record["_skipLearn"] = "yes"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(IGLearnError, match=r"line 1: \"_skipLearn\" is 'yes'; write true or"):
        read_log(path)


def test_dsjson_costs_of_a_contextual_bandit_log_read_as_the_reward(tmp_path):
    """A VW contextual-bandit log's _label_cost is the logged action's cost: read as the
    latent reward (its negative, for evaluation), so a conversion keeps it (it was dropped);
    an IGL log's costs, all 0, are no reward; costs beyond [-1, 1] are not read, said."""
    path = tmp_path / "cb.dsjson"

    def write(costs):
        lines = []
        for cost in costs:
            record = json.loads(VW_LINE)
            record["_label_cost"] = cost
            lines.append(json.dumps(record))
        path.write_text("\n".join(lines) + "\n")

    write([-1, 0, -1, 0.5])
    log = read_log(path)
    assert log.reward is not None and log.reward.tolist() == [1.0, 0.0, 1.0, -0.5]
    assert not np.signbit(log.reward[1])  # a cost of 0 is a reward of 0, not -0
    convert(path, tmp_path / "cb.npz")
    assert read_log(tmp_path / "cb.npz").reward.tolist() == [1.0, 0.0, 1.0, -0.5]
    write([0, 0, 0, 0])
    assert read_log(path).reward is None
    write([0, 3, 0, 0])
    with pytest.warns(UserWarning, match="_label_cost reaches 3, so it is not read"):
        assert read_log(path).reward is None


def test_dsjson_writes_labels_and_feedback_before_context(tmp_path):
    write_table(small_log(), tmp_path / "a.dsjson")
    line = (tmp_path / "a.dsjson").read_text().splitlines()[0]
    keys = list(json.loads(line))
    assert keys.index("_labelIndex") < keys.index("o") < keys.index("c")
    record = json.loads(line)
    assert record["_label_Action"] == record["_labelIndex"] + 1
    assert len(record["c"]["_multi"]) == 4 and record["a"][0] == record["_label_Action"]
    sidecar = json.loads(schema_path(tmp_path / "a.dsjson").read_text())
    assert sidecar["n_actions"] == 4 and sidecar["context"][0] == "x^x0"


def test_dsjson_writes_each_value_as_the_shortest_text_of_its_float32():
    """37.05 is written "37.05" (its float32's nine digits are 37.0499992), and reads back as
    the same float32."""
    from iglearn.data.formats.dsjson import _value

    for x in (37.05, 1003.3, 0.1, 1e-7, 3.4e38, 123456789.0, -2.5, 7.0):
        stored = np.float32(x)
        text = json.dumps(_value(float(stored)))
        assert np.float32(float(text)) == stored, (x, text)
        assert len(text) <= len(repr(x)) + 1, (x, text)
    assert json.dumps(_value(float(np.float32(37.05)))) == "37.05"


def test_vowpal_wabbit_reads_iglearn_dsjson(tmp_path):
    pytest.importorskip("vowpalwabbit")
    write_table(small_log(n=30), tmp_path / "a.dsjson")
    done = subprocess.run(
        [sys.executable, "-m", "vowpalwabbit", "--cb_explore_adf", "--experimental_igl",
         "--coin", "--dsjson", "--strict_parse", "--quiet", "--no_stdin", "-d",
         str(tmp_path / "a.dsjson"), "-p", str(tmp_path / "pred.txt")],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # one prediction (a line of action:probability pairs) per example
    predictions = [line for line in (tmp_path / "pred.txt").read_text().splitlines()
                   if line.strip()]
    assert len(predictions) == 30


# --- bad input: one line on stderr naming file, field and problem; exit 2; no output ------

def _npz(path, **changes):
    log = small_log()
    arrays = {name: getattr(log, name) for name in FIELDS[:4]}
    arrays["n_actions"] = 4
    arrays.update(changes)
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})


@pytest.mark.parametrize("k", [np.float64(4.0), np.float32(4.0)])
def test_an_npz_k_held_as_a_whole_float_is_k(tmp_path, k):
    """K stored as 4.0 (a float array) was refused ("field 'n_actions' has dtype 'float64';
    expected integers"), while a CSV or Parquet column n_actions of 4.0 is read as 4."""
    _npz(tmp_path / "x.npz", n_actions=k)
    log = read_log(tmp_path / "x.npz")
    assert log.n_actions == 4 and type(log.n_actions) is int


def _parquet(path, metadata=None, **changes):
    log = small_log()
    columns = {"context": pa.FixedSizeListArray.from_arrays(pa.array(log.context.ravel()), 5),
               "action": pa.array(log.action), "probability": pa.array(log.probability),
               "feedback": pa.FixedSizeListArray.from_arrays(pa.array(log.feedback.ravel()), 3)}
    columns.update(changes)
    table = pa.table({k: v for k, v in columns.items() if v is not None})
    metadata = {"n_actions": "4"} if metadata is None else metadata
    table = table.replace_schema_metadata({k: v for k, v in metadata.items() if v is not None})
    pq.write_table(table, path)


def _keyed(path, kind, cell):
    """A Parquet table without iglearn's metadata whose one context column holds ``cell``, a
    map (of Arrow type ``kind``) or a struct (``kind`` None), on each row."""
    pq.write_table(pa.table({"context_0": pa.array([cell] * 4, kind),
                             "n_actions": pa.array([3] * 4)}), path)


def _parquet_duplicate_column(path):
    log = small_log()
    context = pa.FixedSizeListArray.from_arrays(pa.array(log.context.ravel()), 5)
    table = pa.Table.from_arrays(
        [context, pa.array(log.action), pa.array(log.probability), context,
         pa.FixedSizeListArray.from_arrays(pa.array(log.feedback.ravel()), 3)],
        names=["context", "action", "probability", "context", "feedback"])
    pq.write_table(table.replace_schema_metadata({"n_actions": "4"}), path)


def _npy(array=None, header=None, data=b""):
    """The bytes of a .npy member: ``array``'s, or a hand-written ``header`` and ``data``."""
    out = io.BytesIO()
    if array is not None:
        np.save(out, array)
    else:
        np.lib.format.write_array_header_1_0(out, header)
        out.write(data)
    return out.getvalue()


def _npz_claiming(path, rows, compression=zipfile.ZIP_DEFLATED, forged_size=None):
    """A small .npz whose 'context' header claims ``rows`` rows of 5 float32; with
    ``forged_size``, the zip directory also claims that many uncompressed bytes."""
    context = _npy(header={"descr": "<f4", "fortran_order": False, "shape": (rows, 5)},
                   data=bytes(1000))
    with zipfile.ZipFile(path, "w", compression) as z:
        z.writestr("context.npy", context)
        z.writestr("n_actions.npy", _npy(np.int64(4)))
    if forged_size is not None:
        raw = bytearray(path.read_bytes())
        at = raw.index(b"PK\x01\x02")  # the central directory entry of context.npy
        raw[at + 24:at + 28] = forged_size.to_bytes(4, "little")
        path.write_bytes(bytes(raw))


def _dsjson(path, edit=None):
    write_table(small_log(n=5), path)
    if edit is not None:
        lines = path.read_text().splitlines()
        lines[2] = edit(lines[2])
        path.write_text("\n".join(lines) + "\n")


def _nan_context():
    context = small_log().context.copy()
    context[7, 1] = np.nan
    return context


def _drop(*keys):
    def edit(line):
        record = json.loads(line)
        for key in keys:
            del record[key]
        return json.dumps(record)
    return edit


def _set(key, value):
    def edit(line):
        record = json.loads(line)
        record[key] = value
        return json.dumps(record)
    return edit


def _context(namespaces):
    """An edit setting a line's context namespaces, its actions (c._multi) kept."""
    def edit(line):
        record = json.loads(line)
        record["c"] = {**namespaces, "_multi": record["c"]["_multi"]}
        return json.dumps(record)
    return edit


def _multi(change):
    """An edit changing a line's actions (c._multi) by ``change``."""
    def edit(line):
        record = json.loads(line)
        record["c"]["_multi"] = change(record["c"]["_multi"])
        return json.dumps(record)
    return edit


def _text(old, new):
    def edit(line):
        assert old in line
        return line.replace(old, new, 1)
    return edit


def _sidecar(**changes):
    def make(path):
        _dsjson(path)
        sidecar = schema_path(path)
        record = json.loads(sidecar.read_text())
        record.update(changes)
        sidecar.write_text(json.dumps(record))
    return make


def _sidecar_text(text):
    def make(path):
        _dsjson(path)
        schema_path(path).write_text(text)
    return make


def _field(name, value):
    """A log's field replaced by ``value`` (rows beyond it keep the log's values)."""
    def make(path):
        log = small_log()
        _npz(path, **{name: value(getattr(log, name).copy())})
    return make


def _at(row, value):
    def change(array):
        array = array.astype(np.result_type(array, np.asarray(value)))
        array[row] = value
        return array
    return change


def _npz_twice(path):
    _npz(path)
    with zipfile.ZipFile(path, "a") as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name
        z.writestr("context.npy", _npy(np.zeros((40, 5), np.float32)))


DEEP = "[" * 100000 + "]" * 100000


BAD = {
    "npz wrong shape": ("x.npz", lambda p: _npz(p, context=np.zeros((40, 5, 2))),
                        ["'context'", "shape"]),
    "npz wrong length": ("x.npz", lambda p: _npz(p, probability=np.full(39, 0.5)),
                         ["'probability'", "39 rows"]),
    "npz NaN": ("x.npz", lambda p: _npz(p, context=_nan_context()), ["'context'", "NaN", "row 7"]),
    "npz infinite": ("x.npz", lambda p: _npz(p, feedback=np.full((40, 3), np.inf)),
                     ["'feedback'", "infinite"]),
    "npz probability 0": ("x.npz", lambda p: _npz(p, probability=np.zeros(40)),
                          ["'probability'", "(0, 1]"]),
    "npz probability > 1": ("x.npz", lambda p: _npz(p, probability=np.full(40, 1.5)),
                            ["'probability'", "(0, 1]"]),
    "npz action out of range": ("x.npz", lambda p: _npz(p, action=np.full(40, 4)),
                                ["'action'", "outside [0, 4)"]),
    "npz action not integer": ("x.npz", lambda p: _npz(p, action=np.full(40, 0.5)),
                               ["'action'", "not an integer"]),
    "npz missing field": ("x.npz", lambda p: _npz(p, feedback=None), ["missing field 'feedback'"]),
    "npz missing n_actions": ("x.npz", lambda p: _npz(p, n_actions=None),
                              ["missing field 'n_actions'"]),
    "npz bad n_actions": ("x.npz", lambda p: _npz(p, n_actions=1), ["n_actions", ">= 2"]),
    "npz object array": ("x.npz", lambda p: _npz(p, context=np.array([None] * 40)),
                         ["'context'", "Python objects"]),
    "npz empty file": ("x.npz", lambda p: p.write_bytes(b""), ["empty"]),
    "npz corrupt": ("x.npz", lambda p: p.write_bytes(b"PK\x03\x04 not really a zip" * 9),
                    ["truncated or corrupt"]),
    "parquet missing field": ("x.parquet", lambda p: _parquet(p, probability=None),
                              ["missing field 'probability'"]),
    "parquet missing n_actions": ("x.parquet", lambda p: _parquet(p, {}),
                                  ["K is unknown", "--n-actions", "column 'n_actions'"]),
    "parquet probability > 1": ("x.parquet",
                                lambda p: _parquet(p, probability=pa.array(np.full(40, 2.0))),
                                ["'probability'", "(0, 1]", "at row 0"]),
    "parquet nulls": ("x.parquet",
                      lambda p: _parquet(p, action=pa.array([None] + [1] * 39, pa.int64())),
                      ["'action'", "null"]),
    "parquet wrong type": ("x.parquet",
                           lambda p: _parquet(p, context=pa.array(["a"] * 40)),
                           ["'context'", "fixed-size lists"]),
    "parquet empty file": ("x.parquet", lambda p: p.write_bytes(b""), ["empty"]),
    "dsjson bad JSON": ("x.dsjson", lambda p: _dsjson(p, lambda line: line[:-5]),
                        ["line 3", "not valid JSON"]),
    "dsjson missing label": ("x.dsjson",
                             lambda p: _dsjson(p, _drop("_labelIndex", "_label_Action")),
                             ["line 3", "_labelIndex"]),
    "dsjson missing probability": ("x.dsjson",
                                   lambda p: _dsjson(p, _drop("_label_probability")),
                                   ["line 3", "_label_probability"]),
    "dsjson probability 0": ("x.dsjson", lambda p: _dsjson(p, _set("_label_probability", 0)),
                             ["'probability' holds 0.0 at line 3", "(0, 1]"]),
    "dsjson probability a percentage": ("x.dsjson", lambda p: _dsjson(
        p, _set("_label_probability", 25)), ["'probability' holds 25.0 at line 3"]),
    "dsjson K mismatch": ("x.dsjson",
                          lambda p: _dsjson(p, _set("c", {"x": {"x0": 1}, "_multi": [{}] * 3})),
                          ["line 3", "3 actions but K is 4"]),
    # an action is its position in c._multi: another order, or other features, read wrong
    "dsjson actions reordered": ("x.dsjson", lambda p: _dsjson(p, _multi(lambda m: m[::-1])),
                                 ["line 3", "c._multi lists the actions in another order than "
                                  "line 1 (position 0 is", "write the actions in one order"]),
    "dsjson action features per line": ("x.dsjson", lambda p: _dsjson(p, _multi(
        lambda m: [{"a": {"price": 3.5}}, *m[1:]])), ["line 3", "c._multi's action 0 is",
                                                       "does not read action features"]),
    "dsjson action not integer": ("x.dsjson", lambda p: _dsjson(p, _set("_labelIndex", 1.5)),
                                  ["line 3", "'_labelIndex'", "integers"]),
    "dsjson missing context": ("x.dsjson", lambda p: _dsjson(p, _drop("c")),
                               ["line 3", "missing field 'c'"]),
    "dsjson empty file": ("x.dsjson", lambda p: p.write_text("\n"), ["empty"]),
    "unknown extension": ("x.tsv", lambda p: p.write_text("a,b\n"), ["unknown file extension"]),
    "dsjson named .json": ("x.json", lambda p: p.write_text(VW_LINE + "\n"),
                           ["unknown file extension '.json'", "DSJSON", "reads as .dsjson"]),
    "compressed": ("x.dsjson.gz", lambda p: p.write_bytes(b"\x1f\x8b"),
                   ["unknown file extension '.gz'", "decompress it first"]),
    "csv header only": ("x.csv", lambda p: p.write_text("a,b\n"), ["no rows"]),
    "csv short row": ("x.csv", lambda p: p.write_text("context_0,n_actions\n1,3\n2,3\n1\n"),
                      ["x.csv, line 4: 1 field ('1') where the header names 2 columns",
                       "one field per header column"]),
    "csv columns unread": ("x.csv", lambda p: p.write_text("context_0,n_actions,u,v\n1,3,0,0\n"),
                           ["columns 'u', 'v' are read by no field", "map them to a field",
                            "leave them unread"]),
    "csv without n_actions": ("x.csv", lambda p: p.write_text("context_0,action\n1,0\n"),
                              ["K is unknown", "--n-actions", "column 'n_actions'"]),
    "csv missing value": ("x.csv", lambda p: p.write_text("context_0,n_actions\n1,3\n,3\n"),
                          ["context_0", "missing value at line 3"]),
    "csv text column": ("x.csv", lambda p: p.write_text("context_0,n_actions\nabc,3\n"),
                        ["context_0", "holds text ('abc' at line 2)", "map it to numbers"]),
    "csv stray word": ("x.csv", lambda p: p.write_text(
        "context_0,n_actions\n35.1,3\n35.2,3\nhigh,3\n35.0,3\n"),
        ["context_0", "a value that is not a number ('high' at line 4)", "remove those rows"]),
    "csv decimal commas among points": ("x.csv", lambda p: p.write_text(
        "context_0;context_1;n_actions\n1,5;2.5;3\n"),
        ["column 'context_0'", "numbers with a decimal comma ('1,5' at line 2)", "decimal point"]),
    "csv dates": ("x.csv", lambda p: p.write_text(
        "context_0,n_actions\n2026-01-01 10:00:00,3\n"),
        ["context_0", "dates or times", "seconds since a start"]),
    "csv gap": ("x.csv", lambda p: p.write_text("context_0,context_2,n_actions\n1,2,3\n"),
                ["skip context_1"]),
    "missing file": ("absent.npz", lambda p: None, ["no such file"]),
    "a folder": ("x.npz", lambda p: p.mkdir(), ["is a folder"]),
    # hostile or numerically meaningless files
    "npz K 10**12": ("x.npz", lambda p: _npz(p, n_actions=10**12),
                     ["n_actions", "1000000000000", "MAX_ACTIONS"]),
    "npz K a float": ("x.npz", lambda p: _npz(p, n_actions=3.9), ["n_actions is 3.9",
                                                                  "an integer >= 2"]),
    "npz misspelt label": ("x.npz", lambda p: _npz(p, labels=np.zeros(40, np.int64)),
                           ["array 'labels'", "it reads 'context', 'action'", "'n_actions'",
                            "did you mean 'label'? rename or remove it"]),
    "npz unknown array": ("x.npz", lambda p: _npz(p, probabilities=np.full((40, 4), 0.25)),
                          ["array 'probabilities'", "did you mean 'probability'?"]),
    # a map column was "text ('<U32')", its pairs read as an array of strings
    "parquet map column": ("x.parquet", lambda p: _keyed(p, pa.map_(pa.string(), pa.float64()),
                                                         [("a", 1.0)]),
                           ["column 'context_0' holds key-value maps ({'a': 1.0} at row 0); "
                            "context columns hold numbers: give one column per key"]),
    "parquet struct column": ("x.parquet", lambda p: _keyed(p, None, {"a": 1.0}),
                              ["column 'context_0' holds key-value maps ({'a': 1.0} at row 0)",
                               "one column per key"]),
    "npz K a bool": ("x.npz", lambda p: _npz(p, n_actions=True), ["'n_actions'", "bool",
                                                                  "a whole number"]),
    "npz K an array": ("x.npz", lambda p: _npz(p, n_actions=np.arange(3)), ["'n_actions'",
                                                                              "one integer"]),
    "npz complex context": ("x.npz", lambda p: _npz(p, context=np.ones((40, 5), complex)),
                            ["'context'", "complex128", "real numbers"]),
    "npz complex probability": ("x.npz", lambda p: _npz(p, probability=np.full(40, 0.5 + 1j)),
                                ["'probability'", "complex128"]),
    "npz timedelta action": ("x.npz",
                             lambda p: _npz(p, action=np.zeros(40, "timedelta64[s]")),
                             ["'action'", "timedelta64", "real numbers"]),
    "npz datetime feedback": ("x.npz",
                              lambda p: _npz(p, feedback=np.zeros((40, 3), "datetime64[D]")),
                              ["'feedback'", "datetime64"]),
    "npz zero-width dtype": ("x.npz", lambda p: _npz(p, action=np.zeros(40, "V0")),
                             ["'action'", "V0"]),
    "npz text context": ("x.npz", lambda p: _npz(p, context=np.full((40, 5), "a")),
                         ["'context'", "<U1"]),
    "npz zero-width context": ("x.npz", lambda p: _npz(p, context=np.zeros((40, 0))),
                               ["'context'", "0 values per row", "MAX_DIM"]),
    "npz 10**11 rows compressed": ("x.npz", lambda p: _npz_claiming(p, 10**11),
                                   ["'context'", "truncated", "2000000000000 bytes"]),
    "npz 10**11 rows stored": ("x.npz", lambda p: _npz_claiming(p, 10**11, zipfile.ZIP_STORED),
                               ["'context'", "truncated"]),
    "npz forged zip sizes": ("x.npz", lambda p: _npz_claiming(p, 10**8, forged_size=2**32 - 1),
                             ["'context'", "4294967295 bytes", "MAX_EXPANSION"]),
    "npz member twice": ("x.npz", lambda p: _npz_twice(p), ["'context.npy' twice"]),
    "npz action 3.7": ("x.npz", _field("action", _at(3, 3.7)),
                       ["'action'", "3.7 at row 3", "not an integer"]),
    "npz action 1e300": ("x.npz", _field("action", _at(2, 1e300)),
                         ["'action'", "1e+300 at row 2", "outside [0, 4)"]),
    "npz action beyond int64": ("x.npz",
                                _field("action", lambda a: np.full(40, 2**64 - 1, np.uint64)),
                                ["'action'", "18446744073709551615 at row 0"]),
    "npz label -1": ("x.npz", lambda p: _npz(p, label=np.full(40, -1)),
                     ["'label'", "-1 at row 0"]),
    "npz probability 1e-30": ("x.npz", _field("probability", _at([4, 9], 1e-30)),
                              ["'probability'", "below 1e-06", "rows 4, 9 (2 rows)",
                               "PROBABILITY_FLOOR"]),
    "npz probability 1e-42": ("x.npz", _field("probability", lambda a: np.full(40, 1e-42)),
                              ["'probability'", "below 1e-06", "(40 rows)"]),
    "npz context 3e38": ("x.npz", _field("context", _at(6, np.float32(3e38))),
                         ["'context'", "3e+38 at row 6", "MAX_ABS_VALUE"]),
    "npz feedback -3e38": ("x.npz", _field("feedback", _at(1, np.float32(-3e38))),
                           ["'feedback'", "-3e+38 at row 1", "MAX_ABS_VALUE"]),
    "npz context 1e300 float64": ("x.npz", _field("context", _at(0, 1e300)),
                                  ["'context'", "1e+300 at row 0"]),
    "npz deep feature schema": ("x.npz", lambda p: _npz(p, feature_schema=np.array(DEEP)),
                                ["'feature_schema'", "deep", "MAX_JSON_DEPTH"]),
    "parquet action 3.7": ("x.parquet",
                           lambda p: _parquet(p, action=pa.array(np.full(40, 3.7))),
                           ["'action'", "3.7 at row 0", "not an integer"]),
    "parquet label 2.5": ("x.parquet", lambda p: _parquet(p, label=pa.array(np.full(40, 2.5))),
                          ["'label'", "2.5 at row 0", "not an integer"]),
    "parquet action beyond int64": ("x.parquet", lambda p: _parquet(
        p, action=pa.array(np.full(40, 2**63, np.uint64))), ["'action'", "9223372036854775808"]),
    "parquet probability 1e-42": ("x.parquet",
                                  lambda p: _parquet(p, probability=pa.array(np.full(40, 1e-42))),
                                  ["'probability'", "below 1e-06"]),
    "parquet context 3e38": ("x.parquet", lambda p: _parquet(
        p, context=pa.FixedSizeListArray.from_arrays(pa.array(np.full(200, 3e38, np.float32)),
                                                     5)), ["'context'", "MAX_ABS_VALUE"]),
    "parquet K 1_0": ("x.parquet", lambda p: _parquet(p, {"n_actions": "1_0"}),
                      ["'n_actions'", "1_0", "decimal digits"]),
    "parquet K 3.9": ("x.parquet", lambda p: _parquet(p, {"n_actions": "3.9"}),
                      ["'n_actions'", "3.9"]),
    "parquet K 10**12": ("x.parquet", lambda p: _parquet(p, {"n_actions": str(10**12)}),
                         ["n_actions", "MAX_ACTIONS"]),
    "parquet K with escapes": ("x.parquet",
                               lambda p: _parquet(p, {"n_actions": "4\n\x1b[31mred"}),
                               ["'n_actions'", "\\n\\x1b[31mred"]),
    "parquet duplicate column": ("x.parquet", _parquet_duplicate_column,
                                 ["2 columns are named 'context'"]),
    "parquet zero-width context": ("x.parquet", lambda p: _parquet(
        p, context=pa.array([[]] * 40, pa.list_(pa.float32(), 0))),
        ["'context'", "0 values per row"]),
    "parquet deep feature schema": ("x.parquet", lambda p: _parquet(
        p, {"n_actions": "4", "feature_schema": DEEP}), ["'feature_schema'", "deep"]),
    "parquet NaN in feature schema": ("x.parquet", lambda p: _parquet(
        p, {"n_actions": "4", "feature_schema": '{"context": NaN}'}),
        ["'feature_schema'", "NaN"]),
    "dsjson NaN probability": ("x.dsjson", lambda p: _dsjson(
        p, _text('"_label_probability":', '"_label_probability":NaN,"x":')),
        ["line 3", "NaN"]),
    "dsjson Infinity label": ("x.dsjson", lambda p: _dsjson(
        p, _text('"_labelIndex":', '"_labelIndex":Infinity,"x":')), ["line 3", "Infinity"]),
    "dsjson 1e300 label": ("x.dsjson", lambda p: _dsjson(p, _set("_labelIndex", 1e300)),
                           ["line 3", "'_labelIndex'", "1e+300", "outside [0, 4)"]),
    "dsjson 1e400 label": ("x.dsjson", lambda p: _dsjson(
        p, _text('"_labelIndex":', '"_labelIndex":1e400,"x":')),
        ["line 3", "'1e400'", "range"]),
    "dsjson 1e300 probability": ("x.dsjson",
                                 lambda p: _dsjson(p, _set("_label_probability", 1e300)),
                                 ["'probability'", "1e+300", "(0, 1]"]),
    "dsjson 5000-digit label": ("x.dsjson", lambda p: _dsjson(
        p, _text('"_labelIndex":', '"_labelIndex":' + "7" * 5000 + ',"x":')),
        ["line 3", "5000 digits", "MAX_INTEGER_DIGITS"]),
    "dsjson 1e300 _iglearn.label": ("x.dsjson", lambda p: _dsjson(
        p, _set("_iglearn", {"reward": 1, "label": 1e300})),
        ["line 3", "'_iglearn.label'", "1e+300"]),
    "dsjson feature 1e300": ("x.dsjson", lambda p: _dsjson(
        p, _context({"x": {"x0": 1e300}})),
        ["line 3", "'c.x.x0'", "1e+300", "MAX_ABS_VALUE"]),
    "dsjson deep line": ("x.dsjson", lambda p: _dsjson(p, _text('"c":', f'"deep":{DEEP},"c":')),
                         ["line 3", "deep"]),
    "dsjson key twice": ("x.dsjson", lambda p: _dsjson(
        p, _text('"_labelIndex":', '"_labelIndex":0,"_labelIndex":')),
        ["line 3", "'_labelIndex' twice"]),
    "dsjson escapes in a value": ("x.dsjson", lambda p: _dsjson(
        p, _context({"x": {"x0": ["\n\x1b[2J"]}})),
        ["line 3", "\\n\\u001b[2J", "give each value a feature name of its own"]),
    # the value as JSON writes it, and the fix for VW's dense arrays and a line of no reaction
    "dsjson dense array": ("x.dsjson", lambda p: _dsjson(p, _context({"x": {"e": [0.5, 2]}})),
                           ["line 3", "feature 'c.x.e' has value '[0.5, 2]'",
                            '({"e0": 0.5, "e1": 2, ...}: dense arrays and nested objects']),
    "dsjson null": ("x.dsjson", lambda p: _dsjson(p, _context({"x": {"x0": None}})),
                    ["line 3", "has value 'null'"]),
    "dsjson line without feedback": ("x.dsjson", lambda p: _dsjson(p, _drop("o")),
                                     ["line 3", "missing the feedback 'o'",
                                      'a line with no reaction writes "o": []']),
    "sidecar K 3.9": ("x.dsjson", _sidecar(n_actions=3.9), ["schema.json", "n_actions", "3.9"]),
    "sidecar K ten": ("x.dsjson", _sidecar(n_actions="ten"), ["schema.json", "'ten'"]),
    "sidecar K [3]": ("x.dsjson", _sidecar(n_actions=[3]), ["schema.json", "[3]"]),
    "sidecar K true": ("x.dsjson", _sidecar(n_actions=True), ["schema.json", "True"]),
    "sidecar K 10**12": ("x.dsjson", _sidecar(n_actions=10**12), ["schema.json",
                                                                   "MAX_ACTIONS"]),
    "sidecar deep": ("x.dsjson", _sidecar_text(DEEP), ["schema.json", "deep"]),
    "sidecar Infinity": ("x.dsjson", _sidecar_text('{"context": ["a"], "n_actions": Infinity}'),
                         ["schema.json", "Infinity"]),
    "sidecar not JSON": ("x.dsjson", _sidecar_text("{"), ["schema.json", "not valid JSON"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_naming_file_and_field_and_creates_nothing(tmp_path, capsys,
                                                                         case):
    name, make, words = BAD[case]
    path = tmp_path / name
    make(path)
    out = tmp_path / "out.parquet"
    assert main(["convert", str(path), str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iglearn: error: ") and len(err.strip().splitlines()) == 1
    assert str(path) in err
    for word in words:
        assert word in err, err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_truncated_files_are_reported(tmp_path, capsys):
    for suffix in (".npz", ".parquet"):
        write_table(small_log(n=200), tmp_path / f"a{suffix}")
        data = (tmp_path / f"a{suffix}").read_bytes()
        (tmp_path / f"t{suffix}").write_bytes(data[: len(data) // 2])
        assert main(["convert", str(tmp_path / f"t{suffix}"), str(tmp_path / "o.dsjson")]) == 2
        err = capsys.readouterr().err
        assert f"t{suffix}" in err and ("truncated" in err or "corrupt" in err), err
        assert not (tmp_path / "o.dsjson").exists()
        assert not schema_path(tmp_path / "o.dsjson").exists()


def test_bad_row_late_in_a_stream_leaves_no_output(tmp_path, capsys):
    log = small_log(n=100)
    probability = log.probability.copy()
    probability[90] = 0
    np.savez(tmp_path / "a.npz", context=log.context, action=log.action,
             probability=probability, feedback=log.feedback, n_actions=4)
    for suffix in (".parquet", ".dsjson", ".npz"):
        assert main(["convert", str(tmp_path / "a.npz"), str(tmp_path / f"o{suffix}")]) == 2
        assert "'probability'" in capsys.readouterr().err
        assert not (tmp_path / f"o{suffix}").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz"]


def test_missing_output_folder_and_same_file(tmp_path, capsys):
    write_table(small_log(), tmp_path / "a.npz")
    assert main(["convert", str(tmp_path / "a.npz"), str(tmp_path / "no" / "b.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "a.npz"), str(tmp_path / "a.npz")]) == 2
    assert "is the input file" in capsys.readouterr().err


def test_an_output_under_a_file_is_refused(tmp_path, capsys):
    """No one, root included, can create a file whose parent is a regular file."""
    write_table(small_log(), tmp_path / "a.npz")
    (tmp_path / "notes").write_text("a file")
    assert main(["convert", str(tmp_path / "a.npz"), str(tmp_path / "notes" / "b.npz")]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "notes"]


@contextmanager
def file_size_limit(size):
    """Writes beyond ``size`` bytes fail with EFBIG (RLIMIT_FSIZE binds root too)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


@pytest.mark.parametrize("suffix", [".npz", ".parquet", ".dsjson"])
def test_a_write_that_fails_midway_is_one_line_and_leaves_nothing(tmp_path, capsys, suffix):
    write_table(small_log(n=3000), tmp_path / "a.npz")
    with file_size_limit(8192):
        code = main(["convert", str(tmp_path / "a.npz"), str(tmp_path / f"b{suffix}")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"b{suffix}" in err and "cannot write (" in err and "File too large" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz"]


@contextmanager
def deadline(seconds):
    """Fail, rather than hang, when the body takes longer than ``seconds``."""
    def expired(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    handler = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, handler)


@pytest.mark.parametrize("suffix", [".npz", ".parquet", ".dsjson", ".schema.json"])
def test_a_fifo_is_refused_not_read(tmp_path, suffix):
    path = tmp_path / f"x{suffix}"
    if suffix == ".schema.json":
        write_table(small_log(), tmp_path / "x.dsjson")
        path = schema_path(tmp_path / "x.dsjson")
        path.unlink()
    os.mkfifo(path)
    with deadline(20), pytest.raises(IGLearnError, match="not a regular file"):
        read_log(tmp_path / f"x{suffix.replace('.schema.json', '.dsjson')}")


@pytest.mark.parametrize("suffix", [".npz", ".parquet", ".dsjson", ".schema.json"])
def test_an_unreadable_file_is_reported_as_such_not_as_corrupt(tmp_path, monkeypatch, suffix):
    write_table(small_log(), tmp_path / "x.dsjson" if suffix == ".schema.json"
                else tmp_path / f"x{suffix}")
    target = str(schema_path(tmp_path / "x.dsjson") if suffix == ".schema.json"
                 else tmp_path / f"x{suffix}")
    real_open = os.open

    def refusing_open(path, *args, **kwargs):  # what a file without read permission does
        if os.fspath(path) == target:
            raise PermissionError(13, "Permission denied", target)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    with pytest.raises(IGLearnError) as error:
        read_log(tmp_path / f"x{suffix.replace('.schema.json', '.dsjson')}")
    message = str(error.value)
    assert message.startswith(target) and "permission denied" in message
    assert "corrupt" not in message


def test_limits_are_settings(tmp_path, monkeypatch):
    from iglearn.data import limits

    log = small_log()
    probability = log.probability.copy()
    probability[3] = 1e-30
    _npz(tmp_path / "rare.npz", probability=probability)
    with pytest.raises(IGLearnError, match="PROBABILITY_FLOOR"):
        read_log(tmp_path / "rare.npz")
    monkeypatch.setattr(limits, "PROBABILITY_FLOOR", 1e-40)
    assert read_log(tmp_path / "rare.npz").probability[3] == 1e-30
    write_table(log, tmp_path / "a.dsjson")
    schema_path(tmp_path / "a.dsjson").unlink()
    monkeypatch.setattr(limits, "MAX_JSON_BYTES", 100)
    with pytest.raises(IGLearnError, match=r"line 1: longer than 100 bytes.*MAX_JSON_BYTES"):
        read_log(tmp_path / "a.dsjson")
    n = 20000  # constant columns: Parquet stores them in a few bytes per thousand rows
    constant = InteractionLog(np.zeros((n, 5)), np.zeros(n, int), np.ones(n), np.zeros((n, 3)),
                              2)
    write_table(constant, tmp_path / "a.parquet")
    monkeypatch.setattr(limits, "MAX_EXPANSION", 10)
    with pytest.raises(IGLearnError, match=r"claims 20000 rows.*MAX_EXPANSION"):
        read_log(tmp_path / "a.parquet")
    monkeypatch.setattr(limits, "MAX_ACTIONS", 3)
    with pytest.raises(IGLearnError, match=r"n_actions is 4.*<= 3"):
        read_log(tmp_path / "rare.npz")


def test_verbose_shows_the_traceback(tmp_path, capsys):
    (tmp_path / "x.npz").write_bytes(b"")
    assert main(["--verbose", "convert", str(tmp_path / "x.npz"), str(tmp_path / "y.npz")]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_streaming_conversion_never_loads_whole_npz_fields(tmp_path, monkeypatch):
    from iglearn.data.formats.npz import NpzReader

    log = small_log(n=300)
    write_table(log, tmp_path / "a.npz")

    def whole_field(self, name):
        raise AssertionError(f"field {name} was loaded whole")

    monkeypatch.setattr(NpzReader, "array", whole_field)
    for suffix in (".parquet", ".dsjson", ".npz"):
        convert(tmp_path / "a.npz", tmp_path / f"b{suffix}")
    monkeypatch.undo()
    for suffix in (".parquet", ".dsjson", ".npz"):
        assert_same(log, read_log(tmp_path / f"b{suffix}"))


@pytest.mark.parametrize("suffix", [".parquet", ".npz"])
def test_contexts_of_a_log_read_only_context_and_label(tmp_path, monkeypatch, suffix):
    from iglearn.data.formats.npz import NpzReader
    from iglearn.data.formats.parquet import ParquetReader

    write_table(small_log(), tmp_path / f"a{suffix}")
    read = []
    if suffix == ".parquet":
        original = ParquetReader._column
        monkeypatch.setattr(ParquetReader, "_column",
                            lambda self, name, column: read.append(name)
                            or original(self, name, column))
    else:
        original = NpzReader.array
        monkeypatch.setattr(NpzReader, "array",
                            lambda self, name: read.append(name) or original(self, name))
    contexts = read_contexts(tmp_path / f"a{suffix}")
    assert set(read) == {"context", "label"} and contexts.label is not None
