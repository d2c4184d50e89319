"""AI-IGL: the per-action covariance, symmetry breaking under any logging policy, learning
from action-inclusive feedback where the 2021 objective fails, and the online loop."""

import warnings
from dataclasses import replace

import numpy as np
import pytest
import torch

from iglearn import BatchIGL, IGLearnError, InteractionLog, Supervised
from iglearn.envs import BCIEnvironment, action_inclusive_environment, digits_environment
from iglearn.envs.named import named_environment
from iglearn.learners import IdentifiabilityWarning, Optimisation, UniformLearner
from iglearn.learners.ai_igl import (
    AIIGL,
    OnlineAIIGL,
    action_covariance,
    action_weights,
    break_symmetry,
    covariance_gradient,
    decoded,
    decoder_decay_scale,
    grounded,
    own_decoded,
    own_decoder,
)
from iglearn.learners.schedules import DataDrivenSchedule, PaperSchedule
from iglearn.learners.settings import AIIGL_OPTIMISATION
from iglearn.learners.trials import Batch, Trials
from iglearn.models import make_decoder, make_policy
from iglearn.models.stacked import stack
from tests.learners.test_online import total_reward


@pytest.fixture(scope="module")
def env():
    return action_inclusive_environment("digits")


@pytest.fixture(scope="module")
def uniform_log(env):
    return env.log(3000, 0)


def test_action_covariance_is_the_weighted_covariance_of_each_action():
    rng = np.random.default_rng(0)
    n, k = 400, 3
    action = rng.integers(0, k, n)
    probability = rng.uniform(0.1, 0.9, n)
    f, psi = rng.random(n), rng.random(n)
    weights = action_weights(torch.from_numpy(action), torch.from_numpy(probability), k)
    got = action_covariance(torch.from_numpy(f), torch.from_numpy(psi), weights).numpy()
    for a in range(k):
        rows = action == a
        expected = np.cov(f[rows], psi[rows], aweights=1 / probability[rows], bias=True)[0, 1]
        assert got[a] == pytest.approx(expected, rel=1e-9)
    np.testing.assert_allclose(weights.means(torch.ones(n, dtype=torch.float64)).numpy(), 1.0)
    covariance, g_f, g_psi = covariance_gradient(torch.from_numpy(f), torch.from_numpy(psi),
                                                 weights)
    np.testing.assert_allclose(covariance.numpy(), got)
    for values, other, gradient in ((f, psi, g_f), (psi, f, g_psi)):  # by autograd
        leaf = torch.from_numpy(values).requires_grad_()
        pair = (leaf, torch.from_numpy(other)) if values is f else (torch.from_numpy(other), leaf)
        (-action_covariance(*pair, weights).sum()).backward()
        np.testing.assert_allclose(gradient.numpy(), leaf.grad.numpy(), rtol=1e-9, atol=1e-12)


def two_view_log(n: int, seed: int) -> InteractionLog:
    """K = 3, uniform logging; the context is the one-hot label, and the feedback reveals r
    through a coordinate whose meaning depends on the action (action 0 shows 1 - r) beside
    the action's own code: action-inclusive, and r is a function of either view."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 3, n)
    action = rng.integers(0, 3, n)
    reward = (action == label).astype(np.float32)
    shown = np.where(action == 0, 1 - reward, reward)
    feedback = np.c_[shown, action / 2].astype(np.float32)
    return InteractionLog(context=np.eye(3, dtype=np.float32)[label], action=action,
                          probability=np.full(n, 1 / 3), feedback=feedback, n_actions=3,
                          reward=reward, label=label)


def test_fit_reaches_the_known_optimum_of_a_two_view_problem():
    # When both views reveal r, Cov_a(f_a, psi_a) over [0, 1]-valued functions is at most
    # sqrt(Var f Var psi) <= Var_a(r) = q_a (1 - q_a), reached by f_a = psi_a = r.
    # The optimum is approached as f_a and psi_a saturate, so the stages run to 240 steps at
    # the learning rate: the default caps, which keep small noisy logs from over-fitting,
    # stop at about 0.6 to 0.7 of it here (with every decoded reward within 0.2 of r).
    log = two_view_log(3000, 0)
    learner = AIIGL(seed=0, optimisation=replace(AIIGL_OPTIMISATION, max_steps=240,
                                                 small_log=0)).fit(log)
    rows = [log.action == a for a in range(3)]
    q = np.array([log.reward[r].mean() for r in rows])
    optimum = q * (1 - q)
    covariance = np.array(learner.report_.covariance)
    assert (covariance <= optimum + 1e-6).all() and (covariance > 0.8 * optimum).all()
    psi = learner.decode(log.feedback, log.action)
    assert np.abs(psi - log.reward).max() < 0.2  # the right sign, though action 0 shows 1 - r
    assert learner.accuracy(np.eye(3, dtype=np.float32), np.arange(3)) == 1.0
    np.testing.assert_allclose(learner.report_.reward_rate, q, atol=0.1)


def greedy_logger(env, accuracy=0.8):
    """A non-uniform logging policy: plays a supervised guess with probability ``accuracy``."""
    supervised = Supervised(seed=0).fit(env.log(2000, 1))

    def policy(context):
        probs = np.full((len(context), env.n_actions), (1 - accuracy) / (env.n_actions - 1))
        probs[np.arange(len(context)), supervised.predict(context)] = accuracy
        return probs
    return policy


def test_symmetry_breaking_reweights_a_skewed_log_to_each_actions_exploration(env):
    log = env.log(4000, 2, policy=greedy_logger(env))
    raw = np.array([log.reward[log.action == a].mean() for a in range(10)])
    assert (raw > 0.5).all()  # as logged, the reward is the commoner event for every action
    signs = np.where(np.arange(10) % 3 == 0, -1.0, 1.0)  # actions 0, 3, 6, 9 decode 1 - r
    generator = torch.Generator().manual_seed(0)
    policy = make_policy("linear", log.context_dim, 10, generator)
    decoders = []
    for a, sign in enumerate(signs):
        decoder = make_decoder("linear", log.feedback_dim, generator, 0.5)
        rows = log.action == a
        ones = torch.from_numpy(log.feedback[rows & (log.reward > 0)].mean(0))
        zeros = torch.from_numpy(log.feedback[rows & (log.reward == 0)].mean(0))
        with torch.no_grad():  # a decoder that reads the feedback digits, in either sign
            decoder.net.weight.copy_(sign * (ones - zeros)[None])
            decoder.net.bias.fill_(-sign * float((ones - zeros) @ (ones + zeros)) / 2)
        decoders.append(decoder)
    before = policy.net.weight.detach().clone()
    data = Batch(torch.from_numpy(log.context), torch.from_numpy(log.action),
                 torch.from_numpy(log.probability.astype(np.float32)),
                 torch.from_numpy(log.feedback))
    flipped = break_symmetry(policy, decoders, Trials.one(data))
    np.testing.assert_array_equal(flipped, signs < 0)
    with torch.no_grad():
        psi = decoded(decoders, data.signal, data.action).numpy()
        np.testing.assert_array_equal(policy.net.weight.numpy(), (signs[:, None] * before.numpy()))
    for a in range(10):
        rows = log.action == a
        assert psi[rows & (log.reward > 0)].mean() > psi[rows & (log.reward == 0)].mean() + 0.5


def _raw_batch(trials: int, n: int = 300, d: int = 7, k: int = 4) -> Batch:
    """A mini-batch of ``trials`` trials with raw feedback (about 35, spread 0.5)."""
    g = torch.Generator().manual_seed(11)
    return Batch(torch.randn(trials, n, d, generator=g),
                 torch.randint(0, k, (trials, n), generator=g),
                 torch.rand(trials, n, generator=g) * 0.5 + 0.1,
                 35 + 0.5 * torch.randn(trials, n, d, generator=g))


@pytest.mark.parametrize("trials", [1, 3])
def test_each_row_is_decoded_by_its_own_actions_decoder(trials):
    """The stacked linear decoders' one product a trial gives what each decoder gives on its
    own action's rows, with some decoders' corrector flags set; their slope is sigma's."""
    k = 4
    batch = _raw_batch(trials, k=k)
    g = torch.Generator().manual_seed(3)
    decoders = [make_decoder("linear", 7, g, 0.5) for _ in range(trials * k)]
    for decoder in decoders[1::3]:
        decoder.flipped.fill_(True)
    psi = stack(decoders)
    with torch.no_grad():
        expected = torch.stack([
            torch.stack([decoders[t * k + int(a)](row[None])[0]
                         for a, row in zip(batch.action[t], batch.signal[t], strict=True)])
            for t in range(trials)])
        torch.testing.assert_close(own_decoder(psi, batch, k), expected, rtol=0, atol=1e-6)
        values, slope = own_decoded(psi, batch, k)
        torch.testing.assert_close(values, expected, rtol=0, atol=1e-6)
        flags = psi.flipped.view(trials, k).gather(-1, batch.action)
        sigma = torch.where(flags, 1 - values, values)
        torch.testing.assert_close(slope, torch.where(flags, -1.0, 1.0) * sigma * (1 - sigma)
                                   / 0.5, rtol=1e-5, atol=1e-7)
        for t in range(trials):  # a trial alone decodes as stacked
            alone = stack(decoders[t * k:(t + 1) * k])
            single = Batch(*(field[t:t + 1] for field in batch))
            torch.testing.assert_close(own_decoder(alone, single, k)[0],
                                       own_decoder(psi, batch, k)[t], rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_decoded_gives_each_row_its_own_actions_decoder(kind):
    """:func:`decoded` of a fitted model's K decoders: the linear ones as one layer of K
    outputs, any other one on its own rows; both as each decoder gives alone."""
    batch = _raw_batch(1)
    g = torch.Generator().manual_seed(4)
    decoders = [make_decoder(kind, 7, g, 0.5) for _ in range(4)]
    decoders[2].flipped.fill_(True)
    feedback, action = batch.signal[0], batch.action[0]
    with torch.no_grad():
        expected = torch.stack([decoders[int(a)](row[None])[0]
                                for a, row in zip(action, feedback, strict=True)])
        torch.testing.assert_close(decoded(decoders, feedback, action), expected, rtol=0,
                                   atol=1e-6)


def test_ai_igl_learns_action_inclusive_digits_where_the_2021_objective_fails(env,
                                                                              uniform_log):
    test_x, test_y = env.test_set()
    learner = AIIGL(seed=0).fit(uniform_log)
    assert learner.accuracy(test_x, test_y) > 0.8  # chance: 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        igl = BatchIGL(seed=0, max_restarts=0).fit(uniform_log)
    assert igl.accuracy(test_x, test_y) < 0.2
    psi = learner.decode(uniform_log.feedback, uniform_log.action)
    reward = uniform_log.reward
    assert psi[reward > 0].mean() - psi[reward == 0].mean() > 0.6


def test_ai_igl_still_learns_the_2021_task():
    env = digits_environment()
    learner = AIIGL(seed=1).fit(env.log(3000, 1))
    assert learner.accuracy(*env.test_set()) > 0.8


def test_ai_igl_mlp_classes_learn():
    env = action_inclusive_environment("digits")
    learner = AIIGL(policy="mlp", decoder="mlp", seed=0).fit(env.log(3000, 3))
    assert learner.accuracy(*env.test_set()) > 0.7


def test_ai_igl_on_the_bci_simulation_nears_the_contextual_bandit():
    from iglearn import ContextualBandit

    env = BCIEnvironment(noise=0.05)
    log = env.log(6000, 0)
    ai = AIIGL(seed=0).fit(log).accuracy(*env.test_set())
    cb = ContextualBandit(seed=0).fit(log).accuracy(*env.test_set())
    assert ai > 0.9 * cb and cb > 0.9


def test_same_seed_same_result(uniform_log):
    a = AIIGL(seed=5).fit(uniform_log)
    b = AIIGL(seed=5).fit(uniform_log)
    np.testing.assert_array_equal(a.predict_proba(uniform_log.context),
                                  b.predict_proba(uniform_log.context))
    np.testing.assert_array_equal(a.decode(uniform_log.feedback, uniform_log.action),
                                  b.decode(uniform_log.feedback, uniform_log.action))
    assert a.report_.covariance == b.report_.covariance


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_fit_many_fits_each_learner_as_its_own_fit_would(kind):
    warnings.simplefilter("ignore", IdentifiabilityWarning)  # short fits: ambiguous signs
    env = BCIEnvironment(noise=0.05)
    logs = [env.log(1500, seed) for seed in range(3)]
    settings = dict(policy=kind, decoder=kind, optimisation=Optimisation(
        grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=40))
    together = AIIGL.fit_many([AIIGL(**settings, seed=s) for s in range(3)], logs)
    for seed, (learner, log) in enumerate(zip(together, logs, strict=True)):
        alone = AIIGL(**settings, seed=seed).fit(log)
        np.testing.assert_allclose(learner.predict_proba(log.context),
                                   alone.predict_proba(log.context), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(learner.decode(log.feedback, log.action),
                                   alone.decode(log.feedback, log.action), rtol=1e-4, atol=1e-6)
        assert learner.report_.flipped == alone.report_.flipped
        assert learner.report_.indicator == pytest.approx(alone.report_.indicator, abs=1e-5)
    assert learner.accuracy(*env.test_set()) > 0.6   # chance: 1/3
    other = AIIGL(**settings, seed=1).fit(logs[0])
    assert not np.array_equal(other.predict_proba(logs[0].context),
                              together[0].predict_proba(logs[0].context))


def test_decoders_count_their_own_interactions_in_their_decay_on_small_standardised_logs():
    # K = 10 decoders of 64 feedback columns: below 2 * 64 interactions each, K times the decay
    assert decoder_decay_scale(500, 10, 64, True) == 10.0
    assert decoder_decay_scale(1279, 10, 64, True) == 10.0
    assert decoder_decay_scale(1280, 10, 64, True) == 1.0
    # feedback as it was logged: at most three times
    assert decoder_decay_scale(500, 10, 64, False) == 3.0
    assert decoder_decay_scale(200, 2, 64, False) == 2.0
    assert decoder_decay_scale(1280, 10, 64, False) == 1.0


def test_warnings_for_two_actions_and_for_rarely_played_actions():
    log = two_view_log(600, 1)
    two = InteractionLog(context=log.context, action=np.minimum(log.action, 1),
                         probability=np.full(600, 0.5), feedback=log.feedback, n_actions=2)
    with pytest.warns(IdentifiabilityWarning, match="K = 2"):
        AIIGL(seed=0).fit(two)
    with pytest.warns(IdentifiabilityWarning, match=r"fewer than min_interactions \(300\)"):
        learner = AIIGL(seed=0, min_interactions=300).fit(log)
    assert any("fewer than min_interactions (300)" in note for note in learner.report_.warnings)
    counts = np.bincount(log.action, minlength=log.n_actions)
    one = int(np.argmin(counts))  # the least played action alone below the minimum
    with pytest.warns(IdentifiabilityWarning, match=rf"action {one} has only {counts[one]} "
                                                     r"interactions, fewer than"):
        AIIGL(seed=0, min_interactions=int(counts[one]) + 1).fit(log)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)
        AIIGL(seed=0).fit(log)  # 200 interactions an action are enough by default


def test_errors_name_the_problem(uniform_log):
    with pytest.raises(IGLearnError, match="not fitted"):
        AIIGL().decode(uniform_log.feedback, uniform_log.action)
    learner = AIIGL(seed=0).fit(uniform_log)
    with pytest.raises(IGLearnError, match="one action in 0..9 per feedback vector"):
        learner.decode(uniform_log.feedback, uniform_log.action[:10])
    with pytest.raises(IGLearnError, match="temperature"):
        AIIGL(temperature=0.0)
    with pytest.raises(IGLearnError, match="paper or theory schedule"):
        OnlineAIIGL(10, 64, 64, DataDrivenSchedule())


def test_online_ai_igl_beats_uniform_play(env):
    learner = OnlineAIIGL(10, env.context_dim, env.feedback_dim,
                          PaperSchedule(iota=10.0, warmup_rounds=2000), seed=0)
    total = total_reward(learner, env, np.random.default_rng(0), 2500, "feedback")
    assert learner.exploited_ > 1000 and learner.fits_[0]["round"] == 2000
    uniform = UniformLearner(10, seed=0)
    uniform_total = total_reward(uniform, env, np.random.default_rng(0), learner.interactions_,
                         "feedback")
    assert total / learner.interactions_ > 0.3 > 2 * uniform_total / uniform.interactions_
    assert learner.accuracy(*env.test_set()) > 0.6
    # Exploitation logs the probability of the greedy action: 1.
    actions, probabilities = learner.act_batch(env.contexts(50, np.random.default_rng(1))
                                               .features)
    assert set(np.unique(probabilities)) <= {0.1, 1.0}


def test_grounded_flags_an_action_whose_decoder_settled_at_a_constant():
    assert grounded(np.array([0.07, 0.08, 0.06, 0.07]), 0.25)
    assert not grounded(np.array([0.07, 0.08, 0.0, 0.07]), 0.25)
    assert not grounded(np.array([0.07, 0.08, -0.01, 0.07]), 0.25)


def test_the_adaptive_restart_keeps_the_best_attempt():
    env = action_inclusive_environment("digits")
    log = env.log(3000, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        # a fraction no fit can pass: every restart is used, the best attempt is kept
        picky = AIIGL(seed=0, max_restarts=2, restart_fraction=0.999).fit(log)
        first = AIIGL(seed=0, max_restarts=0).fit(log)
    report = picky.report_
    assert report.restarts == 2 and len(report.attempt_indicators) == 3
    assert report.indicator == pytest.approx(max(report.attempt_indicators), rel=1e-5)
    # the first attempt is the fit without restarts
    assert report.attempt_indicators[0] == pytest.approx(first.report_.indicator, rel=1e-5)
    assert first.report_.restarts == 0


@pytest.fixture
def widths(monkeypatch) -> list[int]:
    """The trials of each call of AIIGL.fit_models, in order, as the test's fits make them."""
    calls: list[int] = []
    fit_models = AIIGL.fit_models

    def counted(self, policies, *args, **kwargs):
        calls.append(len(policies))
        return fit_models(self, policies, *args, **kwargs)

    monkeypatch.setattr(AIIGL, "fit_models", counted)
    return calls


def test_a_small_log_makes_every_attempt_and_keeps_the_largest_indicator(widths):
    # 300 interactions, K = 10: 30 an action, fewer than every_attempt_below (200)
    log = action_inclusive_environment("digits").log(300, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        alone = AIIGL(seed=3).fit(log)  # seed 3's first attempt grounds every action
        assert widths == [3]  # a single fit: every attempt at once
        widths.clear()
        together = AIIGL.fit_many([AIIGL(seed=3), AIIGL(seed=1)], [log, log])
        assert widths == [6]  # fit_many too: every attempt of every trial at once
        widths.clear()
        adaptive = AIIGL(seed=3, every_attempt_below=0).fit(log)  # 0: no log is small
    assert widths == [1]  # the first attempt grounded: the adaptive restart stops
    report = alone.report_
    assert report.restarts == 2 and len(report.attempt_indicators) == 3
    assert report.indicator == pytest.approx(max(report.attempt_indicators), rel=1e-5)
    # the first attempt is the adaptive restart's (which stops there); a later one is kept
    assert report.attempt_indicators[0] == pytest.approx(adaptive.report_.indicator, abs=1e-4)
    assert report.indicator > report.attempt_indicators[0] + 1e-3
    # side by side or one at a time, the same attempts and the same model
    assert together[0].report_.attempt_indicators == pytest.approx(report.attempt_indicators,
                                                                   abs=1e-4)
    contexts = digits_environment().test_set()[0]
    assert np.mean(together[0].predict(contexts) == alone.predict(contexts)) > 0.99


def test_a_small_log_runs_each_stage_to_at_most_the_default_cap(monkeypatch):
    from iglearn.learners import training

    steps: list[int] = []  # the steps of each stage's optimiser, in order
    init, step = training.AdamW.__init__, training.AdamW.step

    def counted_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.stage_number = len(steps)
        steps.append(0)

    def counted_step(self, *args, **kwargs):
        steps[self.stage_number] += 1
        step(self, *args, **kwargs)

    monkeypatch.setattr(training.AdamW, "__init__", counted_init)
    monkeypatch.setattr(training.AdamW, "step", counted_step)
    warnings.simplefilter("ignore", IdentifiabilityWarning)  # 500 interactions, K = 10
    AIIGL(seed=0, max_restarts=0).fit(digits_environment().log(500, 0))
    # grounding, minorant, IPS; re-grounding, minorant, IPS: one step per epoch here
    assert len(steps) == 6
    assert all(0 < count <= AIIGL_OPTIMISATION.max_steps == 120 for count in steps)


def test_the_default_settings_run_exactly_two_epochs_of_each_stage_on_60000():
    from iglearn.learners.training import Stage, stage_epochs

    for epochs in (AIIGL_OPTIMISATION.grounding_epochs, AIIGL_OPTIMISATION.policy_epochs,
                   AIIGL_OPTIMISATION.epochs):
        stage = Stage(epochs, [], lambda batch: torch.zeros(1))
        assert stage_epochs(stage, 60000, AIIGL_OPTIMISATION) == 2
        assert stage_epochs(stage, 500, AIIGL_OPTIMISATION) == AIIGL_OPTIMISATION.small_steps
        assert stage_epochs(stage, 2500, AIIGL_OPTIMISATION) == 12  # 5 steps an epoch
        assert stage_epochs(stage, 5000, AIIGL_OPTIMISATION) == 12  # not small: 120 steps


def test_a_log_under_every_attempt_below_an_action_makes_every_attempt_without_a_warning(
        widths):
    # the BCI, K = 3: 500 interactions are about 167 an action, over min_interactions (no
    # warning) and under every_attempt_below (every attempt, the best kept)
    log = named_environment("bci").log(500, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        warnings.filterwarnings("error", ".*min_interactions", IdentifiabilityWarning)
        every = AIIGL(seed=0).fit(log)
        assert widths == [3]
        widths.clear()
        AIIGL(seed=0, every_attempt_below=100).fit(log)
    assert widths[0] == 1  # the adaptive restart: one attempt, then only if it failed
    report = every.report_
    assert report.restarts == 2
    assert report.indicator == pytest.approx(max(report.attempt_indicators), rel=1e-5)


def test_orient_turns_each_action_of_a_two_action_fit_and_refits_the_policy_on_the_log():
    from iglearn.learners.ai_igl import flip_actions

    env = BCIEnvironment(n_symbols=2)
    log, calibration = env.log(1000, seed=0), replace(env.log(30, seed=100), reward=None)
    test_x, test_y = env.test_set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # K = 2: each decoder's sign is open, as it warns
        learner = AIIGL(seed=0).fit(log)
        learner.orient(calibration, log)
    assert learner.accuracy(test_x, test_y) > 0.95
    assert not learner.orient(calibration, log).flipped  # already the right way
    # one action's decoder and score turned the wrong way, as symmetry breaking may leave them
    flip_actions(learner.policy_, learner.decoders_, np.array([False, True]))
    wrong = learner.accuracy(test_x, test_y)
    with pytest.warns(UserWarning, match=r"action\(s\) \[1\] but not of the others; pass the "
                                         r"training log"):
        found = learner.orient(calibration)
    assert found.flipped_actions == (1,) and found.rows == 30 and found.agreement > 0.8
    assert learner.accuracy(test_x, test_y) > wrong  # part of the way back
    flip_actions(learner.policy_, learner.decoders_, np.array([False, True]))
    assert learner.orient(calibration, log).flipped_actions == (1,)
    assert learner.accuracy(test_x, test_y) > 0.95  # the policy fitted again on the log


def test_a_fit_whose_every_decoder_settled_is_warned_as_uniform_play():
    from tests.learners.test_batch_igl import _sparse_wide_log

    log, _ = _sparse_wide_log(400, 0)  # feedback in milliseconds and counts
    with pytest.warns(IdentifiabilityWarning, match=r"^no attempt of 3 grounded any action "
                                                    r"\(indicator 0: .*no better than uniform "
                                                    r"play.*standardise is off"):
        AIIGL(seed=0, standardise="off").fit(log)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = AIIGL(seed=0).fit(log)
    assert fitted.report_.indicator > 0
    assert not [w for w in caught if "grounded any action" in str(w.message)]
