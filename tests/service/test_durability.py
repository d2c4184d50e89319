"""Durability: kill -9 the service during load, restart it: every decision and feedback that
received a 2xx is stored exactly once, the latest model is served, and learning goes on."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import httpx
import numpy as np
import pytest

from iglearn.service.process import ServiceProcess, free_port

from .conftest import D_X, D_Y, play, start_service


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(child) for child in text]
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def load(url: str, key: str, seed: int, stop: threading.Event, decided: dict,
         fed: dict) -> None:
    """Decide and feed back until the service goes away; record what got a 2xx."""
    rng = np.random.default_rng(seed)
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {key}"},
                      timeout=10) as http:
        while not stop.is_set():
            eid = uuid.uuid4().hex
            try:
                answer = http.post("/v1/decide", json={"context": rng.normal(size=D_X).tolist(),
                                                       "event_id": eid})
                if answer.status_code == 200:
                    decided[eid] = answer.json()
                y = rng.normal(size=D_Y).astype(np.float32)
                answer = http.post("/v1/feedback", json={"event_id": eid,
                                                         "feedback": y.tolist()})
                if answer.status_code == 204:
                    fed[eid] = y
            except httpx.TransportError:
                return


@pytest.mark.slow
def test_kill_during_load_then_restart(tmp_path):
    running = start_service(tmp_path, learning={"refit_every": 80, "min_interactions": 40})
    process = running.process
    decided: dict[str, dict] = {}
    fed: dict[str, np.ndarray] = {}
    stop = threading.Event()
    threads = [threading.Thread(target=load, args=(running.url, running.client_key, s, stop,
                                                   decided, fed)) for s in range(2)]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        with running.http() as http:  # load until a re-fitted model is served
            while http.get("/v1/model").json()["version"] < 1:
                assert time.monotonic() < deadline, "no model was fitted under load"
                time.sleep(0.2)
        time.sleep(0.5)
        workers = children(process.process.pid)
        assert workers, "the learning worker runs as a child process"
        process.kill()                                   # SIGKILL while the load goes on
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers):            # the worker ends with its service
        assert time.monotonic() < deadline, "the learning worker outlived its service"
        time.sleep(0.1)
    assert len(decided) > 20 and len(fed) > 20

    restarted = ServiceProcess(process.config, free_port()).start()
    try:
        storage = running.storage()
        rows = storage._db.execute("SELECT event_id, count(*) FROM interactions "
                                   "GROUP BY event_id HAVING count(*) > 1").fetchall()
        assert rows == []
        for eid, decision in decided.items():
            stored = storage._decision(eid)
            assert (stored.action, stored.probability, stored.model_version) == (
                decision["action"], decision["probability"], decision["model_version"])
        joined = storage.joined()
        by_id = dict(zip(joined.event_id, joined.feedback, strict=True))
        for eid, y in fed.items():
            np.testing.assert_array_equal(by_id[eid], y)
        latest = max(m.version for m in storage.models())
        running.process = restarted
        with running.http() as http, running.http("admin") as admin:
            assert http.get("/v1/model").json()["version"] == latest
            assert http.post("/v1/decide", json={"context": [0.0] * D_X}
                             ).json()["model_version"] == latest
            play(http, 40, np.random.default_rng(9))     # learning goes on
            refit = admin.post("/v1/model/refit?wait=120")
            assert refit.status_code == 200, refit.text
            assert refit.json()["version"] > latest
    finally:
        restarted.stop()
