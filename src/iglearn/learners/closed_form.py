"""Closed-form gradients of the stage losses of BatchIGL and of the policy stages on a reward
held fixed (:func:`~iglearn.learners.baselines.reward_stages`: CB, and AI-IGL's and VI-IGL's
policy fits) when the policy and the decoder are linear (the paper's classes and iglearn's
defaults).

A linear model's training step on a few hundred interactions costs the overhead of its tensor
operations, not their arithmetic, and autograd's graph of a stage loss (:meth:`BatchIGL.stages
<iglearn.learners.batch_igl.BatchIGL.stages>`: 19 to 30 nodes a mini-batch) costs more than
the few products below: on two stacked trials of 400 interactions with 64 inputs and 10
actions, one step's loss and gradients took 600 to 800 µs by autograd and 320 to 520 µs in
closed form (one thread, an AMD EPYC). Every stage loss is a mean
over interactions of terms in log pi(a|x) (or pi(a|x)), log(1 - pi(a|x)) and psi(y), so its
gradient follows by the chain rule:

- the policy pi = softmax(f(x) / t) with scores f(x) = W x + b: a gradient g in
  log pi(a|x) gives the scores g (e_a - pi(.|x)) / t, and a gradient h in log(1 - pi(a|x))
  gives them h (pi(.|x) / (1 - pi(a|x)), zero at a, - pi(.|x)) / t (:func:`score_gradient`);
- the decoder psi(y) = sigma(z / T) with z = v y + c, or 1 - that once the corrector flipped
  it: a gradient g in psi gives z the gradient g (+-) psi (1 - psi) / T (:func:`decoded`);
- a layer's output gradient G gives its weights G^T x and its bias the sum of G
  (:func:`set_gradients`).

Each ``*_step`` function returns its stage's loss, one value per trial, computed by the same
functions as the autograd form (:mod:`iglearn.learners.objective`), and sets the gradient of
every parameter its stage moves: the autograd form's gradient up to float rounding
(``tests/learners/test_closed_form.py``). :meth:`BatchIGL.stages` and
:func:`~iglearn.learners.baselines.reward_stages` use them when :func:`supports` says the
models are the built-in linear ones; any other model (an MLP, a user's module) trains by
autograd. VI-IGL's decoder stage computes its own
(:func:`iglearn.learners.vi_igl.decoder_step`) with :func:`supports_decoder` and
:func:`set_decoder_logit`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from iglearn.learners.objective import (
    at_action,
    igl_objective,
    log_complement,
    policy_minorant,
    self_normalised_weights,
)
from iglearn.learners.trials import Batch
from iglearn.models.decoders import Decoder, LinearDecoder
from iglearn.models.kernels import number
from iglearn.models.policies import LinearPolicy, Policy
from iglearn.models.stacked import StackedLinear


def supports(policy: object, decoder: object | None = None) -> bool:
    """Whether ``policy`` and ``decoder`` (if given; stacked, :mod:`iglearn.models.stacked`)
    are the built-in linear classes, whose stage gradients this module computes."""
    return (type(policy) is LinearPolicy and isinstance(policy.net, StackedLinear)
            and (decoder is None or supports_decoder(decoder)))


def supports_decoder(decoder: object) -> bool:
    """Whether ``decoder`` (stacked) is the built-in linear decoder, whose gradient in its
    logit :func:`set_decoder_logit` turns into its parameters' gradients."""
    return type(decoder) is LinearDecoder and isinstance(decoder.net, StackedLinear)


def decoded(decoder: Decoder, signal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """psi(y) of a stacked linear ``decoder`` (the values of its forward pass, shape (T, n))
    and its derivative in the decoder's logit z = v y + c: sigma'(z / T) / T =
    sigma (1 - sigma) / T, negated for a trial whose corrector flag is set (psi = 1 - sigma)."""
    sigma = decoder.raw(signal)
    return corrected(decoder, sigma, logit_slope(sigma, decoder.temperature))


def logit_slope(sigma: torch.Tensor, temperature: float) -> torch.Tensor:
    """The derivative of sigma(z / T) in the logit z from its value: sigma (1 - sigma) / T."""
    return sigma * (number(1, sigma) - sigma) / number(temperature, sigma)


def corrected(decoder: Decoder, sigma: torch.Tensor, slope: torch.Tensor | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """psi from the decoder's sigma(z / T) (shape (T, n)) as its forward pass gives it: 1 -
    sigma for the trials whose corrector flag is set; with ``slope``, its derivative negated
    for those trials (an empty tensor without)."""
    return flipped_where(decoder.flipped[..., None], sigma, slope)


def flipped_where(flags: torch.Tensor, sigma: torch.Tensor, slope: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`corrected` with the corrector flags given, any shape that broadcasts to
    ``sigma``'s (one per trial, or one per row)."""
    slope = torch.empty(0) if slope is None else slope
    if not bool(flags.any()):
        return sigma, slope
    if bool(flags.all()):
        return number(1, sigma) - sigma, -slope
    return (torch.where(flags, number(1, sigma) - sigma, sigma),
            slope if slope.numel() == 0 else torch.where(flags, -slope, slope))


def score_gradient(log_pi: torch.Tensor, action: torch.Tensor, logged: torch.Tensor,
                   not_logged: tuple[torch.Tensor, torch.Tensor] | None = None
                   ) -> torch.Tensor:
    """The gradient in the scores f(x) / t, shape (T, n, K), of a loss whose gradient in
    log pi(a_i | x_i) is ``logged[i]`` and (if given) in log(1 - pi(a_i | x_i)) is
    ``not_logged[0][i]``, with ``not_logged[1]`` log(1 - pi(a_i | x_i)) itself
    (:func:`~iglearn.learners.objective.log_complement`): d log pi(a|x) / df_j = [j = a] - pi_j
    and d log(1 - pi(a|x)) / df_j = [j != a] pi_j / (1 - pi(a|x)) - pi_j. ``log_pi`` is the
    policy's output, (T, n, K)."""
    pi = log_pi.exp()
    if not_logged is None:
        grad = pi.mul_(-logged[..., None])
    else:
        weight, log_not_a = not_logged
        beside = (log_pi - log_not_a[..., None]).exp_().scatter_(-1, action[..., None], 0.0)
        grad = beside.mul_(weight[..., None]).sub_(pi.mul_((logged + weight)[..., None]))
    return grad.scatter_add_(-1, action[..., None], logged[..., None])


def set_gradients(layer: torch.nn.Module, inputs: torch.Tensor, output: torch.Tensor) -> None:
    """Set the gradients of a :class:`~iglearn.models.stacked.StackedLinear` ``layer`` whose
    output (T, n, out) on ``inputs`` (T, n, in) has the gradient ``output``: the weights get
    output^T inputs, the bias the sum of ``output`` over the rows."""
    across = output.transpose(-1, -2)
    layer.weight.grad = torch.bmm(across, inputs)
    layer.bias.grad = across.sum(-1)


def set_logged_scores(layer: torch.nn.Module, batch: Batch, scores: torch.Tensor,
                      grad: torch.Tensor) -> None:
    """:func:`set_gradients` of a stacked linear ``layer`` whose output ``scores`` (T, n, K)
    on the batch's contexts has the gradient ``grad`` (T, n) in each row's logged action's
    score and zero in the others (a loss that reads only the logged action's score)."""
    set_gradients(layer, batch.context, torch.zeros_like(scores).scatter_(
        -1, batch.action[..., None], grad[..., None]))


def _set_policy(policy: Policy, batch: Batch, scores: torch.Tensor) -> None:
    """The policy's gradients from the gradient in its tempered scores f(x) / t."""
    if policy.temperature != 1.0:
        scores = scores / policy.temperature
    set_gradients(policy.net, batch.context, scores)


def set_decoder_logit(decoder: Decoder, signal: torch.Tensor, logit: torch.Tensor) -> None:
    """A stacked linear decoder's gradients from the gradient in its logit z on ``signal``,
    shape (T, n)."""
    set_gradients(decoder.net, signal, logit[..., None])


@torch.no_grad()
def grounding_step(policy: Policy, decoder: Decoder, batch: Batch, n_actions: int,
                   self_normalised: bool, baseline: float) -> torch.Tensor:
    """The grounding stage's loss, -(Eq. 2 in psi + psi log pi(a|x) / p), with pi held fixed
    in Eq. 2 and psi in the minorant (self-normalised weights or the control variate
    ``baseline``, as :meth:`BatchIGL.stages` says), and its gradients."""
    log_pi = policy(batch.context)
    log_pi_a = at_action(log_pi, batch.action)
    pi_a = log_pi_a.exp()
    psi, slope = decoded(decoder, batch.signal)
    n = psi.shape[-1]
    if self_normalised:  # Eq. 2 with self-normalised weights is sum(w psi)
        weights = self_normalised_weights(pi_a, batch.probability, n_actions)
        value = (weights * psi).sum(-1)
    else:
        value = igl_objective(pi_a, psi, batch.probability, n_actions, baseline)
        weights = _eq2_psi(pi_a, batch, n_actions)
    value = value + policy_minorant(log_pi, batch.action, psi, batch.probability,
                                    both_sides=False)
    set_decoder_logit(decoder, batch.signal, weights.mul_(slope).neg_())
    _set_policy(policy, batch, score_gradient(log_pi, batch.action,
                                              -psi / batch.probability / number(n, psi)))
    return -value


class Decoded:
    """psi(y) for the policy stage, where the decoder's weights are held fixed: sigma(z / T)
    of the last mini-batch's feedback is kept, so that a log of one mini-batch is decoded
    once per stage; the corrector's flags, which may change between windows, are applied
    on every call (the values of the decoder's forward pass)."""

    def __init__(self, decoder: Decoder):
        self.decoder = decoder
        self.signal: torch.Tensor | None = None
        self.sigma = torch.empty(0)

    def __call__(self, batch: Batch) -> torch.Tensor:
        if batch.signal is not self.signal:
            self.signal, self.sigma = batch.signal, self.decoder.raw(batch.signal)
        return corrected(self.decoder, self.sigma)[0]


@torch.no_grad()
def minorant_step(policy: Policy, reward: Callable[[Batch], torch.Tensor], batch: Batch,
                  both_sides: bool = True) -> torch.Tensor:
    """A policy stage's loss, minus the minorant (:func:`~iglearn.learners.objective.
    policy_minorant`, one- or two-sided) of a reward held fixed (``reward(batch)``: BatchIGL's
    psi(y), :class:`Decoded`; the true reward; a decoded reward), and the policy's
    gradients."""
    log_pi = policy(batch.context)
    psi = reward(batch)
    share = batch.probability.reciprocal() / number(psi.shape[-1], psi)
    log_not_a = log_complement(log_pi, batch.action) if both_sides else None
    not_logged = None if log_not_a is None else ((psi - number(1, psi)).mul_(share), log_not_a)
    _set_policy(policy, batch, score_gradient(log_pi, batch.action, -psi * share, not_logged))
    return -policy_minorant(log_pi, batch.action, psi, batch.probability, both_sides,
                            log_not_a)


@torch.no_grad()
def ips_step(policy: Policy, reward: Callable[[Batch], torch.Tensor], batch: Batch,
             baseline: float) -> torch.Tensor:
    """A policy stage's loss, -Eq. 2 with the control variate ``baseline`` of a reward held
    fixed (``reward(batch)``, as :func:`minorant_step` says), and the policy's gradients:
    pi(a|x) (r - c) / (p n) in log pi(a|x)."""
    log_pi = policy(batch.context)
    pi_a = at_action(log_pi, batch.action).exp()
    r = reward(batch)
    _set_policy(policy, batch, score_gradient(log_pi, batch.action, _ips_logged(pi_a, r, batch,
                                                                                 baseline)))
    return -igl_objective(pi_a, r, batch.probability, log_pi.shape[-1], baseline)


def _eq2_psi(pi_a: torch.Tensor, batch: Batch, n_actions: int) -> torch.Tensor:
    """The gradient of Eq. 2 (any control variate) in psi(y): (pi(a|x) - 1/K) / (p n)."""
    return ((pi_a - number(1.0 / n_actions, pi_a)) / batch.probability
            / number(pi_a.shape[-1], pi_a))


def _ips_logged(pi_a: torch.Tensor, psi: torch.Tensor, batch: Batch, baseline: float
                ) -> torch.Tensor:
    """The gradient of -Eq. 2 (control variate ``baseline``) in log pi(a|x):
    -pi(a|x) (psi - c) / (p n)."""
    return ((psi - number(baseline, psi)).mul_(pi_a).div_(batch.probability)
            .div_(number(-psi.shape[-1], psi)))


@torch.no_grad()
def exact_step(policy: Policy, decoder: Decoder, batch: Batch, n_actions: int,
               self_normalised: bool, baseline: float) -> torch.Tensor:
    """The exact stage's loss and its gradients in (pi, psi): -Eq. 2 with the control variate
    ``baseline`` (:func:`~iglearn.learners.objective.igl_objective`), whose gradients are
    -(pi(a|x) - 1/K) / (p n) in psi(y) and -pi(a|x) (psi(y) - c) / (p n) in log pi(a|x); or,
    ``self_normalised``, minus the sum of Eq. 2 with self-normalised weights in psi (pi held
    fixed: :func:`~iglearn.learners.objective.self_normalised_objective`) and Eq. 2 with the
    control variate in pi (psi held fixed), as :meth:`BatchIGL.stages` says."""
    log_pi = policy(batch.context)
    pi_a = at_action(log_pi, batch.action).exp()
    psi, slope = decoded(decoder, batch.signal)
    value = igl_objective(pi_a, psi, batch.probability, n_actions, baseline)
    if self_normalised:
        weights = self_normalised_weights(pi_a, batch.probability, n_actions)
        value = value + (weights * psi).sum(-1)
    else:
        weights = _eq2_psi(pi_a, batch, n_actions)
    set_decoder_logit(decoder, batch.signal, weights.neg_().mul_(slope))
    _set_policy(policy, batch, score_gradient(log_pi, batch.action,
                                              _ips_logged(pi_a, psi, batch, baseline)))
    return -value
