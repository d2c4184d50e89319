"""Large-log benchmark: streamed fits of synthetic logs of 1M and 10M rows, their time and peak
memory, and the accuracy of a streamed fit against the fit in memory on the same log.

The log is the digits task (scikit-learn's 8x8 images, uniform logging, K = 10) with every
image upsampled: 784 = 28x28 (each pixel a 3x3 block inside a 2-pixel border), 256 = 16x16
(2x2 blocks), or 64 (the image itself), for contexts and feedback separately (``--dims``). It
is generated and written batch by batch as a folder of Parquet shards (``--shard-rows``), so
the generator never holds the whole log. Each step runs in its own process and reports its
wall time and peak resident memory (``ru_maxrss``).

For each ``--rows`` size: generate, ``iglearn fit LOG --stream on``, evaluate on the held-out
digits. With ``--subsample N``: the first N rows of the same log fitted in memory and streamed
(same seed), both evaluated: the accuracy the stream costs. The targets are checked in
``results.json`` (peak memory flat in the rows, time linear, accuracy within 0.3 points).

    python benchmarks/large_log.py --rows 1000000 10000000 --dims 256,64 --subsample 200000
    python benchmarks/large_log.py --rows 1000000 --dims 784,784
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from iglearn.data.formats import TableInfo, TableReader
from iglearn.envs import digits_environment
from iglearn.processes import run_measured

SIDES = {784: (28, 3, 2), 256: (16, 2, 0), 64: (8, 1, 0)}
"""Upsampled width: (side, block, border) of the square image."""


def upsample(images: np.ndarray, dim: int) -> np.ndarray:
    """(n, 64) 8x8 images -> (n, dim) images: each pixel a block, inside a border."""
    side, block, border = SIDES[dim]
    n = len(images)
    big = np.zeros((n, side, side), dtype=np.float32)
    inner = np.kron(images.reshape(n, 8, 8), np.ones((block, block), dtype=np.float32))
    big[:, border:side - border, border:side - border] = inner
    return big.reshape(n, dim)


class SyntheticDigits(TableReader):
    """The upsampled digits log, generated batch by batch from a seed; the first rows do not
    depend on ``rows`` (each batch of 50000 has its own seed), so a smaller log is a prefix
    of a larger one."""

    def __init__(self, rows: int, seed: int, dims: tuple[int, int], batch: int = 50_000):
        self.env = digits_environment()
        self.rows, self.seed, self.batch, self.dims = rows, seed, batch, dims
        self.info = TableInfo(f"synthetic digits {dims[0]}/{dims[1]}", rows, 10,
                              ("context", "action", "probability", "feedback", "reward", "label"),
                              {"context": dims[0], "feedback": dims[1]})

    def batches(self, rows: int = 0, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        seeds = np.random.SeedSequence(self.seed).spawn(-(-self.rows // self.batch))
        for i, seed in enumerate(seeds):
            start = i * self.batch
            log = self.env.log(min(self.batch, self.rows - start), seed=seed)
            yield start, {"context": upsample(log.context, self.dims[0]), "action": log.action,
                          "probability": log.probability,
                          "feedback": upsample(log.feedback, self.dims[1]),
                          "reward": log.reward, "label": log.label}


def _generate(rows: int, dims: tuple[int, int], path: str, shard_rows: int) -> None:
    """Write the log to ``path``: a folder of Parquet shards, or an uncompressed .npz."""
    from iglearn.data.formats import write_table
    from iglearn.data.formats.shards import write_shards

    if path.endswith(".npz"):
        write_table(SyntheticDigits(rows, 0, dims), path)
    else:
        write_shards(SyntheticDigits(rows, 0, dims), Path(path), shard_rows)


def _test_set(dims: tuple[int, int], path: str) -> None:
    from iglearn.data.contexts import ContextSet
    from iglearn.data.formats import write_table

    features, labels = digits_environment().test_set()
    write_table(ContextSet(upsample(features, dims[0]), 10, labels, path), path)


def _step(name: str, command: list[str], results: dict) -> None:
    """Run ``command`` (a module name or a script path, then its arguments) in a child process
    and record its wall time and peak resident memory."""
    done = run_measured([sys.executable, *command] if command[0].endswith(".py")
                        else [sys.executable, "-m", *command])
    record = {"command": " ".join(command), "seconds": round(done.wall_seconds, 1),
              "peak_rss_gb": round(done.peak_rss_kib / 2**20, 2),
              "exit_code": done.returncode}
    if done.returncode:
        record["stderr"] = done.stderr[-2000:]
    elif done.stdout.strip():
        try:
            record["output"] = json.loads(done.stdout)
        except json.JSONDecodeError:
            record["output"] = done.stdout[-2000:]
    results[name] = record
    print(name, json.dumps({k: v for k, v in record.items() if k != "output"}), flush=True)


def _fit_and_evaluate(name: str, log: Path, stream: str, test: Path, work: Path,
                      results: dict, options: list[str]) -> None:
    model = work / f"model_{name}"
    _step(f"fit_{name}", ["iglearn.cli", "fit", str(log), "--out", str(model), "--stream",
                          stream, *options], results)
    _step(f"evaluate_{name}", ["iglearn.cli", "evaluate", str(model), str(test)], results)


def _output(results: dict, step: str, key: str) -> float | None:
    return results.get(step, {}).get("output", {}).get(key)


def _targets(results: dict) -> dict:
    """The issue's targets, from what was measured."""
    sizes = results["sizes"]
    out: dict = {}
    rows = sorted(int(n) for n in sizes)
    for n in rows:
        fit = sizes[str(n)].get("fit_stream", {})
        out[f"peak_rss_gb_{n}"] = fit.get("peak_rss_gb")
        out[f"fit_seconds_{n}"] = _output(sizes[str(n)], "fit_stream", "seconds")
        out[f"fit_step_seconds_{n}"] = fit.get("seconds")
    if len(rows) >= 2:
        small, large = str(rows[0]), str(rows[-1])
        rss = [sizes[k].get("fit_stream", {}).get("peak_rss_gb") for k in (small, large)]
        secs = [_output(sizes[k], "fit_stream", "seconds") for k in (small, large)]
        if None not in rss:
            out["rss_ratio"] = round(rss[1] / rss[0], 3)
            out["rss_ratio_target"] = 1.2
        if None not in secs:
            out["time_ratio"] = round(secs[1] / secs[0], 2)
            out["time_ratio_target"] = 11 * int(large) / int(small) / 10
    sub = results.get("subsample")
    if sub:
        accuracy = [_output(sub, f"evaluate_{name}", "accuracy") for name in ("memory",
                                                                             "stream")]
        if None not in accuracy:
            out["subsample_accuracy_memory"] = accuracy[0]
            out["subsample_accuracy_stream"] = accuracy[1]
            out["accuracy_gap_points"] = round(100 * (accuracy[1] - accuracy[0]), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000],
                        help="log sizes to generate and fit streamed")
    parser.add_argument("--dims", default="784,784",
                        help="the context and the feedback dimension, two of 784, 256 or "
                             "64 (784,256, say)")
    parser.add_argument("--format", choices=("shards", "npz"), default="shards",
                        help="generated logs as folders of Parquet shards or uncompressed .npz "
                             "(Parquet decodes vectors at a few hundred MB/s a core; .npz "
                             "reads at the disk's speed)")
    parser.add_argument("--shard-rows", type=int, default=1_000_000,
                        help="rows per Parquet shard of the generated logs")
    parser.add_argument("--subsample", type=int, default=0,
                        help="rows of the log fitted both in memory and streamed (0: skip)")
    parser.add_argument("--out", default="/tmp/large-log", help="working folder")
    parser.add_argument("--keep", action="store_true",
                        help="keep the generated logs (default: deleted after their fits)")
    parser.add_argument("--reuse", action="store_true",
                        help="fit a log an earlier run kept (--keep) instead of generating it")
    parser.add_argument("--fit-options", default="",
                        help="options of iglearn fit for the fits at each --rows size (not the "
                             "subsample's), e.g. '--epochs 1' for a shorter run")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads of the children (OMP_NUM_THREADS); default: torch's")
    parser.add_argument("--step", choices=("generate", "test"), help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    dims = tuple(int(d) for d in args.dims.split(","))
    if len(dims) != 2 or any(d not in SIDES for d in dims):
        parser.error(f"--dims takes two of {sorted(SIDES)}, got {args.dims}")
    if args.step == "generate":
        return _generate(args.rows[0], dims, args.path, args.shard_rows)
    if args.step == "test":
        return _test_set(dims, args.path)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    here = str(Path(__file__).resolve())
    common = ["--dims", args.dims, "--shard-rows", str(args.shard_rows)]
    results: dict = {"dims": list(dims), "threads": args.threads, "sizes": {},
                     "load_average_at_start": os.getloadavg()}
    test = out / "test.npz"
    _step("test_set", [here, "--step", "test", "--path", str(test), *common], results)

    def save() -> None:
        results["targets"] = _targets(results)
        results["load_average_now"] = os.getloadavg()
        (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    jobs = [(str(n), n) for n in args.rows]
    if args.subsample:
        jobs.append(("subsample", args.subsample))
    for name, rows in jobs:
        work = out / f"rows-{rows}" if name != "subsample" else out / "subsample"
        log = work / ("log.npz" if args.format == "npz" else "log")
        reuse = args.reuse and log.exists()
        if work.exists():
            for entry in work.iterdir():
                if not (reuse and entry == log):
                    if entry.is_dir():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
        work.mkdir(exist_ok=True)
        record: dict = {"rows": rows, "format": args.format}
        if name == "subsample":
            results["subsample"] = record
        else:
            results["sizes"][name] = record
        if not reuse:
            _step("generate", [here, "--step", "generate", "--rows", str(rows), "--path",
                               str(log), *common], record)
        files = list(log.iterdir()) if log.is_dir() else [log]
        record["log_gb"] = round(sum(p.stat().st_size for p in files) / 2**30, 2)
        options = [] if name == "subsample" else args.fit_options.split()
        record["fit_options"] = options
        if name == "subsample":
            _fit_and_evaluate("memory", log, "off", test, work, record, options)
        _fit_and_evaluate("stream", log, "on", test, work, record, options)
        if args.keep:
            pass
        elif log.is_dir():
            shutil.rmtree(log)
        else:
            log.unlink()
        save()
    print(json.dumps(results["targets"], indent=2))
    print(f"wrote {out / 'results.json'}")


if __name__ == "__main__":
    main()
