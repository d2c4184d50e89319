"""The data of T trials fitted side by side, and the models that run them.

A fit runs T trials at once (T = 1 for a single fit). Each trial has its own log; the logs are
never copied into one tensor: :class:`Trials` holds each field as T tensors (views of the logs'
arrays), and only a mini-batch gathers the T trials' rows into one (T, batch, ...) tensor
(:meth:`Trials.batch`). :func:`side_by_side` runs T models of one class as one module with a
leading trial axis (:mod:`iglearn.models.stacked`) and writes the trained weights back.

The learners write their per-trial mathematics once, on a :class:`Batch` whose fields carry the
trial axis in front; every objective reduces over the last (sample) axis, so it gives one value
per trial.

A fit reads its data through the :class:`Source` interface: shuffled mini-batches
(``epoch``) and full passes (``chunks``). :class:`Trials` is the source of logs in memory;
:class:`~iglearn.learners.stream.StreamTrials` streams one log from disk.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar, cast

import numpy as np
import torch
from torch import nn

from iglearn.data.logs import InteractionLog
from iglearn.data.stream import batch_sizes
from iglearn.models.stacked import stack, unstack_into


def as_tensor(array: np.ndarray) -> torch.Tensor:
    """A float32 torch view of a numpy array (no copy when already float32)."""
    return tensor_view(np.ascontiguousarray(array, dtype=np.float32))


def field_tensor(array: np.ndarray) -> torch.Tensor:
    """A field as a torch tensor: floats as float32 (:func:`as_tensor`), integers as they
    are."""
    if np.issubdtype(array.dtype, np.floating):
        return as_tensor(array)
    return tensor_view(np.ascontiguousarray(array))


def tensor_view(array: np.ndarray) -> torch.Tensor:
    """``torch.from_numpy`` of a contiguous array, read-only ones included (pandas' arrays
    under copy-on-write, a memory-mapped ``.npz`` member), without a copy: a fit never writes
    into its log's tensors, so torch's warning about non-writable arrays (shown to the user
    as if from their own code) is not raised."""
    if array.flags.writeable:
        return torch.from_numpy(array)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The given NumPy array is not writable")
        return torch.from_numpy(array)


class Batch(NamedTuple):
    """Interactions as tensors: contexts x, actions a, logging probabilities p, and the signal
    the learner reads (feedback y, reward r or label). Fields have a leading trial axis in a fit
    (shape (T, n, ...)), none for one log."""

    context: torch.Tensor
    action: torch.Tensor
    probability: torch.Tensor
    signal: torch.Tensor


class Source(Protocol):
    """The data of a fit, T trials of n interactions each, as the training loop and the full
    passes read them."""

    @property
    def n(self) -> int:
        """Interactions in each trial."""
        ...

    def __len__(self) -> int:
        """The number of trials T."""
        ...

    @property
    def context_dim(self) -> int:
        """Dimension of a context."""
        ...

    @property
    def signal_dim(self) -> int:
        """Dimension of the signal (1 for a reward or a label)."""
        ...

    def select(self, trials: Sequence[int]) -> Source:
        """The trials numbered ``trials``."""
        ...

    def epoch(self, batch_size: int, generators: Sequence[torch.Generator]) -> Iterator[Batch]:
        """One pass over every trial's rows in mini-batches of ``batch_size`` (the last two
        sized by :func:`~iglearn.data.stream.batch_sizes`), trial t shuffled with
        ``generators[t]``; fields of shape (T, batch, ...)."""
        ...

    def chunks(self, size: int = 65536, context: bool = True) -> Iterator[Batch]:
        """Every row of every trial once, in order, for full passes: actions and
        probabilities as (T, rows) tensors, contexts and signals as lists of T tensors; with
        ``context`` False the contexts may be left out (empty)."""
        ...


class Reducer:
    """Sums across the processes of one fit (:mod:`iglearn.learners.distributed`: the workers
    of a data-parallel fit, each reading its share of the log). A fit in one process uses
    this class itself, under which every reduction is the identity; the learners call it at
    the few places where a fit's processes must agree: the gradients of each step, the
    plateau's loss, and the sums of every full pass."""

    size = 1
    """The number of processes."""

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` summed over the processes (every process gets the sum)."""
        return tensor

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Every process's ``tensor``, stacked in the processes' order (shape (size, ...))."""
        return tensor[None]

    def gradients(self, params: Sequence[torch.Tensor], rows: int) -> None:
        """Replace each parameter's gradient, of a mean loss over ``rows`` rows here, by the
        gradient of the mean loss over the rows of every process (their mean weighted by
        rows)."""

    def begin(self) -> dict | None:
        """Called as each stage of the training loop begins (:func:`~iglearn.learners.
        training.run_stage`): in a data-parallel fit resumed from a checkpoint, the
        stage's saved state (where it stood after its last saved epoch, or as it ended),
        for the stages the checkpoint reached; else None (here: always None)."""
        return None

    def save(self, state: Callable[[], dict]) -> None:
        """Called after each epoch (or window) of a stage and as it ends, ``state()``
        giving what a resumed fit needs to go on from there: a data-parallel fit
        checkpoints it; here nothing happens (``state`` is not called)."""


LOCAL = Reducer()
"""The reducer of a fit in one process."""


def reducer_of(data: object) -> Reducer:
    """The reducer of a fit's source or log: its ``reducer``, else :data:`LOCAL`."""
    return cast(Reducer, getattr(data, "reducer", LOCAL))


@dataclass(frozen=True)
class Trials:
    """The interactions of T trials with the same number of rows, each field a list of T
    tensors (views of the logs' arrays: nothing is copied)."""

    context: list[torch.Tensor]
    action: list[torch.Tensor]
    probability: list[torch.Tensor]
    signal: list[torch.Tensor]

    @classmethod
    def from_logs(cls, logs: Sequence[InteractionLog], signal: str) -> Trials:
        """The trials of ``logs``; ``signal`` names the field a learner reads ('feedback',
        'reward' or 'label')."""
        return cls(*([field_tensor(getattr(log, name)) for log in logs]
                     for name in ("context", "action", "probability", signal)))

    @classmethod
    def one(cls, batch: Batch) -> Trials:
        """One trial of the interactions ``batch`` (tensors without a trial axis)."""
        return cls(*([tensor] for tensor in batch))

    @property
    def n(self) -> int:
        """Interactions in each trial."""
        return len(self.context[0])

    def __len__(self) -> int:
        """The number of trials T."""
        return len(self.context)

    @property
    def context_dim(self) -> int:
        """Dimension of a context."""
        return int(self.context[0].shape[-1])

    @property
    def signal_dim(self) -> int:
        """Dimension of the signal (1 for a reward or a label)."""
        signal = self.signal[0]
        return int(signal.shape[-1]) if signal.dim() > 1 else 1

    def select(self, trials: Sequence[int]) -> Trials:
        """The trials numbered ``trials``."""
        return Trials(*([tensors[t] for t in trials] for tensors in self._fields()))

    def batch(self, index: torch.Tensor) -> Batch:
        """Rows ``index[t]`` of trial t for every t, as one (T, batch, ...) tensor a field."""
        return Batch(*(take(tensors, index) for tensors in self._fields()))

    def epoch(self, batch_size: int, generators: Sequence[torch.Generator]) -> Iterator[Batch]:
        """One pass in mini-batches of ``batch_size`` rows (the last two sized by
        :func:`~iglearn.data.stream.batch_sizes`, never fewer than half of it), trial t in
        the order of a random permutation drawn from ``generators[t]``."""
        orders = torch.stack([torch.randperm(self.n, generator=g) for g in generators])
        orders = orders.to(self.context[0].device)  # gathered where the logs are
        for index in orders.split(batch_sizes(self.n, batch_size), dim=1):
            yield self.batch(index)

    def chunks(self, size: int = 65536, context: bool = True) -> Iterator[Batch]:
        """Consecutive rows of every trial, ``size`` at a time, for full passes over the data:
        actions and probabilities as (T, rows) tensors, contexts and signals as lists of T
        views (stacked models take either form; the wide fields are never copied, so the
        contexts are there whatever ``context`` says)."""
        for start in range(0, self.n, size):
            rows = slice(start, start + size)
            # stacked models take a list of T views where a (T, rows, d) tensor would go
            yield Batch(cast(torch.Tensor, [x[rows] for x in self.context]),
                        torch.stack([a[rows] for a in self.action]),
                        torch.stack([p[rows] for p in self.probability]),
                        cast(torch.Tensor, [s[rows] for s in self.signal]))

    def _fields(self) -> tuple[list[torch.Tensor], ...]:
        return self.context, self.action, self.probability, self.signal


def fixed_signal(data: Source, decode: Callable[[Batch], torch.Tensor], rows: int = 8192
                 ) -> tuple[Source, Callable[[Batch], torch.Tensor]]:
    """The data of stages that learn from a fixed function of each row (the decoded reward of
    a policy stage, its decoders held fixed), and how a stage reads that value off a
    mini-batch. Logs in memory (:class:`Trials`) are decoded once, in passes of ``rows`` rows,
    into the signal of a copy of ``data`` (the other fields are shared, not copied), which
    every mini-batch then carries, so that no step runs the decoders again; a streamed source
    is returned as it is, each mini-batch decoded as it comes. ``decode`` maps a batch of T
    trials' actions (T, rows) and signals (T, rows, d) to (T, rows), without gradients; it
    does not read the contexts (left empty)."""
    def each(batch: Batch) -> torch.Tensor:
        with torch.no_grad():
            return decode(batch)

    if not isinstance(data, Trials):
        return data, each
    values = torch.cat([each(Batch(torch.empty(0), chunk.action, chunk.probability,
                                   torch.stack(list(chunk.signal))))
                        for chunk in data.chunks(rows, context=False)], dim=1)
    return Trials(data.context, data.action, data.probability, list(values)), _signal


def _signal(batch: Batch) -> torch.Tensor:
    return batch.signal


def take(tensors: Sequence[torch.Tensor], index: torch.Tensor) -> torch.Tensor:
    """Rows ``index[t]`` of each trial's tensor ``tensors[t]``, as one (T, batch, ...) tensor,
    on the tensors' device."""
    first = tensors[0]
    index = index.to(first.device)
    out = torch.empty((*index.shape, *first.shape[1:]), dtype=first.dtype, device=first.device)
    for t, tensor in enumerate(tensors):
        torch.index_select(tensor, 0, index[t], out=out[t])
    return out


def move(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` on ``device``; float64 becomes float32 on Apple's MPS, which has no
    float64."""
    if device.type == "mps" and tensor.dtype == torch.float64:
        return tensor.to(device, torch.float32)
    return tensor.to(device, non_blocking=True)


DEVICE_SHARE = 0.5
"""The largest share of a CUDA device's free memory that :func:`on_device` fills with the logs
of a fit."""


def on_device(data: Source, device: torch.device | None) -> Source:
    """``data`` held on ``device`` for a fit: logs in memory (:class:`Trials`) are copied to a
    CUDA device once, when they take at most :data:`DEVICE_SHARE` of its free memory, so that
    each mini-batch is gathered there rather than on the CPU and sent; otherwise (the CPU,
    Apple's MPS, a streamed source, logs too large) ``data`` itself, whose mini-batches and
    chunks the fit moves as it reads them (:func:`to_device`)."""
    if device is None or device.type != "cuda" or not isinstance(data, Trials):
        return data
    fields = data._fields()
    if fields[0][0].is_cuda:  # there already
        return data
    size = sum(t.numel() * t.element_size() for tensors in fields for t in tensors)
    if size > DEVICE_SHARE * torch.cuda.mem_get_info(device)[0]:
        return data
    return Trials(*([t.to(device) for t in tensors] for tensors in fields))


def to_device(batch: Batch, device: torch.device | None) -> Batch:
    """``batch`` with each field (a tensor, or a list of T tensors) on ``device``; on the CPU
    (or with no device), ``batch`` itself."""
    if device is None or device.type == "cpu":
        return batch
    return Batch(*(move(field, device) if isinstance(field, torch.Tensor)
                   else [move(each, device) for each in field] for field in batch))


M = TypeVar("M", bound=nn.Module)


@contextmanager
def side_by_side(models: Sequence[M],
                 device: torch.device | None = None) -> Iterator[M]:
    """One module that runs ``models`` (one class and shape) on a leading trial axis (on
    ``device``, if given); on leaving the block, each model receives its trial's trained
    weights and buffers."""
    stacked = cast(M, stack(models))  # runs as one of ``models`` does, on a trial axis
    if device is not None and device.type != "cpu":
        stacked = stacked.to(device)
    yield stacked
    unstack_into(stacked, models)
