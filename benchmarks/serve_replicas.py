"""Benchmark: two service replicas on one PostgreSQL database, beside one replica on SQLite.

    python benchmarks/serve_replicas.py [--clients 8] [--seconds 15] [--pickup 1.0] [--json FILE]

In one run on this machine, with the load generator of ``benchmarks/serve_load.py`` (a
simulated user on digits: decide, then the feedback the digits task draws from the hidden
reward; ``--clients`` keep-alive connections for ``--seconds``):

1. SQLite, one replica: the embedded default, as ``serve_load.py`` measures it;
2. PostgreSQL, one replica: the same service on a throw-away PostgreSQL server;
3. PostgreSQL, two replicas on different ports sharing that database, the connections
   spread over both (connection c goes to replica c mod 2).

Each configuration is warmed up until a model is served. After the two-replica load it
checks the replica properties:

- one log: every interaction whose decision and feedback were acknowledged is stored exactly
  once (and no event id twice);
- one model: a re-fit asked of the replica that does not hold the re-fit lease (so the
  holder's worker fits it) is served by both within ``--pickup`` seconds (the replicas'
  ``pickup_seconds``) of its storing, plus the time to load it;
- the lease moves: kill -9 of the replica holding the re-fit lease; the other takes the
  lease and the next re-fit (asked of it) happens.

The throw-away PostgreSQL server runs from Debian's ``postgresql`` package binaries in a
temporary folder on a free loopback port with its default durability (fsync on,
synchronous commit). Everything shares this machine's cores: the replicas, their learning
workers, PostgreSQL and the load generator (one core's asyncio loop in this process).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from serve_load import Pools, percentile, player

from iglearn.service.postgres_server import PostgresServer
from iglearn.service.process import ServiceProcess, add_key, free_port, write_config
from iglearn.service.storage import open_storage

LOAD_ALLOWANCE = 1.0
"""Seconds a replica may take beyond ``pickup_seconds`` to fetch and load a new model."""


def configuration(folder: Path, db: str, args: argparse.Namespace) -> Path:
    """A digits-shaped service (K = 10, 64-dim contexts and feedback), as serve_load's."""
    return write_config(folder / "service.toml", {
        "model": {"n_actions": 10, "context_dim": 64, "feedback_dim": 64},
        "exploration": {"mode": "e2g", "warmup": 500},
        "learning": {"refit_every": args.refit_every, "min_interactions": 300,
                     "pickup_seconds": args.pickup, "poll_seconds": 0.2},
        "server": {"db": db}})


async def spread(ports: list[int], key: str, pools: Pools, clients: int, seconds: float,
                 acknowledged: list[bytes] | None = None) -> dict[str, list[float]]:
    """serve_load's players for ``seconds``, connection c on replica c mod len(ports)."""
    results: dict[str, list[float]] = {"decide": [], "feedback": [], "noop": [],
                                       "interactions": []}
    stop = time.perf_counter() + seconds
    await asyncio.gather(*(player(ports[c % len(ports)], key, pools, stop, 100 + c, results,
                                  False, acknowledged) for c in range(clients)))
    return results


def model(replica: ServiceProcess, admin: str) -> dict[str, Any]:
    return httpx.get(replica.url + "/v1/model", timeout=30,
                     headers={"authorization": f"Bearer {admin}"}).json()


def measure(name: str, config: Path, replicas: int, pools: Pools, args: argparse.Namespace,
            db: str, checks: bool) -> dict[str, Any]:
    """Start ``replicas`` services on ``config``, warm up, measure the load, and (``checks``)
    test the replica properties; the figures."""
    key, admin = add_key(config, "client"), add_key(config, "admin")
    processes = [ServiceProcess(config, free_port(), log=config.parent / f"replica-{i}.log")
                 for i in range(replicas)]
    ports = [p.port for p in processes]
    figures: dict[str, Any] = {"configuration": name}
    try:
        with ThreadPoolExecutor(replicas) as pool:
            list(pool.map(lambda p: p.start(timeout=120), processes))
        deadline = time.monotonic() + 180
        while any(model(p, admin)["version"] == 0 for p in processes):
            asyncio.run(spread(ports, key, pools, 4, 2.0))
            if time.monotonic() > deadline:
                raise SystemExit(f"{name}: no model was served within 180 s of warm-up")
        acknowledged: list[bytes] = []
        load = asyncio.run(spread(ports, key, pools, args.clients, args.seconds, acknowledged))
        figures |= {
            "interactions_per_s": len(load["interactions"]) / args.seconds,
            "decide_p50_ms": percentile(load["decide"], 50),
            "decide_p99_ms": percentile(load["decide"], 99),
            "feedback_p50_ms": percentile(load["feedback"], 50),
            "feedback_p99_ms": percentile(load["feedback"], 99)}
        if checks:
            figures |= check_replicas(processes, admin, db, acknowledged, args)
    finally:
        for process in processes:
            process.stop()
    return figures


def check_replicas(processes: list[ServiceProcess], admin: str, db: str,
                   acknowledged: list[bytes], args: argparse.Namespace) -> dict[str, Any]:
    """The three replica properties, measured."""
    storage = open_storage(db, pool_size=1)
    headers = {"authorization": f"Bearer {admin}"}
    out: dict[str, Any] = {}
    try:
        # one log
        stored = Counter(storage.joined().event_id)
        ids = [e.decode() for e in acknowledged]
        out["acknowledged"] = len(ids)
        out["acknowledged_missing"] = sum(1 for e in ids if stored[e] == 0)
        out["acknowledged_twice"] = sum(1 for e in ids if stored[e] > 1) + len(ids) - len(
            set(ids))
        # one model, whichever replica fitted it
        holder_port = storage.state("refit_lease")["port"]
        holder = next(p for p in processes if p.port == holder_port)
        other = next(p for p in processes if p is not holder)
        asked = httpx.post(other.url + "/v1/model/refit?wait=300", headers=headers,
                           timeout=330)
        assert asked.status_code == 200, asked.text
        version = asked.json()["version"]
        created = next(m.created_at for m in storage.models() if m.version == version)
        delays = {}
        deadline = time.time() + args.pickup + 30
        while len(delays) < len(processes) and time.time() < deadline:
            for p in processes:
                if p.port not in delays and model(p, admin)["version"] == version:
                    delays[p.port] = time.time() - created
            time.sleep(0.01)
        out["refit_by"] = storage.state("last_refit")["by"]
        out["refit_asked_of"] = f"replica on port {other.port}"
        out["pickup_seconds"] = args.pickup
        out["pickup_delays_s"] = [round(delays.get(p.port, float("inf")), 3)
                                  for p in processes]
        # the lease moves when its holder dies
        holder.kill()
        killed = time.time()
        while (storage.state("refit_lease") or {}).get("port") != other.port:
            if time.time() - killed > 60:
                break
            time.sleep(0.05)
        out["lease_takeover_s"] = round(time.time() - killed, 3)
        again = httpx.post(other.url + "/v1/model/refit?wait=300", headers=headers,
                           timeout=330)
        out["refit_after_kill"] = (again.json().get("version") if again.status_code == 200
                                   else again.text)
        out["refit_after_kill_by"] = storage.state("last_refit")["by"]
        out["refit_after_kill_served"] = model(other, admin)["version"]
        out["_ok"] = {
            "every acknowledged event stored exactly once":
                out["acknowledged_missing"] == 0 and out["acknowledged_twice"] == 0
                and len(ids) > 0,
            f"both replicas served the re-fit within pickup_seconds + {LOAD_ALLOWANCE} s":
                all(d <= args.pickup + LOAD_ALLOWANCE for d in out["pickup_delays_s"]),
            "after kill -9 of the lease holder the other re-fitted":
                isinstance(out["refit_after_kill"], int) and out["refit_after_kill"] > version
                and out["refit_after_kill_by"].endswith(f":{other.port}")
                and out["refit_after_kill_served"] == out["refit_after_kill"]}
    finally:
        storage.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--refit-every", type=int, default=2000)
    parser.add_argument("--pickup", type=float, default=1.0,
                        help="the replicas' pickup_seconds")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    # SIGTERM (timeout, kill) ends the run as Ctrl+C does, through every `with` below: its
    # default ended the process at once and left the throw-away PostgreSQL server running
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    pools = Pools(seed=0)
    runs = []
    with tempfile.TemporaryDirectory(prefix="iglearn-serve-replicas-") as tmp, \
            PostgresServer(fsync=True) as server:
        for name, replicas, backend in (("sqlite, 1 replica", 1, "sqlite"),
                                        ("postgresql, 1 replica", 1, "postgresql"),
                                        ("postgresql, 2 replicas", 2, "postgresql")):
            folder = Path(tmp) / f"run-{len(runs)}"
            folder.mkdir()
            db = str(folder / "service.db") if backend == "sqlite" else server.new_database()
            config = configuration(folder, db, args)
            print(f"measuring {name} ...", file=sys.stderr, flush=True)
            runs.append(measure(name, config, replicas, pools, args, db,
                                checks=replicas > 1))
    ok = runs[-1].pop("_ok")
    for run in runs:
        print(f"== {run['configuration']}")
        for name, value in run.items():
            if name != "configuration":
                print(f"  {name:28s} {value:.3f}" if isinstance(value, float) else
                      f"  {name:28s} {value}")
    base = runs[0]["interactions_per_s"]
    for run in runs[1:]:
        print(f"{run['configuration']}: {run['interactions_per_s'] / base:.2f} x the "
              f"interactions/s of one replica on SQLite")
    for name, met in ok.items():
        print(f"check {name}: {'met' if met else 'NOT met'}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"runs": runs, "checks": ok, "clients": args.clients,
                                         "seconds": args.seconds, "run": str(uuid.uuid4())},
                                        indent=2) + "\n")


if __name__ == "__main__":
    main()
