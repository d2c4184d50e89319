"""Two replicas of the service on one database (SQLite, and PostgreSQL when installed):
decisions from both land in one log with feedback given at the other replica, each exactly
once; a model re-fitted by one is served by both within the configured delay; kill -9 of
the replica holding the re-fit lease, and the other takes it over and re-fits."""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np

from iglearn.service.process import ServiceProcess, add_key, free_port, write_config
from iglearn.service.storage import open_storage

from .conftest import D_X, D_Y, K, duplicate_event_ids, tables

PICKUP = 0.5
"""The replicas' ``pickup_seconds``."""
LOAD_ALLOWANCE = 2.0
"""Seconds a replica may take beyond ``pickup_seconds`` to fetch and load a model (on a
busy 2-core machine)."""


def test_two_replicas_one_log_one_model_and_a_lease_that_moves(tmp_path, database):
    config = write_config(tmp_path / "service.toml", tables(
        learning={"pickup_seconds": PICKUP, "poll_seconds": 0.1}, server={"db": database}))
    client_key, admin_key = add_key(config, "client"), add_key(config, "admin")
    replicas = [ServiceProcess(config, free_port(), log=tmp_path / f"replica-{i}.log")
                for i in range(2)]
    storage = open_storage(database if "://" in database else tmp_path / database)
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda r: r.start(), replicas))
        clients = [httpx.Client(base_url=r.url, timeout=30,
                                headers={"authorization": f"Bearer {client_key}"})
                   for r in replicas]
        admins = [httpx.Client(base_url=r.url, timeout=120,
                               headers={"authorization": f"Bearer {admin_key}"})
                  for r in replicas]

        # one log: decide at one replica, feed back at the other
        rng = np.random.default_rng(0)
        acknowledged = []
        for i in range(60):
            x = rng.normal(size=D_X)
            decision = clients[i % 2].post("/v1/decide", json={"context": x.tolist()}).json()
            right = decision["action"] == int(np.argmax(x[:K]))
            y = np.eye(D_Y)[0 if right else 1] + rng.normal(scale=0.1, size=D_Y)
            answer = clients[(i + 1) % 2].post("/v1/feedback", json={
                "event_id": decision["event_id"], "feedback": y.tolist()})
            assert answer.status_code == 204 and answer.headers["iglearn-feedback"] == "joined"
            assert clients[i % 2].post("/v1/feedback", json={
                "event_id": decision["event_id"], "feedback": y.tolist()}).status_code == 409
            acknowledged.append(decision["event_id"])
        assert Counter(storage.joined().event_id) == Counter(acknowledged)
        assert storage.counts().decisions == len(acknowledged)
        assert duplicate_event_ids(storage) == []

        # one model: re-fitted through replica 0, served by both within pickup_seconds
        refit = admins[0].post("/v1/model/refit?wait=120")
        assert refit.status_code == 200, refit.text
        version = refit.json()["version"]
        created = next(m.created_at for m in storage.models() if m.version == version)
        while clients[1].get("/v1/model").json()["version"] != version:
            assert time.time() - created < PICKUP + LOAD_ALLOWANCE, "replica 1 kept its model"
            time.sleep(0.02)
        for http in clients:
            made = http.post("/v1/decide", json={"context": [0.0] * D_X}).json()
            assert made["model_version"] == version
        lease = storage.state("refit_lease")
        assert lease["port"] in (replicas[0].port, replicas[1].port)
        assert storage.state("last_refit")["by"].endswith(f":{lease['port']}")

        # kill -9 the lease holder: the other replica takes the lease and re-fits
        holder = 0 if lease["port"] == replicas[0].port else 1
        other = 1 - holder
        replicas[holder].kill()
        again = admins[other].post("/v1/model/refit?wait=120")
        assert again.status_code == 200, again.text
        assert again.json()["version"] > version
        assert storage.state("refit_lease")["port"] == replicas[other].port
        assert storage.state("last_refit")["by"].endswith(f":{replicas[other].port}")
        made = clients[other].post("/v1/decide", json={"context": [0.0] * D_X}).json()
        assert made["model_version"] == again.json()["version"]
        for http in clients + admins:
            http.close()
    finally:
        for replica in replicas:
            replica.stop()
        storage.close()
