"""Softmax policies (:mod:`iglearn.models.policies`)."""

import torch

from iglearn.models.io import MIN_TEMPERATURE
from iglearn.models.policies import LinearPolicy


def test_a_temperature_near_0_gives_the_greedy_policy_without_nan():
    """Scores of a few units over the smallest temperature a model may hold overflow float32;
    the row's largest score is taken off first, so the policy is the greedy one, not NaN,
    and at an ordinary temperature it is the softmax of the tempered scores."""
    generator = torch.Generator().manual_seed(0)
    context = torch.randn(50, 6, generator=generator) * 10
    policy = LinearPolicy(6, 4, temperature=MIN_TEMPERATURE)
    scores = policy.scores(context).detach()
    assert scores.abs().max() > 5  # scores / temperature is inf in float32
    probabilities = policy.probabilities(context).detach()
    assert torch.isfinite(probabilities).all()
    assert torch.equal(probabilities.argmax(1), scores.argmax(1))
    assert torch.allclose(probabilities.max(1).values, torch.ones(50))
    assert (policy(context).detach().max(1).values == 0).all()
    policy.temperature = 0.5
    assert torch.allclose(policy.probabilities(context).detach(),
                          torch.softmax(scores / 0.5, -1), atol=1e-6)
