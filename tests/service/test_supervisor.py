"""The learning worker is supervised: a real service whose worker is killed with SIGKILL
says so (the log, /metrics, /healthz degraded, /readyz 503, a re-fit request 503 naming the
cause) and starts another after a back-off that grows with each death; a re-fit waited for
when its worker dies is answered at once, and the next worker takes the request up."""

from __future__ import annotations

import os
import re
import signal
import threading
import time

import httpx
import numpy as np
import pytest

from iglearn.service.supervisor import FIRST_BACKOFF_SECONDS, how_it_ended
from tests.process_table import HAS_PROC, spawned_children, wait_gone

from .conftest import Running, play, start_service

pytestmark = pytest.mark.skipif(not HAS_PROC, reason="reads the process table in /proc")


def the_worker(running: Running, other_than: int | None = None, seconds: float = 60) -> int:
    """The pid of the service's learning worker (a new one, with ``other_than``)."""
    assert running.process.process is not None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        workers = [pid for pid in spawned_children(running.process.process.pid)
                   if pid != other_than]
        if len(workers) == 1:
            return workers[0]
        time.sleep(0.02)
    raise AssertionError("the service runs no (new) learning worker")


def metric(running: Running, name: str) -> float:
    with running.http("admin") as http:
        text = http.get("/metrics").text
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    assert found, f"{name} is not in /metrics"
    return float(found.group(1))


def wait_for(check, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"{what} within {seconds} s")


@pytest.fixture
def running(tmp_path):
    running = start_service(tmp_path, model={"learner": {
        "max_restarts": 0, "optimisation": {"max_steps": 10 ** 7}}})  # a re-fit is slow
    yield running
    running.stop()


def test_a_killed_worker_is_reported_and_restarted_with_a_growing_backoff(running):
    # killed twice (SIGKILL, then SIGTERM): each death said and counted, each restart later
    worker = the_worker(running)
    with running.http(None) as http:
        assert http.get("/healthz").json()["status"] == "ok"
        assert http.get("/readyz").status_code == 200
    assert metric(running, "iglearn_learning_worker_up") == 1
    for death, sig in ((1, signal.SIGKILL), (2, signal.SIGTERM)):
        os.kill(worker, sig)
        killed = time.monotonic()
        with running.http(None) as http:
            health = wait_for(lambda: (h := http.get("/healthz").json())["status"] == "degraded"
                              and h, 5, "/healthz never said degraded")
            assert sig.name in health["problem"] and str(worker) in health["problem"]
            ready = http.get("/readyz")
            assert ready.status_code == 503 and ready.json()["ready"] is False
        with running.http("admin") as http:
            refit = http.post("/v1/model/refit", params={"wait": 5})
        assert refit.status_code == 503, refit.text
        error = refit.json()["error"]
        assert "learning worker" in error and f"killed by {sig.name}" in error, error
        assert int(refit.headers["retry-after"]) >= 1
        assert metric(running, "iglearn_learning_worker_up") == 0
        assert metric(running, "iglearn_learning_worker_deaths_total") == death
        worker = the_worker(running, other_than=worker, seconds=30)
        waited = time.monotonic() - killed
        # each death doubles the wait before the restart
        assert waited >= FIRST_BACKOFF_SECONDS * 2 ** (death - 1) * 0.9
        with running.http(None) as http:
            wait_for(lambda: http.get("/healthz").json()["status"] == "ok", 10,
                     "/healthz never said ok again")
            assert http.get("/readyz").status_code == 200
        assert metric(running, "iglearn_learning_worker_restarts_total") == death
        assert metric(running, "iglearn_learning_worker_up") == 1
    running.stop()
    log = running.process.log.read_text()
    assert log.count("died (pid") == 2
    assert "killed by SIGKILL" in log and "killed by SIGTERM" in log
    assert log.count("learning worker restarted (pid") == 2
    assert wait_gone([worker], 5) == [], "the last worker outlived its service"


def test_a_refit_waited_for_is_answered_when_its_worker_dies_and_taken_up_again(running):
    with running.http() as http:
        play(http, 40, np.random.default_rng(0))
    worker = the_worker(running)
    answers: list[httpx.Response] = []

    def ask() -> None:
        with running.http("admin") as http:
            answers.append(http.post("/v1/model/refit", params={"wait": 120}))

    asking = threading.Thread(target=ask)
    asking.start()
    with running.http() as http:
        wait_for(lambda: http.get("/v1/model").json()["refit_running"], 60,
                 "the re-fit never started")
    os.kill(worker, signal.SIGKILL)
    killed = time.monotonic()
    asking.join(30)
    assert answers and answers[0].status_code == 503, answers
    assert time.monotonic() - killed < 5, "the waiting request was not answered promptly"
    assert "learning worker" in answers[0].json()["error"]
    with running.http() as http:  # the dead worker's re-fit is no longer shown as running
        assert http.get("/v1/model").json()["refit_running"] is None
        worker = the_worker(running, other_than=worker, seconds=30)
        wait_for(lambda: http.get("/v1/model").json()["refit_running"], 60,
                 "the next worker did not take the request up")


@pytest.mark.parametrize(("exitcode", "words"), [(-9, "killed by SIGKILL"),
                                                 (-15, "killed by SIGTERM"),
                                                 (1, "exit status 1"), (None, "ended")])
def test_how_a_worker_ended_in_words(exitcode, words):
    assert how_it_ended(exitcode) == words


def test_a_sigterm_to_the_whole_group_is_no_worker_death(running):
    """systemd, docker and ``timeout`` signal the process group: the worker ends by SIGTERM
    as the service stops, and the log said the worker died and would be restarted."""
    worker = the_worker(running)
    os.kill(worker, signal.SIGTERM)  # the worker first, as a group signal may reach it
    os.kill(running.process.process.pid, signal.SIGTERM)
    running.process.process.wait(30)
    log = running.process.log.read_text()
    assert "died (pid" not in log and "starting another" not in log, log[-2000:]
    assert wait_gone([worker], 5) == []
