"""iglearn's E2G inside a real coba Experiment on a grounded (IGL) environment."""

import numpy as np
import pytest

coba = pytest.importorskip("coba")
from coba import DiscreteReward  # noqa: E402

from iglearn.integrations.coba import CobaLearner, E2GLearner, UniformIGLLearner, e2g  # noqa: E402

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


def test_e2g_beats_uniform_play_in_a_coba_experiment():
    environment = coba.Environments.from_custom(Blobs(1500, seed=7)).grounded(
        USERS, USERS, WORDS, 2, seed=1)
    learners = [E2GLearner(users=0, words=WORDS, warmup=300, iota=1.0, seed=0),
                coba.RandomLearner(seed=1)]
    result = coba.Experiment(environment, learners, coba.SequentialIGL()).run(
        quiet=True, processes=1)
    frame = result.interactions.to_pandas()
    reward = frame.groupby("learner_id")["reward"].mean()
    late = frame[frame["index"] > 1000].groupby("learner_id")["reward"].mean()
    assert len(frame) == 2 * 1500
    assert reward[1] == pytest.approx(1 / K, abs=0.06)        # coba's uniform baseline
    assert late[0] > 0.8 > late[1] + 0.3                       # E2G exploits what it learnt
    assert reward[0] > reward[1] + 0.2


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
    with pytest.raises(Exception, match="word id"):
        learner.feedback_vector((7,))
    with pytest.raises(Exception, match="same actions"):
        learner.predict((1, 0.5, -1.0), actions[::-1])
    assert UniformIGLLearner(words=4).params["family"] == "iglearn.Uniform"


def test_registered_through_the_entry_point():
    from coba.registry import CobaRegistry

    assert CobaRegistry.registry["iglearn.E2G"] is E2GLearner
