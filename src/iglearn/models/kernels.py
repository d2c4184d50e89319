"""The linear layer and the softmax over the actions in the forms torch's CPU kernels compute
fastest when there are few actions.

A policy's scores are narrow: n rows of K < 16 actions. torch's CPU kernels handle that shape
slowly in two places (one thread, torch 2.13 with MKL, measured on an AMD EPYC):

- **x W^T + b with K outputs**: the matrix product with a narrow output, and above all the
  backward product x^T G of a batched (stacked) layer, run far below the speed of the same
  product laid out with n as the long axis of the output: W x^T. For T = 2 stacked trials,
  500 rows, 64 inputs and 10 outputs, forward and backward cost 220 µs as ``baddbmm`` of x by
  W^T and 109 µs as W by x^T; for one model of 2,000 rows, 239 against 174 µs.
- **the softmax over the last axis**: the kernel vectorises along that axis, which for fewer
  actions than a vector register holds runs element by element: 77 µs for (500, 10) against
  15 µs along the first axis of the transposed scores, 9.2 against 3.2 ms for (60000, 10).
  The kernel along a non-last axis vectorises across the rows and computes the same values.

:func:`linear` therefore computes narrow scores of many rows as (W x^T + b)^T and returns them
as that transposed view, and :func:`log_softmax` and :func:`softmax` of such scores run along
their contiguous axis without a copy. Elsewhere (a GPU, wide outputs, a few rows, as when the
service decides) they are torch's own calls. The values equal torch's up to float rounding.

A third cost is not the kernels' but the dispatcher's: an operation of a tensor and a Python
number (``1 - psi``, ``z / temperature``) wraps the number as a float64 tensor and copies it
to the tensor's dtype, about 2 µs, more than a small subtraction's own 1.5. The hot steps
therefore take their constants from :func:`number`.
"""

from __future__ import annotations

from functools import lru_cache

import torch
from torch import nn

NARROW = 16
"""Outputs (actions) below this count are narrow."""
SOFTMAX_ROWS = 128
"""Rows from which :func:`log_softmax` and :func:`softmax` of narrow scores run across the
rows (measured break-even: about 64)."""
PRODUCT_ROWS = 384
"""Rows from which :func:`linear` computes a narrow product as (W x^T + b)^T (measured
break-even for one model: about 256 to 384 rows; a stacked product gains from fewer)."""


def number(value: float, like: torch.Tensor) -> torch.Tensor:
    """``value`` as a 0-dimensional CPU tensor of ``like``'s dtype, for arithmetic with
    ``like``: the same values as the Python number gives, without the copy that torch 2.13
    makes of a Python number in every tensor operation (it wraps the number as a float64
    tensor and casts it: about 2 µs an operation, against 1.5 µs for the whole of a small
    subtraction). The tensors are made once per (value, dtype), outside inference mode
    whatever the caller's (so that a constant first asked for in inference mode can be saved
    for a later backward pass), and never written to; a CPU 0-dimensional operand serves a
    tensor on any device."""
    return _number(float(value), like.dtype)


@lru_cache(maxsize=1024)
def _number(value: float, dtype: torch.dtype) -> torch.Tensor:
    with torch.inference_mode(False):
        return torch.tensor(value, dtype=dtype)


def _narrow(values: torch.Tensor, width: int, rows: int, least: int) -> bool:
    """Whether ``values`` on the CPU, ``width`` wide (2 to :data:`NARROW` - 1) and of ``rows``
    rows (at least ``least``), go the narrow way."""
    return values.device.type == "cpu" and 2 <= width < NARROW and rows >= least


def linear(inputs: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
           ) -> torch.Tensor:
    """x W^T + b: ``inputs`` (n, in) with ``weight`` (out, in), or stacked, (T, n, in) with
    (T, out, in); ``bias`` (out,) or (T, out), or None. A narrow output of many rows on the
    CPU is computed as (W x^T + b)^T and returned as a transposed view (the module
    docstring)."""
    if inputs.dim() != weight.dim() or not _narrow(inputs, weight.shape[-2],
                                                   inputs.shape[-2], PRODUCT_ROWS):
        if weight.dim() == 2:
            return nn.functional.linear(inputs, weight, bias)
        if bias is None:
            return torch.bmm(inputs, weight.transpose(1, 2))
        return torch.baddbmm(bias[:, None, :], inputs, weight.transpose(1, 2))
    across = inputs.transpose(-1, -2)
    if bias is None:
        return (weight @ across).transpose(-1, -2)
    if weight.dim() == 2:
        return torch.addmm(bias[:, None], weight, across).transpose(-1, -2)
    return torch.baddbmm(bias[:, :, None], weight, across).transpose(-1, -2)


def log_softmax(scores: torch.Tensor) -> torch.Tensor:
    """log softmax over the last axis (the actions) of ``scores`` (..., n, K); narrow scores
    of many rows on the CPU run along the rows of the transposed scores, a view when
    :func:`linear` made them, and the result is a transposed view (the module docstring)."""
    if not _narrow(scores, scores.shape[-1], scores.numel() // scores.shape[-1],
                   SOFTMAX_ROWS):
        return torch.log_softmax(scores, dim=-1)
    return torch.log_softmax(scores.transpose(-1, -2).contiguous(), dim=-2).transpose(-1, -2)


def softmax(scores: torch.Tensor) -> torch.Tensor:
    """softmax over the last axis of ``scores`` (..., n, K), computed as :func:`log_softmax`
    says."""
    if not _narrow(scores, scores.shape[-1], scores.numel() // scores.shape[-1],
                   SOFTMAX_ROWS):
        return torch.softmax(scores, dim=-1)
    return torch.softmax(scores.transpose(-1, -2).contiguous(), dim=-2).transpose(-1, -2)


class Linear(nn.Linear):
    """``torch.nn.Linear`` (same parameters, state and initialisation) computing its output by
    :func:`linear`: policies' layers, whose outputs are the actions' scores."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 (nn.Linear's name)
        """x W^T + b for x of shape (n, in_features); any other shape as ``nn.Linear``."""
        if input.dim() != 2:
            return super().forward(input)
        return linear(input, self.weight, self.bias)
