"""Interaction logs: aligned arrays of (context, action, probability, feedback).

``reward`` (the latent reward) and ``label`` (the correct action) are optional and exist for
evaluation only: no IGL learner reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from iglearn.errors import IGLearnError


def _matrix(name: str, value: object, source: str) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise IGLearnError(
            f"{source}: field '{name}' has shape {array.shape}; expected (n, d), "
            f"one row per interaction"
        )
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise IGLearnError(
            f"{source}: field '{name}' has dtype {array.dtype}; expected real numbers"
        )
    array = array.astype(np.float32, copy=False)
    row = first_non_finite_row(array)
    if row is not None:
        raise IGLearnError(
            f"{source}: field '{name}' holds NaN or infinite values (first at row {row}); "
            f"remove or impute those rows"
        )
    return array


def first_non_finite_row(array: np.ndarray, chunk: int = 65536) -> int | None:
    """The first row of ``array`` holding a NaN or an infinity, or None; scans in chunks so
    that a large (or memory-mapped) array needs no full-size temporary."""
    for start in range(0, len(array), chunk):
        finite = np.isfinite(array[start:start + chunk])
        if not finite.all():
            return start + int(np.argwhere(~finite)[0, 0])
    return None


def _vector(name: str, value: object, source: str) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 1:
        raise IGLearnError(
            f"{source}: field '{name}' has shape {array.shape}; expected (n,), one value "
            f"per interaction"
        )
    if not np.issubdtype(array.dtype, np.number) and array.dtype != bool:
        raise IGLearnError(
            f"{source}: field '{name}' has dtype {array.dtype}; expected numbers"
        )
    return array


def _actions(name: str, value: object, n_actions: int, source: str) -> np.ndarray:
    array = _vector(name, value, source)
    if not np.issubdtype(array.dtype, np.integer) and (
            not np.isfinite(array).all() or not np.all(np.mod(array, 1) == 0)):
            raise IGLearnError(
                f"{source}: field '{name}' holds non-integer values; actions must be "
                f"integers in [0, {n_actions})"
            )
    array = array.astype(np.int64)
    if array.size and (array.min() < 0 or array.max() >= n_actions):
        bad = int(array[(array < 0) | (array >= n_actions)][0])
        raise IGLearnError(
            f"{source}: field '{name}' holds {bad}, outside [0, {n_actions}); "
            f"fix the value or set n_actions to the true number of actions"
        )
    return array


def _check_rows(name: str, array: np.ndarray, n: int, source: str,
                unit: str = "interaction") -> None:
    """An error unless ``array`` has one row per ``unit`` (``n`` rows, as 'context' has)."""
    if array.shape[0] != n:
        raise IGLearnError(f"{source}: field '{name}' has {array.shape[0]} rows but 'context' "
                           f"has {n}; every field needs one row per {unit}")


def _n_actions(value: object, source: str) -> int:
    """The number of actions K as an int, or an error naming the fix."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 2:
        raise IGLearnError(f"{source}: n_actions is {value!r}; it must be an integer >= 2")
    return int(value)


@dataclass(frozen=True)
class InteractionLog:
    """A batch of logged interactions, validated on construction.

    Attributes:
        context: (n, d_x) float contexts x.
        action: (n,) int actions a in [0, n_actions).
        probability: (n,) float in (0, 1], the logging policy's probability of the logged action.
        feedback: (n, d_y) float feedback vectors y.
        n_actions: the number of actions K.
        reward: optional (n,) latent reward in [0, 1], for evaluation only.
        label: optional (n,) correct action, for evaluation only.
        source: a name used in error messages (a file name, say).
    """

    context: np.ndarray
    action: np.ndarray
    probability: np.ndarray
    feedback: np.ndarray
    n_actions: int
    reward: np.ndarray | None = None
    label: np.ndarray | None = None
    source: str = "interaction log"

    def __post_init__(self) -> None:
        src = self.source
        k = _n_actions(self.n_actions, src)
        object.__setattr__(self, "n_actions", k)
        context = _matrix("context", self.context, src)
        n = context.shape[0]
        if n == 0:
            raise IGLearnError(f"{src}: the log is empty; it needs at least one interaction")
        feedback = _matrix("feedback", self.feedback, src)
        action = _actions("action", self.action, k, src)
        probability = _vector("probability", self.probability, src).astype(np.float64)
        for name, array in (("feedback", feedback), ("action", action),
                            ("probability", probability)):
            _check_rows(name, array, n, src)
        if not np.all((probability > 0) & (probability <= 1)):
            bad = probability[~((probability > 0) & (probability <= 1))][0]
            raise IGLearnError(
                f"{src}: field 'probability' holds {bad}, outside (0, 1]; it must be the "
                f"logging policy's probability of the logged action"
            )
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "feedback", feedback)
        object.__setattr__(self, "action", action)
        object.__setattr__(self, "probability", probability)
        if self.reward is not None:
            reward = _vector("reward", self.reward, src).astype(np.float32)
            _check_rows("reward", reward, n, src)
            if not np.all((reward >= 0) & (reward <= 1)):
                raise IGLearnError(
                    f"{src}: field 'reward' holds values outside [0, 1]; the latent reward "
                    f"is binary (or a probability)"
                )
            object.__setattr__(self, "reward", reward)
        if self.label is not None:
            label = _actions("label", self.label, k, src)
            _check_rows("label", label, n, src)
            object.__setattr__(self, "label", label)

    def __len__(self) -> int:
        return int(self.context.shape[0])

    @property
    def context_dim(self) -> int:
        """Dimension d_x of a context."""
        return int(self.context.shape[1])

    @property
    def feedback_dim(self) -> int:
        """Dimension d_y of a feedback vector."""
        return int(self.feedback.shape[1])

    @property
    def uniform_weight(self) -> np.ndarray:
        """Importance weights (1/K) / p that re-weight the log to the uniform policy."""
        return (1.0 / self.n_actions) / self.probability

    def subset(self, index: np.ndarray) -> InteractionLog:
        """The interactions at ``index`` (an integer array or a boolean mask)."""
        values = {}
        for f in fields(self):
            value = getattr(self, f.name)
            values[f.name] = value[index] if isinstance(value, np.ndarray) else value
        return InteractionLog(**values)
