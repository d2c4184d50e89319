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

MEMBERS = (METADATA, WEIGHTS)
MAX_ARCHIVE_BYTES = 1 << 30
"""Largest unpacked model archive (1 GiB)."""


def pack_model(folder: str | Path) -> bytes:
    """The archive of the model folder ``folder``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in MEMBERS:
            tar.add(Path(folder) / name, arcname=name, recursive=False)
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
                 ) -> BatchIGL | AIIGL:
    """The learner in the archive ``data``, checked as :func:`load_model` checks a folder."""
    with tempfile.TemporaryDirectory(prefix="iglearn-model-") as tmp:
        unpack_model(data, tmp, source)
        return load_model(tmp, algorithm)
