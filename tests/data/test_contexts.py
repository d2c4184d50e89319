"""Contexts: grouping rows of equal values."""

import numpy as np

from iglearn.data.contexts import row_groups


def test_row_groups_group_rows_of_equal_values():
    contexts = np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.5]],
                        dtype=np.float32)
    groups = row_groups(contexts)
    assert groups[0] == groups[1] == groups[3]
    assert len({groups[0], groups[2], groups[4]}) == 3
    assert sorted(set(groups.tolist())) == [0, 1, 2]  # numbered 0 to G - 1
