"""A throw-away PostgreSQL server for tests and benchmarks: ``initdb`` a cluster in a
temporary folder, start it with ``pg_ctl`` on a free loopback port (no Unix socket outside
that folder, trust authentication on loopback only), hand out databases, stop it and delete
the folder afterwards.

The server binaries come from ``$IGLEARN_PG_BIN``, the ``PATH``, or Debian's and Ubuntu's
``/usr/lib/postgresql/VERSION/bin`` (the newest version). PostgreSQL refuses to run as root,
so as root the server runs as the ``postgres`` user (which Debian's package creates) through
``runuser``, and the folder belongs to that user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from iglearn.errors import IGLearnError
from iglearn.service.process import free_port

SERVER_USER = "postgres"
"""Who runs the server when this process is root."""


def server_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None if PostgreSQL's server is not
    installed."""
    candidates = []
    if os.environ.get("IGLEARN_PG_BIN"):
        candidates.append(Path(os.environ["IGLEARN_PG_BIN"]))
    found = shutil.which("initdb")
    if found:
        candidates.append(Path(found).parent)

    def version(folder: str) -> tuple[int, ...]:
        name = Path(folder).parent.name
        return tuple(int(p) for p in name.split(".") if p.isdigit())

    candidates += [Path(f) for f in sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                                           key=version, reverse=True)]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


class PostgresServer:
    """A PostgreSQL server of its own in a temporary folder, on ``127.0.0.1:port``.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. ``fsync``: off for
    tests (nothing survives a crash of the machine, which tests never need), on for
    measurements."""

    def __init__(self, fsync: bool = True, port: int | None = None):
        binaries = server_binaries()
        if binaries is None:
            raise IGLearnError("PostgreSQL's server is not installed (no initdb and pg_ctl); "
                               "install it, e.g. apt-get install postgresql, or set "
                               "IGLEARN_PG_BIN to the folder that holds them")
        self.bin = binaries
        self.fsync = fsync
        self.port = port or free_port()
        self.user = SERVER_USER
        self.folder: Path | None = None
        self._databases = 0

    def _as_server_user(self, *command: str) -> list[str]:
        if os.geteuid() != 0:
            return list(command)
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            raise IGLearnError(f"PostgreSQL refuses to run as root and there is no "
                               f"'{SERVER_USER}' user to run it; create one (useradd "
                               f"{SERVER_USER}) or run as another user") from None
        return ["runuser", "-u", SERVER_USER, "--", *command]

    def _run(self, *command: str) -> None:
        result = subprocess.run(self._as_server_user(*command), capture_output=True,
                                text=True, timeout=120)
        if result.returncode != 0:
            log = ""
            if self.folder is not None and (self.folder / "server.log").exists():
                log = (self.folder / "server.log").read_text()[-2000:]
            raise IGLearnError(f"{Path(command[0]).name} failed ({result.returncode}): "
                               f"{(result.stderr or result.stdout).strip()[-2000:]} {log}")

    @property
    def data(self) -> Path:
        assert self.folder is not None, "the server has not been started"
        return self.folder / "data"

    def start(self) -> PostgresServer:
        """Create the cluster and start the server; wait until it accepts connections."""
        self.folder = Path(tempfile.mkdtemp(prefix="iglearn-postgres-"))
        if os.geteuid() == 0:
            self._as_server_user()  # says what to do when there is no such user
            account = pwd.getpwnam(SERVER_USER)
            os.chown(self.folder, account.pw_uid, account.pw_gid)
        self.user = SERVER_USER if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
        self.resume()
        return self

    def pause(self) -> None:
        """Stop the server as an operator's ``pg_ctl stop -m fast`` does (its connections
        are ended), keeping its data: a database outage, until :meth:`resume`."""
        self._run(str(self.bin / "pg_ctl"), "stop", "-w", "-m", "fast", "-D", str(self.data))

    def resume(self) -> None:
        """Start the server on its data folder and port; wait until it accepts
        connections."""
        assert self.folder is not None, "the server has not been started"
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 "
                   f"-c unix_socket_directories={self.folder} "
                   f"-c fsync={'on' if self.fsync else 'off'} -c max_connections=200")
        self._run(str(self.bin / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(self.data),
                  "-l", str(self.folder / "server.log"), "-o", options)

    def url(self, database: str = "postgres") -> str:
        """The connection URL of ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self, prefix: str = "iglearn") -> str:
        """Create an empty database; its URL."""
        from iglearn.service.postgres import _connect

        self._databases += 1
        name = f"{prefix}_{self._databases}"
        connection = _connect(self.url())
        try:
            connection.execute(f'CREATE DATABASE "{name}"')
        finally:
            connection.close()
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its folder."""
        if self.folder is None:
            return
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(str(self.bin / "pg_ctl"), "stop", "-w", "-m", "fast", "-D",
                          str(self.data))
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
