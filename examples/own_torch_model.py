"""Your own torch model as the policy: a factory (in_dim, out_dim, generator) -> nn.Module
whose module maps (n, d) contexts to (n, K) scores. Fit, save, load back, predict.

A model folder records the factory's import path ('mymodels:two_layer_policy') and the
weights; loading imports that module only when asked (import_factories=True). A policy given
as a module instance, or a factory defined in the script itself, cannot be saved: iglearn
says why instead of pickling code.

Run: python examples/own_torch_model.py
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from mymodels import two_layer_policy  # beside this script, so importable when loading
from torch import nn

from iglearn import BatchIGL, IGLearnError, Optimisation
from iglearn.envs.named import named_environment


def main() -> None:
    env = named_environment("digits", None, None)
    log = env.log(800, seed=0)
    settings = Optimisation(max_steps=40)  # a short fit for the example
    learner = BatchIGL(policy=two_layer_policy, optimisation=settings, max_restarts=1,
                       seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner.fit(log)
    contexts, labels = env.test_set()
    print(f"two-layer policy: indicator {learner.report_.indicator:.3f}, test accuracy "
          f"{learner.accuracy(contexts, labels):.3f}")

    with tempfile.TemporaryDirectory() as root:
        folder = learner.save(Path(root) / "model")
        try:
            BatchIGL.load(folder)
        except IGLearnError as e:
            print(f"without opting in: {e}")
        loaded = BatchIGL.load(folder, import_factories=True)
        same = np.allclose(loaded.predict_proba(contexts), learner.predict_proba(contexts))
        print(f"loaded with import_factories=True: same predictions: {same}")

        template = nn.Sequential(nn.Linear(log.context_dim, 16), nn.ReLU(),
                                 nn.Linear(16, log.n_actions))
        instance = BatchIGL(policy=template, optimisation=settings, max_restarts=0, seed=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            instance.fit(log)
        try:
            instance.save(Path(root) / "other")
        except IGLearnError as e:
            print(f"a module instance is not saved: {e}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
