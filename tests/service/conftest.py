"""Real decision services for the tests: ``iglearn serve`` in a child process on a free
loopback port, with a small problem (K = 3, 4-dim contexts, 3-dim feedback) and short fits.

Every test of a service runs once per storage backend: SQLite always, PostgreSQL when its
server binaries (``initdb``, ``pg_ctl``) and psycopg are installed, on a throw-away server
that the session starts in a temporary folder and stops at its end (each service gets a
database of its own)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from iglearn.service.postgres_server import PostgresServer, server_binaries
from iglearn.service.process import ServiceProcess, add_key, free_port, write_config
from iglearn.service.storage import SQLiteStorage, Storage, open_storage

K, D_X, D_Y = 3, 4, 3
BACKENDS = ("sqlite", "postgresql")


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[PostgresServer]:
    """A throw-away PostgreSQL server, stopped and removed at the end (skips the test
    without PostgreSQL's server binaries or psycopg)."""
    pytest.importorskip("psycopg", reason="psycopg is not installed (iglearn[postgres])")
    pytest.importorskip("psycopg_pool", reason="psycopg_pool is not installed")
    if server_binaries() is None:
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    with PostgresServer(fsync=False) as server:
        yield server


@pytest.fixture(scope="session")
def postgres_server():
    """A throw-away PostgreSQL server for the session (skips without one)."""
    with throwaway_postgres() as server:
        yield server


@pytest.fixture(params=BACKENDS)
def database(request, tmp_path) -> str:
    """A new, empty database of each backend: its ``db`` setting."""
    if request.param == "sqlite":
        return str(tmp_path / "service.db")
    return request.getfixturevalue("postgres_server").new_database()


def tables(**override: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A small configuration; ``override`` replaces keys table by table. Its fits are too
    short to identify the feedback's meaning reliably, so every re-fit is served
    (``serve_unidentified``) unless a test says otherwise."""
    base: dict[str, dict[str, Any]] = {
        "model": {"n_actions": K, "context_dim": D_X, "feedback_dim": D_Y,
                  "learner": {"max_restarts": 1, "optimisation": {"max_steps": 20}}},
        "exploration": {"mode": "e2g", "warmup": 50},
        "learning": {"refit_every": 100000, "refit_seconds": 100000.0,
                     "min_interactions": 30, "poll_seconds": 0.1, "join_window": 600.0,
                     "serve_unidentified": True},
        "server": {"db": "service.db"}}
    for table, values in override.items():
        base[table] = base.get(table, {}) | values
    return base


@dataclass
class Running:
    """A running service and its keys."""

    process: ServiceProcess
    client_key: str
    admin_key: str
    folder: Path
    db: str
    """The ``db`` setting (a file name in ``folder`` or a PostgreSQL URL)."""
    _storage: Storage | None = None

    @property
    def url(self) -> str:
        return self.process.url

    def http(self, key: str | None = "client") -> httpx.Client:
        """An HTTP client sending the client key, the admin key, a given key or none."""
        given = {"client": self.client_key, "admin": self.admin_key}.get(key, key)
        headers = {"authorization": f"Bearer {given}"} if given else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def storage(self) -> Storage:
        """The service's database, opened beside it (read while it runs)."""
        if self._storage is None:
            db = self.db if "://" in self.db else self.folder / self.db
            self._storage = open_storage(db, pool_size=1)
        return self._storage

    def stop(self) -> None:
        self.process.stop()
        if self._storage is not None:
            self._storage.close()


def duplicate_event_ids(storage: Storage) -> list[tuple[str, int]]:
    """Event ids stored more than once, counted in the database itself."""
    query = "SELECT event_id, count(*) FROM {} GROUP BY event_id HAVING count(*) > 1"
    if isinstance(storage, SQLiteStorage):
        return storage._db.execute(query.format("interactions")).fetchall()
    with storage._pool.connection() as connection:  # type: ignore[attr-defined]
        return connection.execute(query.format("iglearn_interactions")).fetchall()


def start_service(folder: Path, db: str = "service.db", **override: dict[str, Any]
                  ) -> Running:
    config = write_config(folder / "service.toml",
                          tables(**override | {"server": {"db": db} | override.get("server", {})}))
    client_key, admin_key = add_key(config, "client"), add_key(config, "admin")
    process = ServiceProcess(config, free_port()).start()
    return Running(process, client_key, admin_key, folder, db)


@pytest.fixture(scope="session", params=BACKENDS)
def service(request, tmp_path_factory):
    """One service per backend shared by the tests (they must not depend on each other's
    traffic)."""
    db = "service.db"
    if request.param == "postgresql":
        db = request.getfixturevalue("postgres_server").new_database()
    running = start_service(tmp_path_factory.mktemp("service"), db,
                            learning={"join_window": 1.0})
    yield running
    running.stop()


def play(http: httpx.Client, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` interactions of a simulated user whose feedback says whether the action was
    the context's largest coordinate (among the first K); the event ids."""
    ids = []
    for _ in range(n):
        x = rng.normal(size=D_X)
        decision = http.post("/v1/decide", json={"context": x.tolist()}).json()
        right = decision["action"] == int(np.argmax(x[:K]))
        y = (np.eye(D_Y)[0] if right else np.eye(D_Y)[1]) + rng.normal(scale=0.1, size=D_Y)
        assert http.post("/v1/feedback", json={"event_id": decision["event_id"],
                                               "feedback": y.tolist()}).status_code == 204
        ids.append(decision["event_id"])
    return ids
