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

A re-fit may also have a *reference*: the decoder of the model it replaces (the decision
service passes its served model). On a small log gathered by a nearly greedy policy the
statistic is an average over a few large importance weights, and a fresh fit can land on
either side of one half by chance, so that successive re-fits swap the meaning of the
feedback back and forth. With a reference the corrector keeps the reference's orientation
unless the statistic is more than ``confidence`` standard errors beyond one half
(:func:`oriented_flip`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from iglearn.learners.trials import Source, reducer_of, to_device
from iglearn.models import Decoder
from iglearn.models.stacked import last_linear
from iglearn.theory import action_led


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


class Shares(NamedTuple):
    """What the corrector measures of each trial's decoder on its feedback, (T,) each."""

    above: torch.Tensor
    """The weighted share decoded as reward, psi > 0.5: the corrector's statistic."""
    below: torch.Tensor
    """The weighted share decoded as no reward, psi < 0.5."""
    effective: torch.Tensor
    """Kish's effective number of interactions behind the weighted shares,
    (sum w)^2 / sum w^2."""
    agreement: torch.Tensor | None
    """The share of the feedback that a reference decoder decodes on the same side of one
    half (None without a reference)."""
    mean: torch.Tensor
    """The unweighted mean of psi over the feedback: the logging policy's decoded return."""
    explained: torch.Tensor | None = None
    """The share of psi's variance that the logged action explains (:func:`action_explained`;
    None unless asked for)."""


def decoded_shares(decoder: nn.Module, data: Source, n_actions: int,
                   device: torch.device | None = None,
                   reference: nn.Module | None = None, by_action: bool = False) -> Shares:
    """The shares of each trial's feedback that ``decoder`` (stacked, one per trial) decodes
    as reward (psi > 0.5) and as no reward (psi < 0.5), weighted as in
    :func:`corrector_statistic`, their effective number of interactions, the unweighted mean
    of psi, given a ``reference`` decoder (stacked alike) the share of the feedback both
    decode alike and with ``by_action`` the share of psi's variance the logged action
    explains (:func:`action_explained`); a streaming reduction: the weighted counts, psi and
    the sums of the weights are added up chunk by chunk (float64, chunks moved to ``device``
    if given, where the decoders must be), then divided."""
    zeros = [torch.zeros(len(data), dtype=torch.float64) for _ in range(7)]
    above, below, weights, squares, alike, total, rows = zeros
    # by action: each action's weights and weighted psi, (T, K), and the weighted psi squared
    # (no action's columns unless asked for)
    per_weight = torch.zeros(len(data), n_actions if by_action else 0, dtype=torch.float64)
    per_psi, psi_squares = torch.zeros_like(per_weight), torch.zeros(len(data),
                                                                     dtype=torch.float64)
    with torch.no_grad():
        for chunk in data.chunks(context=False):
            chunk = to_device(chunk, device)
            probability = chunk.probability
            if probability.device.type != "mps":  # MPS has no float64
                probability = probability.double()
            weight = (1.0 / n_actions) / probability
            psi = decoder(chunk.signal)
            positive = psi > 0.5
            above += (weight * positive.to(weight.dtype)).sum(-1).cpu().double()
            below += (weight * (psi < 0.5).to(weight.dtype)).sum(-1).cpu().double()
            weights += weight.sum(-1).cpu().double()
            squares += (weight * weight).sum(-1).cpu().double()
            total += psi.to(weight.dtype).sum(-1).cpu().double()
            rows += psi.shape[-1]
            if reference is not None:
                same = positive == (reference(chunk.signal) > 0.5)
                alike += same.sum(-1).cpu().double()
            if by_action:
                action = chunk.action.cpu()
                weight, psi = weight.cpu().double(), psi.cpu().double()
                per_weight.scatter_add_(-1, action, weight)
                per_psi.scatter_add_(-1, action, weight * psi)
                psi_squares += (weight * psi * psi).sum(-1)
    # the sums of every process of a data-parallel fit (one process: as they are)
    reducer = reducer_of(data)
    above, below, weights, squares, alike, total, rows = reducer.sum(
        torch.stack([above, below, weights, squares, alike, total, rows]))
    explained = None
    if by_action:
        per_weight, per_psi = reducer.sum(torch.stack([per_weight, per_psi]))
        explained = action_explained(per_weight, per_psi, reducer.sum(psi_squares))
    return Shares(above / weights, below / weights, weights * weights / squares,
                  None if reference is None else alike / rows, total / rows, explained)


def action_explained(weights: torch.Tensor, sums: torch.Tensor, squares: torch.Tensor
                     ) -> torch.Tensor:
    """The share of the variance of the decoded reward psi(y) that the logged action explains,
    per trial: the correlation ratio eta² = Var(E[psi | a]) / Var(psi) (Pearson, 1905) from
    each action's sum of weights ``weights`` and of weighted psi ``sums`` (T, K) and the
    weighted sum of psi² ``squares`` (T,), the weights those of uniform play (1/K) / p, as
    :func:`corrector_statistic`'s; 0 where psi is constant (iglearn's diagnostic,
    :data:`~iglearn.theory.ACTION_EXPLAINED`).

    2021 IGL and VI-IGL assume that the feedback depends on the context and the action only
    through the reward. A decoder of the reward then depends on the action only through
    each action's reward rate P(r = 1 | a) under uniform play, which is about 1/K for every
    action when each action is right on a like share of the contexts: eta² is near 0. When
    the feedback shows which action was taken (a gesture or a brain response that reflects
    the choice, AI-IGL's setting), the objective is maximised by a decoder that reads the
    action, and by a policy that plays the action it calls rewarded: psi is then a function
    of the action and eta² is near 1."""
    tiny = torch.finfo(weights.dtype).tiny
    total = weights.sum(-1).clamp_min(tiny)
    mean = sums.sum(-1) / total
    between = (sums * sums / weights.clamp_min(tiny)).sum(-1) / total - mean ** 2
    spread = squares / total - mean ** 2
    return torch.where(spread > 1e-12, (between / spread.clamp_min(1e-12)).clamp(0.0, 1.0),
                       torch.zeros_like(spread))


def oriented_flip(shares: Shares, confidence: float, n_actions: int) -> torch.Tensor:
    """Which decoders the corrector flips, (T,) boolean. Without a reference (Appendix B):
    those whose statistic exceeds one half. With one: those whose statistic exceeds one half
    by more than ``confidence`` standard errors, 0.5 / sqrt(effective interactions); and,
    where the statistic is within that many standard errors of one half either way (the data
    cannot tell the two orientations apart), those that decode most of the feedback unlike
    the reference. For two actions (``n_actions`` 2) the statistic tells nothing (half of
    the feedback is a reward under uniform play, whichever way it is read), so with a
    reference only the agreement decides: a re-fit keeps the direction of the model it
    replaces (one oriented by known rewards, :func:`orient_by_rewards`), where by the
    statistic it flipped whenever the statistic strayed from one half by chance."""
    if shares.agreement is None:
        return shares.above > 0.5
    if n_actions == 2:
        return shares.agreement < 0.5
    margin = confidence * 0.5 / shares.effective.sqrt()
    evidence = shares.above - 0.5
    unclear = evidence.abs() <= margin
    return (evidence > margin) | (unclear & (shares.agreement < 0.5))


def reward_share_bound(n_actions: int) -> float:
    """The largest share of the feedback a decoder may call a reward for its attempt to pass
    2021 IGL's adaptive restart (``BatchIGLSettings.share_test``, iglearn's addition):
    sqrt(1 / (2K)), the geometric mean of 1/K, a reward's share under uniform play when one
    action of K is right (the premise of Appendix B's corrector), and one half, where the
    corrector flips the decoder (0.224 for K = 10, 0.354 for K = 4, 0.408 for K = 3)."""
    return math.sqrt(0.5 / n_actions)


def share_excess(shares: Shares, n_actions: int) -> list[float]:
    """By how much each trial's decoder, oriented as the corrector orients it (the reward the
    rarer side), calls more of the feedback a reward than :func:`reward_share_bound`; 0
    within it, for K < 3 and for a decoder that follows the logged action
    (:func:`~iglearn.theory.action_led`: feedback that shows the action, where a fresh start
    splits it alike and the fit warns of it). ``shares`` measured ``by_action``."""
    if shares.explained is None:
        raise ValueError("share_excess needs shares measured by action")
    if n_actions < 3:
        return [0.0] * len(shares.above)
    bound = reward_share_bound(n_actions)
    oriented = torch.where(shares.above > 0.5, shares.below, shares.above)
    return [0.0 if action_led(explained) else max(share - bound, 0.0)
            for share, explained in zip(oriented.tolist(), shares.explained.tolist(),
                                        strict=True)]


def corrector_statistics(decoder: nn.Module, data: Source, n_actions: int,
                         device: torch.device | None = None) -> torch.Tensor:
    """:func:`corrector_statistic` of each trial's decoder (``decoder`` stacked, one per
    trial) on all of its feedback, streamed over chunks (:func:`decoded_shares`). Shape
    (T,)."""
    return decoded_shares(decoder, data, n_actions, device).above


def data_driven_corrector(policy: nn.Module, decoder: Decoder, data: Source, n_actions: int,
                          negate_policy: bool, device: torch.device | None = None,
                          reference: nn.Module | None = None, confidence: float = 1.0
                          ) -> Correction:
    """Appendix B's corrector on all of each trial's feedback: flip the decoders (stacked, one
    per trial, on ``device`` if given) whose statistic (:func:`corrector_statistics`) exceeds
    one half (given a ``reference`` decoder, stacked alike: as :func:`oriented_flip` decides
    with ``confidence``), and with ``negate_policy`` negate the scores of those trials'
    policies (the last linear layer of the stacked ``policy``, or the ``negated`` flag of a
    policy on a user's module, :mod:`iglearn.models.custom`). One streamed pass over the
    feedback.

    Returns:
        which trials were flipped, and the statistic after the flip.
    """
    shares = decoded_shares(decoder, data, n_actions, device, reference)
    above, below = shares.above, shares.below
    flip = oriented_flip(shares, confidence, n_actions)
    flip_decoders(policy, decoder, flip, negate_policy)
    # after the flip, the feedback decoded as no reward is what decodes as reward
    return Correction(flip.cpu(), torch.where(flip.cpu(), below, above))


def flip_decoders(policy: nn.Module, decoder: Decoder, flip: torch.Tensor,
                  negate_policy: bool) -> None:
    """Flip the stacked ``decoder``'s trials marked in ``flip`` (T,) to 1 - psi (their flag)
    and, with ``negate_policy``, negate those trials' policy scores (the last linear layer of
    the stacked ``policy``, or the ``negated`` flag of a policy on a user's module,
    :mod:`iglearn.models.custom`)."""
    with torch.no_grad():
        flip = flip.to(decoder.flipped.device)
        decoder.flipped.logical_xor_(flip)
        negated = getattr(policy, "negated", None)
        if negate_policy and isinstance(negated, torch.Tensor):  # a user's module: its flag
            negated.logical_xor_(flip)
        elif negate_policy:
            for parameter in last_linear(policy).parameters():
                sign = 1 - 2 * flip.to(parameter.dtype)
                parameter.mul_(sign.view(-1, *[1] * (parameter.dim() - 1)))


class Oriented(NamedTuple):
    """What :func:`orient_by_rewards` found and did."""

    rows: int
    """The interactions whose reward was known."""
    agreement: float
    """The share of them on which the decoded reward (psi > 1/2) is the known reward, after
    the orientation (at least one half)."""
    flipped: bool
    """Whether a decoder was flipped and the policy's scores negated."""
    flipped_actions: tuple[int, ...] = ()
    """AI-IGL, whose decoders are one per action (:meth:`~iglearn.learners.AIIGL.orient`): the
    actions whose decoder was flipped and score negated; () for a learner of one decoder."""


def orient_by_rewards(policy: nn.Module, decoder: Decoder, decoded: np.ndarray,
                      reward: np.ndarray) -> Oriented:
    """The direction of a two-action fit's decoded reward, chosen by interactions whose reward
    is known (iglearn's addition). With K = 2 uniform play is never "sufficiently bad"
    (Section 3): half of the feedback is a reward, and no statistic of unlabelled feedback
    tells the reward from its absence, so the corrector cannot orient the decoder. A few
    interactions with a known reward can: when the decoded reward (``decoded``, psi of their
    feedback, > 1/2 read as reward) matches the known ``reward`` (> 0 a reward) on fewer than
    half of them, the (unstacked) ``decoder`` is flipped to 1 - psi and the ``policy``'s
    scores negated, which for two actions is the policy of the flipped reward: each context's
    other action, with the probabilities swapped."""
    from iglearn.learners.trials import side_by_side

    rows = len(reward)
    agree = float(np.mean((np.asarray(decoded) > 0.5) == (np.asarray(reward) > 0)))
    flip = agree < 0.5
    if flip:
        with side_by_side([policy]) as stacked_policy, side_by_side([decoder]) as stacked:
            flip_decoders(stacked_policy, stacked, torch.tensor([True]), negate_policy=True)
    return Oriented(rows, 1.0 - agree if flip else agree, flip)
