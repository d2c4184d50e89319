"""Schedules, the act/learn contract, uniform play and the online CB baseline."""

import numpy as np
import pytest

from iglearn import IGLearnError
from iglearn.envs import digits_environment
from iglearn.envs.play import play
from iglearn.learners import E2G, OnlineAIIGL, OnlineContextualBandit, OnlineIGLP, UniformLearner
from iglearn.learners.regression import OnlineRegressionCB
from iglearn.learners.schedules import (
    DataDrivenSchedule,
    PaperSchedule,
    TheorySchedule,
    make_schedule,
)


@pytest.fixture(scope="module")
def env():
    return digits_environment()


def test_paper_schedule_matches_appendix_b():
    schedule = PaperSchedule()  # 4000 warm-up rounds, iota = 100, K = 10
    assert [schedule.exploit_steps(i, 10) for i in (1, 4000, 4001, 8999, 9000, 10000)] == \
        [0, 0, 2, 2, 3, 3]
    assert schedule.warmup(10) == 4000


def test_theory_schedule_uses_t0():
    schedule = TheorySchedule(iota=1.0, eta=0.5)  # T0 = 2 * 100 * 1 / 0.25 = 800
    assert schedule.warmup(10) == 800
    assert schedule.exploit_steps(800, 10) == 0
    assert schedule.exploit_steps(801, 10) == 8  # floor(sqrt(801 / 10))
    with pytest.raises(IGLearnError, match="eta"):
        TheorySchedule(eta=0.0)


def test_data_driven_schedule_waits_for_the_certificate():
    schedule = DataDrivenSchedule(iota=100.0)
    assert schedule.warmup(10) is None
    assert schedule.exploit_steps(9000, 10, certified=False) == 0
    assert schedule.exploit_steps(9000, 10, certified=True) == 3
    # n = 500000: K eps_D = 0.1, V(pi_bad) = 1/K = 0.1 -> the indicator must exceed 0.2.
    assert schedule.certifies(0.25, 500000, 10)
    assert not schedule.certifies(0.15, 500000, 10)
    assert not DataDrivenSchedule(v_bad=0.2).certifies(0.25, 500000, 10)
    # a decoder the logged action explains certifies nothing (theory.action_led)
    assert schedule.certifies(0.25, 500000, 10, explained=0.2)
    assert not schedule.certifies(0.25, 500000, 10, explained=0.9)


def test_make_schedule_names_the_choices():
    assert isinstance(make_schedule("theory", eta=0.5), TheorySchedule)
    with pytest.raises(IGLearnError, match="paper, theory, data-driven"):
        make_schedule("sometimes")


def test_uniform_play_probabilities(env):
    learner = UniformLearner(10, seed=0)
    actions, probabilities = learner.act_batch(env.contexts(5000, np.random.default_rng(0))
                                               .features)
    np.testing.assert_allclose(probabilities, 0.1)
    assert np.bincount(actions, minlength=10).min() > 400
    action, probability = learner.act(env.contexts(1, np.random.default_rng(1)).features[0])
    assert 0 <= action < 10 and probability == pytest.approx(0.1)
    assert learner.interactions_ == learner.round_ == 5001


def test_learn_must_follow_act(env):
    learner = OnlineContextualBandit(10, env.context_dim, seed=0)
    x = env.contexts(3, np.random.default_rng(0)).features
    actions, probabilities = learner.act_batch(x)
    with pytest.raises(IGLearnError, match="acted on"):
        learner.learn_batch(np.vstack([x, x]), np.r_[actions, actions],
                            np.r_[probabilities, probabilities], np.zeros(6))
    with pytest.raises(IGLearnError, match="no policy yet"):
        learner.predict(x)


def total_reward(learner, env, rng, rounds, learns_from):
    """Play ``rounds`` rounds with the one play loop; the total true reward."""
    return play(learner, env, rounds, rng, learns_from=learns_from)[-1].total_reward


def test_online_cb_learns_with_the_paper_loop(env):
    schedule = PaperSchedule(iota=10.0, warmup_rounds=1000)
    learner = OnlineContextualBandit(10, env.context_dim, schedule, seed=0)
    total = total_reward(learner, env, np.random.default_rng(0), 1500, "reward")
    test_x, test_y = env.test_set()
    assert learner.accuracy(test_x, test_y) > 0.7
    assert total / learner.interactions_ > 0.3  # uniform play earns 0.1
    assert [fit["round"] for fit in learner.fits_] == list(range(1000, 1501, 100))


@pytest.mark.parametrize("kind", ["E2G", "AI-IGL", "CB", "IGL-P", "regression CB"])
def test_a_refit_that_diverged_stops_the_learner_with_one_line(env, kind, monkeypatch):
    # each online learner's re-fit, made to leave a NaN in one of its models: learn refuses
    # to go on (it would act at random and log NaN probabilities), naming the models
    import torch

    from iglearn.learners import E2G, OnlineAIIGL, OnlineIGLP
    from iglearn.learners.regression import OnlineRegressionCB

    schedule = PaperSchedule(iota=10.0, warmup_rounds=100)
    learner, rewards = {
        "E2G": (lambda: E2G(10, env.context_dim, env.feedback_dim, schedule, seed=0), False),
        "AI-IGL": (lambda: OnlineAIIGL(10, env.context_dim, env.feedback_dim, schedule,
                                       seed=0), False),
        "CB": (lambda: OnlineContextualBandit(10, env.context_dim, schedule, seed=0), True),
        "IGL-P": (lambda: OnlineIGLP(10, env.context_dim, env.feedback_dim, seed=0,
                                     refit_every=100), False),
        "regression CB": (lambda: OnlineRegressionCB(10, env.context_dim, seed=0,
                                                     refit_every=100), True),
    }[kind]
    learner = learner()
    real = type(learner).check_refit

    def after_a_diverged_refit(self):
        for model in self.fitted_models().values():
            if model is not None:
                first = model if isinstance(model, torch.nn.Module) else model[0]
                with torch.no_grad():
                    next(first.parameters()).view(-1)[0] = float("nan")
                break
        real(self)

    monkeypatch.setattr(type(learner), "check_refit", after_a_diverged_refit)
    with pytest.raises(IGLearnError, match=r"the re-fit on \d+ interactions diverged "
                                           r"\(NaN or infinite values in its .*\); lower"):
        total_reward(learner, env, np.random.default_rng(0), 300,
                     "reward" if rewards else "feedback")


def _learners(env):
    """One of each kind of online learner with models, on ``env``'s widths."""
    from iglearn.learners import E2G
    from iglearn.learners.iglp import OnlineIGLP

    k, d, f = env.n_actions, env.context_dim, env.feedback_dim
    return [E2G(k, d, f, PaperSchedule(warmup_rounds=50), seed=0),
            OnlineContextualBandit(k, d, PaperSchedule(warmup_rounds=50), seed=0),
            OnlineIGLP(k, d, f, seed=0)]


def test_learn_refuses_what_would_break_every_later_refit_and_keeps_none_of_it(env):
    """A NaN feedback value, a NaN context, an action out of range or not whole, a
    probability of 0 or a reward outside [-1, 1] is refused in one line naming the field and
    the row; the learner then goes on from the interactions as they were acted on."""
    rng = np.random.default_rng(0)
    for learner in _learners(env):
        shown = env.contexts(4, rng)
        x = shown.features
        actions, probabilities = learner.act_batch(x)
        reads_feedback = not isinstance(learner, OnlineContextualBandit)
        good = (env.feedback(shown, actions, env.reward(shown, actions), rng) if reads_feedback
                else env.reward(shown, actions).astype(float))
        bad_signal = good.copy()
        if reads_feedback:
            bad_signal[2, 5] = np.nan
        else:
            bad_signal[2] = 5.0
        bad_context = x.copy()
        bad_context[1, 0] = np.inf
        wrong = [(bad_context, actions, probabilities, good, "'context' holds inf at row 1"),
                 (x, actions, probabilities, bad_signal,
                  "'feedback' holds nan at row 2" if reads_feedback
                  else "'reward' holds 5.0 at row 2"),
                 (x, np.r_[actions[:3], 2.7], probabilities, good,
                  "'action' holds 2.7 at row 3, not an integer"),
                 (x, np.r_[actions[:3], 12], probabilities, good,
                  "'action' holds 12 at row 3, outside"),
                 (x, actions, np.r_[probabilities[:3], 0.0], good,
                  "'probability' holds 0.0 at row 3"),
                 (x[:, :10], actions, probabilities, good, "have 10 values but")]
        for case in wrong:
            with pytest.raises(IGLearnError, match=case[-1]):
                learner.learn_batch(*case[:4])
        learner.learn_batch(x, actions, probabilities, good)  # the same, as acted on: kept
        assert learner.interactions_ == 4


def test_acting_and_building_check_their_inputs(env):
    for learner in _learners(env):
        one = np.zeros(64)
        one[2] = np.nan
        for call in (learner.act, lambda x, m=learner: m.learn(x, 0, 0.1, 0.0)):
            with pytest.raises(IGLearnError, match="this context holds nan in column 2"):
                call(one)  # one context: its column named, not a row
        with pytest.raises(IGLearnError, match=r"shape \(64,\).*reshape\(1, -1\)"):
            learner.act_batch(np.zeros(64))  # one context where n are meant
        with pytest.raises(IGLearnError, match="have 10 values but the model was fitted on 64"):
            learner.act_batch(np.zeros((3, 10)))
        assert learner.interactions_ == 0
    from iglearn.learners import E2G

    with pytest.raises(IGLearnError, match="n_actions is 2.5"):
        E2G(2.5, 64, 64)
    with pytest.raises(IGLearnError, match="context_dim must be a whole number from 1"):
        E2G(10, 0, 64)
    with pytest.raises(IGLearnError, match="feedback_dim must be a whole number from 1"):
        E2G(10, 64, -1)


def test_a_fitted_online_learner_checks_what_it_predicts_on_and_its_labels(env):
    rng = np.random.default_rng(1)
    for learner in _learners(env):
        play(learner, env, 400, rng, learns_from="reward" if isinstance(
            learner, OnlineContextualBandit) else "feedback")
        x = env.contexts(5, rng).features.copy()
        x[3, 2] = np.nan
        for call in (learner.predict, lambda c, m=learner: m.accuracy(c, np.zeros(5, int))):
            with pytest.raises(IGLearnError, match="'context' holds nan at row 3"):
                call(x)
        with pytest.raises(IGLearnError, match="'label' has 4 rows but 'context' has 5"):
            learner.accuracy(np.nan_to_num(x), np.zeros(4, int))
        with pytest.raises(IGLearnError, match="'label' holds 10 at row 0"):
            learner.accuracy(np.nan_to_num(x), np.full(5, 10))


def test_uniform_play_has_the_accuracy_of_pi_bad_and_no_greedy_action():
    """UniformLearner.accuracy is 1/K, the expected accuracy of uniform play, after the
    checks every learner's accuracy makes (it raised a bare NotImplementedError from
    predict); predict is one line naming what to use instead."""
    learner = UniformLearner(4, seed=0)
    contexts = np.zeros((5, 3))
    assert learner.accuracy(contexts, np.array([0, 1, 2, 3, 0])) == 0.25
    with pytest.raises(IGLearnError, match="'label' has 4 rows but 'context' has 5"):
        learner.accuracy(contexts, np.zeros(4, int))
    with pytest.raises(IGLearnError, match="'label' holds 7 at row 0"):
        learner.accuracy(contexts, np.full(5, 7))
    with pytest.raises(IGLearnError, match="'context' holds nan at row 0"):
        learner.accuracy(np.full((5, 3), np.nan), np.zeros(5, int))
    with pytest.raises(IGLearnError, match="no greedy action to predict; draw actions with "
                                           "act_batch"):
        learner.predict(contexts)


def test_one_feedback_number_may_be_a_scalar_and_a_wrong_shape_is_told_how_to_give_it():
    from iglearn.learners import E2G

    learner = E2G(3, 2, 1, seed=0)
    x = np.array([0.1, 0.2])
    action, probability = learner.act(x)
    learner.learn(x, action, probability, 1.0)  # feedback_dim 1: a scalar is that number
    assert learner.interactions_ == 1
    action, probability = learner.act(x)
    with pytest.raises(IGLearnError, match=r"where shape \(1, 1\) is meant; pass 1 numbers per "
                                           r"interaction: a vector of 1 to learn"):
        learner.learn(x, action, probability, [1.0, 0.0])
    wide = E2G(3, 2, 2, seed=0)
    action, probability = wide.act(x)
    with pytest.raises(IGLearnError, match=r"where shape \(1, 2\) is meant; pass 2 numbers per "
                                           r"interaction: a vector of 2 to learn, an array of "
                                           r"shape \(n, 2\) to learn_batch"):
        wide.learn(x, action, probability, 1.0)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: E2G(10, 64, 64, holdout_every=1), r"holdout_every must be 0 \(none held out\) or "
                                               r"a whole number >= 2 .*got 1"),
    (lambda: E2G(10, 64, 64, holdout_every=-1), "holdout_every must be 0 .*got -1"),
    (lambda: OnlineAIIGL(10, 64, 64, holdout_every=1.5), "holdout_every must be 0 .*got 1.5"),
    (lambda: E2G(10, 5, 0), "feedback_dim must be a whole number from 1 to"),
    (lambda: E2G(10, 5, 3, schedule="paper"),
     r"schedule must be a Schedule, got 'paper'; build one by name with "
     r"iglearn.learners.make_schedule\('paper'\)"),
    (lambda: E2G(10, 5, 3, update_every=True), "update_every must be a whole number >= 1"),
    (lambda: OnlineIGLP(3, 5, 0), "feedback_dim must be a whole number from 1 to"),
    (lambda: OnlineIGLP(3, 5, 3, refit_growth=float("nan")),
     r"refit_growth must be a finite number >= 1 .*got nan"),
    (lambda: OnlineRegressionCB(3, 5, refit_growth=float("inf")), "refit_growth .*got inf"),
    (lambda: OnlineIGLP(3, 5, 3, refit_every="50"), "refit_every must be a whole number >= 1"),
    (lambda: OnlineIGLP(3, 5, 3, refit_every=2.5), "refit_every .*got 2.5"),
    (lambda: OnlineIGLP(3, 5, 3, users=5), "users is 5 but the contexts have 5 features"),
])
def test_the_online_learners_refuse_settings_they_cannot_run_when_made(make, message):
    """Each failed only at the first re-fit, after the whole warm-up had been played: a
    negative holdout read unfilled memory, 1 held out every sample (division by zero), a
    feedback width of 0 broke the decoder, a schedule by name had no exploit_steps, a NaN
    growth of the re-fits failed with the models already re-fitted, a fractional
    refit_every made fractional blocks."""
    with pytest.raises(IGLearnError, match=message):
        make()


def test_one_context_may_be_a_row_and_probabilities_check_their_contexts():
    """act takes one context as its d values or as one row (1, d) (before, the row became
    (1, 1, d), refused naming a shape never passed); probabilities checks its contexts while
    the next step explores too (one context of 64 values gave 64 rows, NaN was accepted)."""
    learner = E2G(10, 64, 64, seed=0, update_every=np.int64(5))
    assert learner.update_every == 5
    action, probability = learner.act(np.zeros((1, 64)))
    assert 0 <= action < 10 and probability == pytest.approx(0.1)
    learner.learn(np.zeros((1, 64)), action, probability, np.zeros(64))
    assert learner.interactions_ == 1
    for contexts, message in ((np.zeros(64), r"field 'context' has shape \(64,\)"),
                              (np.zeros((3, 5)), "have 5 values but the model was fitted on 64"),
                              (np.full((3, 64), np.nan), "field 'context' holds nan")):
        with pytest.raises(IGLearnError, match=f"^probabilities: .*{message}"):
            learner.probabilities(contexts)
    with pytest.raises(IGLearnError, match="probabilities: field 'context'"):
        UniformLearner(10, seed=0).probabilities(np.full((2, 3), np.nan))


def test_an_online_regressions_values_are_checked_as_its_predictions_are():
    """predict_values of an online regression learner says to play more rounds before its
    first fit (it told an OnlineIGLP to call fit(log)) and refuses NaN contexts as predict
    does (it returned NaN values)."""
    rng = np.random.default_rng(0)
    learner = OnlineRegressionCB(3, 4, refit_every=20, seed=0)
    with pytest.raises(IGLearnError, match="has not fitted yet; play more rounds"):
        learner.predict_values(np.zeros((2, 4)))
    for _ in range(25):
        x = rng.normal(size=4)
        action, probability = learner.act(x)
        learner.learn(x, action, probability, float(action == x[:3].argmax()))
    assert learner.fitted_
    assert learner.predict_values(rng.normal(size=(5, 4))).shape == (5, 3)
    with pytest.raises(IGLearnError, match="NaN"):
        learner.predict_values(np.full((3, 4), np.nan))


def test_act_and_learn_given_several_contexts_say_to_use_their_batch_forms():
    """act and learn take one context; several rows (or a number) are refused naming what was
    given and act_batch or learn_batch (it named a shape (1, 2, 64) that was never passed)."""
    learner = E2G(10, 64, 64, seed=0)
    for call, batch in ((learner.act, "act_batch"),
                        (lambda x: learner.learn(x, 0, 0.1, np.zeros(64)), "learn_batch")):
        with pytest.raises(IGLearnError, match=r"takes one context, 64 values \(or one row of "
                                               r"them\), but got an array of shape \(2, 64\); "
                                               rf"for several contexts use {batch}$"):
            call(np.zeros((2, 64)))
        with pytest.raises(IGLearnError, match="64 values .* but got a single number$"):
            call(3.0)
    assert learner.interactions_ == 0


def test_an_online_learner_reads_nullable_frames_and_tensors_as_their_numbers():
    """act and learn take a context and feedback given as a torch tensor that requires grad
    or a row of a frame of pandas' nullable numbers (they raised torch's RuntimeError, or
    refused the row as "dtype 'object'")."""
    import pandas as pd
    import torch

    learner = E2G(3, 4, 2, seed=0)
    frame = pd.DataFrame(np.arange(8.0).reshape(2, 4)).astype("Float64")
    tensors = torch.ones(4, requires_grad=True), torch.ones(2, requires_grad=True)
    for context, feedback in (tensors, (frame.iloc[[1]],
                                        pd.DataFrame([[1.5, 2]]).astype("Float64"))):
        action, probability = learner.act(context)
        learner.learn(context, action, probability, feedback)
    assert learner.interactions_ == 2


def test_uniform_play_checks_what_it_acts_on_and_learns_from_as_every_learner_does():
    """UniformLearner learns nothing, but a NaN context, an action outside [0, K), a
    probability of 0 or a count that differs from the contexts' is refused as the other
    learners refuse it (it accepted them all without a word), so that a loop run with
    uniform play runs with the others."""
    learner = UniformLearner(3, seed=0)
    with pytest.raises(IGLearnError, match="^act: field 'context' holds nan at row 1"):
        learner.act_batch(np.array([[0.0, 1], [np.nan, 1]]))
    with pytest.raises(IGLearnError, match=r"^learn: field 'action' holds 7 at row 0, outside "
                                           r"\[0, 3\)"):
        learner.learn(np.zeros(2), 7, 0.5, 1.0)
    with pytest.raises(IGLearnError, match="^learn: field 'probability' holds 0.0 at row 0"):
        learner.learn(np.zeros(2), 1, 0.0, 1.0)
    with pytest.raises(IGLearnError, match="^learn: field 'action' has 1 rows but 'context' "
                                           "has 2"):
        learner.learn_batch(np.zeros((2, 2)), np.array([0]), np.full(2, 0.5), np.zeros(2))
    assert learner.interactions_ == 0
    learner.learn(np.zeros(2), *learner.act(np.zeros(2)), np.zeros(5))
    assert learner.interactions_ == 1


def test_online_iglp_learns_one_interactions_definitely_bad_flag():
    """OnlineIGLP's learn takes the definitely-bad flag of its interaction, as its docstring
    says (it raised a TypeError, unexpected keyword 'definitely_bad'; only learn_batch took
    the flags); a flag that is not a boolean is refused naming the field."""
    learner = OnlineIGLP(3, 2, 2, seed=0)
    for flag in (True, None, False):
        action, probability = learner.act(np.zeros(2))
        learner.learn(np.zeros(2), action, probability, np.zeros(2), definitely_bad=flag)
    assert learner.interactions()[4].tolist() == [True, False, False]
    action, probability = learner.act(np.zeros(2))
    with pytest.raises(IGLearnError, match="'definitely_bad' holds 2 at row 0, not a boolean"):
        learner.learn(np.zeros(2), action, probability, np.zeros(2), definitely_bad=2)


def test_an_online_learner_shows_its_shape_and_progress(env):
    """An online learner showed as ``<iglearn.learners.e2g.E2G object at 0x...>``."""
    d = env.context_dim
    e2g = E2G(10, d, env.feedback_dim, seed=0)
    assert repr(e2g) == (f"E2G(n_actions=10, context_dim={d}, feedback_dim={env.feedback_dim}, "
                         f"interactions=0, explored=0, refits=0, certified=False)")
    cb = OnlineContextualBandit(10, d, PaperSchedule(iota=10.0, warmup_rounds=100), seed=0)
    total_reward(cb, env, np.random.default_rng(0), 300, "reward")
    assert repr(cb) == (f"OnlineContextualBandit(n_actions=10, context_dim={d}, "
                        f"interactions={cb.interactions_}, explored={cb.explored_}, "
                        f"refits={len(cb.fits_)}, certified=False)")
    assert cb.interactions_ >= 300 and len(cb.fits_) >= 2
    regression = OnlineRegressionCB(10, d, seed=0)
    total_reward(regression, env, np.random.default_rng(0), 120, "reward")
    assert repr(regression) == (f"OnlineRegressionCB(n_actions=10, context_dim={d}, "
                                f"exploration='epsilon', interactions=120, "
                                f"refits={regression.fits_})") and regression.fits_ >= 1
    assert repr(UniformLearner(3)) == "UniformLearner(n_actions=3, interactions=0)"
