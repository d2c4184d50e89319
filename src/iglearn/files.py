"""The one way iglearn writes files: to a temporary name beside the target, then renamed into
place, with the permissions an ordinary file would get (the process umask), so a crash never
leaves half a file and collaborators can read what was written. And the one check of an input
file: a regular file this process may read."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from iglearn.errors import IGLearnError

Write = Callable[[Path], None]
"""Writes a file's whole content to the path it is given (a temporary name)."""


def umask() -> int:
    """The process umask (read without changing it for longer than the call)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def input_file(path: str | Path, what: str = "file") -> int:
    """The size in bytes of ``path``, checked to be a regular file this process may read.

    A folder, a FIFO, a device or a socket is refused (reading one could block or never end),
    and a permission problem is reported as such.
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise IGLearnError(f"{path}: no such {what}; check the path") from None
    except PermissionError:
        raise IGLearnError(f"{path}: cannot read the {what} (permission denied); check the "
                           f"permissions of its folders") from None
    except OSError as e:
        raise IGLearnError(f"{path}: cannot read the {what} ({e.strerror or e}); check the "
                           f"path") from None
    if stat.S_ISDIR(info.st_mode):
        raise IGLearnError(f"{path}: is a folder, not a {what}; give the path of a file")
    if not stat.S_ISREG(info.st_mode):
        raise IGLearnError(f"{path}: is not a regular file (a FIFO, a device or a socket); "
                           f"give the path of a {what}")
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except PermissionError:
        raise IGLearnError(f"{path}: cannot read the {what} (permission denied); check its "
                           f"permissions") from None
    except OSError as e:
        raise IGLearnError(f"{path}: cannot read the {what} ({e.strerror or e}); check the "
                           f"path") from None
    return info.st_size


def output_folder(path: Path) -> Path:
    """The folder an output file goes into, checked to exist and be writable."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if folder.exists() and not folder.is_dir():
        raise IGLearnError(f"{path}: {folder} is a file, not a folder; choose an output path "
                           f"in a folder")
    if not folder.is_dir():
        raise IGLearnError(f"{path}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise IGLearnError(f"{path}: cannot write in {folder}; choose a writable folder")
    if path.is_dir():
        raise IGLearnError(f"{path}: is a folder; give a file name")
    return folder


def write_files_atomic(writes: Sequence[tuple[Path, Write]]) -> None:
    """Write each file to a temporary name beside it, then rename them all into place.

    If any write fails, every temporary file is removed and no output file is created. The
    files get mode 0666 less the umask, as ``open`` would give them.
    """
    temps: list[tuple[Path, Path]] = []
    try:
        for path, write in writes:
            path = Path(path)
            folder = output_folder(path)
            try:
                fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".part")
                os.close(fd)
                temps.append((Path(tmp), path))
                write(Path(tmp))
            except OSError as e:
                raise IGLearnError(f"{path}: cannot write ({e.strerror or e}); check the "
                                   f"free space and permissions of {folder}") from e
        mode = 0o666 & ~umask()
        for tmp, path in temps:
            try:
                os.chmod(tmp, mode)
                os.replace(tmp, path)
            except OSError as e:
                raise IGLearnError(f"{path}: cannot write ({e.strerror or e}); check the "
                                   f"permissions of {path.parent}") from e
    finally:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)


def write_atomic(path: Path, write: Write) -> None:
    """Write one file atomically: ``write(tmp)``, then rename ``tmp`` to ``path``."""
    write_files_atomic([(Path(path), write)])


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    write_atomic(path, lambda tmp: tmp.write_text(text))


def temporary_folder(target: Path) -> Path:
    """A fresh, empty folder beside ``target`` (mode 0777 less the umask) to build it in."""
    target = Path(target)
    try:
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    except OSError as e:
        raise IGLearnError(f"{target}: cannot write in {target.parent} ({e.strerror}); "
                           f"choose a writable folder") from e
    os.chmod(tmp, 0o777 & ~umask())
    return tmp


def remove_folder(folder: Path) -> None:
    """Delete a temporary folder and everything in it, ignoring one that is already gone."""
    shutil.rmtree(folder, ignore_errors=True)
