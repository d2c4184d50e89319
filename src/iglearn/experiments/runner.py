"""Running trials: in-process, on a local process pool, or on Ray; resumable.

Every trial is a pure function ``trial(index, seed_sequence) -> rows``, or, for experiments
that fit several trials as one batched computation, ``StackedTrials``: a function of several
indices and seeds that returns each trial's rows, those it would give alone up to
floating-point rounding. Finished trials are recorded atomically, one JSON file each, in
``OUT/trials/``; running the same command again skips them (a block of stacked trials with
one missing runs whole), and ``fresh`` starts over. Trials run with one torch thread whatever
the backend, in blocks fixed by their indices, so results are identical for every backend,
number of jobs and interruption; a stack size of its own may change a trial's numbers by a
rounding that a restart decision amplifies.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from iglearn.data import safejson
from iglearn.errors import IGLearnError, check_choice, option_list, shown
from iglearn.files import write_text
from iglearn.processes import end_with_parent, ray_instance
from iglearn.progress import one_line_warnings, progress_bar
from iglearn.seeding import spawn_seeds
from iglearn.threads import one_thread

Trial = Callable[[int, np.random.SeedSequence], list[dict]]
BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class StackedTrials:
    """Trials that run several at a time: ``run(indices, seeds)`` returns each trial's rows,
    the same rows as ``run([index], [seed])`` would."""

    run: Callable[[list[int], list[np.random.SeedSequence]], list[list[dict]]]


@dataclass(frozen=True)
class Execution:
    """Where and how trials run."""

    backend: str = "local"
    """'local' (a process pool on this machine) or 'ray' (a Ray cluster or local instance)."""
    jobs: int | None = None
    """Workers at once; None means every core. With 'local', 1 runs in this process."""
    ray_address: str | None = None
    """Address of a Ray cluster to join; None starts a local Ray instance."""
    fresh: bool = False
    """Ignore (and delete) trials recorded by an earlier run in the same folder."""
    show_progress: bool = True
    """Show a progress bar over trials."""
    stack: int = 4
    """Most trials a worker fits side by side as one batched computation, in experiments that
    can (Table 1, sweeps, sample complexity, Section 6, action-inclusive): trials 0 to N - 1
    together, then the next N, ...; faster per trial. A trial's numbers agree with its fit
    alone up to floating-point rounding, which a restart decision can amplify (a point of
    accuracy on some trials): give the same stack to reproduce a run exactly (jobs, backend
    and resuming do not change them)."""

    def workers(self) -> int:
        """The number of workers run at once."""
        return self.jobs or os.cpu_count() or 1


def call_trials(trials: StackedTrials, indices: list[int],
                seeds: list[np.random.SeedSequence]) -> list[tuple[int, list[dict]]]:
    """Run trials ``indices`` together with one torch thread; returns (index, rows) of each."""
    with one_thread():
        return list(zip(indices, trials.run(indices, seeds), strict=True))


@dataclass(frozen=True)
class _OneByOne:
    """A per-trial function as StackedTrials that runs its trials one after another."""

    trial: Trial

    def __call__(self, indices: list[int],
                 seeds: list[np.random.SeedSequence]) -> list[list[dict]]:
        return [self.trial(index, seed) for index, seed in zip(indices, seeds, strict=True)]


def fingerprint(config: Any, **more: object) -> dict:
    """What identifies a run's trials: every setting of its (dataclass) config except the
    number of trials, so that a run with more trials resumes one with fewer, anything in
    ``more``, and the version of the rows' schema."""
    from iglearn.experiments.results import SCHEMA  # pandas: imported when first needed

    settings = {k: v for k, v in asdict(config).items() if k != "trials"}
    return {**settings, **more, "schema": SCHEMA}


class TrialRecord:
    """The folder of finished trials of one run, guarded by the run's fingerprint.

    Nothing is written until the first trial finishes: the manifest ``run.json`` goes in with
    it, so a run that fails before (a setting its environment refuses, too little memory)
    leaves no record. A record without finished trials holds nothing to resume and never
    blocks a run of another configuration."""

    def __init__(self, folder: Path, fingerprint: dict, fresh: bool):
        self.folder = folder / "trials"
        self.manifest = self.folder / "run.json"
        self.text = safejson.dumps(fingerprint, sort_keys=True)
        if self.folder.exists() and (fresh or not self.finished()):
            self.forget()
        elif self.manifest.exists() and self.manifest.read_text().strip() != self.text:
            raise IGLearnError(
                f"{folder} holds trials of a different configuration"
                f"{_difference(self.manifest, fingerprint)}; pass --fresh to start over there, "
                f"or choose another --out")

    def finished(self) -> bool:
        """Whether the folder holds the record of a finished trial."""
        return any(_TRIAL.fullmatch(path.name) for path in self.folder.iterdir())

    def path(self, index: int) -> Path:
        return self.folder / f"trial-{index:05d}.json"

    def load(self, index: int) -> list[dict] | None:
        """The rows of a finished trial, or None: also for a damaged record (a warning says
        so, and the trial runs again)."""
        path = self.path(index)
        if not path.exists():
            return None
        try:
            rows = safejson.parse(path.read_bytes(), str(path), "running it again")
        except (OSError, IGLearnError):
            rows = None
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            warnings.warn(f"{path}: the trial record is damaged; running that trial again",
                          stacklevel=2)
            return None
        return rows

    def save(self, index: int, rows: list[dict]) -> None:
        """Record a finished trial; the first one recorded writes the manifest before it."""
        text = safejson.dumps(rows, other=_plain)
        if not self.manifest.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            write_text(self.manifest, self.text + "\n")
        write_text(self.path(index), text + "\n")

    def forget(self) -> None:
        """Delete the records of an earlier run (``--fresh``, or a manifest without finished
        trials): the manifest, the trial files
        and their temporaries, and nothing else; the folder goes if nothing else is in it."""
        for path in self.folder.iterdir():
            if _RECORD.fullmatch(path.name) and path.is_file():
                path.unlink()
        with contextlib.suppress(OSError):
            self.folder.rmdir()


def _difference(manifest: Path, fingerprint: dict) -> str:
    """Where a recorded run's fingerprint (``manifest``) first differs from ``fingerprint``
    (the experiment first, then the settings a sweep swept, then in its order), compared as
    JSON reads them back,
    for the message refusing to resume it, named as the command line gives it: " (--lr: 0.01
    recorded, 0.02 now)", " (--set lr: 0.01,0.02 recorded, 0.01,0.03 now)"; "" when the
    record cannot be read."""
    try:
        recorded = safejson.parse(manifest.read_bytes(), str(manifest), "")
    except (OSError, IGLearnError):
        return ""
    if not isinstance(recorded, dict):
        return ""
    current = json.loads(safejson.dumps(fingerprint))  # tuples as lists, as recorded
    keys = [*current, *(key for key in recorded if key not in current)]
    # the experiment first (another's options would be named as if this one had them),
    # then what a sweep swept
    keys.sort(key=lambda key: (key != "experiment", not key.startswith("set ")))
    for key in keys:
        was, now = recorded.get(key), current.get(key)
        if was != now:
            name = _NAMES.get(key) or f"--{key.replace('_', '-')}"
            return f" ({name}: {_as_given(was)} recorded, {_as_given(now)} now)"
    return ""


_NAMES = {"schema": "the result schema", "experiment": "the experiment",
          "set order": "the order of the --set options"}
"""How the refusal to resume names the entries of a fingerprint that no option gives (any
other key ``NAME`` is the option ``--NAME``)."""


def _as_given(value: object) -> str:
    """A recorded setting as its option writes it: ``0.01,0.02``, ``none``, ``'digits'``."""
    if isinstance(value, list):
        return option_list(map(str, value))
    return "none" if value is None else shown(value)


_TRIAL = re.compile(r"trial-\d{5}\.json")
_RECORD = re.compile(r"run\.json|trial-\d{5}\.json|\.(run|trial-\d{5})\.json\.\w+\.part")


def _plain(value: object) -> object:
    """What a trial row cannot hold (numbers, strings and lists of them can)."""
    raise TypeError(f"cannot record {type(value).__name__} in a trial row")


def run_trials(trial: Trial | StackedTrials, n_trials: int, root_seed: int,
               execution: Execution, folder: Path | None = None,
               fingerprint: dict | None = None, description: str = "trials",
               seeds: list[np.random.SeedSequence] | None = None) -> list[dict]:
    """Run trials ``0..n_trials-1`` (skipping those recorded in ``folder``); all rows, by trial.

    Trial ``i`` gets ``seeds[i]``, by default the i-th seed sequence spawned from
    ``root_seed``, whatever runs it. ``StackedTrials`` run in fixed blocks of
    ``execution.stack`` trials by index (trials 0 to stack - 1, then the next stack, ...):
    a block runs whole when one of its trials is not recorded, so the results depend on the
    stack size (up to floating-point rounding, which a restart decision can amplify) and on
    nothing else: not the backend, the jobs, nor an interruption and resumption.
    """
    check_choice("backend", execution.backend, BACKENDS)
    seeds = seeds or spawn_seeds(root_seed, n_trials)
    if isinstance(trial, StackedTrials):  # the blocks' size, which a trial's rounding knows
        fingerprint = {**(fingerprint or {}), "stack": execution.stack}
    record = TrialRecord(folder, fingerprint or {}, execution.fresh) if folder else None
    results: dict[int, list[dict]] = {}
    if record:
        for index in range(n_trials):
            rows = record.load(index)
            if rows is not None:
                results[index] = rows
    # StackedTrials run in fixed blocks of execution.stack trials by index (0-3, 4-7, ...),
    # whatever the jobs and whatever an earlier run recorded: a block with a trial to run
    # runs whole, so that a resumed run gives the numbers of an uninterrupted one
    size = execution.stack if isinstance(trial, StackedTrials) else 1
    blocks = [list(range(start, min(start + size, n_trials)))
              for start in range(0, n_trials, size)]
    groups = [(block, [seeds[j] for j in block]) for block in blocks
              if any(j not in results for j in block)]
    todo = [j for block, _ in groups for j in block]
    bar = progress_bar(len(todo), description, enabled=execution.show_progress)

    def finished(done: list[tuple[int, list[dict]]]) -> None:
        for index, rows in done:
            results[index] = rows
            if record:
                record.save(index, rows)
            bar.update(1)

    if todo:
        trials = trial if isinstance(trial, StackedTrials) else StackedTrials(_OneByOne(trial))
        workers = execution.workers()
        if execution.backend == "ray":
            _run_ray(trials, groups, execution, finished)
        elif workers == 1 or len(groups) == 1:
            for indices, group_seeds in groups:
                finished(call_trials(trials, indices, group_seeds))
        else:
            _run_pool(trials, groups, workers, finished)
    bar.close()  # only when every trial has finished: an error leaves it as it stood
    return [row for index in range(n_trials) for row in results[index]]


Groups = list[tuple[list[int], list[np.random.SeedSequence]]]
Finished = Callable[[list[tuple[int, list[dict]]]], None]


def _run_pool(trials: StackedTrials, groups: Groups, workers: int, finished: Finished) -> None:
    """Run the groups on a pool of worker processes. If this process is interrupted or fails,
    the workers are stopped with it; if it is killed, each worker ends with it
    (:func:`_start_worker`)."""
    context = get_context("spawn")  # no fork of a process that already runs torch threads
    pool = ProcessPoolExecutor(max_workers=min(workers, len(groups)), mp_context=context,
                               initializer=_start_worker, initargs=(os.getpid(),))
    try:
        pending = {pool.submit(call_trials, trials, *group) for group in groups}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                finished(future.result())
    except BaseException:
        processes = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        raise
    pool.shutdown()


def _start_worker(parent: int) -> None:
    """In each worker: one-line warnings, and the worker ends as soon as its parent is gone
    (killed, even with SIGKILL: :func:`~iglearn.processes.end_with_parent`), so no worker
    outlives the run nor computes for it after its end."""
    end_with_parent(parent)
    one_line_warnings()


def _run_ray(trials: StackedTrials, groups: Groups, execution: Execution,
             finished: Finished) -> None:
    try:
        import ray
    except ImportError as e:
        raise IGLearnError("--backend ray needs Ray: pip install -e '.[ray]'") from e
    with ray_instance(execution.ray_address, execution.workers()):
        remote = ray.remote(num_cpus=1)(call_trials)
        pending = [remote.remote(trials, *group) for group in groups]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            finished(ray.get(done[0]))
