"""play(): the act / reward / feedback / learn loop, its checkpoints and its context stream."""

import numpy as np
import pytest

from iglearn.envs import digits_environment
from iglearn.envs.play import Checkpoint, ContextStream, play
from iglearn.errors import IGLearnError
from iglearn.learners import OnlineContextualBandit, UniformLearner
from iglearn.learners.schedules import PaperSchedule


@pytest.fixture(scope="module")
def env():
    return digits_environment()


class Recorder:
    """A learner that plays the label's action on every third context and action 0 on the
    others, acts on at most 7 contexts at a time, and records what it was shown and taught."""

    def __init__(self):
        self.round_ = self.interactions_ = 0
        self.blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.labels: np.ndarray | None = None

    def block_size(self, stop_round=None):
        return 7 if stop_round is None else max(1, min(7, stop_round - self.round_))

    def act_batch(self, contexts):
        n = len(contexts)
        actions = np.where(np.arange(self.interactions_, self.interactions_ + n) % 3 == 0,
                           self.labels[self.interactions_:self.interactions_ + n], 0)
        self.round_ += n
        self.interactions_ += n
        return actions, np.ones(n)

    def learn_batch(self, contexts, actions, probabilities, feedback):
        self.blocks.append((contexts, actions, np.asarray(feedback)))


def test_checkpoints_stop_the_learner_where_asked_and_report_the_running_reward(env):
    stream = ContextStream(env, np.random.default_rng(0))
    learner = Recorder()
    learner.labels = stream.read(0, 100).label
    seen = []
    points = play(learner, env, 50, np.random.default_rng(1), learns_from="reward",
                  contexts=stream, checkpoints=[10, 25, 25, 80, 0],
                  on_checkpoint=lambda p: seen.append((p, learner.round_)))
    assert [p.round for p in points] == [10, 25, 50] == [r for _, r in seen]
    assert [p for p, _ in seen] == points
    rewards = np.concatenate([feedback for *_, feedback in learner.blocks])
    assert len(rewards) == 50 and set(np.unique(rewards)) <= {0.0, 1.0}
    assert max(len(actions) for _, actions, _ in learner.blocks) == 7
    # Every third action is the label's (reward 1); action 0 is rewarded on a 0 only.
    expected = np.where(np.arange(50) % 3 == 0, 1.0, learner.labels[:50] == 0)
    np.testing.assert_array_equal(rewards, expected)
    for point in points:
        assert point.interactions == point.round
        assert point.total_reward == expected[:point.round].sum()
        assert point.average_reward == pytest.approx(point.total_reward / point.round)


def test_feedback_is_drawn_from_the_reward_and_contexts_from_rng_without_a_stream(env):
    learner = Recorder()
    learner.labels = np.zeros(30, dtype=np.int64)
    [point] = play(learner, env, 30, np.random.default_rng(2))
    assert isinstance(point, Checkpoint) and point.round == 30
    feedback = np.concatenate([f for *_, f in learner.blocks])
    contexts = np.concatenate([c for c, *_ in learner.blocks])
    assert feedback.shape == (30, env.feedback_dim) and contexts.shape == (30, env.context_dim)
    assert len(np.unique(contexts, axis=0)) > 20  # fresh contexts, not one repeated


def test_a_stream_shows_every_learner_the_same_contexts(env):
    stream = ContextStream(env, np.random.default_rng(3), chunk=64)
    whole = stream.read(0, 200)
    assert len(whole) == 200
    np.testing.assert_array_equal(stream.read(150, 30).features, whole.features[150:180])
    shown = []
    for seed in (0, 1):
        learner = UniformLearner(env.n_actions, seed)
        learner.learn_batch = lambda contexts, *_: shown.append(contexts)
        play(learner, env, 120, np.random.default_rng(seed), contexts=stream)
    first, second = np.concatenate(shown[:len(shown) // 2]), np.concatenate(shown[len(shown) // 2:])
    np.testing.assert_array_equal(first, whole.features[:120])
    np.testing.assert_array_equal(second, whole.features[:120])


def test_uniform_play_earns_one_in_k_and_cb_learns(env):
    [uniform] = play(UniformLearner(10, seed=0), env, 3000, np.random.default_rng(0))
    assert uniform.interactions == 3000 and abs(uniform.average_reward - 0.1) < 0.02
    learner = OnlineContextualBandit(10, env.context_dim, PaperSchedule(iota=10.0,
                                                                        warmup_rounds=500),
                                     seed=0)
    points = play(learner, env, 700, np.random.default_rng(0), learns_from="reward",
                  checkpoints=range(100, 700, 100))
    assert [p.round for p in points] == list(range(100, 701, 100))
    assert points[-1].interactions == learner.interactions_ > 700  # exploitation steps
    assert points[-1].average_reward > 2 * uniform.average_reward
    assert learner.accuracy(*env.test_set()) > 0.6


def test_a_learner_that_has_played_goes_on_and_bad_arguments_are_explained(env):
    learner = UniformLearner(10, seed=0)
    play(learner, env, 40, np.random.default_rng(0))
    assert play(learner, env, 40, np.random.default_rng(0)) == []
    [point] = play(learner, env, 100, np.random.default_rng(0))
    assert point.round == 100 and learner.interactions_ == 100
    with pytest.raises(IGLearnError, match="learns_from"):
        play(learner, env, 200, np.random.default_rng(0), learns_from="labels")
    with pytest.raises(IGLearnError, match="rounds must be positive"):
        play(learner, env, 0, np.random.default_rng(0))


def test_a_learner_whose_act_batch_counts_nothing_is_refused_not_played_forever(env):
    """A learner of one's own that acts without adding to interactions_ (the loop reads
    contexts by it and stops at a round) made play loop forever; it is refused at once."""

    class Forgetful(Recorder):
        def act_batch(self, contexts):
            return np.zeros(len(contexts), dtype=np.int64), np.full(len(contexts), 0.1)

    with pytest.raises(IGLearnError, match=r"Forgetful acted on and learned from 7 contexts but "
                                           r"its counters went from round_ 0, interactions_ 0 "
                                           r"to 0, 0: its act_batch \(or learn_batch\) must"):
        play(Forgetful(), env, 20, np.random.default_rng(0))


class _Unchecked(UniformLearner):
    """A learner of one's own whose act_batch returns an action outside [0, K) or a
    probability of 0."""

    def __init__(self, action: int, probability: float):
        super().__init__(10, seed=0)
        self.action, self.probability = action, probability

    def act_batch(self, contexts):
        super().act_batch(contexts)
        n = len(contexts)
        return np.full(n, self.action), np.full(n, self.probability)


@pytest.mark.parametrize(("action", "probability", "message"), [
    (100, 0.1, r"_Unchecked.act_batch: field 'action' holds 100 at row 0, outside \[0, 10\)"),
    (0, 0.0, r"_Unchecked.act_batch: field 'probability'"),
])
def test_play_checks_what_a_learner_of_ones_own_returns(action, probability, message):
    """What a learner logs must stay valid for off-policy learning; before, such a learner
    played on without a word and reported an average reward of 0."""
    with pytest.raises(IGLearnError, match=message):
        play(_Unchecked(action, probability), digits_environment(), 50,
             np.random.default_rng(0))
