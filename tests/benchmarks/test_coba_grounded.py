"""benchmarks/coba_grounded.py: a tiny grid end to end, through coba's registry."""

from __future__ import annotations

import numpy as np
import pytest

from tests.benchmarks.conftest import benchmark_module

pytest.importorskip("coba")


@pytest.fixture(scope="module")
def coba_grounded():
    with benchmark_module("coba_grounded") as module:
        yield module


def test_every_learner_plays_both_user_settings(coba_grounded):
    rows = coba_grounded.run(["linear"], 150, 1, users=4, words=6, good=2)
    learners = [*coba_grounded.IGL_LEARNERS, coba_grounded.RANDOM, coba_grounded.CB]
    assert len(rows) == 2 * len(learners)
    assert (rows["interactions"] == 150).all() and (rows["cpu_seconds"] > 0).all()
    assert rows["reward"].between(0, 1).all()
    table = coba_grounded.summary(rows)
    assert set(table["users"]) == {"normal", "half swapped"}
    random = table[table["learner"] == coba_grounded.RANDOM]
    cb = table[table["learner"] == coba_grounded.CB]
    np.testing.assert_allclose(random["normalised"], 0.0)
    np.testing.assert_allclose(cb["normalised"], 1.0)
    assert np.isfinite(table["cpu_s_per_1000"]).all()


def test_an_unknown_task_is_refused(coba_grounded):
    with pytest.raises(SystemExit, match="unknown task 'mnist'"):
        coba_grounded.task("mnist", 10, 1)


def test_digits_is_a_ten_action_task_of_the_image_label(coba_grounded):
    pytest.importorskip("sklearn")
    interactions = list(coba_grounded.task("digits", 30, 2)[0].read())
    assert len(interactions) == 30
    for interaction in interactions:
        actions, rewards = interaction["actions"], interaction["rewards"]
        assert actions == list(range(10)) and len(interaction["context"]) == 64
        assert min(interaction["context"]) >= 0 and max(interaction["context"]) <= 1
        assert sorted(rewards(action) for action in actions) == [0.0] * 9 + [1.0]
    assert interactions == list(coba_grounded.task("digits", 30, 2)[0].read())  # seeded
