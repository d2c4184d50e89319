"""Finite-sample guarantees of the paper, as small functions."""

from __future__ import annotations

import math


def lemma5_value_lower_bound(indicator: float, n: int, n_actions: int, iota: float,
                             v_bad: float) -> float | None:
    """Lemma 5: a lower bound on the true value V(pi) of a learned policy, or None.

    With eps_D = sqrt(iota / (2 n)) the uniform deviation of the importance-weighted indicator
    (Eq. 9) from its expectation is at most K * eps_D (Section 4). When the indicator exceeds
    V(pi_bad) + K * eps_D, the decoded reward has the right sign (Delta psi > 0), and
    (V(pi) - V(pi_bad)) * Delta psi >= indicator - K * eps_D with Delta psi <= 1 gives

        V(pi) >= indicator - K * eps_D + V(pi_bad).

    Args:
        indicator: Eq. 9 of the fitted (pi, psi) on the n logged interactions.
        n: number of interactions the indicator was measured on.
        n_actions: K.
        iota: the complexity term of the policy and decoder classes
            (log(2 T |Psi| |Pi| / delta) for finite classes).
        v_bad: V(pi_bad), the value of uniform play (1/K for classification).

    Returns:
        The bound, or None when the indicator does not clear V(pi_bad) + K * eps_D, where the
        lemma does not apply (the sign of the decoded reward is not certified).
    """
    if n < 1 or n_actions < 2 or iota <= 0:
        raise ValueError("need n >= 1, n_actions >= 2 and iota > 0")
    eps = math.sqrt(iota / (2 * n))
    if indicator <= v_bad + n_actions * eps:
        return None
    return indicator - n_actions * eps + v_bad
