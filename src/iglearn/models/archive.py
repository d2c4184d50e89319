"""A model folder as one file: a gzip-compressed tar archive holding exactly ``model.json``
and ``weights.safetensors``, as the decision service exports and imports models. Unpacking
accepts only those two regular files, within a size limit, and the result is checked by
:func:`~iglearn.models.io.load_model` like any model folder."""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from iglearn.errors import IGLearnError
from iglearn.models.io import METADATA, WEIGHTS, load_model

if TYPE_CHECKING:
    from iglearn.learners.ai_igl import AIIGL
    from iglearn.learners.batch_igl import BatchIGL
    from iglearn.learners.iglp import IGLP

MEMBERS = (METADATA, WEIGHTS)
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
"""File names a model archive may end with."""
MAX_ARCHIVE_BYTES = 1 << 30
"""Largest unpacked model archive (1 GiB)."""


def pack_model(folder: str | Path) -> bytes:
    """The archive of the model folder ``folder``, its two members with the mode a new file
    gets (0666 less the umask), whatever their mode in ``folder``."""
    from iglearn.files import umask

    mode = 0o666 & ~umask()

    def ordinary(member: tarfile.TarInfo) -> tarfile.TarInfo:
        member.mode = mode
        return member

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in MEMBERS:
            tar.add(Path(folder) / name, arcname=name, recursive=False, filter=ordinary)
    return buffer.getvalue()


def unpack_model(data: bytes, folder: str | Path, source: str = "model archive") -> None:
    """Write the model in the archive ``data`` into the existing, empty ``folder``."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = tar.getmembers()
            names = sorted(m.name for m in members)
            if names != sorted(MEMBERS):
                raise IGLearnError(f"{source}: holds {names[:4]}, not exactly "
                                   f"{' and '.join(MEMBERS)}; export the model folder again")
            if sum(m.size for m in members) > MAX_ARCHIVE_BYTES:
                raise IGLearnError(f"{source}: unpacks to more than {MAX_ARCHIVE_BYTES} "
                                   f"bytes; it is not an iglearn model")
            for member in members:
                if not member.isfile():
                    raise IGLearnError(f"{source}: {member.name} is not a regular file")
                extracted = tar.extractfile(member)
                assert extracted is not None
                (Path(folder) / member.name).write_bytes(extracted.read())
    except (tarfile.TarError, EOFError, OSError) as e:
        raise IGLearnError(f"{source}: not a gzip-compressed tar archive of a model folder "
                           f"({e}); send the archive GET /v1/model/export gives") from None


def load_archive(data: bytes, algorithm: str | None = None, source: str = "model archive"
                 ) -> BatchIGL | AIIGL | IGLP:
    """The learner in the archive ``data``, checked as :func:`load_model` checks a folder."""
    with tempfile.TemporaryDirectory(prefix="iglearn-model-") as tmp:
        unpack_model(data, tmp, source)
        return load_model(tmp, algorithm)


def is_archive(path: str | Path) -> bool:
    """Whether ``path`` names a model archive (a file ending in .tar.gz or .tgz)."""
    return Path(path).name.lower().endswith(ARCHIVE_SUFFIXES) and not Path(path).is_dir()


def read_model(path: str | Path, algorithm: str | None = None) -> BatchIGL | AIIGL | IGLP:
    """The learner in a model folder, or in a model archive (``.tar.gz``, as
    ``GET /v1/model/export`` writes it); either is checked as :func:`load_model` checks a
    folder."""
    if not is_archive(path):
        return load_model(path, algorithm)
    return load_archive(archive_bytes(path), algorithm, str(path))


def archive_bytes(path: str | Path) -> bytes:
    """The bytes of the model archive file at ``path``, checked to be a readable regular
    file."""
    from iglearn.files import input_file

    input_file(path, "model archive")
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise IGLearnError(f"{path}: cannot read the model archive ({e.strerror})") from None


def extract_archive(path: str | Path, folder: str | Path) -> BatchIGL | AIIGL | IGLP:
    """Write the model in the archive at ``path`` as the model folder ``folder`` (checked as
    :func:`load_model` checks a folder before it is put in place, atomically; ``folder`` must
    be missing, empty or a model folder, which is replaced); the learner it holds."""
    from iglearn.files import remove_folder, replace_folder, temporary_folder
    from iglearn.models.io import check_model_folder

    folder = Path(folder)
    check_model_folder(folder)
    data = archive_bytes(path)
    tmp = temporary_folder(folder)
    try:
        unpack_model(data, tmp, str(path))
        learner = load_model(tmp)
        replace_folder(tmp, folder)
    except BaseException:
        remove_folder(tmp)
        raise
    return learner
