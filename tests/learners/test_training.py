"""The shared optimiser: stages, and weight decay scaled by inputs per sample."""

import torch

from iglearn.learners.training import Optimisation, Stage, optimise
from iglearn.learners.trials import Trials
from iglearn.models.stacked import stack


def _fit(n: int, settings: Optimisation) -> torch.nn.Module:
    # Zero loss: only the weight decay moves the parameters (two trials side by side).
    layer = torch.nn.Linear(50, 2)
    with torch.no_grad():
        layer.weight.fill_(1.0)
        layer.bias.fill_(1.0)
    layers = stack([layer, layer])
    stage = Stage(1, list(layers.parameters()),
                  lambda batch: 0.0 * layers(batch.context).sum((1, 2)))
    data = Trials([torch.zeros(n, 50)] * 2, [torch.zeros(n, dtype=torch.long)] * 2,
                  [torch.ones(n)] * 2, [torch.zeros(n)] * 2)
    optimise([stage], data, settings, [torch.Generator().manual_seed(s) for s in range(2)])
    return layers


def test_weight_decay_grows_with_inputs_per_sample_and_spares_biases():
    settings = Optimisation(epochs=1, max_steps=20, batch_size=100, lr=0.01)
    small, large = _fit(500, settings), _fit(50000, settings)
    assert torch.all(small.bias == 1.0) and torch.all(large.bias == 1.0)
    # 8 * 50 / 500 = 0.8 against 0.008: far more shrinkage on the small data set.
    assert float(small.weight.detach().mean()) < 0.95 < float(large.weight.detach().mean()) < 1.0
    off = _fit(500, Optimisation(epochs=1, max_steps=20, batch_size=100, lr=0.01,
                                 weight_decay_scale=0.0))
    assert torch.all(off.weight == 1.0)
