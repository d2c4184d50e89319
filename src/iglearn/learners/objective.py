"""The IGL objective (Eq. 2), its indicator (Eq. 9), and the surrogates learners ascend.

With a log gathered by a policy with probabilities p(a | x), the importance-weighted
empirical objective is

    L(pi, psi) = mean[ pi(a|x) psi(y) / p ] - mean[ (1/K) psi(y) / p ]
               = V_hat(pi, psi) - V_hat(pi_bad, psi),      pi_bad = uniform,

which for uniform logging (p = 1/K) is line 4 of Algorithm 1 (E2G). In expectation it equals
(V(pi) - V(pi_bad)) * Delta_psi (Eq. 3), Delta_psi = E[psi | r=1] - E[psi | r=0].

Learners ascend it with a control variate: mean[(pi(a|x) - 1/K)(psi(y) - c) / p] differs from
L by c * mean[(pi(a|x) - 1/K) / p], whose expectation is zero under any logging policy
(E_p[pi(a|x) / p] = 1 = E_p[(1/K) / p]), so both estimate the same quantity and have the same
gradient in psi. With c = 0 only interactions decoded as rewarded move pi; with c = 1/2 those
decoded as not rewarded push their action's probability down as well, so pi learns from every
interaction (``BatchIGL.control_variate``; ``benchmarks/additions.py`` measures its effect).

Every function reduces over the last (sample) axis: inputs of shape (n,) give one value,
inputs of shape (T, n), T trials fitted side by side, give one value per trial.
"""

from __future__ import annotations

import torch

from iglearn.learners.settings import BASELINE as BASELINE
from iglearn.models.kernels import number


def at_action(values: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """Each row's entry at its action: values (..., n, K) and actions (..., n) -> (..., n);
    with log pi(. | x_i), log pi(a_i | x_i)."""
    return values.gather(-1, action[..., None])[..., 0]


def igl_objective(pi_logged: torch.Tensor, psi: torch.Tensor, probability: torch.Tensor,
                  n_actions: int, baseline: float = 0.0) -> torch.Tensor:
    """Eq. 2: mean[(pi(a|x) - 1/K) * (psi(y) - c) / p] over a batch of logged interactions;
    c = ``baseline`` is a control variate that leaves its expectation unchanged.

    Args:
        pi_logged: pi(a_i | x_i) of the logged actions, shape (n,).
        psi: decoded rewards psi(y_i), shape (n,).
        probability: logging probabilities p_i, shape (n,).
        n_actions: K.
        baseline: the control variate c (0: Eq. 2 exactly as written).
    """
    return ((pi_logged - number(1.0 / n_actions, pi_logged)) * (psi - number(baseline, psi))
            / probability).mean(-1)


def self_normalised_objective(pi_logged: torch.Tensor, psi: torch.Tensor,
                              probability: torch.Tensor, n_actions: int) -> torch.Tensor:
    """Eq. 2 with self-normalised importance weights: V_hat(pi, psi) - V_hat(pi_bad, psi), each
    value the weighted mean of psi with weights pi(a|x)/p and (1/K)/p divided by their sums.

    Both weights then sum to one, so a constant decoder scores exactly zero and no shift of
    psi by a constant changes the objective. With plain Eq. 2 a constant decoder psi = c
    scores c * mean[(pi(a|x) - 1/K) / p], zero in expectation but positive on the sample a
    policy was fitted on (it puts more than 1/K on the logged actions): psi then ascends to 1
    on every feedback, where the temperature-0.1 sigmoid saturates (and the corrector's flip
    leaves psi = 0 everywhere, equally saturated): a stationary point with indicator 0.
    """
    return (self_normalised_weights(pi_logged, probability, n_actions) * psi).sum(-1)


def self_normalised_weights(pi_logged: torch.Tensor, probability: torch.Tensor,
                            n_actions: int) -> torch.Tensor:
    """The weights of :func:`self_normalised_objective`, which is their sum with psi (and so
    its gradient in psi): pi(a|x)/p over its sum less (1/K)/p over its sum."""
    w_pi = pi_logged / probability
    w_bad = (number(n_actions, probability) * probability).reciprocal()
    return w_pi / w_pi.sum(-1, keepdim=True) - w_bad / w_bad.sum(-1, keepdim=True)


def indicator(pi_logged: torch.Tensor, psi: torch.Tensor, probability: torch.Tensor,
              n_actions: int) -> torch.Tensor:
    """Eq. 9, the indicator: mean[(pi(a|x) - 1/K) psi(y) / p], the importance-weighted
    estimate of V(pi, psi) - V(pi_bad, psi) that the adaptive restart, the schedules'
    certificates and Lemma 5 read. It is Eq. 2's value, without any control variate: the
    mean of :func:`indicator_terms`."""
    return indicator_terms(pi_logged, psi, probability, n_actions).mean(-1)


def indicator_terms(pi_logged: torch.Tensor, psi: torch.Tensor, probability: torch.Tensor,
                    n_actions: int) -> torch.Tensor:
    """Each interaction's term of Eq. 9, (pi(a|x) - 1/K) psi(y) / p, not reduced: their mean
    is the indicator, their spread its standard error (the adaptive restart's confidence,
    :meth:`~iglearn.learners.batch_igl.BatchIGL.fit_with_restarts`)."""
    return (pi_logged - 1.0 / n_actions) * psi / probability


def log_complement(log_pi: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """log(1 - pi(a_i | x_i)) from log pi(. | x_i) (shape (..., n, K)): the log-sum-exp of the
    other actions' log-probabilities, exact where pi(a|x) is near 1."""
    return log_pi.scatter(-1, action[..., None], float("-inf")).logsumexp(-1)


def policy_minorant(log_pi: torch.Tensor, action: torch.Tensor, psi: torch.Tensor,
                    probability: torch.Tensor, both_sides: bool = True,
                    log_not_a: torch.Tensor | None = None) -> torch.Tensor:
    """mean[(psi log pi(a|x) + (1 - psi) log(1 - pi(a|x))) / p] with psi held fixed: the
    policy's surrogate in the first stages of a fit (:mod:`iglearn.learners.training`).

    Since log u <= u - 1 and log(1 - u) <= -u, it is at most 2 mean[pi(a|x) (psi - 1/2) / p]
    minus a constant: a minorant of the policy's part of Eq. 2 with the control variate
    c = 1/2, concave in a linear policy's weights, whose gradient does not vanish where
    pi(a|x) is near 0 or 1. In expectation over any logging policy (the 1/p weights cancel
    it), its maximiser for each context ranks actions as E[psi | x, a] does, so its greedy
    policy is the objective's.

    Args:
        log_pi: log pi(. | x_i) of every action, shape (n, K).
        action: logged actions a_i, shape (n,).
        psi: decoded rewards (or rewards) in [0, 1], shape (n,); not differentiated.
        probability: logging probabilities p_i, shape (n,).
        both_sides: with False, only the psi log pi term (a minorant of Eq. 2's policy part
            with c = 0): pi then moves towards the actions with the highest psi even while
            psi is small on every feedback, which is what lets a fresh (pi, psi) pair break
            its symmetry while psi is being grounded.
        log_not_a: :func:`log_complement` of ``log_pi``, if the caller has it already.
    """
    psi = psi.detach()
    log_pi_a = at_action(log_pi, action)
    if not both_sides:
        return (psi * log_pi_a / probability).mean(-1)
    if log_not_a is None:
        log_not_a = log_complement(log_pi, action)
    return ((psi * log_pi_a + (number(1, psi) - psi) * log_not_a) / probability).mean(-1)
