"""Benchmark: the decision service under load, beside the same stack's no-op ceiling.

    python benchmarks/serve_load.py [--clients 8] [--seconds 15] [--out results/serve-load]
        [--json FILE]

Starts a real ``iglearn serve`` process on a loopback port (digits-shaped: K = 10, 64-dim
contexts and feedback, E2G exploration, a re-fit every ``--refit-every`` joined
interactions), warms it up until a model is served, then, in one run on the same machine:

1. load: ``--clients`` concurrent connections play a simulated user on digits for
   ``--seconds``: decide on a digit image, then send the feedback the digits task draws from
   the hidden reward (feedback images drawn from the environment beforehand, one pool per
   reward value), while the learning worker re-fits every ``--refit-every`` joined
   interactions;
2. ceiling: the same connections post a context-sized body to ``/v1/noop`` (authenticated,
   parsed, nothing stored) for ``--seconds``; a no-op "interaction" is two such requests, as
   an interaction is a decide and a feedback.

Both phases run beside the same re-fit work, so that the ceiling is the same stack on the
same share of the machine: each starts once a re-fit asked for is running, and since no-op
requests store nothing to re-fit on, the ceiling phase asks for a re-fit (``POST
/v1/model/refit``) whenever none runs and the re-fits so far have run for less than the load
phase's share of the time (:class:`RefitPacer`); ``refit_busy_share_*`` says how much of
each phase a re-fit ran. (On a 2-core machine the load generator takes one core: measured
beside an idle worker, re-fits running for 0.02-0.03 of the ceiling phase against about 0.4
of the load, the ceiling was 4,990-5,070 no-op interactions/s in two runs; beside matched
re-fits, 3,520-4,310 in eight.)
Reports interactions/s, p50 and p99 latency of decide and feedback, the ceiling's figures,
the ratio, the re-fits that ran during the load and whether the targets hold (>= 50 % of the
ceiling, >= 2,000 interactions/s, p99 decide <= 10 ms, every version served within
``pickup_seconds`` + 1 s of being stored). A table gives every model version stored during
the run: the interactions it was fitted on, its re-fit seconds (``fit_seconds``), when it
was stored and its pickup lag, the seconds from its storing until ``GET /v1/model`` (polled
every 0.1 s from a thread) first answered it, and until a decide answer first carried it.
The load generator is a minimal HTTP/1.1 keep-alive client on asyncio in this process (one
core), so on a 2-core machine it shares the CPU with the service and its worker.

The report goes to ``--out``: ``serve_load.md`` (the figures, the versions and the targets),
``serve_load.json`` (the same, for tools) and ``serve_load.png``, which plots each version's
re-fit seconds against the interactions it was fitted on, beside the re-fit targets
(:data:`REFIT_TARGETS`), and its pickup lag beside the ``pickup_seconds`` + 1 s limit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import numpy as np

from iglearn.envs import digits_environment
from iglearn.experiments.results import save_figure
from iglearn.files import write_text
from iglearn.service.process import ServiceProcess, add_key, free_port, write_config
from iglearn.service.storage import ModelRecord as ServiceModel
from iglearn.service.storage import SQLiteStorage as ServiceStorage

DECISION = re.compile(rb'"event_id": "([^"]+)", "action": (\d+)')
VERSION = re.compile(rb'"model_version": (\d+)')
PICKUP_SECONDS = 1.0
"""The service's ``[learning] pickup_seconds`` (its default)."""
REFIT_TARGETS = ((2_000, 1.0), (20_000, 5.0))
"""(interactions, most re-fit seconds): the service's re-fit targets (one torch thread)."""


class Connection:
    """One HTTP/1.1 keep-alive connection (the load generator's client)."""

    def __init__(self, port: int, key: str):
        self.port, self.key = port, key.encode()

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, path: bytes, body: bytes) -> tuple[int, bytes]:
        self.writer.write(b"POST " + path + b" HTTP/1.1\r\nhost: x\r\nauthorization: Bearer "
                          + self.key + b"\r\ncontent-type: application/json\r\n"
                          b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        return status, (await self.reader.readexactly(length)) if length else b""

    def close(self) -> None:
        self.writer.close()


class Pools:
    """Pre-drawn digits: context bodies with their labels, feedback per reward value."""

    def __init__(self, seed: int, n: int = 4000):
        env = digits_environment()
        rng = np.random.default_rng(seed)
        contexts = env.contexts(n, rng)
        self.labels = contexts.label
        self.bodies = [json.dumps({"context": [round(float(v), 4) for v in row]}).encode()
                       for row in contexts.features]
        feedback = {}
        for r in (0.0, 1.0):
            draws = env.feedback(contexts, np.zeros(n, np.int64), np.full(n, r, np.float32), rng)
            feedback[int(r)] = [json.dumps([round(float(v), 4) for v in row]).encode()
                                for row in draws]
        self.feedback = feedback
        self.noop = self.bodies


async def player(port: int, key: str, pools: Pools, stop: float, seed: int,
                 results: dict[str, list[float]], noop: bool,
                 acknowledged: list[bytes] | None = None,
                 first_decided: dict[int, float] | None = None) -> None:
    """Play until ``stop`` (a ``time.perf_counter`` deadline); ``acknowledged``: collect the
    event id of every interaction whose decision and feedback were both acknowledged."""
    rng = np.random.default_rng(seed)
    connection = Connection(port, key)
    await connection.open()
    n = len(pools.bodies)
    try:
        while time.perf_counter() < stop:
            i = int(rng.integers(n))
            if noop:
                for _ in range(2):
                    start = time.perf_counter()
                    status, _ = await connection.post(b"/v1/noop", pools.noop[i])
                    results["noop"].append(time.perf_counter() - start)
                    assert status == 200, status
                results["interactions"].append(1.0)
                continue
            start = time.perf_counter()
            status, answer = await connection.post(b"/v1/decide", pools.bodies[i])
            results["decide"].append(time.perf_counter() - start)
            assert status == 200, (status, answer)
            found = DECISION.search(answer)  # the event id and action, without a JSON parse
            assert found is not None, answer
            if first_decided is not None:
                version = VERSION.search(answer)
                assert version is not None, answer
                first_decided.setdefault(int(version[1]), time.time())
            reward = int(int(found[2]) == pools.labels[i])
            body = (b'{"event_id":"' + found[1] + b'","feedback":'
                    + pools.feedback[reward][int(rng.integers(n))] + b"}")
            start = time.perf_counter()
            status, answer = await connection.post(b"/v1/feedback", body)
            results["feedback"].append(time.perf_counter() - start)
            assert status == 204, (status, answer)
            results["interactions"].append(1.0)
            if acknowledged is not None:
                acknowledged.append(found[1])
    finally:
        connection.close()


FIRST_DECIDED: dict[int, float] = {}
"""Unix time at which a decide answer first carried each model version."""


async def phase(port: int, key: str, pools: Pools, clients: int, seconds: float,
                noop: bool) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {"decide": [], "feedback": [], "noop": [],
                                       "interactions": []}
    stop = time.perf_counter() + seconds
    await asyncio.gather(*(player(port, key, pools, stop, 100 + c, results, noop,
                                  first_decided=FIRST_DECIDED)
                           for c in range(clients)))
    return results


class VersionWatch:
    """A thread that asks ``GET /v1/model`` every 0.1 s and keeps the Unix time at which
    each version was first answered."""

    def __init__(self, url: str, headers: dict):
        self.url, self.headers = url, headers
        self.first: dict[int, float] = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        with httpx.Client(headers=self.headers, timeout=30) as http:
            while not self.stopped.wait(0.1):
                version = http.get(self.url + "/v1/model").json()["version"]
                self.first.setdefault(int(version), time.time())

    def stop(self) -> dict[int, float]:
        self.stopped.set()
        self.thread.join()
        return self.first


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RefitPacer:
    """A thread that keeps the learning worker re-fitting for ``share`` of the time from its
    start: it asks for a re-fit (``POST /v1/model/refit``, waiting until it is stored) whenever
    the re-fits it asked for (their ``fit_seconds``) would be below that share of the time
    halfway through one more as long as the last, so that running over and under even out."""

    def __init__(self, url: str, headers: dict, share: float):
        self.url, self.headers, self.share = url, headers, share
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        start, busy, last = time.monotonic(), 0.0, 0.0
        with httpx.Client(headers=self.headers, timeout=120) as http:
            while not self.stopped.wait(0.05):
                half = time.monotonic() - start + last / 2
                if busy + last / 2 >= self.share * half:
                    continue
                asked = time.monotonic()
                answer = http.post(self.url + "/v1/model/refit", params={"wait": 60})
                fitted = answer.json().get("fit_seconds") if answer.status_code == 200 else None
                last = fitted or time.monotonic() - asked  # the re-fit's own seconds
                busy += last

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def measured(url: str, port: int, pid: int, key: str, headers: dict, pools: Pools,
             args: argparse.Namespace, noop: bool, pace: float = 0.0
             ) -> tuple[dict, tuple[float, float]]:
    """One phase, started once a re-fit asked for runs (so the ceiling and the load are
    measured alike, beside a running re-fit) and, with ``pace`` > 0, with re-fits asked for
    to keep the worker busy that share of the phase (:class:`RefitPacer`); waits for the
    last re-fit to end. The results and the phase's (start, end) in Unix time."""
    asked = time.time()
    httpx.post(url + "/v1/model/refit", headers=headers)
    deadline = time.monotonic() + 300   # start once the re-fit runs
    while ((httpx.get(url + "/v1/model", headers=headers).json()["refit_running"] or {})
           .get("at", 0.0) < asked and time.monotonic() < deadline):
        time.sleep(0.05)
    pacer = RefitPacer(url, headers, pace) if pace > 0 else None
    started, cpu = time.time(), cpu_seconds(pid)
    results = asyncio.run(phase(port, key, pools, args.clients, args.seconds, noop=noop))
    ended = time.time()
    results["service_cpu"] = [cpu_seconds(pid) - cpu]
    if pacer is not None:
        pacer.stop()
    deadline = time.monotonic() + 300
    while ((httpx.get(url + "/v1/model", headers=headers).json()["last_refit"] or {})
           .get("at", 0.0) < asked and time.monotonic() < deadline):
        time.sleep(0.5)
    time.sleep(1.0)
    return results, (started, ended)


def refits_of(storage: ServiceStorage) -> list[ServiceModel]:
    """The model versions the learning worker's re-fits stored."""
    return [m for m in storage.models() if m.summary.get("source") == "refit"]


def busy_share(fits: list, window: tuple[float, float]) -> float:
    """The share of ``window`` during which one of the re-fits ``fits`` was running."""
    start, end = window
    busy = sum(max(0.0, min(m.created_at, end) - max(m.created_at - m.fit_seconds, start))
               for m in fits)
    return busy / (end - start)


def pickup_lag(model: ServiceModel, first: dict[int, float]) -> float | None:
    """Seconds from storing ``model`` until ``first`` (version -> Unix time first seen)
    shows it or a newer version (None when neither was seen)."""
    seen = [t for version, t in first.items() if version >= model.version]
    return round(max(0.0, min(seen) - model.created_at), 3) if seen else None


def shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q) * 1000) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--refit-every", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("results/serve-load"),
                        help="folder of the report (serve_load.md, .json and .png)")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the figures and targets to this JSON file")
    args = parser.parse_args()
    pools = Pools(seed=0)
    with tempfile.TemporaryDirectory(prefix="iglearn-serve-load-") as tmp:
        config = write_config(Path(tmp) / "service.toml", {
            "model": {"n_actions": 10, "context_dim": 64, "feedback_dim": 64},
            "exploration": {"mode": "e2g", "warmup": 500},
            "learning": {"refit_every": args.refit_every, "min_interactions": 300},
            "server": {"db": "service.db"}})
        key, admin = add_key(config, "client"), add_key(config, "admin")
        headers = {"authorization": f"Bearer {admin}"}
        with ServiceProcess(config, free_port()) as service:
            watch = VersionWatch(service.url, headers)
            # warm up: interactions until a model is served
            deadline = time.monotonic() + 120
            while httpx.get(service.url + "/v1/model", headers=headers).json()["version"] == 0:
                asyncio.run(phase(service.port, key, pools, 4, 2.0, noop=False))
                if time.monotonic() > deadline:
                    raise SystemExit("no model was fitted within 120 s of warm-up")
            pid = service.process.pid
            before = httpx.get(service.url + "/v1/model", headers=headers).json()
            load, window = measured(service.url, service.port, pid, key, headers, pools,
                                    args, noop=False)
            after = httpx.get(service.url + "/v1/model", headers=headers).json()
            storage = ServiceStorage(config.parent / "service.db")
            ceiling, ceiling_window = measured(
                service.url, service.port, pid, key, headers, pools, args, noop=True,
                pace=busy_share(refits_of(storage), window))
            # a re-fit the load started may store its version after the load: the watch
            # runs until it has and pickup_seconds + 1 s more, so that every version stored
            # is judged
            deadline = time.monotonic() + 300
            while (httpx.get(service.url + "/v1/model", headers=headers).json()["refit_running"]
                   and time.monotonic() < deadline):
                time.sleep(0.2)
            time.sleep(PICKUP_SECONDS + 1)
            answered = watch.stop()
            fits = refits_of(storage)
            storage.close()
    refits = [m for m in fits if m.created_at - m.fit_seconds <= window[1]
              and m.created_at >= window[0]]
    rate = len(load["interactions"]) / args.seconds
    ceiling_rate = len(ceiling["interactions"]) / args.seconds
    figures = {
        "clients": args.clients, "seconds": args.seconds,
        "interactions_per_s": rate,
        "decide_p50_ms": percentile(load["decide"], 50),
        "decide_p99_ms": percentile(load["decide"], 99),
        "feedback_p50_ms": percentile(load["feedback"], 50),
        "feedback_p99_ms": percentile(load["feedback"], 99),
        "noop_interactions_per_s": ceiling_rate,
        "noop_requests_per_s": len(ceiling["noop"]) / args.seconds,
        "noop_p50_ms": percentile(ceiling["noop"], 50),
        "noop_p99_ms": percentile(ceiling["noop"], 99),
        "share_of_ceiling": rate / ceiling_rate,
        "service_cpu_share_load": load["service_cpu"][0] / args.seconds,
        "service_cpu_share_ceiling": ceiling["service_cpu"][0] / args.seconds,
        "service_cpu_us_per_interaction": load["service_cpu"][0] / len(load["interactions"])
        * 1e6,
        "service_cpu_us_per_noop_interaction": ceiling["service_cpu"][0]
        / len(ceiling["interactions"]) * 1e6,
        "model_version_before": before["version"], "model_version_after": after["version"],
        "refits_during_load": len(refits),
        "refit_seconds": [round(m.fit_seconds, 2) for m in refits],
        "refit_busy_share_load": busy_share(fits, window),
        "refit_busy_share_ceiling": busy_share(fits, ceiling_window),
    }
    start = fits[0].created_at if fits else 0.0
    versions = [{"version": m.version, "interactions": m.interactions,
                 "fit_seconds": round(m.fit_seconds, 3),
                 "stored_at_s": round(m.created_at - start, 2),
                 "pickup_lag_s": pickup_lag(m, answered),
                 "first_decided_lag_s": pickup_lag(m, FIRST_DECIDED)} for m in fits]
    lags = [v["pickup_lag_s"] for v in versions]
    figures["pickup_lag_max_s"] = max((x for x in lags if x is not None), default=math.nan)
    figures["versions"] = versions
    targets = {"share_of_ceiling >= 0.5": figures["share_of_ceiling"] >= 0.5,
               "interactions_per_s >= 2000": rate >= 2000,
               "decide_p99_ms <= 10": figures["decide_p99_ms"] <= 10,
               "a re-fit ran during the load": busy_share(fits, window) > 0,
               f"every version served within {PICKUP_SECONDS + 1:g} s (pickup lag)":
                   bool(lags) and all(x is not None and x <= PICKUP_SECONDS + 1
                                      for x in lags)}
    text, data = report(figures, targets), record(figures, targets)
    print(text, end="")
    write_report(figures, text, data, args.out)
    print(f"wrote {args.out / 'serve_load.md'}, serve_load.json and serve_load.png")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_text(args.json, data)


def record(figures: dict, targets: dict[str, bool]) -> str:
    """The run as JSON: the figures, the targets and an id of the run."""
    return json.dumps({"figures": figures, "targets": targets, "run": str(uuid.uuid4())},
                      indent=2) + "\n"


def report(figures: dict, targets: dict[str, bool]) -> str:
    """The run as markdown: the figures, one row per model version stored, the targets."""
    lines = ["# iglearn serve under load", "", "| figure | value |", "|---|---|"]
    for name, value in figures.items():
        if name != "versions":
            lines.append(f"| {name} | {value:.3f} |" if isinstance(value, float) else
                         f"| {name} | {value} |")
    lines += ["", "| version | interactions | fit_seconds | stored_at_s | pickup_lag_s | "
              "first_decided_lag_s |", "|---|---|---|---|---|---|"]
    for v in figures["versions"]:
        lines.append(f"| {v['version']} | {v['interactions']} | {v['fit_seconds']:.3f} | "
                     f"{v['stored_at_s']:.2f} | {shown(v['pickup_lag_s'])} | "
                     f"{shown(v['first_decided_lag_s'])} |")
    lines += [""] + [f"- target {name}: {'met' if met else 'NOT met'}"
                     for name, met in targets.items()]
    return "\n".join(lines) + "\n"


def write_report(figures: dict, text: str, data: str, out: Path) -> None:
    """``out``/serve_load.md (``text``, :func:`report`), serve_load.json (``data``,
    :func:`record`) and serve_load.png: each version's re-fit seconds against the
    interactions it was fitted on, with :data:`REFIT_TARGETS`, and its pickup lag against
    the ``pickup_seconds`` + 1 s limit."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "serve_load.md", text)
    write_text(out / "serve_load.json", data)
    versions = figures["versions"]
    figure, (fits, lags) = plt.subplots(1, 2, figsize=(10, 4))
    fits.plot([v["interactions"] for v in versions], [v["fit_seconds"] for v in versions],
              "o", label="re-fit of a version")
    fits.plot([n for n, _ in REFIT_TARGETS], [s for _, s in REFIT_TARGETS], "x",
              color="grey", markersize=10, label="target: at most "
              + ", ".join(f"{s:g} s at {n:,}" for n, s in REFIT_TARGETS))
    fits.set_xlim(0, 1.1 * max([n for n, _ in REFIT_TARGETS]
                               + [v["interactions"] for v in versions]))
    fits.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))
    fits.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:,.0f}"))
    fits.set_xlabel("interactions fitted on")
    fits.set_ylabel("re-fit seconds (fit_seconds)")
    fits.set_ylim(0, 1.3 * max([s for _, s in REFIT_TARGETS]
                               + [v["fit_seconds"] for v in versions]))
    fits.legend(loc="upper left")
    judged = [v for v in versions if v["pickup_lag_s"] is not None]
    lags.bar([str(v["version"]) for v in judged], [v["pickup_lag_s"] for v in judged])
    lags.axhline(PICKUP_SECONDS + 1, color="grey", linestyle="--",
                 label=f"limit: pickup_seconds + 1 = {PICKUP_SECONDS + 1:g} s")
    lags.set_ylim(0, 1.3 * max([PICKUP_SECONDS + 1] + [v["pickup_lag_s"] for v in judged]))
    lags.set_xlabel("model version")
    lags.set_ylabel("pickup lag (s)")
    lags.legend(loc="upper left")
    figure.suptitle(f"iglearn serve under load: {figures['interactions_per_s']:.0f} "
                    f"interactions/s, {figures['share_of_ceiling']:.2f} of the no-op ceiling")
    save_figure(figure, out / "serve_load.png")

if __name__ == "__main__":
    main()
