"""The process table as the tests read it (Linux's /proc): children, liveness, CPU time."""

from __future__ import annotations

import os
import time
from pathlib import Path

HAS_PROC = os.path.isdir("/proc")


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name (state first), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def command_line(pid: int) -> bytes:
    """The process's command line (NUL-separated; empty once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def spawned_children(pid: int) -> list[int]:
    """Children of ``pid`` started by multiprocessing's spawn (not its resource tracker)."""
    return [child for child in children(pid) if b"spawn_main" in command_line(child)]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def cpu_seconds(pid: int) -> float:
    """CPU seconds ``pid`` has used (user + system; 0 once it is gone)."""
    fields = _stat(pid)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_gone(pids: list[int], seconds: float) -> list[int]:
    """Wait up to ``seconds`` for every process of ``pids`` to end; those still running."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.02)
    return [pid for pid in pids if alive(pid)]
