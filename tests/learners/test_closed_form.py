"""The closed-form stage gradients of linear models equal autograd's of the same losses."""

import numpy as np
import pytest
import torch

from iglearn import BatchIGL, ContextualBandit
from iglearn.envs import digits_environment
from iglearn.learners import closed_form
from iglearn.learners.ai_igl import grounding_stage, regrounding_stage
from iglearn.learners.settings import Optimisation
from iglearn.learners.trials import Batch
from iglearn.models import make_decoder, make_policy
from iglearn.models.stacked import stack

T, N, D, K = 3, 450, 12, 5


def _models(policy_temperature: float = 1.0, flips: tuple[bool, ...] = (False,) * T,
            policy: str = "linear"):
    g = torch.Generator().manual_seed(0)
    policies = [make_policy(policy, D, K, g) for _ in range(T)]
    decoders = [make_decoder("linear", D, g) for _ in range(T)]
    for p in policies:
        p.temperature = policy_temperature
        with torch.no_grad():  # scores of a few units: some rows near pi = 1
            for weight in p.parameters():
                weight.mul_(4.0)
    for d, flip in zip(decoders, flips, strict=True):
        d.flipped.fill_(flip)
    return stack(policies), stack(decoders)


def _batch(seed: int = 1) -> Batch:
    g = torch.Generator().manual_seed(seed)
    probability = torch.rand(T, N, generator=g) * 0.5 + 0.1
    return Batch(torch.randn(T, N, D, generator=g), torch.randint(0, K, (T, N), generator=g),
                 probability, torch.randn(T, N, D, generator=g) * 2 + 1)


def _gradients(stage, batch):
    """The stage's loss values and its parameters' gradients, by autograd and by its
    closed form."""
    found = []
    for form in ("autograd", "closed"):
        for p in stage.params:
            p.grad = None
        if form == "closed":
            values = stage.closed_form(batch)
        else:
            values = stage.loss(batch)
            values.sum().backward()
        found.append((values.detach().clone(),
                      [None if p.grad is None else p.grad.clone() for p in stage.params]))
    return found


@pytest.mark.parametrize("flips", [(False,) * T, (True,) * T, (False, True, False)],
                         ids=["none", "all", "some"])
@pytest.mark.parametrize("settings", [
    {},
    {"self_normalised_grounding": False, "self_normalised_exact": False,
     "two_sided_minorant": False, "control_variate": 0.0},
], ids=["defaults", "plain"])
@pytest.mark.parametrize("policy_temperature", [1.0, 0.5])
def test_closed_form_gradients_equal_autograd(flips, settings, policy_temperature):
    policy, decoder = _models(policy_temperature, flips)
    learner = BatchIGL(seed=0, **settings)
    stages = learner.stages(policy, decoder, K, Optimisation())
    assert all(stage.closed_form is not None for stage in stages)
    batch = _batch()
    # many rows (scores computed transposed, iglearn.models.kernels) and few
    for rows in (batch, Batch(*(field[:, :100] for field in batch))):
        for stage in stages:
            (auto, auto_grads), (closed, closed_grads) = _gradients(stage, rows)
            torch.testing.assert_close(closed, auto, rtol=1e-5, atol=1e-6)
            for a, c in zip(auto_grads, closed_grads, strict=True):
                assert a is not None and c is not None
                torch.testing.assert_close(c, a, rtol=1e-4, atol=1e-6)
    # the policy stage leaves the decoder's gradients alone
    for p in decoder.parameters():
        p.grad = None
    stages[1].closed_form(batch)
    assert all(p.grad is None for p in decoder.parameters())


@pytest.mark.parametrize("policy_temperature", [1.0, 0.5])
def test_reward_stages_closed_form_equals_autograd(policy_temperature):
    """CB's stages on the true reward (and AI-IGL's and VI-IGL's on a decoded one)."""
    policy, _ = _models(policy_temperature)
    batch = _batch()
    rewards = torch.rand(T, N, generator=torch.Generator().manual_seed(4))
    for reward in (batch.signal[..., 0].gt(1).float(), rewards):
        stages = ContextualBandit(seed=0).stages(policy, Optimisation())
        assert [stage.closed_form is not None for stage in stages] == [True, True]
        for stage in stages:
            (auto, auto_grads), (closed, closed_grads) = _gradients(
                stage, batch._replace(signal=reward))
            torch.testing.assert_close(closed, auto, rtol=1e-5, atol=1e-6)
            for a, c in zip(auto_grads, closed_grads, strict=True):
                torch.testing.assert_close(c, a, rtol=1e-4, atol=1e-6)


def test_other_models_train_by_autograd():
    policy, decoder = _models(policy="mlp")
    assert not closed_form.supports(policy, decoder)
    stages = BatchIGL(seed=0).stages(policy, decoder, K, Optimisation())
    assert all(stage.closed_form is None for stage in stages)
    assert all(stage.closed_form is None
               for stage in ContextualBandit(seed=0).stages(policy, Optimisation()))


def test_a_fit_by_closed_form_matches_one_by_autograd(monkeypatch):
    """The whole fit on a small digits log: the same decisions and nearly the same model."""
    log = digits_environment().log(400, np.random.default_rng(3))
    quick = Optimisation(max_steps=40)
    closed = BatchIGL(seed=2, optimisation=quick, starts=1).fit(log)
    monkeypatch.setattr(closed_form, "supports", lambda policy, decoder: False)
    auto = BatchIGL(seed=2, optimisation=quick, starts=1).fit(log)
    assert closed.report_.flipped == auto.report_.flipped
    assert len(closed.report_.attempt_indicators) == len(auto.report_.attempt_indicators)
    np.testing.assert_allclose(closed.report_.indicator, auto.report_.indicator, atol=1e-3)
    for x, y in zip(closed.policy_.state_dict().values(), auto.policy_.state_dict().values(),
                    strict=True):
        torch.testing.assert_close(x, y, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("trials", [1, T])
@pytest.mark.parametrize("flips", ["none", "some"])
def test_ai_igl_grounding_closed_forms_equal_autograd(trials, flips):
    """AI-IGL's grounding and re-grounding stages: the policy's scores and K decoders a trial,
    stacked trial-major."""
    g = torch.Generator().manual_seed(5)
    policies = [make_policy("linear", D, K, g) for _ in range(trials)]
    decoders = [make_decoder("linear", D, g) for _ in range(trials * K)]
    if flips == "some":
        for decoder in decoders[::3]:
            decoder.flipped.fill_(True)
    scores, psi = stack(policies), stack(decoders)
    batch = _batch()
    batch = Batch(*(field[:trials] for field in batch))
    for make in (grounding_stage, regrounding_stage):
        stage = make(scores, psi, K, Optimisation())
        assert stage.closed_form is not None
        (auto, auto_grads), (closed, closed_grads) = _gradients(stage, batch)
        torch.testing.assert_close(closed, auto, rtol=1e-5, atol=1e-6)
        for a, c in zip(auto_grads, closed_grads, strict=True):
            torch.testing.assert_close(c, a, rtol=1e-4, atol=1e-6)
