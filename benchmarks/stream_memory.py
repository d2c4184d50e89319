"""Streaming memory benchmark: the peak resident memory of ``iglearn fit LOG --stream on`` (and
of other stream settings) as the log grows, on Parquet files, folders of Parquet shards and
uncompressed ``.npz``.

The log is synthetic: 64-dimensional contexts and 16-dimensional feedback (float32), K = 10,
uniform logging, the feedback a noisy code of the reward (the action equals the context's
class). It is generated and written batch by batch, so the generator never holds it whole.
Each fit runs in its own process, whose peak resident memory (``ru_maxrss``) and CPU seconds
are recorded; ``results.json`` holds every measurement and the ratio of the largest log's peak
to the smallest's for each format (the target: at most 1.2).

    python benchmarks/stream_memory.py --rows 600000 2400000 --format parquet npz
    python benchmarks/stream_memory.py --rows 1000000 10000000 --format parquet \\
        --fit-options "--grounding-epochs 1 --policy-epochs 0 --epochs 0 --max-restarts 0"
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from iglearn.data.formats import TableInfo, TableReader
from iglearn.processes import run_measured

DIMS = (64, 16)
K = 10
CHUNK = 100_000


class SyntheticLog(TableReader):
    """The benchmark's log, generated batch by batch from a seed: contexts from K Gaussian
    clusters, uniform logging, feedback a noisy 16-value code of the reward."""

    def __init__(self, rows: int, seed: int = 0):
        self.rows, self.seed = rows, seed
        self.info = TableInfo("synthetic 64/16", rows, K,
                              ("context", "action", "probability", "feedback", "reward"),
                              {"context": DIMS[0], "feedback": DIMS[1]})
        rng = np.random.default_rng(seed)
        self.centres = rng.normal(size=(K, DIMS[0])).astype(np.float32)
        self.codes = rng.normal(size=(2, DIMS[1])).astype(np.float32)

    def batches(self, rows: int = 0, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        seeds = np.random.SeedSequence(self.seed).spawn(-(-self.rows // CHUNK))
        for i, seed in enumerate(seeds):
            start = i * CHUNK
            n = min(CHUNK, self.rows - start)
            rng = np.random.default_rng(seed)
            label = rng.integers(K, size=n)
            context = self.centres[label] + rng.normal(size=(n, DIMS[0])).astype(np.float32)
            action = rng.integers(K, size=n)
            reward = (action == label).astype(np.float32)
            feedback = (self.codes[reward.astype(np.int64)]
                        + 0.5 * rng.normal(size=(n, DIMS[1])).astype(np.float32))
            yield start, {"context": context, "action": action,
                          "probability": np.full(n, 1 / K), "feedback": feedback,
                          "reward": reward}


def generate(rows: int, path: Path, shard_rows: int) -> None:
    """Write the log of ``rows`` rows to ``path`` (.parquet, .npz, or a folder of shards)."""
    from iglearn.data.formats import write_table
    from iglearn.data.formats.shards import write_shards

    if path.suffix:
        write_table(SyntheticLog(rows), path)
    else:
        write_shards(SyntheticLog(rows), path, shard_rows)


def measure(command: list[str]) -> dict:
    """Run ``python -m <command>`` in a child process: its peak RSS, CPU and wall seconds."""
    done = run_measured([sys.executable, "-m", *command])
    record: dict = {"command": "python -m " + " ".join(command), "exit_code": done.returncode,
                    "wall_seconds": round(done.wall_seconds, 1),
                    "peak_rss_mb": round(done.peak_rss_kib / 1024, 1),
                    "cpu_seconds": round(done.cpu_seconds, 1)}
    if done.returncode:
        record["stderr"] = done.stderr[-2000:]
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[600_000, 2_400_000])
    parser.add_argument("--format", nargs="+", choices=("parquet", "npz", "shards"),
                        default=["parquet"])
    parser.add_argument("--shard-rows", type=int, default=500_000)
    parser.add_argument("--stream", default="on", choices=("on", "auto", "off"))
    parser.add_argument("--fit-options", default="",
                        help="more options of iglearn fit, e.g. '--memory-limit-gb 0.5'")
    parser.add_argument("--out", default="/tmp/stream-memory", help="working folder")
    parser.add_argument("--keep", action="store_true", help="keep the generated logs")
    parser.add_argument("--threads", type=int, default=1,
                        help="OMP_NUM_THREADS of the children")
    parser.add_argument("--step", choices=("generate",), help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step == "generate":
        return generate(args.rows[0], Path(args.path), args.shard_rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    results: dict = {"dims": list(DIMS), "stream": args.stream,
                     "fit_options": args.fit_options.split(),
                     "load_average_at_start": os.getloadavg(), "runs": []}
    suffix = {"parquet": ".parquet", "npz": ".npz", "shards": ""}
    for fmt in args.format:
        for rows in args.rows:
            log = out / f"log-{rows}{suffix[fmt]}"
            if not log.exists():
                here = str(Path(__file__).resolve())
                done = subprocess.run([sys.executable, here, "--step", "generate", "--rows",
                                       str(rows), "--path", str(log), "--shard-rows",
                                       str(args.shard_rows)])
                if done.returncode:
                    sys.exit(f"generating {log} failed")
            model = out / "model"
            shutil.rmtree(model, ignore_errors=True)
            record = {"format": fmt, "rows": rows,
                      **measure(["iglearn", "fit", str(log), "--out", str(model), "--stream",
                                 args.stream, *args.fit_options.split()])}
            results["runs"].append(record)
            print(json.dumps({k: v for k, v in record.items() if k != "stderr"}), flush=True)
            if record["exit_code"]:
                print(record["stderr"], file=sys.stderr)
            if not args.keep:
                shutil.rmtree(log) if log.is_dir() else log.unlink()
    ratios = {}
    for fmt in args.format:
        peaks = [r.get("peak_rss_mb") for r in results["runs"] if r["format"] == fmt]
        if len(peaks) >= 2 and None not in peaks:
            ratios[fmt] = round(peaks[-1] / peaks[0], 3)
    results["peak_ratio_largest_to_smallest"] = ratios
    results["peak_ratio_target"] = 1.2
    results["load_average_now"] = os.getloadavg()
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(ratios))


if __name__ == "__main__":
    main()
