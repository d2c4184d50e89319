import numpy as np
import pytest

from iglearn.envs import digits_environment
from iglearn.envs.classification import LabelFeedback
from iglearn.envs.section6 import (
    FAMILIES,
    env_feedback,
    family_environments,
    theorem3_feedback,
    uniform_play_marginal,
    with_feedback,
)
from iglearn.errors import IGLearnError


class RecordingSource:
    """Wraps a labelled source and records the class of every feedback example drawn."""

    def __init__(self, source):
        self.source = source
        self.dim = source.dim
        self.labels: list[np.ndarray] = []

    def draw(self, n, rng, label=None):
        features, labels = self.source.draw(n, rng, label)
        self.labels.append(labels)
        return features, labels


@pytest.fixture(scope="module")
def base():
    return digits_environment()


def test_paper_mixtures():
    assert theorem3_feedback(3) == ({3: 1.0}, {j: 1 / 9 for j in range(10) if j != 3})
    assert env_feedback(1) == ({2: 1.0}, {0: 8.0, 1: 1.0})
    assert env_feedback(2) == ({1: 1.0}, {0: 8.0, 2: 1.0})
    with pytest.raises(ValueError):
        env_feedback(3)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_uniform_play_marginals_are_identical_within_a_family_analytically(family):
    marginals = [uniform_play_marginal(f) for f in FAMILIES[family].values()]
    for marginal in marginals:
        assert sum(marginal.values()) == pytest.approx(1.0)
        assert marginal.keys() == marginals[0].keys()
        for label, p in marginal.items():
            assert p == pytest.approx(marginals[0][label], abs=1e-12)
    expected = ({d: 0.1 for d in range(10)} if family == "theorem3"
                else {0: 0.8, 1: 0.1, 2: 0.1})
    assert marginals[0] == pytest.approx(expected)


def test_marginals_differ_when_play_is_not_uniform():
    # The identity is a property of uniform play (P(r = 1) = 1/K), not of the mixtures alone.
    a = uniform_play_marginal(env_feedback(1), n_actions=2)
    b = uniform_play_marginal(env_feedback(2), n_actions=2)
    assert a[1] != pytest.approx(b[1])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_uniform_play_marginals_are_identical_within_a_family_empirically(base, family):
    n = 20000
    counts = {}
    for name, feedback in FAMILIES[family].items():
        recorder = RecordingSource(base.feedback_model.source)
        env = with_feedback(base, feedback)
        env.feedback_model = LabelFeedback(recorder, *feedback)
        log = env.log(n, np.random.default_rng(1))
        labels = np.concatenate(recorder.labels)
        assert len(labels) == n
        # r = 1 shows the rewarded class only; the feedback follows the family's mixtures.
        rewarded = next(iter(feedback[0]))
        assert log.reward.mean() == pytest.approx(0.1, abs=0.01)
        counts[name] = np.bincount(labels, minlength=10) / n
        assert counts[name][rewarded] == pytest.approx(0.1, abs=0.01)
    expected = np.zeros(10)
    for label, p in uniform_play_marginal(next(iter(FAMILIES[family].values()))).items():
        expected[label] = p
    for frequencies in counts.values():
        np.testing.assert_allclose(frequencies, expected, atol=0.012)


def test_family_environments_share_contexts_reward_and_test_set(base):
    envs = family_environments("env12", base)
    one, two = envs["ENV(1)"], envs["ENV(2)"]
    log1, log2 = one.log(500, 3), two.log(500, 3)
    np.testing.assert_array_equal(log1.context, log2.context)
    np.testing.assert_array_equal(log1.reward, log2.reward)
    np.testing.assert_array_equal(one.test_set()[1], base.test_set()[1])
    assert not np.array_equal(log1.feedback, log2.feedback)
    with pytest.raises(IGLearnError, match="unknown Section 6 family"):
        family_environments("env3", base)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_feedback_first_logs_are_identical_in_feedback_across_a_family(base, family):
    logs = [env.feedback_first_log(3000, 7) for env in family_environments(family, base).values()]
    for log in logs:
        np.testing.assert_array_equal(log.feedback, logs[0].feedback)
        np.testing.assert_array_equal(log.context, logs[0].context)
        np.testing.assert_array_equal(log.reward, log.action == log.label)
        assert log.reward.mean() == pytest.approx(0.1, abs=0.02)
    assert len({log.reward.tobytes() for log in logs}) == len(logs)  # the rewards differ
