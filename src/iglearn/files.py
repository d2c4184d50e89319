"""The one way iglearn writes files: to a temporary name beside the target, then renamed into
place, with the permissions an ordinary file would get (the process umask), so a crash never
leaves half a file and collaborators can read what was written. And the one check of an input
file (a regular file this process may read) and of an output folder that a command replaces
(:func:`replaceable_folder`)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from iglearn.errors import IGLearnError, shown, warn_caller

Write = Callable[[Path], object]
"""Writes a file's whole content to the path it is given (a temporary name)."""

MODEL_FILES = ("model.json", "weights.safetensors")
"""The files of a model folder (:mod:`iglearn.models.io`): its metadata and its weights."""


def umask() -> int:
    """The process umask (read without changing it for longer than the call)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def set_ordinary_mode(path: Path) -> None:
    """Give the file ``path`` the mode a file ``open`` creates gets, 0666 less the umask
    (libraries that write to a path themselves may create it 0600)."""
    os.chmod(path, 0o666 & ~umask())


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


def fingerprint(path: str | Path) -> dict[str, int | str]:
    """What identifies the bytes of the file ``path``, or of the files in the folder ``path``
    (a folder of Parquet shards, say): their total size, ``bytes``, and the SHA-256 of their
    content, ``sha256`` (a folder's regular files, found recursively, in the order of their
    relative names, each hashed with its name and size)."""
    path = Path(path)
    digest = hashlib.sha256()
    if not path.is_dir():
        return {"bytes": _hash_file(path, digest), "sha256": digest.hexdigest()}
    size = 0
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        name = file.relative_to(path).as_posix().encode()
        digest.update(len(name).to_bytes(8, "little") + name)
        digest.update(file.stat().st_size.to_bytes(8, "little"))
        size += _hash_file(file, digest)
    return {"bytes": size, "sha256": digest.hexdigest()}


def same_content(path: str | Path, known: object) -> bool | None:
    """Whether ``path`` holds the bytes the :func:`fingerprint` ``known`` describes (their sizes
    are compared first, so different data of another size is told apart without reading it);
    None when ``known`` is not a fingerprint."""
    if not (isinstance(known, dict) and set(known) == {"bytes", "sha256"}
            and type(known["bytes"]) is int and isinstance(known["sha256"], str)):
        return None
    path = Path(path)
    files = (p for p in path.rglob("*") if p.is_file()) if path.is_dir() else iter([path])
    if sum(file.stat().st_size for file in files) != known["bytes"]:
        return False
    return fingerprint(path) == known


def _hash_file(path: Path, digest: hashlib._Hash) -> int:
    """Add the bytes of ``path`` to ``digest``; their number."""
    size = 0
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return size


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
                tmp = new_part_file(folder, path.name, temps, path)
                write(tmp)
            except PermissionError as e:
                raise IGLearnError(f"{path}: permission denied while writing in {folder}; "
                                   f"choose a folder you may write in") from e
            except OSError as e:
                raise IGLearnError(f"{path}: cannot write ({e.strerror or e}); check the "
                                   f"free space and permissions of {folder}") from e
        for tmp, path in temps:
            try:
                set_ordinary_mode(tmp)
                os.replace(tmp, path)
            except OSError as e:
                raise IGLearnError(f"{path}: cannot write ({e.strerror or e}); check the "
                                   f"permissions of {path.parent}") from e
    finally:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)


def new_part_file(folder: Path, name: str, temps: list[tuple[Path, Path]], path: Path) -> Path:
    """A new empty file ``.NAME.XXXXXXXX.part`` in ``folder`` (mode 0600, as ``mkstemp``
    makes one), entered in ``temps`` (with ``path``, the file it becomes) before it is
    created, so that an interruption at any moment (Ctrl+C, SIGTERM: the signal is handled
    right after the file appears) leaves no part file that the caller does not remove."""
    while True:
        tmp = folder / f".{name}.{secrets.token_hex(4)}.part"
        temps.append((tmp, path))
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return tmp
        except FileExistsError:  # another's: not ours to remove
            temps.pop()


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


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one atomic step (Linux ``renameat2`` with RENAME_EXCHANGE);
    False where the system or file system cannot."""
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    done = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    if done == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (38, 22, 95):  # ENOSYS, EINVAL, EOPNOTSUPP: not available here
        return False
    raise OSError(errno, os.strerror(errno), str(b))


def replace_folder(new: Path, target: Path) -> None:
    """Put the folder ``new`` (built beside ``target``) in the place of ``target`` in one atomic
    step: readers see the old folder or the new one, never neither, even if the process is
    killed. The old folder is then deleted. Where the system cannot swap two folders
    atomically, the old one is set aside under ``.NAME.old.*`` first (a killed run leaves it
    there, and :func:`remove_stale_temporaries` puts it back)."""
    new, target = Path(new), Path(target)
    if not target.exists():
        os.replace(new, target)
        return
    if _exchange(new, target):
        remove_folder(new)  # now holds the old folder
        return
    old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old."))
    os.replace(target, old / "model")
    try:
        os.replace(new, target)
    except OSError:
        os.replace(old / "model", target)
        raise
    finally:
        remove_folder(old)


def replaceable_folder(folder: Path, option: str, files: Sequence[str], what: str) -> bool:
    """Raise IGLearnError unless a command may write the folder ``folder`` (given as
    ``option``) that holds ``what`` (a model: :data:`MODEL_FILES`): its parent exists and is
    writable, and ``folder`` is missing, empty, or holds exactly the plain ``files`` and
    nothing else (a folder holding anything else is never replaced). Returns whether it holds
    them, for the caller to check that they are what iglearn wrote."""
    folder = Path(folder)
    parent = folder.parent
    if not parent.is_dir():
        raise IGLearnError(f"{option} {folder}: the folder {parent} does not exist; create it "
                           f"first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise IGLearnError(f"{option} {folder}: cannot write in {parent}; choose a writable "
                           f"folder")
    if folder.is_symlink():
        raise IGLearnError(f"{option} {folder}: is a symbolic link; give the folder itself "
                           f"({os.path.realpath(folder)}) or a new name")
    if not folder.exists():
        return False
    if not folder.is_dir():
        raise IGLearnError(f"{option} {folder}: is a file, not a {what} folder; choose a new "
                           f"name for {option}")
    entries = {entry.name: entry for entry in os.scandir(folder)}
    if not entries:
        return False
    new = f"a new folder for {option}" if option.startswith("--") else "another folder"
    both = " and ".join(files)
    others = sorted(set(entries) - set(files))
    if others:
        more = f" and {len(others) - 1} more entries" if len(others) > 1 else ""
        raise IGLearnError(f"{option} {folder}: holds {shown(others[0])}{more}, so it is not a "
                           f"{what} iglearn wrote; a {what} replaces a folder only when it holds "
                           f"exactly {both}: choose {new}")
    if any(not entry.is_file(follow_symlinks=False) for entry in entries.values()):
        raise IGLearnError(f"{option} {folder}: its {' or '.join(files)} is not a plain file, "
                           f"so it is not a {what} iglearn wrote; choose {new}")
    if set(entries) != set(files):
        raise IGLearnError(f"{option} {folder}: holds {next(iter(entries))} alone, not a whole "
                           f"iglearn {what}; choose {new}, or remove it")
    return True


def remove_folder(folder: Path) -> None:
    """Delete a temporary folder and everything in it, ignoring one that is already gone. A
    folder in it that its owner may not write into (a model folder made read-only, set aside
    to be replaced by a new model) is made writable first, since it is iglearn's to delete;
    what still cannot be removed is told in one warning naming it, where before it stayed
    hidden beside the output."""
    try:
        shutil.rmtree(folder)
        return
    except FileNotFoundError:
        if not os.path.lexists(folder):
            return
    except OSError:
        pass
    _owner_writable(Path(folder))
    failed: list[tuple[str, BaseException]] = []
    shutil.rmtree(folder, onerror=lambda function, path, error: failed.append((path,
                                                                                error[1])))
    if os.path.lexists(folder) and failed:
        path, error = failed[0]
        reason = getattr(error, "strerror", None) or error
        warn_caller(f"{folder}: could not be removed ({reason}: {path}); remove it by hand")


def _owner_writable(folder: Path) -> None:
    """Give ``folder`` and every folder in it (not following links) its owner's read, write
    and search permission, where the owner may change it; others are left as they are."""
    def grant(path: str) -> None:
        with contextlib.suppress(OSError):
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                os.chmod(path, stat.S_IMODE(mode) | stat.S_IRWXU)
    grant(str(folder))
    for root, dirs, _ in os.walk(folder):
        for name in dirs:
            grant(os.path.join(root, name))


def remove_stale_temporaries(target: Path, before: float) -> tuple[list[Path], Path | None]:
    """Remove what interrupted writes of ``target`` left beside it.

    iglearn builds its outputs beside them under hidden names, XXXXXXXX being tempfile's eight
    random characters and NAME the target's name:

    - ``.NAME.XXXXXXXX.part``: a file being written (:func:`write_files_atomic`);
    - ``.NAME.XXXXXXXX``: a model folder being written (:func:`iglearn.models.io.save_model`),
      holding ``model.json`` and ``weights.safetensors`` at most, or a folder of Parquet
      shards being written (:func:`iglearn.data.formats.shards.write_shards`), holding
      ``part-NNNNN.parquet`` files;
    - ``.NAME.old.XXXXXXXX``: the previous model, as ``model`` inside it, set aside while the
      new one is renamed into place;
    - ``.npz-XXXXXXXX``: the ``.npy`` members of an ``.npz`` being written (whatever its name).

    Every entry of the target's folder with one of these names and nothing else inside, last
    modified (it or, for a folder, anything directly in it) before ``before`` (a time stamp:
    the caller's start), is removed; links among them are removed, never followed. When
    ``target`` does not exist, a model set aside under ``.NAME.old.*`` (a write killed between
    save_model's two renames) is first renamed back to ``target``, the newest if several.

    Call it only while no other process writes in that folder: a live writer's temporaries
    have the same names (the command line makes sure of it with a lock,
    :class:`iglearn.cli.paths.Outputs`).

    Returns:
        the entries removed, and ``target`` if a set-aside model was put back there (else None).
    """
    target = Path(target)
    folder = target.parent if str(target.parent) else Path(".")
    name, random = re.escape(target.name), "[a-z0-9_]{8}"
    set_aside = re.compile(rf"\.{name}\.old\.{random}")
    # (name of a temporary, what it may hold: None for a file, else its entries' names)
    kinds = ((re.compile(rf"\.{name}\.{random}\.part"), None),
             (re.compile(rf"\.{name}\.{random}"),
              re.compile(r"model\.json|weights\.safetensors|part-\d{5}\.parquet")),
             (set_aside, re.compile("model")),
             (re.compile(rf"\.npz-{random}"), re.compile(r"\w+\.npy")))
    found: list[tuple[float, Path]] = []
    for entry in os.scandir(folder):
        for pattern, holds in kinds:
            if pattern.fullmatch(entry.name):
                changed = _last_change(Path(entry.path), holds)
                if changed is not None and changed < before:
                    found.append((changed, Path(entry.path)))
                break
    stale = [path for _, path in sorted(found, reverse=True)]   # the newest first
    restored = None
    for path in stale:
        if (set_aside.fullmatch(path.name) and not os.path.lexists(target)
                and _is_folder(path / "model")):
            os.replace(path / "model", target)
            restored = target
    for path in stale:
        if _is_folder(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return [path for path in stale if not os.path.lexists(path)], restored


def _last_change(path: Path, holds: re.Pattern | None) -> float | None:
    """When ``path`` or anything directly in it last changed, if it is a file (``holds`` None)
    or a folder whose entries' names all match ``holds``; else (or if it is gone) None."""
    try:
        if holds is None:
            return None if _is_folder(path) else os.lstat(path).st_mtime
        if not _is_folder(path):
            return None
        entries = list(os.scandir(path))
        if not all(holds.fullmatch(entry.name) for entry in entries):
            return None
        return max([os.lstat(path).st_mtime]
                   + [entry.stat(follow_symlinks=False).st_mtime for entry in entries])
    except FileNotFoundError:
        return None


def _is_folder(path: Path) -> bool:
    """True when ``path`` is a folder itself (not a link to one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def removed_if_failed(paths: Sequence[Path]) -> Iterator[Callable[[], None]]:
    """Within the block, those of ``paths`` that do not exist before it are removed again if
    the block raises (a file, or a folder left empty), the last first, unless the function
    it gives was called first (the command got past its refusals): what a refused command
    created is not left behind. A path that existed is never touched."""
    new = [path for path in paths if not os.path.lexists(path)]

    def keep() -> None:
        new.clear()

    try:
        yield keep
    except BaseException:
        for path in reversed(new):
            with contextlib.suppress(OSError):
                if _is_folder(path):
                    path.rmdir()  # only when empty
                else:
                    path.unlink()
        raise
