"""Where a command reads and writes: the rules that keep its outputs off its inputs and off
what iglearn did not write, and the clean-up of what killed runs left behind.

- An output may not be an input, lie inside an input folder, or hold an input inside it
  (paths compared after resolving ``..`` and symbolic links, and by device and inode when
  both exist, so a link or a hard link to an input counts as the input); two outputs of one
  command may not overlap either. A DSJSON file's ``<file>.schema.json`` counts with it.
- ``fit --out DIR`` replaces DIR only when it is missing, empty, or holds exactly a model
  iglearn wrote: ``model.json`` (whose ``format`` says so, read by
  :func:`iglearn.models.io.read_metadata`) and ``weights.safetensors``, plain files both.
- A path given as a URL (``https://...``, ``s3://...``, ``file://...``) is refused before any
  work (:func:`check_local`): a command reads and writes local files and folders only.
- Each command locks the folders it writes in (:class:`Outputs`) and, when no other iglearn
  command writes there, removes the temporaries of its targets that killed runs left
  (:func:`iglearn.files.remove_stale_temporaries`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from iglearn.errors import IGLearnError
from iglearn.files import remove_stale_temporaries

try:
    import fcntl
except ImportError:  # Windows: no locks, so no clean-up
    fcntl = None  # type: ignore[assignment]  # no fcntl module on Windows

Named = tuple[str, str | Path]
"""A path and how the command line names it (``--out``, ``LOG``)."""

URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")
"""The start of a URL (``https://``, ``s3://``, ``file://``); a scheme of two letters at
least, so that a Windows drive (``C://``) is a path."""
POSITIONAL = {"log": "LOG", "model": "MODEL", "data": "DATA", "contexts": "CONTEXTS",
              "archive": "ARCHIVE", "input": "IN", "output": "OUT"}
"""How the command line names the path arguments that are no option, by destination."""
OUTPUTS = ("out", "test_out", "history", "output", "folder")
"""The destinations of the arguments that name a path a command writes (inputs: the
command's ``reads``)."""
MODELS = ("model", "archive")
"""The destinations of the arguments that read a model (a folder, or an archive such as the
decision service exports)."""


def argument_name(dest: str) -> str:
    """How the command line names the argument of destination ``dest``: ``LOG``, ``--out``,
    ``--data-dir`` (``config.data_dir``)."""
    name = dest.rpartition(".")[2]
    return POSITIONAL.get(name) or "--" + name.replace("_", "-")


def check_local(args: argparse.Namespace) -> None:
    """Raise IGLearnError when a path the command writes (:data:`OUTPUTS`) is ``-``, which
    names standard output elsewhere, or a path it reads or writes starts with a ``~`` that no
    shell expanded (``"~/log.csv"`` quoted, or in a notebook's argument list: an output would
    have gone into a new folder named ``~``), or a path it reads (its ``reads``) or writes is
    a URL:
    iglearn reads and writes local files and folders only, and a URL taken as a path
    (``http:/host/file``) would name a missing file, or create a folder ``http:``. The
    message names the argument, the path and the fix."""
    for dest in (*args.reads, *OUTPUTS):
        value = getattr(args, dest, None)
        if value == "-" and dest in OUTPUTS:  # not standard output: a folder named "-"
            raise IGLearnError(f"{argument_name(dest)} -: iglearn writes files and folders, "
                               f"not standard output; name a path (./- for a file or "
                               f"folder named '-')")
        if isinstance(value, str) and value.startswith("~"):
            home = os.path.expanduser(value)
            raise IGLearnError(f"{argument_name(dest)} {value}: ~ is the home folder only where "
                               f"a shell expands it (unquoted), not in a quoted path or a "
                               f"list of arguments; give the path itself"
                               f"{f' ({home})' if home != value else ''}")
        if not isinstance(value, str) or not URL.match(value):
            continue
        name = argument_name(dest)
        if value.lower().startswith("file://"):
            raise IGLearnError(f"{name} {value}: a file:// URL; give the local path itself "
                               f"({value[len('file://'):] or '/'})")
        if dest in OUTPUTS:
            raise IGLearnError(f"{name} {value}: a URL; iglearn writes local files and folders "
                               f"only: write to a local path, then upload it")
        service = ("; the decision service's model: iglearn serve export --url HOST "
                   "--out model.tar.gz" if dest in MODELS else "")
        raise IGLearnError(f"{name} {value}: a URL; iglearn reads local files and folders "
                           f"only: download it first (curl -fLO URL, say{service}) and give "
                           f"the local path")


def with_sidecar(name: str, path: str | Path) -> list[Named]:
    """``path`` and, for a DSJSON file, its feature schema ``<file>.schema.json``."""
    from iglearn.data.formats.dsjson import schema_path

    path = Path(path)
    if path.suffix.lower() != ".dsjson":
        return [(name, path)]
    return [(name, path), (f"{name}'s schema", schema_path(path))]


def _resolved(path: str | Path) -> Path:
    """The absolute path with ``..`` and symbolic links resolved (a loop left as it is)."""
    return Path(os.path.realpath(path))


def _relation(output: str | Path, other: str | Path) -> str | None:
    """How ``output`` overlaps ``other``: 'is', 'lies inside', 'holds', or None."""
    a, b = _resolved(output), _resolved(other)
    if a == b:
        return "is"
    with contextlib.suppress(OSError):
        if os.path.samefile(a, b):
            return "is"
    if b in a.parents:
        return "lies inside"
    if a in b.parents:
        return "holds"
    return None


def check_paths(inputs: Sequence[Named], outputs: Sequence[Named]) -> None:
    """Raise IGLearnError when an output is, lies inside or holds an input, or overlaps an
    earlier output; the message names both and the fix."""
    for i, (name, output) in enumerate(outputs):
        for kind, others in (("input", inputs), ("output", outputs[:i])):
            for other_name, other in others:
                relation = _relation(output, other)
                if relation is not None:
                    rule = ("an output may not be, lie inside or hold an input" if kind == "input"
                            else "two outputs may not overlap")
                    noun = ("folder" if Path(other).is_dir() else "file" if Path(other).exists()
                            else "path")  # an output not written yet: a file or a folder
                    raise IGLearnError(f"{name} {output}: {relation} the {kind} {noun} "
                                       f"{other_name} {other}; {rule}: choose another path "
                                       f"for {name}")


def check_model_output(folder: Path) -> None:
    """Raise IGLearnError unless ``fit``, ``load`` or ``orient`` may write a model to
    ``folder`` (:func:`iglearn.models.io.check_model_folder`, as ``--out``)."""
    from iglearn.models.io import check_model_folder

    check_model_folder(folder, "--out")


class Outputs:
    """The folders one command run writes in, and the clean-up of its targets.

    :meth:`claim` takes, for the rest of the run, a shared lock (``flock``) on each folder a
    target goes in. Just before, it tries for an exclusive lock without waiting: granted, no
    other iglearn command is writing in that folder, so the temporaries there named after
    the target and unchanged since this run started are leftovers of killed runs, and are
    removed (:func:`iglearn.files.remove_stale_temporaries`); refused, they are left for a
    later run. Where locks are not available (Windows, some network file systems) nothing
    is removed. :meth:`close` releases the locks (so does the end of the process, killed or
    not).
    """

    def __init__(self) -> None:
        self.started = time.time()
        self._locks: dict[Path, int] = {}

    def claim(self, targets: Sequence[str | Path]) -> None:
        """Lock the folders of ``targets`` and remove their targets' stale temporaries."""
        by_folder: dict[Path, list[Path]] = {}
        for target in targets:
            target = Path(os.path.abspath(target))
            by_folder.setdefault(target.parent, []).append(target)
        for folder, names in by_folder.items():
            if folder in self._locks or fcntl is None or not folder.is_dir():
                continue  # a missing folder, or a file, is reported by the command's checks
            try:
                fd = os.open(folder, os.O_RDONLY)
            except OSError:
                continue  # a missing folder is reported by the command's own checks
            self._locks[folder] = fd
            try:
                if _alone(fd):
                    for target in names:
                        self._clean(target)
            finally:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_SH)

    def _clean(self, target: Path) -> None:
        try:
            removed, restored = remove_stale_temporaries(target, self.started)
        except OSError as e:
            warnings.warn(f"{target}: could not remove what interrupted runs left beside it "
                          f"({e}); remove its hidden temporaries by hand", stacklevel=2)
            return
        if restored is not None:
            warnings.warn(f"{target}: put back the model an interrupted run had set aside",
                          stacklevel=2)
        if removed:
            names = ", ".join(path.name for path in removed)
            warnings.warn(f"removed what interrupted runs left beside {target}: {names}",
                          stacklevel=2)

    def close(self) -> None:
        """Release the locks."""
        for fd in self._locks.values():
            os.close(fd)
        self._locks.clear()


def _alone(fd: int) -> bool:
    """Take the exclusive lock on the folder open as ``fd`` without waiting: True when
    granted (no other iglearn command writes there), False when not (or if it cannot)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True
