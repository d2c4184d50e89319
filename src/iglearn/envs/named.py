"""The built-in environments by name, as ``iglearn simulate`` and the experiments name them."""

from __future__ import annotations

from functools import lru_cache

from iglearn.envs.action_inclusive import action_inclusive_environment
from iglearn.envs.base import Environment
from iglearn.envs.bci import BCIEnvironment
from iglearn.envs.mnist import make_environment
from iglearn.errors import IGLearnError

ENVIRONMENTS = ("mnist", "digits", "action-inclusive-mnist", "action-inclusive-digits", "bci")
"""The built-in environments: the 2021 paper's MNIST task and the same on scikit-learn's digits
(feedback independent of the action given the reward), action-inclusive MNIST and digits (the
feedback shows the digit (a + 6 r - 3) mod 10) and the simulated BCI (action-inclusive)."""
BCI_NOISE = 0.05
"""The BCI simulation's default noise level."""


@lru_cache(maxsize=8)
def named_environment(name: str, data_dir: str | None = None,
                      noise: float = BCI_NOISE) -> Environment:
    """The environment ``name`` (one of :data:`ENVIRONMENTS`), built once per process:
    ``data_dir`` is the MNIST folder of the MNIST ones, ``noise`` the BCI's noise level."""
    if name in ("mnist", "digits"):
        return make_environment(name, data_dir)
    if name.startswith("action-inclusive-") and name in ENVIRONMENTS:
        return action_inclusive_environment(name.removeprefix("action-inclusive-"), data_dir)
    if name == "bci":
        return BCIEnvironment(noise=noise)
    raise IGLearnError(f"unknown environment {name!r}; choose one of {', '.join(ENVIRONMENTS)}")
