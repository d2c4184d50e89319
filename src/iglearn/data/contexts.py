"""A set of contexts to act on (a test set, say): contexts, K, and optional correct actions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iglearn.data.logs import _check_rows, _shaped, check_n_actions, field_values
from iglearn.errors import IGLearnError


@dataclass(frozen=True)
class ContextSet:
    """Contexts without interactions, validated on construction.

    Attributes:
        context: (n, d_x) float contexts x, finite and within ±MAX_ABS_VALUE.
        n_actions: the number of actions K, in [2, MAX_ACTIONS].
        label: optional (n,) correct action, for measuring accuracy.
        source: a name used in error messages (a file name, say).
    """

    context: np.ndarray
    n_actions: int
    label: np.ndarray | None = None
    source: str = "context set"

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

    @property
    def context_dim(self) -> int:
        """Dimension d_x of a context."""
        return int(self.context.shape[1])
