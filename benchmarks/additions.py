"""Measure: what each of iglearn's additions to the paper's objective does.

    python benchmarks/additions.py [--dataset mnist|digits] [--data-dir DIR] [--trials 4]
                                   [--samples 60000] [--out FILE.json]

Fits ``BatchIGL`` with its defaults, with each addition switched off alone, and
``BatchIGL.paper()`` (Eq. 2 as written with the corrector and the adaptive restart of
Appendix B, none of the additions), each on the same uniform logs (the Table 1 protocol), and
prints the test accuracy (mean, std over trials, min), the indicator (Eq. 9), the restarts
used and the seconds per fit.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
import warnings
from pathlib import Path

import numpy as np

from iglearn.envs import make_environment
from iglearn.learners import BatchIGL, IdentifiabilityWarning, Optimisation
from iglearn.progress import one_line_warnings

DEFAULTS = Optimisation()
VARIANTS = {
    "iglearn (all additions)": {},
    "no grounding stage": dict(optimisation=dataclasses.replace(DEFAULTS, grounding_epochs=0)),
    "no policy stage": dict(optimisation=dataclasses.replace(DEFAULTS, policy_epochs=0)),
    "no scaled weight decay": dict(
        optimisation=dataclasses.replace(DEFAULTS, weight_decay_scale=0.0)),
    "no control variate (c = 0)": dict(control_variate=0.0),
    "plain grounding term": dict(self_normalised_grounding=False),
    "plain exact term": dict(self_normalised_exact=False),
    "one-sided minorant": dict(two_sided_minorant=False),
    "no policy negation": dict(flip_policy=False),
    "no reward-share test": dict(share_test=False),
    "decoders drawn at the default scale": dict(soft_decoders=False),
    # judged starts act on logs of 200 to 1,999 interactions only (--samples 500)
    "one start (none judged)": dict(starts=1),
}


def measure(dataset: str, data_dir: str | None, trials: int, samples: int) -> list[dict]:
    """One row per variant: accuracy, indicator, restarts and seconds over ``trials`` logs."""
    env = make_environment(dataset, data_dir)
    logs = [env.log(samples, np.random.default_rng(1000 + t)) for t in range(trials)]
    test_x, test_y = env.test_set()
    variants = {name: (lambda seed, s=settings: BatchIGL(seed=seed, **s))
                for name, settings in VARIANTS.items()}
    variants["paper objective, plain"] = lambda seed: BatchIGL.paper(seed=seed)
    rows = []
    for name, make in variants.items():
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IdentifiabilityWarning)
            fitted = BatchIGL.fit_many([make(t) for t in range(trials)], logs)
        seconds = (time.perf_counter() - start) / trials
        accuracy = np.array([learner.accuracy(test_x, test_y) for learner in fitted])
        rows.append({
            "variant": name, "accuracy_mean": float(accuracy.mean()),
            "accuracy_std": float(accuracy.std(ddof=1)) if trials > 1 else float("nan"),
            "accuracy_min": float(accuracy.min()),
            "indicator_mean": float(np.mean([f.report_.indicator for f in fitted])),
            "restarts": int(sum(f.report_.restarts for f in fitted)),
            "seconds_per_fit": seconds,
        })
        print(f"{name:28s} accuracy {100 * accuracy.mean():6.2f} % "
              f"(min {100 * accuracy.min():6.2f})  indicator {rows[-1]['indicator_mean']:.3f}"
              f"  restarts {rows[-1]['restarts']}  {seconds:.2f} s/fit", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=("mnist", "digits"), default="mnist")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    one_line_warnings()
    rows = measure(args.dataset, args.data_dir, args.trials, args.samples)
    if args.out:
        Path(args.out).write_text(json.dumps({"settings": vars(args), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
