"""The noisy-feedback environments: how often the feedback is replaced, and what the noise
digit depends on, measured on draws."""

import numpy as np
import pytest

from iglearn.envs.base import Independence
from iglearn.envs.mnist import digits_environment
from iglearn.envs.named import ENVIRONMENTS, named_environment
from iglearn.envs.noisy import NOISE_DIGITS, NOISE_KINDS, NoisyFeedbackEnvironment
from iglearn.errors import IGLearnError

N = 40_000


def draw(kind: str, p: float, seed: int = 0):
    """N uniform interactions' contexts, actions, rewards, feedback classes and replacement
    flags."""
    env = NoisyFeedbackEnvironment(digits_environment(), kind, p)
    rng = np.random.default_rng(seed)
    contexts = env.contexts(N, rng)
    actions = rng.integers(0, env.n_actions, N)
    reward = env.reward(contexts, actions)
    classes, replaced = env.feedback_classes(contexts, actions, reward, rng)
    return contexts.label, actions, reward, classes, replaced


@pytest.mark.parametrize("kind", NOISE_KINDS)
@pytest.mark.parametrize("p", [0.1, 0.3])
def test_a_share_p_of_the_feedback_is_replaced_whatever_the_reward_and_action(kind, p):
    label, actions, reward, classes, replaced = draw(kind, p)
    assert replaced.mean() == pytest.approx(p, abs=0.01)
    for group in (reward == 1, reward == 0, actions < 5, actions >= 5, label < 5):
        assert replaced[group].mean() == pytest.approx(p, abs=0.03)
    kept = ~replaced
    np.testing.assert_array_equal(classes[kept], reward[kept].astype(np.int64))
    assert np.isin(classes[replaced], NOISE_DIGITS).all()


def test_independent_noise_is_independent_of_context_action_and_reward():
    label, actions, reward, classes, replaced = draw("independent", 0.3, seed=1)
    noise = classes[replaced]
    overall = np.bincount(noise, minlength=10)[NOISE_DIGITS] / len(noise)
    np.testing.assert_allclose(overall, 1 / len(NOISE_DIGITS), atol=0.01)
    for by in (actions, label):
        for value in range(10):
            rows = noise[by[replaced] == value]
            share = np.bincount(rows, minlength=10)[NOISE_DIGITS] / len(rows)
            np.testing.assert_allclose(share, overall, atol=0.05)
    rewarded = noise[reward[replaced] == 1]
    np.testing.assert_allclose(np.bincount(rewarded, minlength=10)[NOISE_DIGITS] / len(rewarded),
                               overall, atol=0.05)


@pytest.mark.parametrize(("kind", "rule"), [
    ("action", lambda label, a: 2 + a % 8),
    ("context", lambda label, a: 2 + label % 8),
    ("both", lambda label, a: 2 + (label + a) % 8)])
def test_tied_noise_is_the_digit_its_rule_names(kind, rule):
    label, actions, _, classes, replaced = draw(kind, 0.2, seed=2)
    np.testing.assert_array_equal(classes[replaced], rule(label, actions)[replaced])


def test_p_zero_is_the_2021_task_and_the_log_holds_images():
    env = NoisyFeedbackEnvironment(digits_environment(), "both", 0.0)
    assert env.independence is Independence.FULL
    log = env.log(500, np.random.default_rng(3))
    assert log.feedback.shape == (500, env.feedback_dim)
    assert NoisyFeedbackEnvironment(digits_environment(), "action",
                                    0.1).independence is Independence.ACTION_INCLUSIVE


def test_every_kind_has_a_simulate_name():
    for kind in NOISE_KINDS:
        for dataset in ("mnist", "digits"):
            assert f"noisy-{kind}-{dataset}" in ENVIRONMENTS
    env = named_environment("noisy-context-digits", noise=0.2)
    assert isinstance(env, NoisyFeedbackEnvironment) and (env.kind, env.p) == ("context", 0.2)


@pytest.mark.parametrize(("kind", "p"), [("letters", 0.1), ("independent", 1.5)])
def test_settings_that_cannot_work_are_refused(kind, p):
    with pytest.raises(IGLearnError):
        NoisyFeedbackEnvironment(digits_environment(), kind, p)
