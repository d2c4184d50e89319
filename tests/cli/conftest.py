"""A small log, its test contexts and a model fitted on it, shared by the command-line tests
(read-only: a test that changes files copies them first)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from iglearn.cli import main

FAST = ("--max-steps", "40")   # short fits keep the end-to-end runs to seconds


def run(capsys, *argv) -> tuple[int, str, str]:
    """Run ``iglearn *argv`` in this process: exit code, stdout, stderr."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="session")
def small(tmp_path_factory) -> Path:
    """A folder with log.npz (800 interactions), test.npz (contexts with labels) and model/."""
    folder = tmp_path_factory.mktemp("small")
    assert main(["simulate", "digits", "--samples", "800", "--out", str(folder / "log.npz"),
                 "--test-out", str(folder / "test.npz"), "--seed", "5"]) == 0
    assert main(["fit", str(folder / "log.npz"), "--out", str(folder / "model"), *FAST]) == 0
    return folder


def copy(source: Path, folder: Path) -> Path:
    """A copy of the file or folder ``source`` in ``folder``."""
    target = folder / source.name
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copy2(source, target)
    return target


def listing(folder: Path) -> dict[str, bytes | str | None]:
    """Every path under ``folder`` with its bytes (a link: where it points; a folder: None):
    a snapshot to compare."""
    def content(path: Path) -> bytes | str | None:
        if path.is_symlink():
            return f"-> {os.readlink(path)}"
        return None if path.is_dir() else path.read_bytes()
    return {str(path.relative_to(folder)): content(path) for path in sorted(folder.rglob("*"))}
