"""Eq. 2 against a problem whose quantities are known exactly."""

import itertools

import numpy as np
import pytest
import torch

from iglearn.learners.corrector import corrector_statistic
from iglearn.learners.objective import (
    igl_objective,
    policy_minorant,
    self_normalised_objective,
)

K = 3
LABEL = np.array([0, 2, 1])             # correct action of each of 3 contexts
P_Y_GIVEN_R = {1: (3, 1), 0: (1, 3)}    # counts of feedback values (A, B) given r
PI = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.5, 0.25, 0.25]])
PSI = {0: 0.9, 1: 0.2}                  # decoded reward of feedback A and B


def enumerate_log(logging: np.ndarray):
    """Every (x, a, y) with multiplicity proportional to its probability under ``logging``."""
    rows = []
    for x, a in itertools.product(range(3), range(K)):
        r = int(LABEL[x] == a)
        for y, count in enumerate(P_Y_GIVEN_R[r]):
            rows += [(x, a, y, logging[x, a])] * int(count * logging[x, a] * 4 * 12)
    x, a, y, p = map(np.array, zip(*rows, strict=True))
    return x, a, y, p


def exact_value(pi: np.ndarray) -> float:
    return float(np.mean([pi[x, LABEL[x]] for x in range(3)]))


@pytest.mark.parametrize("baseline", [0.0, 0.5, 0.9])
def test_objective_equals_value_gap_times_delta_psi(baseline):
    # The control variate changes the estimate, not its expectation, whatever the logging.
    delta_psi = (3 * PSI[0] + PSI[1]) / 4 - (PSI[0] + 3 * PSI[1]) / 4
    expected = (exact_value(PI) - 1 / K) * delta_psi
    for logging in (np.full((3, K), 1 / K),
                    np.array([[0.5, 0.25, 0.25], [0.25, 0.25, 0.5], [0.25, 0.5, 0.25]])):
        x, a, y, p = enumerate_log(logging)
        psi = torch.tensor([PSI[v] for v in y], dtype=torch.float64)
        value = igl_objective(torch.tensor(PI[x, a]), psi, torch.tensor(p), K, baseline)
        assert abs(float(value) - expected) < 1e-12


def test_policy_minorant_bounds_the_shifted_objective_and_keeps_its_ranking():
    rng = np.random.default_rng(0)
    n = 1000
    logits = torch.tensor(rng.normal(0, 3, (n, K)), requires_grad=True)
    log_pi = torch.log_softmax(logits, 1)
    action = torch.tensor(rng.integers(0, K, n))
    psi = torch.tensor(rng.random(n))
    p = torch.full((n,), 1 / K, dtype=torch.float64)
    pi_a = log_pi.gather(1, action[:, None])[:, 0].exp()
    # psi log pi + (1 - psi) log(1 - pi) <= 2 pi (psi - 1/2) - psi, sample by sample.
    bound = ((2 * pi_a * (psi - 0.5) - psi) / p).mean()
    assert float(policy_minorant(log_pi, action, psi, p).detach()) <= float(bound.detach())
    # Stable where pi(a|x) is nearly 1: log(1 - pi) from the other actions' mass.
    sure = torch.log_softmax(torch.tensor([[60.0, 0.0, 0.0]], dtype=torch.float64), 1)
    value = policy_minorant(sure, torch.tensor([0]), torch.tensor([0.0], dtype=torch.float64),
                            torch.tensor([1.0], dtype=torch.float64))
    assert abs(float(value) - (np.log(2) - 60)) < 1e-9
    # For one context, its maximiser ranks actions as E[psi | x, a] does.
    q = torch.tensor([0.2, 0.7, 0.4], dtype=torch.float64)
    scores = torch.zeros(K, dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.Adam([scores], lr=0.05)
    every = torch.arange(K)
    for _ in range(2000):
        optimiser.zero_grad()
        log_pi = torch.log_softmax(scores, 0).expand(K, K)
        # Uniform logging: each action once, psi its expected value.
        (-policy_minorant(log_pi, every, q, torch.full((K,), 1 / K))).backward()
        optimiser.step()
    assert torch.equal(torch.argsort(scores.detach()), torch.argsort(q))
    # With psi held fixed, no gradient reaches psi.
    psi = torch.tensor([0.3], dtype=torch.float64, requires_grad=True)
    scores = torch.zeros(1, K, dtype=torch.float64, requires_grad=True)
    policy_minorant(torch.log_softmax(scores, 1), torch.tensor([1]), psi,
                    torch.ones(1, dtype=torch.float64)).backward()
    assert psi.grad is None and scores.grad is not None


def test_corrector_statistic_uses_importance_weights():
    # A logging policy that is right 80% of the time: most logged rewards are 1.
    rng = np.random.default_rng(0)
    n = 20000
    correct = rng.random(n) < 0.8
    p = np.where(correct, 0.8, 0.2 / (K - 1))
    right = torch.tensor(correct, dtype=torch.float64)     # psi = r
    assert float((right > 0.5).double().mean()) > 0.5       # the naive rule would flip it
    stat = float(corrector_statistic(right, torch.tensor(p), K))
    assert abs(stat - 1 / K) < 0.02
    assert float(corrector_statistic(1 - right, torch.tensor(p), K)) > 0.5


def test_self_normalised_objective_ignores_constant_decoders():
    gen = torch.Generator().manual_seed(0)
    pi_a = torch.rand(200, generator=gen) * 0.3
    p = torch.full((200,), 1.0 / K)
    for c in (0.0, 0.3, 1.0):
        psi = torch.full((200,), c)
        assert abs(float(self_normalised_objective(pi_a, psi, p, K))) < 1e-6
        assert abs(float(igl_objective(pi_a, psi, p, K))) > 1e-3 or c == 0.0


def test_self_normalised_objective_is_eq2_under_exact_uniform_logging():
    x, a, y, p = enumerate_log(np.full((3, K), 1.0 / K))
    pi_a = torch.tensor(PI[x, a], dtype=torch.float64)
    psi = torch.tensor([PSI[v] for v in y], dtype=torch.float64)
    prob = torch.tensor(p, dtype=torch.float64)
    assert float(self_normalised_objective(pi_a, psi, prob, K)) == pytest.approx(
        float(igl_objective(pi_a, psi, prob, K)))
