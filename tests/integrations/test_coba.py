"""iglearn's learners inside real coba Experiments, through coba's registry."""

import time

import numpy as np
import pytest

coba = pytest.importorskip("coba")
from coba import DiscreteReward  # noqa: E402
from coba.registry import CobaRegistry, JsonMakerV2  # noqa: E402

from iglearn.errors import IGLearnError  # noqa: E402
from iglearn.integrations.coba import (  # noqa: E402
    AIIGLLearner,
    CobaLearner,
    E2GLearner,
    IGLPLearner,
    RegressionCBLearner,
    UniformIGLLearner,
    e2g,
    feedback_values,
    regression_cb,
    uniform,
)
from iglearn.learners.e2g import OnlineContextualBandit  # noqa: E402
from iglearn.learners.iglp import OnlineIGLP  # noqa: E402
from iglearn.learners.regression import OnlineRegressionCB  # noqa: E402

K, WORDS, USERS = 3, 6, 4


class Blobs(coba.Environment):
    """Three well separated Gaussian classes in five dimensions as a bandit environment: the
    reward is 1 for the class's action (re-iterable, as coba requires)."""

    def __init__(self, n: int, seed: int):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, K, n)
        self.contexts = (3.0 * np.eye(K, 5)[self.labels] + rng.normal(size=(n, 5))).tolist()

    @property
    def params(self) -> dict:
        return {"env": "blobs", "n": len(self.labels)}

    def read(self):
        for context, label in zip(self.contexts, self.labels, strict=True):
            yield {"context": context, "actions": list(range(K)),
                   "rewards": DiscreteReward(list(range(K)), [float(a == label)
                                                              for a in range(K)])}


def mean_rewards(result) -> tuple:
    frame = result.interactions.to_pandas()
    return frame, frame.groupby("learner_id")["reward"].mean()


def test_e2g_beats_uniform_play_in_a_coba_experiment():
    environment = coba.Environments.from_custom(Blobs(1500, seed=7)).grounded(
        USERS, USERS, WORDS, 2, seed=1)
    learners = [E2GLearner(warmup=300, iota=1.0, seed=0), coba.RandomLearner(seed=1)]
    result = coba.Experiment(environment, learners, coba.SequentialIGL()).run(
        quiet=True, processes=1)
    frame, reward = mean_rewards(result)
    late = frame[frame["index"] > 1000].groupby("learner_id")["reward"].mean()
    assert len(frame) == 2 * 1500
    assert reward[1] == pytest.approx(1 / K, abs=0.06)        # coba's uniform baseline
    assert late[0] > 0.8 > late[1] + 0.3                       # E2G exploits what it learnt
    assert reward[0] > reward[1] + 0.2


def test_registered_learners_learn_from_coba_grounded_feedback_and_are_scored():
    """Every IGL learner by its registered name (as a JSON experiment names it), with users
    and words read from SequentialIGL's contexts and feedback, on 400 grounded interactions;
    then an off-policy evaluation (IPS) that scores each learner's policy."""
    start = time.process_time()
    names = [("iglearn.IGLP", {"seed": 0}), ("iglearn.IGLP", {"exploration": "igw", "seed": 0}),
             ("iglearn.E2G", {"warmup": 100, "iota": 1.0, "update_every": 25, "seed": 0}),
             ("iglearn.AIIGL", {"warmup": 100, "iota": 1.0, "update_every": 25, "seed": 0})]
    learners = [JsonMakerV2().make({name: settings}) for name, settings in names]
    environment = coba.Environments.from_custom(Blobs(400, seed=3)).grounded(
        USERS, USERS, WORDS, 2, seed=2)
    result = coba.Experiment(environment, [*learners, coba.RandomLearner(seed=1)],
                             coba.SequentialIGL()).run(quiet=True, processes=1)
    frame, reward = mean_rewards(result)
    assert len(frame) == 5 * 400
    assert reward[4] == pytest.approx(1 / K, abs=0.08)
    for learner_id, margin in ((0, 0.1), (1, 0.1), (2, 0.25), (3, 0.25)):
        assert reward[learner_id] > reward[4] + margin, (learner_id, reward.to_dict())
    table = result.learners.to_pandas().set_index("learner_id")
    assert table.loc[0, "family"] == "iglearn.IGLP" and table.loc[1, "exploration"] == "igw"

    # off-policy: learn from a uniform log of the true reward, evaluated by IPS with score()
    logged = coba.Environments.from_custom(Blobs(300, seed=4)).logged(coba.RandomLearner())
    scored = [RegressionCBLearner(seed=0),
              *(JsonMakerV2().make({name: {**settings, "users": None, "words": None}})
                for name, settings in names)]
    result = coba.Experiment(logged, scored, coba.SequentialCB(learn="off", eval="ips")).run(
        quiet=True, processes=1)
    frame, reward = mean_rewards(result)
    assert len(frame) == 5 * 300 and np.isfinite(frame["reward"]).all()
    assert (reward > 0.4).all(), reward.to_dict()  # IPS values above uniform play's 1/3
    assert time.process_time() - start < 60


def test_iglp_grounds_words_per_user_when_half_the_users_swap_them():
    """coba's grounded users, half of them swapping good and bad words: iglearn.IGLP by its
    registered name, grounding each word per user (the default), learns; with one meaning
    per word (personal=False) a word says nothing about the action."""
    start = time.process_time()
    environment = coba.Environments.from_custom(Blobs(1200, seed=5)).grounded(
        USERS, USERS // 2, WORDS, 2, seed=3)
    learners = [JsonMakerV2().make({"iglearn.IGLP": settings})
                for settings in ({"seed": 0}, {"seed": 0, "personal": False})]
    result = coba.Experiment(environment, [*learners, coba.RandomLearner(seed=1)],
                             coba.SequentialIGL()).run(quiet=True, processes=1)
    frame, _ = mean_rewards(result)
    late = frame[frame["index"] >= 600].groupby("learner_id")["reward"].mean()
    assert late[0] > 0.75 and late[0] > late[1] + 0.2 and late[0] > late[2] + 0.3, late
    table = result.learners.to_pandas().set_index("learner_id")
    assert bool(table.loc[0, "personal"]) and not bool(table.loc[1, "personal"])
    # the defaults: per-user grounding with IGW; one meaning per word with epsilon-greedy
    assert table.loc[0, "exploration"] == "igw" and table.loc[1, "exploration"] == "epsilon"
    assert time.process_time() - start < 30


def test_iglp_takes_its_estimator_by_name_and_refuses_an_unknown_one():
    learner = JsonMakerV2().make({"iglearn.IGLP": {"seed": 0, "estimator": "zhang"}})
    assert learner.params["estimator"] == "zhang"
    assert IGLPLearner().params["estimator"] == "auto"
    with pytest.raises(IGLearnError, match="unknown estimator 'ramp'; choose one of step"):
        IGLPLearner(estimator="ramp")


@pytest.mark.parametrize("actions, estimator", [(3, "lipschitz"), (4, "zhang"), (5, "zhang")])
def test_iglp_decodes_from_the_feedback_with_zhangs_ramp_from_four_actions(actions, estimator):
    """The default estimator 'auto' is Zhang et al.'s ramp where its start 0.3 exceeds 1/K,
    iglearn's ramp below; the default decodes from the feedback; both are recorded."""
    learner = IGLPLearner(seed=0)
    learner.predict((0, 0.5, 0.25), list(range(actions)))
    assert isinstance(learner.learner, OnlineIGLP)
    assert learner.learner.batch.estimator == estimator
    assert learner.learner.batch.decode_from == "feedback"
    assert learner.params["decode_from"] == "feedback"
    made = JsonMakerV2().make({"iglearn.IGLP": {"seed": 0, "decode_from": "interaction"}})
    assert made.params["decode_from"] == "interaction"
    with pytest.raises(IGLearnError, match="unknown decode_from 'word'; choose one of "
                                           "interaction, feedback"):
        IGLPLearner(decode_from="word")


def test_iglp_takes_a_fixed_gamma_or_its_growing_gamma0():
    """gamma was ignored under IGW (OnlineIGLP's growing gamma0 took its place), while
    coba's table reported it; now a gamma given is IGW's fixed gamma, and gamma0 is a
    setting of its own."""
    for learner, gamma, gamma0 in [(IGLPLearner(seed=0), 100.0, 2.0),
                                   (IGLPLearner(seed=0, gamma=1000.0), 1000.0, None),
                                   (IGLPLearner(seed=0, gamma0=4.0), 100.0, 4.0)]:
        learner.predict((0, 0.5, 0.25), [0, 1, 2])
        online = learner.learner
        assert isinstance(online, OnlineIGLP)
        assert (online.gamma, online.gamma0) == (gamma, gamma0)
        assert learner.params["gamma0"] == gamma0
        assert learner.params["gamma"] == (gamma if gamma0 is None else "growing")
    with pytest.raises(IGLearnError, match="gamma0=None asks for IGW's fixed gamma"):
        IGLPLearner(gamma0=None)
    with pytest.raises(IGLearnError, match="gamma0 must be a positive number"):
        IGLPLearner(gamma0=-1.0)


def test_the_true_reward_cb_learns_through_coba():
    """The scalar reward reaches OnlineRegressionCB as a scalar: it learns (before, a
    1-element vector became an (n, 1) signal whose error broadcast to n x n)."""
    environment = coba.Environments.from_custom(Blobs(600, seed=5))
    result = coba.Experiment(environment, [RegressionCBLearner(seed=0),
                                           coba.RandomLearner(seed=1)],
                             coba.SequentialCB()).run(quiet=True, processes=1)
    frame, reward = mean_rewards(result)
    late = frame[frame["index"] > 300].groupby("learner_id")["reward"].mean()
    assert late[0] > 0.75 > late[1] + 0.3


class RawBlobs(Blobs):
    """The blobs as raw measurements in one unit: 35 + 0.05 x (voxel intensities)."""

    def __init__(self, n: int, seed: int):
        super().__init__(n, seed)
        self.contexts = (35.0 + 0.05 * np.asarray(self.contexts)).tolist()


def test_online_igl_learners_learn_from_raw_contexts_in_coba_as_from_those_given():
    """E2G, the online AI-IGL and IGL-P in a coba experiment of grounded feedback whose
    contexts are raw measurements (35 + 0.05 x) learn as they do from the contexts as given:
    each refit standardises the contexts it has seen."""
    names = [("iglearn.E2G", {"warmup": 100, "iota": 1.0, "update_every": 25, "seed": 0}),
             ("iglearn.AIIGL", {"warmup": 100, "iota": 1.0, "update_every": 25, "seed": 0}),
             ("iglearn.IGLP", {"seed": 0})]
    late = []
    for environment in (Blobs(400, seed=3), RawBlobs(400, seed=3)):
        grounded = coba.Environments.from_custom(environment).grounded(USERS, USERS, WORDS, 2,
                                                                       seed=2)
        learners = [JsonMakerV2().make({name: settings}) for name, settings in names]
        result = coba.Experiment(grounded, learners, coba.SequentialIGL()).run(
            quiet=True, processes=1)
        frame, _ = mean_rewards(result)
        late.append(frame[frame["index"] > 200].groupby("learner_id")["reward"].mean())
    given, raw = late
    assert (raw > 0.7).all(), raw.to_dict()     # uniform play: 1/3
    assert (abs(raw - given) < 0.05).all(), (given.to_dict(), raw.to_dict())


class RawFeedback(RawBlobs):
    """The raw blobs with feedback that is already numbers, in the user's units: a dwell time
    in milliseconds, a count of clicks and a skin temperature, each higher after the right
    action (no word ids)."""

    def read(self):
        rng = np.random.default_rng(7)
        for interaction in super().read():
            rewards = interaction["rewards"]
            noise = rng.normal(size=(K, 3))

            def feedback(action, noise=noise, rewards=rewards):
                r, e = float(rewards(action)), noise[int(action)]
                return [300 + 2500 * r + 200 * e[0], 0.5 + 2.5 * r + e[1],
                        35.5 + 0.6 * r + 0.2 * e[2]]

            yield {**interaction, "feedbacks": feedback, "userid": 0}


def test_registered_learners_read_feedback_that_is_already_numbers():
    """words=None with feedback_dim: each named learner reads three raw numbers of feedback
    per interaction through a real coba Experiment (it was refused at the first interaction,
    the width fixed at one number), and learns from them."""
    names = [("iglearn.E2G", {"warmup": 100, "iota": 1.0, "update_every": 25}),
             ("iglearn.AIIGL", {"warmup": 100, "iota": 1.0, "update_every": 25}),
             ("iglearn.IGLP", {"personal": False})]
    learners = [JsonMakerV2().make({name: {**settings, "seed": 0, "users": 0, "words": None,
                                           "feedback_dim": 3}}) for name, settings in names]
    result = coba.Experiment(coba.Environments.from_custom(RawFeedback(400, seed=3)), learners,
                             coba.SequentialIGL()).run(quiet=True, processes=1)
    frame, _ = mean_rewards(result)
    late = frame[frame["index"] > 200].groupby("learner_id")["reward"].mean()
    assert sorted(late.index) == [0, 1, 2], late.to_dict()   # every learner played
    assert (late > 0.6).all(), late.to_dict()                 # uniform play: 1/3
    table = result.learners.to_pandas().set_index("learner_id")
    assert (table["feedback_dim"] == 3).all()


def test_registered_learners_refuse_a_bad_setting_when_made():
    """A setting the online learner would refuse is refused when the coba learner is made,
    naming it: coba's Experiment otherwise logs the error at the first interaction and
    leaves the learner without results."""
    for make, message in [(lambda: IGLPLearner(epsilon=2.0), r"epsilon must be in \[0, 1\]"),
                          (lambda: IGLPLearner(exploration="ucb"), "unknown exploration 'ucb'"),
                          (lambda: IGLPLearner(gamma=-5), "gamma must be positive"),
                          (lambda: RegressionCBLearner(epsilon=-1), "epsilon must be in"),
                          (lambda: AIIGLLearner(update_every=0), "update_every must be a "
                                                                 "whole number >= 1, got 0"),
                          (lambda: E2GLearner(warmup=-3), "^warmup must be a whole number >= 1"),
                          (lambda: IGLPLearner(seed=-1), "seed must be a whole number in"),
                          # a JSON file's "false" was read as True: per-user grounding
                          (lambda: JsonMakerV2().make({"iglearn.IGLP": {"personal": "false"}}),
                           "^personal must be True or False, got 'false'$"),
                          (lambda: UniformIGLLearner(seed=-1), "seed must be a whole number"),
                          # IGL-P decodes feedback vectors: a scalar failed at the first fit
                          (lambda: IGLPLearner(words=None, feedback_dim=0),
                           "^feedback_dim must be a whole number from 1"),
                          # so do E2G's and AI-IGL's decoders: it was accepted, then refused
                          # at the first interaction
                          (lambda: E2GLearner(words=None, feedback_dim=0),
                           "^feedback_dim must be a whole number from 1"),
                          (lambda: AIIGLLearner(users=None, words=None, feedback_dim=0),
                           "^feedback_dim must be a whole number from 1"),
                          (lambda: E2GLearner(words=None, feedback_dim="3"),
                           "^feedback_dim must be a whole number from 0 .*, got '3'"),
                          (lambda: E2GLearner(users=True), "^users must be 'auto', None or a "
                                                           "whole number >= 0, got True"),
                          (lambda: IGLPLearner(users="x"), "^users must be 'auto', None"),
                          (lambda: CobaLearner(5), r"^make must build the online learner "
                                                   r"from \(n_actions, context_dim"),
                          (lambda: CobaLearner(uniform(), slots=0),
                           "^slots must be a whole number")]:
        with pytest.raises(IGLearnError, match=message):
            make()


def test_registered_learners_take_the_scaling_settings_by_name():
    """``standardise`` and ``same_unit`` by a registered name, as a JSON experiment gives
    them: they reach the learner (off, the raw contexts are not learnt from; standardised with
    one scale, they are), coba's learner table shows them, and a bad value is refused when the
    learner is made."""
    environment = coba.Environments.from_custom(RawBlobs(600, seed=5))
    learners = [JsonMakerV2().make({"iglearn.RegressionCB": {"seed": 0, **settings}})
                for settings in ({"same_unit": "context"}, {"standardise": "off"})]
    result = coba.Experiment(environment, learners, coba.SequentialCB()).run(
        quiet=True, processes=1)
    frame, _ = mean_rewards(result)
    late = frame[frame["index"] > 300].groupby("learner_id")["reward"].mean()
    assert late[0] > 0.75 > late[1] + 0.2, late.to_dict()
    table = result.learners.to_pandas().set_index("learner_id")
    assert (table.loc[0, "same_unit"], table.loc[1, "standardise"]) == ("context", "off")
    for name in ("iglearn.E2G", "iglearn.AIIGL", "iglearn.IGLP"):
        made = JsonMakerV2().make({name: {"standardise": "on", "same_unit": "both",
                                          "users": 0}})
        assert (made.params["standardise"], made.params["same_unit"]) == ("on", "both")
        with pytest.raises(IGLearnError, match="same_unit is 'pixels'; choose one of none, "):
            JsonMakerV2().make({name: {"same_unit": "pixels"}})
        # a user id's one-hot features are not in the unit of the measurements after them
        with pytest.raises(IGLearnError, match=r"begin with the user id's one-hot features "
                                               r"\(users='auto'\); set same_unit to 'none'"):
            JsonMakerV2().make({name: {"same_unit": "context", "users": "auto"}})
        assert JsonMakerV2().make({name: {"same_unit": "feedback", "users": "auto"}})
    with pytest.raises(IGLearnError, match="standardise is 'yes'; choose one of auto, on, "):
        RegressionCBLearner(standardise="yes")


def test_learners_refuse_a_column_of_rewards():
    learner = OnlineRegressionCB(3, 5, seed=0)
    with pytest.raises(IGLearnError, match=r"shape \(1, 1\) where shape \(1,\) is meant; pass one "
                                           r"number per interaction"):
        learner.learn(np.zeros(5), 0, 1 / 3, np.array([1.0]))
    with pytest.raises(IGLearnError, match=r"shape \(4, 1\)"):
        learner.learn_batch(np.zeros((4, 5)), np.zeros(4, int), np.full(4, 1 / 3),
                            np.ones((4, 1)))
    learner.learn(np.zeros(5), 0, 1 / 3, 1.0)                  # a scalar is a reward
    learner.learn_batch(np.zeros((4, 5)), np.zeros(4, int), np.full(4, 1 / 3), np.ones(4))
    assert learner.interactions()[3].shape == (5,)


@pytest.mark.parametrize("feedback", [3, 3.0, np.int64(3), (3,), [3], np.array([3]),
                                      np.array([[3]]), ((3,),)])
def test_every_shape_of_a_word_is_one_word(feedback):
    assert feedback_values(feedback, None).tolist() == [3.0]
    learner = CobaLearner(e2g(warmup=50), words=4)
    assert learner.feedback_vector(feedback).tolist() == [0, 0, 0, 1]


def test_coba_feedback_objects_are_read_at_the_action():
    rewards = DiscreteReward(["a", "b"], [0.25, 1.0])
    assert feedback_values(rewards, "b").tolist() == [1.0]
    learner = RegressionCBLearner()
    assert learner.feedback_vector(rewards, "a").shape == ()
    assert learner.feedback_vector([0.25]) == np.float32(0.25)
    with pytest.raises(IGLearnError, match="has 2 numbers"):
        learner.feedback_vector((0.25, 1.0))
    with pytest.raises(IGLearnError, match="neither a number"):
        feedback_values({"word": 1}, None)


def test_adapter_encodes_users_words_and_scores():
    learner = CobaLearner(e2g(warmup=50), users=3, words=4)
    actions = [(1, 0), (0, 1)]
    assert learner.context_vector((2, 0.5, -1.0)).tolist() == [0, 0, 1, 0.5, -1.0]
    assert learner.feedback_vector((3,)).tolist() == [0, 0, 0, 1]
    action, probability = learner.predict((1, 0.5, -1.0), actions)["action_prob"]
    assert action in actions and probability == 0.5
    assert learner.score((1, 0.5, -1.0), actions, action) == 0.5
    learner.learn((1, 0.5, -1.0), action, (2,), probability)
    assert learner.learner is not None and learner.learner.interactions_ == 1
    with pytest.raises(IGLearnError, match="word id"):
        learner.feedback_vector((7,))
    with pytest.raises(IGLearnError, match="same actions"):
        learner.predict((1, 0.5, -1.0), actions[::-1])
    assert UniformIGLLearner(words=4).params["family"] == "iglearn.Uniform"


def test_auto_reads_users_and_words_in_the_order_they_appear():
    learner = CobaLearner(e2g(), users="auto", words="auto", slots=3)
    assert learner.context_vector((7, 0.5)).tolist() == [1, 0, 0, 0.5]
    assert learner.context_vector((2, 0.5)).tolist() == [0, 1, 0, 0.5]
    assert learner.context_vector((7, 0.5)).tolist() == [1, 0, 0, 0.5]
    assert learner.feedback_vector((5,)).tolist() == [1, 0, 0]
    assert learner.ids == {"users": {7: 0, 2: 1}, "words": {5: 0}}
    learner.context_vector((0, 1.0))
    with pytest.raises(IGLearnError, match=r"more than 3 distinct user ids, the most "
                                           r"users=\"auto\" one-hot encodes; give users=N"):
        learner.context_vector((1, 1.0))
    with pytest.raises(IGLearnError, match="user id 0.5 is neither; user ids are whole "
                                           "numbers"):
        learner.context_vector((0.5, 1.0))
    with pytest.raises(IGLearnError, match="users must be"):
        CobaLearner(e2g(), users="all")
    assert len(IGLPLearner().context_vector((0, 0.5))) == 32 + 1   # default slots
    # ids by name, as Vowpal Wabbit's simulator writes them ("Tom", "click"), and numpy
    # features beside the user id: it said "'Tom' is not a whole number; set users to None"
    named = CobaLearner(e2g(), users="auto", words="auto", slots=3)
    assert named.context_vector(("Tom", np.array([0.5, 2.0]))).tolist() == [1, 0, 0, 0.5, 2]
    assert named.context_vector(["Anna", 0.5, 2.0]).tolist() == [0, 1, 0, 0.5, 2]
    assert named.feedback_vector("click").tolist() == [1, 0, 0]
    assert named.feedback_vector("like").tolist() == [0, 1, 0]
    assert named.ids == {"users": {"Tom": 0, "Anna": 1}, "words": {"click": 0, "like": 1}}
    numbered = CobaLearner(e2g(), users=2, words=None)
    with pytest.raises(IGLearnError, match="user ids are whole numbers 0 to 2 - 1 \\(or names, "
                                           "with users='auto'\\)"):
        numbered.context_vector(("Tom", 0.5))



def test_a_dropped_user_id_must_be_an_id():
    """``users=0`` drops SequentialIGL's user id, a whole number or a name; a first context
    value that is neither (SequentialCB's contexts, which carry no user id) is refused, where
    before it was dropped as an id without a word."""
    learner = E2GLearner(words=None, feedback_dim=2)
    assert learner.context_vector((3, 0.5, 2.0)).tolist() == [0.5, 2.0]
    assert learner.context_vector(("Tom", 0.5, 2.0)).tolist() == [0.5, 2.0]
    assert learner.context_vector((np.float64(4.0), 0.5)).tolist() == [0.5]
    with pytest.raises(IGLearnError, match=r"user id 0.37 is neither; user ids are whole "
                                           r"numbers \(0 to N - 1\) or names \(users=0 drops "
                                           r"the first context value as SequentialIGL's user "
                                           r"id\); set users to None when the context holds no "
                                           r"user id"):
        learner.predict((0.37, 0.5, 2.0), [0, 1, 2])
    assert E2GLearner(users=None).context_vector((0.37, 0.5)).tolist() == pytest.approx(
        [0.37, 0.5])

def test_numpy_text_and_missing_contexts_are_read_or_refused_in_one_line():
    learner = RegressionCBLearner()
    assert learner.context_vector(np.array([0.1, 0.2])).tolist() == pytest.approx([0.1, 0.2])
    assert learner.context_vector([[0.1], (0.2,)]).tolist() == pytest.approx([0.1, 0.2])
    with pytest.raises(IGLearnError, match=r"^this context is text \('abc'\); iglearn's coba "
                                           r"learners read numbers"):
        learner.context_vector("abc")
    with pytest.raises(IGLearnError, match="have no context \\(None\\)"):
        learner.context_vector(None)


def test_registered_through_the_entry_point():
    from iglearn.integrations.coba_register import REGISTERED

    for name, learner in REGISTERED.items():
        assert CobaRegistry.registry[name] is learner
    assert set(REGISTERED) >= {"iglearn.E2G", "iglearn.IGLP", "iglearn.AIIGL"}


def test_a_bad_context_is_named_by_its_column_not_by_a_row():
    """The plug-in hands the learner one context at a time: a NaN in it is named by its
    column (a row number would be meaningless)."""
    learner = E2GLearner(users=None, warmup=50)  # the context read as it is, no user id
    learner.predict([0.5, 1.0, -1.0], [0, 1, 2])
    for call, name in ((lambda x: learner.predict(x, [0, 1, 2]), "act"),
                       (lambda x: learner.learn(x, 0, 1.0, 1 / 3), "learn"),
                       (lambda x: learner.score(x, [0, 1, 2], 0), "score")):
        with pytest.raises(IGLearnError, match=rf"^{name}: this context holds nan in column "
                                               rf"1; NaN or infinite") as caught:
            call([0.5, float("nan"), -1.0])
        assert "row" not in str(caught.value).split(";")[0]


def test_numpy_actions_are_compared_by_their_values():
    learner = RegressionCBLearner(seed=0)
    offered = [np.array([1, 0]), np.array([0, 1])]
    for _ in range(2):  # the second call compared the arrays with == (ambiguous truth value)
        action, probability = learner.predict([0.1, 0.2], [a.copy() for a in offered])[
            "action_prob"]
    learner.learn([0.1, 0.2], np.array([0, 1]), 1.0, probability)
    assert learner.learner is not None and learner.learner.interactions_ == 2
    with pytest.raises(IGLearnError, match=r"action array\(\[1, 1\]\) is not one the learner "
                                           r"was offered"):
        learner.learn([0.1, 0.2], np.array([1, 1]), 1.0, 0.5)


def test_zhangs_ramp_below_four_actions_is_refused_at_the_first_decision():
    learner = IGLPLearner(estimator="zhang")
    with pytest.raises(IGLearnError, match=r"^estimator 'zhang' needs at least 4 actions .*"
                                           r"offers 2: use estimator='auto' or 'lipschitz'"):
        learner.predict((0, 0.5, 0.25), ["a", "b"])


def test_an_environment_without_contexts_is_refused_as_such_under_sequential_igl():
    """SequentialIGL hands a context-free task's contexts on as (user id, None): the learners
    that read the user id said the context held NaN and asked to impute rows."""
    environment = coba.Environments.from_linear_synthetic(
        20, n_actions=3, n_context_features=0, n_action_features=0, seed=1).grounded(
        USERS, USERS, WORDS, 2, seed=1)
    for learner in (IGLPLearner(), E2GLearner(warmup=5)):
        with pytest.raises(IGLearnError, match=r"^this environment's interactions have no "
                                               r"context \(None\); .*give the environment "
                                               r"contexts$"):
            learner.predict((0, None), [(1, 0, 0), (0, 1, 0), (0, 0, 1)])
        result = coba.Experiment(environment, [learner], coba.SequentialIGL()).run(
            quiet=True, processes=1)
        assert "reward" not in result.interactions.to_pandas()  # refused, not played


def test_a_batched_environment_is_played_one_interaction_at_a_time():
    """coba hands a batched environment's (``.batch(n)``) contexts and actions to predict as
    one batch first, and row by row when that is refused: the batch built a learner of the
    batch's shape (K = 8 action lists), so every row after it was refused and the learner
    played nothing."""
    environment = coba.Environments.from_custom(Blobs(160, seed=5)).batch(8)
    result = coba.Experiment(environment, [RegressionCBLearner(seed=0)],
                             coba.SequentialCB()).run(quiet=True, processes=1)
    frame, reward = mean_rewards(result)
    assert len(frame) == 160 and reward[0] > 0.5, reward.to_dict()   # uniform play: 1/3
    learner = RegressionCBLearner(seed=0)
    batch = coba.environments.filters.Batch.List([[0.1, 0.2, 0.3, 0.4, 0.5]] * 2)
    with pytest.raises(IGLearnError, match="^iglearn's coba learners take one interaction at a "
                                           "time, not a batch: coba retries"):
        learner.predict(batch, [[0, 1, 2]] * 2)
    assert learner.learner is None


def test_a_sparse_or_odd_part_of_a_context_is_refused_in_one_line():
    """A context of dense values beside a sparse (dict) part, or a value that is no number,
    stopped with numpy's "float() argument must be a string or a real number, not 'dict'"."""
    for users, context in ((None, [0.5, {"a": 1.0}]), (0, (1, 0.5, {"a": 1.0})),
                           ("auto", (1, {"a": 1.0}))):
        with pytest.raises(IGLearnError, match=r"^iglearn's coba learners read dense contexts; "
                                               r".*make them dense first"):
            CobaLearner(uniform(), users=users).context_vector(context)
    with pytest.raises(IGLearnError, match=r"^this context holds \(1\+2j\), which is not a "
                                           r"number; iglearn's coba learners read numbers$"):
        RegressionCBLearner().context_vector([0.5, 1 + 2j])
    assert RegressionCBLearner().context_vector([np.float32(2), np.int8(1), True]).tolist() == [
        2, 1, 1]


def test_actions_that_change_are_refused_naming_the_fix():
    """coba's synthetic tasks with action features offer new actions at every interaction;
    the refusal named the problem only."""
    environment = coba.Environments.from_linear_synthetic(3, n_actions=3, n_context_features=2,
                                                          n_action_features=2, seed=1)
    learner = RegressionCBLearner(seed=0)
    interactions = list(next(iter(environment)).read())
    learner.predict(interactions[0]["context"], interactions[0]["actions"])
    with pytest.raises(IGLearnError, match=r"^iglearn's online learners need the same actions, "
                                           r"in the same order, at every interaction, .*: play "
                                           r"them on one whose actions are fixed \(coba's "
                                           r"synthetic tasks with n_action_features=0\)$"):
        learner.predict(interactions[1]["context"], interactions[1]["actions"])


def test_a_context_of_another_width_is_named_in_the_environments_features():
    """A context with one feature more than the first: the refusal counted the user id's 32
    one-hot features ("36 values but the model was fitted on 35") before any fit."""
    message = (r"^this context has 4 features where the first had 3; give every interaction "
               r"the same context features$")
    for learner, first, other, feedback in (
            (IGLPLearner(), (0, 0.1, 0.2, 0.3), (0, 0.1, 0.2, 0.3, 0.4), (1,)),
            (RegressionCBLearner(), [0.1, 0.2, 0.3], [0.1, 0.2, 0.3, 0.4], 1.0)):
        action, probability = learner.predict(first, [0, 1, 2])["action_prob"]
        with pytest.raises(IGLearnError, match=message):
            learner.predict(other, [0, 1, 2])
        with pytest.raises(IGLearnError, match=message):
            learner.learn(other, action, feedback, probability)
        with pytest.raises(IGLearnError, match=message):
            learner.score(other, [0, 1, 2], 0)


def test_a_bad_context_value_is_named_by_its_column_among_the_environments_features():
    """Where the user id's one-hot features go first (IGLPLearner's users="auto"), a NaN in
    the environment's first feature was named "column 32"; it is named by its column among
    the environment's features, in predict, learn and score."""
    learner = IGLPLearner()
    action, probability = learner.predict((0, 0.5, 1.0), [0, 1, 2])["action_prob"]
    with pytest.raises(IGLearnError, match=r"^act: this context holds nan in column 0; "):
        learner.predict((0, float("nan"), 1.0), [0, 1, 2])
    with pytest.raises(IGLearnError, match=r"^learn: this context holds 1e\+15 in column 1, "
                                           r"beyond"):
        learner.learn((1, 0.5, 1e15), action, (1,), probability)
    with pytest.raises(IGLearnError, match=r"^score: this context holds inf in column 1; "):
        learner.score((0, 0.5, float("inf")), [0, 1, 2], 0)
    assert IGLPLearner(personal=False).predict((0,), [0, 1, 2])  # a user id alone is read


def test_the_regression_cb_learns_rewards_beyond_one_as_coba_tasks_give_them():
    """About 0.4 % of the rewards of coba's linear synthetic task lie slightly above 1; the
    regression CB stopped at the first with "outside [-1, 1] ... rescale them" and coba
    recorded nothing for it. A regression needs no range; the bandit on E2G's loop, whose
    indicator reads rewards as [-1, 1], still refuses them."""
    environment = coba.Environments.from_linear_synthetic(
        600, n_actions=3, n_context_features=3, n_action_features=0, seed=1)
    rewards = [max(i["rewards"].rewards)
               for i in next(iter(environment)).read()]
    assert max(rewards) > 1
    result = coba.Experiment(environment, [RegressionCBLearner(seed=0)],
                             coba.SequentialCB()).run(quiet=True, processes=1)
    frame, reward = mean_rewards(result)
    assert len(frame) == 600 and reward[0] > 0.5, reward.to_dict()
    learner = OnlineRegressionCB(2, 1, seed=0)
    actions, probabilities = learner.act_batch(np.ones((2, 1)))
    learner.learn_batch(np.ones((2, 1)), actions, probabilities, np.array([2.5, -40.0]))
    with pytest.raises(IGLearnError, match="reward' holds nan"):
        learner.learn_batch(np.ones((1, 1)), [0], [0.5], np.array([np.nan]))
    bandit = OnlineContextualBandit(2, 1, seed=0)
    actions, probabilities = bandit.act_batch(np.ones((1, 1)))
    with pytest.raises(IGLearnError, match=r"outside \[-1, 1\]"):
        bandit.learn_batch(np.ones((1, 1)), actions, probabilities, np.array([1.5]))


def test_a_reward_learner_wrapped_for_feedback_vectors_is_refused_when_first_asked_to_act():
    """``CobaLearner(regression_cb())`` (words "auto") acted, then its first ``learn`` said
    "learn received feedback of shape (1, 32) where shape (1,) is meant", naming no fix."""
    for wrapped in (CobaLearner(regression_cb()), CobaLearner(regression_cb(), words=None,
                                                               feedback_dim=3)):
        with pytest.raises(IGLearnError, match=r"^regression_cb\(\) learns from one reward per "
                                               r"interaction, .* CobaLearner\(regression_cb\(\), "
                                               r"users=None, words=None, feedback_dim=0\)"):
            wrapped.predict((0, 0.1, 0.2), [0, 1, 2])
        assert wrapped.learner is None
    right = CobaLearner(regression_cb(), users=None, words=None, feedback_dim=0)
    action, probability = right.predict((0, 0.1, 0.2), [0, 1, 2])["action_prob"]
    right.learn((0, 0.1, 0.2), action, 1.0, probability)
    assert right.learner is not None and right.learner.interactions_ == 1


def test_learn_handed_no_probability_says_so():
    """A logged environment whose log holds no probabilities hands ``learn`` None, which
    was told as "field 'probability' holds nan at row 0"."""
    learner = RegressionCBLearner(seed=0)
    action, _ = learner.predict((0.1, 0.2, 0.3), [0, 1, 2])["action_prob"]
    with pytest.raises(IGLearnError, match=r"^coba handed learn no probability \(None\) for "
                                           r"the action played; .* 1/p"):
        learner.learn((0.1, 0.2, 0.3), action, 1.0, None)
    assert learner.learner is not None and learner.learner.interactions_ == 1
    assert learner.learner.fits_ == 0
