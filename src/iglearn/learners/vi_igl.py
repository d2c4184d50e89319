"""VI-IGL: interaction-grounded learning by conditional mutual information (Hu, Farnia and
Leung, "An Information Theoretic Approach to Interaction-Grounded Learning", ICML 2024,
arXiv 2401.05015).

The 2021 assumption y ⟂ (x, a) | r says that once the reward is known, the feedback tells
nothing more about the context and the action. VI-IGL asks the decoded reward R_psi ~
Bernoulli(psi(y)) to make that true on the data, and to carry as much about (x, a) as it can:

    min_psi  I(Y; X, A | R_psi) - beta I(X, A; R_psi)                                 (i)

Both terms are f-divergences between a joint law and a product law, and each is estimated by
its variational lower bound D_f(P || Q) >= sup_T E_P[T] - E_Q[f*(T)] (Nguyen, Wainwright and
Jordan 2010), with a critic network in place of the supremum:

    min_psi max_G max_T  {E_P[G] - E_Q[f*(G)]} - beta {E_P'[T] - E_Q'[f*(T)]}          (ii)

- G(x, a, y, r) scores the joint law of (x, a, y, r) against Q = P(r) P(x, a | r) P(y | r),
  the samples' (x, a) paired with other samples' y of equal decoded r
  (:func:`conditional_bound`);
- T(x, a, r) scores the joint law of (x, a, r) against the product P(x, a) P(r)
  (:func:`marginal_bound`);
- f* is the convex conjugate of the divergence's f (:func:`conjugate`): e^(u - 1) for KL
  (the bound is then the NWJ bound, the secondary summaries' E[G] - E[e^G] with G shifted by
  one), u + u²/4 for chi-square; ``divergence`` picks KL-KL, chi²-chi² or chi²-KL.

(i) and (ii) are numbered in this module, not as in the paper. iglearn's reading of the
method (the paper's code is not public; the summaries describe
drawing r ~ Bernoulli(psi(y)) several times per sample): the expectations over r are taken
exactly, every sample counted under r = 1 with weight psi(y) and under r = 0 with weight
1 - psi(y), the limit of many draws, which is differentiable in psi. The pairs of the
conditional product law are each sample of a shuffled mini-batch with ``critic_pairs``
others, weighted by q_i(r) q_j(r) / P(r), so no shuffle within equal r is drawn. Every
expectation is importance-weighted by 1 / p (self-normalised in the mini-batch), so the laws
are those of uniform play whatever policy logged the data.

A fit runs these steps, each a function below:

1. the decoder's min-max stage (:func:`decoder_stage`, ``optimisation.grounding_epochs``):
   gradient descent-ascent, psi descending Eq. (ii) while both critics ascend their bounds, in
   one AdamW run of the shared training loop (:func:`~iglearn.learners.training.run_stage`),
   its gradients in closed form with a linear decoder (:func:`decoder_step`: on mini-batches
   of 500 a fifth less CPU than autograd's, which trains any other decoder);
   critic scores are clipped softly (``critic_clip``); with the adaptive restart (iglearn's
   addition, :meth:`VIIGL.fit_decoders`), a decoder whose marginal bound shows almost no dependence
   of R_psi on (x, a) (at most ``restart_bound``) is fitted again from a fresh start, at
   most ``max_restarts`` times;
2. the symmetry choice (:func:`choose_orientation`): Eq. (i) is unchanged by psi -> 1 - psi;
   under uniform play the reward is assumed to be the rarer event, so where psi calls more
   than half of the feedback a reward (psi > 1/2, weighted to uniform play: the 2021 paper's
   corrector statistic, :func:`~iglearn.learners.corrector.decoded_shares`) psi is flipped;
3. the policy fit (:func:`policy_stages`, ``optimisation.policy_epochs`` then ``epochs``):
   the softmax policy learns from the decoded reward psi(y), held fixed, exactly as
   :class:`~iglearn.learners.ContextualBandit` learns from the true reward (its stages, fed
   the decoded reward).

The critics read the context through a two-layer network (K x 2 embeddings of
``critic_width`` for G, K x 2 scores for T) and the feedback through another (2 embeddings);
G(x, a, y, r) is the inner product of (x, a)'s and y's embeddings for r. They exist only
during the fit: a saved model holds the policy and the decoder.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Self, cast

import numpy as np
import torch
from torch import nn

from iglearn.data.limits import check_igl_logs
from iglearn.data.scaling import Origins, standardised_feedback
from iglearn.errors import IGLearnError, warn_caller
from iglearn.learners import closed_form
from iglearn.learners.base import (
    Orientable,
    StackableLearner,
    check_finite_fit,
    log_warnings,
)
from iglearn.learners.baselines import reward_stages
from iglearn.learners.batch_igl import (
    AMBIGUITY_MARGIN,
    IdentifiabilityWarning,
    action_warning,
    ambiguity_warning,
)
from iglearn.learners.corrector import decoded_shares
from iglearn.learners.monitor import ShortReport
from iglearn.learners.restarts import Attempt, adaptive_restart
from iglearn.learners.settings import (
    DIVERGENCES,
    VIIGL_OPTIMISATION,
    Optimisation,
    VIIGLSettings,
)
from iglearn.learners.stream import AnyLog, training_data
from iglearn.learners.training import Stage, optimise
from iglearn.learners.trials import Batch, Source, as_tensor, fixed_signal, side_by_side
from iglearn.models import Decoder, Policy, make_decoder, make_policy
from iglearn.models.custom import check_specs
from iglearn.models.init import mlp, reset_parameters
from iglearn.seeding import as_generator, torch_generator
from iglearn.threads import torch_threads

if TYPE_CHECKING:
    import pandas as pd

    from iglearn.data.formats.base import FeatureSchema
    from iglearn.data.logs import InteractionLog

STANDARDISED_DECAY = 3.0
"""The multiple of the data-scaled weight decay that VI-IGL's decoder gets on standardised
feedback of at most :data:`DECAY_COUNT` interactions (:func:`decoder_decay_scale`)."""

DECAY_COUNT = 250
"""On standardised feedback the decoder's data-scaled decay counts at most this many
interactions (:func:`decoder_decay_scale`), and at most :data:`DECAY_GROWTH` times fewer than
the log holds."""

DECAY_GROWTH = 4.0
"""Counting at most :data:`DECAY_COUNT` interactions multiplies a larger log's decoder decay
by at most this (reached at 1,000 interactions)."""

BOUND_ROWS = 2048
"""The report's bounds are measured on the first this many interactions of the log (all of a
smaller one): the conditional bound's product law has a pair for every two rows."""


@dataclass(repr=False)
class VIIGLReport(ShortReport):
    """What a VI-IGL fit measured about itself (no hidden reward is read)."""

    conditional_bound: float
    """The critic G's lower bound on I(Y; X, A | R_psi) (its divergence's information) on the
    first :data:`BOUND_ROWS` interactions of the log; near 0 when R_psi explains the feedback's
    dependence on (x, a)."""
    marginal_bound: float
    """The critic T's lower bound on I(X, A; R_psi) on the same rows."""
    reward_rate: float
    """The mean decoded reward of the logged interactions after the symmetry choice: the
    logging policy's decoded return."""
    flipped: bool
    """Whether the symmetry choice flipped psi to 1 - psi."""
    corrector_statistic: float | None = None
    """The share of the feedback decoded as reward (psi > 1/2), weighted to uniform play,
    after the symmetry choice (which flips psi where it exceeds one half before); None in the
    report of a model saved before iglearn recorded it."""
    restarts: int = 0
    """Restarts of the adaptive restart (``max_restarts``)."""
    attempt_bounds: list[float] = field(default_factory=list)
    """The marginal bound of every attempt, in order; the fit kept the largest."""
    seconds: float = 0.0
    """Wall time of the fit (with ``fit_many``, an equal share of the whole)."""
    warnings: list[str] = field(default_factory=list)
    """Identifiability warnings raised by the fit."""
    action_explained: float | None = None
    """The share of the decoder's variance on the log that the logged action explains
    (:func:`~iglearn.learners.corrector.action_explained`, weighted to uniform play); above
    :data:`~iglearn.theory.ACTION_EXPLAINED` the fit warns. None in the report
    of a model saved before iglearn measured it."""


class Critics(nn.Module):
    """The critics G(x, a, y, r) and T(x, a, r) of Eq. (ii), each score softly clipped to
    (-clip, clip). G is the inner product of a context embedding (one per action and r) and a
    feedback embedding (one per r), divided by the square root of their width; T reads one
    score per action and r from the context. Every network is two-layer (one hidden ReLU
    layer), so the critics stack side by side like the learners' models
    (:mod:`iglearn.models.stacked`)."""

    def __init__(self, context_dim: int, feedback_dim: int, n_actions: int, hidden: int,
                 width: int, clip: float):
        super().__init__()
        self.n_actions, self.width, self.clip = n_actions, width, clip
        self.context = mlp(context_dim, n_actions * 2 * width, hidden)
        self.feedback = mlp(feedback_dim, 2 * width, hidden)
        self.marginal = mlp(context_dim, n_actions * 2, hidden)

    def _clipped(self, score: torch.Tensor) -> torch.Tensor:
        return self.clip * torch.tanh(score / self.clip)

    def forward(self, context: torch.Tensor, action: torch.Tensor, feedback: torch.Tensor,
                pairs: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The critics on a mini-batch of n interactions (leading trial axes allowed):
        G on each joint sample, shape (..., n, 2) (r = 0, 1); G on the pairs
        (x_i, a_i, y_j, r) for j in row i of :func:`partner_rows` (n, ``pairs``) (m of them),
        shape (..., 2, n, m); and T, shape (..., n, 2)."""
        k, w = self.n_actions, self.width
        at = action[..., None, None, None].expand(*action.shape, 1, 2, w)
        phi = self.context(context).unflatten(-1, (k, 2, w)).gather(-3, at).squeeze(-3)
        chi = self.feedback(feedback).unflatten(-1, (2, w))
        joint = (phi * chi).sum(-1) / math.sqrt(w)
        product = pair_scores(phi, chi, pairs) / math.sqrt(w)
        t = self.marginal(context).unflatten(-1, (k, 2))
        t = t.gather(-2, action[..., None, None].expand(*action.shape, 1, 2)).squeeze(-2)
        return self._clipped(joint), self._clipped(product), self._clipped(t)


def partner_count(n: int, pairs: int) -> int:
    """How many partners each of n rows gets in the conditional product law: ``pairs``, or
    every other row when the mini-batch is smaller (at least 1: a lone row is its own)."""
    return max(1, min(pairs, n - 1))


def following(values: torch.Tensor, m: int) -> torch.Tensor:
    """values[..., (i + k) mod n] for k = 1, ..., m (m <= n) along the last axis, shape
    (..., n, m): each row's partners' values (:func:`partner_rows`), as a view of the values
    with their first m appended (no index is gathered)."""
    n = values.shape[-1]
    return torch.cat([values, values[..., :m]], -1).unfold(-1, m, 1)[..., 1:n + 1, :]


def partnering_sum(scores: torch.Tensor) -> torch.Tensor:
    """sum_k scores[..., (l - k) mod n, k - 1] for k = 1, ..., m, shape (..., n), from
    ``scores`` (..., n, m) held by each row for its m partners (:func:`partner_rows`): what
    row l receives from the m rows it partners, l - 1, ..., l - m (the transpose of
    :func:`following`). The rows, their last m put first, are read along the anti-diagonals
    of the (n + m, m) table as a strided view."""
    n, m = scores.shape[-2:]
    table = torch.cat([scores[..., n - m:, :], scores], -2)  # a new tensor, contiguous
    # row l - k + m, column k - 1 lies at l m + (m - 1) + (m - k)(m - 1) in the table
    view = table.as_strided((*table.shape[:-2], n, m), (*table.stride()[:-2], m, m - 1),
                            table.storage_offset() + m - 1)
    return view.sum(-1)


def pair_scores(phi: torch.Tensor, chi: torch.Tensor, pairs: int) -> torch.Tensor:
    """The inner products <phi_i(r), chi_j(r)> of each row i's context embedding with the
    feedback embedding of each of its partners j (row i of :func:`partner_rows` (n, pairs):
    j = i + 1, ..., i + m mod n), shape (..., 2, n, m), from embeddings of shape
    (..., n, 2, w). The rows are taken in blocks of m: the partners of a block's rows lie in
    the 2m - 1 rows after its first, so one small matrix product per block (m x (2m - 1)
    products, not n x n) holds them all, read along its diagonals."""
    return _pair_blocks(phi, chi, pairs)[0]


def _diagonals(every: torch.Tensor) -> torch.Tensor:
    """The view of blocks (..., m, 2m - 1) (contiguous in their last two axes) whose entry
    (i, k) is the block's (i, i + k), shape (..., m, m): row i's k-th partner's column."""
    m = every.shape[-2]
    return every.flatten(-2).unfold(-1, m, 2 * m)


def _pair_blocks(phi: torch.Tensor, chi: torch.Tensor, pairs: int
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`pair_scores`, and its blocks of rows of phi, (..., 2, blocks, m, w), and of chi,
    (..., 2, blocks, 2m - 1, w): block b's rows b m, ..., b m + m - 1 and, of chi, the
    2m - 1 rows after its first (row numbers mod n), taken from the rows repeated (views and
    copies, no index gathered)."""
    n = phi.shape[-3]
    m = partner_count(n, pairs)
    blocks = -(-n // m)
    left = torch.cat([phi, phi[..., :blocks * m - n, :, :]], -3)
    left = left.unflatten(-3, (blocks, m)).movedim(-2, -4)
    rows = (blocks + 1) * m  # the blocks read chi's rows 1, ..., blocks m + m - 1 (mod n)
    repeated = torch.cat([chi] * -(-rows // n), -3) if rows > n else chi
    right = repeated[..., 1:rows, :, :].unfold(-3, 2 * m - 1, m).movedim(-1, -3)
    right = right.movedim(-2, -4).contiguous()  # (..., 2, blocks, 2m - 1, w)
    every = left @ right.transpose(-1, -2)  # (..., 2, blocks, m, 2m - 1)
    found = _diagonals(every)
    return found.flatten(-3, -2)[..., :n, :], left, right


def pair_gradients(left: torch.Tensor, right: torch.Tensor, grad: torch.Tensor,
                   chi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients in phi and ``chi`` (shapes (T, n, 2, w)) of a loss whose gradient in
    :func:`pair_scores` is ``grad`` (T, 2, n, m), from the blocks of phi and chi that
    :func:`_pair_blocks` multiplied (``left``, ``right``): row i's phi gets
    sum_k grad[i, k] chi_j, row j's chi the sum over the rows i it partners of
    grad[i, k] phi_i; the backward pass of the block products. Each block's 2m - 1 rows of
    chi are rows b m + 1, ... of chi repeated, so their gradients add up in that order, two
    strided views, and fold back onto the n rows mod n."""
    n, m = grad.shape[-2:]
    blocks = left.shape[-3]
    padded = grad.new_zeros(*grad.shape[:-2], blocks * m, m)
    padded[..., :n, :] = grad
    every = grad.new_zeros(*grad.shape[:-2], blocks, m, 2 * m - 1)
    _diagonals(every).copy_(padded.unflatten(-2, (blocks, m)))
    d_phi = (every @ right).flatten(-3, -2)[..., :n, :].movedim(-3, -2)  # (T, n, 2, w)
    d_right = every.transpose(-1, -2) @ left  # (T, 2, blocks, 2m - 1, w)
    rows = -(-((blocks + 1) * m + 1) // n) * n  # chi's rows 0, ..., (blocks + 1) m
    summed = grad.new_zeros(*grad.shape[:-2], rows, chi.shape[-1])  # (T, 2, rows, w)
    summed[..., 1:blocks * m + 1, :].unflatten(-2, (blocks, m)).add_(d_right[..., :m, :])
    summed[..., m + 1:(blocks + 1) * m + 1, :].unflatten(-2, (blocks, m))[..., :m - 1, :].add_(
        d_right[..., m:, :])
    d_chi = summed.unflatten(-2, (-1, n)).sum(-3).movedim(-3, -2)  # (T, n, 2, w)
    return d_phi, d_chi


def make_critics(settings: VIIGLSettings, context_dim: int, feedback_dim: int, n_actions: int,
                 generator: torch.Generator) -> Critics:
    """Freshly initialised critics of ``settings``' sizes, drawn from ``generator``."""
    critics = Critics(context_dim, feedback_dim, n_actions, settings.critic_hidden,
                      settings.critic_width, settings.critic_clip)
    reset_parameters(critics, generator)
    return critics


def conjugate(score: torch.Tensor, divergence: str) -> torch.Tensor:
    """f*(u), the convex conjugate of the divergence's f (Nguyen, Wainwright and Jordan 2010;
    Nowozin, Cseke and Tomioka 2016, f-GAN): KL, f(t) = t log t, f*(u) = e^(u - 1); chi-square
    (Pearson), f(t) = (t - 1)², f*(u) = u + u²/4."""
    if divergence == "kl":
        return torch.exp(score - 1.0)
    if divergence == "chi2":
        return score + score * score / 4.0
    raise IGLearnError(f"unknown divergence {divergence!r}; choose 'kl' or 'chi2'")


def variational_bound(joint: torch.Tensor, joint_weights: torch.Tensor, product: torch.Tensor,
                      product_weights: torch.Tensor, divergence: str) -> torch.Tensor:
    """The variational lower bound D_f(P || Q) >= E_P[T] - E_Q[f*(T)] (Nguyen, Wainwright and
    Jordan 2010): critic scores on samples of P (``joint``) and of Q (``product``),
    each with weights summing to one over the last axis; one value per leading index. At the
    optimal critic, T = f'(dP/dQ) (1 + log dP/dQ for KL, 2 (dP/dQ - 1) for chi-square), the
    bound is the divergence: the mutual information (KL) or the chi-square information when
    Q is the product of P's marginals."""
    return ((joint_weights * joint).sum(-1)
            - (product_weights * conjugate(product, divergence)).sum(-1))


def importance_weights(probability: torch.Tensor) -> torch.Tensor:
    """Self-normalised importance weights (1/p_i) / sum_j (1/p_j) over the last axis: sample
    i's weight in the law of uniform play, whatever policy logged it."""
    w = 1.0 / probability
    return w / w.sum(-1, keepdim=True)


def reward_weights(psi: torch.Tensor) -> torch.Tensor:
    """q_i(r) for r = 0, 1: the probability that R_psi ~ Bernoulli(psi(y_i)) takes each
    value, shape (..., n, 2); the exact expectation over the draws of r."""
    return torch.stack([1.0 - psi, psi], dim=-1)


def partner_rows(n: int, m: int) -> torch.Tensor:
    """The rows each of n rows is paired with in the conditional product law: row i with rows
    i + 1, ..., i + m (mod n), every other row when m >= n - 1; shape
    (n, :func:`partner_count`). The mini-batches are shuffled, so these are random pairs of
    distinct samples. The definition the views of :func:`following`, :func:`partnering_sum`
    and :func:`pair_scores` follow; no fit builds it."""
    return (torch.arange(n)[:, None] + torch.arange(1, partner_count(n, m) + 1)) % n


def conditional_bound(joint: torch.Tensor, pairs: torch.Tensor, q: torch.Tensor,
                      w: torch.Tensor, divergence: str) -> torch.Tensor:
    """The bound on I(Y; X, A | R_psi) of Eq. (ii) (its first brace): G on the joint samples
    (x_i, a_i, y_i, r) weighted w_i q_i(r), against G on the pairs (x_i, a_i, y_j, r) of
    distinct samples (j in row i of :func:`partner_rows`) weighted w_i q_i(r) w_j q_j(r),
    normalised within each r to P(r) = sum_i w_i q_i(r): the conditional product law
    P(r) P(x, a | r) P(y | r).

    Args:
        joint: G(x_i, a_i, y_i, r), shape (..., n, 2).
        pairs: G(x_i, a_i, y_j, r) for the m partners j of row i (:func:`partner_rows`),
            shape (..., 2, n, m).
        q: q_i(r) from :func:`reward_weights`, shape (..., n, 2).
        w: importance weights from :func:`importance_weights`, shape (..., n).
        divergence: 'kl' or 'chi2'.
    """
    mass = w[..., None] * q  # (..., n, 2): P(i, r)
    return variational_bound(joint.flatten(-2), mass.flatten(-2), pairs.flatten(-3),
                             pair_law(mass, pairs.shape[-1]).weights.flatten(-3), divergence)


class PairLaw(NamedTuple):
    """The sums the conditional product law's weights on the pairs are made of
    (:func:`pair_law`), for mass a_i(r) = w_i q_i(r), and the weights themselves
    (:attr:`weights`)."""

    prior: torch.Tensor
    """P(r) = sum_i a_i(r), shape (..., 2, 1)."""
    by_r: torch.Tensor
    """a_i(r), shape (..., 2, n)."""
    beside: torch.Tensor
    """a_j(r) of each row's partners j, shape (..., 2, n, m) (a view: :func:`following`)."""
    partners: torch.Tensor
    """sum_j a_j(r) over each row's partners, shape (..., 2, n)."""
    total: torch.Tensor
    """Z(r), the pairs' products a_i(r) a_j(r) summed (sum_i a_i(r) times its partners'
    sum: no pair's product made), shape (..., 2, 1)."""

    @property
    def weights(self) -> torch.Tensor:
        """b_ik(r) = a_i(r) a_j(r) / Z(r) P(r), shape (..., 2, n, m)."""
        tiny = torch.finfo(self.total.dtype).tiny
        return (self.by_r[..., None] * self.beside / self.total.clamp_min(tiny)[..., None]
                * self.prior[..., None])


def pair_law(mass: torch.Tensor, m: int) -> PairLaw:
    """The sums behind the weights of the pairs (x_i, a_i, y_j, r) under the conditional
    product law P(r) P(x, a | r) P(y | r) (:func:`conditional_bound`): each pair's product
    of masses, normalised within each r to P(r). ``mass`` (..., n, 2); each row has ``m``
    partners (:func:`partner_rows`)."""
    prior = mass.sum(-2)[..., None]
    by_r = mass.transpose(-1, -2)
    beside = following(by_r, m)
    partners = beside.sum(-1)
    return PairLaw(prior, by_r, beside, partners, (by_r * partners).sum(-1, keepdim=True))


def marginal_bound(t: torch.Tensor, q: torch.Tensor, w: torch.Tensor,
                   divergence: str) -> torch.Tensor:
    """The bound on I(X, A; R_psi) of Eq. (ii) (its second brace): T on the joint samples
    (x_i, a_i, r) weighted w_i q_i(r), against T on (x_i, a_i, r) weighted w_i P(r), the
    product P(x, a) P(r). Shapes as :func:`conditional_bound`, ``t`` (..., n, 2)."""
    mass = w[..., None] * q
    product = w[..., None] * mass.sum(-2, keepdim=True)
    return variational_bound(t.flatten(-2), mass.flatten(-2), t.flatten(-2),
                             product.flatten(-2), divergence)


def split_divergence(divergence: str) -> tuple[str, str]:
    """The divergences of G and of T named by a ``divergence`` setting ('kl', 'chi2',
    'chi2-kl')."""
    if divergence not in DIVERGENCES:
        raise IGLearnError(f"divergence must be one of {', '.join(DIVERGENCES)}, got "
                           f"{divergence!r}")
    first, _, second = divergence.partition("-")
    return first, second or first


def critic_scores(critics: Critics, decoder: Decoder, batch: Batch, pairs: int
                  ) -> tuple[torch.Tensor, ...]:
    """What both bounds of Eq. (ii) read on ``batch``: the importance weights, q(r) from the
    decoded reward and the critics' scores on the joint, the conditional product (each sample
    paired with ``pairs`` others) and (T) the marginal samples."""
    w = importance_weights(batch.probability)
    q = reward_weights(decoder(batch.signal))
    return (w, q, *critics(batch.context, batch.action, batch.signal, pairs))


def information_bounds(critics: Critics, decoder: Decoder, batch: Batch, divergence: str,
                       pairs: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The two bounds of Eq. (ii) on ``batch`` (one value per trial): I(Y; X, A | R_psi) by G
    (each sample paired with ``pairs`` others) and I(X, A; R_psi) by T."""
    g_div, t_div = split_divergence(divergence)
    w, q, joint, product, t = critic_scores(critics, decoder, batch, pairs)
    return (conditional_bound(joint, product, q, w, g_div),
            marginal_bound(t, q, w, t_div))


class _ScaledGradient(torch.autograd.Function):
    """The identity, whose backward pass multiplies the gradient by a constant."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor,
                factor: float) -> torch.Tensor:
        ctx.factor = factor  # type: ignore[attr-defined]
        return x.view_as(x)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,
                 grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad * ctx.factor, None  # type: ignore[attr-defined]


def scaled_gradient(x: torch.Tensor, factor: float) -> torch.Tensor:
    """``x`` unchanged, but the gradient that flows back through it is multiplied by
    ``factor`` (-1: a gradient reversal), so that one loss can make some parameters descend and
    others ascend the same term."""
    return cast(torch.Tensor, _ScaledGradient.apply(x, factor))


def decoder_stage(decoder: Decoder, critics: Critics, settings: Optimisation, beta: float,
                  divergence: str, pairs: int, decay_scale: float = 1.0) -> Stage:
    """Step 1, Eq. (ii) by gradient descent-ascent: on each mini-batch the critics ascend their
    bounds (psi held fixed) while psi descends bound_G - beta bound_T (the critics held
    fixed), one AdamW step for all (the decoder at the learning rate times its temperature,
    its data-scaled weight decay times ``decay_scale``: :func:`decoder_decay_scale`);
    each sample is paired with ``pairs`` others for the conditional product law. The stage's
    loss value, which its stopping rule watches, is psi's objective. Each bound is evaluated
    once per mini-batch: the critics' scores pass through :func:`scaled_gradient` (factor -1
    for G, 1 / beta for T), so that the one backward pass gives psi the gradient of
    bound_G - beta bound_T and each critic that of minus its own bound."""
    g_div, t_div = split_divergence(divergence)

    def loss(batch: Batch) -> torch.Tensor:
        w, q, joint, product, t = critic_scores(critics, decoder, batch, pairs)
        # each bound once: psi's gradient as it is, the critics' turned to ascend their bound
        g = conditional_bound(scaled_gradient(joint, -1.0), scaled_gradient(product, -1.0), q,
                              w, g_div)
        return g - beta * marginal_bound(scaled_gradient(t, 1.0 / beta), q, w, t_div)

    psi = list(decoder.parameters())
    form = None
    if closed_form.supports_decoder(decoder):
        form = partial(decoder_step, decoder, critics, beta=beta, divergence=divergence,
                       pairs=pairs, slots=ActionSlots(critics.n_actions))
    return Stage(settings.grounding_epochs, psi + list(critics.parameters()), loss, psi,
                 decoder.temperature, decay_scale, closed_form=form)


def decoder_decay_scale(standardised: bool, n: int) -> float:
    """How many times the data-scaled weight decay (weight_decay_scale d / n) VI-IGL's decoder
    gets on a log of ``n`` interactions (iglearn's addition): where it reads standardised
    feedback (raw measurements, or a log z-scored by hand, which "auto" standardises alike),
    :data:`STANDARDISED_DECAY` times the decay that counts at most :data:`DECAY_COUNT`
    interactions, but no fewer than a :data:`DECAY_GROWTH`-th of the log's: 3 up to 250
    interactions, 3 n / 250 up to 1,000, 12 from there. Feedback read as it was logged, on
    the unit scale (the tasks' own features), keeps the data-scaled decay as it is (1).

    On 16 raw digits logs of each size (docs/results.md, "VI-IGL's decoder on standardised
    feedback" and "VI-IGL's decoder decay counts at most 250 interactions") three times the
    decay gained 3.4, 13.7 and 2.5 points at 200, 500 and 1,000 interactions, five and ten
    times lost at 200; counting at most 250 interactions gained 4.2, 2.7 and 0.5 points more
    at 500, 1,000 and 2,000, and the growth's bound kept the loss at 5,000 to 0.1."""
    if not standardised:
        return 1.0
    return STANDARDISED_DECAY * min(DECAY_GROWTH, max(1.0, n / DECAY_COUNT))


def clip_slope(clipped: torch.Tensor, clip: float, scale: float = 1.0) -> torch.Tensor:
    """The slope of the soft clip c tanh(s / c) at the clipped scores ``clipped``,
    1 - (clipped / c)², divided by ``scale``, in one pass."""
    return torch.addcmul(clipped.new_tensor(1.0 / scale), clipped, clipped,
                         value=-1.0 / (clip * clip * scale))


def conjugate_slope(score: torch.Tensor, divergence: str) -> torch.Tensor:
    """f*'(u), the derivative of :func:`conjugate`: e^(u - 1) for KL, 1 + u/2 for
    chi-square."""
    if divergence == "kl":
        return torch.exp(score - 1.0)
    return 1.0 + score / 2.0


class Slots(NamedTuple):
    """Where each row of a mini-batch lies when its rows are grouped by (trial, logged
    action) (:func:`action_slots`): the layout in which a layer with one block of outputs per
    action computes only each row's own action's block."""

    rows: torch.Tensor
    """(T K, M): the rows (of the T n rows, trial by trial) of each (trial, action) group,
    padded to the largest group's M with T n, a row of zeros."""
    place: torch.Tensor
    """(T n,): each row's place among the T K M places of ``rows``, flattened."""


def action_slots(action: torch.Tensor, n_actions: int) -> Slots:
    """The :class:`Slots` of the logged actions ``action`` (T, n) of ``n_actions``."""
    trials, n = action.shape
    device = action.device
    key = (torch.arange(trials, device=device)[:, None] * n_actions + action).flatten()
    order = torch.argsort(key, stable=True)
    counts = torch.bincount(key, minlength=trials * n_actions)
    most = max(int(counts.max()), 1)
    first = torch.cumsum(counts, 0) - counts
    grouped = key[order]
    every = torch.arange(trials * n, device=device)
    place = torch.empty_like(key)
    place[order] = grouped * most + every - first[grouped]
    rows = torch.full((trials * n_actions * most,), trials * n, dtype=torch.long, device=device)
    rows[place] = every
    return Slots(rows.view(trials * n_actions, most), place)


class ActionSlots:
    """:func:`action_slots` of the last mini-batch's actions, kept: a log of one mini-batch
    is grouped once per stage."""

    def __init__(self, n_actions: int):
        self.n_actions = n_actions
        self.action: torch.Tensor | None = None
        self.slots: Slots | None = None

    def __call__(self, action: torch.Tensor) -> Slots:
        if self.slots is None or action is not self.action:
            self.action, self.slots = action, action_slots(action, self.n_actions)
        return self.slots


def _slot_outputs(layer: nn.Module, hidden: torch.Tensor, slots: Slots
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """A stacked linear ``layer`` with one block of S outputs per action (K S outputs) on
    ``hidden`` (T, n, H), each row's own action's block only (:class:`Slots`), shape
    (T, n, S): the block of the full output that the context critic reads, a K-th of the
    products. Also returns the rows grouped as ``slots`` lays them out, (T K, M, H)."""
    trials, n, width = hidden.shape
    groups = slots.rows.shape[0]
    weight = cast(torch.Tensor, layer.weight)
    flat = torch.cat([hidden.reshape(trials * n, width), hidden.new_zeros(1, width)])
    grouped = flat[slots.rows]
    out = torch.baddbmm(cast(torch.Tensor, layer.bias).view(groups, 1, -1), grouped,
                        weight.view(groups, -1, width).transpose(1, 2))
    return out.flatten(0, 1)[slots.place].view(trials, n, -1), grouped


def _set_slot_mlp(net: nn.Sequential, inputs: torch.Tensor, hidden: torch.Tensor,
                  grouped: torch.Tensor, slots: Slots, output: torch.Tensor) -> None:
    """:func:`_set_mlp` for a two-layer network whose output layer was run by
    :func:`_slot_outputs` (``grouped``): ``output`` (T, n, S) is the gradient in each row's
    own action's block, the other blocks' gradient is zero."""
    trials, n, size = output.shape
    groups, most, width = grouped.shape
    layer = net[2]
    blocks = output.new_zeros(groups * most, size)
    blocks[slots.place] = output.reshape(trials * n, size)
    blocks = blocks.view(groups, most, size)
    layer.weight.grad = torch.bmm(blocks.transpose(1, 2), grouped).view(trials, -1, width)
    layer.bias.grad = blocks.sum(1).view(trials, -1)
    back = torch.bmm(blocks, cast(torch.Tensor, layer.weight).view(groups, size, width))
    _set_first_layer(net, inputs, hidden, back.flatten(0, 1)[slots.place].view(trials, n, width))


def _mlp(net: nn.Sequential, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A stacked two-layer critic network's hidden layer (after its ReLU) and output."""
    hidden = torch.relu(net[0](inputs))
    return hidden, net[2](hidden)


def _set_mlp(net: nn.Sequential, inputs: torch.Tensor, hidden: torch.Tensor,
             output: torch.Tensor) -> None:
    """The gradients of a stacked two-layer critic network whose output on ``inputs`` (with
    ``hidden`` its hidden layer) has the gradient ``output``."""
    closed_form.set_gradients(net[2], hidden, output)
    _set_first_layer(net, inputs, hidden, torch.bmm(output, cast(torch.Tensor, net[2].weight)))


def _set_first_layer(net: nn.Sequential, inputs: torch.Tensor, hidden: torch.Tensor,
                     back: torch.Tensor) -> None:
    """The first layer's gradients of a stacked two-layer critic network on ``inputs``, from
    the gradient ``back`` in its hidden layer ``hidden`` (after the ReLU): through the ReLU,
    zero where it was off, in one kernel (a mask multiplied in costs two more passes: about
    100 µs a network on 500 rows of 64 hidden units)."""
    closed_form.set_gradients(net[0], inputs,
                              torch.ops.aten.threshold_backward(back, hidden, 0.0))


@torch.no_grad()
def decoder_step(decoder: Decoder, critics: Critics, batch: Batch, beta: float,
                 divergence: str, pairs: int, slots: ActionSlots | None = None
                 ) -> torch.Tensor:
    """:func:`decoder_stage`'s loss, bound_G - beta bound_T (one value per trial), with the
    gradients its one backward pass gives, in closed form: psi the gradient of the loss,
    G's parameters that of -bound_G, T's that of -bound_T. For a built-in linear decoder
    (:func:`~iglearn.learners.closed_form.supports_decoder`) and the stacked critics, whose
    two-layer networks it runs itself; the autograd form's gradients up to float rounding
    (``tests/learners/test_vi_igl.py``).

    With mass a_i(r) = w_i q_i(r), P(r) = sum_i a_i(r), the pairs' weights
    b_ik(r) = a_i(r) a_j(r) / Z(r) P(r) (j the k-th partner of i, Z(r) their sum) and
    F = f*(G) on the pairs:

    - bound_G = sum a J - sum b F: in the joint score J, a; in the pair score, -b f*'(G);
      in a_l(r), J_l(r) - d/da_l [P(r) A(r) / Z(r)] with A(r) = sum a_i a_j F;
    - bound_T = sum a T - sum_i w_i P(r) f*(T_i): in T, a - w P f*'(T); in a_l(r),
      T_l(r) - sum_i w_i f*(T_i(r));
    - a_i(1) = w_i psi_i, a_i(0) = w_i (1 - psi_i); each score passes the soft clip
      c tanh(s / c), whose slope is 1 - (score / c)^2; the embeddings' inner products, the
      action's slot of each context network's output and the networks' layers follow by the
      chain rule.

    G's context network reads only the logged action's block of its K blocks of outputs, so
    its output layer computes that block alone, on the rows grouped by action
    (:class:`ActionSlots`, ``slots``, kept across a stage's steps): a K-th of the products
    of the full layer, forward and back (a step on 500 interactions, K = 10, about a sixth
    less CPU)."""
    g_div, t_div = split_divergence(divergence)
    k, width, clip = critics.n_actions, critics.width, critics.clip
    x, y, action = batch.context, batch.signal, batch.action
    root = math.sqrt(width)
    # the forward pass, as Critics.forward and critic_scores compute it
    by_action = (slots or ActionSlots(k))(action)
    context_hidden = torch.relu(critics.context[0](x))
    phi, grouped = _slot_outputs(critics.context[2], context_hidden, by_action)
    phi = phi.unflatten(-1, (2, width))
    feedback_hidden, feedback_out = _mlp(critics.feedback, y)
    chi = feedback_out.unflatten(-1, (2, width))
    marginal_hidden, marginal_out = _mlp(critics.marginal, x)
    t_slot = action[..., None, None].expand(*action.shape, 1, 2)
    joint = critics._clipped((phi * chi).sum(-1) / root)  # (T, n, 2)
    products, left, right = _pair_blocks(phi, chi, pairs)
    # critics._clipped(products / root) in three passes over the pairs, not four
    product = torch.tanh(products * (1.0 / (root * clip))).mul_(clip)  # (T, 2, n, m)
    t = critics._clipped(marginal_out.unflatten(-1, (k, 2)).gather(-2, t_slot).squeeze(-2))
    w = importance_weights(batch.probability)
    psi, slope = closed_form.decoded(decoder, y)
    q = reward_weights(psi)
    mass = w[..., None] * q  # (T, n, 2): a_i(r)
    m = product.shape[-1]
    # bound_G as conditional_bound computes it, from pair_law's sums (no pair's product of
    # masses made: A(r), like Z(r), is a sum over rows of a_i times a sum over its partners),
    # and its gradient in the mass
    prior, by_r, beside, following_sum, total = pair_law(mass, m)
    tiny = torch.finfo(total.dtype).tiny
    scale = total.clamp_min(tiny)
    f_star = conjugate(product, g_div)
    beside_f = beside * f_star  # a_j(r) F_ik(r)
    row_area = beside_f.sum(-1)
    area = (by_r * row_area).sum(-1, keepdim=True)  # A(r)
    # variational_bound's value: the pairs' weighted f* summed is P(r) A(r) / Z(r)
    value = (mass * joint).sum((-2, -1)) - (prior * area / scale).sum((-2, -1))
    # with the sums over the rows i whose partner is l: the m rows before l, whose partners'
    # sum is that of row l - m - 1
    d_area = row_area + partnering_sum(by_r[..., None] * f_star)  # dA / da_l
    d_total = (following_sum + following_sum.roll(m + 1, -1)) * (total >= tiny)
    d_product = area / scale + prior * (d_area - area / scale * d_total) / scale
    d_mass = joint - d_product.transpose(-1, -2)
    # bound_T's value and gradient in the mass, and psi's in its logit
    value -= beta * marginal_bound(t, q, w, t_div)
    d_mass -= beta * (t - (w[..., None] * conjugate(t, t_div)).sum(-2, keepdim=True))
    closed_form.set_decoder_logit(decoder, y, (d_mass[..., 1] - d_mass[..., 0]).mul_(w)
                                  .mul_(slope))
    # the critics: minus their bounds' gradients in the clipped scores, then through the clip
    d_joint = -mass * clip_slope(joint, clip, root)
    # the pairs' weights b_ik(r) = a_i(r) a_j(r) P(r) / Z(r) times f*'(G) (KL: f*' = f*)
    sloped = beside_f if g_div == "kl" else beside * conjugate_slope(product, g_div)
    d_pairs = sloped.mul_(clip_slope(product, clip, root)).mul_((by_r * (prior / scale))[..., None])
    d_t = (w[..., None] * prior.transpose(-1, -2) * conjugate_slope(t, t_div) - mass
           ) * clip_slope(t, clip)
    d_phi, d_chi = pair_gradients(left, right, d_pairs, chi)
    d_phi += d_joint[..., None] * chi
    d_chi += d_joint[..., None] * phi
    _set_slot_mlp(critics.context, x, context_hidden, grouped, by_action, d_phi.flatten(-2))
    _set_mlp(critics.feedback, y, feedback_hidden, d_chi.flatten(-2))
    d_marginal = t.new_zeros(*t.shape[:-1], k, 2)
    d_marginal.scatter_(-2, t_slot, d_t[..., None, :])
    _set_mlp(critics.marginal, x, marginal_hidden, d_marginal.flatten(-2))
    return value


class Orientation(NamedTuple):
    """What the symmetry choice (:func:`choose_orientation`) decided and measured, one entry
    per trial."""

    rate: np.ndarray
    """The mean decoded reward of the logged interactions (unweighted) after the choice."""
    share: np.ndarray
    """The share of the feedback decoded as reward, weighted to uniform play, after it."""
    flipped: np.ndarray
    """Whether the choice flipped psi, boolean."""
    explained: np.ndarray
    """The share of psi's variance that the logged action explains
    (:func:`~iglearn.learners.corrector.action_explained`; the same for psi and 1 - psi)."""


def choose_orientation(decoders: Sequence[Decoder], data: Source,
                       n_actions: int) -> Orientation:
    """Step 2, the symmetry choice: Eq. (i) is the same for psi and 1 - psi, and under uniform
    play a reward is assumed to be the rarer event, so each trial's decoder that decodes more
    than half of its feedback as reward (psi > 1/2, each interaction weighted (1/K) / p to
    uniform play: the corrector statistic of the 2021 paper's Appendix B,
    :func:`~iglearn.learners.corrector.decoded_shares`) is flipped (its corrector flag).

    The share, not the mean of psi, decides: a decoder may separate the two rewards without
    reaching 0 and 1 (psi about 0.05 where r = 1 and 0.53 where r = 0 on a 5,000-interaction
    digits log), and its mean (0.48) then sits below one half on the wrong side, while the
    share (70 %) does not."""
    with torch.no_grad(), side_by_side(decoders) as stacked:
        shares = decoded_shares(stacked, data, n_actions, by_action=True)  # one pass
    rate = shares.mean.numpy()
    flip = (shares.above > 0.5).numpy()
    for decoder, turn in zip(decoders, flip, strict=True):
        if turn:
            decoder.flipped.logical_not_()
    share = np.where(flip, shares.below.numpy(), shares.above.numpy())
    return Orientation(np.where(flip, 1.0 - rate, rate), share, flip,
                       cast(torch.Tensor, shares.explained).numpy())


def policy_stages(policy: Policy, target: Callable[[Batch], torch.Tensor],
                  settings: Optimisation) -> list[Stage]:
    """Step 3, the policy fit: :class:`~iglearn.learners.ContextualBandit`'s stages (the
    two-sided minorant for ``policy_epochs``, then the IPS estimate of V(pi) - V(pi_bad) with
    the control variate), fed the decoded reward psi(y), held fixed (``target`` of a
    mini-batch), in place of r."""

    return reward_stages(policy, target, settings.policy_epochs, settings)


@dataclass(eq=False)
class VIIGL(VIIGLSettings, StackableLearner, Orientable):
    """Learns a reward decoder psi by the conditional mutual information objective (see the
    module docstring), then a softmax policy on the decoded reward: ``fit(log)``, or several
    learners on several logs as one batched computation, ``fit_many``.

    The settings are the dataclass fields below (:class:`~iglearn.learners.settings.
    VIIGLSettings`); ``optimisation.grounding_epochs`` are the epochs of the decoder's
    min-max stage, ``policy_epochs`` and ``epochs`` those of the policy's.
    """

    origins: ClassVar[Origins] = ("mean", "mean")
    """The critics and the decoder read standardised feedback centred: shifted to
    non-negative values (the other learners' default), raw digits fits of 2,000
    interactions fell from 89.4 to 15.7 % (16 seeds)."""

    if TYPE_CHECKING:  # set by fit; declared for the type checker, not as settings
        decoder_: Decoder = field(init=False)
        report_: VIIGLReport = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.optimisation is None:  # accepted for convenience: the default settings
            self.optimisation = VIIGL_OPTIMISATION
        check_specs(self)
        split_divergence(self.divergence)

    @classmethod
    def _fit_stacked(cls, learners: list[VIIGL], logs: list[AnyLog]) -> None:
        """Fit every learner on its log, side by side; each draws its models and shuffles
        from its own seed, as its own ``fit`` would."""
        check_igl_logs(logs)
        start = time.perf_counter()
        first, k = learners[0], logs[0].n_actions
        scalers = [learner.take_statistics(log) for learner, log in zip(learners, logs,
                                                                         strict=True)]
        if cls._fit_kinds_apart(learners, logs, scalers):
            return
        data = training_data(logs, "feedback", scalers)
        generators = [torch_generator(as_generator(learner.seed)) for learner in learners]
        policies = [make_policy(first.policy, data.context_dim, k, g) for g in generators]
        decoders, attempts, kept = first.fit_decoders(data, k, generators)
        orientation = choose_orientation(decoders, data, k)
        first.fit_policies(policies, decoders, data, generators)
        seconds = (time.perf_counter() - start) / len(learners)
        for log, policy, decoder in zip(logs, policies, decoders, strict=True):  # all, or none
            check_finite_fit(log, {"policy": policy, "decoder": decoder})
        for t, learner in enumerate(learners):
            bounds = [bound for _, bound in attempts[t]]
            conditional, marginal = kept[t]
            notes = []
            if k == 2:
                notes.append("K = 2: the reward need not be the rarer event of the log, so the "
                             "symmetry choice may pick the wrong sign; choose it from a few "
                             "interactions whose reward or label is known (orient, iglearn "
                             "orient)")
            notes += log_warnings(logs[t])
            if marginal <= first.restart_bound:
                notes.append(f"the decoded reward tells almost nothing about the context and "
                             f"action in any of {len(bounds)} attempts (marginal bound "
                             f"{marginal:.3g} nats, restart_bound "
                             f"{first.restart_bound:g}): the feedback may not depend on "
                             f"the reward; log more interactions")
            share = float(orientation.share[t])
            if abs(share - 0.5) < AMBIGUITY_MARGIN:
                notes.append(ambiguity_warning(share))
            explained = float(orientation.explained[t])
            notes += action_warning(explained, "VI-IGL")
            for note in notes:
                warn_caller(note, IdentifiabilityWarning)
            learner.policy_, learner.decoder_ = policies[t], decoders[t]
            learner.seconds_ = seconds
            learner.report_ = VIIGLReport(
                conditional_bound=float(conditional), marginal_bound=float(marginal),
                reward_rate=float(orientation.rate[t]), corrector_statistic=share,
                flipped=bool(orientation.flipped[t]), restarts=len(bounds) - 1,
                attempt_bounds=[float(b) for b in bounds], seconds=seconds, warnings=notes,
                action_explained=explained)

    def fit_decoders(self, data: Source, n_actions: int,
                     generators: Sequence[torch.Generator]
                     ) -> tuple[list[Decoder], list[list[tuple[float, float]]],
                                list[tuple[float, float]]]:
        """Step 1 with the adaptive restart (iglearn's addition, as the 2021 paper's Appendix B
        restarts an attempt whose indicator stays low): every trial fits a fresh decoder and
        fresh critics (:meth:`ground`), drawn from ``generators[t]``; a trial whose best
        marginal bound is at most ``restart_bound`` fits fresh ones again, with the
        other such trials, at most ``max_restarts`` times.

        Returns:
            per trial, the decoder of its attempt with the largest marginal bound, the
            (conditional, marginal) bounds of every attempt, and those of the attempt kept.
        """
        def attempt(numbers: list[int], pending: list[int]) -> list[Attempt[Decoder]]:
            decoders = [make_decoder(self.decoder, data.signal_dim, generators[t],
                                     self.decoder_temperature) for t in pending]
            critics = [make_critics(self, data.context_dim, data.signal_dim, n_actions,
                                    generators[t]) for t in pending]
            conditional, marginal = self.ground(decoders, critics, data.select(pending),
                                                [generators[t] for t in pending])
            return [Attempt(decoder, t_bound, t_bound > self.restart_bound,
                            (g_bound, t_bound))
                    for decoder, g_bound, t_bound in zip(decoders, conditional.tolist(),
                                                         marginal.tolist(), strict=True)]

        best, attempts = adaptive_restart(len(generators), self.max_restarts, attempt)
        return [b.fitted for b in best], attempts, [b.record for b in best]

    def ground(self, decoders: Sequence[Decoder], critics: Sequence[Critics], data: Source,
               generators: Sequence[torch.Generator]) -> tuple[np.ndarray, np.ndarray]:
        """Step 1 for trial t's decoder and critics on trial t of ``data``, every trial side
        by side, in place. Returns per trial the bounds after it, conditional and marginal,
        on the first :data:`BOUND_ROWS` rows."""
        settings = self.optimisation
        decay = decoder_decay_scale(standardised_feedback(self.standardiser_), data.n)
        with side_by_side(decoders) as psi, side_by_side(critics) as critic:
            optimise([decoder_stage(psi, critic, settings, self.beta, self.divergence,
                                    self.critic_pairs, decay)], data, settings, generators,
                     self.progress_label("decoder"))
            with torch.no_grad():
                first = next(iter(data.chunks(min(BOUND_ROWS, data.n))))
                rows = Batch(torch.stack([x[:BOUND_ROWS] for x in first.context]),
                             first.action[:, :BOUND_ROWS], first.probability[:, :BOUND_ROWS],
                             torch.stack([y[:BOUND_ROWS] for y in first.signal]))
                conditional, marginal = information_bounds(critic, psi, rows, self.divergence,
                                                           self.critic_pairs)
        return conditional.numpy(), marginal.numpy()

    def fit_policies(self, policies: Sequence[Policy], decoders: Sequence[Decoder],
                     data: Source, generators: Sequence[torch.Generator]) -> None:
        """Step 3 for trial t's policy on trial t of ``data`` and the rewards its decoder
        decodes (after the symmetry choice), every trial side by side, in place."""
        settings = self.optimisation
        with side_by_side(policies) as pi, side_by_side(decoders) as psi:
            rewards, target = fixed_signal(data, lambda batch: psi(batch.signal))
            optimise(policy_stages(pi, target, settings), rewards, settings, generators,
                     self.progress_label("policy"))

    def decode(self, feedback: np.ndarray | pd.DataFrame | InteractionLog) -> np.ndarray:
        """The decoded reward psi(y) of each (raw) feedback vector (an array, a DataFrame
        read by the model's feedback columns, or a log: :meth:`feedback_of`), after the
        symmetry choice (on the learner's ``threads``)."""
        self._fitted_policy()
        with torch.no_grad(), torch_threads(self.threads, libraries=False):
            return self.decoder_(as_tensor(self.standardised_feedback(feedback))).numpy()

    def save(self, folder: str | Path, schema: FeatureSchema | None = None) -> Path:
        """Write the fitted policy and decoder to ``folder`` (see
        :func:`iglearn.learners.registry.save_model`); the critics are not kept."""
        from iglearn.learners.registry import save_model
        return save_model(self, folder, schema)

    @classmethod
    def load(cls, folder: str | Path, import_factories: bool = False) -> VIIGL:
        """A fitted model read from ``folder`` (see :func:`iglearn.learners.registry.load_model`); a
        folder that holds another algorithm's model is refused. A custom policy or decoder is
        rebuilt by importing its recorded factory, only with ``import_factories``."""
        from iglearn.learners.registry import load_model
        # load_model checked the algorithm
        return cast(VIIGL, load_model(folder, "vi-igl", import_factories=import_factories))

    def fit(self, log: AnyLog) -> Self:
        """Fit the decoder and the policy on ``log``, in memory or streamed (reads context,
        action, probability and feedback). Warns (:class:`IdentifiabilityWarning`) when
        K = 2, when an action never occurs in the log, when about half of the logged
        interactions decode as rewarded, and when no attempt's decoded reward depends on the
        context and action (its marginal bound at most ``restart_bound``)."""
        return super().fit(log)
