"""The narrow-score forms of the linear layer and the softmax agree with torch's own calls."""

import pytest
import torch
from torch import nn

from iglearn.models import LinearPolicy, MLPPolicy
from iglearn.models.kernels import (
    NARROW,
    PRODUCT_ROWS,
    SOFTMAX_ROWS,
    Linear,
    linear,
    log_softmax,
    number,
    softmax,
)
from iglearn.models.stacked import stack

SHAPES = [  # (trials or None, rows, inputs, outputs)
    (None, 1, 64, 10), (None, PRODUCT_ROWS, 64, 10), (None, 2000, 64, 3), (None, 500, 64, 1),
    (None, 500, 8, 40), (3, 500, 64, 10), (2, 1, 64, 7), (4, 500, 64, 2), (2, 500, 20, 32),
]


def _tensors(trials, rows, inputs, outputs, seed=0):
    g = torch.Generator().manual_seed(seed)
    lead = () if trials is None else (trials,)
    x = torch.randn(*lead, rows, inputs, generator=g) * 3 + 35  # raw, far from 0
    w = torch.randn(*lead, outputs, inputs, generator=g).requires_grad_()
    b = torch.randn(*lead, outputs, generator=g).requires_grad_()
    return x, w, b


def _reference(x, w, b):
    if w.dim() == 2:
        return nn.functional.linear(x, w, b)
    return torch.baddbmm(b[:, None, :], x, w.transpose(1, 2))


@pytest.mark.parametrize("shape", SHAPES)
def test_linear_matches_torch_with_its_gradients(shape):
    x, w, b = _tensors(*shape)
    got, want = linear(x, w, b), _reference(x, w, b)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-3)
    grad = torch.randn(want.shape, generator=torch.Generator().manual_seed(1))
    got_w, got_b = torch.autograd.grad(got, (w, b), grad)
    want_w, want_b = torch.autograd.grad(want, (w, b), grad)
    torch.testing.assert_close(got_w, want_w, rtol=1e-4, atol=1e-2)
    torch.testing.assert_close(got_b, want_b, rtol=1e-4, atol=1e-3)


def test_linear_without_bias():
    x, w, _ = _tensors(None, 500, 16, 5)
    torch.testing.assert_close(linear(x, w, None), x @ w.T, rtol=1e-5, atol=1e-3)


def test_narrow_scores_of_many_rows_take_the_transposed_form():
    x, w, b = _tensors(2, 500, 64, 10)
    scores = linear(x, w, b)
    assert not scores.is_contiguous()  # (W x^T + b)^T, a view
    assert linear(*_tensors(2, 8, 64, 10)).is_contiguous()  # few rows: torch's own
    assert linear(*_tensors(2, 500, 64, NARROW)).is_contiguous()  # wide: torch's own


@pytest.mark.parametrize("shape", [(1, 10), (SOFTMAX_ROWS, 10), (500, 3), (3, 500, 10),
                                   (500, 2), (500, NARROW), (60, 7)])
@pytest.mark.parametrize("transposed", [False, True])
def test_softmaxes_match_torch_with_their_gradients(shape, transposed):
    g = torch.Generator().manual_seed(2)
    scores = torch.randn(shape, generator=g) * 10
    if transposed:  # as linear() returns narrow scores
        scores = scores.transpose(-1, -2).contiguous().transpose(-1, -2)
    scores.requires_grad_()
    grad = torch.randn(shape, generator=g)
    for ours, theirs in ((log_softmax, torch.log_softmax), (softmax, torch.softmax)):
        got, want = ours(scores), theirs(scores, dim=-1)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(torch.autograd.grad(got, scores, grad)[0],
                                   torch.autograd.grad(want, scores, grad)[0],
                                   rtol=1e-5, atol=1e-5)


def test_softmax_of_extreme_scores_stays_finite():
    scores = torch.tensor([[1e4, -1e4, 0.0]]).repeat(SOFTMAX_ROWS, 1)
    assert torch.isfinite(log_softmax(scores)[:, 0]).all()
    torch.testing.assert_close(softmax(scores)[:, 0], torch.ones(SOFTMAX_ROWS))


def test_linear_layer_is_torchs_with_the_same_state():
    layer = Linear(64, 10)
    assert isinstance(layer, nn.Linear)
    plain = nn.Linear(64, 10)
    plain.load_state_dict(layer.state_dict())
    x = torch.randn(700, 64)
    torch.testing.assert_close(layer(x), plain(x), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(layer(x[None]), plain(x[None]))  # other shapes: torch's path


def test_policies_score_with_the_narrow_layer_and_stack():
    policy = LinearPolicy(64, 10)
    assert type(policy.net) is Linear
    assert type(MLPPolicy(64, 10, hidden=32).net[-1]) is Linear
    copies = [LinearPolicy(64, 10) for _ in range(3)]
    stacked = stack([p.net for p in copies])
    x = torch.randn(3, 500, 64)
    together = stacked(x)
    for t, p in enumerate(copies):
        torch.testing.assert_close(together[t], p.net(x[t]), rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(torch.log_softmax(together[t], -1), p(x[t]),
                                   rtol=1e-5, atol=1e-4)


def test_softmaxes_of_one_vector_are_torchs():
    scores = torch.randn(10, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(log_softmax(scores), torch.log_softmax(scores, -1))
    torch.testing.assert_close(softmax(scores), torch.softmax(scores, -1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_number_as_a_tensor_gives_what_the_python_number_gives(dtype):
    x = torch.randn(300, generator=torch.Generator().manual_seed(0)).to(dtype) * 3
    for value in (1, 0.1, 1 / 7, -500, 0.0):
        constant = number(value, x)
        assert constant.dim() == 0 and constant.dtype == dtype and constant.device.type == "cpu"
        assert constant is number(value, x)  # made once
        assert float(constant) == float(torch.tensor(value, dtype=dtype))
        for ours, theirs in ((x - constant, x - value), (constant - x, value - x),
                             (x * constant, x * value), (x >= constant, x >= value)):
            assert ours.dtype == theirs.dtype
            assert torch.equal(ours, theirs)
        if value:
            assert torch.equal(x / constant, x / value)
    # another dtype gets its own tensor
    assert number(0.1, x.float()).dtype == torch.float32
    assert number(0.1, x.double()).dtype == torch.float64


def test_a_number_first_asked_for_in_inference_mode_serves_a_backward_pass():
    x = torch.randn(5, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        constant = number(0.123456, x)
        assert torch.equal(x / constant, x / 0.123456)
    assert not constant.is_inference()
    w = x.clone().requires_grad_()
    (w / number(0.123456, w)).sum().backward()
    assert w.grad is not None
    torch.testing.assert_close(w.grad, torch.full_like(x, 1 / 0.123456))
