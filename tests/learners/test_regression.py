"""The regression oracle of the online bandits and IGL-P: its squared-error fit, whose linear
model's gradients are computed in closed form."""

import copy

import numpy as np
import pytest
import torch

from iglearn.learners import regression
from iglearn.learners.objective import at_action
from iglearn.learners.regression import fit_reward_model, squared_error_step
from iglearn.learners.settings import REGRESSION_OPTIMISATION
from iglearn.learners.trials import Batch
from iglearn.models import Policy, make_policy
from iglearn.models.stacked import stack


@pytest.mark.parametrize("trials", [1, 2])
def test_the_squared_error_step_in_closed_form_is_autograds(trials):
    """Loss and gradients as autograd's of mean[(f(x, a) - r)^2], on raw contexts around 35
    with one action never logged."""
    rng = np.random.default_rng(2)
    d, k, n = 6, 4, 50
    context = torch.from_numpy((35 + 2 * rng.normal(size=(trials, n, d))).astype(np.float32))
    action = torch.from_numpy(rng.integers(0, k - 1, size=(trials, n)))
    reward = torch.from_numpy(rng.choice([-1.0, 0.0, 1.0], size=(trials, n)).astype(np.float32))
    models = [make_policy("linear", d, k, torch.Generator().manual_seed(t))
              for t in range(trials)]
    net = stack([model.net for model in models])
    twin = copy.deepcopy(net)
    batch = Batch(context, action, torch.ones(trials, n), reward)
    loss = squared_error_step(Policy(net), batch)
    reference = ((at_action(twin(context), action) - reward) ** 2).mean(-1)
    reference.sum().backward()
    torch.testing.assert_close(loss, reference.detach(), rtol=1e-6, atol=1e-6)
    for mine, theirs in zip(net.parameters(), twin.parameters(), strict=True):
        assert theirs.grad.abs().max() > 1e-3
        torch.testing.assert_close(mine.grad, theirs.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_fit_reward_model_learns_each_actions_reward(kind, monkeypatch):
    """A linear model fits in closed form, an MLP by autograd; both rank the actions by their
    reward on a small raw log."""
    calls = []
    step = regression.squared_error_step
    monkeypatch.setattr(regression, "squared_error_step",
                        lambda net, batch: calls.append(1) or step(net, batch))
    rng = np.random.default_rng(0)
    n, d, k = 400, 3, 3
    label = rng.integers(0, k, n)
    context = (35 + 0.5 * np.eye(d)[label] + 0.05 * rng.normal(size=(n, d))).astype(np.float32)
    context = (context - context.mean(0)) / context.std(0)
    action = rng.integers(0, k, n)
    reward = (action == label).astype(np.float32)
    model = make_policy(kind, d, k, torch.Generator().manual_seed(1))
    fit_reward_model(model, context, action, reward, REGRESSION_OPTIMISATION,
                     torch.Generator().manual_seed(2))
    assert bool(calls) is (kind == "linear")
    with torch.no_grad():
        chosen = model.scores(torch.from_numpy(context)).argmax(1).numpy()
    assert (chosen == label).mean() > 0.9
