"""The built-in environments by name, as ``iglearn simulate`` and the experiments name them."""

from __future__ import annotations

from functools import lru_cache

from iglearn.envs.action_inclusive import action_inclusive_environment
from iglearn.envs.base import Environment
from iglearn.envs.bci import BCIEnvironment
from iglearn.envs.mnist import make_environment
from iglearn.envs.noisy import NOISE_KINDS, noisy_environment
from iglearn.envs.personalised import grounded_environment, random_simulator, vw_simulator
from iglearn.errors import IGLearnError

ENVIRONMENTS = ("mnist", "digits", "action-inclusive-mnist", "action-inclusive-digits", "bci",
                "personalised", "personalised-continuous", "personalised-many",
                "grounded-digits", "grounded-mnist",
                *(f"noisy-{kind}-{dataset}" for dataset in ("mnist", "digits")
                  for kind in NOISE_KINDS))
"""The built-in environments: the 2021 paper's MNIST task and the same on scikit-learn's digits
(feedback independent of the action given the reward), action-inclusive MNIST and digits (the
feedback shows the digit (a + 6 r - 3) mod 10), the simulated BCI (action-inclusive), and the
personalised ones (IGL-P): VW's IGL simulator with one-hot tokens ('personalised') or
continuous feedback vectors (token embedding plus noise, 'personalised-continuous'), a
generalised simulator with 8 users, 10 topics and two vocabularies ('personalised-many'), and
the grounded transform of digits and MNIST (users who swap good and bad words), and the
noisy-feedback tasks (VI-IGL, Hu et al. 2024: the 2021 task with each feedback image replaced,
with probability p, by a noise digit independent of everything or tied to the action, the
context or both: 'noisy-<kind>-mnist' and '-digits')."""
CONTINUOUS_DIM = 16
"""Dimension of the feedback vectors of 'personalised-continuous'."""
CONTINUOUS_NOISE = 0.5
"""Noise level of 'personalised-continuous' (each vector is the token's unit-variance
embedding plus Gaussian noise of this standard deviation)."""
BCI_NOISE = 0.05
"""The BCI simulation's default noise level."""
NOISY_P = 0.1
"""The noisy-feedback tasks' default probability of replacing a feedback image."""


def default_noise(name: str) -> float:
    """The default ``noise`` of environment ``name``: the replacement probability p of a
    noisy-feedback task, else the BCI's noise level."""
    return NOISY_P if name.startswith("noisy-") else BCI_NOISE


@lru_cache(maxsize=8)
def named_environment(name: str, data_dir: str | None = None,
                      noise: float | None = None) -> Environment:
    """The environment ``name`` (one of :data:`ENVIRONMENTS`), built once per process:
    ``data_dir`` is the MNIST folder of the MNIST ones, ``noise`` the BCI's noise level or a
    noisy-feedback task's replacement probability p (None: :func:`default_noise`)."""
    if noise is None:
        noise = default_noise(name)
    if name in ("mnist", "digits"):
        return make_environment(name, data_dir)
    if name.startswith("action-inclusive-") and name in ENVIRONMENTS:
        return action_inclusive_environment(name.removeprefix("action-inclusive-"), data_dir)
    if name == "bci":
        return BCIEnvironment(noise=noise)
    if name == "personalised":
        return vw_simulator()
    if name == "personalised-continuous":
        return vw_simulator(embedding_dim=CONTINUOUS_DIM, noise=CONTINUOUS_NOISE)
    if name == "personalised-many":
        return random_simulator()
    if name in ("grounded-digits", "grounded-mnist"):
        return grounded_environment(name.removeprefix("grounded-"), data_dir)
    if name.startswith("noisy-") and name in ENVIRONMENTS:
        kind, _, dataset = name.removeprefix("noisy-").rpartition("-")
        return noisy_environment(dataset, kind, noise, data_dir)
    raise IGLearnError(f"unknown environment {name!r}; choose one of {', '.join(ENVIRONMENTS)}")
