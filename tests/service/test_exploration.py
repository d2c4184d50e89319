"""Every served action comes with the exact probability it was drawn with."""

from __future__ import annotations

import numpy as np
import pytest

from iglearn.service.config import ExplorationSettings
from iglearn.service.exploration import Explorer


def policy(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    p = rng.random((n, k))
    return p / p.sum(1, keepdims=True)


@pytest.mark.parametrize("settings", [
    ExplorationSettings(mode="e2g", warmup=5),
    ExplorationSettings(mode="e2g", warmup=5, exploit="softmax"),
    ExplorationSettings(mode="epsilon", epsilon=0.2),
    ExplorationSettings(mode="epsilon", epsilon=0.2, exploit="softmax"),
])
def test_logged_probabilities_are_the_drawing_distribution(settings):
    rng = np.random.default_rng(0)
    k, n = 4, 4000
    explorer = Explorer(settings, k, 0, np.random.default_rng(1))
    allowed = np.ones((n, k), dtype=bool)
    allowed[: n // 2, 0] = False
    pi = policy(n, k, rng)
    actions, dist, explored, learnable = explorer.draw(pi, allowed)
    np.testing.assert_allclose(dist.sum(1), 1.0)
    assert not (dist[~allowed] > 0).any() and allowed[np.arange(n), actions].all()
    assert (dist[np.arange(n), actions] > 0).all()
    if settings.mode == "e2g":
        uniform = allowed[explored] / allowed[explored].sum(1, keepdims=True)
        np.testing.assert_allclose(dist[explored], uniform)
        assert (learnable == explored).all() and 0 < explored.sum() < n
    else:
        assert dist.min(where=allowed, initial=1.0) >= 0.2 / k - 1e-12 and learnable.all()
    # the empirical frequency of one fixed row's distribution matches it
    row = np.repeat(pi[-1:], 20000, 0)
    actions, dist, explored, _ = explorer.draw(row, np.ones_like(row, dtype=bool))
    groups = [explored, ~explored] if settings.mode == "e2g" else [explored | ~explored]
    for rows in groups:
        if rows.sum() > 2000:
            np.testing.assert_allclose(dist[rows], np.repeat(dist[rows][:1], rows.sum(), 0))
            frequency = np.bincount(actions[rows], minlength=k) / rows.sum()
            np.testing.assert_allclose(frequency, dist[rows][0], atol=0.03)


def test_uniform_before_any_model():
    explorer = Explorer(ExplorationSettings(), 5, 0, np.random.default_rng(0))
    actions, dist, explored, learnable = explorer.draw(None, np.ones((10, 5), dtype=bool))
    np.testing.assert_allclose(dist, 0.2)
    assert explored.all() and learnable.all() and explorer.round == 10


def test_epsilon_falls_linearly_and_continues_after_a_restart():
    settings = ExplorationSettings(mode="epsilon", epsilon=0.4, epsilon_final=0.1,
                                   epsilon_rounds=30)
    np.testing.assert_allclose(settings.epsilon_at(np.array([0, 15, 30, 100])),
                               [0.4, 0.25, 0.1, 0.1])
    k = 4
    greedy = np.tile(np.eye(k)[:1], (40, 1))  # the policy always prefers action 0
    explorer = Explorer(settings, k, 0, np.random.default_rng(0))
    _, dist, _, _ = explorer.draw(greedy, np.ones((40, k), dtype=bool))
    np.testing.assert_allclose(dist[:, 1], settings.epsilon_at(np.arange(40)) / k)
    assert explorer.round == 40
    later = Explorer(settings, k, 40, np.random.default_rng(0))  # after a restart
    _, dist, _, _ = later.draw(greedy[:1], np.ones((1, k), dtype=bool))
    np.testing.assert_allclose(dist[0], [1 - 0.1 + 0.1 / k] + [0.1 / k] * (k - 1))
