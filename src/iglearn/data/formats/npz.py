"""NumPy ``.npz``: one array per field plus a scalar ``n_actions``.

iglearn writes uncompressed archives, whose members it memory-maps when reading, so a
large log is never copied into memory by the reader; compressed members (``np.savez_compressed``)
are read into memory. Loading never unpickles (``allow_pickle=False``).
"""

from __future__ import annotations

import json
import shutil
import struct
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from iglearn.data.formats.base import (
    BATCH_ROWS,
    DTYPES,
    MATRIX_FIELDS,
    FeatureSchema,
    TableInfo,
    TableReader,
    check_n_actions,
    required_fields,
)
from iglearn.errors import IGLearnError

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")


class NpzReader(TableReader):
    """Reads an ``.npz`` log or context set, memory-mapping uncompressed members."""

    def __init__(self, path: Path):
        self.path = path
        source = str(path)
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as e:
            raise IGLearnError(f"{source}: not a readable .npz archive ({e}); the file is "
                               f"truncated or corrupt, write it again") from e
        members = {name[:-4]: info for name in self._zip.namelist()
                   if name.endswith(".npy") and (info := self._zip.getinfo(name))}
        if "n_actions" not in members:
            raise IGLearnError(f"{source}: missing field 'n_actions' (the number of actions K); "
                               f"add a scalar array n_actions to the archive")
        k = check_n_actions(self._load("n_actions", members["n_actions"]), source)
        fields = required_fields(set(members), source)
        self._members = {name: members[name] for name in fields}
        self._arrays: dict[str, np.ndarray] = {}
        shapes = {name: self._header(name)[0] for name in fields}
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
            text = self._load("feature_schema", members["feature_schema"])
            try:
                record = json.loads(str(text.reshape(()).item()))
            except (ValueError, json.JSONDecodeError) as e:
                raise IGLearnError(f"{source}: field 'feature_schema' is not valid JSON; "
                                   f"remove it or write the log again") from e
            schema = FeatureSchema.from_json(record, f"{source} (feature_schema)")
        self.info = TableInfo(source, n, k, fields, dims, schema)

    def _load(self, name: str, member: zipfile.ZipInfo) -> np.ndarray:
        try:
            with self._zip.open(member) as f:
                return np.lib.format.read_array(f, allow_pickle=False)
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
            raise IGLearnError(f"{self.path}: field '{name}' cannot be read ({e}); the file is "
                               f"truncated or corrupt, or stores Python objects; write it "
                               f"again with numeric arrays") from e

    def _header(self, name: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
        """(shape, fortran order, dtype, byte offset of the data in the file or -1)."""
        member = self._members[name]
        try:
            with self._zip.open(member) as f:
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
                header_length = f.tell() if hasattr(f, "tell") else None
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
            raise IGLearnError(f"{self.path}: field '{name}' cannot be read ({e}); the file is "
                               f"truncated or corrupt; write it again") from e
        if dtype.hasobject:
            raise IGLearnError(f"{self.path}: field '{name}' stores Python objects; iglearn "
                               f"never unpickles them, save numeric arrays instead")
        offset = -1
        if member.compress_type == zipfile.ZIP_STORED and header_length is not None:
            with open(self.path, "rb") as raw:
                raw.seek(member.header_offset)
                local = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
            offset = member.header_offset + _LOCAL_HEADER.size + local[-2] + local[-1]
            offset += header_length
            needed = int(np.prod(shape)) * dtype.itemsize
            if member.file_size - header_length < needed:
                raise IGLearnError(f"{self.path}: field '{name}' is truncated; write the log "
                                   f"again")
        return shape, fortran, dtype, offset

    def array(self, name: str) -> np.ndarray:
        """The whole field, memory-mapped (copy-on-write) when stored uncompressed."""
        if name not in self._arrays:
            shape, fortran, dtype, offset = self._header(name)
            if offset >= 0 and all(s > 0 for s in shape):
                array = np.memmap(self.path, dtype=dtype, mode="c", offset=offset, shape=shape,
                                  order="F" if fortran else "C")
            else:
                array = self._load(name, self._members[name])
            if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
                raise IGLearnError(f"{self.path}: field '{name}' has dtype {array.dtype}; "
                                   f"expected numbers")
            self._arrays[name] = array
        return self._arrays[name]

    def batches(self, rows: int = BATCH_ROWS, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """Rows in batches; uncompressed members are read with plain file reads (not mapped),
        so streaming a large file keeps only one batch in memory."""
        wanted = fields or self.info.fields
        direct, arrays = {}, {}
        for name in wanted:
            shape, fortran, dtype, offset = self._header(name)
            if offset >= 0 and not fortran:
                width = int(np.prod(shape[1:], dtype=np.int64))
                direct[name] = (offset, dtype, width, shape[1:])
            else:
                arrays[name] = self.array(name)
        with open(self.path, "rb") as raw:
            for start in range(0, self.info.n_rows, rows):
                count = min(rows, self.info.n_rows - start)
                batch = {}
                for name in wanted:
                    if name in direct:
                        offset, dtype, width, tail = direct[name]
                        raw.seek(offset + start * width * dtype.itemsize)
                        value = np.fromfile(raw, dtype=dtype, count=count * width)
                        if value.size != count * width:
                            raise IGLearnError(f"{self.path}: field '{name}' is truncated; "
                                               f"write the log again")
                        batch[name] = _column(name, value.reshape((count, *tail)))
                    else:
                        batch[name] = _column(name, arrays[name][start:start + count])
                yield start, batch

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
        shutil.rmtree(work, ignore_errors=True)
