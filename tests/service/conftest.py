"""Real decision services for the tests: ``iglearn serve`` in a child process on a free
loopback port, with a small problem (K = 3, 4-dim contexts, 3-dim feedback) and short fits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from iglearn.service.process import ServiceProcess, add_key, free_port, write_config
from iglearn.service.storage import SQLiteStorage

K, D_X, D_Y = 3, 4, 3


def tables(**override: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A small configuration; ``override`` replaces keys table by table."""
    base: dict[str, dict[str, Any]] = {
        "model": {"n_actions": K, "context_dim": D_X, "feedback_dim": D_Y,
                  "learner": {"max_restarts": 1, "optimisation": {"min_steps": 20}}},
        "exploration": {"mode": "e2g", "warmup": 50},
        "learning": {"refit_every": 100000, "refit_seconds": 100000.0,
                     "min_interactions": 30, "poll_seconds": 0.1, "join_window": 600.0},
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

    @property
    def url(self) -> str:
        return self.process.url

    def http(self, key: str | None = "client") -> httpx.Client:
        """An HTTP client sending the client key, the admin key, a given key or none."""
        given = {"client": self.client_key, "admin": self.admin_key}.get(key, key)
        headers = {"authorization": f"Bearer {given}"} if given else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def storage(self) -> SQLiteStorage:
        """The service's database, opened beside it (read while it runs)."""
        return SQLiteStorage(self.folder / "service.db")


def start_service(folder: Path, **override: dict[str, Any]) -> Running:
    config = write_config(folder / "service.toml", tables(**override))
    client_key, admin_key = add_key(config, "client"), add_key(config, "admin")
    process = ServiceProcess(config, free_port()).start()
    return Running(process, client_key, admin_key, folder)


@pytest.fixture(scope="session")
def service(tmp_path_factory):
    """One service shared by the tests (they must not depend on each other's traffic)."""
    running = start_service(tmp_path_factory.mktemp("service"),
                            learning={"join_window": 1.0})
    yield running
    running.process.stop()


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
