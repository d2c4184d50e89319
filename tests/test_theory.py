"""The theory module against hand-computed values."""

import math

import pytest

from iglearn import IGLearnError, theory


def test_eps_d_and_warmup_length():
    # eps_D = sqrt(iota / (2 n)): iota = 100, n = 200 -> sqrt(0.25) = 0.5.
    assert theory.eps_d(200, 100) == pytest.approx(0.5)
    # T0 = 2 K^2 iota / eta^2: K = 10, iota = 100, eta = 0.5 -> 2 * 100 * 100 / 0.25.
    assert theory.warmup_length(10, 0.5, 100) == pytest.approx(80000)
    with pytest.raises(IGLearnError, match="eta"):
        theory.warmup_length(10, 0.0, 100)


def test_exploit_steps_follow_theorem_2():
    # floor(sqrt(i / (K iota))) with K = 10, iota = 100: 4001 -> 2, 8999 -> 2, 9000 -> 3.
    assert [theory.exploit_steps(i, 10, 100) for i in (999, 1000, 4001, 8999, 9000)] == \
        [0, 1, 2, 2, 3]


def test_eps_stat_theorem_1():
    # sqrt(4 * 2 * 3 / 6) + 5 * 3 / (3 * 6) = 2 + 5/6.
    assert theory.eps_stat(6, 3.0, 2.0, 5.0) == pytest.approx(2 + 5 / 6)
    # Uniform logging over K = 4: ||pi/d||_{2,d} = 2, max 1/d = 4.
    assert theory.eps_stat_uniform(6, 4, 3.0) == pytest.approx(2 + 4 * 3 / 18)


def test_regret_bound_order():
    # K = 8, T = 1000, iota = 1, Delta_psi* = 0.5, eta = 1:
    # 8^(1/3) * 1000^(2/3) / 0.5 + 2 * 64 = 2 * 100 / 0.5 + 128.
    assert theory.regret_bound(1000, 8, 1.0, 1.0, 0.5) == pytest.approx(400 + 128)


def test_certification_test_of_the_remark():
    # K eps_D with K = 10, iota = 100, n = 200 is 5; V(pi_bad) = 0.1.
    assert theory.certifies_decoder(5.2, 200, 10, 100, 0.1)
    assert not theory.certifies_decoder(5.1, 200, 10, 100, 0.1)
    # n = 500000: K eps_D = 10 * sqrt(1e-4) = 0.1 -> needs an indicator above 0.2.
    assert theory.certifies_decoder(0.21, 500000, 10, 100, 0.1)
    assert not theory.certifies_decoder(0.19, 500000, 10, 100, 0.1)


def test_value_lower_bound_of_lemma_idctor():
    # K eps_D = 0.1 (n = 500000): numerator 0.6 - 0.1 = 0.5.
    assert theory.value_lower_bound(0.6, 500000, 10, 100, 0.1) == pytest.approx(0.6)
    # With a known Delta_psi* = 0.8: 0.5 / 0.8 + 0.1.
    assert theory.value_lower_bound(0.6, 500000, 10, 100, 0.1, delta_psi_star=0.8) == \
        pytest.approx(0.725)
    # A non-positive numerator gives only the trivial bound.
    assert theory.value_lower_bound(0.05, 500000, 10, 100, 0.1) == 0.0
    # Dividing a positive numerator by Delta_psi* <= 1 never lowers the bound.
    for star in (1.0, 0.7, 0.3):
        assert theory.value_lower_bound(0.6, 500000, 10, 100, 0.1, star) >= \
            theory.value_lower_bound(0.6, 500000, 10, 100, 0.1) - 1e-12
    assert math.isclose(theory.value_lower_bound(0.6, 500000, 10, 100, 0.1, 1.0), 0.6)


def test_data_from_another_logging_policy_needs_its_largest_importance_weight():
    # n = 500000, iota = 100: eps_D = 0.01. Uniform over K = 10: W = K = 10, margin 0.1.
    assert theory.certifies_decoder(0.21, 500000, 10, 100, 0.1)
    # The same indicator from a log whose smallest probability is 1/40: margin 0.4.
    assert not theory.certifies_decoder(0.21, 500000, 10, 100, 0.1, max_weight=40.0)
    assert theory.certifies_decoder(0.51, 500000, 10, 100, 0.1, max_weight=40.0)
    assert theory.value_lower_bound(0.6, 500000, 10, 100, 0.1, max_weight=40.0) == \
        pytest.approx(0.6 - 0.4 + 0.1)
    # One probability of 1e-30 is a weight of 1e30: nothing is certified, however large the
    # indicator it produced.
    assert theory.lemma5_value_lower_bound(1.7e25, 500000, 10, 100, 0.1, 1e30) is None


def test_the_value_bound_stays_in_0_1_and_non_finite_input_certifies_nothing():
    # An indicator above 1 (heavy importance weights) cannot bound a value above 1.
    assert theory.value_lower_bound(5.0, 500000, 10, 100, 0.1) == 1.0
    assert theory.lemma5_value_lower_bound(5.0, 500000, 10, 100, 0.1) == 1.0
    assert theory.value_lower_bound(0.9, 500000, 10, 100, 0.5, delta_psi_star=0.2) == 1.0
    for indicator in (math.nan, math.inf, -math.inf):
        assert not theory.certifies_decoder(indicator, 500000, 10, 100, 0.1)
        assert theory.lemma5_value_lower_bound(indicator, 500000, 10, 100, 0.1) is None
        assert theory.value_lower_bound(indicator, 500000, 10, 100, 0.1) == 0.0
    assert theory.lemma5_value_lower_bound(0.9, 500000, 10, 100, 0.1, math.inf) is None
    for v_bad in (-0.1, 1.5, math.nan):
        with pytest.raises(IGLearnError, match="v_bad"):
            theory.value_lower_bound(0.9, 500000, 10, 100, v_bad)
    for iota in (-1.0, math.nan):
        with pytest.raises(IGLearnError, match="iota"):
            theory.eps_d(100, iota)


def test_the_lemma5_summary_gives_the_bound_only_where_its_setting_holds():
    summary = theory.lemma5_summary(0.9, 500000, 10, 100, 0.1, 10.0)
    assert summary["applies"] is True
    assert summary["value_lower_bound"] == pytest.approx(
        theory.lemma5_value_lower_bound(0.9, 500000, 10, 100, 0.1, 10.0))
    assert summary["eps_D"] == pytest.approx(theory.eps_d(500000, 100))
    assert summary["max_importance_weight"] == 10.0 and summary["v_bad"] == 0.1
    # a decoder that follows the action: the lemma's setting does not hold, no bound
    assert theory.lemma5_summary(0.9, 500000, 10, 100, 0.1, 10.0, 0.2)["applies"] is True
    unassumed = theory.lemma5_summary(0.9, 500000, 10, 100, 0.1, 10.0, 0.9)
    assert unassumed["applies"] is False and unassumed["value_lower_bound"] is None
    assert unassumed["eps_D"] == summary["eps_D"]
