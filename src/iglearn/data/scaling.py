"""Scale-free inputs: the one preprocessing step every learner applies to contexts and
feedback before its models see them, with statistics of the log it was fitted on.

A :class:`Standardiser` holds, per column, a mean and a scale of the contexts and of the
feedback, and maps x to (x - mean) / scale. A learner takes the statistics of its training
log when it fits (:meth:`Standardiser.of_log`, or for a log streamed from disk
:meth:`Standardiser.of_stream`, one extra pass over it), keeps them with its models (a model
folder's ``model.json`` records them, :meth:`Standardiser.to_dict`) and applies them wherever
its models read a context or a feedback vector: ``predict``, ``predict_proba``, ``evaluate``,
the service's decisions, the coba plug-in. A raw log (voxel intensities around 35 with a
spread of a few hundredths, say) then fits as its standardised copy would, and the weight
decay and the initialisations, which assume inputs of unit scale, mean what they say.

The statistics:

- contexts: unweighted mean and standard deviation of the log's contexts. A context is drawn
  before the action, so its law does not depend on the logging policy;
- feedback: mean and standard deviation weighted by the importance weight 1/p of each row, so
  that they describe the feedback of uniform play, whatever policy logged the log (under
  uniform logging every row weighs the same);
- a column whose standard deviation is 0 (a constant column; below 1e-6 of its mean's size, or
  1e-12, which is rounding) has scale 1: it is centred, never divided by zero.

The moments are accumulated block by block in float64 with the parallel update of Chan et al.
(Welford's update for a block of rows), so the statistics of a log in memory and of the same
log streamed agree up to rounding. The online learners accumulate them the same way over the
interactions they have seen when their first fit is due (the warm-up) and keep them from then
on (:attr:`Standardiser.method` says how the statistics were taken).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from iglearn.errors import IGLearnError, shown

if TYPE_CHECKING:
    from iglearn.data.logs import InteractionLog
    from iglearn.data.stream import Block, LogStream

METHODS = ("log", "stream", "warm-up")
"""How a standardiser's statistics were taken: from the whole log in memory, in one extra
pass over a log streamed from disk, or from an online learner's interactions before its
first fit."""

_CONSTANT = 1e-6
"""A column whose standard deviation is at most this fraction of its mean's size (or 1e-12)
is constant: its scale is 1."""


class Moments:
    """Running weighted mean and sum of squared deviations per column (float64), updated a
    block of rows at a time (Chan et al.'s parallel form of Welford's update)."""

    def __init__(self, dim: int):
        self.weight = 0.0
        self.mean = np.zeros(dim, np.float64)
        self.squares = np.zeros(dim, np.float64)

    def add(self, values: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Add rows ``values`` (n, dim), each of weight ``weights`` (n,) (default 1)."""
        values = np.asarray(values, np.float64)
        if len(values) == 0:
            return
        w = np.ones(len(values)) if weights is None else np.asarray(weights, np.float64)
        total = float(w.sum())
        mean = (w @ values) / total
        squares = w @ np.square(values - mean)
        if self.weight == 0.0:
            self.weight, self.mean, self.squares = total, mean, squares
            return
        delta = mean - self.mean
        combined = self.weight + total
        self.mean = self.mean + delta * (total / combined)
        self.squares = self.squares + squares + np.square(delta) * (self.weight * total
                                                                    / combined)
        self.weight = combined

    def statistics(self) -> tuple[np.ndarray, np.ndarray]:
        """(mean, scale): the scale is the standard deviation, or 1 for a constant column."""
        std = np.sqrt(np.maximum(self.squares / max(self.weight, 1e-300), 0.0))
        constant = std <= np.maximum(_CONSTANT * np.abs(self.mean), 1e-12)
        return self.mean.copy(), np.where(constant, 1.0, std)


@dataclass(frozen=True, eq=False)
class Standardiser:
    """Per-column means and scales of the contexts and the feedback (float64 arrays); see
    the module docstring. ``apply`` and ``apply_feedback`` map rows to (x - mean) / scale in
    float32."""

    context_mean: np.ndarray
    """Mean of each context column, shape (d_x,)."""
    context_scale: np.ndarray
    """Scale of each context column (its standard deviation, 1 if constant), shape (d_x,)."""
    feedback_mean: np.ndarray
    """Importance-weighted mean of each feedback column, shape (d_y,) ((0,): no feedback)."""
    feedback_scale: np.ndarray
    """Importance-weighted scale of each feedback column, shape (d_y,)."""
    method: str = "log"
    """How the statistics were taken: one of :data:`METHODS`."""

    def __post_init__(self) -> None:
        for name in ("context_mean", "context_scale", "feedback_mean", "feedback_scale"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), np.float64))
        # float32 copies for apply: the arithmetic the models run in
        object.__setattr__(self, "_context", (self.context_mean.astype(np.float32),
                                              (1.0 / self.context_scale).astype(np.float32)))
        object.__setattr__(self, "_feedback", (self.feedback_mean.astype(np.float32),
                                               (1.0 / self.feedback_scale).astype(np.float32)))

    # -- taking the statistics -----------------------------------------------------------
    @classmethod
    def of_arrays(cls, context: np.ndarray, feedback: np.ndarray | None = None,
                  probability: np.ndarray | None = None, method: str = "log") -> Standardiser:
        """The statistics of contexts (n, d_x) and feedback (n, d_y) (none: no feedback is
        standardised), the feedback weighted by 1/``probability`` when given."""
        return cls.of_blocks([{"context": np.asarray(context),
                               **({} if feedback is None else {"feedback": feedback}),
                               **({} if probability is None else {"probability": probability})}],
                             np.asarray(context).shape[1],
                             0 if feedback is None else np.asarray(feedback).reshape(
                                 len(context), -1).shape[1], method)

    @classmethod
    def of_log(cls, log: InteractionLog, feedback: bool = True) -> Standardiser:
        """The statistics of a log in memory: contexts, and (unless ``feedback`` is False)
        feedback weighted by 1/p."""
        return cls.of_arrays(log.context, log.feedback if feedback else None, log.probability,
                             "log")

    @classmethod
    def of_stream(cls, stream: LogStream, feedback: bool = True) -> Standardiser:
        """The statistics of a log streamed from disk, in one pass over it (its chunks: the
        memory of a block, not of the log); equal to :meth:`of_log` of the same log up to
        rounding."""
        fields = ("context", "probability", "feedback") if feedback else ("context",)
        return cls.of_blocks(stream.chunks(fields), stream.context_dim,
                             stream.feedback_dim if feedback else 0, "stream")

    @classmethod
    def of_blocks(cls, blocks: Iterable[Block], context_dim: int, feedback_dim: int,
                  method: str) -> Standardiser:
        """The statistics accumulated over blocks of rows (fields ``context`` and, when
        ``feedback_dim`` > 0, ``feedback``, weighted by 1/``probability`` if the block has
        it)."""
        contexts, feedback = Moments(context_dim), Moments(feedback_dim)
        for block in blocks:
            contexts.add(block["context"])
            if feedback_dim:
                p = block.get("probability")
                y = np.asarray(block["feedback"]).reshape(len(block["context"]), -1)
                feedback.add(y, None if p is None else 1.0 / np.asarray(p, np.float64))
        (mx, sx), (my, sy) = contexts.statistics(), feedback.statistics()
        return cls(mx, sx, my, sy, method)

    @classmethod
    def identity(cls, context_dim: int, feedback_dim: int = 0) -> Standardiser:
        """Means 0 and scales 1: what a model saved without statistics applies."""
        return cls(np.zeros(context_dim), np.ones(context_dim), np.zeros(feedback_dim),
                   np.ones(feedback_dim), "log")

    # -- applying them -------------------------------------------------------------------
    @property
    def context_dim(self) -> int:
        """d_x."""
        return len(self.context_mean)

    @property
    def feedback_dim(self) -> int:
        """d_y (0 when the feedback is not standardised)."""
        return len(self.feedback_mean)

    def apply(self, context: np.ndarray) -> np.ndarray:
        """Standardised contexts, float32 of the shape given ((n, d_x) or (d_x,))."""
        mean, inverse = self._context  # type: ignore[attr-defined]
        return _scaled(context, mean, inverse, "context")

    def apply_feedback(self, feedback: np.ndarray) -> np.ndarray:
        """Standardised feedback vectors, float32 (n, d_y); unchanged (as float32) when this
        standardiser holds no feedback statistics."""
        if not self.feedback_dim:
            return np.asarray(feedback, np.float32)
        mean, inverse = self._feedback  # type: ignore[attr-defined]
        return _scaled(feedback, mean, inverse, "feedback")

    def apply_block(self, block: Block) -> Block:
        """A block of rows with its ``context`` and ``feedback`` (those it has)
        standardised; the other fields as they were."""
        out = dict(block)
        if "context" in out and len(out["context"]):
            out["context"] = self.apply(out["context"])
        if "feedback" in out and self.feedback_dim:
            out["feedback"] = self.apply_feedback(out["feedback"])
        return out

    def apply_log(self, log: InteractionLog) -> InteractionLog:
        """The log with its contexts and feedback standardised (a copy)."""
        from iglearn.data.logs import InteractionLog

        return InteractionLog(self.apply(log.context), log.action, log.probability,
                              self.apply_feedback(log.feedback), log.n_actions, log.reward,
                              log.label, log.source, log.definitely_bad)

    # -- model.json ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (lists of floats), read back by :meth:`from_dict`."""
        return {"method": self.method,
                "context_mean": self.context_mean.tolist(),
                "context_scale": self.context_scale.tolist(),
                "feedback_mean": self.feedback_mean.tolist(),
                "feedback_scale": self.feedback_scale.tolist()}

    @classmethod
    def from_dict(cls, record: object, where: str, context_dim: int,
                  feedback_dim: int | None = None) -> Standardiser:
        """The standardiser a :meth:`to_dict` record describes, checked: ``context_dim``
        finite means and positive finite scales, and ``feedback_dim`` of each (None: any
        number, 0 included). Raises IGLearnError naming ``where`` (the file) and the field."""
        def damaged(field: str, value: object, expected: str) -> IGLearnError:
            return IGLearnError(f"{where}: field 'standardiser{field}' is {shown(value)}; "
                                f"expected {expected}; the model is damaged, fit again")

        if not isinstance(record, dict):
            raise damaged("", record, "an object of means and scales")
        method = record.get("method")
        if method not in METHODS:
            raise damaged(".method", method, f"one of {', '.join(METHODS)}")
        values: dict[str, np.ndarray] = {}
        for name in ("context_mean", "context_scale", "feedback_mean", "feedback_scale"):
            value: Any = record.get(name)
            want = context_dim if name.startswith("context") else feedback_dim
            ok = (isinstance(value, list)
                  and all(isinstance(v, int | float) and not isinstance(v, bool)
                          and math.isfinite(v) for v in value)
                  and (want is None or len(value) == want))
            if ok and name.endswith("scale"):
                ok = all(v > 0 for v in value)
            if not ok or (name == "feedback_scale"
                          and len(value) != len(values["feedback_mean"])):
                size = "as many" if want is None else str(want)
                kind = "positive finite numbers" if name.endswith("scale") else "finite numbers"
                raise damaged(f".{name}", value if not isinstance(value, list)
                              else f"a list of {len(value)}", f"a list of {size} {kind}")
            values[name] = np.asarray(value, np.float64)
        return cls(values["context_mean"], values["context_scale"], values["feedback_mean"],
                   values["feedback_scale"], method)


def _scaled(rows: np.ndarray, mean: np.ndarray, inverse: np.ndarray, name: str) -> np.ndarray:
    rows = np.asarray(rows, np.float32)
    if rows.shape[-1:] != mean.shape:
        raise IGLearnError(f"the {name} vectors have {rows.shape[-1] if rows.ndim else 0} "
                           f"values but the model was fitted on {len(mean)}; give vectors of "
                           f"the fitted dimension")
    return (rows - mean) * inverse


def standardiser_of(log: InteractionLog | LogStream, feedback: bool = True) -> Standardiser:
    """The statistics of a log in memory (:meth:`Standardiser.of_log`) or streamed
    (:meth:`Standardiser.of_stream`, one extra pass); with ``feedback`` False, of the
    contexts only (a learner that does not read the feedback)."""
    from iglearn.data.stream import LogStream

    if isinstance(log, LogStream):
        return Standardiser.of_stream(log, feedback)
    return Standardiser.of_log(log, feedback)
