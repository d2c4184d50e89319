"""What runs in each Ray Train worker of a data-parallel fit
(:mod:`iglearn.learners.distributed`): the worker's share of the log, the reductions across
workers, and the worker's fit."""

from __future__ import annotations

import math
import os
import pickle
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from iglearn.data.stream import Block, LogStream, shuffled_batches
from iglearn.errors import IGLearnError
from iglearn.learners.distributed import RESUME, STARTS
from iglearn.learners.trials import Reducer


def shares(rows: Sequence[int], size: int) -> list[list[int]]:
    """The pieces (by number) each of ``size`` workers reads, the pieces of ``rows`` rows
    each dealt largest first to the worker with the fewest rows so far (ties: the lower
    rank); each worker's pieces in file order."""
    held = [0] * size
    dealt: list[list[int]] = [[] for _ in range(size)]
    for piece in sorted(range(len(rows)), key=lambda i: (-rows[i], i)):
        worker = min(range(size), key=lambda w: (held[w], w))
        held[worker] += rows[piece]
        dealt[worker].append(piece)
    return [sorted(pieces) for pieces in dealt]


class ShardStream(LogStream):
    """One worker's share of a :class:`~iglearn.data.stream.LogStream`: its row groups
    (:func:`shares`). It answers for the whole log what learners ask before fitting (its
    length, actions' counts, smallest probability), streams its own rows (``chunks``,
    ``epoch``), and carries the ``reducer`` through which the full passes and the training
    loop add up every share."""

    def __init__(self, log: LogStream, rank: int, size: int, reducer: Reducer):
        self.__dict__.update(vars(log))
        self._buffer = {}
        self._ray = None  # each worker reads its own row groups
        self.rank, self.reducer = rank, reducer
        self.pieces = shares(self._pieces.rows, size)[rank]
        self.rows = sum(self._pieces.rows[piece] for piece in self.pieces)

    def chunks(self, fields: Sequence[str] | None = None) -> Iterator[Block]:
        """This share's rows once, in file order (see :meth:`LogStream.chunks`)."""
        wanted = self._wanted(fields)
        for piece in self.pieces:
            yield from self._pieces.read(piece, wanted)

    def epoch(self, batch_size: int, rng: np.random.Generator,
              fields: Sequence[str] | None = None) -> Iterator[Block]:
        """This share's rows once, shuffled, in as many mini-batches as an epoch of the whole
        log in mini-batches of ``batch_size`` takes (every worker steps together): about
        ``batch_size`` / workers rows each. The shuffle is drawn from ``rng`` (alike in
        every worker) and the worker's rank."""
        wanted = self._wanted(fields)
        steps = math.ceil(len(self) / batch_size)
        if self.rows < steps:
            raise IGLearnError(f"{self.source}: worker {self.rank} holds {self.rows} rows, "
                               f"fewer than the {steps} steps of an epoch; raise batch_size "
                               f"or use fewer workers")
        local = np.random.default_rng([int(rng.integers(2**62)), self.rank])
        order = local.permutation(np.asarray(self.pieces, dtype=np.int64))
        blocks = (block for piece in order for block in self._pieces.read(int(piece), wanted))
        batches = shuffled_batches(blocks, self.rows // steps, self.settings.shuffle_rows,
                                   local, self._buffer)
        last: list[Block] = []
        for count, batch in enumerate(batches, 1):
            if count < steps:
                yield batch
            else:  # the rows beyond steps whole mini-batches join the last one
                last.append(batch)
        yield {name: np.concatenate([batch[name] for batch in last]) for name in wanted}


class TorchReducer(Reducer):
    """The reductions of a data-parallel fit over torch's default process group (Ray Train
    sets it up: gloo on CPUs)."""

    def __init__(self, size: int, rank: int = 0, resume: dict | None = None,
                 every: float = 0.0):
        self.size, self.rank, self.every = size, rank, every
        self.saved_at = time.monotonic()
        """When the last checkpoint was reported (or the fit began)."""
        self.steps = 0
        """Steps whose gradients were all-reduced."""
        self.step_seconds = 0.0
        """Wall seconds of those all-reduces (waiting for the slowest worker included)."""
        self.values = 0
        """Values all-reduced at the last step (the gradients' and the rows')."""
        self.stage = -1
        """The stage of the training loop running (counting every stage the fit has run,
        those of every restart attempt included), from 0."""
        self.ends: dict[int, dict] = {}
        """The state of each stage that has ended, as it ended."""
        self.resume = resume
        """The checkpoint this fit resumes from (:meth:`save`), until its stage begins."""
        self.resumed: tuple[int, int] | None = None
        """The stage and the number of its epochs done at the checkpoint resumed from."""
        if resume is not None:
            self.ends = dict(resume["ends"])
            self.steps, self.step_seconds = resume["steps"], resume["step_seconds"]
            self.resumed = (resume["stage"], resume["state"]["epoch"] + 1)

    def begin(self) -> dict | None:
        """The saved state of the stage beginning: as it ended, for a stage the checkpoint
        resumed from had seen end; where it stood, for the checkpoint's own stage."""
        self.stage += 1
        if self.resume is None:
            return None
        if self.stage < self.resume["stage"]:
            return self.ends[self.stage]
        state: dict = self.resume["state"]
        self.resume = None
        return state

    def save(self, state: Callable[[], dict]) -> None:
        """Keep the state of a stage that has ended; after an epoch (or window), once
        ``every`` seconds have passed since the last checkpoint (by worker 0's clock, which
        all workers follow), report a checkpoint to Ray Train (every worker reports, worker 0
        writes it): the stage, its state, the state of every stage before it, and the step
        counts."""
        import ray.train

        snapshot = state()
        if snapshot["done"]:
            self.ends[self.stage] = snapshot
            return
        if self.every > 0:  # every worker follows worker 0's clock
            due = self.rank == 0 and time.monotonic() - self.saved_at >= self.every
            if not bool(self.sum(torch.tensor(float(due))) > 0):
                return
        self.saved_at = time.monotonic()
        metrics = {"stage": self.stage, "epoch": snapshot["epoch"] + 1}
        if self.rank != 0:
            ray.train.report(metrics)
            return
        saved = {"stage": self.stage, "state": snapshot, "ends": self.ends,
                 "steps": self.steps, "step_seconds": self.step_seconds}
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / RESUME).write_bytes(pickle.dumps(saved))
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder))

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` summed over the workers."""
        import torch.distributed as dist

        out = tensor.detach().clone().contiguous()
        dist.all_reduce(out)
        return out

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Every worker's ``tensor``, stacked in rank order."""
        import torch.distributed as dist

        parts = [torch.empty_like(tensor) for _ in range(self.size)]
        dist.all_gather(parts, tensor.detach().contiguous())
        return torch.stack(parts)

    def gradients(self, params: Sequence[torch.Tensor], rows: int) -> None:
        """One all-reduce of every gradient, weighted by the worker's rows, and of the rows:
        each gradient becomes the rows-weighted mean of the workers' (one worker: as it is)."""
        live = [p for p in params if p.grad is not None]
        if self.size == 1:  # counted, as a step of the cost model
            self.steps, self.values = self.steps + 1, 1 + sum(p.numel() for p in live)
            return
        grads = [p.grad for p in live]
        flat = torch.cat([*(g.reshape(-1) * rows for g in grads if g is not None),
                          torch.tensor([float(rows)], dtype=torch.float32)])
        start = time.perf_counter()
        total = self.sum(flat)
        self.step_seconds += time.perf_counter() - start
        self.steps, self.values = self.steps + 1, flat.numel()
        total = total[:-1] / total[-1]
        start = 0
        for p in live:
            assert p.grad is not None
            count = p.grad.numel()
            p.grad.copy_(total[start:start + count].view_as(p.grad))
            start += count


def train_worker(config: dict[str, Any]) -> None:
    """One Ray Train worker: the learner's own fit on this worker's share of the log,
    checkpointed after every epoch (:meth:`TorchReducer.save`) and, after Ray Train restarted
    the workers, resumed from the last checkpoint; worker 0 hands back the fitted learner as
    the run's last checkpoint."""
    import ray.train

    context = ray.train.get_context()
    rank, size = context.get_world_rank(), context.get_world_size()
    run = Path(config["run"])
    if rank == 0:
        with open(run / STARTS, "a") as f:
            f.write(f"{time.time()}\n")
    (run / f"worker-{rank}.pid").write_text(f"{os.getpid()}\n")
    learner = config["learner"]
    resume = None
    checkpoint = ray.train.get_checkpoint()  # Ray Train restarted the workers: go on from it
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            resume = pickle.loads((Path(folder) / RESUME).read_bytes())
    reducer = TorchReducer(size, rank, resume, config["checkpoint_seconds"])
    share = ShardStream(config["log"], rank, size, reducer)
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the learner's report keeps its notes
        learner.fit(share)
    cpu_seconds = float(reducer.sum(torch.tensor(time.process_time() - cpu,
                                                 dtype=torch.float64)))
    metrics = {"seconds": time.perf_counter() - wall, "cpu_seconds": cpu_seconds,
               "steps": reducer.steps, "step_seconds": reducer.step_seconds,
               "step_values": reducer.values}
    if reducer.resumed is not None:
        metrics["resumed_stage"], metrics["resumed_epoch"] = reducer.resumed
    if rank != 0:
        ray.train.report(metrics)
        return
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "learner.pkl").write_bytes(pickle.dumps(learner))
        ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder))
