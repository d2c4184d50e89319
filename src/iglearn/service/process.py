"""Run a decision service in a child process, for tests, benchmarks and notebooks: write a
configuration, create keys, start ``iglearn serve`` on a free loopback port and wait until
it answers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from iglearn.errors import IGLearnError


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def toml_value(value: Any) -> str:
    """``value`` (a number, string, boolean or dict of them) as TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def config_text(tables: dict[str, dict[str, Any]]) -> str:
    """A TOML configuration of ``tables`` ({table: {key: value}})."""
    lines = []
    for table, values in tables.items():
        lines.append(f"[{table}]")
        lines.extend(f"{key} = {toml_value(value)}" for key, value in values.items())
    return "\n".join(lines) + "\n"


def write_config(path: str | Path, tables: dict[str, dict[str, Any]]) -> Path:
    """Write a TOML configuration of ``tables`` ({table: {key: value}}) to ``path``."""
    path = Path(path)
    path.write_text(config_text(tables))
    return path


def add_key(config: str | Path, role: str) -> str:
    """Create a key for the service of ``config`` (as ``iglearn serve keys add`` does)."""
    from iglearn.service.keys import create_key

    return create_key(config, role)


class ServiceProcess:
    """``iglearn serve --config CONFIG`` in a child process, on ``port`` (with ``--demo``:
    the demo page too).

    Use as a context manager, or call :meth:`start` and :meth:`stop`; :meth:`kill` sends
    SIGKILL (a crash)."""

    def __init__(self, config: str | Path, port: int, insecure_no_auth: bool = False,
                 log: str | Path | None = None, nice: int = 0, demo: bool = False):
        self.config, self.port, self.insecure = Path(config), port, insecure_no_auth
        self.demo = demo
        self.url = f"http://127.0.0.1:{port}"
        self.log = Path(log) if log is not None else self.config.with_suffix(".log")
        self.nice = nice
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> ServiceProcess:
        """Start the service and wait until ``/healthz`` answers."""
        command = [sys.executable, "-m", "iglearn", "serve", "--config", str(self.config),
                   "--port", str(self.port)]
        if self.insecure:
            command.append("--insecure-no-auth")
        if self.demo:
            command.append("--demo")
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT,
                preexec_fn=(lambda: os.nice(self.nice)) if self.nice else None)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise IGLearnError(f"the service exited with code {self.process.returncode}: "
                                   f"{self.log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise IGLearnError(f"the service did not answer within {timeout} s: "
                           f"{self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL the service (its learning worker notices and ends)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(30)

    def stop(self) -> None:
        """SIGTERM the service and wait for it to end (SIGKILL after 20 s)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
