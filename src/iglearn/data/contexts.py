"""A set of contexts to act on (a test set, say): contexts, K, and optional correct actions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iglearn.data.logs import (
    _check_rows,
    _shaped,
    check_n_actions,
    field_values,
    same_fields,
)
from iglearn.errors import IGLearnError

if TYPE_CHECKING:
    import pandas as pd

    from iglearn.data.formats.base import FeatureSchema


@dataclass(frozen=True, eq=False)
class ContextSet:
    """Contexts without interactions, validated on construction.

    Attributes:
        context: (n, d_x) float contexts x, finite and within ±MAX_ABS_VALUE.
        n_actions: the number of actions K, in [2, MAX_ACTIONS].
        label: optional (n,) correct action, for measuring accuracy.
        source: a name used in error messages (a file name, say).
        schema: the names of the context's features, read from a file that names them (a
            DSJSON file, a table read through a column mapping); a model fitted on named
            features checks them against its own (:meth:`~iglearn.learners.base.
            PolicyLearner.contexts_of`).

    Two context sets are equal (``==``) when every field holds the same values; a context set
    is not hashable.
    """

    context: np.ndarray
    n_actions: int
    label: np.ndarray | None = None
    source: str = "context set"
    schema: FeatureSchema | None = None

    def __post_init__(self) -> None:
        src = self.source
        k = check_n_actions(self.n_actions, src)
        object.__setattr__(self, "n_actions", k)
        context = _shaped("context", self.context, src)
        if context.shape[0] == 0:
            raise IGLearnError(f"{src}: there are no contexts; it needs at least one row")
        object.__setattr__(self, "context", field_values("context", context, src))
        if self.label is not None:
            label = _shaped("label", self.label, src)
            _check_rows("label", label, context.shape[0], src, unit="context")
            object.__setattr__(self, "label", field_values("label", label, src, k))

    def __len__(self) -> int:
        return int(self.context.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ContextSet):
            return NotImplemented
        return same_fields(self, other)

    __hash__ = None  # type: ignore[assignment]  # equal by value, mutable arrays

    @property
    def context_dim(self) -> int:
        """Dimension d_x of a context."""
        return int(self.context.shape[1])

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, n_actions: int | None = None,
                   source: str = "data frame", *,
                   context: str | Sequence[str] | None = None, label: str | None = None,
                   ignore: str | Sequence[str] | None = None,
                   actions: Sequence[str] | None = None,
                   schema: FeatureSchema | None = None) -> ContextSet:
        """The contexts (and labels, if any) of a pandas DataFrame holding contexts or a whole
        log, read as :meth:`InteractionLog.from_frame <iglearn.data.logs.InteractionLog.
        from_frame>` reads it. With a fitted model's ``schema=model.schema_``, the columns it
        was fitted on are read by their names, and K (and the actions' names) are the
        model's."""
        from iglearn.data.frames import contexts_from_frame, mapping_of
        mapping = mapping_of(schema.columns if schema is not None else None, context=context,
                             label=label, n_actions=n_actions, ignore=ignore,
                             actions=actions if actions is None or isinstance(actions, str)
                             else tuple(actions))
        return contexts_from_frame(frame, mapping, source)


def row_groups(rows: np.ndarray) -> np.ndarray:
    """The group of each row of ``rows`` (n, d): rows with equal values share one (0.0 and -0.0
    alike), numbered 0 to G - 1 in the order of the rows' bytes. Rows are compared as whole
    byte strings, several times faster than ``np.unique(axis=0)``'s column-by-column sort
    (about 12 against 66 ms on 20,000 rows of 64 values; 4 against 92 ms on 10,000 one-hot rows
    of 64)."""
    rows = np.ascontiguousarray(np.asarray(rows) + 0.0)  # -0.0 + 0.0 is 0.0
    whole = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(-1)
    return np.unique(whole, return_inverse=True)[1].reshape(-1)
