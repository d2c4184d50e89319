"""One fit on many processes: data-parallel fits on Ray Train.

``learner.fit(stream, backend=RayTrain(workers=N))`` (``iglearn fit SHARDS/ --backend ray
--workers N``) fits any learner trained by gradient (``BatchIGL``, ``AIIGL``,
``ContextualBandit``, ``Supervised``) on a streamed Parquet log with N Ray Train workers
(``ray.train.torch.TorchTrainer``, a gloo process group). Each worker runs the learner's own
fit, unchanged, on its share of the log (:class:`~iglearn.learners.workers.ShardStream`:
whole row groups, balanced by rows), with a :class:`~iglearn.learners.workers.TorchReducer`
through which the fit's processes agree wherever a fit in one process reads all of its data:

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

Faults: after an epoch of the training loop (or a window of an extended stage), once
``checkpoint_seconds`` have passed since the last, the workers report a checkpoint to Ray
Train (worker 0 writes it, under ``storage``): the stage of the loop and the epoch, the
parameters, the optimiser's moments and step, the generators' states, the plateau's and the
closing anneals' state, and the state each earlier stage ended in. Ray Train restarts the
workers after one dies (``max_failures`` times); the restarted fit runs again from its
start, seeded as before, but each stage the checkpoint saw end is put back as it ended,
without training, and the checkpoint's stage goes on after its epoch: the fit ends as the
uninterrupted fit would (the full passes between stages, such as the adaptive restart's
indicators, run again on the restored models). The fitted learner notes the restart and the
epoch it resumed from (:class:`DistributedReport`). Only worker 0 hands back a model, once
its fit has completed; nothing is written before.
"""

from __future__ import annotations

import copy
import math
import pickle
import shutil
import signal
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from iglearn.data.stream import LogStream, _ParquetPieces
from iglearn.errors import IGLearnError, require_extra, warn_caller
from iglearn.processes import ray_instance

L = TypeVar("L")

STARTS = "starts"
"""The file of a fit's run folder that worker 0 adds a line to each time it starts."""
RESUME = "resume.pkl"
"""The file of a checkpoint after an epoch: what a restarted fit resumes from."""


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
    steps: int = 0
    """Optimiser steps, each with one all-reduce of the gradients."""
    step_seconds: float = 0.0
    """Wall seconds worker 0 spent in those all-reduces (waiting for the slowest worker
    included)."""
    step_values: int = 0
    """Values in each step's all-reduce (the model's parameters trained at the last step,
    and the rows)."""
    notes: list[str] = field(default_factory=list)
    """What the fit noted (the restarts)."""
    resumed_stage: int | None = None
    """The stage of the training loop (counting every stage the fit ran, restart attempts
    included, from 0) whose checkpoint the last restart resumed from; None: no restart, or
    one before the first checkpoint (the fit ran again from its start)."""
    resumed_epoch: int | None = None
    """The epochs of that stage done at that checkpoint (from 1)."""


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
    checkpoint_seconds: float = 60.0
    """Least wall seconds between two checkpoints of the training loop (0: after every
    epoch): each is a Ray Train report, which every worker waits for, and a restarted fit
    resumes from the last one."""
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
        if not (math.isfinite(self.checkpoint_seconds) and self.checkpoint_seconds >= 0):
            raise IGLearnError(f"checkpoint_seconds must be a number >= 0, got "
                               f"{self.checkpoint_seconds!r}")
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
        require_extra("ray", ("pydantic", "ray.train.torch"), "--backend ray (RayTrain)")
        run = Path(self.storage) if self.storage else Path(
            tempfile.mkdtemp(prefix="iglearn-ray-train-"))
        run = run.resolve()
        run.mkdir(parents=True, exist_ok=True)
        (run / STARTS).unlink(missing_ok=True)
        try:
            with ray_instance(self.address,
                              max(1, math.ceil(self.workers * self.cpus_per_worker))):
                fitted, metrics = self._train(learner, log, run)
        finally:
            if not self.storage:
                shutil.rmtree(run, ignore_errors=True)
        return _adopt(learner, fitted, metrics, self.workers, len(log))

    def _train(self, learner: object, log: LogStream, run: Path
               ) -> tuple[object, dict[str, Any]]:
        from ray.train import (
            Checkpoint,
            CheckpointConfig,
            FailureConfig,
            RunConfig,
            ScalingConfig,
        )
        from ray.train.torch import TorchTrainer

        from iglearn.learners.workers import train_worker

        if getattr(learner, "seed", None) is None:  # one fresh seed for every worker alike
            learner = copy.copy(learner)
            setattr(learner, "seed", np.random.SeedSequence())  # noqa: B010
        pieces = log._pieces
        assert isinstance(pieces, _ParquetPieces)
        log = copy.copy(log)  # the workers run elsewhere: the files by absolute paths
        log._pieces = _ParquetPieces([Path(path).resolve() for path in pieces.paths],
                                     pieces.block_rows)
        trainer = TorchTrainer(
            train_worker,
            train_loop_config={"learner": learner, "log": log, "run": str(run),
                               "checkpoint_seconds": self.checkpoint_seconds},
            scaling_config=ScalingConfig(num_workers=self.workers, use_gpu=False,
                                         resources_per_worker={"CPU": self.cpus_per_worker}),
            run_config=RunConfig(name="fit", storage_path=str(run / "ray"),
                                 failure_config=FailureConfig(max_failures=self.max_failures),
                                 checkpoint_config=CheckpointConfig(num_to_keep=2)))
        interrupt = signal.getsignal(signal.SIGINT)
        try:
            result = trainer.fit()
        except SystemExit:  # Ray Train's Ctrl-C handler aborts the run, then exits "with 0"
            raise KeyboardInterrupt from None
        except Exception as e:  # Ray's errors carry the worker's traceback: one line of it
            raise IGLearnError(f"the distributed fit failed ({_first_line(e)}); see the "
                               f"workers' logs of the Ray cluster") from None
        finally:  # the handler Ray Train set would abort a run that has ended
            if interrupt is not None and threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, interrupt)
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


def _adopt(learner: L, fitted: object, metrics: dict[str, Any], workers: int, n: int) -> L:
    """``learner`` with the fitted state (the attributes ending in ``_``) of worker 0's copy
    ``fitted``, its report's notes warned again here, and ``distributed_``."""
    for name, value in vars(fitted).items():
        if name.endswith("_"):
            setattr(learner, name, value)
    restarts = int(metrics.get("restarts", 0))
    stage, epoch = metrics.get("resumed_stage"), metrics.get("resumed_epoch")
    notes = []
    if restarts and epoch is not None:
        notes.append(f"Ray Train restarted the workers {restarts} time(s) after a worker "
                     f"failed; the fit resumed from the checkpoint after epoch {epoch} of "
                     f"training stage {stage} and completed")
    elif restarts:
        notes.append(f"Ray Train restarted the workers {restarts} time(s) after a worker "
                     f"failed before the first checkpoint; the fit ran again from its start "
                     f"and completed")
    report = getattr(learner, "report_", None)
    for note in getattr(report, "warnings", []):
        from iglearn.learners.batch_igl import IdentifiabilityWarning

        warn_caller(note, IdentifiabilityWarning)
    for note in notes:
        warn_caller(note, WorkerRestartWarning)
    report = DistributedReport(workers, restarts, float(metrics.get("seconds", 0.0)),
                               float(metrics.get("cpu_seconds", 0.0)), n,
                               int(metrics.get("steps", 0)),
                               float(metrics.get("step_seconds", 0.0)),
                               int(metrics.get("step_values", 0)), notes,
                               None if stage is None else int(stage),
                               None if epoch is None else int(epoch))
    setattr(learner, "distributed_", report)  # noqa: B010 (a learner of any class)
    return learner


def _first_line(error: object) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__
