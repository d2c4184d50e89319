"""Stacked models: each trial's slice computes what its model computes alone.

Batched and single-trial kernels may round differently (they do on some x86-64 CPUs), so the
promise, and what is tested, is equality up to float32 rounding."""

import pytest
import torch

from iglearn.models import make_decoder, make_policy
from iglearn.models.decoders import logistic
from iglearn.models.stacked import stack, unstack_into


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_stacked_forward_and_backward_equal_each_model_alone(kind):
    models = [make_policy(kind, 30, 5, torch.Generator().manual_seed(s)) for s in range(3)]
    x = torch.randn(3, 200, 30, generator=torch.Generator().manual_seed(9))
    stacked = stack(models)
    out = stacked(x)
    out.square().sum().backward()
    for t, model in enumerate(models):
        alone = model(x[t])
        alone.square().sum().backward()
        torch.testing.assert_close(out[t], alone)
        torch.testing.assert_close(stacked(list(x))[t], alone)  # trial by trial, from a list
        for name, param in model.named_parameters():
            torch.testing.assert_close(stacked.get_parameter(name).grad[t], param.grad,
                                       rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_stacked_decoders_keep_their_own_flags(kind):
    decoders = [make_decoder(kind, 20, torch.Generator().manual_seed(s)) for s in range(2)]
    decoders[1].flipped.fill_(True)
    y = torch.randn(2, 100, 20, generator=torch.Generator().manual_seed(1))
    stacked = stack(decoders)
    assert stacked.flipped.tolist() == [False, True]
    psi = stacked(y)
    for t, decoder in enumerate(decoders):
        torch.testing.assert_close(psi[t], decoder(y[t]))


def test_unstack_copies_trained_slices_back():
    policies = [make_policy("linear", 4, 3, torch.Generator().manual_seed(s)) for s in range(2)]
    stacked = stack(policies)
    with torch.no_grad():
        stacked.net.weight[1].fill_(7.0)
    assert not torch.all(policies[1].net.weight == 7.0)  # a copy, not a view
    unstack_into(stacked, policies)
    assert torch.all(policies[1].net.weight == 7.0)
    assert not torch.any(policies[0].net.weight == 7.0)


def test_logistic_is_the_sigmoid_and_ignores_position():
    z = torch.randn(3, 333, generator=torch.Generator().manual_seed(0)) * 40
    assert torch.allclose(logistic(z), torch.sigmoid(z), rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(logistic(z)[1], logistic(z[1].clone()))
    extreme = torch.tensor([-1e4, 1e4], requires_grad=True)
    logistic(extreme).sum().backward()
    assert torch.all(torch.isfinite(extreme.grad))
