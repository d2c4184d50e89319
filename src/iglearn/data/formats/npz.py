"""NumPy ``.npz``: one array per field plus a scalar ``n_actions``.

iglearn writes uncompressed archives, whose members it memory-maps when reading, so a
large log is never copied into memory by the reader; compressed members (``np.savez_compressed``)
are read into memory. Loading never unpickles (``allow_pickle=False``).
"""

from __future__ import annotations

import json
import math
import struct
import tempfile
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from io import BufferedReader
from pathlib import Path

import numpy as np

from iglearn.data import limits, safejson
from iglearn.data.formats.base import (
    ALL_FIELDS,
    BATCH_ROWS,
    DTYPES,
    MATRIX_FIELDS,
    FeatureSchema,
    TableInfo,
    TableReader,
    check_n_actions,
    check_table_size,
    required_fields,
)
from iglearn.data.frames import near_name
from iglearn.data.logs import REAL_KINDS
from iglearn.errors import IGLearnError, shown
from iglearn.files import input_file, remove_folder

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_CORRUPT = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
            struct.error)
"""What reading a damaged archive raises (zipfile, zlib and numpy's header parser)."""


class NpzReader(TableReader):
    """Reads an ``.npz`` log or context set, memory-mapping uncompressed members.

    Every member's header is checked before its data are read: its type (real numbers only;
    never Python objects), and its shape against the bytes the archive really holds (at most
    MAX_EXPANSION times its compressed size), so a damaged or hostile archive cannot make the
    reader allocate more than the file could hold. ``n_actions``: K when the archive has no
    ``n_actions`` (a model's, for contexts saved as ``np.savez(path, context=x)``).
    """

    def __init__(self, path: Path, n_actions: int | None = None):
        self.path = path
        source = str(path)
        self._size = input_file(path)
        try:
            self._zip = zipfile.ZipFile(path)
            names = self._zip.namelist()
        except PermissionError:
            raise IGLearnError(f"{source}: cannot read the file (permission denied); check its "
                               f"permissions") from None
        except _CORRUPT as e:
            raise IGLearnError(f"{source}: not a readable .npz archive ({shown(str(e))}); the "
                               f"file is truncated or corrupt, write it again") from None
        twice = [name for name, count in Counter(names).items() if count > 1]
        if twice:
            raise IGLearnError(f"{source}: holds the member {shown(twice[0])} twice; the file "
                               f"is corrupt, write it again")
        members = {name[:-4]: self._zip.getinfo(name) for name in names
                   if name.endswith(".npy")}
        self._members = members
        self._arrays: dict[str, np.ndarray] = {}
        self._headers: dict[str, tuple[tuple[int, ...], bool, np.dtype, int]] = {}
        if "n_actions" not in members:
            if n_actions is None:
                raise IGLearnError(f"{source}: missing field 'n_actions' (the number of actions "
                                   f"K); add a scalar array n_actions to the archive")
            k = check_n_actions(n_actions, source)
        else:
            shape = self._header("n_actions", "iuf")[0]  # 2.0: K, as in a CSV column
            if math.prod(shape) != 1:
                raise IGLearnError(f"{source}: field 'n_actions' must be one integer, got "
                                   f"shape {shape}")
            k = check_n_actions(self._load("n_actions"), source)
        fields = required_fields(set(members), source)
        read = (*ALL_FIELDS, "n_actions", "feature_schema")
        unknown = sorted(set(members) - set(read))
        if unknown:  # a misspelt field (labels) would be left unread without a word
            hint = near_name(unknown[0], read)
            raise IGLearnError(f"{source}: holds an array {shown(unknown[0])} that iglearn "
                               f"does not read (it reads {', '.join(map(shown, read))})"
                               f"; {hint + ' ' if hint else ''}rename or remove it")
        shapes = {name: self._header(name, REAL_KINDS)[0] for name in fields}
        n = shapes["context"][0] if shapes["context"] else 0
        dims = {}
        for name, shape in shapes.items():
            matrix = name in MATRIX_FIELDS
            if len(shape) != (2 if matrix else 1) and not (matrix and len(shape) == 1):
                expected = "(n, d), one row per interaction" if matrix else "(n,)"
                raise IGLearnError(f"{source}: field '{name}' has shape {shape}; expected "
                                   f"{expected}")
            if shape[0] != n:
                raise IGLearnError(f"{source}: field '{name}' has {shape[0]} rows but "
                                   f"'context' has {n}; every field needs one row per "
                                   f"interaction")
            if matrix:
                dims[name] = shape[1] if len(shape) == 2 else 1
        schema = None
        if "feature_schema" in members:
            shape = self._header("feature_schema", "U")[0]
            if shape != ():
                raise IGLearnError(f"{source}: field 'feature_schema' has shape {shape}; "
                                   f"expected one JSON string")
            text = str(self._load("feature_schema").item())
            record = safejson.parse(text, f"{source} (field 'feature_schema')",
                                    "remove it or write the log again")
            schema = FeatureSchema.from_json(record, f"{source} (feature_schema)")
        self.info = TableInfo(source, n, k, fields, dims, schema)
        check_table_size(self.info, self._size)

    def _corrupt(self, name: str, error: BaseException) -> IGLearnError:
        return IGLearnError(f"{self.path}: field '{name}' cannot be read ({shown(str(error))}); "
                            f"the file is truncated or corrupt, write it again")

    def _load(self, name: str) -> np.ndarray:
        """The whole member ``name``, read after :meth:`_header` checked it."""
        try:
            with self._zip.open(self._members[name]) as f:
                return np.lib.format.read_array(f, allow_pickle=False)
        except _CORRUPT as e:
            raise self._corrupt(name, e) from None

    def _header(self, name: str, kinds: str = REAL_KINDS
                ) -> tuple[tuple[int, ...], bool, np.dtype, int]:
        """(shape, fortran order, dtype, byte offset of the data in the file or -1), checked:
        a dtype of one of ``kinds``, and data that the archive really holds."""
        if name in self._headers:
            return self._headers[name]
        member = self._members[name]
        method = member.compress_type
        if member.header_offset + member.compress_size > self._size or (
                method == zipfile.ZIP_STORED and member.file_size != member.compress_size):
            raise IGLearnError(f"{self.path}: field '{name}' claims more bytes than the file "
                               f"holds; the file is truncated or corrupt, write it again")
        if member.file_size > limits.MAX_EXPANSION * max(member.compress_size, 1):
            raise IGLearnError(f"{self.path}: field '{name}' claims {member.file_size} bytes "
                               f"from {member.compress_size} compressed, more than "
                               f"{limits.MAX_EXPANSION} times as many "
                               f"(iglearn.data.limits.MAX_EXPANSION); the file is damaged, "
                               f"write it again")
        try:
            with self._zip.open(member) as f:
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
                header_length = f.tell()
        except _CORRUPT as e:
            raise self._corrupt(name, e) from None
        if dtype.hasobject:
            raise IGLearnError(f"{self.path}: field '{name}' stores Python objects; iglearn "
                               f"never unpickles them, save numeric arrays instead")
        if dtype.kind not in kinds or dtype.itemsize == 0:
            expected = "real numbers" if kinds == REAL_KINDS else "text" if kinds == "U" \
                else "a whole number"
            raise IGLearnError(f"{self.path}: field '{name}' has dtype {shown(str(dtype))}; "
                               f"expected {expected}")
        if any(s < 0 for s in shape):
            raise IGLearnError(f"{self.path}: field '{name}' has shape {shape}; the file is "
                               f"corrupt, write it again")
        needed = math.prod(shape) * dtype.itemsize
        if member.file_size - header_length < needed:
            raise IGLearnError(f"{self.path}: field '{name}' is truncated: its shape {shape} "
                               f"needs {needed} bytes but it holds "
                               f"{max(member.file_size - header_length, 0)}; write the log "
                               f"again")
        offset = -1
        if method == zipfile.ZIP_STORED:
            with open(self.path, "rb") as raw:
                raw.seek(member.header_offset)
                local = raw.read(_LOCAL_HEADER.size)
            if len(local) < _LOCAL_HEADER.size or local[:4] != b"PK\x03\x04":
                raise IGLearnError(f"{self.path}: field '{name}' has a damaged zip header; "
                                   f"the file is corrupt, write it again")
            fields = _LOCAL_HEADER.unpack(local)
            offset = member.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]
            offset += header_length
            if offset + needed > self._size:
                raise IGLearnError(f"{self.path}: field '{name}' is truncated; write the log "
                                   f"again")
        self._headers[name] = (shape, fortran, dtype, offset)
        return self._headers[name]

    def array(self, name: str) -> np.ndarray:
        """The whole field, memory-mapped (copy-on-write) when stored uncompressed."""
        if name not in self._arrays:
            shape, fortran, dtype, offset = self._header(name)
            array: np.ndarray
            if offset >= 0 and all(s > 0 for s in shape):
                array = np.memmap(self.path, dtype=dtype, mode="c", offset=offset, shape=shape,
                                  order="F" if fortran else "C")
            else:
                array = self._load(name)
            self._arrays[name] = array
        return self._arrays[name]

    def batches(self, rows: int = BATCH_ROWS, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """Rows in batches; uncompressed members are read with plain file reads (not mapped),
        so streaming a large file keeps only one batch in memory."""
        wanted = fields or self.info.fields
        with open(self.path, "rb") as raw:
            for start in range(0, self.info.n_rows, rows):
                yield start, self._rows(raw, wanted, start, min(rows, self.info.n_rows - start))

    def stored_plainly(self, name: str) -> bool:
        """Whether field ``name`` is stored uncompressed in C order, so that any block of its
        rows is read from the file directly (compressed or Fortran-order members are read
        whole)."""
        _, fortran, _, offset = self._header(name)
        return offset >= 0 and not fortran

    def read_rows(self, start: int, count: int, fields: tuple[str, ...] | None = None,
                  out: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """Rows ``start`` to ``start + count - 1`` of ``fields`` (default all), read as
        :meth:`batches` reads them: any block of rows, in any order, costs one read per field.
        ``out`` may give C-contiguous arrays of ``count`` rows (of the stored types) to read
        the fields stored plainly into."""
        with open(self.path, "rb") as raw:
            return self._rows(raw, fields or self.info.fields, start, count, out or {})

    def _rows(self, raw: BufferedReader, wanted: tuple[str, ...], start: int, count: int,
              out: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        batch = {}
        for name in wanted:
            shape, fortran, dtype, offset = self._header(name)
            if offset >= 0 and not fortran:
                width = int(np.prod(shape[1:], dtype=np.int64))
                raw.seek(offset + start * width * dtype.itemsize)
                target = (out or {}).get(name)
                if target is not None:
                    got = raw.readinto(target.reshape(-1).data.cast("B"))
                    value = target.reshape(-1)[:max(got, 0) // dtype.itemsize]
                else:
                    value = np.fromfile(raw, dtype=dtype, count=count * width)
                if value.size != count * width:
                    raise IGLearnError(f"{self.path}: field '{name}' is truncated; write the "
                                       f"log again")
                batch[name] = _column(name, value.reshape((count, *shape[1:])))
            else:
                batch[name] = _column(name, self.array(name)[start:start + count])
        return batch

    def arrays(self, fields: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
        """Every field (or those in ``fields``); memory-mapped members come back without a
        copy."""
        return {name: self.array(name) for name in self.info.fields
                if fields is None or name in fields}


def _column(name: str, value: np.ndarray) -> np.ndarray:
    if name in MATRIX_FIELDS and value.ndim == 1:
        value = value[:, None]
    return np.asarray(value)


def write_npz(reader: TableReader, tmp: Path) -> None:
    """Write ``reader``'s table to ``tmp`` as an uncompressed ``.npz`` in one pass over it."""
    info = reader.info
    # the members are written here first; a killed run's leftover is recognised by its name
    # (iglearn.files.remove_stale_temporaries)
    work = Path(tempfile.mkdtemp(dir=tmp.parent, prefix=".npz-"))
    try:
        files = {}
        try:
            for name in info.fields:
                shape = ((info.n_rows, info.dims[name]) if name in MATRIX_FIELDS
                         else (info.n_rows,))
                files[name] = open(work / f"{name}.npy", "wb")  # noqa: SIM115
                header = {"descr": np.lib.format.dtype_to_descr(np.dtype(DTYPES[name])),
                          "fortran_order": False, "shape": shape}
                np.lib.format.write_array_header_2_0(files[name], header)
            rows = 0
            for start, batch in reader.validated_batches():
                if start != rows:
                    raise IGLearnError(f"{info.source}: rows arrived out of order")
                for name, value in batch.items():
                    files[name].write(np.ascontiguousarray(value, dtype=DTYPES[name]).data)
                rows += len(batch["context"])
            if rows != info.n_rows:
                raise IGLearnError(f"{info.source}: holds {rows} rows, not the {info.n_rows} "
                                   f"it announced; the file is corrupt, write it again")
        finally:
            for f in files.values():
                f.close()
        np.save(work / "n_actions.npy", np.int64(info.n_actions))
        names = [*info.fields, "n_actions"]
        if info.schema is not None:
            np.save(work / "feature_schema.npy", np.array(json.dumps(info.schema.to_json())))
            names.append("feature_schema")
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
            for name in names:
                z.write(work / f"{name}.npy", arcname=f"{name}.npy")
    finally:
        remove_folder(work)
