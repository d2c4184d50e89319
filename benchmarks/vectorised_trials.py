"""Measure: does fitting several trials as one batched computation pay on this machine?

    python benchmarks/vectorised_trials.py [--trials 4] [--steps 240] [--threads 1]

Times the inner step of a linear IGL fit (gather a mini-batch, forward, backward, AdamW) for
``trials`` independent fits run one after another, and for the same fits stacked into batched
matmuls (torch.bmm) over the trial dimension. Prints both times and the speed-up.
"""

from __future__ import annotations

import argparse
import time

import torch


def _step_inputs(trials: int, n: int, dim: int, k: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(trials, n, dim, generator=g), torch.rand(trials, n, dim, generator=g),
            torch.randint(0, k, (trials, n), generator=g))


def sequential(x, y, a, steps: int, batch: int, k: int) -> float:
    start = time.perf_counter()
    for t in range(x.shape[0]):
        w = torch.zeros(x.shape[2], k, requires_grad=True)
        v = torch.zeros(y.shape[2], requires_grad=True)
        opt = torch.optim.AdamW([w, v], lr=0.02)
        order = torch.randperm(x.shape[1])
        for s in range(steps):
            i = order[(s * batch) % x.shape[1]:][:batch]
            log_pi = torch.log_softmax(x[t][i] @ w, 1).gather(1, a[t][i, None])[:, 0]
            psi = torch.sigmoid(y[t][i] @ v / 0.1)
            loss = -((log_pi.exp() - 1 / k) * psi * k).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return time.perf_counter() - start


def batched(x, y, a, steps: int, batch: int, k: int) -> float:
    start = time.perf_counter()
    trials = x.shape[0]
    w = torch.zeros(trials, x.shape[2], k, requires_grad=True)
    v = torch.zeros(trials, y.shape[2], 1, requires_grad=True)
    opt = torch.optim.AdamW([w, v], lr=0.02)
    order = torch.stack([torch.randperm(x.shape[1]) for _ in range(trials)])
    rows = torch.arange(trials)[:, None]
    for s in range(steps):
        i = order[:, (s * batch) % x.shape[1]:][:, :batch]
        log_pi = torch.log_softmax(torch.bmm(x[rows, i], w), 2)
        log_pi = log_pi.gather(2, a[rows, i][..., None])[..., 0]
        psi = torch.sigmoid(torch.bmm(y[rows, i], v)[..., 0] / 0.1)
        loss = -((log_pi.exp() - 1 / k) * psi * k).mean(1).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--steps", type=int, default=240)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    x, y, a = _step_inputs(args.trials, args.samples, 784, 10, 0)
    one, many = (f(x, y, a, args.steps, 500, 10) for f in (sequential, batched))
    print(f"{args.trials} trials x {args.steps} steps, {args.threads} thread(s): "
          f"sequential {one:.2f} s, batched {many:.2f} s, speed-up {one / many:.2f}x")


if __name__ == "__main__":
    main()
