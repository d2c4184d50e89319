"""Fresh decoders: the default draw and the soft start 2021 IGL's fits begin from."""

import pytest
import torch

from iglearn.models import make_decoder
from iglearn.models.decoders import soften


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_a_soft_decoder_is_the_default_draw_with_its_last_layer_scaled_by_the_temperature(kind):
    plain = make_decoder(kind, 64, torch.Generator().manual_seed(3), temperature=0.1)
    soft = make_decoder(kind, 64, torch.Generator().manual_seed(3), temperature=0.1, soft=True)
    layers = [name for name, _ in plain.named_parameters()]
    last = layers[-2:]  # the last layer's weight and bias
    for name, value in soft.named_parameters():
        expected = dict(plain.named_parameters())[name]
        assert torch.allclose(value, expected * 0.1 if name in last else expected), name


def test_a_soft_decoder_starts_between_0_and_1_where_the_default_splits_the_feedback():
    # standardised feedback: the default draw's logit over T = 0.1 spreads about ten times
    # wider than a layer's output, so psi is nearly 0 or 1 on most feedback; the soft start
    # leaves it between (psi within [0.1, 0.9] on most rows)
    feedback = torch.randn(2000, 64, generator=torch.Generator().manual_seed(0))
    inside_plain, inside_soft = [], []
    for seed in range(8):
        plain = make_decoder("linear", 64, torch.Generator().manual_seed(seed))
        soft = make_decoder("linear", 64, torch.Generator().manual_seed(seed), soft=True)
        with torch.no_grad():
            for decoder, inside in ((plain, inside_plain), (soft, inside_soft)):
                psi = decoder(feedback)
                inside.append(float(((psi > 0.1) & (psi < 0.9)).float().mean()))
    assert min(inside_soft) > 0.9
    assert max(inside_plain) < 0.5


def test_soften_scales_in_place_and_keeps_the_decoder_a_decoder():
    decoder = make_decoder("linear", 8, torch.Generator().manual_seed(1), temperature=0.5)
    before = [p.clone() for p in decoder.parameters()]
    soften(decoder)
    for after, was in zip(decoder.parameters(), before, strict=True):
        assert torch.allclose(after, was * 0.5)
    assert decoder(torch.zeros(3, 8)).shape == (3,)
