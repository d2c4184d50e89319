"""One fit on many processes: data-parallel fits on Ray Train.

``learner.fit(stream, backend=RayTrain(workers=N))`` (``iglearn fit SHARDS/ --backend ray
--workers N``) fits any learner trained by gradient (``BatchIGL``, ``AIIGL``,
``ContextualBandit``, ``Supervised``) on a streamed Parquet log with N Ray Train workers
(``ray.train.torch.TorchTrainer``, a gloo process group). Each worker runs the learner's own
fit, unchanged, on its share of the log (:class:`ShardStream`: whole row groups, balanced by
rows), with a :class:`TorchReducer` through which the fit's processes agree wherever a fit in
one process reads all of its data:

- each step's gradients are all-reduced: every worker takes the gradient of the mean loss
  over the rows of all workers' mini-batches, so the workers' parameters stay equal;
- every full pass (the corrector's statistic, the indicator, the adaptive restart's and
  AI-IGL's per-action sums, the standardisation statistics) is a sum over each worker's
  share, summed across the workers: the corrector and the restart decide once, alike
  everywhere;
- the plateau that ends an extended stage reads the workers' mean loss.

A fit in one process runs the same code with :data:`~iglearn.learners.trials.LOCAL`, under
which every reduction is the identity.

The same settings give the same estimator. A fit on n interactions with batch size B takes
ceil(n / B) steps an epoch; so does a fit on N workers: each worker draws ceil(n / B)
mini-batches an epoch from a shuffle of its own share, about B / N rows each, and a step
reads about B rows in all. The learning rate, the schedule and the number of epochs are those
of the fit in one process; only the shuffle differs (each worker shuffles its share).

Faults: Ray Train restarts the workers after one dies (``max_failures`` times); the fit runs
again from its start, seeded as before, and the fitted learner notes the restart
(:class:`DistributedReport`). Only worker 0 hands back a model, once its fit has completed;
nothing is written before.
"""

from __future__ import annotations

import math
import os
import pickle
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

from iglearn.data.stream import Block, LogStream, _ParquetPieces, shuffled_batches
from iglearn.errors import IGLearnError, require_extra
from iglearn.learners.trials import Reducer

L = TypeVar("L")

STARTS = "starts"
"""The file of a fit's run folder that worker 0 adds a line to each time it starts."""


class WorkerRestartWarning(UserWarning):
    """A distributed fit completed after Ray Train restarted its workers."""


@dataclass(frozen=True)
class DistributedReport:
    """How a data-parallel fit ran (``learner.distributed_``)."""

    workers: int
    """Ray Train workers."""
    restarts: int
    """Times Ray Train restarted the workers after one failed."""
    seconds: float
    """Wall seconds from the start of the workers' fit to its end (the last, complete run)."""
    cpu_seconds: float
    """CPU seconds of the workers' fits (all workers, the last run)."""
    interactions: int
    """Interactions in the log."""
    notes: list[str] = field(default_factory=list)
    """What the fit noted (the restarts)."""


@dataclass(frozen=True)
class RayTrain:
    """Fit with Ray Train: ``workers`` processes, each fitting on its share of the log."""

    workers: int = 2
    """Ray Train workers (processes of one fit), each reading its share of the Parquet
    row groups; at most the log's number of row groups."""
    address: str | None = None
    """The Ray cluster to run on (None: the running one, else a local instance with
    workers * cpus_per_worker CPUs)."""
    cpus_per_worker: float = 1.0
    """CPUs Ray reserves for each worker."""
    max_failures: int = 3
    """Times Ray Train restarts the workers after one fails before the fit fails."""
    storage: str | None = None
    """Folder of the run's records (Ray Train's checkpoints, which process ran each
    worker): on a cluster, storage every node reaches; None: a temporary folder, removed
    after the fit."""

    def __post_init__(self) -> None:
        if not isinstance(self.workers, int) or self.workers < 1:
            raise IGLearnError(f"workers must be a whole number >= 1, got {self.workers!r}")
        if not isinstance(self.max_failures, int) or self.max_failures < 0:
            raise IGLearnError(f"max_failures must be a whole number >= 0, got "
                               f"{self.max_failures!r}")
        if not (math.isfinite(self.cpus_per_worker) and self.cpus_per_worker > 0):
            raise IGLearnError(f"cpus_per_worker must be a number > 0, got "
                               f"{self.cpus_per_worker!r}")

    def fit(self, learner: L, log: object) -> L:
        """Fit ``learner`` (a learner trained by gradient, not yet fitted or to re-fit) on
        ``log`` (a :class:`~iglearn.data.stream.LogStream` of Parquet files or shards) with
        ``workers`` Ray Train workers; ``learner`` ends fitted as worker 0's copy ended,
        with ``distributed_`` (:class:`DistributedReport`). Called by ``learner.fit(log,
        backend=...)``."""
        check_log(log, self.workers)
        assert isinstance(log, LogStream)
        require_extra("ray", ("ray.train.torch", "pydantic"), "--backend ray (RayTrain)")
        import ray

        run = Path(self.storage) if self.storage else Path(
            tempfile.mkdtemp(prefix="iglearn-ray-train-"))
        run = run.resolve()
        run.mkdir(parents=True, exist_ok=True)
        (run / STARTS).unlink(missing_ok=True)
        started = not ray.is_initialized()
        if started:
            options: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False,
                                           configure_logging=False)
            if self.address:
                ray.init(address=self.address, **options)
            else:
                ray.init(num_cpus=max(1, math.ceil(self.workers * self.cpus_per_worker)),
                         **options)
        try:
            fitted, metrics = self._train(learner, log, run)
        finally:
            if started:
                ray.shutdown()
            if not self.storage:
                shutil.rmtree(run, ignore_errors=True)
        return _adopt(learner, fitted, metrics, self.workers, len(log))

    def _train(self, learner: object, log: LogStream, run: Path
               ) -> tuple[object, dict[str, Any]]:
        from ray.train import Checkpoint, FailureConfig, RunConfig, ScalingConfig
        from ray.train.torch import TorchTrainer

        trainer = TorchTrainer(
            _train_worker,
            train_loop_config={"learner": learner, "log": log, "run": str(run)},
            scaling_config=ScalingConfig(num_workers=self.workers, use_gpu=False,
                                         resources_per_worker={"CPU": self.cpus_per_worker}),
            run_config=RunConfig(name="fit", storage_path=str(run / "ray"),
                                 failure_config=FailureConfig(max_failures=self.max_failures)))
        try:
            result = trainer.fit()
        except Exception as e:  # Ray's errors carry the worker's traceback: one line of it
            raise IGLearnError(f"the distributed fit failed ({_first_line(e)}); see the "
                               f"workers' logs of the Ray cluster") from None
        checkpoint: Checkpoint | None = result.checkpoint
        if result.error is not None or checkpoint is None:
            raise IGLearnError(f"the distributed fit failed ({_first_line(result.error)}); "
                               f"no model was written")
        with checkpoint.as_directory() as folder:
            fitted = pickle.loads((Path(folder) / "learner.pkl").read_bytes())
        metrics = dict(result.metrics or {})
        starts = run / STARTS
        metrics["restarts"] = max(0, len(starts.read_text().splitlines()) - 1
                                  if starts.exists() else 0)
        return fitted, metrics


def check_log(log: object, workers: int) -> None:
    """Refuse a log a data-parallel fit cannot share out: one in memory, not Parquet, or
    with fewer row groups than ``workers``."""
    if not isinstance(log, LogStream):
        raise IGLearnError("a distributed fit reads a streamed Parquet log; open it with "
                           "open_log(path, StreamSettings(stream='on')) (iglearn fit: "
                           "--stream on)")
    pieces = log._pieces
    if not isinstance(pieces, _ParquetPieces):
        raise IGLearnError(f"{log.source}: a distributed fit reads Parquet files or shard "
                           f"folders; convert the log (iglearn convert LOG LOG.parquet)")
    if len(pieces.rows) < workers:
        raise IGLearnError(f"{log.source}: {len(pieces.rows)} row group(s) cannot be shared "
                           f"among {workers} workers; write the log as more shards "
                           f"(iglearn convert --shard-rows) or use fewer workers")


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

    def __init__(self, size: int):
        self.size = size

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
        each gradient becomes the rows-weighted mean of the workers'."""
        live = [p for p in params if p.grad is not None]
        grads = [p.grad for p in live]
        flat = torch.cat([*(g.reshape(-1) * rows for g in grads if g is not None),
                          torch.tensor([float(rows)], dtype=torch.float32)])
        total = self.sum(flat)
        total = total[:-1] / total[-1]
        start = 0
        for p in live:
            assert p.grad is not None
            count = p.grad.numel()
            p.grad.copy_(total[start:start + count].view_as(p.grad))
            start += count


def _train_worker(config: dict[str, Any]) -> None:
    """One Ray Train worker: the learner's own fit on this worker's share of the log;
    worker 0 hands back the fitted learner as the run's checkpoint."""
    import ray.train

    context = ray.train.get_context()
    rank, size = context.get_world_rank(), context.get_world_size()
    run = Path(config["run"])
    if rank == 0:
        with open(run / STARTS, "a") as f:
            f.write(f"{time.time()}\n")
    (run / f"worker-{rank}.pid").write_text(f"{os.getpid()}\n")
    learner = config["learner"]
    reducer = TorchReducer(size)
    share = ShardStream(config["log"], rank, size, reducer)
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the learner's report keeps its notes
        learner.fit(share)
    cpu_seconds = float(reducer.sum(torch.tensor(time.process_time() - cpu,
                                                 dtype=torch.float64)))
    metrics = {"seconds": time.perf_counter() - wall, "cpu_seconds": cpu_seconds}
    if rank != 0:
        ray.train.report(metrics)
        return
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "learner.pkl").write_bytes(pickle.dumps(learner))
        ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder))


def _adopt(learner: L, fitted: object, metrics: dict[str, Any], workers: int, n: int) -> L:
    """``learner`` with the fitted state (the attributes ending in ``_``) of worker 0's copy
    ``fitted``, its report's notes warned again here, and ``distributed_``."""
    for name, value in vars(fitted).items():
        if name.endswith("_"):
            setattr(learner, name, value)
    restarts = int(metrics.get("restarts", 0))
    notes = []
    if restarts:
        notes.append(f"Ray Train restarted the workers {restarts} time(s) after a worker "
                     f"failed; the fit ran again from its start and completed")
    report = getattr(learner, "report_", None)
    for note in getattr(report, "warnings", []):
        from iglearn.learners.batch_igl import IdentifiabilityWarning

        warnings.warn(note, IdentifiabilityWarning, stacklevel=3)
    for note in notes:
        warnings.warn(note, WorkerRestartWarning, stacklevel=3)
    report = DistributedReport(workers, restarts, float(metrics.get("seconds", 0.0)),
                               float(metrics.get("cpu_seconds", 0.0)), n, notes)
    setattr(learner, "distributed_", report)  # noqa: B010 (a learner of any class)
    return learner


def _first_line(error: object) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__
