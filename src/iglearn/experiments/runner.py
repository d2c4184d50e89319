"""Running trials: in-process, on a local process pool, or on Ray; resumable.

Every trial is a pure function ``trial(index, seed_sequence) -> rows``. Finished trials are
recorded atomically, one JSON file each, in ``OUT/trials/``; running the same command again
skips them, and ``fresh`` starts over. Each trial runs with one torch thread whatever the
backend, so results are identical for every backend and number of jobs.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import torch

from iglearn.errors import IGLearnError
from iglearn.experiments.results import write_text
from iglearn.progress import one_line_warnings, progress
from iglearn.seeding import spawn_seeds

Trial = Callable[[int, np.random.SeedSequence], list[dict]]
BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Execution:
    """Where and how trials run."""

    backend: str = "local"
    """'local' (a process pool on this machine) or 'ray' (a Ray cluster or local instance)."""
    jobs: int | None = None
    """Trials at once; None means every core. With 'local', 1 runs in this process."""
    ray_address: str | None = None
    """Address of a Ray cluster to join; None starts a local Ray instance."""
    fresh: bool = False
    """Ignore (and delete) trials recorded by an earlier run in the same folder."""
    show_progress: bool = True
    """Show a progress bar over trials."""

    def workers(self) -> int:
        """The number of trials run at once."""
        return self.jobs or os.cpu_count() or 1


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread (identical floating-point results for any job count)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def call_trial(trial: Trial, index: int, seed: np.random.SeedSequence) -> tuple[int, list[dict]]:
    """Run one trial with one torch thread; returns (index, rows)."""
    with one_thread():
        return index, trial(index, seed)


class TrialRecord:
    """The folder of finished trials of one run, guarded by the run's fingerprint."""

    def __init__(self, folder: Path, fingerprint: dict, fresh: bool):
        self.folder = folder / "trials"
        manifest = self.folder / "run.json"
        text = json.dumps(fingerprint, sort_keys=True, default=str)
        if fresh and self.folder.exists():
            shutil.rmtree(self.folder)
        if manifest.exists() and manifest.read_text().strip() != text:
            raise IGLearnError(
                f"{folder} holds trials of a different configuration; pass --fresh to start "
                f"over there, or choose another --out")
        self.folder.mkdir(parents=True, exist_ok=True)
        if not manifest.exists():
            write_text(manifest, text + "\n")

    def path(self, index: int) -> Path:
        return self.folder / f"trial-{index:05d}.json"

    def load(self, index: int) -> list[dict] | None:
        """The rows of a finished trial, or None."""
        path = self.path(index)
        return json.loads(path.read_text()) if path.exists() else None

    def save(self, index: int, rows: list[dict]) -> None:
        write_text(self.path(index), json.dumps(rows, default=_plain) + "\n")


def _plain(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot record {type(value).__name__} in a trial row")


def run_trials(trial: Trial, n_trials: int, root_seed: int, execution: Execution,
               folder: Path | None = None, fingerprint: dict | None = None,
               description: str = "trials",
               seeds: list[np.random.SeedSequence] | None = None) -> list[dict]:
    """Run trials ``0..n_trials-1`` (skipping those recorded in ``folder``); all rows, by trial.

    Trial ``i`` gets ``seeds[i]``, by default the i-th seed sequence spawned from
    ``root_seed``, whatever runs it.
    """
    if execution.backend not in BACKENDS:
        raise IGLearnError(f"unknown backend {execution.backend!r}; choose one of {BACKENDS}")
    seeds = seeds or spawn_seeds(root_seed, n_trials)
    record = TrialRecord(folder, fingerprint or {}, execution.fresh) if folder else None
    results: dict[int, list[dict]] = {}
    if record:
        for index in range(n_trials):
            rows = record.load(index)
            if rows is not None:
                results[index] = rows
    todo = [i for i in range(n_trials) if i not in results]
    bar = progress(range(len(todo)), description, execution.show_progress, total=len(todo))

    def finished(index: int, rows: list[dict]) -> None:
        results[index] = rows
        if record:
            record.save(index, rows)
        next(bar, None)

    if todo:
        if execution.backend == "ray":
            _run_ray(trial, todo, seeds, execution, finished)
        elif execution.workers() == 1 or len(todo) == 1:
            for index in todo:
                finished(*call_trial(trial, index, seeds[index]))
        else:
            _run_pool(trial, todo, seeds, execution.workers(), finished)
    return [row for index in range(n_trials) for row in results[index]]


def _run_pool(trial: Trial, todo: list[int], seeds: list, workers: int,
              finished: Callable[[int, list[dict]], None]) -> None:
    context = get_context("spawn")  # no fork of a process that already runs torch threads
    with ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=context,
                             initializer=one_line_warnings) as pool:
        pending = {pool.submit(call_trial, trial, i, seeds[i]) for i in todo}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                finished(*future.result())


def _run_ray(trial: Trial, todo: list[int], seeds: list, execution: Execution,
             finished: Callable[[int, list[dict]], None]) -> None:
    try:
        import ray
    except ImportError as e:
        raise IGLearnError("--backend ray needs Ray: pip install 'iglearn[ray]'") from e
    started = not ray.is_initialized()
    if started:
        options = dict(include_dashboard=False, log_to_driver=False,
                       configure_logging=False)
        if execution.ray_address:
            ray.init(address=execution.ray_address, **options)
        else:
            ray.init(num_cpus=execution.workers(), **options)
    try:
        remote = ray.remote(num_cpus=1)(call_trial)
        pending = [remote.remote(trial, i, seeds[i]) for i in todo]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            finished(*ray.get(done[0]))
    finally:
        if started:
            ray.shutdown()
