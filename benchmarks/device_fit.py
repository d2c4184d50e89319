"""Benchmark: BatchIGL on MNIST on the CPU (one torch thread) against a CUDA GPU: one fit, and
16 fits side by side (``BatchIGL.fit_many``, one batched computation).

    python benchmarks/device_fit.py --data-dir MNIST_DIR [--samples 60000] [--json FILE]
        [--devices cpu,cuda]

Each fit is the 2021 paper's Table 1 IGL fit with iglearn's defaults on ``--samples`` uniform
interactions; reports wall and CPU seconds, test accuracy, the indicator and the adaptive
restarts of each fit per device (the CUDA fit is timed after one untimed fit that starts
CUDA). Without a CUDA GPU only the CPU rows are measured.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="folder of the four MNIST files")
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--trials", type=int, default=16, help="fits side by side")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--devices", default="cpu,cuda",
                        help="comma-separated devices to measure (cuda only where available)")
    args = parser.parse_args(argv)

    import torch

    from iglearn import BatchIGL
    from iglearn.envs import mnist_environment

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    env = mnist_environment(args.data_dir)
    test_x, test_y = env.test_set()
    devices = [d for d in args.devices.split(",") if d == "cpu" or torch.cuda.is_available()]
    out: dict = {"gpu": torch.cuda.get_device_name(0) if "cuda" in devices else None,
                 "torch": torch.__version__, "samples": args.samples}
    log = env.log(args.samples, seed=0)

    def timed(device: str, learners: list[BatchIGL], logs: list) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        BatchIGL.fit_many(learners, logs)
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - wall, time.process_time() - cpu

    if "cuda" in devices:
        BatchIGL(seed=0, device="cuda").fit(log)  # starts CUDA, untimed
    for device in devices:
        learner = BatchIGL(seed=0, device=device)
        wall, cpu = timed(device, [learner], [log])
        out[device] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                       "accuracy": round(learner.accuracy(test_x, test_y), 4),
                       "indicator": round(learner.report_.indicator, 4),
                       "restarts": learner.report_.restarts}
        print(device, "one fit", out[device], flush=True)
    logs = [env.log(args.samples, seed=s) for s in range(args.trials)]
    for device in devices:
        learners = [BatchIGL(seed=s, device=device) for s in range(args.trials)]
        wall, cpu = timed(device, learners, logs)
        accuracy = [each.accuracy(test_x, test_y) for each in learners]
        out[f"{device}_side_by_side"] = {
            "fits": args.trials, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "mean_accuracy": round(sum(accuracy) / len(accuracy), 4),
            "min_accuracy": round(min(accuracy), 4),
            "restarts": [each.report_.restarts for each in learners]}
        print(device, f"{args.trials} fits side by side", out[f"{device}_side_by_side"],
              flush=True)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(out, file, indent=1)
    return out


if __name__ == "__main__":
    main()
