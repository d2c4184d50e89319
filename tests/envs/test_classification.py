"""Feedback-first uniform logs: the joint law of ordinary uniform play, coupled across
environments with the same feedback marginal."""

import numpy as np
import pytest

from iglearn.envs.classification import ArraySource, ClassificationEnvironment, LabelFeedback

K = 10


def one_hot_environment(on_reward, on_no_reward):
    """Contexts and feedback are one-hot labels, so a log's feedback class is its argmax;
    context labels are deliberately unbalanced."""
    labels = np.repeat(np.arange(K), np.arange(1, K + 1))
    source = ArraySource(np.eye(K, dtype=np.float32)[labels], labels)
    return ClassificationEnvironment(source, LabelFeedback(source, on_reward, on_no_reward),
                                     (np.eye(K), np.arange(K)), K)


def joint(log):
    """Empirical P(context label, action, feedback class)."""
    cells = (log.label * K + log.action) * K + log.feedback.argmax(1)
    return np.bincount(cells, minlength=K ** 3).reshape(K, K, K) / len(log)


def test_uniform_play_marginal_and_posterior():
    env = one_hot_environment({1: 0.7, 2: 0.3}, {0: 0.5, 2: 0.5, 5: 0.0})
    labels, marginal, p_reward = env.feedback_model.uniform_play(K)
    np.testing.assert_array_equal(labels, [0, 1, 2])  # class 5 has no mass
    np.testing.assert_allclose(marginal, [0.45, 0.07, 0.03 + 0.45])
    np.testing.assert_allclose(p_reward, [0, 1, 0.03 / 0.48])


def test_feedback_first_log_has_the_joint_law_of_uniform_play():
    on_reward, on_no_reward = {1: 0.7, 2: 0.3}, {0: 0.5, 2: 0.5, 5: 0.0}
    env = one_hot_environment(on_reward, on_no_reward)
    n = 200_000
    p_label = np.arange(1, K + 1) / np.arange(1, K + 1).sum()
    mixture = {r: np.bincount(list(m), weights=list(m.values()), minlength=K) / sum(m.values())
               for r, m in ((1, on_reward), (0, on_no_reward))}
    expected = np.empty((K, K, K))  # P(label) * (1/K) * P(feedback class | r = 1{a = label})
    for c in range(K):
        for a in range(K):
            expected[c, a] = p_label[c] / K * mixture[int(a == c)]
    tolerance = 5 * np.sqrt(expected * (1 - expected) / n) + 1e-4
    for log in (env.feedback_first_log(n, 0), env.log(n, 0)):
        assert np.all(np.abs(joint(log) - expected) <= tolerance)
        assert log.reward.mean() == pytest.approx(1 / K, abs=0.003)
        np.testing.assert_array_equal(log.reward, log.action == log.label)
        np.testing.assert_allclose(log.probability, 1 / K)
        # the action is uniform given the context
        by_label = np.stack([np.bincount(log.action[log.label == c], minlength=K)
                             / (log.label == c).sum() for c in range(K)])
        np.testing.assert_allclose(by_label, 1 / K, atol=0.02)


def test_feedback_is_identical_across_environments_with_the_same_marginal():
    # ENV(1) and ENV(2) of Appendix B, the second with shuffled keys and a zero-weight class.
    one = one_hot_environment({2: 1.0}, {0: 8.0, 1: 1.0})
    two = one_hot_environment({1: 1.0}, {2: 1.0, 7: 0.0, 0: 8.0})
    log1, log2 = one.feedback_first_log(5000, 4), two.feedback_first_log(5000, 4)
    np.testing.assert_array_equal(log1.feedback, log2.feedback)
    np.testing.assert_array_equal(log1.context, log2.context)
    assert not np.array_equal(log1.reward, log2.reward)
    np.testing.assert_array_equal(log1.feedback[log1.reward > 0].argmax(1), 2)
    np.testing.assert_array_equal(log2.feedback[log2.reward > 0].argmax(1), 1)
    assert not np.array_equal(log1.feedback, one.feedback_first_log(5000, 5).feedback)
