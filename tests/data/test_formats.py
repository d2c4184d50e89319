"""Logs and context sets on disk: round trips, streaming, DSJSON layout, bad files."""

import json
import shutil
import subprocess
import sys
import zipfile

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
    # with a model's schema, an unknown feature is an error naming the line
    with pytest.raises(IGLearnError, match=r"line 3: context feature 'User\^user=Anna'"):
        read_log(path, schema=FeatureSchema(("User^user=Tom", "User^timeafternoon"),
                                            ("v^v=click", "v^v=none")))


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


def _parquet(path, metadata=True, **changes):
    log = small_log()
    columns = {"context": pa.FixedSizeListArray.from_arrays(pa.array(log.context.ravel()), 5),
               "action": pa.array(log.action), "probability": pa.array(log.probability),
               "feedback": pa.FixedSizeListArray.from_arrays(pa.array(log.feedback.ravel()), 3)}
    columns.update(changes)
    table = pa.table({k: v for k, v in columns.items() if v is not None})
    if metadata:
        table = table.replace_schema_metadata({"n_actions": "4"})
    pq.write_table(table, path)


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
                               ["'action'", "non-integer"]),
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
    "parquet missing n_actions": ("x.parquet", lambda p: _parquet(p, metadata=False),
                                  ["'n_actions'", "metadata"]),
    "parquet probability > 1": ("x.parquet",
                                lambda p: _parquet(p, probability=pa.array(np.full(40, 2.0))),
                                ["'probability'", "(0, 1]", "rows 0-39"]),
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
                             ["'probability'", "(0, 1]"]),
    "dsjson K mismatch": ("x.dsjson",
                          lambda p: _dsjson(p, _set("c", {"x": {"x0": 1}, "_multi": [{}] * 3})),
                          ["line 3", "3 actions but K is 4"]),
    "dsjson action not integer": ("x.dsjson", lambda p: _dsjson(p, _set("_labelIndex", 1.5)),
                                  ["line 3", "'_labelIndex'", "integers"]),
    "dsjson missing context": ("x.dsjson", lambda p: _dsjson(p, _drop("c")),
                               ["line 3", "missing field 'c'"]),
    "dsjson empty file": ("x.dsjson", lambda p: p.write_text("\n"), ["empty"]),
    "unknown extension": ("x.csv", lambda p: p.write_text("a,b\n"), ["unknown file extension"]),
    "missing file": ("absent.npz", lambda p: None, ["no such file"]),
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


def test_unwritable_output_and_same_file(tmp_path, capsys):
    write_table(small_log(), tmp_path / "a.npz")
    assert main(["convert", str(tmp_path / "a.npz"), str(tmp_path / "no" / "b.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "a.npz"), str(tmp_path / "a.npz")]) == 2
    assert "is the input file" in capsys.readouterr().err
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if not shutil.os.access(locked, shutil.os.W_OK):  # root may write anyway
            assert main(["convert", str(tmp_path / "a.npz"), str(locked / "b.npz")]) == 2
            assert "cannot write" in capsys.readouterr().err
    finally:
        locked.chmod(0o700)


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
