"""Malformed inputs and arguments, generated from a fixed seed: each gives exit code 2, one
line on stderr (``iglearn: error: ...``, no traceback), nothing on stdout, and leaves the
folder it runs in as it was (no output created, no input touched).

The cases are drawn once, at import, by a seeded generator: corrupted and truncated files of
each format, files whose arrays or lines hold hostile values, damaged model folders, and bad
option values; the seed makes every run draw the same cases.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iglearn.cli import main
from iglearn.models import io
from tests.cli.conftest import FAST, listing, run

SEED = 20250611
rng = random.Random(SEED)

Case = Callable[[Path, Path], list]
"""Given the shared files and an empty folder: the argv of a command to run there (after
writing its inputs into the folder)."""


@pytest.fixture(scope="module")
def sources(small, tmp_path_factory) -> Path:
    """The small log in every format, beside the model and test contexts."""
    folder = tmp_path_factory.mktemp("sources")
    for name in ("log.npz", "test.npz", "model"):
        (shutil.copytree if name == "model" else shutil.copy)(small / name, folder / name)
    for suffix in (".parquet", ".dsjson"):
        assert main(["convert", str(folder / "log.npz"), str(folder / f"log{suffix}")]) == 0
    return folder


def _reader() -> Callable[[Path, Path, Path], list]:
    """A command that reads a file, drawn at random (fit, evaluate, predict or convert): given
    the file, the shared files and the folder to write in, its argv."""
    command = rng.choice(["fit", "evaluate", "predict", "convert"])

    def argv(path: Path, src: Path, tmp: Path) -> list:
        return {"fit": ["fit", path, "--out", tmp / "m", *FAST],
                "evaluate": ["evaluate", src / "model", path],
                "predict": ["predict", src / "model", path, "--out", tmp / "p.csv"],
                "convert": ["convert", path, tmp / "out.parquet"]}[command]
    return argv


# -- files cut short or overwritten --------------------------------------------------------


def truncated(name: str) -> Case:
    fraction = rng.uniform(0.02, 0.98)
    reader = _reader()

    def case(src: Path, tmp: Path) -> list:
        data = (src / name).read_bytes()
        cut = int(len(data) * fraction)
        if name.endswith(".dsjson"):      # cut inside a line, never at its end
            while data[cut - 1:cut] in (b"}", b"\n"):
                cut -= 1
        (tmp / name).write_bytes(data[:cut])
        if name.endswith(".dsjson"):
            shutil.copy(src / f"{name}.schema.json", tmp)
        return reader(tmp / name, src, tmp)
    return case


def random_bytes(suffix: str) -> Case:
    size = rng.choice([0, 1, 7, 64, 1000])
    blob = bytes(rng.getrandbits(8) for _ in range(size))

    def case(src: Path, tmp: Path) -> list:
        (tmp / f"junk{suffix}").write_bytes(blob)
        return ["evaluate", src / "model", tmp / f"junk{suffix}"]
    return case


def bad_magic() -> Case:
    def case(src: Path, tmp: Path) -> list:
        data = bytearray((src / "log.npz").read_bytes())
        data[:4] = b"\x93NUM"
        (tmp / "log.npz").write_bytes(bytes(data))
        return ["fit", tmp / "log.npz", "--out", tmp / "m", *FAST]
    return case


# -- .npz archives with hostile arrays -----------------------------------------------------


def npz_with(**changes) -> Case:
    def case(src: Path, tmp: Path) -> list:
        with np.load(src / "log.npz") as archive:
            arrays = {name: archive[name] for name in archive.files}
        for name, change in changes.items():
            if change is None:
                arrays.pop(name)
            else:
                arrays[name] = change(arrays[name].copy()) if callable(change) else change
        with open(tmp / "log.npz", "wb") as f:
            np.savez(f, **arrays)
        return ["fit", tmp / "log.npz", "--out", tmp / "m", *FAST]
    return case


def _set(index: int, value: float) -> Callable[[np.ndarray], np.ndarray]:
    def change(array: np.ndarray) -> np.ndarray:
        array = array.astype(np.float64) if isinstance(value, float) else array
        array.reshape(-1)[index] = value
        return array
    return change


# -- DSJSON files with a hostile line -------------------------------------------------------


def dsjson_line(make: Callable[[dict], bytes]) -> Case:
    row = rng.randrange(800)

    def case(src: Path, tmp: Path) -> list:
        lines = (src / "log.dsjson").read_bytes().splitlines(keepends=True)
        lines[row] = make(json.loads(lines[row])) + b"\n"
        (tmp / "log.dsjson").write_bytes(b"".join(lines))
        shutil.copy(src / "log.dsjson.schema.json", tmp)
        return ["convert", tmp / "log.dsjson", tmp / "out.npz"]
    return case


def _with_key(key: str, text: str) -> Callable[[dict], bytes]:
    def make(record: dict) -> bytes:
        body = json.dumps({k: v for k, v in record.items() if k != key})
        return (body[:-1] + f', "{key}": {text}}}').encode()
    return make


# -- Parquet files with a hostile schema or column -----------------------------------------


def parquet_with(change: Callable[[pa.Table], pa.Table]) -> Case:
    def case(src: Path, tmp: Path) -> list:
        table = change(pq.read_table(src / "log.parquet"))
        pq.write_table(table, tmp / "log.parquet")
        return ["evaluate", src / "model", tmp / "log.parquet"]
    return case


def _column(name: str, values: Callable[[int], pa.Array]) -> Callable[[pa.Table], pa.Table]:
    def change(table: pa.Table) -> pa.Table:
        index = table.schema.get_field_index(name)
        return table.set_column(index, name, values(len(table)))
    return change


# -- damaged model folders -----------------------------------------------------------------


def model_with(name: str, content: Callable[[bytes], bytes | None]) -> Case:
    def case(src: Path, tmp: Path) -> list:
        model = tmp / "model"
        shutil.copytree(src / "model", model)
        new = content((model / name).read_bytes())
        if new is None:
            (model / name).unlink()
        else:
            (model / name).write_bytes(new)
        return ["predict", model, src / "test.npz", "--out", tmp / "p.csv"]
    return case


def _json_field(key: str, value: object) -> Callable[[bytes], bytes]:
    return lambda data: json.dumps({**json.loads(data), key: value}).encode()


# -- bad option values ---------------------------------------------------------------------


def arguments(*words: str) -> Case:
    def case(src: Path, tmp: Path) -> list:
        return [str(word).format(src=src, tmp=tmp) for word in words]
    return case


def looping_link() -> Case:
    def case(src: Path, tmp: Path) -> list:
        (tmp / "loop.npz").symlink_to(tmp / "loop.npz")
        return ["predict", src / "model", tmp / "loop.npz", "--out", tmp / "loop.npz"]
    return case


def _cases() -> list[tuple[str, str, Case]]:
    """(category, name, case), drawn with ``rng``."""
    files = [
        *[("cut short", f"{name}-{i}", truncated(name))
          for name in ("log.npz", "log.parquet", "log.dsjson", "test.npz") for i in range(2)],
        *[("random bytes", f"junk{s}", random_bytes(s))
          for s in (".npz", ".parquet", ".dsjson", ".npz", ".dsjson")],
        ("random bytes", "npz-magic", bad_magic()),
    ]
    k = 10
    arrays = [
        ("hostile arrays", "context-nan", npz_with(context=_set(rng.randrange(800 * 64), np.nan))),
        ("hostile arrays", "feedback-inf", npz_with(feedback=_set(rng.randrange(800), np.inf))),
        ("hostile arrays", "probability-0", npz_with(probability=_set(rng.randrange(800), 0.0))),
        ("hostile arrays", "probability-neg", npz_with(probability=_set(5, -0.5))),
        ("hostile arrays", "probability-2", npz_with(probability=_set(7, 2.0))),
        ("hostile arrays", "action-K", npz_with(action=_set(rng.randrange(800), k))),
        ("hostile arrays", "action-neg", npz_with(action=_set(3, -1))),
        ("hostile arrays", "action-float", npz_with(action=lambda a: a + 0.5)),
        ("hostile arrays", "lengths", npz_with(probability=lambda p: p[:-1])),
        ("hostile arrays", "k-1", npz_with(n_actions=np.int64(1))),
        ("hostile arrays", "k-text", npz_with(n_actions=np.array("ten"))),
        ("hostile arrays", "k-pair", npz_with(n_actions=np.array([10, 10]))),
        ("hostile arrays", "context-3d", npz_with(context=lambda c: c.reshape(800, 8, 8))),
        ("hostile arrays", "pickled", npz_with(context=np.array([{"a": 1}] * 800, object))),
        ("hostile arrays", "complex", npz_with(feedback=lambda y: y.astype(np.complex64))),
        ("hostile arrays", "no-feedback", npz_with(feedback=None)),
        ("hostile arrays", "no-rows", npz_with(**{f: (lambda a: a[:0]) for f in
                                                  ("context", "action", "probability",
                                                   "feedback", "reward", "label")})),
    ]
    lines = [
        ("hostile lines", "garbage", dsjson_line(lambda r: b"{not json")),
        ("hostile lines", "nesting", dsjson_line(lambda r: b"[" * 100_000)),
        ("hostile lines", "p-NaN", dsjson_line(_with_key("_label_probability", "NaN"))),
        ("hostile lines", "p-0", dsjson_line(_with_key("_label_probability", "0"))),
        ("hostile lines", "p-1e400", dsjson_line(_with_key("_label_probability", "1e400"))),
        ("hostile lines", "p-text", dsjson_line(_with_key("_label_probability", '"0.5"'))),
        ("hostile lines", "label-99", dsjson_line(_with_key("_labelIndex", "99"))),
        ("hostile lines", "label-huge", dsjson_line(_with_key("_labelIndex", "9" * 5000))),
        ("hostile lines", "not-utf8", dsjson_line(lambda r: b'{"c": "\xff\xfe"}')),
        ("hostile lines", "array", dsjson_line(lambda r: b"[1, 2]")),
        ("hostile lines", "feature-nan", dsjson_line(
            lambda r: json.dumps({**r, "c": {**r["c"], "x": {"x0": float("nan")}}}).encode())),
    ]
    tables = [
        ("hostile columns", "k-zero", parquet_with(
            lambda t: t.replace_schema_metadata({b"n_actions": b"0"}))),
        ("hostile columns", "k-text", parquet_with(
            lambda t: t.replace_schema_metadata({b"n_actions": b"\x1b[31mten"}))),
        ("hostile columns", "no-action", parquet_with(lambda t: t.drop_columns(["action"]))),
        ("hostile columns", "context-text", parquet_with(
            _column("context", lambda n: pa.array(["x"] * n)))),
        ("hostile columns", "null-probability", parquet_with(
            _column("probability", lambda n: pa.array([None] * n, pa.float64())))),
    ]
    models = [
        ("damaged models", "json-garbage", model_with(io.METADATA, lambda d: b"{\x00")),
        ("damaged models", "json-empty", model_with(io.METADATA, lambda d: b"")),
        ("damaged models", "json-deep", model_with(io.METADATA, lambda d: b"[" * 100_000)),
        ("damaged models", "json-k", model_with(io.METADATA, _json_field("n_actions", -3))),
        ("damaged models", "json-dims", model_with(io.METADATA, _json_field("context_dim", 65))),
        ("damaged models", "json-policy", model_with(io.METADATA,
                                                     _json_field("policy", {"class": "x"}))),
        ("damaged models", "weights-cut", model_with(
            io.WEIGHTS, lambda d: d[:rng.randrange(1, len(d))])),
        ("damaged models", "weights-junk", model_with(
            io.WEIGHTS, lambda d: bytes(rng.getrandbits(8) for _ in range(200)))),
        ("damaged models", "weights-gone", model_with(io.WEIGHTS, lambda d: None)),
    ]
    options = [
        ("bad options", "seed-neg", arguments("fit", "{src}/log.npz", "--out", "{tmp}/m",
                                              "--seed", "-1")),
        ("bad options", "lr-nan", arguments("fit", "{src}/log.npz", "--out", "{tmp}/m",
                                            "--lr", "nan")),
        ("bad options", "epochs-inf", arguments("fit", "{src}/log.npz", "--out", "{tmp}/m",
                                                "--epochs", "1e999")),
        ("bad options", "batch-0", arguments("fit", "{src}/log.npz", "--out", "{tmp}/m",
                                             "--batch-size", "0")),
        ("bad options", "policy-escape", arguments("fit", "{src}/log.npz", "--out", "{tmp}/m",
                                                   "--policy", "\x1b[2J\nlinear")),
        ("bad options", "v-bad-2", arguments("fit", "{src}/log.npz", "--out", "{tmp}/m",
                                             "--v-bad", "2")),
        ("bad options", "no-out", arguments("fit", "{src}/log.npz")),
        ("bad options", "unknown", arguments("fit", "{src}/log.npz", "--out", "{tmp}/m",
                                             "--\x1b]0;title\x07")),
        ("bad options", "samples-0", arguments("simulate", "digits", "--samples", "0",
                                               "--out", "{tmp}/l.npz")),
        ("bad options", "samples-1e20", arguments("simulate", "digits", "--samples", "1" + "0" * 20,
                                                  "--out", "{tmp}/l.npz")),
        ("bad options", "out-txt", arguments("predict", "{src}/model", "{src}/test.npz",
                                             "--out", "{tmp}/p.txt")),
        ("bad options", "convert-txt", arguments("convert", "{src}/log.npz", "{tmp}/o.txt")),
        ("bad options", "in-missing", arguments("convert", "{tmp}/absent.npz", "{tmp}/o.npz")),
        ("bad options", "link-loop", looping_link()),
        ("bad options", "trials-0", arguments("reproduce", "table1", "--trials", "0",
                                              "--out", "{tmp}/r")),
        ("bad options", "sweep-lr", arguments("sweep", "--set", "lr=abc", "--out", "{tmp}/r")),
    ]
    return files + arrays + lines + tables + models + options


CASES = _cases()


@pytest.mark.parametrize("category, name, case", CASES,
                         ids=[f"{category}:{name}" for category, name, _ in CASES])
def test_malformed_input_exits_2_with_one_line_and_writes_nothing(sources, tmp_path, capsys,
                                                                  category, name, case):
    work = tmp_path / "work"
    work.mkdir()
    argv = case(sources, work)
    capsys.readouterr()
    before = listing(work), listing(sources)
    code, out, err = run(capsys, *argv)
    assert code == 2, err
    assert out == "" and "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("iglearn: error: "), err
    assert "\x1b" not in err and "\x07" not in err
    assert (listing(work), listing(sources)) == before


def test_the_cases_cover_every_category():
    counts: dict[str, int] = {}
    for category, _, _ in CASES:
        counts[category] = counts.get(category, 0) + 1
    assert counts == {"cut short": 8, "random bytes": 6, "hostile arrays": 17,
                      "hostile lines": 11, "hostile columns": 5, "damaged models": 9,
                      "bad options": 16}
