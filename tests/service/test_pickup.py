"""A new model version reaches the serving process within ``pickup_seconds`` + 1 s while
real client threads keep it busy, on both backends; the swaps and re-fits are logged, in
the text format on one backend and the JSON format on the other."""

from __future__ import annotations

import json
import re
import threading
import time

import numpy as np
import pytest

from .conftest import D_X, D_Y, K, play, start_service

PICKUP = 0.5
LOAD_SECONDS = 20.0
MAX_PER_THREAD = 4000


def load(url: str, key: str, seconds: float, seed: int, seen: list[tuple[float, int]],
         stop: threading.Event) -> None:
    """Decide and send feedback until ``seconds`` have passed, ``stop`` is set or
    ``MAX_PER_THREAD`` interactions were made; (time, model version) of each decision."""
    import httpx

    rng = np.random.default_rng(seed)
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {key}"},
                      timeout=30) as http:
        for _ in range(MAX_PER_THREAD):
            if time.monotonic() > deadline or stop.is_set():
                return
            x = rng.normal(size=D_X)
            decision = http.post("/v1/decide", json={"context": x.tolist()}).json()
            seen.append((time.time(), decision["model_version"]))
            right = decision["action"] == int(np.argmax(x[:K]))
            y = np.eye(D_Y)[0 if right else 1] + rng.normal(scale=0.1, size=D_Y)
            assert http.post("/v1/feedback", json={"event_id": decision["event_id"],
                                                   "feedback": y.tolist()}).status_code == 204


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert found is not None, name
    return float(found[1])


@pytest.mark.slow
def test_new_versions_are_served_within_pickup_seconds_under_load(database, tmp_path):
    log_format = "json" if "://" in database else "text"
    running = start_service(tmp_path, database,
                            learning={"refit_every": 150, "min_interactions": 30,
                                      "pickup_seconds": PICKUP, "worker_nice": 0},
                            server={"log_format": log_format})
    try:
        with running.http("admin") as admin:  # the first fit (the worker's imports) first
            play(admin, 40, np.random.default_rng(0))
            assert admin.post("/v1/model/refit?wait=120", timeout=130).status_code == 200
        first = running.storage().models()[-1].version
        seen: list[tuple[float, int]] = []
        stop = threading.Event()
        threads = [threading.Thread(target=load, args=(running.url, running.client_key,
                                                       LOAD_SECONDS, seed, seen, stop))
                   for seed in range(4)]
        for thread in threads:
            thread.start()
        storage = running.storage()
        while any(t.is_alive() for t in threads):  # enough versions: stop early
            stored = [m for m in storage.models() if m.version > first]
            if len(stored) >= 3 and time.time() - stored[-1].created_at > PICKUP + 1.5:
                stop.set()
            time.sleep(0.2)
        for thread in threads:
            thread.join()
        end = max(t for t, _ in seen)
        models = [m for m in storage.models()
                  if m.version > first and m.created_at < end - (PICKUP + 1)]
        assert len(models) >= 2, f"only {len(models)} versions were stored under load"
        for model in models:
            # the first decision made by this version or a newer one
            lag = min(t for t, v in seen if v >= model.version) - model.created_at
            assert lag <= PICKUP + 1, (f"version {model.version} was served {lag:.2f} s "
                                       f"after it was stored")
        with running.http("admin") as admin:  # a re-fit due may still store a version
            for _ in range(60):
                time.sleep(PICKUP + 1)
                newest, asked = storage.models()[-1], time.time()
                info, text = admin.get("/v1/model").json(), admin.get("/metrics").text
                if (storage.models()[-1] == newest
                        and asked > newest.created_at + PICKUP + 1):
                    break
        assert info["version"] == info["newest_version"] == newest.version
        assert info["behind_seconds"] == 0
        assert metric(text, "iglearn_model_version") == newest.version
        assert metric(text, "iglearn_model_newest_version") == newest.version
        assert metric(text, "iglearn_model_behind_seconds") == 0
    finally:
        running.stop()
    log = running.process.log.read_text().splitlines()
    if log_format == "json":
        events = [json.loads(line) for line in log if line.startswith("{")]
        refits = [e for e in events if e["event"] == "refit" and e["outcome"] == "served"]
        swaps = [e for e in events if e["event"] == "swap"]
        assert {e["version"] for e in refits} >= {m.version for m in models}
        assert all(e["interactions"] > 0 and e["seconds"] > 0 for e in refits)
        assert swaps and all(e["seconds_since_stored"] <= PICKUP + 1 for e in swaps)
    else:
        for model in models:
            assert any(f"re-fit (count): version {model.version} on {model.interactions} "
                       f"interactions" in line and line.endswith(", served") for line in log)
        assert any(re.fullmatch(r"iglearn serve: now serving model version \d+ \(was \d+\), "
                                r"stored \d+\.\d\d s ago", line) for line in log)


def test_a_version_number_used_again_after_a_clear_is_loaded(tmp_path, capsys):
    from iglearn.service.app import Service
    from iglearn.service.config import load_config
    from iglearn.service.learning import refit
    from iglearn.service.process import write_config
    from iglearn.service.storage import Decision, Feedback

    from .conftest import tables

    config = load_config(write_config(tmp_path / "service.toml", tables()))
    service = Service(config, insecure_no_auth=True)
    storage = service.storage
    rng = np.random.default_rng(0)

    def log(n: int, seed: int) -> None:
        ids = [f"{seed}-{i}" for i in range(n)]
        x = rng.normal(size=(n, D_X)).astype(np.float32)
        a = rng.integers(K, size=n)
        storage.add_decisions([Decision(ids[i], x[i], int(a[i]), 1 / K, np.full(K, 1 / K), 0,
                                        True, True, time.time()) for i in range(n)])
        y = np.eye(D_Y)[(a != x[:, :K].argmax(1)).astype(int)].astype(np.float32)
        storage.add_feedback([Feedback(ids[i], y[i], False, time.time()) for i in range(n)],
                             600.0)

    try:
        log(60, 0)
        first = refit(storage, config, "test")
        assert service.load_served() and service.served.record == first
        assert not service.load_served()  # nothing new
        storage.clear()
        log(60, 1)
        again = refit(storage, config, "test")
        assert again.version == first.version and again.created_at > first.created_at
        assert service.load_served() and service.served.record == again
        swaps = [line for line in capsys.readouterr().err.splitlines()
                 if "now serving model version" in line]
        assert len(swaps) == 2
    finally:
        storage.close()
