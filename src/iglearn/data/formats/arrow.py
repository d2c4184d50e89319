"""numpy arrays to and from Arrow arrays without pandas, for the Parquet and CSV formats.

pyarrow's own conversions (``Array.to_numpy``, ``pa.array``, ``ChunkedArray.to_numpy``)
import pandas to look for pandas values, and ``FixedSizeListArray.flatten`` imports
``pyarrow.compute``: together a tenth of a second or more of a command that reads a log and
writes a model or predictions and needs nothing else from either (``iglearn fit``,
``predict``, ``evaluate``). Numbers are read and written over their buffers instead; any
other type goes through pyarrow's conversion.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def _numbers(kind: pa.DataType) -> bool:
    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind))


def numpy_of(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``values`` (no nulls) as a numpy array: an integer or floating-point array as a
    read-only view of its data buffer (a chunked one of several chunks, their views joined),
    anything else by ``to_numpy``."""
    if isinstance(values, pa.ChunkedArray):
        if not _numbers(values.type) or values.num_chunks == 0:
            return values.to_numpy()
        parts = [numpy_of(chunk) for chunk in values.chunks]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    if not _numbers(values.type):
        return values.to_numpy(zero_copy_only=False)
    dtype = np.dtype(values.type.to_pandas_dtype())
    return np.frombuffer(values.buffers()[1], dtype=dtype, count=len(values),
                         offset=values.offset * dtype.itemsize)


def list_values(column: pa.FixedSizeListArray) -> pa.Array:
    """The entries of a fixed-size list column's rows, in order: the part of its child array
    under them (``flatten`` without ``pyarrow.compute``)."""
    size = column.type.list_size
    return column.values.slice(column.offset * size, len(column) * size)


def arrow_array(value: np.ndarray) -> pa.Array:
    """A one-dimensional numpy array as an Arrow array: an integer or floating-point one over
    the same memory (made contiguous), anything else by ``pa.array``."""
    if value.dtype.kind in "iuf":
        value = np.ascontiguousarray(value)
        return pa.Array.from_buffers(pa.from_numpy_dtype(value.dtype), len(value),
                                     [None, pa.py_buffer(value)])
    return pa.array(value)
