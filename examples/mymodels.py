"""Model factories for examples/own_torch_model.py. A factory that a model folder can record
must live at the top level of an importable module like this one (not in the script you
run): the folder stores 'mymodels:two_layer_policy', never pickled code."""

from __future__ import annotations

import torch
from torch import nn


def two_layer_policy(in_dim: int, out_dim: int, generator: torch.Generator) -> nn.Module:
    """Scores of shape (n, out_dim) from a two-layer tanh network, initialised from
    ``generator`` (so a fit is reproducible from its seed)."""
    net = nn.Sequential(nn.Linear(in_dim, 32), nn.Tanh(), nn.Linear(32, out_dim))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) / p.shape[-1] ** 0.5)
    return net
