"""The decision service while its PostgreSQL database is unreachable: a server of the test's
own (not the session's shared one) is stopped as an operator's ``pg_ctl stop -m fast`` does,
then started again on the same data folder and port."""

from __future__ import annotations

import json
import time

import httpx
import numpy as np
import pytest

from .conftest import D_X, D_Y, play, start_service, throwaway_postgres

OUTAGE_ANSWER_SECONDS = 10.0
"""A request during an outage is answered within this (psycopg_pool's default held it 30 s)."""
RECOVERY_SECONDS = 30.0
"""The service answers again within this once the database is back."""


@pytest.fixture
def own_server():
    """A PostgreSQL server this test may stop and start (skips without one)."""
    with throwaway_postgres() as server:
        yield server


def until(check, seconds: float) -> float:
    """Ask ``check()`` every 0.1 s until it is true; how long that took (fails after
    ``seconds``)."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < seconds, f"not within {seconds} s"
        time.sleep(0.1)
    return time.monotonic() - start


def timed(call, *args, **kwargs):
    """``call(*args, **kwargs)`` and the seconds it took."""
    start = time.monotonic()
    result = call(*args, **kwargs)
    return result, time.monotonic() - start


def test_storage_raises_unavailable_promptly_and_recovers(own_server):
    from iglearn.service.postgres import PostgresStorage
    from iglearn.service.storage import Decision, StorageUnavailable

    storage = PostgresStorage(own_server.new_database())

    def decision(event_id: str) -> Decision:
        return Decision(event_id, np.zeros(D_X, np.float32), 0, 0.5, np.array([0.5, 0.5]), 0,
                        False, True, time.time())

    try:
        storage.add_decisions([decision("before")])
        assert storage.probe() is None and storage.unreachable is None
        own_server.pause()
        for name in ("during-1", "during-2", "during-3"):  # a pooled connection, then none
            start = time.monotonic()
            with pytest.raises(StorageUnavailable, match=r"^the database is unreachable "
                                                         r"\(.*\); ask again shortly$"):
                storage.add_decisions([decision(name)])
            assert time.monotonic() - start < OUTAGE_ANSWER_SECONDS
        problem, seconds = timed(storage.probe)
        assert problem is not None and problem.startswith("the database is unreachable")
        assert seconds < 2.0 and storage.unreachable is not None
        own_server.resume()
        until(lambda: storage.probe() is None, RECOVERY_SECONDS)
        storage.add_decisions([decision("after")])
        assert storage.unreachable is None
        assert storage.counts().decisions == 2  # nothing of the outage was stored
    finally:
        storage.close()


def test_service_answers_503_during_an_outage_and_recovers(own_server, tmp_path):
    running = start_service(tmp_path, own_server.new_database(),
                            server={"log_format": "json"})
    rng = np.random.default_rng(0)
    context = {"context": [0.1] * D_X}
    try:
        with running.http() as http, running.http("admin") as admin:
            ids = play(http, 30, rng)  # enough to re-fit on (min_interactions)
            own_server.pause()

            decided, seconds = timed(http.post, "/v1/decide", json=context)
            assert decided.status_code == 503 and seconds < OUTAGE_ANSWER_SECONDS
            assert decided.json()["error"].startswith("the database is unreachable (")
            assert decided.json()["error"].endswith("; ask again shortly")
            assert int(decided.headers["retry-after"]) >= 1
            for method, path, body, client in (
                    ("POST", "/v1/feedback", {"event_id": ids[0], "feedback": [1.0] * D_Y},
                     http),
                    ("GET", "/v1/model", None, http),
                    ("POST", "/v1/model/refit", None, admin)):
                answer, seconds = timed(client.request, method, path, json=body)
                assert answer.status_code == 503, (path, answer.text)
                assert seconds < OUTAGE_ANSWER_SECONDS and "retry-after" in answer.headers
            ready, seconds = timed(httpx.get, running.url + "/readyz", timeout=10)
            assert ready.status_code == 503 and seconds < OUTAGE_ANSWER_SECONDS
            assert ready.json()["ready"] is False
            assert ready.json()["problem"].startswith("the database is unreachable")
            health = httpx.get(running.url + "/healthz", timeout=10)
            assert health.status_code == 200  # liveness: an outage is no reason to restart
            assert health.json()["status"] == "degraded"
            assert "database is unreachable" in health.json()["problem"]
            time.sleep(1.0)  # the learning worker polls the database meanwhile

            own_server.resume()
            until(lambda: http.post("/v1/decide", json=context).status_code == 200,
                  RECOVERY_SECONDS)
            until(lambda: httpx.get(running.url + "/readyz").status_code == 200,
                  RECOVERY_SECONDS)
            assert httpx.get(running.url + "/healthz").json()["status"] == "ok"
            refit = admin.post("/v1/model/refit?wait=60")  # the lease is taken again
            assert refit.status_code == 200 and refit.json()["version"] >= 1, refit.text
    finally:
        running.stop()
    lines = running.process.log.read_text().splitlines()
    events = [json.loads(line)["event"] for line in lines]  # every line is JSON
    assert "db_unreachable" in events and "db_reachable" in events
    assert events.count("db_unreachable") <= 2  # once per process: service, worker
    assert "error" not in events and "database" not in events
