"""The data-driven decoder corrector of Appendix B.

Eq. 2 is symmetric under (pi, psi) -> (pi_bar, 1 - psi): ascending it can end at the local
optimum (pi_dagger, psi_dagger) that decodes the reward's opposite. Under uniform play a
rewarded interaction is the rarer event (a 1/K share for classification, K >= 3), so a decoder
that calls more than half of the feedback a reward is decoding the opposite, and the corrector
flips it to 1 - psi. Decoders store the flip (their ``flipped`` flag), so it stays in their
class and in saved models.

iglearn adds the policy negation (``BatchIGL.flip_policy``): whenever the decoder is flipped,
the policy's scores are negated with it, so that the pair (pi_dagger, psi_dagger) becomes
(pi_bar, 1 - psi) and moves on towards (pi_star, psi_star). Without it, a flip leaves a policy
that avoids what the flipped decoder calls rewarded; psi then ascends Eq. 2 towards calling
every feedback a reward and the next flip leaves psi = 0 on all feedback: a stationary point
with indicator 0.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from iglearn.learners.trials import Trials, move
from iglearn.models import Decoder
from iglearn.models.stacked import last_linear


def corrector_statistic(psi: torch.Tensor, probability: torch.Tensor,
                        n_actions: int) -> torch.Tensor:
    """The corrector's ``sign`` (Appendix B): the fraction of feedback decoded as reward,
    psi(y) > 0.5, estimated for the uniform policy by self-normalised importance weights
    (1/K)/p, so that it stays right when the log was not gathered uniformly. Reduces over the
    last axis (one value per trial)."""
    weight = (1.0 / n_actions) / probability
    return (weight * (psi > 0.5).to(weight.dtype)).sum(-1) / weight.sum(-1)


class Correction(NamedTuple):
    """What one pass of the corrector did and saw, one entry per trial."""

    flipped: torch.Tensor
    """Which trials' decoders were flipped, boolean (T,)."""
    statistic: torch.Tensor
    """The corrector's statistic after the flip, (T,)."""
    psi: torch.Tensor
    """The decoded rewards of all the feedback after the flip, (T, n)."""


def decode_all(decoder: nn.Module, data: Trials, device: torch.device | None) -> torch.Tensor:
    """The stacked ``decoder`` on all of each trial's feedback, shape (T, n): in one call on
    the CPU, 65536 rows at a time moved to any other device."""
    if device is None or device.type == "cpu":
        return decoder(data.signal)
    return torch.cat([decoder([move(s, device) for s in chunk.signal])
                      for chunk in data.chunks()], dim=-1)


def data_driven_corrector(policy: nn.Module, decoder: Decoder, data: Trials, n_actions: int,
                          negate_policy: bool, device: torch.device | None = None
                          ) -> Correction:
    """Appendix B's corrector on all of each trial's feedback: flip the decoders (stacked, one
    per trial) whose statistic exceeds one half, and with ``negate_policy`` negate the scores
    of those trials' policies (the last linear layer of the stacked ``policy``, or the
    ``negated`` flag of a policy on a user's module, :mod:`iglearn.models.custom`).

    Returns:
        which trials were flipped, the statistic and the decoded rewards after the flip.
    """
    with torch.no_grad():
        psi = decode_all(decoder, data, device)
        probability = move(torch.stack(data.probability), psi.device)
        flip = corrector_statistic(psi, probability, n_actions) > 0.5
        decoder.flipped.logical_xor_(flip)
        negated = getattr(policy, "negated", None)
        if negate_policy and isinstance(negated, torch.Tensor):  # a user's module: its flag
            negated.logical_xor_(flip)
        elif negate_policy:
            for parameter in last_linear(policy).parameters():
                sign = 1 - 2 * flip.to(parameter.dtype)
                parameter.mul_(sign.view(-1, *[1] * (parameter.dim() - 1)))
        psi = torch.where(flip[:, None], 1 - psi, psi)
        statistic = corrector_statistic(psi, probability, n_actions)
    return Correction(flip, statistic, psi)
