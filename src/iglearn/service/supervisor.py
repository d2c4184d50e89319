"""The learning worker's supervisor: the service process starts the worker
(:func:`~iglearn.service.learning.worker_main`), notices within :data:`CHECK_SECONDS` when it
dies however it dies (a crash, the out-of-memory killer, ``kill -9``), and starts another
after a back-off: :data:`FIRST_BACKOFF_SECONDS`, doubled at each death that follows a short
life, at most :data:`MAX_BACKOFF_SECONDS`, and back to the first once a worker has run
:data:`STABLE_SECONDS`. Each death and restart is a line in the service's log and a count in
``/metrics``; while no worker runs, ``/healthz`` says ``degraded``, ``/readyz`` answers 503 and
a re-fit request answers 503 naming the cause (:meth:`WorkerSupervisor.problem`).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import threading
import time
from typing import Any

from iglearn.service.config import ServiceConfig
from iglearn.service.storage import Storage, StorageUnavailable

CHECK_SECONDS = 0.2
"""How often the service looks whether its worker still runs."""
FIRST_BACKOFF_SECONDS = 2.0
"""Wait before the first restart after a death."""
MAX_BACKOFF_SECONDS = 60.0
"""Longest wait before a restart (workers that keep dying at start)."""
STABLE_SECONDS = 60.0
"""A worker that ran this long before it died is restarted after the first back-off again."""
STOP_GRACE_SECONDS = 2.0
"""A worker ended by SIGTERM or SIGINT is counted dead only once the service has gone on this
long without stopping: such a signal to the whole process group (systemd, docker, ``timeout``,
Ctrl-C) stops the service too, and its worker's end is no crash."""


def start_learning_worker(config: ServiceConfig) -> Any:
    """Start the learning worker process (:func:`iglearn.service.learning.worker_main`). Call
    it from the thread that runs the service's event loop: the worker ends with the thread
    that started it (:func:`iglearn.processes.end_with_parent`)."""
    from iglearn.service.learning import worker_main

    context = multiprocessing.get_context("spawn")
    process = context.Process(target=worker_main, args=(config, os.getpid()), daemon=True,
                              name="iglearn-learning-worker")
    process.start()
    return process


def how_it_ended(exitcode: int | None) -> str:
    """A worker's end, in words: 'killed by SIGKILL', 'exit status 1'."""
    if exitcode is None:
        return "ended"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


def log(config: ServiceConfig, event: str, message: str, **fields: Any) -> None:
    """One line of the service's operator log (:func:`~iglearn.service.operator_log.log_event`,
    in ``[server] log_format``)."""
    from iglearn.service.operator_log import log_event

    log_event(config.server.log_format, event, message, **fields)


class WorkerSupervisor:
    """Runs the learning worker of one service process and restarts it when it dies.

    :meth:`start` and :meth:`check` run on the service's event loop thread (:meth:`check`
    every :data:`CHECK_SECONDS`); :meth:`stop` may run in any thread."""

    def __init__(self, config: ServiceConfig, storage: Storage):
        self.config, self.storage = config, storage
        self.process: Any = None
        self.deaths = 0
        """Workers that died while the service ran."""
        self.restarts = 0
        """Workers started after a death."""
        self.backoff = FIRST_BACKOFF_SECONDS
        self.started_at = 0.0
        self.died: tuple[float, str] | None = None
        """When the last worker died and how, while no worker runs (else None)."""
        self.restart_at = 0.0
        self.stopped = True
        self._signalled: float | None = None
        """When the check first found the worker ended by SIGTERM or SIGINT (None: not)."""
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        """Whether a worker process runs now."""
        process = self.process
        return process is not None and process.is_alive()

    @property
    def pid(self) -> int | None:
        """The worker's process id (None while none runs)."""
        process = self.process
        return None if process is None else int(process.pid)

    def start(self) -> None:
        """Start a worker (after :meth:`stop`: a fresh one, the back-off forgotten)."""
        with self._lock:
            self.stopped, self.died, self.backoff = False, None, FIRST_BACKOFF_SECONDS
            self._spawn(time.monotonic())

    def _spawn(self, now: float) -> bool:
        try:
            self.process = start_learning_worker(self.config)
        except Exception as e:  # no process could be started (out of memory, of pids)
            self.process = None
            self._dead(now, f"could not be started ({type(e).__name__}: {e})")
            return False
        self.started_at = now
        return True

    def _dead(self, now: float, how: str) -> None:
        """Record a death (or a failed start) and when to try again."""
        self.deaths += 1
        if now - self.started_at >= STABLE_SECONDS:
            self.backoff = FIRST_BACKOFF_SECONDS
        self.died, self.restart_at = (time.time(), how), now + self.backoff
        log(self.config, "worker_died", f"the learning worker {how}; starting another in "
            f"{self.backoff:g} s (deaths: {self.deaths})", how=how, deaths=self.deaths,
            backoff_seconds=self.backoff)
        self.backoff = min(2 * self.backoff, MAX_BACKOFF_SECONDS)

    def check(self) -> None:
        """Notice a dead worker (its re-fit, if it ran one, is marked as no longer running:
        the next worker takes a pending request up again), and start another when its
        back-off has passed."""
        with self._lock:
            if self.stopped:
                return
            now = time.monotonic()
            process = self.process
            if process is not None and not process.is_alive():
                if process.exitcode in (-signal.SIGTERM, -signal.SIGINT):
                    self._signalled = self._signalled or now
                    if now - self._signalled < STOP_GRACE_SECONDS:
                        return  # the service's group is stopping, most likely: wait and see
                self._signalled = None
                pid = process.pid
                process.join(0)
                self.process = None
                self._dead(now, f"died (pid {pid}, {how_it_ended(process.exitcode)})")
                self._forget_its_refit()
            if self.process is None and now >= self.restart_at and self._spawn(now):
                self.restarts += 1
                self.died = None
                log(self.config, "worker_restarted", f"learning worker restarted (pid "
                    f"{self.pid}; restarts: {self.restarts})", pid=self.pid,
                    restarts=self.restarts)

    def _forget_its_refit(self) -> None:
        """Clear the shared ``refit_running`` when the dead worker held the re-fit lease
        (it was this process's): no re-fit runs any more."""
        try:
            lease = self.storage.state("refit_lease") or {}
            if lease.get("pid") == os.getpid() and lease.get("port") == self.config.server.port:
                self.storage.set_state("refit_running", None)
        except StorageUnavailable:  # the outage has its line; the next worker runs it again
            pass
        except Exception as e:  # the restart matters more; say why
            log(self.config, "worker_error", f"cannot clear the dead worker's re-fit state: {e}",
                error=str(e))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the worker (SIGTERM, then SIGKILL after ``timeout`` s); no restart follows."""
        with self._lock:
            self.stopped = True
            process, self.process = self.process, None
        if process is not None:
            process.terminate()
            process.join(timeout)
            if process.is_alive():
                process.kill()
                process.join(timeout)

    def problem(self) -> str | None:
        """Why no learning worker runs now, with when the next starts (None while one runs,
        or starts)."""
        died = self.died
        if self.stopped:
            return "the learning worker is stopped"
        if died is None:
            return None
        at, how = died
        wait = max(0.0, self.restart_at - time.monotonic())
        return (f"no learning worker runs: it {how} {time.time() - at:.1f} s ago; another "
                f"starts in {wait:.1f} s")

    def retry_after(self) -> int:
        """Whole seconds until the next worker starts (for a Retry-After header)."""
        return max(1, math.ceil(self.restart_at - time.monotonic()))

    def metrics(self) -> str:
        """The worker's metrics, in Prometheus' text format."""
        lines = []
        for name, kind, doc, value in (
                ("iglearn_learning_worker_up", "gauge",
                 "Whether the learning worker runs (0: dead, waiting for its restart).",
                 int(self.running)),
                ("iglearn_learning_worker_deaths_total", "counter",
                 "Learning workers that died (or could not start) while the service ran.",
                 self.deaths),
                ("iglearn_learning_worker_restarts_total", "counter",
                 "Learning workers started again after a death.", self.restarts)):
            lines += [f"# HELP {name} {doc}", f"# TYPE {name} {kind}", f"{name} {value}"]
        return "\n".join(lines) + "\n"
