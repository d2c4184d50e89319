"""The IGL objective (Eq. 2), its indicator (Eq. 9) and the data-driven decoder corrector.

With a log gathered by a policy with probabilities p(a | x), the importance-weighted
empirical objective is

    L(pi, psi) = mean[ pi(a|x) psi(y) / p ] - mean[ (1/K) psi(y) / p ]
               = V_hat(pi, psi) - V_hat(pi_bad, psi),      pi_bad = uniform,

which for uniform logging (p = 1/K) is line 4 of Algorithm 1 (E2G). In expectation it equals
(V(pi) - V(pi_bad)) * Delta_psi (Eq. 3), Delta_psi = E[psi | r=1] - E[psi | r=0].
"""

from __future__ import annotations

import torch


def igl_objective(pi_logged: torch.Tensor, psi: torch.Tensor, probability: torch.Tensor,
                  n_actions: int) -> torch.Tensor:
    """Eq. 2: mean[(pi(a|x) - 1/K) * psi(y) / p] over a batch of logged interactions.

    Args:
        pi_logged: pi(a_i | x_i) of the logged actions, shape (n,).
        psi: decoded rewards psi(y_i), shape (n,).
        probability: logging probabilities p_i, shape (n,).
        n_actions: K.
    """
    return ((pi_logged - 1.0 / n_actions) * psi / probability).mean()


def corrector_statistic(psi: torch.Tensor, probability: torch.Tensor,
                        n_actions: int) -> torch.Tensor:
    """The corrector's ``sign`` (Appendix B): the fraction of feedback decoded as reward,
    psi(y) > 0.5, estimated for the uniform policy by self-normalised importance weights
    (1/K)/p, so that it stays right when the log was not gathered uniformly.

    Under uniform play only a 1/K share of rewards is 1 (K >= 3), so a decoder that calls
    more than half of the feedback a reward is decoding the opposite: flip it.
    """
    weight = (1.0 / n_actions) / probability
    return (weight * (psi > 0.5).to(weight.dtype)).sum() / weight.sum()


def corrected(psi: torch.Tensor, probability: torch.Tensor, n_actions: int) -> torch.Tensor:
    """psi, or 1 - psi when the corrector statistic exceeds 0.5."""
    flip = corrector_statistic(psi.detach(), probability, n_actions) > 0.5
    return torch.where(flip, 1 - psi, psi)


def policy_value(log_pi_logged: torch.Tensor, weight: torch.Tensor, exact: bool) -> torch.Tensor:
    """mean[pi(a|x) * weight] (exact), or its minorant mean[(1 + log pi(a|x)) * weight] with
    the weight held fixed (stage one of :mod:`iglearn.learners.training`; weight >= 0).

    Both have the same maximiser over unrestricted policies given the weights, but the
    minorant's gradient does not vanish where pi(a|x) is small.
    """
    if exact:
        return (log_pi_logged.exp() * weight).mean()
    return (log_pi_logged * weight.detach()).mean()
