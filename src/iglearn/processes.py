"""Child processes that end with their parent.

The worker processes iglearn starts (the trial pool of ``iglearn reproduce``, the learning
worker of ``iglearn serve``) compute for their parent only: when the parent dies, killed
with SIGKILL included, each must stop at once rather than finish its work for nobody.
:func:`end_with_parent`, called first thing in the child, asks Linux to kill the child the
moment its parent ends (``PR_SET_PDEATHSIG``), which no busy interpreter can delay; elsewhere
(and as a second guard) a thread polls the parent's id and ends the process within
:data:`WATCH_SECONDS` of its parent's death.

The Ray processes iglearn starts or joins are reached through :func:`connect_ray` (and
:func:`ray_instance` for a block): an address is checked before Ray is asked to connect
(:func:`check_reachable`), and Ray's notices are kept off the command's output
(:func:`quiet_ray`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
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


RAY_OPTIONS: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False,
                                   configure_logging=False)
"""How iglearn starts or joins Ray: no dashboard, the workers' output kept from this
process's, Ray's logging left as the process has it."""

TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"
"""The start of the notice Ray prints when it starts a local instance with its default
(token) authentication, which asks nothing of iglearn's user."""

_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"
_RAY_DATA_PROGRESS = "ray.data._internal.progress"


class _RayNotices(logging.Filter):
    """Drops Ray's notices about what iglearn chose for its user: token authentication on
    (Ray's default, :data:`TOKEN_NOTICE`) and Ray Data's progress bars off (iglearn shows its
    own progress)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(_RAY_DATA_PROGRESS):
            return False
        return not record.getMessage().startswith(TOKEN_NOTICE)


def quiet_ray() -> None:
    """Keep Ray's notices off this process's standard error, so that a command's output is
    iglearn's: the token notice is dropped, and Ray Data's console prints warnings and errors
    only (its INFO lines, three per pass over a log, still go to the session's log files under
    ``/tmp/ray``). Idempotent; Ray Data's console is quieted only once it is imported."""
    notices = _RayNotices()
    token = logging.getLogger(_TOKEN_LOGGER)
    if not any(isinstance(f, _RayNotices) for f in token.filters):
        token.addFilter(notices)
    if "ray.data" not in sys.modules:
        return
    for handler in logging.getLogger("ray.data").handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler,
                                                                        logging.FileHandler):
            handler.setLevel(max(handler.level, logging.WARNING))
            if not any(isinstance(f, _RayNotices) for f in handler.filters):
                handler.addFilter(notices)


RAY_CONNECT_SECONDS = 5.0
"""How long :func:`connect_ray` waits for a TCP connection to the cluster at a given address
before it tells the address cannot be reached (Ray itself retries an unreachable address for
minutes, printing a warning every few seconds)."""


def ray_endpoint(address: str) -> tuple[str, int] | None:
    """The host and port a Ray address (``host:port``, ``ray://host:port``) connects to, a
    local host name as Ray resolves it (to this node's address); None for ``auto`` and
    ``local``, which Ray resolves itself. A value that is not such an address is an error."""
    if address in ("auto", "local"):
        return None
    target = address.removeprefix("ray://")
    host, colon, port = target.rpartition(":")
    host = host.strip("[]")  # an IPv6 address in brackets
    if not (colon and host and port.isdigit() and 0 < int(port) < 65536):
        raise IGLearnError(f"--ray-address {address}: not a Ray address; give the head node's "
                           f"host:port (ray start --head prints it), ray://host:port for Ray "
                           f"Client, or auto for the cluster this machine runs")
    if not address.startswith("ray://"):
        with contextlib.suppress(ImportError, AttributeError):  # as ray.init resolves it
            from ray._private.services import resolve_ip_for_localhost
            host = resolve_ip_for_localhost(host)
    return host, int(port)


def check_reachable(address: str) -> None:
    """Refuse, in one line naming ``--ray-address``, a Ray address (:func:`ray_endpoint`)
    whose host and port take no TCP connection within :data:`RAY_CONNECT_SECONDS`."""
    endpoint = ray_endpoint(address)
    if endpoint is None:
        return
    try:
        with socket.create_connection(endpoint, timeout=RAY_CONNECT_SECONDS):
            return
    except OSError as e:
        why = "no answer" if isinstance(e, TimeoutError) else e.strerror or str(e)
    raise IGLearnError(f"--ray-address {address}: cannot reach a Ray cluster there ({why} at "
                       f"{endpoint[0]}:{endpoint[1]}); check the address (the head node's "
                       f"host:port, or 'auto' for the one this machine runs), or leave "
                       f"--ray-address out for a local Ray")


def connect_ray(address: str | None, cpus: int | None = None) -> None:
    """``ray.init`` with :data:`RAY_OPTIONS` on the cluster at ``address`` (None: Ray's own
    choice, the running one or a new local one of ``cpus`` CPUs, all when None), Ray's
    notices kept quiet (:func:`quiet_ray`); a cluster it cannot reach told as one error naming
    ``--ray-address``, at once (:func:`check_reachable`) or when Ray finds no cluster there
    (Ray's own says "Failed to connect", which the command line would blame on its input);
    ``auto`` with no cluster on this machine is told so, without Ray's advice on its own
    command line's options."""
    if address:
        check_reachable(address)
    import ray

    quiet_ray()
    options = dict(RAY_OPTIONS)
    if cpus is not None and not address:
        options["num_cpus"] = cpus
    try:
        ray.init(address=address, **options)
    except ConnectionError as e:
        if address == "auto":  # Ray's own text advises options of its own command line
            raise IGLearnError("--ray-address auto: no Ray cluster runs on this machine; start "
                               "one (ray start --head) or leave --ray-address out for a local "
                               "Ray") from None
        raise IGLearnError(f"--ray-address {address}: cannot reach a Ray cluster there ({e}); "
                           f"check the address (the head node's host:port, or 'auto' for the "
                           f"one this machine runs), or leave --ray-address out for a local "
                           f"Ray") from None


@contextlib.contextmanager
def ray_instance(address: str | None, cpus: int) -> Iterator[None]:
    """Ray for the block: the instance this process runs already, else the cluster at
    ``address``, else a local instance of ``cpus`` CPUs (:func:`connect_ray`); one started
    here is shut down after the block."""
    import ray

    started = not ray.is_initialized()
    if started:
        connect_ray(address, cpus)
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
