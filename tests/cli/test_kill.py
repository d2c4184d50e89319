"""Real ``iglearn`` processes killed with SIGKILL while they write: the old output stays whole
(or the new one is complete), never half a file at the target, and the next run leaves no
temporaries behind.

Each process runs the command through a small driver that can hold it, just before a chosen
call, for the test to kill it at that moment (``PAUSE_ON=module:name#n``: the n-th call of
``module.name``); without ``PAUSE_ON`` the test polls for a temporary file to appear.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from iglearn.cli import main
from iglearn.data.formats import read_table
from iglearn.learners.registry import load_model
from iglearn.models import io
from tests.cli.conftest import FAST, copy, listing

DRIVER = """
import importlib, os, sys, time
target = os.environ.get("PAUSE_ON")
if target:
    where, _, nth = target.partition("#")
    module_name, _, name = where.partition(":")
    module = importlib.import_module(module_name)
    real, calls = getattr(module, name), []
    def paused(*args, **kwargs):
        calls.append(1)
        if len(calls) == int(nth):
            print("PAUSED", file=sys.stderr, flush=True)
            time.sleep(600)
        return real(*args, **kwargs)
    setattr(module, name, paused)
from iglearn.cli import main
sys.exit(main(sys.argv[1:]))
"""
PATIENCE = 120   # seconds a process may take to reach the moment (importing torch is slow)


def kill_at(folder: Path, argv: list, moment: Callable[[Path], bool],
            pause_on: str | None = None) -> None:
    """Run ``iglearn *argv`` in ``folder`` in a new process; SIGKILL it as soon as
    ``moment(stderr file)`` holds; fail if it exits first."""
    err = folder.parent / f"{folder.name}.stderr"
    env = {**os.environ, "PAUSE_ON": pause_on or ""}
    with open(err, "w") as stderr:
        process = subprocess.Popen([sys.executable, "-c", DRIVER, *map(str, argv)], cwd=folder,
                                   stdout=subprocess.DEVNULL, stderr=stderr, env=env)
    deadline = time.monotonic() + PATIENCE
    try:
        while not moment(err):
            assert process.poll() is None, f"exited {process.returncode}: {err.read_text()}"
            assert time.monotonic() < deadline, "the moment never came"
            time.sleep(0.005)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def paused(err: Path) -> bool:
    return "PAUSED" in err.read_text()


def hidden(folder: Path) -> list[str]:
    """The hidden entries of ``folder``: iglearn's temporaries."""
    return sorted(path.name for path in folder.iterdir() if path.name.startswith("."))


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> Path:
    """A 20000-interaction log: converting it to DSJSON takes long enough to be caught."""
    folder = tmp_path_factory.mktemp("large")
    assert main(["simulate", "digits", "--samples", "20000", "--out",
                 str(folder / "log.npz")]) == 0
    assert main(["convert", str(folder / "log.npz"), str(folder / "log.parquet")]) == 0
    return folder


@pytest.mark.parametrize("pause_on, left, at_target", [
    ("safetensors.torch:save_file#1", "an empty temporary folder", "old"),
    ("iglearn.files:_exchange#1", "the new model complete beside the old one", "old"),
    ("iglearn.files:remove_folder#1", "the old model swapped out beside the new one", "new"),
])
def test_fit_killed_while_saving(small, tmp_path, pause_on, left, at_target):
    work = tmp_path / "work"
    work.mkdir()
    model = copy(small / "model", work)
    old = listing(model)
    kill_at(work, ["fit", small / "log.npz", "--out", "model", "--seed", "9", *FAST], paused,
            pause_on)
    assert hidden(work), f"nothing left to clean: {left}?"
    # the target always holds a whole model: the old one, or the new one once swapped in
    assert sorted(p.name for p in model.iterdir()) == [io.METADATA, io.WEIGHTS]
    assert (listing(model) == old) == (at_target == "old")
    load_model(model)
    assert main(["fit", str(small / "log.npz"), "--out", str(model), "--seed", "9",
                 *FAST]) == 0
    assert hidden(work) == [] and sorted(p.name for p in work.iterdir()) == ["model"]
    assert load_model(model).metadata_["training"]["settings"]["seed"] == 9
    assert sorted(p.name for p in model.iterdir()) == [io.METADATA, io.WEIGHTS]


def test_convert_killed_mid_write(small, large, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    assert main(["convert", str(small / "log.npz"), str(work / "out.dsjson")]) == 0
    old = listing(work)

    def writing(_: Path) -> bool:
        return any(path.stat().st_size > 0 for path in work.glob(".out.dsjson.*.part"))

    kill_at(work, ["convert", large / "log.npz", "out.dsjson"], writing)
    assert any(name.endswith(".part") for name in hidden(work))
    assert {name: data for name, data in listing(work).items()
            if not name.startswith(".")} == old          # the old pair, whole
    assert main(["convert", str(large / "log.npz"), str(work / "out.dsjson")]) == 0
    assert hidden(work) == []
    table, info = read_table(work / "out.dsjson")
    assert info.n_rows == 20000 and len(table) == 20000


def test_convert_to_npz_killed_before_zipping(large, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    kill_at(work, ["convert", large / "log.parquet", "out.npz"], paused,
            "zipfile:ZipFile#1")
    assert any(name.startswith(".npz-") for name in hidden(work))
    assert not (work / "out.npz").exists()
    assert main(["convert", str(large / "log.parquet"), str(work / "out.npz")]) == 0
    assert hidden(work) == [] and len(read_table(work / "out.npz")[0]) == 20000


def test_predict_killed_before_the_rename(small, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "p.csv").write_text("action,probability\n0,1\n")
    kill_at(work, ["predict", small / "model", small / "test.npz", "--out", "p.csv"], paused,
            "os:replace#1")
    assert (work / "p.csv").read_text() == "action,probability\n0,1\n"
    part = next(work.glob(".p.csv.*.part"))
    assert part.read_text().startswith("action,probability\n")
    assert main(["predict", str(small / "model"), str(small / "test.npz"), "--out",
                 str(work / "p.csv")]) == 0
    assert hidden(work) == [] and len((work / "p.csv").read_text().splitlines()) > 100
