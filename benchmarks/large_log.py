"""Large-log benchmark: write a big synthetic log, convert NPZ -> Parquet, fit from each.

The log is the digits task (scikit-learn's 8x8 images, uniform logging) with every image
upsampled to 28x28 = 784 pixels (each pixel becomes a 3x3 block, with a 2-pixel border), for
contexts and feedback alike. It is generated and written batch by batch, so the generator never
holds the whole log. Each step runs in its own process and reports its wall time and peak
resident memory (``ru_maxrss``; memory-mapped file pages that a step touches count towards it).

    python benchmarks/large_log.py --rows 1000000 --out /tmp/large-log
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from iglearn.data.formats import TableInfo, TableReader, write_table
from iglearn.envs import digits_environment

DIM = 784


def upsample(images: np.ndarray) -> np.ndarray:
    """(n, 64) 8x8 images -> (n, 784) 28x28 images: 3x3 blocks inside a 2-pixel border."""
    n = len(images)
    big = np.zeros((n, 28, 28), dtype=np.float32)
    big[:, 2:26, 2:26] = np.kron(images.reshape(n, 8, 8), np.ones((3, 3), dtype=np.float32))
    return big.reshape(n, DIM)


class SyntheticDigits(TableReader):
    """The upsampled digits log, generated batch by batch from a seed."""

    def __init__(self, rows: int, seed: int, batch: int = 50_000):
        self.env = digits_environment()
        self.rows, self.seed, self.batch = rows, seed, batch
        self.info = TableInfo("synthetic digits 784", rows, 10,
                              ("context", "action", "probability", "feedback", "reward", "label"),
                              {"context": DIM, "feedback": DIM})

    def batches(self, rows: int = 0, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        seeds = np.random.SeedSequence(self.seed).spawn(-(-self.rows // self.batch))
        for i, seed in enumerate(seeds):
            start = i * self.batch
            log = self.env.log(min(self.batch, self.rows - start), seed=seed)
            yield start, {"context": upsample(log.context), "action": log.action,
                          "probability": log.probability, "feedback": upsample(log.feedback),
                          "reward": log.reward, "label": log.label}


def _generate(rows: int, path: str) -> None:
    write_table(SyntheticDigits(rows, seed=0), path)


def _test_set(path: str) -> None:
    from iglearn.data.contexts import ContextSet

    features, labels = digits_environment().test_set()
    write_table(ContextSet(upsample(features), 10, labels, path), path)


def _step(name: str, command: list[str], results: dict) -> None:
    """Run ``command`` (a module name or a script path, then its arguments) in a child process
    and record its wall time and peak resident memory."""
    run = "run_path" if command[0].endswith(".py") else "run_module"
    wrapper = ("import resource, runpy, sys\n"
               "sys.argv = sys.argv[1:]\n"
               "code = 0\n"
               f"try:\n    runpy.{run}(sys.argv[0], run_name='__main__')\n"
               "except SystemExit as e:\n    code = e.code or 0\n"
               "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
               "file=sys.stderr)\nsys.exit(code)")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", wrapper, *command], capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    rss = [line for line in done.stderr.splitlines() if line.startswith("MAXRSS")]
    record = {"command": " ".join(command), "seconds": round(seconds, 1),
              "peak_rss_gb": round(int(rss[-1].split()[1]) / 2**20, 2) if rss else None,
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


def _steps_before_fit(here: str, rows: int, out: Path, results: dict) -> None:
    _step("generate_npz", [here, "--rows", str(rows), "--out", str(out), "--step", "generate"],
          results)
    _step("test_set", [here, "--out", str(out), "--step", "test"], results)
    _step("convert_npz_to_parquet", ["iglearn.cli", "convert", str(out / "log.npz"),
                                     str(out / "log.parquet")], results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", default="/tmp/large-log", help="working folder")
    parser.add_argument("--fit-from", nargs="*", choices=("parquet", "npz"),
                        default=["parquet", "npz"], help="logs to fit from (none: skip fits)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep log.npz, log.parquet and test.npz from an earlier run")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads of the children (OMP_NUM_THREADS); default: torch's")
    parser.add_argument("--step", choices=("generate", "test"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    out = Path(args.out)
    if args.step == "generate":
        return _generate(args.rows, str(out / "log.npz"))
    if args.step == "test":
        return _test_set(str(out / "test.npz"))
    out.mkdir(parents=True, exist_ok=True)
    if args.threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    results: dict = {"rows": args.rows, "context_dim": DIM, "feedback_dim": DIM}
    previous = out / "results.json"
    here = str(Path(__file__).resolve())
    if args.reuse and previous.exists():
        kept = json.loads(previous.read_text())
        results |= {key: kept[key] for key in ("generate_npz", "test_set",
                                               "convert_npz_to_parquet") if key in kept}
    else:
        _steps_before_fit(here, args.rows, out, results)
    results["threads"] = args.threads
    results["sizes_gb"] = {p.name: round(p.stat().st_size / 2**30, 2)
                           for p in sorted(out.glob("*.*")) if p.is_file()}
    for source in args.fit_from:
        (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
        _step(f"fit_from_{source}", ["iglearn.cli", "fit", str(out / f"log.{source}"),
                                     "--out", str(out / f"model_{source}")], results)
        _step(f"evaluate_{source}_model", ["iglearn.cli", "evaluate",
                                           str(out / f"model_{source}"),
                                           str(out / "test.npz")], results)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out / 'results.json'}")


if __name__ == "__main__":
    main()
