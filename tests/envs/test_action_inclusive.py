"""Feedback drawn from (contexts, actions, reward): the 2021 environments unchanged, each
environment's declared independence, action-inclusive digits and the simulated BCI."""

import hashlib

import numpy as np
import pytest

from iglearn import IGLearnError
from iglearn.envs import (
    ActionInclusiveEnvironment,
    BCIEnvironment,
    ClassificationEnvironment,
    Independence,
    action_inclusive_environment,
    digits_environment,
    shifted_digit,
)
from iglearn.envs.section6 import section6_environments
from tests.conftest import real_mnist_dir, requires_mnist


def log_digest(log) -> str:
    """SHA256 of a log's arrays (name, dtype, shape and bytes of each)."""
    digest = hashlib.sha256()
    for name in ("context", "action", "probability", "feedback", "reward", "label"):
        array = np.ascontiguousarray(getattr(log, name))
        for part in (name, str(array.dtype), str(array.shape)):
            digest.update(part.encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def test_the_2021_environments_logs_are_unchanged():
    # Digests of logs drawn before feedback could depend on the context and the action. These
    # logs involve integer draws, comparisons and copies of scikit-learn's digits (divided by
    # 16, exact), no arithmetic whose rounding could differ between x86-64 CPUs.
    env = digits_environment()
    families = section6_environments("digits")
    logs = {
        "digits": env.log(500, 0),
        "theorem3 env 3": families["theorem3"]["env 3"].log(500, 1),
        "ENV(1)": families["env12"]["ENV(1)"].log(500, 2),
        "ENV(2) feedback first": families["env12"]["ENV(2)"].feedback_first_log(500, 3),
    }
    expected = {
        "digits": "8aec07139f8b3cd67f8972b6606e07dcc532f2219b28817f40f9d626d2f4ac88",
        "theorem3 env 3": "65f81f04fd82e18a71fe25b3f6e019602f9adf8d19a5e3caadabd6547b845d7b",
        "ENV(1)": "1742151991091d8a16f1baf5499642cd30c3e1221b80b53dcbc80dbb8b32eaa8",
        "ENV(2) feedback first":
            "e322b1e9a4911a4355b9c533bf38b550f932fdd901e069a65165d42ec45bfb42",
    }
    assert {name: log_digest(log) for name, log in logs.items()} == expected


def test_every_environment_declares_its_independence():
    assert ClassificationEnvironment.independence is Independence.FULL
    assert ActionInclusiveEnvironment.independence is Independence.ACTION_INCLUSIVE
    assert BCIEnvironment.independence is Independence.ACTION_INCLUSIVE


def test_classification_feedback_reads_the_reward_alone():
    env = digits_environment()
    shown = env.contexts(300, np.random.default_rng(0))
    reward = np.random.default_rng(1).integers(0, 2, 300).astype(np.float32)
    other = env.contexts(300, np.random.default_rng(2))
    a = env.feedback(shown, np.zeros(300, np.int64), reward, np.random.default_rng(3))
    b = env.feedback(other, np.full(300, 7), reward, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_shifted_digit_is_the_papers_rule():
    actions = np.arange(10)
    np.testing.assert_array_equal(shifted_digit(actions, np.ones(10)), (actions + 3) % 10)
    np.testing.assert_array_equal(shifted_digit(actions, np.zeros(10)), (actions + 7) % 10)


def feedback_classes(env: ActionInclusiveEnvironment, feedback: np.ndarray) -> np.ndarray:
    """The class of each feedback image, looked up among the source's images (every digits
    feedback is a copy of one of them)."""
    source = env.feedback_model.source
    label_of = {row.tobytes(): label for row, label in zip(source.features, source.labels,
                                                           strict=True)}
    return np.array([label_of[row.tobytes()] for row in feedback])


def test_action_inclusive_digits_show_the_digit_of_the_action_and_the_reward():
    env = action_inclusive_environment("digits")
    assert (env.n_actions, env.context_dim, env.feedback_dim) == (10, 64, 64)
    log = env.log(3000, 0)
    classes = feedback_classes(env, log.feedback)
    np.testing.assert_array_equal(classes, (log.action + 6 * log.reward.astype(int) - 3) % 10)
    # Every digit follows right and wrong actions alike: the digit alone says nothing of r.
    for digit in range(10):
        shown = log.reward[classes == digit]
        assert 0 < shown.mean() < 1
    np.testing.assert_array_equal(env.test_set()[0], digits_environment().test_set()[0])


def test_action_inclusive_logs_depend_on_the_seed_alone():
    env = action_inclusive_environment("digits")
    a, b, c = env.log(500, 4), env.log(500, 4), env.log(500, 5)
    assert log_digest(a) == log_digest(b) != log_digest(c)


def test_unknown_dataset_names_the_choices():
    with pytest.raises(IGLearnError, match="'mnist' or 'digits'"):
        action_inclusive_environment("cifar")


@requires_mnist
def test_action_inclusive_mnist_shapes():
    env = action_inclusive_environment("mnist", real_mnist_dir())
    log = env.log(200, 0)
    assert log.feedback.shape == (200, 784) and env.test_set()[0].shape == (10000, 784)


def test_bci_patterns_come_from_the_seed():
    a, b, c = BCIEnvironment(seed=1), BCIEnvironment(seed=1), BCIEnvironment(seed=2)
    np.testing.assert_array_equal(a.patterns.imagination, b.patterns.imagination)
    np.testing.assert_array_equal(a.test_set()[0], b.test_set()[0])
    assert not np.allclose(a.patterns.error, c.patterns.error)
    assert a.patterns.imagination.shape == a.patterns.perception.shape == (3, 64)
    x, y = a.test_set()
    assert x.shape == (3000, 64) and set(np.unique(y)) == {0, 1, 2}


def test_bci_feedback_is_the_perception_of_the_display_plus_the_error_when_wrong():
    env = BCIEnvironment(n_symbols=5, dim=16, noise=0.0)
    shown = env.contexts(400, np.random.default_rng(0))
    np.testing.assert_allclose(shown.features, env.patterns.imagination[shown.label], atol=1e-7)
    actions = np.random.default_rng(1).integers(0, 5, 400)
    reward = env.reward(shown, actions)
    assert 0 < reward.mean() < 1
    feedback = env.feedback(shown, actions, reward, np.random.default_rng(2))
    expected = env.patterns.perception[actions] + (1 - reward)[:, None] * env.patterns.error
    np.testing.assert_allclose(feedback, expected, atol=1e-7)


def test_bci_noise_level_sets_how_separable_the_symbols_are():
    accuracy = []
    for noise in (0.01, 0.1, 0.2):
        env = BCIEnvironment(noise=noise)
        x, y = env.test_set()
        distance = ((x[:, None, :] - env.patterns.imagination[None]) ** 2).sum(-1)
        accuracy.append((distance.argmin(1) == y).mean())
    assert accuracy[0] > 0.99 > accuracy[1] > 0.7 > accuracy[2] > 1 / 3 + 0.1


def test_bci_rejects_bad_settings():
    with pytest.raises(IGLearnError, match="n_symbols"):
        BCIEnvironment(n_symbols=1)
    with pytest.raises(IGLearnError, match="noise"):
        BCIEnvironment(noise=-0.1)
