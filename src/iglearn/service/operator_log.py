"""The operator's log of a running service: one line on standard error per event (the
service started, a re-fit ended, a serving process swapped in another model version, an
admin rolled back or imported a model, a stored version could not be loaded, the service
stopped), as plain text for a terminal or,
with ``[server] log_format = "json"`` (``iglearn serve --log-format json``), as one JSON
object per line for log collectors.

A JSON line holds ``time`` (Unix seconds), ``event`` (``start``, ``refit``, ``swap``,
``rollback``, ``import``, ``pickup_error``, ``worker_died``, ``worker_restarted``,
``worker_error``, ``stop``, ``db_unreachable`` and ``db_reachable``: an outage of the
database begins and ends, :class:`DatabaseOutage`, ``database``: another warning of the
database driver, ``error``: a background task failed, with its ``level``, ``error`` and
``traceback``, and ``server``: a warning or error of the HTTP server,
uvicorn, such as a request that is not HTTP, :class:`ServerLog`),
``message`` (the text line's words) and the event's fields (a ``refit`` line's
``outcome`` is ``served``, ``held_back`` or ``failed``) (numbers, strings, booleans or
null; a non-finite number is written as null)."""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from typing import Any

from iglearn.data import safejson

LOG_FORMATS = ("text", "json")
"""The values of ``[server] log_format``."""


def log_event(log_format: str, event: str, message: str, **fields: Any) -> str:
    """Write one line for ``event`` to standard error (flushed) and return it: ``message``
    after ``iglearn serve:`` in the text format; an object of ``fields`` with ``time``,
    ``event`` and ``message`` in the JSON format."""
    if log_format == "json":  # iglearn's one JSON writer: a non-finite number is null
        line = safejson.dumps({"time": round(time.time(), 3), "event": event, **fields,
                               "message": message})
    else:
        line = f"iglearn serve: {message}"
    print(line, file=sys.stderr, flush=True)
    return line


def refit_message(reason: str, version: int | None, interactions: int,
                  indicator: float | None, seconds: float, error: str | None,
                  held_back: str | None = None, served: int = 0) -> str:
    """The text of a re-fit's line: why it ran, the version it stored, the interactions it
    was fitted on, its indicator, how long it took and whether it is served (else why not
    and which version, ``served``, goes on serving); or why it failed."""
    if error is not None:
        return f"re-fit ({reason}) stored nothing after {seconds:.2f} s: {error}"
    shown = "none" if indicator is None else f"{indicator:.4f}"
    outcome = "served" if held_back is None else (
        f"held back ({held_back}); still serving "
        f"{f'version {served}' if served else 'the warm-up exploration'}")
    return (f"re-fit ({reason}): version {version} on {interactions} interactions, "
            f"indicator {shown}, {seconds:.2f} s, {outcome}")


def import_message(version: int, previous: int, indicator: float | None) -> str:
    """The text of the line of a model imported through ``PUT /v1/model``: the version it
    was stored as (and is served as), the one served before (0: none) and its indicator."""
    shown = "none" if indicator is None else f"{indicator:.4f}"
    was = f"version {previous}" if previous else "the warm-up exploration"
    return (f"imported a model (PUT /v1/model): stored as version {version}, indicator "
            f"{shown}, served in place of {was}")


STOP_SIGNALS = {"SIGTERM": "SIGTERM", "SIGINT": "SIGINT, Ctrl-C",
                "SIGHUP": "SIGHUP, its terminal closed"}
"""How the stop line names each signal that stops the service gracefully."""


def stop_message(version: int, decisions: int, feedback: int, seconds: float,
                 signal: str | None = None) -> str:
    """The text of the line of a graceful shutdown on ``signal`` (SIGTERM, SIGINT: Ctrl-C,
    SIGHUP: its terminal closed; None: not told): the version served last (0: none), the
    decisions and feedback stored since the start, and how long it ran."""
    on = "" if signal is None else f" on {STOP_SIGNALS.get(signal, signal)}"
    served = f"model version {version}" if version else "the warm-up exploration"
    return (f"stopped (graceful shutdown{on}) after {seconds:.0f} s: served "
            f"{served}; stored {decisions} decision{'' if decisions == 1 else 's'} and the "
            f"feedback of {feedback} since the start; the learning worker stopped and the "
            f"exploration's round saved")


class ServerLog(logging.Handler):
    """The HTTP server's (uvicorn's) warnings and errors as lines of the operator's log
    (event ``server``, with its ``level``, and an error's ``traceback``), so that every line
    of a JSON log is an object (uvicorn writes its own in plain text)."""

    def __init__(self, log_format: str):
        super().__init__(logging.WARNING)
        self.log_format = log_format

    def emit(self, record: logging.LogRecord) -> None:
        fields: dict[str, Any] = {"level": record.levelname.lower()}
        message = record.getMessage()
        if record.exc_info:
            trace = logging.Formatter().formatException(record.exc_info)
            if self.log_format == "json":
                fields["traceback"] = trace
            else:
                message = f"{message}\n{trace}"
        log_event(self.log_format, "server", message, **fields)


def route_server_log(log_format: str) -> None:
    """Send uvicorn's warnings and errors to the operator's log (:class:`ServerLog`) only,
    and the database driver's too (:func:`route_database_log`)."""
    route_database_log(log_format)
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [ServerLog(log_format)] if name == "uvicorn" else []
        logger.propagate = name != "uvicorn"


def log_error(log_format: str, message: str, error: BaseException, **fields: Any) -> str:
    """One line (event ``error``, level ``error``) for a failure of a background task that
    the service survives (``message``: what failed, then the error): its ``error`` and, in the
    JSON format, its ``traceback`` as a field (the text format keeps to the one line)."""
    described = f"{type(error).__name__}: {error}"
    if log_format == "json":
        fields["traceback"] = "".join(traceback.format_exception(error))
    return log_event(log_format, "error", f"{message}: {described}", level="error",
                     error=described, **fields)


class DatabaseOutage:
    """The outage of this process's database, as the operator's log tells it: one line
    (event ``db_unreachable``, level ``error``) when a use of the database first finds it
    unreachable, one (``db_reachable``, level ``info``, with the outage's ``seconds`` and
    how many of the driver's messages it ``held`` back) when a use succeeds again, and
    nothing between, however many requests, background tasks and reconnection attempts
    fail meanwhile. Silent until :meth:`start` gives it the log's format (a command that
    opens the database reports its failure itself)."""

    def __init__(self) -> None:
        self.log_format: str | None = None
        self.process = "service"
        """Which process reports (``service``, or the learning ``worker``)."""
        self.since: float | None = None
        """When the outage began (Unix seconds), while it lasts; else None."""
        self.held = 0
        self._lock = threading.Lock()

    def start(self, log_format: str, process: str = "service") -> None:
        """Report outages in ``log_format`` from now on, as ``process``'s (its lines'
        ``process`` field: ``service``, or the learning ``worker``)."""
        self.log_format, self.process = log_format, process

    def down(self, problem: str) -> None:
        """A use of the database found it unreachable (``problem``: how)."""
        with self._lock:
            if self.since is not None:
                self.held += 1
                return
            self.since, self.held = time.time(), 0
        if self.log_format is not None:
            until = ("requests are answered 503" if self.process == "service"
                     else "the learning worker waits")
            log_event(self.log_format, "db_unreachable",
                      f"the database is unreachable ({problem}); {until} until it is back",
                      level="error", process=self.process, problem=problem)

    def up(self) -> None:
        """A use of the database succeeded."""
        with self._lock:
            if self.since is None:
                return
            seconds, held, self.since = time.time() - self.since, self.held, None
        if self.log_format is not None:
            log_event(self.log_format, "db_reachable",
                      f"the database is reachable again after {seconds:.1f} s "
                      f"({self.process})", level="info", process=self.process,
                      seconds=seconds, held=held)


OUTAGE = DatabaseOutage()
"""This process's database outage (a process has one database, shared by its storages)."""

CONNECTION_LOST = ("error connecting", "discarding closed connection",
                   "discarding broken connection", "reconnection attempt")
"""How the connection pool's (psycopg_pool's) messages of an unreachable database begin."""


class DatabaseLog(logging.Handler):
    """The database driver's (psycopg's and psycopg_pool's) warnings as lines of the
    operator's log: a message of a lost connection or a failed reconnection is the outage's
    (:data:`OUTAGE`: one line when it begins, then counted), any other one line (event
    ``database``, with its ``level``)."""

    def __init__(self, log_format: str):
        super().__init__(logging.WARNING)
        self.log_format = log_format

    def emit(self, record: logging.LogRecord) -> None:
        message = " ".join(line.strip() for line in record.getMessage().splitlines())
        if message.startswith(CONNECTION_LOST):
            OUTAGE.down("the server closed a pooled connection"
                        if message.startswith("discarding") else message)
            return
        fields: dict[str, Any] = {"level": record.levelname.lower()}
        if record.exc_info and self.log_format == "json":
            fields["traceback"] = logging.Formatter().formatException(record.exc_info)
        log_event(self.log_format, "database", message, **fields)


def route_database_log(log_format: str, process: str = "service") -> None:
    """Send the database driver's warnings to the operator's log (:class:`DatabaseLog`)
    only, and report outages there as ``process``'s (:data:`OUTAGE`)."""
    OUTAGE.start(log_format, process)
    for name in ("psycopg", "psycopg_pool"):
        logger = logging.getLogger(name)
        logger.handlers = [DatabaseLog(log_format)]
        logger.propagate = False
