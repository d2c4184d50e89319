"""E2G (Algorithm 1): warm-up, probabilities, learning from feedback alone, determinism."""

import numpy as np
import pytest
import torch

from iglearn.envs import Contexts, digits_environment
from iglearn.learners import UniformLearner
from iglearn.learners.e2g import E2G
from iglearn.learners.schedules import DataDrivenSchedule, PaperSchedule
from iglearn.learners.training import Optimisation
from tests.learners.test_online import total_reward

QUICK = Optimisation(max_steps=50)


@pytest.fixture(scope="module")
def env():
    return digits_environment()


@pytest.fixture(scope="module")
def trained(env):
    """E2G after 4000 warm-up rounds and 1000 more on digits (feedback only)."""
    learner = E2G(10, env.context_dim, env.feedback_dim,
                  PaperSchedule(iota=10.0, warmup_rounds=4000), seed=0)
    before = learner.exploited_
    total = total_reward(learner, env, np.random.default_rng(0), 5000, "feedback")
    return learner, total, before


def test_no_exploitation_before_the_warmup_ends(env):
    learner = E2G(10, env.context_dim, env.feedback_dim,
                  PaperSchedule(iota=10.0, warmup_rounds=300), optimisation=QUICK,
                  max_restarts=0, seed=0)
    rng = np.random.default_rng(0)
    assert learner.block_size() == 300  # up to the first fit, at the end of the warm-up
    shown = env.contexts(299, rng)
    x = shown.features
    actions, probabilities = learner.act_batch(x)
    np.testing.assert_allclose(probabilities, 0.1)
    learner.learn_batch(x, actions, probabilities,
                        env.feedback(shown, actions, np.zeros(299), rng))
    assert learner.policy_ is None and learner.exploited_ == 0 and learner.fits_ == []
    action, probability = learner.act(x[0])  # round 300: the last exploration-only round
    assert probability == pytest.approx(0.1) and learner.exploited_ == 0
    learner.learn(x[0], action, probability,
                  env.feedback(Contexts(x[:1], shown.label[:1]), np.array([action]),
                               np.zeros(1), rng)[0])
    assert learner.policy_ is not None and [f["round"] for f in learner.fits_] == [300]
    # A tenth of D is held out of line 4 and measures the indicator instead.
    assert learner.fits_[0]["indicator_samples"] == 30 and learner.explored_learned == 300
    # Round 301 explores once, then exploits n_301 = floor(sqrt(301 / 100)) = 1 (iota = 10) step.
    assert learner.block_size() == 99 * (1 + 1) + 1  # up to the exploration of round 400
    x = env.contexts(2, rng).features
    _, probabilities = learner.act_batch(x)
    assert probabilities[0] == pytest.approx(0.1) and probabilities[1] == 1.0
    assert learner.exploited_ == 1


def test_probabilities_are_those_of_the_executed_policy(trained, env):
    learner, _, _ = trained
    x = env.test_set()[0][:200]
    scores = learner.policy_.net(torch.from_numpy(x)).detach().double()
    softmax = torch.softmax(scores, 1).numpy()  # pi_i(. | x), computed here from the weights
    learner.exploit = "greedy"
    actions, probabilities = learner._exploit(x)
    np.testing.assert_array_equal(actions, scores.argmax(1).numpy())
    np.testing.assert_array_equal(probabilities, 1.0)
    learner.exploit = "softmax"
    actions, probabilities = learner._exploit(x)
    np.testing.assert_allclose(probabilities, softmax[np.arange(200), actions], rtol=1e-5)
    # The logged probability is how often that action is drawn: sample one context many times.
    one = np.repeat(x[:1], 20000, axis=0)
    actions, probabilities = learner._exploit(one)
    frequency = np.bincount(actions, minlength=10) / len(actions)
    logged = np.zeros(10)
    logged[actions] = probabilities
    drawn = frequency > 0
    np.testing.assert_allclose(frequency[drawn], logged[drawn], atol=0.015)
    assert softmax[0][~drawn].sum() < 0.01  # actions never drawn carry almost no mass
    learner.exploit = "greedy"


def test_e2g_beats_uniform_play_by_a_wide_margin(trained, env):
    learner, total, before = trained
    assert before == 0 and learner.exploited_ > 3000
    test_x, test_y = env.test_set()
    assert learner.accuracy(test_x, test_y) > 0.6  # uniform play: 0.1
    uniform = UniformLearner(10, seed=0)
    uniform_total = total_reward(uniform, env, np.random.default_rng(0), learner.interactions_,
                         "feedback")
    assert total / learner.interactions_ > 0.3 > 2 * uniform_total / uniform.interactions_
    shown = env.contexts(200, np.random.default_rng(1))
    actions = np.r_[shown.label[:100], (shown.label[100:] + 1) % 10]  # 100 right, 100 wrong
    psi = learner.decode(env.feedback(shown, actions, env.reward(shown, actions),
                                      np.random.default_rng(1)))
    assert psi[:100].mean() - psi[100:].mean() > 0.8  # Delta_psi > 0: the right direction


def test_same_seed_same_run(env):
    runs = []
    for _ in range(2):
        learner = E2G(10, env.context_dim, env.feedback_dim,
                      PaperSchedule(iota=10.0, warmup_rounds=500), optimisation=QUICK,
                      seed=7)
        total = total_reward(learner, env, np.random.default_rng(3), 700, "feedback")
        runs.append((total, [f["indicator"] for f in learner.fits_],
                     learner.predict(env.test_set()[0])))
    assert runs[0][0] == runs[1][0] and runs[0][1] == runs[1][1]
    np.testing.assert_array_equal(runs[0][2], runs[1][2])


def test_data_driven_schedule_explores_until_certified(env):
    # iota = 1/2, indicator measured on the held-out tenth of D (m = |D| / 10 samples):
    # K eps_D = 10 sqrt(1 / (4 m)) falls below 0.45 - 0.1 once m = 200 (2000 rounds), so a
    # good fit certifies Delta_psi > 0 before 3000 rounds and E2G then exploits.
    learner = E2G(10, env.context_dim, env.feedback_dim, DataDrivenSchedule(iota=0.5),
                  update_every=500, seed=0)
    total_reward(learner, env, np.random.default_rng(0), 3000, "feedback")
    certified = [f["round"] for f in learner.fits_ if f["certified"]]
    assert certified, "no fit certified the decoder"
    first = certified[0]
    assert learner.exploited_ > 0
    uncertified = [f for f in learner.fits_ if f["round"] < first]
    assert all(not f["certified"] for f in uncertified)
    assert all(f["action_explained"] < 0.1 for f in learner.fits_)  # the feedback shows r


def test_a_decoder_that_follows_the_action_certifies_nothing():
    # the simulated BCI's feedback responds to the symbol shown: E2G's decoder reads the
    # action, and its indicator would pass the data-driven test with a policy at chance
    from iglearn.envs import BCIEnvironment
    from iglearn.learners import IdentifiabilityWarning
    from iglearn.theory import ACTION_EXPLAINED

    env = BCIEnvironment(noise=0.05)
    schedule = DataDrivenSchedule(iota=0.5)
    learner = E2G(3, env.context_dim, env.feedback_dim, schedule, update_every=300, seed=0,
                  optimisation=QUICK)
    with pytest.warns(IdentifiabilityWarning, match="logged action explains") as caught:
        total_reward(learner, env, np.random.default_rng(0), 1500, "feedback")
    assert sum("logged action explains" in str(w.message) for w in caught) == 1  # once
    passing = [f for f in learner.fits_  # the fits whose indicator passes the data test
               if schedule.certifies(f["indicator"], f["indicator_samples"], 3)]
    assert passing and all(f["action_explained"] > ACTION_EXPLAINED for f in passing)
    assert not learner.certified_ and learner.exploited_ == 0



def test_a_pickled_learner_goes_on_as_one_never_stopped(env):
    """An online learner has no model folder; it is saved mid-stream with pickle (its models,
    exploration set and generator included) and, restored, acts and learns on as the one
    that was never stopped, the same seed given."""
    import pickle

    from iglearn.envs.play import play

    def make():
        return E2G(10, env.context_dim, env.feedback_dim,
                   PaperSchedule(iota=10.0, warmup_rounds=300), optimisation=QUICK,
                   max_restarts=0, seed=0)

    whole, rng = make(), np.random.default_rng(5)
    play(whole, env, 700, rng, checkpoints=[450])  # the same blocks, the same draws
    half, rng = make(), np.random.default_rng(5)
    play(half, env, 450, rng)
    restored = pickle.loads(pickle.dumps(half))
    play(restored, env, 700, rng)
    assert restored.interactions_ == whole.interactions_ and len(restored.fits_) > 1
    x, _ = env.test_set()
    np.testing.assert_array_equal(restored.predict(x), whole.predict(x))
