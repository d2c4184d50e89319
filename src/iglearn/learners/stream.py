"""Fits on logs larger than memory: a :class:`~iglearn.data.stream.LogStream` as the
:class:`~iglearn.learners.trials.Source` a fit reads, and what learners ask of a log whether it
is in memory or streamed.

Every learner trained by gradient (``BatchIGL``, ``AIIGL``, ``Supervised``,
``ContextualBandit``) fits a stream as it fits a log in memory: the training loop
(:func:`~iglearn.learners.training.run_stage`) takes its mini-batches from the source's
``epoch`` and every full pass (the corrector's statistic, the indicator) is a sum over the
source's ``chunks``. A stream is one trial: ``fit_many`` fits logs in memory only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from iglearn.data.logs import InteractionLog, importance_weight_sums
from iglearn.data.scaling import Standardiser
from iglearn.data.stream import Block, LogStream
from iglearn.errors import IGLearnError
from iglearn.learners.trials import Batch, Source, Trials, field_tensor, reducer_of

AnyLog = InteractionLog | LogStream
"""A log a learner fits: in memory or streamed from disk."""


class StreamTrials:
    """One trial streamed from a :class:`~iglearn.data.stream.LogStream`: its ``signal``
    field ('feedback', 'reward' or 'label') is what the learner reads. Each epoch draws the
    stream's shuffle from the trial's torch generator, so a seeded fit is reproducible. With
    a ``standardiser``, every block's contexts and feedback are standardised as they are
    read."""

    def __init__(self, log: LogStream, signal: str, standardiser: Standardiser | None = None):
        self.log, self.signal, self.standardiser = log, signal, standardiser
        self.reducer = reducer_of(log)  # a share of a data-parallel fit's log: its reducer
        self._fields = ("context", "action", "probability", signal)

    @property
    def n(self) -> int:
        """Interactions in the log."""
        return len(self.log)

    def __len__(self) -> int:
        """One trial."""
        return 1

    @property
    def context_dim(self) -> int:
        """Dimension of a context."""
        return self.log.context_dim

    @property
    def signal_dim(self) -> int:
        """Dimension of the signal (1 for a reward or a label)."""
        return self.log.feedback_dim if self.signal == "feedback" else 1

    def select(self, trials: Sequence[int]) -> StreamTrials:
        """This trial (the only one, number 0)."""
        if list(trials) != [0]:
            raise IGLearnError(f"a streamed log is one trial; trials {list(trials)} do not "
                               f"exist")
        return self

    def epoch(self, batch_size: int, generators: Sequence[torch.Generator]) -> Iterator[Batch]:
        """Shuffled mini-batches (:meth:`~iglearn.data.stream.LogStream.epoch`), shaped
        (1, batch, ...); the shuffle's numpy generator is seeded from ``generators[0]``."""
        if len(generators) != 1:
            raise IGLearnError("a streamed log is one trial; fit it with one learner")
        seed = int(torch.randint(0, 2**62, (1,), generator=generators[0]))
        for block in self.log.epoch(batch_size, np.random.default_rng(seed), self._fields):
            batch = self._batch(block)
            yield Batch(*(value[None] for value in batch))

    def chunks(self, size: int = 65536, context: bool = True) -> Iterator[Batch]:
        """The log in file order, a block at a time (``size`` is the stream's block size);
        actions and probabilities of shape (1, rows), contexts and signals as one-tensor
        lists; with ``context`` False the contexts are not read (empty)."""
        fields = self._fields if context else self._fields[1:]
        for block in self.log.chunks(fields):
            if not context:
                block = {**block, "context": np.empty((0, self.context_dim), np.float32)}
            x, a, p, s = self._batch(block)
            yield Batch([x], a[None], p[None], [s])  # type: ignore[arg-type]

    def _batch(self, block: Block) -> Batch:
        if self.standardiser is not None:
            block = self.standardiser.apply_block(block)
        return Batch(*(field_tensor(block[name]) for name in self._fields))


def training_data(logs: Sequence[AnyLog], signal: str,
                  standardisers: Sequence[Standardiser | None] | None = None) -> Source:
    """The source a fit reads: :class:`~iglearn.learners.trials.Trials` of logs in memory, or
    :class:`StreamTrials` of one streamed log; with ``standardisers`` (one per log, None:
    that log as it is), the contexts and feedback the models read are standardised
    (:mod:`iglearn.data.scaling`): copies of a log in memory, block by block for a stream."""
    scalers = list(standardisers) if standardisers is not None else [None] * len(logs)
    if any(isinstance(log, LogStream) for log in logs):
        if len(logs) != 1:
            raise IGLearnError("fit_many fits logs in memory; fit a streamed log on its own "
                               "(learner.fit(stream))")
        stream = logs[0]
        assert isinstance(stream, LogStream)
        return StreamTrials(stream, signal, scalers[0])
    in_memory = [log for log in logs if isinstance(log, InteractionLog)]
    if all(scaler is None for scaler in scalers):
        return Trials.from_logs(in_memory, signal)
    fields: list[list[torch.Tensor]] = [[], [], [], []]
    for log, scaler in zip(in_memory, scalers, strict=True):
        x, y = log.context, getattr(log, signal)
        if scaler is not None:
            x = scaler.apply(x)
            y = scaler.apply_feedback(y) if signal == "feedback" else y
        for column, value in zip(fields, (x, log.action, log.probability, y), strict=True):
            column.append(field_tensor(value))
    return Trials(*fields)



def action_counts(log: AnyLog) -> np.ndarray:
    """Interactions of each action in ``log``, shape (K,)."""
    if isinstance(log, LogStream):
        return log.action_counts()
    return np.bincount(np.asarray(log.action), minlength=log.n_actions)


def weight_sums(log: AnyLog) -> np.ndarray:
    """Per action, the sums of the importance weights 1{A = a} / p of ``log`` and of their
    squares, shape (2, K) (:func:`~iglearn.data.logs.importance_weight_sums`)."""
    if isinstance(log, LogStream):
        return log.weight_sums()
    return importance_weight_sums(np.asarray(log.action), log.probability, log.n_actions)


def min_probability(log: AnyLog) -> float:
    """The smallest logged probability of ``log`` (1 / the largest importance weight)."""
    if isinstance(log, LogStream):
        return log.min_probability
    return float(np.min(log.probability))


def has_field(log: AnyLog, name: str) -> bool:
    """Whether ``log`` holds the optional field ``name`` ('reward', 'label')."""
    if isinstance(log, LogStream):
        return name in log.fields
    return getattr(log, name, None) is not None
