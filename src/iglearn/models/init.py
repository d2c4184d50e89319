"""Parameter initialisation from an explicit torch Generator (no global RNG)."""

import math

import torch
from torch import nn

from iglearn.models.kernels import Linear


def reset_parameters(module: nn.Module, generator: torch.Generator) -> None:
    """Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for every Linear layer, drawn from ``generator``."""
    with torch.no_grad():
        for layer in module.modules():
            if isinstance(layer, nn.Linear):
                bound = 1.0 / math.sqrt(layer.in_features)
                for p in (layer.weight, layer.bias):
                    if p is not None:
                        p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) * bound)


def output_layer(module: nn.Module) -> nn.Linear:
    """The last Linear layer of a (one-model) network: the one whose outputs are its scores or
    logits (a stacked model's is :func:`~iglearn.models.stacked.last_linear`)."""
    return [m for m in module.modules() if isinstance(m, nn.Linear)][-1]


def mlp(d_in: int, d_out: int, hidden: int) -> nn.Sequential:
    """A one-hidden-layer ReLU network."""
    return nn.Sequential(Linear(d_in, hidden), nn.ReLU(), Linear(hidden, d_out))
