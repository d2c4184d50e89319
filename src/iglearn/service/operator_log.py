"""The operator's log of a running service: one line on standard error per event (the
service started, a re-fit ended, a serving process swapped in another model version, an
admin rolled back or imported a model, a stored version could not be loaded, the service
stopped), as plain text for a terminal or,
with ``[server] log_format = "json"`` (``iglearn serve --log-format json``), as one JSON
object per line for log collectors.

A JSON line holds ``time`` (Unix seconds), ``event`` (``start``, ``refit``, ``swap``,
``rollback``, ``import``, ``pickup_error``, ``worker_died``, ``worker_restarted``,
``worker_error``, ``stop``, and ``server``: a warning or error of the HTTP server,
uvicorn, such as a request that is not HTTP, :class:`ServerLog`),
``message`` (the text line's words) and the event's fields (a ``refit`` line's
``outcome`` is ``served``, ``held_back`` or ``failed``) (numbers, strings, booleans or
null; a non-finite number is written as null)."""

from __future__ import annotations

import logging
import sys
import time
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
    """Send uvicorn's warnings and errors to the operator's log (:class:`ServerLog`) only."""
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [ServerLog(log_format)] if name == "uvicorn" else []
        logger.propagate = name != "uvicorn"
