"""iglearn.data.formats.arrow: numpy to and from Arrow over the arrays' buffers, the same
values pyarrow's own conversions give."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from iglearn.data.formats.arrow import arrow_array, list_values, numpy_of


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.uint8,
                                   np.float16])
def test_numbers_read_as_views_of_their_buffers_at_any_offset(dtype):
    values = np.arange(20).astype(dtype)
    array = pa.array(values)
    for part in (array, array.slice(3), array.slice(5, 7)):
        got = numpy_of(part)
        assert got.dtype == dtype and not got.flags.owndata  # a view, not a copy
        np.testing.assert_array_equal(got, part.to_numpy())


def test_a_chunked_column_joins_its_chunks_and_other_types_convert_as_pyarrow_does():
    chunked = pa.chunked_array([pa.array([1.5, 2.5]), pa.array([3.5]).slice(0, 1),
                                pa.array([4.5, 5.5, 6.5]).slice(1)])
    np.testing.assert_array_equal(numpy_of(chunked), [1.5, 2.5, 3.5, 5.5, 6.5])
    np.testing.assert_array_equal(numpy_of(pa.chunked_array([pa.array([7])])), [7])
    flags = pa.array([True, False, True])
    np.testing.assert_array_equal(numpy_of(flags), [True, False, True])
    np.testing.assert_array_equal(numpy_of(pa.chunked_array([flags, flags])), [1, 0, 1] * 2)


def test_the_rows_of_a_fixed_size_list_column_are_their_entries():
    column = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12, dtype=np.float32)), 3)
    for rows in (column, column.slice(1), column.slice(1, 2)):
        values = list_values(rows)
        assert values.equals(rows.flatten())
        np.testing.assert_array_equal(numpy_of(values).reshape(len(rows), 3),
                                      np.stack(rows.to_pylist()))


def test_numpy_arrays_become_the_arrow_arrays_pa_array_makes():
    for values in (np.arange(6, dtype=np.int64), np.linspace(0, 1, 7, dtype=np.float32),
                   np.arange(12, dtype=np.float64)[::3],  # not contiguous
                   np.array([True, False])):
        assert arrow_array(values).equals(pa.array(values))
