"""fit_many: several fits as one batched computation, each as it would be alone.

The batched kernels may round differently from the single-trial ones on some CPUs, so the
promise is equal models up to a small tolerance, and the same discrete decisions (restarts,
corrector flips) on these logs."""

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from iglearn import BatchIGL, ContextualBandit, IGLearnError, Supervised
from iglearn.envs import digits_environment
from iglearn.learners import IdentifiabilityWarning, Optimisation


@pytest.fixture(scope="module")
def logs():
    env = digits_environment()
    return [env.log(1500, np.random.default_rng(seed)) for seed in range(3)]


def _assert_same_models(a, b) -> None:
    for name in ("policy_", "decoder_"):
        if hasattr(a, name):
            for x, y in zip(getattr(a, name).state_dict().values(),
                            getattr(b, name).state_dict().values(), strict=True):
                if x.is_floating_point():
                    torch.testing.assert_close(x, y, rtol=1e-3, atol=1e-4)
                else:
                    assert torch.equal(x, y)


QUICK = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=60)


@pytest.mark.parametrize("make", [
    lambda seed: Supervised(seed=seed, optimisation=QUICK),
    lambda seed: ContextualBandit(seed=seed, optimisation=QUICK),
    lambda seed: BatchIGL(seed=seed, optimisation=QUICK),
    pytest.param(lambda seed: BatchIGL("mlp", "mlp", seed=seed, optimisation=QUICK),
                 marks=pytest.mark.slow),
    # every trial restarts; the ones still below the threshold restart together
    pytest.param(lambda seed: BatchIGL(seed=seed, optimisation=QUICK, restart_threshold=0.93,
                                       max_restarts=2), marks=pytest.mark.slow),
], ids=["SUP", "CB", "IGL", "IGL-mlp", "IGL-restarts"])
def test_fit_many_equals_fitting_each_alone(make, logs):
    with warnings.catch_warnings():  # the restart case warns that no attempt passed
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        alone = [make(10 + t).fit(log) for t, log in enumerate(logs)]
        together = type(alone[0]).fit_many([make(10 + t) for t in range(len(logs))], logs)
    for a, b in zip(alone, together, strict=True):
        _assert_same_models(a, b)
        if isinstance(a, BatchIGL):
            np.testing.assert_allclose(a.report_.attempt_indicators,
                                       b.report_.attempt_indicators, rtol=1e-3, atol=1e-4)
            assert a.report_.flipped == b.report_.flipped
    if isinstance(alone[0], BatchIGL) and alone[0].restart_threshold:
        assert sorted(len(a.report_.attempt_indicators) for a in alone) != [1, 1, 1]


def test_fit_many_rejects_what_cannot_run_together(logs):
    with pytest.raises(IGLearnError, match="one class and settings"):
        BatchIGL.fit_many([BatchIGL(seed=0), BatchIGL(seed=1, max_restarts=0)], logs[:2])
    with pytest.raises(IGLearnError, match="one class and settings"):
        BatchIGL.fit_many([BatchIGL(seed=0), Supervised(seed=1)], logs[:2])
    with pytest.raises(IGLearnError, match="one log per learner"):
        BatchIGL.fit_many([BatchIGL(seed=0)], logs[:2])
    with pytest.raises(IGLearnError, match="logs of one shape"):
        BatchIGL.fit_many([BatchIGL(seed=0), BatchIGL(seed=1)],
                          [logs[0], logs[1].subset(np.arange(1000))])
    rng = np.random.default_rng(0)
    with pytest.raises(IGLearnError, match="share one numpy Generator"):
        BatchIGL.fit_many([BatchIGL(seed=rng), BatchIGL(seed=rng)], logs[:2])
    blind = dataclasses.replace(logs[1], reward=None)
    with pytest.raises(IGLearnError, match="needs the field 'reward'"):
        ContextualBandit.fit_many([ContextualBandit(seed=0), ContextualBandit(seed=1)],
                                  [logs[0], blind])
