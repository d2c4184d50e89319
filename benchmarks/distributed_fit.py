"""Distributed-fit benchmark: a streamed BatchIGL fit of one log in one process, and on 1 and
2 local Ray Train workers (``RayTrain``), their throughput, accuracy and indicator; then a
cost model projecting the wall time of a fit of 1,000 M interactions on 8, 32 and 128
workers.

The log is the digits task (scikit-learn's 8x8 images, uniform logging, K = 10;
``benchmarks/large_log.py``'s generator, contexts and feedback upsampled to ``--dims``),
written as a folder of Parquet shards of ``--shard-rows`` rows. Every fit has the default
settings and seed 0. For each: wall seconds of the fit, CPU seconds (this process's for the
fit in one process; the workers' summed for Ray Train), throughput = interactions of the log
/ wall seconds of the fit (as the large-log benchmark counts it), test accuracy on the
held-out digits, indicator (Eq. 9). For Ray Train also the wall seconds of the whole call
(Ray Train's start of its workers included), the steps and the seconds worker 0 spent in the
steps' all-reduces. The 1-minute load average before and after each fit is recorded: on a
shared machine the workers compete with other work. With ``--kill-after S``, one more
2-worker fit whose worker 1 is killed (SIGKILL) S seconds after it starts: Ray Train restarts
the workers, which resume from the last checkpoint (``RayTrain.checkpoint_seconds`` apart;
before the first they run again from the start), and the fit's restarts, the checkpoint it
resumed from, accuracy and indicator are recorded.

Cost model (``project``): a fit on N workers of n interactions takes

    T(n, N) = start + n / (N * r) + steps(n) * allreduce(N)

where r is the measured throughput of one worker (interactions a second of the one-worker
fit: the training steps and every full pass, all of which divide among the workers; projected
twice: from its wall seconds, and from its CPU seconds, the rate of a worker with a core of
its own),
steps(n) = the measured steps per interaction times n (the same batch size and epochs: a
large log's fit runs its set epochs), start the measured start of Ray Train's workers, and
allreduce(N) an all-reduce of the step's values (the model's parameters and the rows,
float32): 2 (N - 1) / N * bytes / bandwidth plus 2 (N - 1) latencies for a ring or
2 ceil(log2 N) for recursive halving-doubling, both projected. The network's latency and
bandwidth are inputs (``--latency-us``, ``--bandwidth-gbit``; defaults: a 10 Gbit/s data-centre
network), not measured here; the local 2-worker all-reduce's measured cost per step is
reported beside them. The model ignores stragglers and storage bandwidth (each worker reads
n / N interactions of Parquet).

    python benchmarks/distributed_fit.py --rows 1000000 --out benchmarks/results/distributed
    python benchmarks/distributed_fit.py --rows 60000 --shard-rows 7500 --kill-after 4 \
        --out benchmarks/results/distributed-small
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # large_log's generator

PROJECTED_ROWS = 1_000_000_000
PROJECTED_WORKERS = (8, 32, 128)


def generate(rows: int, dims: tuple[int, int], path: Path, shard_rows: int) -> None:
    """Write the log of ``rows`` interactions as Parquet shards in ``path`` (kept if there)."""
    from large_log import SyntheticDigits

    from iglearn.data.formats.shards import write_shards

    if not path.exists():
        write_shards(SyntheticDigits(rows, 0, dims), path, shard_rows)


def kill_later(folder: Path, seconds: float) -> threading.Thread:
    """A thread that kills (SIGKILL) the process of Ray Train's worker 1 ``seconds`` after
    it has written its id to ``folder`` (``RayTrain.storage``)."""
    def kill() -> None:
        pid_file = folder / "worker-1.pid"
        while not pid_file.exists():
            time.sleep(0.1)
        time.sleep(seconds)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def fit(path: Path, dims: tuple[int, int], workers: int | None,
        kill_after: float | None = None, storage: Path | None = None,
        checkpoint_seconds: float = 60.0) -> dict[str, Any]:
    """One BatchIGL fit (seed 0) of the log in ``path``: in this process (``workers`` None)
    or on Ray Train workers (their records in ``storage``, a checkpoint at most every
    ``checkpoint_seconds``; with ``kill_after``, worker 1 killed that many seconds into the
    fit); what it measured."""
    from large_log import upsample

    from iglearn import BatchIGL, open_log
    from iglearn.data.stream import StreamSettings
    from iglearn.envs import digits_environment
    from iglearn.learners.distributed import RayTrain

    log = open_log(path, StreamSettings(stream="on"))
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if workers is None:
            learner = BatchIGL(seed=0).fit(log)
        else:
            if kill_after is not None and storage is not None:
                kill_later(storage, kill_after)
            learner = BatchIGL(seed=0).fit(log, backend=RayTrain(
                workers=workers, storage=None if storage is None else str(storage),
                checkpoint_seconds=checkpoint_seconds))
    call, cpu = time.perf_counter() - wall, time.process_time() - cpu
    features, labels = digits_environment().test_set()
    result: dict[str, Any] = {
        "workers": workers, "interactions": len(log),
        "accuracy": learner.accuracy(upsample(features, dims[0]), labels),
        "indicator": learner.report_.indicator, "load_before": load,
        "load_after": os.getloadavg()[0]}
    if workers is None:
        result.update(seconds=call, cpu_seconds=cpu)
    else:
        report = learner.distributed_
        result.update(seconds=report.seconds, cpu_seconds=report.cpu_seconds,
                      call_seconds=call, start_seconds=call - report.seconds,
                      steps=report.steps, step_seconds=report.step_seconds,
                      step_values=report.step_values, restarts=report.restarts,
                      resumed_stage=report.resumed_stage, resumed_epoch=report.resumed_epoch)
    result["throughput"] = len(log) / result["seconds"]
    return result


def allreduce_seconds(values: int, workers: int, latency: float, bandwidth: float,
                      algorithm: str = "ring") -> float:
    """An all-reduce of ``values`` float32 among ``workers``: 2 (N - 1) / N of the bytes over
    the bandwidth (bytes a second), and 2 (N - 1) latencies for a ring, 2 ceil(log2 N) for
    recursive halving-doubling (the algorithm for small messages)."""
    if workers == 1:
        return 0.0
    hops = 2 * (workers - 1) if algorithm == "ring" else 2 * math.ceil(math.log2(workers))
    return hops * latency + 2 * (workers - 1) / workers * 4 * values / bandwidth


def project(one: dict[str, Any], two: dict[str, Any], latency: float,
            bandwidth: float) -> dict[str, Any]:
    """The cost model's wall time of a fit of :data:`PROJECTED_ROWS` interactions on each of
    :data:`PROJECTED_WORKERS` workers, from the measured one- and two-worker fits."""
    steps_per_row = one["steps"] / one["interactions"]
    steps = steps_per_row * PROJECTED_ROWS
    start = max(one["start_seconds"], two["start_seconds"])
    # interactions a second of one worker, every pass included: of the wall time it took,
    # and of its CPU time (a worker with a core of its own, which a shared machine is not)
    rates = {"wall": one["throughput"], "cpu": one["interactions"] / one["cpu_seconds"]}
    projected: dict[str, Any] = {
        "interactions": PROJECTED_ROWS, "steps": steps, "values_per_step": one["step_values"],
        "latency_seconds": latency, "bandwidth_bytes_per_second": bandwidth,
        "measured_local_allreduce_seconds_per_step": (two["step_seconds"]
                                                      / max(two["steps"], 1))}
    for basis, rate in rates.items():
        rows = {}
        for workers in PROJECTED_WORKERS:
            compute = PROJECTED_ROWS / (workers * rate)
            row: dict[str, float] = {"compute_seconds": compute, "start_seconds": start}
            for algorithm in ("ring", "halving_doubling"):
                communicate = steps * allreduce_seconds(one["step_values"], workers, latency,
                                                        bandwidth, algorithm)
                total = start + compute + communicate
                row[f"{algorithm}_allreduce_seconds"] = communicate
                row[f"{algorithm}_hours"] = total / 3600
            rows[str(workers)] = row
        projected[basis] = {"per_worker_throughput": rate,
                            "one_process_hours": PROJECTED_ROWS / rate / 3600,
                            "workers": rows}
    return projected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dims", default="64,64", help="context,feedback dimensions")
    parser.add_argument("--shard-rows", type=int, default=62_500)
    parser.add_argument("--path", default=None, help="the log's folder (default: OUT/log)")
    parser.add_argument("--latency-us", type=float, default=50.0,
                        help="network latency of one all-reduce hop, microseconds (an input)")
    parser.add_argument("--bandwidth-gbit", type=float, default=10.0,
                        help="network bandwidth per worker, Gbit/s (an input)")
    parser.add_argument("--out", default="benchmarks/results/distributed")
    parser.add_argument("--kill-after", type=float, default=None, metavar="SECONDS",
                        help="also a 2-worker fit whose worker 1 is killed SECONDS into it")
    parser.add_argument("--checkpoint-seconds", type=float, default=60.0,
                        help="the Ray Train fits' checkpoint interval (RayTrain's setting)")
    parser.add_argument("--project-only", action="store_true",
                        help="no fits: the projection again from OUT/results.json")
    args = parser.parse_args()
    latency, bandwidth = args.latency_us * 1e-6, args.bandwidth_gbit * 1e9 / 8
    if args.project_only:
        results = Path(args.out) / "results.json"
        if not results.is_file():
            parser.error(f"--project-only reads {results}, which an earlier run writes; run "
                         f"without --project-only first")
        saved = json.loads(results.read_text())
        saved["projection"] = project(saved["ray_1"], saved["ray_2"], latency, bandwidth)
        (Path(args.out) / "results.json").write_text(json.dumps(saved, indent=2) + "\n")
        print(json.dumps(saved["projection"], indent=2))
        return
    dims = tuple(int(d) for d in args.dims.split(","))
    assert len(dims) == 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = Path(args.path) if args.path else out / f"log-{args.rows}"
    started = time.perf_counter()
    generate(args.rows, (dims[0], dims[1]), path, args.shard_rows)
    results: dict[str, Any] = {"rows": args.rows, "dims": list(dims),
                               "shard_rows": args.shard_rows, "cpus": os.cpu_count(),
                               "generate_seconds": time.perf_counter() - started}

    def save() -> None:
        (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    import ray

    results["one_process"] = fit(path, (dims[0], dims[1]), None)
    save()
    for workers in (1, 2):
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        try:
            results[f"ray_{workers}"] = fit(path, (dims[0], dims[1]), workers,
                                            checkpoint_seconds=args.checkpoint_seconds)
        finally:
            ray.shutdown()
        save()
    if args.kill_after is not None:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        try:
            killed = fit(path, (dims[0], dims[1]), 2, args.kill_after, out / "killed",
                         args.checkpoint_seconds)
        finally:
            ray.shutdown()
        killed["accuracy_gap_to_2_workers"] = killed["accuracy"] - results["ray_2"]["accuracy"]
        results["ray_2_killed"] = killed
        save()
    one, two, single = results["ray_1"], results["ray_2"], results["one_process"]
    results["speedup_2_over_1"] = two["throughput"] / one["throughput"]
    results["accuracy_gap_2_workers"] = two["accuracy"] - single["accuracy"]
    results["indicator_gap_2_workers"] = two["indicator"] - single["indicator"]
    results["projection"] = project(one, two, latency, bandwidth)
    save()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
