"""A set of contexts to act on (a test set, say): contexts, K, and optional correct actions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iglearn.data.logs import _actions, _check_rows, _matrix, _n_actions
from iglearn.errors import IGLearnError


@dataclass(frozen=True)
class ContextSet:
    """Contexts without interactions, validated on construction.

    Attributes:
        context: (n, d_x) float contexts x.
        n_actions: the number of actions K.
        label: optional (n,) correct action, for measuring accuracy.
        source: a name used in error messages (a file name, say).
    """

    context: np.ndarray
    n_actions: int
    label: np.ndarray | None = None
    source: str = "context set"

    def __post_init__(self) -> None:
        src = self.source
        object.__setattr__(self, "n_actions", _n_actions(self.n_actions, src))
        context = _matrix("context", self.context, src)
        if context.shape[0] == 0:
            raise IGLearnError(f"{src}: there are no contexts; it needs at least one row")
        object.__setattr__(self, "context", context)
        if self.label is not None:
            label = _actions("label", self.label, self.n_actions, src)
            _check_rows("label", label, context.shape[0], src, unit="context")
            object.__setattr__(self, "label", label)

    def __len__(self) -> int:
        return int(self.context.shape[0])

    @property
    def context_dim(self) -> int:
        """Dimension d_x of a context."""
        return int(self.context.shape[1])
