"""IGL-P: the inverse-kinematics decision, the definitely-bad split, the online loop."""

import copy
import dataclasses
import json
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from iglearn import IGLearnError, InteractionLog
from iglearn.envs.personalised import vw_simulator
from iglearn.envs.play import play
from iglearn.learners import Optimisation
from iglearn.learners import iglp as iglp_module
from iglearn.learners.iglp import (
    IGLP,
    ONLINE_FIRST_FIT,
    ONLINE_REFIT,
    PERSONAL_FIRST_FIT,
    PERSONAL_REFIT,
    SWITCH_CONFIDENCE,
    OnlineIGLP,
    PersonalIK,
    best_inverse_kinematics,
    clearly_lower,
    feedback_posterior,
    fit_feedback_posterior,
    ik_cross_entropy,
    ik_features,
    ik_row_losses,
    ik_rows,
    ik_scores,
    ik_step,
    likelihood_ratio,
    lipschitz_extremeness,
    outer_linear,
    step_extremeness,
    supports_ik_step,
    zhang_extremeness,
)
from iglearn.learners.online import UniformLearner
from iglearn.learners.registry import load_model
from iglearn.learners.regression import exploration_distribution, zhang_gamma
from iglearn.learners.trials import Batch
from iglearn.models import Policy, make_policy
from iglearn.models.stacked import stack


def tiny_log(n: int = 3000, seed: int = 0) -> InteractionLog:
    """One context, K = 3: action 0 always draws token 'click', actions 1 and 2 draw 'none'.
    Uniform play, so exactly h(0 | click) = 1 and h(1 | none) = h(2 | none) = 1/2: the
    likelihood ratio of a 'none' after action 1 is (K - 1) h / (1 - h) = 2, below VW's 3."""
    rng = np.random.default_rng(seed)
    action = rng.integers(0, 3, n)
    feedback = np.stack([action == 0, action != 0], axis=1).astype(np.float32)
    return InteractionLog(context=np.ones((n, 1)), action=action,
                          probability=np.full(n, 1 / 3), feedback=feedback, n_actions=3,
                          reward=(action == 0).astype(np.float32))


def test_likelihood_ratio_and_estimates_on_exact_values():
    ratio = likelihood_ratio(np.array([0.5, 1.0, 0.6, 0.75]), 3)
    np.testing.assert_allclose(ratio[[0, 2, 3]], [2.0, 3.0, 6.0])
    assert ratio[1] > 1e6
    step = step_extremeness(ratio, 3.0)
    np.testing.assert_array_equal(step, [0, 1, 0, 1])
    ramp = lipschitz_extremeness(ratio, 3.0)
    # never above the step, 0 up to the threshold, 1 from its square on
    assert (ramp <= step).all() and ramp[1] == 1 and ramp[0] == 0
    np.testing.assert_allclose(ramp[3], np.log(2) / np.log(3))


def test_zhang_ramp_on_hand_computed_values():
    h = np.array([0.1, 0.3, 0.32, 0.35, 0.4, 0.9])
    # clip((h - 0.3) / 0.1, 0, 1)
    np.testing.assert_allclose(zhang_extremeness(h), [0, 0, 0.2, 0.5, 1, 1], atol=1e-12)
    np.testing.assert_allclose(zhang_extremeness(h, 0.6, 0.2), [0, 0, 0, 0, 0, 1])
    # at K = 7, VW's step (L > 3) is h > 1/3: the ramp leaves 0 first, the step decides the
    # negative side
    learner = IGLP(estimator="zhang")
    step, positive = learner.extremeness(np.array([0.32, 0.35]), 7)
    np.testing.assert_array_equal(step, [0, 1])
    np.testing.assert_allclose(positive, [0.2, 0.5], atol=1e-12)


def test_zhang_ramp_refuses_a_start_at_or_below_one_over_k():
    # K = 3: feedback that says nothing gives h = 1/3 > 0.3, which would all count as extreme
    with pytest.raises(IGLearnError, match="ramp_start 0.3 is at most 1/K"):
        IGLP(estimator="zhang", seed=0).fit(tiny_log())


@pytest.mark.parametrize("estimator", ["step", "lipschitz", "zhang"])
def test_inverse_kinematics_decision_matches_the_exact_one(estimator):
    log = tiny_log()
    # K = 3: Zhang's ramp from 0.6 to 0.8, above the uninformative h = 1/2 of 'none'
    ramp = {"ramp_start": 0.6, "ramp_width": 0.2} if estimator == "zhang" else {}
    learner = IGLP(estimator=estimator, seed=0, **ramp).fit(log)
    # the models read contexts and feedback standardised with the log's statistics
    features = torch.from_numpy(ik_features(learner.standardised(np.ones((2, 1))),
                                            learner.standardised_feedback(np.eye(2))))
    probs = learner.ik_.probabilities(features).detach().numpy()
    # near the exact h (a fit of finitely many steps), and on the same side of every rule
    np.testing.assert_allclose(probs[0], [1, 0, 0], atol=0.1)
    np.testing.assert_allclose(probs[1], [0, 0.5, 0.5], atol=0.1)
    decoded = learner.decode(np.ones((3, 1), np.float32), np.array([0, 1, 2]),
                             np.array([[1, 0], [0, 1], [0, 1]], np.float32))
    np.testing.assert_allclose(decoded, [1, 0, 0], atol=1e-6)
    assert learner.predict(np.ones((1, 1)))[0] == 0


def test_definitely_bad_split_tells_hated_from_enjoyed():
    env = vw_simulator()
    log = env.log(6000, seed=1)
    learner = IGLP(seed=0).fit(log)
    decoded = learner.decode(log.context, log.action, log.feedback)
    # every extreme reaction to a hated topic (skip as well as the flagged dislike) is
    # negative; every reaction to an enjoyed topic positive; 'none' neutral
    assert (decoded[log.reward == -1] < 0).mean() > 0.97
    assert (decoded[log.reward == 1] > 0).mean() > 0.97
    assert (decoded[log.reward == 0] == 0).mean() > 0.97
    assert 0.4 < learner.report_.negative < 0.6
    contexts, labels = env.test_set()
    assert learner.accuracy(contexts, labels) == 1.0
    # without the flags every extreme reaction is positive: hated topics look enjoyed
    unflagged = InteractionLog(**{**log.__dict__, "definitely_bad": None})
    blind = IGLP(seed=0).fit(unflagged)
    assert (blind.decode(log.context, log.action, log.feedback)[log.reward == -1] > 0).mean() \
        > 0.9


def test_online_iglp_beats_uniform_play_by_a_wide_margin():
    env = vw_simulator()
    learner = OnlineIGLP(env.n_actions, env.context_dim, env.feedback_dim, seed=0)
    [point] = play(learner, env, 1200, np.random.default_rng(0))
    [uniform] = play(UniformLearner(env.n_actions, seed=0), env, 1200,
                     np.random.default_rng(0))
    assert point.average_reward > 0.45 and abs(uniform.average_reward) < 0.1
    assert learner.fits_ > 5


def test_online_iglp_does_not_relapse_onto_the_topic_it_plays_most():
    """The flag model and the reward regressor model outcomes given (x, a) and are fitted
    without importance weights: weighted to uniform play, the topic IGW plays most got the
    least weight, and a hated topic played greedily kept a flag estimate too low to be read
    as negative for hundreds of rounds. 12 trials of 2,500 rounds: mean 0.751 (worst 0.664)
    weighted, 0.796 (0.719) unweighted."""
    env = vw_simulator()
    averages = []
    for s in range(12):
        learner = OnlineIGLP(env.n_actions, env.context_dim, env.feedback_dim, seed=s)
        [point] = play(learner, env, 2500, np.random.default_rng(100 + s))
        averages.append(point.average_reward)
    assert np.mean(averages) > 0.775 and min(averages) > 0.65, np.round(averages, 3)


def test_online_iglp_with_zhang_estimate_learns_the_tiny_simulator():
    env = vw_simulator()
    learner = OnlineIGLP(env.n_actions, env.context_dim, env.feedback_dim, estimator="zhang",
                         seed=0)
    [point] = play(learner, env, 1200, np.random.default_rng(0))
    assert point.average_reward > 0.45
    # Zhang's ramp decodes the enjoyed topics' click and like as positive, 'none' as neutral
    log = env.log(3000, seed=5)
    decoded = learner.batch.decode(log.context, log.action, log.feedback)
    assert (decoded[log.reward == 1] > 0).mean() > 0.95
    assert (decoded[log.reward == 0] == 0).mean() > 0.85


def test_same_seed_same_curve():
    env = vw_simulator()

    def curve(seed):
        learner = OnlineIGLP(env.n_actions, env.context_dim, env.feedback_dim,
                             exploration="igw", seed=seed)
        points = play(learner, env, 250, np.random.default_rng(seed), checkpoints=[100, 200])
        return [p.average_reward for p in points]
    first = curve(3)
    assert first == curve(3) and len(first) == 3


def test_exploration_distributions():
    values = np.array([[0.0, 1.0, 0.5]])
    eps = exploration_distribution(values, "epsilon", 0.3, 10.0)
    np.testing.assert_allclose(eps, [[0.1, 0.8, 0.1]])
    igw = exploration_distribution(values, "igw", 0.3, 10.0)
    np.testing.assert_allclose(igw[0, [0, 2]], [1 / 13, 1 / 8])
    np.testing.assert_allclose(igw.sum(), 1.0)


def test_igw_with_zhangs_growing_gamma_follows_the_formula():
    # gamma_t = sqrt(1 + t) / gamma0, scaled by sqrt(K)
    np.testing.assert_allclose(zhang_gamma(np.array([0, 3, 99]), 4, 10.0), [0.2, 0.4, 2.0])
    env = vw_simulator()
    k = env.n_actions
    learner = OnlineIGLP(k, env.context_dim, env.feedback_dim, exploration="igw",
                         gamma0=10.0, seed=0)
    play(learner, env, 300, np.random.default_rng(0))
    contexts, _ = env.test_set()
    values = learner.predict_values(contexts)
    best = values.argmax(1)
    gap = values[np.arange(len(values)), best][:, None] - values

    def expected(t: np.ndarray) -> np.ndarray:
        gamma_t = np.sqrt(1 + t) / 10.0
        probs = 1 / (k + np.sqrt(k) * gamma_t[:, None] * gap)
        probs[np.arange(len(values)), best] = 0
        probs[np.arange(len(values)), best] = 1 - probs.sum(1)
        return probs

    assert learner.round_ == 300
    # acting on consecutive contexts: the i-th at round 300 + i
    np.testing.assert_allclose(learner.distribution(contexts),
                               expected(300 + np.arange(len(contexts))), rtol=1e-12)
    # the next step's probabilities: every context as round 300
    np.testing.assert_allclose(learner.probabilities(contexts),
                               expected(np.full(len(contexts), 300)), rtol=1e-12)
    # the probability logged with each action is the formula's
    actions, probs = learner.act_batch(contexts)
    np.testing.assert_allclose(probs, expected(300 + np.arange(len(contexts)))[
        np.arange(len(contexts)), actions], rtol=1e-6)


def test_bad_settings_are_refused():
    with pytest.raises(IGLearnError, match="estimator"):
        IGLP(estimator="exact")
    with pytest.raises(IGLearnError, match="threshold"):
        IGLP(threshold=1.0)
    with pytest.raises(IGLearnError, match="exploration"):
        OnlineIGLP(3, 1, 1, exploration="softmax")
    with pytest.raises(IGLearnError, match="ramp_start"):
        IGLP(estimator="zhang", ramp_start=1.5)
    with pytest.raises(IGLearnError, match="ramp_width"):
        IGLP(estimator="zhang", ramp_width=0.0)
    with pytest.raises(IGLearnError, match="gamma0"):
        OnlineIGLP(3, 1, 1, gamma0=0.0)
    # per-user grounding's one-hot user features are not in the unit of the measurements
    with pytest.raises(IGLearnError, match="begin with the user id's one-hot features"):
        IGLP(users=3, same_unit="context")
    with pytest.raises(IGLearnError, match=r"\(users=2\); set same_unit to 'none'"):
        OnlineIGLP(3, 5, 2, users=2, same_unit="both")
    assert IGLP(users=3, same_unit="feedback").same_unit == "feedback"


def test_users_must_name_one_hot_columns_at_the_front_of_the_contexts():
    """users=N reads the first N context columns as a one-hot user id: measurements there (a
    temperature, a count) are refused naming the row, as is a row of two users; a row of no
    user (an unknown one) is one-hot enough."""
    rng = np.random.default_rng(0)
    ids, x, contexts = users_and_contexts(300, rng)
    action = rng.integers(0, 3, 300)
    feedback = np.eye(3)[rng.integers(0, 3, 300)]
    log = InteractionLog(contexts, action, np.full(300, 1 / 3), feedback, 3)
    measured = InteractionLog(np.c_[36.5 + rng.normal(0, 0.2, (300, 1)), contexts], action,
                              np.full(300, 1 / 3), feedback, 3)
    users = contexts.shape[1] - x.shape[1]
    with pytest.raises(IGLearnError, match=rf"users is {users}, so the first {users} context "
                                           rf"columns must be a one-hot user id .* row 0 holds "
                                           rf"\[36\.\d+, "):
        IGLP(users=users, seed=0).fit(measured)
    twice = contexts.copy()
    twice[5, :2] = 1
    with pytest.raises(IGLearnError, match="but row 5 holds"):
        IGLP(users=users, seed=0).fit(dataclasses.replace(log, context=twice))
    unknown = contexts.copy()
    unknown[7, :users] = 0
    quick = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=10)
    with warnings.catch_warnings():  # so short a fit may warn
        warnings.simplefilter("ignore")
        IGLP(users=users, seed=0, optimisation=quick, ik_starts=1).fit(
            dataclasses.replace(log, context=unknown))


@pytest.mark.parametrize("kind", ["linear", "mlp"])
@pytest.mark.parametrize("stacked", [False, True])
def test_ik_scores_without_the_outer_product_match_the_explicit_features(kind, stacked):
    """The inverse-kinematics model computed from rows (x, y) gives the scores and gradients
    of the same model (the same weights) on the explicit (x, y, x (x) y) features."""
    rng = np.random.default_rng(3)
    d_x, d_y, k = 7, 5, 4
    context = rng.normal(size=(30, d_x)).astype(np.float32)
    feedback = rng.normal(size=(30, d_y)).astype(np.float32)
    model = make_policy(kind, d_x + d_y + d_x * d_y, k, torch.Generator().manual_seed(1))
    net = stack([model.net]) if stacked else model.net
    twin = copy.deepcopy(net)
    rows = torch.from_numpy(ik_rows(model, context, feedback))
    features = torch.from_numpy(ik_features(context, feedback))
    # a linear model reads (x, y); an mlp's wide first layer the explicit features
    assert rows.shape[1] == (d_x + d_y if kind == "linear" else features.shape[1])
    if stacked:
        rows, features = rows[None], features[None]
    fast = ik_scores(Policy(net), rows, (d_x, d_y))
    explicit = twin(features)
    torch.testing.assert_close(fast, explicit, rtol=1e-5, atol=1e-5)
    (fast * torch.arange(k)).sum().backward()
    (explicit * torch.arange(k)).sum().backward()
    for mine, theirs in zip(net.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(mine.grad, theirs.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("trials", [1, 2])
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_the_inverse_kinematics_step_in_closed_form_is_autograds(trials, temperature):
    """ik_step's loss and gradients equal autograd's of the cross-entropy it replaces (raw
    rows far from 0, logging probabilities far from uniform, one action never logged)."""
    rng = np.random.default_rng(5)
    d_x, d_y, k, n = 6, 4, 5, 40
    rows = torch.from_numpy((35 + 3 * rng.normal(size=(trials, n, d_x + d_y)))
                            .astype(np.float32))
    action = torch.from_numpy(rng.integers(0, k - 1, size=(trials, n)))
    probability = torch.from_numpy(rng.uniform(0.05, 0.9, size=(trials, n)).astype(np.float32))
    models = [make_policy("linear", d_x + d_y + d_x * d_y, k, torch.Generator().manual_seed(t))
              for t in range(trials)]
    for model in models:  # scores of a few units on these rows
        model.net.weight.data.mul_(0.01)
    net = stack([model.net for model in models])
    twin = copy.deepcopy(net)
    batch = Batch(rows, action, probability, torch.zeros(trials, n))
    assert supports_ik_step(Policy(net, temperature), rows[0].numpy(), (d_x, d_y))
    loss = ik_step(Policy(net, temperature), batch, k, (d_x, d_y))
    reference = ik_cross_entropy(Policy(twin, temperature), rows, action, probability, k,
                                 (d_x, d_y)).mean(-1)
    reference.sum().backward()
    torch.testing.assert_close(loss, reference.detach(), rtol=1e-6, atol=1e-6)
    for mine, theirs in zip(net.parameters(), twin.parameters(), strict=True):
        assert theirs.grad.abs().max() > 1e-3
        torch.testing.assert_close(mine.grad, theirs.grad, rtol=1e-4, atol=1e-6)


def test_the_closed_form_step_is_for_a_linear_model_on_rows_only():
    d_x, d_y, k = 6, 4, 5
    context, feedback = np.ones((3, d_x), np.float32), np.ones((3, d_y), np.float32)
    for kind, expected in (("linear", True), ("mlp", False)):
        model = make_policy(kind, d_x + d_y + d_x * d_y, k, torch.Generator().manual_seed(0))
        rows = ik_rows(model, context, feedback)
        assert supports_ik_step(model, rows, (d_x, d_y)) is expected
    # a linear model on explicit features (as the first fit of an older model read them)
    assert not supports_ik_step(model, ik_features(context, feedback), (d_x, d_y))


def test_outer_linear_is_the_layer_on_the_explicit_features():
    """Also for a layer wider than the context (which ik_rows leaves explicit)."""
    gen = torch.Generator().manual_seed(2)
    d_x, d_y, out = 3, 6, 9
    rows = torch.randn(2, 11, d_x + d_y, generator=gen)
    weight = torch.randn(2, out, d_x + d_y + d_x * d_y, generator=gen, requires_grad=True)
    bias = torch.randn(2, out, generator=gen)
    outer = (rows[..., :d_x, None] * rows[..., None, d_x:]).flatten(-2)
    features = torch.cat([rows, outer], dim=-1)
    torch.testing.assert_close(outer_linear(weight, bias, rows, d_x),
                               features @ weight.transpose(1, 2) + bias[:, None],
                               rtol=1e-5, atol=1e-5)


def test_save_and_load_keep_the_decisions(tmp_path):
    env = vw_simulator()
    log = env.log(3000, seed=2)
    learner = IGLP(seed=0).fit(log)
    learner.save(tmp_path / "model")
    back = IGLP.load(tmp_path / "model")
    assert back.estimator == learner.estimator and back.report_ == learner.report_
    np.testing.assert_allclose(back.decode(log.context, log.action, log.feedback),
                               learner.decode(log.context, log.action, log.feedback))
    np.testing.assert_array_equal(back.predict(log.context), learner.predict(log.context))
    with pytest.raises(IGLearnError, match="holds an igl-p model"):
        load_model(tmp_path / "model", "igl")


def test_save_and_load_keep_zhangs_ramp(tmp_path):
    env = vw_simulator()
    log = env.log(3000, seed=2)
    learner = IGLP(estimator="zhang", ramp_start=0.35, ramp_width=0.05, seed=0).fit(log)
    learner.save(tmp_path / "model")
    back = IGLP.load(tmp_path / "model")
    assert (back.estimator, back.ramp_start, back.ramp_width) == ("zhang", 0.35, 0.05)
    np.testing.assert_allclose(back.decode(log.context, log.action, log.feedback),
                               learner.decode(log.context, log.action, log.feedback))

SWAPPING = np.array([[2.0, -1.0, -1.0], [0.0, 2.0, -2.0], [0.5, 0.5, 0.5]])
"""The best of K = 3 actions is the argmax of x @ SWAPPING for the 3 context features x."""
USERS, WORDS, GOOD = 4, 4, 2


def users_and_contexts(n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """``n`` users drawn uniformly, features x and the contexts (one-hot user, then x)."""
    user = rng.integers(0, USERS, n)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return user, x, np.concatenate([np.eye(USERS, dtype=np.float32)[user], x], axis=1)


def swapped_words(user: np.ndarray, x: np.ndarray, action: np.ndarray,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A grounded environment as coba makes one: the user says one of the GOOD first words
    after the best action and one of the others after any other, but the first half of the
    users swap good and bad words. The one-hot words and the true reward."""
    reward = action == (x @ SWAPPING).argmax(1)
    says_good = reward == (user >= USERS // 2)
    word = np.where(says_good, rng.integers(0, GOOD, len(x)), rng.integers(GOOD, WORDS, len(x)))
    return np.eye(WORDS, dtype=np.float32)[word], reward


def test_per_user_grounding_understands_users_who_swap_words():
    """Half the users swap good and bad words: a word alone says nothing about the action, so
    IGL-P with one meaning per word decodes no reward; grounding words per user (users=4,
    PersonalIK) decodes nearly every reward and learns the best action."""
    rng = np.random.default_rng(0)
    user, x, context = users_and_contexts(1500, rng)
    action = rng.integers(0, 3, 1500)
    feedback, reward = swapped_words(user, x, action, rng)
    log = InteractionLog(context=context, action=action, probability=np.full(1500, 1 / 3),
                         feedback=feedback, n_actions=3, reward=reward.astype(np.float32))
    _, test_x, test_context = users_and_contexts(2000, rng)
    best = (test_x @ SWAPPING).argmax(1)
    shared, personal = (IGLP(seed=0, users=users).fit(log) for users in (0, USERS))
    assert isinstance(personal.ik_.net, PersonalIK)
    for learner, decoded_share, accuracy in ((shared, (0.0, 0.1), (0.0, 0.6)),
                                             (personal, (0.9, 1.0), (0.85, 1.0))):
        decoded = learner.decode(log.context, log.action, log.feedback)
        assert decoded_share[0] <= (decoded[reward] > 0).mean() <= decoded_share[1]
        assert accuracy[0] <= learner.accuracy(test_context, best) <= accuracy[1]
    assert (personal.decode(log.context, log.action, log.feedback)[~reward] > 0).mean() < 0.25


def swapping_log(n: int = 1500, seed: int = 0) -> InteractionLog:
    """Uniform play on :func:`swapped_words`: half the users swap good and bad words."""
    rng = np.random.default_rng(seed)
    user, x, context = users_and_contexts(n, rng)
    action = rng.integers(0, 3, n)
    feedback, reward = swapped_words(user, x, action, rng)
    return InteractionLog(context=context, action=action, probability=np.full(n, 1 / 3),
                          feedback=feedback, n_actions=3, reward=reward.astype(np.float32))


@pytest.mark.parametrize("model", ["linear", "mlp"])
def test_a_per_user_grounding_model_saves_and_loads(tmp_path, model):
    """The folder holds PersonalIK (its users and context class): the loaded model decodes
    and decides as the fitted one."""
    log = swapping_log()
    learner = IGLP(seed=0, users=USERS, model=model, ik_starts=3).fit(log)
    learner.save(tmp_path / "model")
    back = IGLP.load(tmp_path / "model")
    assert isinstance(back.ik_.net, PersonalIK) and back.users == USERS
    assert back.ik_starts == 3 and back.report_.ik_losses == learner.report_.ik_losses
    assert back.ik_.net.dims == learner.ik_.net.dims and back.ik_.net.model == model
    np.testing.assert_allclose(back.decode(log.context, log.action, log.feedback),
                               learner.decode(log.context, log.action, log.feedback))
    np.testing.assert_array_equal(back.predict(log.context), learner.predict(log.context))
    record = back.metadata_["ik"]
    assert (record["class"], record["users"], record["input_dim"]) == ("personal", USERS,
                                                                      log.context.shape[1] + 4)
    assert ("hidden" in record) == (model == "mlp")


@pytest.mark.parametrize("change, field", [
    ({"users": 0}, "ik.users"),
    ({"users": 7}, "ik.users"),  # the contexts have 7 features: none left beside the user
    ({"users": 3}, "settings.users"),  # the record says 3, the settings 4
    ({"model": "mlp", "hidden": 256}, "settings.model"),  # the settings say linear
    ({"model": "tree"}, "ik.model"),
    ({"hidden": 8}, "ik.hidden"),
    ({"input_dim": 7 + 4 + 28}, "ik.input_dim"),  # the features of one meaning per word
])
def test_a_damaged_per_user_grounding_record_is_refused(tmp_path, change, field):
    IGLP(seed=0, users=USERS).fit(swapping_log(300)).save(tmp_path / "model")
    path = tmp_path / "model" / "model.json"
    metadata = json.loads(path.read_text())
    metadata["ik"] |= change
    path.write_text(json.dumps(metadata))
    with pytest.raises(IGLearnError, match=f"field '{field}' is .*the model is damaged"):
        IGLP.load(tmp_path / "model")


def test_a_model_of_one_meaning_per_word_claiming_users_is_refused(tmp_path):
    IGLP(seed=0).fit(swapping_log(300)).save(tmp_path / "model")
    path = tmp_path / "model" / "model.json"
    metadata = json.loads(path.read_text())
    metadata["settings"]["users"] = USERS
    path.write_text(json.dumps(metadata))
    with pytest.raises(IGLearnError, match="field 'settings.users' is 4; expected 0"):
        IGLP.load(tmp_path / "model")


def test_online_per_user_grounding_beats_one_meaning_per_word():
    def late_reward(users: int) -> float:
        rng = np.random.default_rng(1)
        learner = OnlineIGLP(3, USERS + 3, WORDS, seed=1, users=users)
        rewards: list[bool] = []
        while len(rewards) < 1500:
            user, x, context = users_and_contexts(
                min(learner.block_size(), 1500 - len(rewards)), rng)
            action, probability = learner.act_batch(context)
            feedback, reward = swapped_words(user, x, action, rng)
            learner.learn_batch(context, action, probability, feedback)
            rewards.extend(reward)
        return float(np.mean(rewards[750:]))
    shared, personal = late_reward(0), late_reward(USERS)
    assert personal > 0.6 and personal > shared + 0.2, (shared, personal)


def stuck_at_the_saddle(learner: IGLP) -> None:
    """Zero PersonalIK's user and feedback embeddings: s(u, y) = 0 for every user and word, so
    h is uniform and no gradient reaches either factor, the saddle that a warm-started re-fit
    cannot leave."""
    with torch.no_grad():
        for layer in (learner.ik_.net.user, learner.ik_.net.feedback):
            layer.weight.zero_()
            layer.bias.zero_()


@pytest.mark.parametrize("starts", [1, 2])
def test_a_refit_leaves_a_stuck_per_user_model_only_with_a_fresh_start(starts):
    """With one start, a re-fit warm-started at the saddle stays there: no interaction is
    extreme and nothing is learned. A second, fresh start grounds the words per user, has the
    lower log-loss and is kept."""
    log = swapping_log()
    learner = IGLP(seed=0, users=USERS, ik_starts=starts).fit(log)
    stuck_at_the_saddle(learner)
    learner.fit_arrays(learner.standardised(log.context), log.action, log.probability,
                       learner.standardised_feedback(log.feedback), np.zeros(len(log), bool),
                       3, learner.optimisation, warm_start=True)
    rng = np.random.default_rng(5)
    _, test_x, test_context = users_and_contexts(2000, rng)
    accuracy = learner.accuracy(test_context, (test_x @ SWAPPING).argmax(1))
    report = learner.report_
    if starts == 1:
        assert report.ik_losses == [] and report.extreme == 0.0
        assert accuracy < 0.6
    else:
        assert report.ik_kept == 1 and report.ik_losses[1] < report.ik_losses[0]
        assert report.ik_losses[0] == pytest.approx(np.log(3), rel=1e-4)  # uniform h
        assert accuracy > 0.85


def test_a_fresh_start_must_be_clearly_better():
    """A fresh inverse-kinematics start replaces the model a fit starts from only when its
    per-interaction losses are lower by more than SWITCH_CONFIDENCE standard errors of the
    paired difference."""
    rng = np.random.default_rng(0)
    first = np.full(400, np.log(3))  # the saddle: h uniform over K = 3
    assert clearly_lower(first - 0.5, than=first)
    assert not clearly_lower(first, than=first)
    noise = rng.normal(0.0, 1.0, 400)
    assert not clearly_lower(first + noise - noise.mean() - 0.001, than=first)
    assert clearly_lower(first + 0.1 * noise - 0.2, than=first)
    assert SWITCH_CONFIDENCE == 2.0


def test_the_first_start_is_kept_unless_another_is_clearly_better():
    """best_inverse_kinematics fits each start and keeps the first unless a later one's
    losses are clearly lower: a model stuck at the saddle gives way to a grounded one, never
    the other way."""
    log = swapping_log(600)
    learner = IGLP(seed=0, users=USERS).fit(log)
    rows = ik_rows(learner.ik_, learner.standardised(log.context),
                   learner.standardised_feedback(log.feedback))
    dims = (log.context.shape[1], log.feedback.shape[1])
    stuck = copy.deepcopy(learner)
    stuck_at_the_saddle(stuck)
    as_they_are = replace(learner.optimisation, epochs=0)  # no step: compare them as they are

    def choose(first: IGLP, second: IGLP) -> tuple[int, list[float]]:
        return best_inverse_kinematics([first.ik_, second.ik_], rows, log.action,
                                       log.probability, 3, as_they_are,
                                       torch.Generator().manual_seed(0), dims)
    kept, losses = choose(stuck, learner)
    assert kept == 1 and losses[1] < losses[0] == pytest.approx(np.log(3), rel=1e-4)
    assert choose(learner, stuck)[0] == 0
    np.testing.assert_allclose(ik_row_losses(stuck.ik_, rows, log.action, log.probability,
                                             3, dims), np.log(3), rtol=1e-4)


def test_inverse_kinematics_starts_are_per_user_only():
    """One meaning per word fits one (convex) model whatever ik_starts says; with users every
    fit tries ik_starts initialisations and reports each one's log-loss."""
    log = swapping_log(600)
    assert IGLP(seed=0, ik_starts=3).fit(log).report_.ik_losses == []
    report = IGLP(seed=0, users=USERS, ik_starts=3).fit(log).report_
    assert len(report.ik_losses) == 3
    assert report.ik_losses[report.ik_kept] <= report.ik_losses[0]
    assert OnlineIGLP(3, USERS + 3, WORDS, users=USERS, ik_starts=3).batch.ik_starts == 3


def test_per_user_grounding_settings_are_checked():
    with pytest.raises(IGLearnError, match="users must be a whole number"):
        IGLP(users=-1)
    for starts in (0, True, 1.5):
        with pytest.raises(IGLearnError, match="ik_starts must be a whole number >= 1"):
            IGLP(users=USERS, ik_starts=starts)
    log = InteractionLog(context=np.ones((60, 3)), action=np.arange(60) % 3,
                         probability=np.full(60, 1 / 3), feedback=np.eye(2)[np.arange(60) % 2],
                         n_actions=3)
    with pytest.raises(IGLearnError, match="users is 3 but the contexts have 3 features"):
        IGLP(users=3).fit(log)


def test_online_per_user_grounding_fits_longer_unless_told():
    """PersonalIK's product learns slowly from short re-fits: with users, OnlineIGLP's fits
    default to PERSONAL_FIRST_FIT and PERSONAL_REFIT; settings given are kept."""
    plain, personal = (OnlineIGLP(3, USERS + 3, WORDS, users=users) for users in (0, USERS))
    assert (plain.first_fit, plain.refit) == (ONLINE_FIRST_FIT, ONLINE_REFIT)
    assert (personal.first_fit, personal.refit) == (PERSONAL_FIRST_FIT, PERSONAL_REFIT)
    assert personal.refit.max_steps > plain.refit.max_steps
    assert personal.batch.optimisation == PERSONAL_FIRST_FIT
    given = OnlineIGLP(3, USERS + 3, WORDS, users=USERS, first_fit=ONLINE_FIRST_FIT,
                       refit=ONLINE_REFIT)
    assert (given.first_fit, given.refit) == (ONLINE_FIRST_FIT, ONLINE_REFIT)


def test_the_feedback_posterior_is_the_mean_extremeness_of_each_feedback():
    """Three (user, word) pairs seen 400 times each, extreme in half, a quarter and none of
    them: q is their mean extremeness scaled so that the typical extreme interaction's
    feedback (the half) decodes to 1: 1, 1/2 and 0 (up to the ridge's shrinkage)."""
    user = np.repeat(np.eye(2, dtype=np.float32)[[0, 0, 1]], 400, axis=0)
    feedback = np.repeat(np.eye(3, dtype=np.float32)[[0, 1, 1]], 400, axis=0)
    extremeness = np.concatenate([np.arange(400) % 2, np.arange(400) % 4 == 0,
                                  np.zeros(400)]).astype(np.float64)
    model, fitted = fit_feedback_posterior(user, feedback, extremeness)
    decoded = feedback_posterior(model, user, feedback)
    np.testing.assert_allclose(decoded[[0, 400, 800]], [1.0, 0.5, 0.0], atol=0.01)
    assert np.ptp(decoded[:400]) == 0  # one value per (user, word)
    np.testing.assert_allclose(fitted, decoded, atol=1e-6)  # the fit's own, as the model's
    nothing, nothing_fitted = fit_feedback_posterior(user, feedback, np.zeros(1200))
    assert not feedback_posterior(nothing, user, feedback).any() and not nothing_fitted.any()


def test_the_feedback_posterior_refuses_too_many_features(monkeypatch):
    monkeypatch.setattr(iglp_module, "MAX_POSTERIOR_FEATURES", 10)
    user = np.repeat(np.eye(3, dtype=np.float32), 3, axis=0)  # every user says every word
    feedback = np.tile(np.eye(3, dtype=np.float32), (3, 1))
    with pytest.raises(IGLearnError, match="this log has 16, more than 10; use "
                                           "decode_from='interaction'"):
        fit_feedback_posterior(user, feedback, np.ones(9))


def xor_log(n: int = 3000, seed: int = 0) -> tuple[InteractionLog, np.ndarray]:
    """Uniform play where the best of K = 3 actions is not linear in the context (0 where the
    signs of x0 and x1 agree, else 1 or 2 by the sign of x2): half the users swap good and bad
    words. The log and the true reward."""
    rng = np.random.default_rng(seed)
    user, x, context = users_and_contexts(n, rng)
    best = np.where(x[:, 0] * x[:, 1] > 0, 0, np.where(x[:, 2] > 0, 1, 2))
    action = rng.integers(0, 3, n)
    reward = action == best
    says_good = reward == (user >= USERS // 2)
    word = np.where(says_good, rng.integers(0, GOOD, n), rng.integers(GOOD, WORDS, n))
    log = InteractionLog(context=context, action=action, probability=np.full(n, 1 / 3),
                         feedback=np.eye(WORDS, dtype=np.float32)[word], n_actions=3,
                         reward=reward.astype(np.float32))
    return log, reward


def test_decoding_from_the_feedback_reads_rewards_a_linear_h_cannot_place():
    """A linear h(a | x, y) cannot tell the best action from the context, so few rewarded
    interactions (5 %) are extreme on their own; the mean extremeness of each user's words
    tells which words follow a reward: decoded from the feedback, most of the reward is,
    several times more than of interactions without one."""
    log, reward = xor_log()
    own, feedback = (IGLP(seed=0, users=USERS, decode_from=decode).fit(log)
                     for decode in ("interaction", "feedback"))
    assert own.posterior_ is None and feedback.posterior_ is not None
    from_own = own.decode(log.context, log.action, log.feedback)
    from_feedback = feedback.decode(log.context, log.action, log.feedback)
    assert from_own[reward].mean() < 0.1 < 0.6 < from_feedback[reward].mean()
    assert from_feedback[reward].mean() > 3 * from_feedback[~reward].mean()


def test_a_feedback_posterior_saves_and_loads_and_a_damaged_one_is_refused(tmp_path):
    log, _ = xor_log(600)
    learner = IGLP(seed=0, users=USERS, decode_from="feedback").fit(log)
    learner.save(tmp_path / "model")
    back = IGLP.load(tmp_path / "model")
    assert back.decode_from == "feedback" and back.posterior_ is not None
    np.testing.assert_allclose(back.decode(log.context, log.action, log.feedback),
                               learner.decode(log.context, log.action, log.feedback))
    path = tmp_path / "model" / "model.json"
    metadata = json.loads(path.read_text())
    assert metadata["posterior"]["input_dim"] == USERS + WORDS + USERS * WORDS
    for change, field in (({"posterior": {**metadata["posterior"], "input_dim": WORDS}},
                           "posterior.input_dim"),
                          ({"posterior": {**metadata["posterior"], "class": "mlp"}},
                           "posterior.class"),
                          ({"settings": {**metadata["settings"], "decode_from": "interaction"}},
                           "settings.decode_from")):
        path.write_text(json.dumps(metadata | change))
        with pytest.raises(IGLearnError, match=f"field '{field}' is .*the model is damaged"):
            IGLP.load(tmp_path / "model")


def test_decode_from_is_checked_and_reaches_the_online_learner():
    with pytest.raises(IGLearnError, match="unknown decode_from 'words'; choose one of "
                                           "interaction, feedback"):
        IGLP(decode_from="words")  # type: ignore[arg-type]
    assert OnlineIGLP(3, 4, 2, decode_from="feedback").batch.decode_from == "feedback"


def test_the_default_steps_are_100_on_small_logs_and_200_with_per_user_grounding(monkeypatch):
    """IGL-P's defaults extend a log of fewer than 5,000 interactions to 100 steps a model, a
    larger one to 200; with per-user grounding the defaults keep 200 on every log, and
    settings the caller gives are used as given."""
    from iglearn.learners.settings import IGLP_OPTIMISATION

    used: list = []

    def fit_arrays(self: IGLP, *args: object) -> None:  # records the settings only
        used.append(args[-1])
        raise StopIteration

    monkeypatch.setattr(IGLP, "fit_arrays", fit_arrays)
    log = vw_simulator().log(400, seed=0)
    own = replace(IGLP_OPTIMISATION, small_steps=30)
    for learner in (IGLP(seed=0), IGLP(seed=0, users=1), IGLP(seed=0, users=1, optimisation=own)):
        with pytest.raises(StopIteration):
            learner.fit(log)
    assert [settings.cap(400)[0] for settings in used] == [100, 200, 30]
    assert [settings.cap(5000)[0] for settings in used] == [200, 200, 200]


def test_feedback_that_shows_the_action_is_warned_of():
    """On action-inclusive digits nearly every interaction is extreme (the logged action is
    told from the feedback) and the decoded reward says nothing (0.5 % accuracy): warned,
    naming AI-IGL; on digits, where IGL-P learns, no such warning."""
    from iglearn.envs import action_inclusive_environment, digits_environment
    from iglearn.learners import IdentifiabilityWarning

    with pytest.warns(IdentifiabilityWarning, match=r"IGL-P reads 9\d% of the interactions "
                                                    r"as extreme.*--algorithm ai-igl"):
        shown = IGLP(seed=0).fit(action_inclusive_environment("digits").log(500, seed=0))
    assert shown.report_.extreme > 0.9
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        learnt = IGLP(seed=0).fit(digits_environment().log(500, seed=0))
    assert learnt.report_.extreme < 0.3
    assert not [w for w in caught if "as extreme" in str(w.message)]


def fitted_state(learner: IGLP) -> dict[str, torch.Tensor]:
    """The three models' parameters, by model and name."""
    return {f"{name}.{key}": value for name, model in learner.fitted_models().items()
            for key, value in model.state_dict().items()}


def test_a_second_fit_starts_afresh():
    """fit starts from fresh models and a fresh random state every time: fitted again, with
    the same seed and log, a learner ends as a new one; a log of another K and widths is
    fitted as any other. Only the online learner's re-fits continue (warm_start)."""
    first, second = vw_simulator().log(400, seed=0), vw_simulator().log(400, seed=1)
    learner = IGLP(seed=0).fit(first).fit(second)
    fresh = IGLP(seed=0).fit(second)
    refitted, new = fitted_state(learner), fitted_state(fresh)
    assert refitted.keys() == new.keys()
    for key in new:
        assert torch.allclose(refitted[key], new[key], atol=1e-6), key
    np.testing.assert_allclose(learner.predict_values(second.context),
                               fresh.predict_values(second.context), atol=1e-6)
    from iglearn.envs import digits_environment

    digits = digits_environment().log(300, seed=0)  # K = 10, other widths
    learner.fit(digits)
    np.testing.assert_allclose(learner.predict_values(digits.context),
                               IGLP(seed=0).fit(digits).predict_values(digits.context),
                               atol=1e-6)
    ik = learner.ik_
    learner.fit_arrays(learner.standardised(digits.context), digits.action,
                       digits.probability, learner.standardised_feedback(digits.feedback),
                       np.zeros(len(digits), bool), 10, learner.optimisation, warm_start=True)
    assert learner.ik_ is ik  # continued in place
    learner.fit_arrays(learner.standardised(digits.context), digits.action,
                       digits.probability, learner.standardised_feedback(digits.feedback),
                       np.zeros(len(digits), bool), 10, learner.optimisation)
    assert learner.ik_ is not ik


def test_an_unfitted_learner_says_so_before_reading_the_contexts():
    """predict, predict_proba, predict_values and accuracy of an unfitted IGLP name the
    missing fit, not the columns of the frame they were given."""
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    learner = IGLP()
    for call in (learner.predict, learner.predict_proba, learner.predict_values,
                 lambda contexts: learner.accuracy(contexts, np.zeros(2, int))):
        with pytest.raises(IGLearnError, match=r"IGLP is not fitted yet; call fit\(log\) first"):
            call(frame)
