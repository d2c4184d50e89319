"""Property-based tests of the readers: whatever a file holds, reading it gives a log (or a
context set) or one IGLearnError line naming the file (never another exception), and a
conversion either completes or leaves nothing behind."""

import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from iglearn import IGLearnError
from iglearn.data.formats import convert, read_contexts, read_log, write_table
from iglearn.data.formats.dsjson import schema_path
from tests.data.mutations import FUZZ, JSON, mutate_bytes, mutate_json, one_line
from tests.data.test_formats import small_log

FIELDS = ("context", "action", "probability", "feedback", "reward", "label")
ROWS = 12
SPECIAL = [np.nan, np.inf, -np.inf, 1e300, -3e38, 3e38, 1e-30, 1e-42, 3.7, -1.0, 2.0**63,
           2.0**64, 0.0, 1.0, 4.0, 1e9 + 1]
"""Values at the edges of what the readers accept."""


def check_reading(path: Path) -> None:
    """Read ``path`` as a log and as contexts, then convert it: each succeeds or raises one
    IGLearnError line naming the file; nothing is written beside it, and a failed conversion
    leaves no output."""
    folder = path.parent
    before = sorted(p.name for p in folder.iterdir())
    for read in (read_log, read_contexts):
        try:
            read(path)
        except IGLearnError as error:
            assert one_line(str(error)) and str(path) in str(error), str(error)
    assert sorted(p.name for p in folder.iterdir()) == before
    out = folder.parent / f"{folder.name}-out"
    out.mkdir()
    try:
        convert(path, out / "converted.npz")
        assert [p.name for p in out.iterdir()] == ["converted.npz"]
    except IGLearnError as error:
        assert one_line(str(error)) and str(path) in str(error), str(error)
        assert list(out.iterdir()) == []


def in_folder(write, name):
    """Write a file with ``write(path)`` in a fresh folder and check reading it."""
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "in"
        folder.mkdir()
        path = folder / name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy and zipfile warn of odd content
            write(path)
        check_reading(path)


# --- .npz ----------------------------------------------------------------------------------

ANY_ARRAY = st.sampled_from(["?", "i1", "u1", "i8", "u8", "f2", "f4", "f8", "c8", "m8[s]",
                             "M8[D]", "U2", "S2"]).flatmap(
    lambda dtype: hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                                     max_side=ROWS + 1)))


def with_special_values(data, original: np.ndarray) -> np.ndarray:
    """``original`` with a few entries set to SPECIAL values, in some float or int type."""
    values = original.astype(np.float64)
    flat = values.reshape(-1)
    for _ in range(data.draw(st.integers(1, 3))):
        flat[data.draw(st.integers(0, flat.size - 1))] = data.draw(st.sampled_from(SPECIAL))
    dtype = data.draw(st.sampled_from(["f8", "f4", "f2", "i8", "u8"]))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return values.astype(dtype)


def npz_variant(data, name: str, original: np.ndarray | None) -> np.ndarray | None:
    """A field as it might be: absent, of any type and shape, or with edge values."""
    options = ["absent", "any"] + (["special"] if original is not None else [])
    if name == "n_actions":
        options.append("scalar")
    if name == "feature_schema":
        options.append("json")
    choice = data.draw(st.sampled_from(options))
    if choice == "absent":
        return None
    if choice == "special":
        return with_special_values(data, original)
    if choice == "scalar":
        return np.asarray(data.draw(st.integers(-3, 10**13) | st.floats()))
    if choice == "json":
        return np.array(json.dumps(data.draw(JSON)))
    return data.draw(ANY_ARRAY)


@FUZZ
@given(data=st.data())
def test_npz_fields_of_any_type_shape_and_value(data):
    log = small_log(n=ROWS)
    arrays = {name: getattr(log, name) for name in FIELDS}
    arrays["n_actions"] = np.asarray(4)
    names = data.draw(st.lists(st.sampled_from([*FIELDS, "n_actions", "feature_schema"]),
                               min_size=1, max_size=3, unique=True))
    for name in names:
        arrays[name] = npz_variant(data, name, arrays.get(name))
    save = data.draw(st.sampled_from([np.savez, np.savez_compressed]))
    in_folder(lambda path: save(path, **{k: v for k, v in arrays.items() if v is not None}),
              "x.npz")


@FUZZ
@given(data=st.data())
def test_npz_bytes_damaged_anywhere(data):
    compressed = data.draw(st.booleans())
    with tempfile.TemporaryDirectory() as root:
        source = Path(root) / "a.npz"
        if compressed:
            log = small_log(n=ROWS)
            np.savez_compressed(source, n_actions=4,
                                **{name: getattr(log, name) for name in FIELDS})
        else:
            write_table(small_log(n=ROWS), source)
        raw = mutate_bytes(data, source.read_bytes())
    in_folder(lambda path: path.write_bytes(raw), "x.npz")


# --- .parquet ------------------------------------------------------------------------------

def arrow_column(data, original: np.ndarray) -> pa.Array | None:
    """A column as it might be: absent, of another type (nulls, text, lists of any width),
    or the field's values with edge values."""
    choice = data.draw(st.sampled_from(["absent", "float", "int", "uint", "text", "bool",
                                        "fixed", "list", "special"]))
    n = len(original)

    def values(elements):
        return data.draw(st.lists(elements | st.none(), min_size=n, max_size=n))

    if choice == "absent":
        return None
    if choice == "float":
        return pa.array(values(st.floats()), pa.float64())
    if choice == "int":
        return pa.array(values(st.integers(-(2**63), 2**63 - 1)), pa.int64())
    if choice == "uint":
        return pa.array(values(st.integers(0, 2**64 - 1)), pa.uint64())
    if choice == "text":
        return pa.array(values(st.text(max_size=3)), pa.string())
    if choice == "bool":
        return pa.array(values(st.booleans()), pa.bool_())
    if choice == "fixed":
        width = data.draw(st.integers(0, 4))
        rows = data.draw(st.lists(st.lists(st.floats(width=32), min_size=width,
                                           max_size=width), min_size=n, max_size=n))
        return pa.array(rows, pa.list_(pa.float32(), width))
    if choice == "list":
        return pa.array(values(st.lists(st.floats(width=32), max_size=3)),
                        pa.list_(pa.float32()))
    special = with_special_values(data, original)
    if special.ndim == 2:
        return pa.FixedSizeListArray.from_arrays(pa.array(special.reshape(-1)),
                                                 special.shape[1])
    return pa.array(special)


def arrow_table(log) -> dict[str, pa.Array]:
    columns = {}
    for name in FIELDS:
        value = getattr(log, name)
        columns[name] = (pa.FixedSizeListArray.from_arrays(pa.array(value.reshape(-1)),
                                                           value.shape[1])
                         if value.ndim == 2 else pa.array(value))
    return columns


@FUZZ
@given(data=st.data())
def test_parquet_columns_and_metadata_of_any_kind(data):
    log = small_log(n=ROWS)
    columns = arrow_table(log)
    for name in data.draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True)):
        columns[name] = arrow_column(data, getattr(log, name))
    metadata = {"n_actions": data.draw(st.just(b"4") | st.binary(max_size=8)
                                       | st.integers(-3, 10**13).map(lambda k: str(k).encode())
                                       | st.text(max_size=6).map(str.encode))}
    if data.draw(st.booleans()):
        metadata["feature_schema"] = data.draw(JSON.map(json.dumps) | st.text(max_size=20))
    if data.draw(st.booleans()):
        del metadata["n_actions"]
    table = pa.table({k: v for k, v in columns.items() if v is not None})
    in_folder(lambda path: pq.write_table(table.replace_schema_metadata(metadata), path),
              "x.parquet")


@FUZZ
@given(data=st.data())
def test_parquet_bytes_damaged_anywhere(data):
    with tempfile.TemporaryDirectory() as root:
        source = Path(root) / "a.parquet"
        write_table(small_log(n=ROWS), source)
        raw = mutate_bytes(data, source.read_bytes())
    in_folder(lambda path: path.write_bytes(raw), "x.parquet")


# --- .dsjson and its feature schema --------------------------------------------------------

def dsjson_files(log=None) -> tuple[list[dict], dict]:
    """The records and the sidecar iglearn writes for a small log."""
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "a.dsjson"
        write_table(log or small_log(n=6), path)
        records = [json.loads(line) for line in path.read_text().splitlines()]
        return records, json.loads(schema_path(path).read_text())


def write_dsjson(path: Path, records: list, sidecar: object | None) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    if sidecar is not None:
        schema_path(path).write_text(json.dumps(sidecar))


@FUZZ
@given(data=st.data())
def test_dsjson_records_with_any_value_anywhere(data):
    records, sidecar = dsjson_files()
    for _ in range(data.draw(st.integers(1, 2))):
        line = data.draw(st.integers(0, len(records) - 1))
        records[line] = mutate_json(data, records[line])
    keep_sidecar = data.draw(st.booleans())
    in_folder(lambda path: write_dsjson(path, records, sidecar if keep_sidecar else None),
              "x.dsjson")


@FUZZ
@given(data=st.data())
def test_dsjson_feature_schema_of_any_kind(data):
    records, sidecar = dsjson_files()
    choice = data.draw(st.sampled_from(["mutated", "any JSON", "any bytes"]))

    def write(path):
        write_dsjson(path, records, None)
        if choice == "mutated":
            schema_path(path).write_text(json.dumps(mutate_json(data, sidecar)))
        elif choice == "any JSON":
            schema_path(path).write_text(json.dumps(data.draw(JSON)))
        else:
            schema_path(path).write_bytes(data.draw(st.binary(max_size=40)))

    in_folder(write, "x.dsjson")


@FUZZ
@given(data=st.data())
def test_dsjson_bytes_damaged_anywhere(data):
    records, sidecar = dsjson_files()
    raw = "".join(json.dumps(record) + "\n" for record in records).encode()
    damaged = mutate_bytes(data, raw, changes=6)

    def write(path):
        path.write_bytes(damaged)
        schema_path(path).write_text(json.dumps(sidecar))

    in_folder(write, "x.dsjson")
