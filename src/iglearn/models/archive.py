"""A model folder as one file: a gzip-compressed tar archive holding exactly ``model.json``
and ``weights.safetensors``, as the decision service exports and imports models.

Unpacking reads the archive as a stream, in chunks of :data:`CHUNK_BYTES`, and never holds a
member in memory: it accepts only those two regular files, each within a byte budget checked
on the size its header declares before any of it is inflated and again on the bytes inflated
while they are written (:data:`MAX_ARCHIVE_BYTES`, :data:`MAX_ARCHIVE_EXPANSION`, and for
``model.json`` :data:`iglearn.data.limits.MAX_JSON_BYTES`; the weights, when ``model.json``
comes first as :func:`pack_model` writes it, are held to the size of the tensors it
describes). The result is checked by :func:`~iglearn.learners.registry.load_model` like any model
folder, and every message names the archive and the member, never the temporary folder it
is unpacked into."""

from __future__ import annotations

import io
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

from iglearn.errors import IGLearnError, shown
from iglearn.learners.registry import load_model
from iglearn.models.io import METADATA, WEIGHTS, member_label, weights_budget

if TYPE_CHECKING:
    from iglearn.learners.ai_igl import AIIGL
    from iglearn.learners.batch_igl import BatchIGL
    from iglearn.learners.iglp import IGLP
    from iglearn.learners.vi_igl import VIIGL

MEMBERS = (METADATA, WEIGHTS)
REPACK = ("write the archive of the model folder again: iglearn pack MODEL --out model.tar.gz "
          "(pack_model in Python), or the service's GET /v1/model/export")
"""What a message about a malformed archive tells the user to do."""
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
"""File names a model archive may end with."""
MAX_ARCHIVE_BYTES = 1 << 30
"""Largest unpacked model archive (1 GiB), and largest archive file read."""
MAX_ARCHIVE_EXPANSION = 16
"""Most bytes a member of a model archive may unpack to per compressed byte it holds, beyond
its first :data:`EXPANSION_ALLOWANCE` bytes. A model's weights (float32 values) barely
compress and its ``model.json`` compresses a few times; a member that inflates more (a
"zip bomb", small on the wire and huge unpacked) is refused before it is written out."""
EXPANSION_ALLOWANCE = 1 << 20
"""Bytes a member may unpack to whatever it compresses to (1 MiB)."""
MAX_HEADER_BYTES = 1 << 16
"""Largest extended (pax) header of a member of a model archive (64 KiB)."""
CHUNK_BYTES = 1 << 16
"""Bytes read, inflated and written at a time while unpacking (64 KiB)."""
GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of every gzip stream."""
_BLOCK = 512


class _Inflated:
    """The bytes of the gzip stream ``raw``, inflated ``CHUNK_BYTES`` at a time; ``consumed``
    counts the compressed bytes read so far."""

    def __init__(self, raw: IO[bytes], source: str):
        self.raw, self.source = raw, source
        self.inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self.pending = b""
        self.consumed = 0

    def _more(self) -> bytes:
        """The next inflated bytes, b"" at the end of the stream."""
        while True:
            if self.inflater.eof:  # a gzip stream may hold several members, one after another
                tail = self.inflater.unused_data
                self.inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            else:
                tail = self.inflater.unconsumed_tail
            if not tail:
                tail = self.raw.read(CHUNK_BYTES)
                self.consumed += len(tail)
                if not tail:  # the input ends: what zlib still holds, if anything
                    return self.inflater.decompress(b"", CHUNK_BYTES)
            out = self.inflater.decompress(tail, CHUNK_BYTES)
            if out:
                return out

    def read(self, n: int) -> bytes:
        """Up to ``n`` (at most ``CHUNK_BYTES``) inflated bytes; fewer only at the end."""
        while len(self.pending) < n:
            more = self._more()
            if not more:
                break
            self.pending += more
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def exactly(self, n: int, what: str) -> bytes:
        """``n`` bytes (n <= CHUNK_BYTES), or an error saying the archive is cut short."""
        out = self.read(n)
        if len(out) < n:
            raise IGLearnError(f"{self.source}: ends inside {what} (the archive is truncated); "
                               f"{REPACK}")
        return out


def pack_model(folder: str | Path) -> bytes:
    """The archive of the model folder ``folder``, its two members with the mode a new file
    gets (0666 less the umask), whatever their mode in ``folder``, and their contents where
    they are symbolic links (a folder put together with ``ln -s``, a store that links to its
    cache): an archive of links is refused where it is read."""
    from iglearn.files import umask

    mode = 0o666 & ~umask()

    def ordinary(member: tarfile.TarInfo) -> tarfile.TarInfo:
        member.mode = mode
        return member

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", dereference=True) as tar:
        for name in MEMBERS:
            tar.add(Path(folder) / name, arcname=name, recursive=False, filter=ordinary)
    return buffer.getvalue()


def _pax(data: bytes, source: str) -> dict[str, str]:
    """The records ``length key=value\\n`` of a pax extended header."""
    records, at = {}, 0
    while at < len(data) and data[at:at + 1] != b"\0":
        length, _, rest = data[at:at + 24].partition(b" ")
        if not length.isdigit() or not rest or int(length) < 5 or at + int(length) > len(data):
            raise IGLearnError(f"{source}: holds a damaged extended (pax) header; {REPACK}")
        record = data[at:at + int(length)].decode("utf-8", "surrogateescape")
        key, _, value = record.partition(" ")[2].rstrip("\n").partition("=")
        records[key] = value
        at += int(length)
    return records


def _member_size(pax: dict[str, str], declared: int, name: str, source: str) -> int:
    if "size" not in pax:
        return declared
    if not pax["size"].isdigit():
        raise IGLearnError(f"{source}: the pax header of {shown(name)} gives the size "
                           f"{shown(pax['size'])}; {REPACK}")
    return int(pax["size"])


def unpack_model(data: bytes | IO[bytes], folder: str | Path, source: str = "model archive",
                 size: int | None = None) -> None:
    """Write the model in the archive ``data`` (its bytes, or a binary file read as a
    stream; ``size``: its length in bytes, when a file) into the existing, empty ``folder``,
    within the byte budgets of the module's docstring; ``source`` names the archive in
    messages."""
    if isinstance(data, bytes | bytearray):
        size, data = len(data), io.BytesIO(data)
    try:
        _unpack(_Inflated(data, source), Path(folder), source, size)
    except OSError as e:
        if e.filename is not None:  # writing the folder failed, not reading the archive
            raise IGLearnError(f"{e.filename}: could not write the unpacked model "
                               f"({e.strerror or type(e).__name__}); unpack it into an "
                               f"existing, writable, empty folder") from None
        raise IGLearnError(f"{source}: not a gzip-compressed tar archive of a model folder "
                           f"({e}); {REPACK}") from None
    except (tarfile.TarError, zlib.error, EOFError) as e:
        raise IGLearnError(f"{source}: not a gzip-compressed tar archive of a model folder "
                           f"({e}); {REPACK}") from None


def _budget(name: str, folder: Path, source: str) -> tuple[int, str]:
    """The most bytes the member ``name`` may unpack to, and which limit that is."""
    from iglearn.data import limits

    if name == METADATA:
        return limits.MAX_JSON_BYTES, "iglearn.data.limits.MAX_JSON_BYTES"
    if (folder / METADATA).exists():  # model.json came first: the weights it describes
        budget = weights_budget(folder, source)
        if budget is not None:
            return min(budget, MAX_ARCHIVE_BYTES), f"the tensors {METADATA} describes"
    return MAX_ARCHIVE_BYTES, "iglearn.models.archive.MAX_ARCHIVE_BYTES"


def _unpack(stream: _Inflated, folder: Path, source: str, size: int | None) -> None:
    seen: list[str] = []
    pax: dict[str, str] = {}
    total = 0
    while True:
        block = stream.read(_BLOCK)
        if not block and not seen:
            raise IGLearnError(f"{source}: is empty; {REPACK}")
        if len(block) < _BLOCK:
            raise IGLearnError(f"{source}: ends inside a tar header (the archive is "
                               f"truncated); {REPACK}")
        if block == bytes(_BLOCK):  # the end of the archive: nothing after it is read
            break
        info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
        if info.type in (tarfile.XHDTYPE, tarfile.XGLTYPE):
            if info.size > MAX_HEADER_BYTES:
                raise IGLearnError(f"{source}: holds an extended (pax) header of {info.size} "
                                   f"bytes, more than {MAX_HEADER_BYTES} "
                                   f"(iglearn.models.archive.MAX_HEADER_BYTES); it is not an "
                                   f"iglearn model archive")
            raw = b"".join(stream.exactly(min(CHUNK_BYTES, left), "a pax header")
                           for left in range(-(-info.size // _BLOCK) * _BLOCK, 0, -CHUNK_BYTES))
            if info.type == tarfile.XHDTYPE:
                pax = _pax(raw[:info.size], source)
            continue
        name = pax.get("path", info.name)
        declared = _member_size(pax, info.size, name, source)
        sparse = any(key.startswith("GNU.sparse") for key in pax)
        pax = {}
        if name not in MEMBERS or name in seen:
            raise IGLearnError(f"{source}: holds {shown(name)}"
                               f"{' twice' if name in seen else ''}, not exactly "
                               f"{' and '.join(MEMBERS)}; {REPACK}")
        if info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE) or sparse:
            raise IGLearnError(f"{source}: {name} is not a regular file")
        label = member_label(source, name)
        budget, limit = _budget(name, folder, source)
        if total + declared > MAX_ARCHIVE_BYTES:
            budget, limit = MAX_ARCHIVE_BYTES - total, "iglearn.models.archive.MAX_ARCHIVE_BYTES"
        if size is not None:  # what the rest of the archive can inflate to
            room = MAX_ARCHIVE_EXPANSION * max(size - stream.consumed, 0) + EXPANSION_ALLOWANCE
            if room < budget:
                budget, limit = room, (f"{MAX_ARCHIVE_EXPANSION} times the {size}-byte archive "
                                       f"(iglearn.models.archive.MAX_ARCHIVE_EXPANSION)")
        if declared > budget:
            raise IGLearnError(f"{label}: unpacks to {declared} bytes, more than {budget}, "
                               f"{limit}; it is not an iglearn model")
        _copy(stream, folder / name, declared, label)
        total += declared
        seen.append(name)
    if sorted(seen) != sorted(MEMBERS):
        raise IGLearnError(f"{source}: holds {seen}, not exactly {' and '.join(MEMBERS)}; "
                           f"{REPACK}")


def _copy(stream: _Inflated, path: Path, declared: int, label: str) -> None:
    """Write the next ``declared`` bytes of ``stream`` (and the padding to a whole tar block)
    to ``path``, checking :data:`MAX_ARCHIVE_EXPANSION` as they are inflated."""
    start = stream.consumed
    written = 0
    with open(path, "xb") as out:
        while written < declared:
            chunk = stream.exactly(min(CHUNK_BYTES, declared - written), label)
            written += len(chunk)
            if written > MAX_ARCHIVE_EXPANSION * (stream.consumed - start) + \
                    EXPANSION_ALLOWANCE:
                raise IGLearnError(
                    f"{label}: inflates more than {MAX_ARCHIVE_EXPANSION} times "
                    f"(iglearn.models.archive.MAX_ARCHIVE_EXPANSION) beyond its first "
                    f"{EXPANSION_ALLOWANCE} bytes; it is not an iglearn model")
            out.write(chunk)
    padding = -declared % _BLOCK
    if padding:
        stream.exactly(padding, label)


def load_archive(data: bytes | IO[bytes], algorithm: str | None = None,
                 source: str = "model archive", size: int | None = None
                 ) -> BatchIGL | AIIGL | IGLP | VIIGL:
    """The learner in the archive ``data`` (see :func:`unpack_model`), checked as
    :func:`load_model` checks a folder; messages name ``source`` and the member."""
    with tempfile.TemporaryDirectory(prefix="iglearn-model-") as tmp:
        unpack_model(data, tmp, source, size)
        return load_model(tmp, algorithm, source=source)


def is_archive(path: str | Path) -> bool:
    """Whether ``path`` names a model archive (a file ending in .tar.gz or .tgz)."""
    return Path(path).name.lower().endswith(ARCHIVE_SUFFIXES) and not Path(path).is_dir()


def read_model(path: str | Path, algorithm: str | None = None
               ) -> BatchIGL | AIIGL | IGLP | VIIGL:
    """The learner in a model folder, or in a model archive (``.tar.gz``, as
    ``GET /v1/model/export`` writes it); either is checked as :func:`load_model` checks a
    folder."""
    if not is_archive(path):
        return load_model(path, algorithm)
    with open_archive(path) as (stream, size):
        return load_archive(stream, algorithm, str(path), size)


@contextmanager
def open_archive(path: str | Path) -> Iterator[tuple[IO[bytes], int]]:
    """``with open_archive(path) as (stream, size)``: the model archive file at ``path``, open
    for reading as a stream, and its size; refused, before anything but its first two bytes
    is read, unless it is a readable regular file of at most :data:`MAX_ARCHIVE_BYTES` that
    starts as a gzip stream does."""
    from iglearn.files import input_file

    size = input_file(path, "model archive")
    if size > MAX_ARCHIVE_BYTES:
        raise IGLearnError(f"{path}: {size} bytes, more than {MAX_ARCHIVE_BYTES} "
                           f"(iglearn.models.archive.MAX_ARCHIVE_BYTES); it is not an iglearn "
                           f"model archive")
    try:
        file = open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as e:
        raise IGLearnError(f"{path}: cannot read the model archive ({e.strerror or e})") from None
    with file:
        if file.read(len(GZIP_MAGIC)) != GZIP_MAGIC:
            raise IGLearnError(f"{path}: not a gzip-compressed tar archive of a model folder "
                               f"(it does not start as gzip does); give the archive "
                               f"GET /v1/model/export writes, or a model folder")
        file.seek(0)
        yield file, size


def extract_archive(path: str | Path, folder: str | Path) -> BatchIGL | AIIGL | IGLP | VIIGL:
    """Write the model in the archive at ``path`` as the model folder ``folder`` (checked as
    :func:`load_model` checks a folder before it is put in place, atomically; ``folder`` must
    be missing, empty or a model folder, which is replaced); the learner it holds."""
    from iglearn.files import remove_folder, replace_folder, temporary_folder
    from iglearn.models.io import check_model_folder

    folder = Path(folder)
    check_model_folder(folder)
    with open_archive(path) as (stream, size):
        tmp = temporary_folder(folder)
        try:
            unpack_model(stream, tmp, str(path), size)
            learner = load_model(tmp, source=str(path))
            replace_folder(tmp, folder)
        except BaseException:
            remove_folder(tmp)
            raise
    return learner
