"""The paper's finite-sample quantities: Theorem 1's statistical error, Theorem 2's schedule and
regret order, and the lemmas that turn the indicator (Eq. 9) into guarantees. Lemmas are
named by their LaTeX labels: decodebadpi (a bad policy scores low), pistarregret_agn (a high
score certifies Delta_psi > 0), enterlowreg (the warm-up T0) and idctor (a lower bound on
V(pi)).

Notation: K actions, ``iota`` the complexity term of a supervised sample-complexity bound
(e.g. log(2 T |Pi| |Psi| / delta)), ``n`` = |D| uniform exploration samples, and
eps_D = sqrt(iota / (2 |D|)), so that the indicator is within K eps_D of
(V(pi) - V(pi_bad)) Delta_psi (Section 4); for data logged by another policy, within
W eps_D, W the largest importance weight 1/p (:func:`certifies_decoder`).
"""

from __future__ import annotations

import math

from iglearn.errors import IGLearnError


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise IGLearnError(f"{name} must be positive, got {value}")


def eps_stat(n: int, log_term: float, weight_norm: float, max_weight: float) -> float:
    """Theorem 1's epsilon_stat,n:

        sqrt(4 max_pi ||pi(a|x)/d(a|x)||_{2,d} log(2|Pi||Psi|/delta) / n)
          + max_{x,a} (1/d(a|x)) log(2|Pi||Psi|/delta) / (3 n).

    Args:
        n: logged samples.
        log_term: log(2 |Pi| |Psi| / delta).
        weight_norm: max_pi ||pi / d||_{2,d}.
        max_weight: max_{x,a} 1 / d(a|x).
    """
    _positive("n", n)
    return (math.sqrt(4 * weight_norm * log_term / n) + max_weight * log_term / (3 * n))


def eps_stat_uniform(n: int, n_actions: int, log_term: float) -> float:
    """Theorem 1's epsilon_stat,n for uniform logging d = 1/K: max 1/d = K, and the largest
    ||pi/d||_{2,d} = sqrt(E_d[(pi/d)^2]) = sqrt(K sum_a pi(a|x)^2), sqrt(K) for a
    deterministic pi."""
    return eps_stat(n, log_term, math.sqrt(n_actions), float(n_actions))


def eps_d(n: int, iota: float) -> float:
    """eps_D = sqrt(iota / (2 |D|)) (Section 4.1): the indicator's error is at most K eps_D."""
    _positive("n", n)
    if not iota >= 0:
        raise IGLearnError(f"iota must be at least 0, got {iota}")
    return math.sqrt(iota / (2 * n))


def warmup_length(n_actions: int, eta: float, iota: float) -> float:
    """T0 = 2 K^2 iota / eta^2 (lemma enterlowreg): exploration rounds after which the indicator of
    the line-4 maximiser certifies Delta_psi > 0. (Theorem 2's statement writes 2K^2/eta^2;
    its proof and lemma enterlowreg use T0 with the iota factor, as here.)"""
    _positive("eta", eta)
    return 2 * n_actions**2 * iota / eta**2


def exploit_steps(i: int, n_actions: int, iota: float) -> int:
    """Theorem 2's schedule (Eq. epscheduling) after warm-up: n_i = floor(sqrt(i / (K iota)))
    exploitation steps in round i."""
    return math.floor(math.sqrt(i / (n_actions * iota)))


def regret_bound(t: int, n_actions: int, iota: float, eta: float,
                 delta_psi_star: float) -> float:
    """The order of Theorem 2's regret bound, constants dropped (its proof's form):
    K^(1/3) T^(2/3) iota^(1/3) / Delta_psi* + 2 K^2 iota / eta^2."""
    _positive("delta_psi_star", delta_psi_star)
    return (n_actions ** (1 / 3) * t ** (2 / 3) * iota ** (1 / 3) / delta_psi_star
            + warmup_length(n_actions, eta, iota))


def certifies_decoder(indicator: float, n: int, n_actions: int, iota: float,
                      v_bad: float, max_weight: float | None = None) -> bool:
    """The condition of lemma pistarregret_agn (Eq. pitildegvb_a):
    indicator > V(pi_bad) + W eps_D, with W = K under uniform logging.

    By lemma decodebadpi a policy no better than pi_bad cannot pass it for any decoder, so
    passing it certifies Delta_psi > 0 for the fitted decoder (the Remark after Theorem 2).
    ``v_bad`` is an upper bound on V(pi_bad) (1/K for classification).

    The indicator is a mean of n terms (pi(a|x) - 1/K) psi(y) / p, each in an interval of
    width at most W = max 1/p, the largest importance weight of the data (K under uniform
    logging, the paper's case), so by Hoeffding's inequality it is within W eps_D of its
    expectation. ``max_weight`` is that W for data logged by another policy (default: K). A
    non-finite indicator or weight certifies nothing.
    """
    weight = n_actions if max_weight is None else max_weight
    if not (math.isfinite(indicator) and math.isfinite(weight)):
        return False
    return indicator > v_bad + weight * eps_d(n, iota)


def value_lower_bound(indicator: float, n: int, n_actions: int, iota: float, v_bad: float,
                      delta_psi_star: float | None = None,
                      max_weight: float | None = None) -> float:
    """Lemma idctor: for a decoder with Delta_psi > 0 (e.g. certified by :func:`certifies_decoder`)

        V(pi) >= (indicator - W eps_D) / Delta_psi* + V(pi_bad),

    with W = K under uniform logging, or ``max_weight`` (the largest importance weight 1/p,
    see :func:`certifies_decoder`).

    Delta_psi* is unknown in practice but at most 1. When the numerator is positive,
    dividing by Delta_psi* <= 1 can only increase it, so indicator - W eps_D + V(pi_bad) is a
    lower bound for every Delta_psi*; when it is not, Delta_psi* -> 0 makes the bound vacuous
    and only V(pi) >= 0 remains. Pass ``delta_psi_star`` to use the exact form. Here ``v_bad``
    must be V(pi_bad) itself or a lower bound on it, in [0, 1].

    A value lies in [0, 1], so the bound is clipped to [0, 1]; a non-finite indicator or
    weight gives the trivial bound 0.
    """
    if not 0 <= v_bad <= 1:
        raise IGLearnError(f"v_bad is a value, in [0, 1]; got {v_bad}")
    weight = n_actions if max_weight is None else max_weight
    numerator = indicator - weight * eps_d(n, iota)
    if not math.isfinite(numerator):
        return 0.0
    if delta_psi_star is not None:
        _positive("delta_psi_star", delta_psi_star)
        return min(1.0, max(0.0, numerator / delta_psi_star + v_bad))
    if numerator <= 0:
        return 0.0
    return min(1.0, numerator + v_bad)


def lemma5_value_lower_bound(indicator: float, n: int, n_actions: int, iota: float,
                             v_bad: float, max_weight: float | None = None) -> float | None:
    """The lower bound of :func:`value_lower_bound`, in [0, 1], where the lemma applies, else
    None: only when the indicator certifies Delta_psi > 0 (:func:`certifies_decoder`, with
    the same ``max_weight``: the largest importance weight of the data, K by default)."""
    if not certifies_decoder(indicator, n, n_actions, iota, v_bad, max_weight):
        return None
    return value_lower_bound(indicator, n, n_actions, iota, v_bad, max_weight=max_weight)


DEFAULT_IOTA = math.log(2 / 0.05)
"""Lemma 5's complexity term where none is given (``iglearn fit --iota``, the service's
re-fits): log(2 / delta) at delta = 0.05."""


ACTION_EXPLAINED = 0.25
"""A fit of 2021 IGL or VI-IGL warns when the logged action explains more than this share of
its decoded reward's variance (:func:`~iglearn.learners.corrector.action_explained`): the
decoder may read the action from the feedback. Measured by the small-data benchmark (16 logs
of each task and size, 200 to 5,000 interactions, three features variants; docs/results.md,
"Feedback that shows the action"): at most 0.13 on digits (at 200 interactions; 0.05 from
500), where the feedback depends on the action only through the reward; 0.88 to 0.98 on the
simulated BCI and 0.15 to 0.98 on action-inclusive digits (2 of 480 fits at or below 0.25),
where it shows the action; 0.32 to 0.72 on VW's personalised simulator."""


def action_led(explained: float | None) -> bool:
    """Whether a fit's decoded reward follows the logged action: a share ``explained`` of its
    variance (a report's ``action_explained``; None: not measured) above
    :data:`ACTION_EXPLAINED`. Lemma 5's bound (:func:`lemma5_summary`) and the data-driven
    schedule's certificate (:meth:`~iglearn.learners.schedules.Schedule.certifies`) assume
    feedback that depends on the action only through the reward: neither is given for such
    a fit."""
    return explained is not None and explained > ACTION_EXPLAINED


def lemma5_summary(indicator: float, n: int, n_actions: int, iota: float, v_bad: float,
                   max_weight: float, explained: float | None = None
                   ) -> dict[str, float | bool | None]:
    """What a fit's summary says of Lemma 5 (``iglearn fit``, the service's re-fits): its
    terms (iota, V(pi_bad), eps_D = sqrt(iota / 2n), the largest importance weight), whether
    it applies and the bound (:func:`lemma5_value_lower_bound`). ``explained``: the share of
    the fit's decoded reward that the logged action explains; a decoder that follows the
    action (:func:`action_led`) gets no bound, as the lemma's setting does not hold."""
    bound = (None if action_led(explained) else
             lemma5_value_lower_bound(indicator, n, n_actions, iota, v_bad, max_weight))
    return {"iota": iota, "v_bad": v_bad, "eps_D": math.sqrt(iota / (2 * n)),
            "max_importance_weight": max_weight, "applies": bound is not None,
            "value_lower_bound": bound}
