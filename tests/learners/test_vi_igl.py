"""VI-IGL: its critics' bounds against known mutual information, the symmetry choice, fits,
save/load."""

import json
import math
import warnings

import numpy as np
import pytest
import torch

from iglearn.data.logs import InteractionLog
from iglearn.envs.mnist import digits_environment
from iglearn.envs.noisy import NoisyFeedbackEnvironment
from iglearn.errors import IGLearnError
from iglearn.learners import VIIGL, IdentifiabilityWarning, Optimisation
from iglearn.learners.settings import VIIGL_OPTIMISATION, VIIGLSettings
from iglearn.learners.trials import Batch, Trials, side_by_side
from iglearn.learners.vi_igl import (
    _pair_blocks,
    _set_mlp,
    _set_slot_mlp,
    _slot_outputs,
    action_slots,
    choose_orientation,
    conditional_bound,
    critic_scores,
    decoder_decay_scale,
    decoder_stage,
    following,
    make_critics,
    marginal_bound,
    pair_gradients,
    pair_scores,
    partner_rows,
    partnering_sum,
    split_divergence,
    variational_bound,
)
from iglearn.models import make_decoder
from iglearn.models.decoders import LinearDecoder


def gaussian_pairs(rho: float, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """n draws of a standard bivariate Gaussian with correlation rho."""
    x = rng.standard_normal(n)
    y = rho * x + math.sqrt(1 - rho * rho) * rng.standard_normal(n)
    return x, y


def log_ratio(x: np.ndarray, y: np.ndarray, rho: float) -> np.ndarray:
    """log p(x, y) / (p(x) p(y)) of the standard bivariate Gaussian with correlation rho."""
    s = 1 - rho * rho
    return -0.5 * math.log(s) - (rho * rho * (x * x + y * y) - 2 * rho * x * y) / (2 * s)


def optimal_critic(x: np.ndarray, y: np.ndarray, rho: float, divergence: str) -> torch.Tensor:
    """f'(dP/dQ): 1 + log ratio for KL, 2 (ratio - 1) for chi-square."""
    r = log_ratio(x, y, rho)
    return torch.from_numpy(1 + r if divergence == "kl" else 2 * (np.exp(r) - 1))


def information(rho: float, divergence: str) -> float:
    """The mutual information (KL) or chi-square information of a bivariate Gaussian."""
    if divergence == "kl":
        return -0.5 * math.log(1 - rho * rho)
    return rho * rho / (1 - rho * rho)


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_variational_bound_reaches_the_gaussian_information_at_the_optimal_critic(divergence):
    rng = np.random.default_rng(0)
    rho, n = 0.5, 200_000
    x, y = gaussian_pairs(rho, n, rng)
    shuffled = rng.permutation(y)
    uniform = torch.full((n,), 1.0 / n, dtype=torch.float64)
    best = variational_bound(optimal_critic(x, y, rho, divergence), uniform,
                             optimal_critic(x, shuffled, rho, divergence), uniform, divergence)
    truth = information(rho, divergence)
    assert float(best) == pytest.approx(truth, abs=0.03)
    # any other critic scores less: the bound is a lower bound
    worse = variational_bound(0.5 * optimal_critic(x, y, rho, divergence), uniform,
                              0.5 * optimal_critic(x, shuffled, rho, divergence), uniform,
                              divergence)
    assert float(worse) < truth - 0.02


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_conditional_bound_is_the_conditional_information_of_gaussians(divergence):
    """R is one-hot (psi 0 or 1); given R = r, (X, Y) is a Gaussian with correlation rho_r:
    I(Y; X | R) = sum_r P(r) I_r, reached by the optimal critic over every pair of rows."""
    rng = np.random.default_rng(1)
    n, rhos, share = 1500, (0.3, 0.6), 0.25
    r = (rng.random(n) < share).astype(np.int64)
    x, y = np.empty(n), np.empty(n)
    for value, rho in enumerate(rhos):
        rows = np.flatnonzero(r == value)
        x[rows], y[rows] = gaussian_pairs(rho, len(rows), rng)
    partners = partner_rows(n, n)  # every other row
    pairs = torch.stack([optimal_critic(x[:, None], y[partners.numpy()], rho, divergence)
                         for rho in rhos])
    joint = torch.stack([optimal_critic(x, y, rho, divergence) for rho in rhos], dim=-1)
    q = torch.nn.functional.one_hot(torch.from_numpy(r), 2).double()
    w = torch.full((n,), 1.0 / n, dtype=torch.float64)
    found = float(conditional_bound(joint, pairs, q, w, divergence))
    # a few partners per row (the rows are in random order) estimate the same law
    few = partner_rows(n, 64)
    shuffled = torch.stack([optimal_critic(x[:, None], y[few.numpy()], rho, divergence)
                            for rho in rhos])
    approx = conditional_bound(joint, shuffled, q, w, divergence)
    truth = (1 - r.mean()) * information(rhos[0], divergence) + r.mean() * information(
        rhos[1], divergence)
    assert found == pytest.approx(truth, abs=0.04)
    assert float(approx) == pytest.approx(truth, abs=0.06)


def test_marginal_bound_is_the_information_between_a_gaussian_mixture_and_its_label():
    """R ~ Bernoulli(0.3), X | R ~ N(2R - 1, 1): I(X; R) by numerical integration, reached by
    the optimal KL critic 1 + log p(r | x) / p(r); importance weights that are not uniform (a
    logging policy) leave it unchanged when they do not depend on (x, r)."""
    rng = np.random.default_rng(2)
    n, prior = 100_000, 0.3
    r = (rng.random(n) < prior).astype(np.int64)
    x = rng.standard_normal(n) + 2 * r - 1

    def posterior(x):  # p(r = 1 | x)
        one = prior * np.exp(-0.5 * (x - 1) ** 2)
        return one / (one + (1 - prior) * np.exp(-0.5 * (x + 1) ** 2))

    grid = np.linspace(-12, 12, 200_001)
    density = (prior * np.exp(-0.5 * (grid - 1) ** 2)
               + (1 - prior) * np.exp(-0.5 * (grid + 1) ** 2)) / math.sqrt(2 * math.pi)
    post = posterior(grid)
    entropy = lambda p: -(p * np.log(p) + (1 - p) * np.log(1 - p))  # noqa: E731
    truth = entropy(prior) - float(np.sum(density * entropy(post)) * (grid[1] - grid[0]))
    t = torch.from_numpy(np.stack([1 + np.log((1 - posterior(x)) / (1 - prior)),
                                   1 + np.log(posterior(x) / prior)], axis=-1))
    q = torch.nn.functional.one_hot(torch.from_numpy(r), 2).double()
    w = torch.full((n,), 1.0 / n, dtype=torch.float64)
    assert float(marginal_bound(t, q, w, "kl")) == pytest.approx(truth, abs=0.01)


@pytest.mark.parametrize(("n", "pairs"), [(1, 8), (5, 8), (40, 8), (129, 8), (500, 32)])
def test_pair_scores_are_the_partners_inner_products(n, pairs):
    """The blocks' products, read along their diagonals, are <phi_i(r), chi_j(r)> for j in row
    i of the partner rows, whether or not the blocks divide the rows."""
    g = torch.Generator().manual_seed(0)
    phi, chi = (torch.randn(3, n, 2, 5, generator=g, dtype=torch.float64) for _ in range(2))
    partners = partner_rows(n, pairs)
    expected = torch.einsum("tird,timrd->trim", phi, chi[:, partners])
    torch.testing.assert_close(pair_scores(phi, chi, pairs), expected)


@pytest.mark.parametrize(("n", "pairs"), [(1, 8), (2, 8), (5, 8), (40, 8), (129, 8), (500, 32)])
def test_partners_values_and_the_sums_each_row_receives(n, pairs):
    """following gives each row its partners' values; partnering_sum gives row l the sum, over
    the rows i it partners, of what i holds for it: the index's transpose."""
    g = torch.Generator().manual_seed(1)
    partners = partner_rows(n, pairs)
    values = torch.randn(3, 2, n, generator=g, dtype=torch.float64)
    torch.testing.assert_close(following(values, partners.shape[1]), values[..., partners])
    scores = torch.randn(3, 2, n, partners.shape[1], generator=g, dtype=torch.float64)
    expected = torch.zeros(3, 2, n, dtype=torch.float64).index_add_(
        -1, partners.flatten(), scores.flatten(-2))
    torch.testing.assert_close(partnering_sum(scores), expected)


@pytest.mark.parametrize(("n", "pairs"), [(1, 8), (2, 8), (5, 8), (40, 8), (129, 8), (500, 32)])
def test_pair_gradients_are_the_block_products_backward_pass(n, pairs):
    """pair_gradients gives phi and chi the gradients autograd finds through pair_scores,
    whether or not the blocks divide the rows and however often the rows wrap."""
    g = torch.Generator().manual_seed(2)
    phi, chi = (torch.randn(3, n, 2, 5, generator=g, dtype=torch.float64, requires_grad=True)
                for _ in range(2))
    scores, left, right = _pair_blocks(phi, chi, pairs)
    grad = torch.randn(scores.shape, generator=g, dtype=torch.float64)
    (scores * grad).sum().backward()
    d_phi, d_chi = pair_gradients(left.detach(), right.detach(), grad, chi.detach())
    torch.testing.assert_close(d_phi, phi.grad)
    torch.testing.assert_close(d_chi, chi.grad)


def _stage_inputs(n: int, k: int, dim: int = 6, width: int = 4) -> tuple[Batch, list, list]:
    """A mini-batch of two trials (n rows, K = k, random logging probabilities) and two
    small critics (embeddings ``width`` wide) and linear decoders for the decoder stage, all
    drawn from fixed seeds."""
    g = torch.Generator().manual_seed(0)
    batch = Batch(torch.randn(2, n, dim, generator=g), torch.randint(0, k, (2, n), generator=g),
                  0.05 + torch.rand(2, n, generator=g), torch.randn(2, n, dim, generator=g))
    settings = VIIGLSettings(critic_hidden=8, critic_width=width)
    critics = [make_critics(settings, dim, dim, k, torch.Generator().manual_seed(s))
               for s in (1, 2)]
    decoders = [make_decoder("linear", dim, torch.Generator().manual_seed(s), 1.0)
                for s in (3, 4)]
    return batch, critics, decoders


@pytest.mark.parametrize("divergence", ["kl", "chi2-kl"])
def test_decoder_stage_loss_and_gradients_are_those_of_each_bound_evaluated_twice(divergence):
    """The stage evaluates each bound once, the critics' gradients reversed through their
    scores; on fixed weights its value and every parameter's gradient are those of the
    formula that evaluates each bound twice (once for the critics, psi held fixed, once for
    psi, the critics held fixed)."""
    n, k, beta = 60, 4, 10.0
    batch, critics, decoders = _stage_inputs(n, k)
    g_div, t_div = split_divergence(divergence)
    with side_by_side(critics) as critic, side_by_side(decoders) as psi:
        stage = decoder_stage(psi, critic, VIIGL_OPTIMISATION, beta, divergence, 16)
        value = stage.loss(batch)
        value.sum().backward()
        found = [p.grad.clone() for p in stage.params]
        for p in stage.params:
            p.grad = None
        w, q, joint, product, t = critic_scores(critic, psi, batch, 16)
        g_critic = conditional_bound(joint, product, q.detach(), w, g_div)
        t_critic = marginal_bound(t, q.detach(), w, t_div)
        g_psi = conditional_bound(joint.detach(), product.detach(), q, w, g_div)
        t_psi = marginal_bound(t.detach(), q, w, t_div)
        expected = g_psi - beta * t_psi
        (expected - g_critic - t_critic).sum().backward()
        torch.testing.assert_close(value.detach(), expected.detach())
        for p, grad in zip(stage.params, found, strict=True):
            assert p.grad is not None and p.grad.abs().max() > 0
            torch.testing.assert_close(grad, p.grad, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("divergence", ["kl", "chi2", "chi2-kl"])
@pytest.mark.parametrize(("n", "k", "pairs", "width"),
                         [(60, 4, 16, 4), (37, 12, 8, 4), (37, 3, 8, 1), (5, 3, 8, 4),
                          (1, 3, 8, 4)])
def test_decoder_stage_closed_form_gives_the_autograd_loss_and_gradients(divergence, n, k,
                                                                         pairs, width):
    """With a linear decoder the stage computes its loss and gradients in closed form: the
    loss and every parameter's gradient of the autograd form, up to float rounding, for
    each divergence, a trial whose decoder is flipped, narrow and wide critic outputs,
    blocks that do not divide the rows, and a mini-batch of one row."""
    beta = 10.0
    batch, critics, decoders = _stage_inputs(n, k, width=width)
    decoders[1].flipped.fill_(True)
    with side_by_side(critics) as critic, side_by_side(decoders) as psi:
        stage = decoder_stage(psi, critic, VIIGL_OPTIMISATION, beta, divergence, pairs)
        assert stage.closed_form is not None
        value = stage.loss(batch)
        value.sum().backward()
        expected = [p.grad.clone() for p in stage.params]
        for p in stage.params:
            p.grad = None
        torch.testing.assert_close(stage.closed_form(batch), value.detach())
        for p, grad in zip(stage.params, expected, strict=True):
            assert grad.abs().max() > 0
            torch.testing.assert_close(p.grad, grad, rtol=1e-4, atol=1e-6)


def test_a_decoder_other_than_linear_trains_by_autograd():
    """The closed form is the linear decoder's: an MLP decoder's stage has none."""
    settings = VIIGLSettings(critic_hidden=8, critic_width=4)
    critic = make_critics(settings, 3, 3, 3, torch.Generator().manual_seed(0))
    decoder = make_decoder("mlp", 3, torch.Generator().manual_seed(1), 1.0)
    with side_by_side([critic]) as critics, side_by_side([decoder]) as psi:
        assert decoder_stage(psi, critics, VIIGL_OPTIMISATION, 10.0, "kl", 8).closed_form is None


def _rare_reward_log(n: int = 2000) -> InteractionLog:
    """A uniform log (K = 10) whose one feedback column is the reward, rewarded about 10 %."""
    rng = np.random.default_rng(3)
    reward = (rng.random(n) < 0.1).astype(np.float32)
    return InteractionLog(context=rng.standard_normal((n, 2)).astype(np.float32),
                          action=rng.integers(0, 10, n), probability=np.full(n, 0.1),
                          feedback=reward[:, None].copy(), n_actions=10, reward=reward)


def _decoder(weight: float, bias: float) -> LinearDecoder:
    decoder = LinearDecoder(1, temperature=1.0)
    with torch.no_grad():
        decoder.net.weight.fill_(weight)
        decoder.net.bias.fill_(bias)
    return decoder


def test_the_symmetry_choice_makes_the_rarer_event_the_reward():
    """A decoder that calls the unrewarded feedback a reward (psi 0.88 where r = 0, 0.12
    where r = 1) on a log where r = 1 is rare is flipped."""
    log = _rare_reward_log()
    decoder = _decoder(-4.0, 2.0)
    rate, share, flipped, _ = choose_orientation([decoder], Trials.from_logs([log], "feedback"), 10)
    assert flipped.tolist() == [True] and rate[0] < 0.25
    assert share[0] == pytest.approx(log.reward.mean())
    with torch.no_grad():
        psi = decoder(torch.from_numpy(log.feedback)).numpy()
    assert psi[log.reward == 1].mean() > 0.8 > 0.2 > psi[log.reward == 0].mean()
    # the right orientation is kept
    rate, share, flipped, _ = choose_orientation([decoder], Trials.from_logs([log], "feedback"), 10)
    assert flipped.tolist() == [False] and rate[0] < 0.25


def test_the_symmetry_choice_reads_the_share_decoded_as_reward_not_the_mean():
    """A decoder that separates the rewards without reaching 0 and 1, the wrong way round
    (psi 0.53 where r = 0, 0.05 where r = 1, as a VI-IGL fit of 5,000 digits interactions
    ended: mean about 0.48) calls 90 % of the feedback a reward and is flipped, although its
    mean is below one half."""
    log = _rare_reward_log()
    decoder = _decoder(-math.log(0.53 / 0.47) - math.log(0.95 / 0.05), math.log(0.53 / 0.47))
    with torch.no_grad():
        psi = decoder(torch.from_numpy(log.feedback)).numpy()
    assert psi.mean() < 0.5 and (psi > 0.5).mean() > 0.85
    rate, share, flipped, _ = choose_orientation([decoder], Trials.from_logs([log], "feedback"), 10)
    assert flipped.tolist() == [True]
    assert share[0] == pytest.approx(log.reward.mean())
    with torch.no_grad():
        psi = decoder(torch.from_numpy(log.feedback)).numpy()
    assert psi[log.reward == 1].mean() > 0.9 and psi[log.reward == 0].mean() < 0.5


@pytest.fixture(scope="module")
def noisy_digits():
    """A uniform log of digits with 10 % independent noise in the feedback, and the task."""
    env = NoisyFeedbackEnvironment(digits_environment(), "independent", 0.1)
    return env, env.log(2000, np.random.default_rng(4))


@pytest.mark.slow
@pytest.mark.parametrize("divergence", ["kl", "chi2", "chi2-kl"])
def test_vi_igl_learns_digits_with_independent_noise(noisy_digits, divergence):
    env, log = noisy_digits
    learner = VIIGL(seed=0, divergence=divergence).fit(log)
    test_x, test_y = env.test_set()
    assert learner.accuracy(test_x, test_y) > 0.7   # chance is 0.1
    report = learner.report_
    assert report.reward_rate < 0.2 and report.marginal_bound > 0
    assert report.corrector_statistic < 0.2 and not any("ambiguous" in w for w in report.warnings)
    assert report.action_explained < 0.1 and not report.warnings
    psi = learner.decode(log.feedback)
    assert psi[log.reward == 1].mean() > 0.7 > 0.3 > psi[log.reward == 0].mean()


@pytest.mark.slow
def test_vi_igl_reweights_a_skewed_logging_policy():
    env = NoisyFeedbackEnvironment(digits_environment(), "independent", 0.1)
    skew = np.linspace(1.0, 3.0, env.n_actions)
    log = env.log(2000, np.random.default_rng(5),
                  policy=lambda x: np.tile(skew / skew.sum(), (len(x), 1)))
    learner = VIIGL(seed=1).fit(log)
    assert learner.accuracy(*env.test_set()) > 0.7


def test_fit_many_matches_separate_fits(noisy_digits):
    _, log = noisy_digits
    small = InteractionLog(**{**log.__dict__, **{name: getattr(log, name)[:600] for name in
                                                 ("context", "action", "probability",
                                                  "feedback", "reward", "label")}})
    short = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=30)
    alone = VIIGL(seed=7, optimisation=short).fit(small)
    together = VIIGL.fit_many([VIIGL(seed=7, optimisation=short),
                               VIIGL(seed=8, optimisation=short)], [small, small])
    np.testing.assert_allclose(together[0].predict_proba(small.context),
                               alone.predict_proba(small.context), atol=2e-3)


def test_attempts_that_do_not_ground_are_restarted_and_the_best_kept(noisy_digits):
    _, log = noisy_digits
    short = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=30)
    small = log.subset(np.arange(600))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        learner = VIIGL(seed=3, optimisation=short, restart_bound=10.0).fit(small)
    report = learner.report_  # no bound reaches 10 nats: every restart is used
    assert report.restarts == 2 and len(report.attempt_bounds) == 3
    assert report.marginal_bound == max(report.attempt_bounds)
    assert any("tells almost nothing" in str(w.message) for w in caught)
    once = VIIGL(seed=3, optimisation=short, restart_bound=10.0, max_restarts=0).fit(small)
    assert once.report_.restarts == 0
    assert once.report_.attempt_bounds == pytest.approx(report.attempt_bounds[:1], abs=1e-5)


@pytest.mark.slow
def test_a_decoder_that_did_not_ground_is_refitted():
    # on this log and seed the first attempt's decoded reward was independent of (x, a)
    # (marginal bound -0.002) and its policy scored 15 %; the restart grounded
    env = digits_environment()
    log = env.log(2000, np.random.default_rng([5, 0, 2000]))
    learner = VIIGL(seed=np.random.default_rng([5, 0, 2000, 1])).fit(log)
    report = learner.report_
    assert report.marginal_bound == max(report.attempt_bounds) > 0
    assert learner.accuracy(*env.test_set()) > 0.85


def test_save_and_load_give_identical_predictions(noisy_digits, tmp_path):
    _, log = noisy_digits
    short = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=30)
    learner = VIIGL(seed=2, divergence="chi2", beta=5.0, optimisation=short).fit(log)
    learner.save(tmp_path / "model")
    loaded = VIIGL.load(tmp_path / "model")
    assert type(loaded) is VIIGL and (loaded.divergence, loaded.beta) == ("chi2", 5.0)
    np.testing.assert_array_equal(loaded.predict_proba(log.context),
                                  learner.predict_proba(log.context))
    np.testing.assert_array_equal(loaded.decode(log.feedback), learner.decode(log.feedback))
    assert loaded.report_.flipped == learner.report_.flipped
    assert loaded.report_.corrector_statistic == learner.report_.corrector_statistic
    # a model saved before the report had the corrector statistic keeps its report
    meta = tmp_path / "model" / "model.json"
    record = json.loads(meta.read_text())
    del record["training"]["corrector_statistic"]
    meta.write_text(json.dumps(record))
    older = VIIGL.load(tmp_path / "model")
    assert older.report_.corrector_statistic is None
    assert older.report_.marginal_bound == learner.report_.marginal_bound


def test_feedback_that_shows_the_action_is_warned():
    # the simulated BCI's feedback responds to the action taken: VI-IGL's decoder reads it
    from iglearn.envs import BCIEnvironment
    from iglearn.theory import ACTION_EXPLAINED

    log = BCIEnvironment(noise=0.05).log(300, 0)
    with pytest.warns(IdentifiabilityWarning, match="logged action explains .* VI-IGL"):
        learner = VIIGL(seed=0).fit(log)
    assert learner.report_.action_explained > ACTION_EXPLAINED


def test_k_equal_two_warns():
    rng = np.random.default_rng(6)
    n = 400
    reward = (rng.random(n) < 0.5).astype(np.float32)
    log = InteractionLog(context=rng.standard_normal((n, 3)).astype(np.float32),
                         action=rng.integers(0, 2, n), probability=np.full(n, 0.5),
                         feedback=rng.standard_normal((n, 4)).astype(np.float32), n_actions=2,
                         reward=reward)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        VIIGL(seed=0, optimisation=Optimisation(1, 1, 1, max_steps=20)).fit(log)
    assert any(issubclass(w.category, IdentifiabilityWarning) and "K = 2" in str(w.message)
               for w in caught)


@pytest.mark.parametrize("settings", [{"divergence": "hellinger"}, {"beta": 0.0},
                                      {"critic_width": 0}, {"critic_clip": float("nan")},
                                      {"max_restarts": -1},
                                      {"restart_bound": float("inf")}])
def test_settings_that_cannot_work_are_refused(settings):
    with pytest.raises(IGLearnError, match=next(iter(settings))):
        VIIGL(**settings)


def test_the_decoder_of_standardised_feedback_decays_as_if_it_counted_at_most_250():
    assert decoder_decay_scale(True, 200) == 3.0
    assert decoder_decay_scale(True, 250) == 3.0
    assert decoder_decay_scale(True, 500) == 6.0
    assert decoder_decay_scale(True, 1000) == 12.0
    assert decoder_decay_scale(True, 5000) == 12.0   # the growth's bound
    assert decoder_decay_scale(False, 500) == 1.0   # feedback read as it was logged


def test_the_context_critic_computes_and_differentiates_each_rows_own_action_block_only():
    generator = torch.Generator().manual_seed(0)
    trials, n, k, width = 2, 37, 4, 3
    action = torch.randint(0, k - 1, (trials, n), generator=generator)  # k - 1 never logged
    action[1, 5:] = 0  # trial 1: one action most of the rows, one group much longer
    settings = VIIGLSettings(critic_hidden=5, critic_width=width)
    with side_by_side([make_critics(settings, 3, 2, k, generator)
                       for _ in range(trials)]) as critics:
        net = critics.context
        x = torch.randn(trials, n, 3, generator=generator)
        slots = action_slots(action, k)
        assert slots.rows.shape[0] == trials * k  # every (trial, action) group, empty or not
        with torch.no_grad():
            hidden = torch.relu(net[0](x))
            own, grouped = _slot_outputs(net[2], hidden, slots)
            slot = action[..., None, None].expand(trials, n, 1, 2 * width)
            full = net[2](hidden).unflatten(-1, (k, 2 * width))
            assert torch.allclose(own, full.gather(-2, slot).squeeze(-2), atol=1e-6)
            gradient = torch.randn(trials, n, 2 * width, generator=generator)
            _set_slot_mlp(net, x, hidden, grouped, slots, gradient)
            mine = [p.grad.clone() for p in net.parameters()]
            dense = torch.zeros_like(full).scatter_(-2, slot, gradient[..., None, :])
            _set_mlp(net, x, hidden, dense.flatten(-2))  # the full output's gradient
            for got, expected in zip(mine, [p.grad for p in net.parameters()], strict=True):
                assert torch.allclose(got, expected, atol=1e-5)
