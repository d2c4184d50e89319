"""The personalised environments: VW's IGL simulator, generalised, and the grounded
transform."""

import numpy as np
import pytest

from iglearn.envs.base import Independence
from iglearn.envs.mnist import digits_environment
from iglearn.envs.named import named_environment
from iglearn.envs.personalised import (
    GroundedEnvironment,
    PersonalisedSimulator,
    Vocabulary,
    random_simulator,
    vw_simulator,
)


def test_vw_simulator_follows_vw_rules():
    env = vw_simulator()
    assert env.independence is Independence.PERSONALISED
    log = env.log(20000, seed=0)
    user = log.context[:, :2].argmax(1)
    token = np.array(env.tokens)[log.feedback.argmax(1)]
    tom, anna = user == 0, user == 1
    # Tom enjoys politics (0) and hates music (2); Anna enjoys music and hates sports (1)
    assert (log.reward[tom & (log.action == 0)] == 1).all()
    assert (log.reward[tom & (log.action == 2)] == -1).all()
    assert (log.reward[anna & (log.action == 2)] == 1).all()
    assert (log.reward[anna & (log.action == 1)] == -1).all()
    assert set(token[log.reward == 1]) == {"click", "like"}
    assert set(token[log.reward == 0]) == {"none"}
    hated = token[log.reward == -1]
    assert set(hated) == {"skip", "dislike"} and 0.06 < (hated == "dislike").mean() < 0.14
    # the flag is exactly the dislike
    np.testing.assert_array_equal(log.definitely_bad, token == "dislike")
    contexts, labels = env.test_set()
    assert len(contexts) == 4 and set(labels) == {0, 2}


def test_continuous_feedback_embeds_tokens_with_noise():
    env = vw_simulator(embedding_dim=6, noise=0.1, seed=3)
    log = env.log(500, seed=1)
    assert log.feedback.shape == (500, 6)
    # each interaction is near one of the five token embeddings
    distance = ((log.feedback[:, None] - env._embedding[None]) ** 2).sum(-1).min(1)
    assert distance.max() < 6 * (0.1 * 4) ** 2


def test_per_user_vocabularies_give_tokens_opposite_meanings():
    env = random_simulator(n_users=4, n_topics=6, seed=0)
    log = env.log(20000, seed=0)
    user = log.context[:, :4].argmax(1)
    click = np.array(env.tokens)[log.feedback.argmax(1)] == "click"
    assert (log.reward[click & (user % 2 == 0)] == 1).all()
    assert (log.reward[click & (user % 2 == 1)] == -1).all()


def test_simulator_checks_its_vocabulary():
    bad = Vocabulary(enjoy={"a": 0.5}, hate={"b": 1.0}, neutral={"c": 1.0})
    with pytest.raises(Exception, match="sum to one"):
        PersonalisedSimulator([0], [1], bad, 3)


def test_grounded_users_swap_good_and_bad_words():
    env = GroundedEnvironment(digits_environment(), n_users=4, n_normal=2, n_words=6,
                              n_good=2)
    log = env.log(4000, seed=0)
    user = log.context[:, -4:].argmax(1)
    good = log.feedback.argmax(1) < 2
    right = log.reward == 1
    np.testing.assert_array_equal(good[user < 2], right[user < 2])
    np.testing.assert_array_equal(good[user >= 2], ~right[user >= 2])
    assert env.test_set()[0].shape[1] == env.context_dim


@pytest.mark.parametrize("name", ["personalised", "personalised-continuous",
                                  "personalised-many", "grounded-digits"])
def test_named(name):
    env = named_environment(name)
    log = env.log(50, seed=0)
    assert log.feedback.shape[1] == env.feedback_dim
    assert env.independence is Independence.PERSONALISED
