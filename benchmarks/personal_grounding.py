"""Benchmark: online IGL-P grounding words per user, seed by seed, in iglearn's own loop.

    python benchmarks/personal_grounding.py [--seeds 0-11] [--rounds 10000] [--ik-starts 2]
        [--gamma0 G] [--swapping 5] [--csv FILE]

The task is scikit-learn's handwritten digits (K = 10, 64 pixels scaled to [0, 1], drawn with
replacement) grounded as coba's ``Environments.grounded(10 users, normal, 10 words, 3 good)``
grounds it: each round a user is drawn uniformly and says one of the 3 good words after the
image's digit and one of the 7 others after any other action, except the first ``--swapping``
users, who swap good and bad words. The context is the user id one-hot in 32 slots (as
coba's plug-in encodes it) followed by the pixels; the feedback is the word one-hot.
:class:`~iglearn.learners.iglp.OnlineIGLP` with ``users=32`` (``PersonalIK``, IGW with its
growing gamma, the coba plug-in's default) plays ``--rounds`` rounds per seed, and
``--ik-starts`` sets how many initialisations of the inverse-kinematics model each fit tries,
``--gamma0`` IGW's gamma0 (OnlineIGLP's default unless given).

Prints, per seed, the mean true reward over every round and over the last 2,000, the share
of interactions the last fit found extreme and the CPU seconds (one torch thread), then the
mean over the seeds; ``--csv`` writes the same rows. A seed whose last 2,000 rounds stay near
random play (0.1) never grounded the users' words.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

USERS, SLOTS, WORDS, GOOD, LAST = 10, 32, 10, 3, 2000


def seeds(text: str) -> list[int]:
    """'0-11' or '0,3,5' as a list of seeds."""
    if "-" in text:
        first, last = text.split("-")
        return list(range(int(first), int(last) + 1))
    return [int(s) for s in text.split(",")]


def play_seed(seed: int, rounds: int, ik_starts: int, swapping: int,
              gamma0: float | None = None) -> dict[str, float]:
    """One seed's play: mean reward over all rounds and the last :data:`LAST`, the last
    fit's extreme share and the CPU seconds."""
    from sklearn.datasets import load_digits

    from iglearn.learners.iglp import OnlineIGLP

    rng = np.random.default_rng(seed)
    digits = load_digits()
    pixels, labels = (digits.data / 16).astype(np.float32), digits.target
    options = {} if gamma0 is None else {"gamma0": gamma0}
    learner = OnlineIGLP(10, SLOTS + pixels.shape[1], WORDS, users=SLOTS, seed=seed,
                         ik_starts=ik_starts, **options)
    users_eye, words_eye = np.eye(SLOTS, dtype=np.float32), np.eye(WORDS, dtype=np.float32)
    rewards: list[np.ndarray] = []
    played = 0
    start = time.process_time()
    while played < rounds:
        n = learner.block_size(rounds)
        rows, users = rng.integers(0, len(labels), n), rng.integers(0, USERS, n)
        context = np.concatenate([users_eye[users], pixels[rows]], axis=1)
        action, probability = learner.act_batch(context)
        reward = action == labels[rows]
        says_good = reward != (users < swapping)
        word = np.where(says_good, rng.integers(0, GOOD, n), rng.integers(GOOD, WORDS, n))
        learner.learn_batch(context, action, probability, words_eye[word])
        rewards.append(reward)
        played += n
    seconds = time.process_time() - start
    every = np.concatenate(rewards)
    return {"seed": seed, "reward": float(every.mean()),
            "reward_last": float(every[-LAST:].mean()),
            "extreme_last_fit": float(learner.batch.report_.extreme),
            "cpu_seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=seeds, default=seeds("0-11"))
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--ik-starts", type=int, default=2)
    parser.add_argument("--gamma0", type=float, default=None)
    parser.add_argument("--swapping", type=int, default=USERS // 2,
                        help="how many of the 10 users swap good and bad words")
    parser.add_argument("--csv", type=Path, default=None)
    args = parser.parse_args(argv)
    rows, last = [], min(LAST, args.rounds)  # the rounds reward_last averages
    for seed in args.seeds:
        row = play_seed(seed, args.rounds, args.ik_starts, args.swapping, args.gamma0)
        rows.append(row)
        print(f"seed {seed}: reward {row['reward']:.3f}, last {last} {row['reward_last']:.3f}, "
              f"extreme {row['extreme_last_fit']:.3f}, {row['cpu_seconds']:.1f} CPU-s",
              flush=True)
    frame = pd.DataFrame(rows)
    print(f"mean over {len(frame)} seeds: reward {frame['reward'].mean():.3f}, last {last} "
          f"{frame['reward_last'].mean():.3f}, {frame['cpu_seconds'].mean():.1f} CPU-s per seed "
          f"(ik_starts {args.ik_starts})")
    if args.csv is not None:
        frame.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
