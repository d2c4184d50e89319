"""Child processes that end with their parent.

The worker processes iglearn starts (the trial pool of ``iglearn reproduce``, the learning
worker of ``iglearn serve``) compute for their parent only: when the parent dies, killed
with SIGKILL included, each must stop at once rather than finish its work for nobody.
:func:`end_with_parent`, called first thing in the child, asks Linux to kill the child the
moment its parent ends (``PR_SET_PDEATHSIG``), which no busy interpreter can delay; elsewhere
(and as a second guard) a thread polls the parent's id and ends the process within
:data:`WATCH_SECONDS` of its parent's death.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from iglearn.errors import IGLearnError

__all__ = ["WATCH_SECONDS", "ChildRun", "end_with_parent", "parent_death_signal",
           "run_measured"]

WATCH_SECONDS = 0.2
"""How often the watching thread compares the parent's process id."""
_PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal the kernel sends a process when its parent ends."""


def parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent ends (Linux
    ``prctl(PR_SET_PDEATHSIG)``); whether it could. The "parent" is the thread that started
    this process: start such children from a thread that lives as long as the parent
    process (its main thread, an event loop's thread)."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)  # the C library the interpreter runs on
        return bool(libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0)
    return False


def end_with_parent(parent: int, code: int = 1) -> None:
    """End this process (exit status ``code``, nothing cleaned up) as soon as the process
    ``parent``, which started it, is gone: at once if it already is, by the kernel's SIGKILL
    where :func:`parent_death_signal` can ask for it, and in any case by a daemon thread
    that polls :func:`os.getppid` every :data:`WATCH_SECONDS` (a child is re-parented the
    moment its parent dies)."""
    parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent:  # it died before the signal was asked for
        os._exit(code)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_SECONDS)
        os._exit(code)

    threading.Thread(target=watch, daemon=True, name="iglearn-parent-watch").start()


def connect_ray(address: str | None, **options: Any) -> None:
    """``ray.init`` on the cluster at ``address`` (None: Ray's own choice, the running one or
    a new local one), a cluster it cannot reach told as one error naming ``--ray-address``
    (Ray's own says "Failed to connect", which the command line would blame on its input)."""
    import ray

    try:
        ray.init(address=address, **options)
    except ConnectionError as e:
        raise IGLearnError(f"--ray-address {address}: cannot reach a Ray cluster there ({e}); "
                           f"check the address (the head node's host:port, or 'auto' for the "
                           f"one this machine runs), or leave --ray-address out for a local "
                           f"Ray") from None


@contextlib.contextmanager
def ray_instance(address: str | None, cpus: int) -> Iterator[None]:
    """Ray for the block: the instance this process runs already, else the cluster at
    ``address``, else a local instance of ``cpus`` CPUs (no dashboard, the workers' output
    kept from this process's); one started here is shut down after the block."""
    import ray

    started = not ray.is_initialized()
    if started:
        options: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False,
                                       configure_logging=False)
        if address:
            connect_ray(address, **options)
        else:
            ray.init(num_cpus=cpus, **options)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


@dataclass(frozen=True)
class ChildRun:
    """What :func:`run_measured` measured of a child process."""

    returncode: int
    stdout: str
    stderr: str
    peak_rss_kib: int
    """Its peak resident memory (``ru_maxrss``, KiB on Linux)."""
    cpu_seconds: float
    """Its user and system CPU time."""
    wall_seconds: float


def run_measured(argv: Sequence[str]) -> ChildRun:
    """Run ``argv`` as a child process to its end and measure it as the kernel accounted it
    (``os.wait4``): peak resident memory and CPU time, whatever way the child ends (the
    ``iglearn`` command ends without the interpreter's teardown, which a wrapper measuring
    from inside the child would never reach). Its output goes through temporary files, so
    that a child that writes much does not block."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(list(argv), stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return ChildRun(child.returncode, out.read(), err.read(), int(usage.ru_maxrss),
                        usage.ru_utime + usage.ru_stime, wall)
