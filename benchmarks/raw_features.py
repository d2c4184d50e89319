"""Benchmark: raw features against the same log standardised by hand.

    python benchmarks/raw_features.py [--seeds 2] [--samples 2000]
                                      [--tasks digits,ai-digits,bci,personalised]

Every task's uniform log is fitted three ways with the learners' default settings
(``standardise="auto"``), each seed a fresh log and initialisation:

- native: the log as the environment gives it (on the unit scale: "auto" leaves it as it is);
- raw: contexts and feedback mapped x -> 35 + 0.05 x, as raw measurements might be ("auto"
  standardises both blocks with the log's statistics);
- by hand: the raw log z-scored by hand (numpy mean and standard deviation of each column, a
  constant column only centred), the test contexts alike.

Tasks: digits (IGL, CB, SUP), action-inclusive digits (AI-IGL, CB, SUP), the BCI simulation at
noise 0.05 (AI-IGL, CB, SUP) and VW's personalised simulator with one-hot tokens (IGL-P, IGL,
CB, SUP). Prints test accuracy (%) per task, learner and way, averaged over the seeds, as a
markdown table, and each fit's rules (which blocks were standardised).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from iglearn import AIIGL, BatchIGL, ContextualBandit, Supervised
from iglearn.data.logs import InteractionLog
from iglearn.envs import BCIEnvironment, action_inclusive_environment, digits_environment
from iglearn.envs.base import Environment
from iglearn.envs.personalised import vw_simulator
from iglearn.experiments.runner import one_thread
from iglearn.learners.iglp import IGLP

SCALE, SHIFT = np.float32(0.05), np.float32(35.0)

TASKS: dict[str, tuple] = {
    "digits": (digits_environment, ("igl", "cb", "sup")),
    "ai-digits": (lambda: action_inclusive_environment("digits"), ("ai-igl", "cb", "sup")),
    "bci": (lambda: BCIEnvironment(noise=0.05), ("ai-igl", "cb", "sup")),
    "personalised": (vw_simulator, ("igl-p", "igl", "cb", "sup")),
}
LEARNERS = {"igl": BatchIGL, "ai-igl": AIIGL, "igl-p": IGLP, "cb": ContextualBandit,
            "sup": Supervised}


def raw(x: np.ndarray) -> np.ndarray:
    return x * SCALE + SHIFT


def z_scores(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each column's mean and standard deviation (1 for a constant column), by hand."""
    x = x.astype(np.float64)
    mean, std = x.mean(0), x.std(0)
    return mean, np.where(std <= 1e-6 * np.maximum(np.abs(mean), 1e-6), 1.0, std)


def versions(log: InteractionLog, test: np.ndarray) -> dict[str, tuple[InteractionLog,
                                                                         np.ndarray]]:
    shifted = InteractionLog(raw(log.context), log.action, log.probability, raw(log.feedback),
                             log.n_actions, log.reward, log.label, "raw", log.definitely_bad)
    (mx, sx), (my, sy) = z_scores(shifted.context), z_scores(shifted.feedback)
    hand = InteractionLog(((shifted.context - mx) / sx).astype(np.float32), log.action,
                          log.probability, ((shifted.feedback - my) / sy).astype(np.float32),
                          log.n_actions, log.reward, log.label, "by hand",
                          log.definitely_bad)
    return {"native": (log, test), "raw": (shifted, raw(test)),
            "by hand": (hand, ((raw(test) - mx) / sx).astype(np.float32))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--tasks", default=",".join(TASKS))
    args = parser.parse_args()
    one_thread()
    warnings.simplefilter("ignore")
    ways = ("native", "raw", "by hand")
    lines = ["| task | learner | " + " | ".join(ways) + " | raw - by hand |",
             "|---|---|" + "---|" * (len(ways) + 1)]
    for task in args.tasks.split(","):
        make, learners = TASKS[task]
        env: Environment = make()
        test, labels = env.test_set()
        scores: dict[tuple[str, str], list[float]] = {}
        for seed in range(args.seeds):
            log = env.log(args.samples, seed=1000 + seed)
            for way, (data, contexts) in versions(log, test).items():
                for name in learners:
                    learner = LEARNERS[name](seed=seed).fit(data)
                    rules = learner.standardiser_.rules if learner.standardiser_ else "off"
                    print(f"{task} seed {seed} {way} {name}: {rules}", flush=True)
                    scores.setdefault((name, way), []).append(
                        100 * learner.accuracy(contexts, labels))
        for name in learners:
            means = [float(np.mean(scores[name, way])) for way in ways]
            lines.append(f"| {task} | {name} | " + " | ".join(f"{m:.2f}" for m in means)
                         + f" | {means[1] - means[2]:+.2f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
