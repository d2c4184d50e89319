"""CPU seconds of every batch learner's fit on one torch thread, and the bare-loop floor.

    OMP_NUM_THREADS=1 python benchmarks/fit_overhead.py [--sizes 500 2000] [--mnist DIR]
                                                        [--repeats 3] [--learners igl cb ...]

For each learner (IGL, AI-IGL, IGL-P, CB, SUP, VI-IGL) and log size, the CPU seconds
(``time.process_time``, the median of ``--repeats`` fits) of one ``fit`` on a uniformly logged
64-dimensional log: scikit-learn's digits (AI-IGL: action-inclusive digits), and its greedy
accuracy on the environment's test set. With ``--mnist DIR`` (the MNIST folder), also the
60000-interaction MNIST fit of each learner, and the floor a fit cannot beat: a bare torch
loop doing an IGL fit's minimum work on the same models (a linear policy and decoder, 8 epochs
of AdamW steps in mini-batches of 500 on Eq. 2, nothing else).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch

from iglearn import AIIGL, BatchIGL, ContextualBandit, Supervised
from iglearn.data.logs import InteractionLog
from iglearn.envs import make_environment
from iglearn.envs.action_inclusive import action_inclusive_environment
from iglearn.envs.base import Environment
from iglearn.learners.iglp import IGLP
from iglearn.learners.objective import BASELINE, at_action, igl_objective

LEARNERS: dict[str, Callable[[int], object]] = {
    "igl": lambda seed: BatchIGL(seed=seed),
    "ai-igl": lambda seed: AIIGL(seed=seed),
    "iglp": lambda seed: IGLP(seed=seed),
    "cb": lambda seed: ContextualBandit(seed=seed),
    "sup": lambda seed: Supervised(seed=seed),
    "vi-igl": lambda seed: _vi_igl()(seed=seed),
}


def _vi_igl() -> type:
    """VIIGL, imported when measured: a tree without it still measures the others."""
    from iglearn.learners.vi_igl import VIIGL
    return VIIGL


def environment(learner: str, dataset: str, data_dir: str | None) -> Environment:
    """The task a learner is measured on: action-inclusive feedback for AI-IGL."""
    if learner == "ai-igl":
        return action_inclusive_environment(dataset, data_dir)
    return make_environment(dataset, data_dir)


def cpu_seconds(work: Callable[[], object]) -> tuple[float, object]:
    """CPU seconds of this process spent in ``work()``, and what it returned."""
    start = time.process_time()
    result = work()
    return time.process_time() - start, result


def fit_seconds(learner: str, env: Environment, n: int, repeats: int) -> tuple[float, float]:
    """Median CPU seconds of ``repeats`` fits of ``learner`` on ``n`` interactions, and the
    mean accuracy of the fitted policies on the environment's test set."""
    times, accuracies = [], []
    test_x, test_y = env.test_set()
    for seed in range(repeats):
        log = env.log(n, seed=seed)
        model = LEARNERS[learner](seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            seconds, _ = cpu_seconds(lambda: model.fit(log))  # noqa: B023 (called at once)
        times.append(seconds)
        accuracies.append(model.accuracy(test_x, test_y))  # type: ignore[attr-defined]
    return statistics.median(times), float(np.mean(accuracies))


def bare_loop(log: InteractionLog, epochs: int = 8, batch: int = 500, seed: int = 0) -> float:
    """CPU seconds of a bare torch loop: a linear policy and a linear sigmoid decoder
    ascending Eq. 2 (with its control variate) by AdamW, ``epochs`` passes in mini-batches of
    ``batch``; no stages, restarts, corrector or monitor."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.from_numpy(np.ascontiguousarray(log.context, dtype=np.float32))
    y = torch.from_numpy(np.ascontiguousarray(log.feedback, dtype=np.float32))
    a = torch.from_numpy(log.action)
    p = torch.from_numpy(log.probability.astype(np.float32))
    k = log.n_actions
    policy = torch.nn.Linear(x.shape[1], k)
    decoder = torch.nn.Linear(y.shape[1], 1)
    optimiser = torch.optim.AdamW([*policy.parameters(), *decoder.parameters()], lr=0.02)

    def work() -> None:
        for _ in range(epochs):
            for rows in torch.randperm(len(a), generator=generator).split(batch):
                optimiser.zero_grad(set_to_none=True)
                log_pi = torch.log_softmax(policy(x[rows]), -1)
                pi_a = at_action(log_pi, a[rows]).exp()
                psi = torch.sigmoid(decoder(y[rows])[:, 0] / 0.1)
                loss = -igl_objective(pi_a, psi, p[rows], k, BASELINE)
                loss.backward()
                optimiser.step()
    return cpu_seconds(work)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[500, 2000])
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=list(LEARNERS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mnist", help="MNIST folder: also measure 60000-interaction fits")
    parser.add_argument("--mnist-learners", nargs="+", default=["igl"],
                        choices=list(LEARNERS), help="learners fitted on MNIST")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch threads: {torch.get_num_threads()}")
    print("| learner | interactions | CPU-s per fit | accuracy |")
    print("|---|---:|---:|---:|")
    for learner in args.learners:
        env = environment(learner, "digits", None)
        for n in args.sizes:
            seconds, accuracy = fit_seconds(learner, env, n, args.repeats)
            print(f"| {learner} | {n} | {seconds:.3f} | {accuracy:.3f} |", flush=True)
    if args.mnist:
        for learner in args.mnist_learners:
            env = environment(learner, "mnist", args.mnist)
            seconds, accuracy = fit_seconds(learner, env, 60000, 1)
            print(f"| {learner} | 60000 (MNIST) | {seconds:.3f} | {accuracy:.3f} |",
                  flush=True)
        log = make_environment("mnist", args.mnist).log(60000, seed=0)
        floor = statistics.median(bare_loop(log, seed=s) for s in range(args.repeats))
        print(f"| bare loop (8 epochs, batch 500) | 60000 (MNIST) | {floor:.3f} | |")


if __name__ == "__main__":
    main()
