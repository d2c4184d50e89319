"""Scale-free inputs: every learner standardises with its log's statistics ("auto": the blocks
off the unit scale only), keeps them in the model and applies them wherever it reads inputs
(:mod:`iglearn.data.scaling`)."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest
import torch

from iglearn import AIIGL, BatchIGL, ContextualBandit, Supervised
from iglearn.data.logs import InteractionLog
from iglearn.data.scaling import CLIP, Standardiser, column_spread
from iglearn.envs import BCIEnvironment, action_inclusive_environment, digits_environment
from iglearn.learners import Optimisation
from iglearn.learners.e2g import OnlineContextualBandit
from iglearn.learners.iglp import IGLP, OnlineIGLP
from iglearn.learners.registry import load_model
from iglearn.learners.regression import OnlineRegressionCB
from iglearn.learners.schedules import PaperSchedule
from iglearn.learners.vi_igl import VIIGL
from iglearn.models.archive import load_archive, pack_model

QUICK = Optimisation(max_steps=60)
SCALE, SHIFT = np.float32(0.05), np.float32(35.0)


def raw(log: InteractionLog) -> InteractionLog:
    """The log with its contexts and feedback scaled by 0.05 and shifted by 35, as raw
    measurements might be."""
    return InteractionLog(log.context * SCALE + SHIFT, log.action, log.probability,
                          log.feedback * SCALE + SHIFT, log.n_actions, log.reward, log.label,
                          "raw")


def quietly(learner, log):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return learner.fit(log)


LEARNERS = {
    "igl": lambda **kw: BatchIGL(optimisation=QUICK, **kw),
    "ai-igl": lambda **kw: AIIGL(optimisation=Optimisation(grounding_epochs=2, policy_epochs=1,
                                                           epochs=2, max_steps=60), **kw),
    "igl-p": lambda **kw: IGLP(optimisation=QUICK, **kw),
    "cb": lambda **kw: ContextualBandit(optimisation=QUICK, **kw),
    "sup": lambda **kw: Supervised(optimisation=QUICK, **kw),
}


@pytest.fixture(scope="module")
def task():
    env = digits_environment()
    return env.log(1000, seed=5), env.test_set()[0]


@pytest.fixture(scope="module")
def inclusive():
    env = action_inclusive_environment("digits")
    return env.log(1500, seed=6), env.test_set()[0]


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_shifted_and_scaled_inputs_give_the_same_actions(name, task, inclusive):
    log, test = inclusive if name == "ai-igl" else task
    original = quietly(LEARNERS[name](seed=1, standardise="on"), log)
    shifted = quietly(LEARNERS[name](seed=1), raw(log))
    assert shifted.standardiser_.context_rule == "auto: off scale"
    agreement = (original.predict(test) == shifted.predict(test * SCALE + SHIFT)).mean()
    assert agreement >= 0.95, f"{name}: {agreement:.1%} of the actions agree"
    np.testing.assert_allclose(shifted.standardiser_.context_mean,
                               original.standardiser_.context_mean * SCALE + SHIFT,
                               rtol=1e-5)


@pytest.mark.parametrize("same_unit", ["none", "both"])
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_raw_inputs_fit_as_the_log_standardised_by_hand(name, same_unit, task, inclusive):
    log, test = inclusive if name == "ai-igl" else task
    plain = LEARNERS[name](seed=2, standardise="off")
    scaler = Standardiser.of_log(raw(log), row_spread=plain.row_spread,  # the learner's
                                 origins=plain.origins, same_unit=same_unit)
    by_hand = quietly(plain, scaler.apply_log(raw(log)))
    automatic = quietly(LEARNERS[name](seed=2, same_unit=same_unit), raw(log))
    assert by_hand.standardiser_ is None
    assert automatic.standardiser_.context_rule == (
        "auto: off scale" + (", one scale" if same_unit == "both" else ""))
    test = test * SCALE + SHIFT
    agreement = (by_hand.predict(scaler.apply(test)) == automatic.predict(test)).mean()
    assert agreement >= 0.95, f"{name}: {agreement:.1%} of the actions agree"


def test_the_baselines_standardise_to_unit_z_scores_and_igl_learners_to_row_spread(task):
    log, _ = task
    def spread_before_clipping(learner) -> np.ndarray:  # noqa: ANN001
        scaler = learner.standardiser_
        out = (raw(log).context - scaler.context_mean) / scaler.context_scale
        return out.std(0)[out.std(0) > 0]

    for name in ("cb", "sup"):
        learner = quietly(LEARNERS[name](seed=2), raw(log))
        assert learner.standardiser_.rules["context"] == "auto: off scale"
        np.testing.assert_allclose(spread_before_clipping(learner), 1.0, rtol=1e-3)
        assert learner.standardiser_.context_limit == CLIP  # CLIP unit standard deviations
    learner = quietly(LEARNERS["igl"](seed=2), raw(log))
    spread = spread_before_clipping(learner)
    np.testing.assert_allclose(spread, column_spread(len(spread)), rtol=1e-3)
    assert learner.standardiser_.context_limit == pytest.approx(CLIP * column_spread(
        len(spread)))


def test_standardise_off_reads_raw_values(task):
    log, test = task
    learner = quietly(BatchIGL(optimisation=QUICK, seed=3, standardise="off"), log)
    assert learner.standardiser_ is None
    import torch
    with torch.no_grad():
        direct = learner.policy_.probabilities(torch.from_numpy(test)).numpy()
    np.testing.assert_allclose(learner.predict_proba(test), direct, rtol=1e-6)
    on = quietly(BatchIGL(optimisation=QUICK, seed=3, standardise="on"), log)
    assert on.standardiser_.rules == {"context": "on", "feedback": "on"}
    with torch.no_grad():
        unscaled = on.policy_.probabilities(torch.from_numpy(test)).numpy()
    assert not np.allclose(on.predict_proba(test), unscaled)


@pytest.mark.parametrize(("name", "same_unit"), [("igl", "none"), ("ai-igl", "none"),
                                                ("igl-p", "none"), ("igl", "feedback")])
def test_statistics_are_saved_and_reloaded(name, same_unit, task, inclusive, tmp_path):
    log, test = inclusive if name == "ai-igl" else task
    learner = quietly(LEARNERS[name](seed=4, same_unit=same_unit), raw(log))
    test = test * SCALE + SHIFT
    folder = learner.save(tmp_path / "model")
    record = json.loads((folder / "model.json").read_text())["standardiser"]
    assert record["method"] == "log" and len(record["context_mean"]) == log.context_dim
    assert record["context_rule"] == "auto: off scale"
    assert record["feedback_rule"] == "auto: off scale" + (
        ", one scale" if same_unit == "feedback" else "")
    for loaded in (load_model(folder), load_archive(pack_model(folder))):
        np.testing.assert_allclose(loaded.predict_proba(test), learner.predict_proba(test),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(loaded.predict(test), learner.predict(test))


def test_a_model_saved_without_statistics_loads_as_raw(task, tmp_path):
    log, test = task
    learner = quietly(BatchIGL(optimisation=QUICK, seed=4, standardise="off"), log)
    folder = learner.save(tmp_path / "model")
    metadata = json.loads((folder / "model.json").read_text())
    assert metadata["standardiser"] is None
    del metadata["standardiser"]  # as written before iglearn standardised
    (folder / "model.json").write_text(json.dumps(metadata))
    loaded = load_model(folder)
    assert loaded.standardiser_ is None
    np.testing.assert_array_equal(loaded.predict(test), learner.predict(test))


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_auto_leaves_a_unit_scale_log_as_it_is(name, task, inclusive):
    log, test = inclusive if name == "ai-igl" else task
    auto = quietly(LEARNERS[name](seed=7), log)
    scaler = auto.standardiser_
    assert scaler.context_rule == "auto: unit scale"
    assert scaler.feedback_rule == ("not read" if name in ("cb", "sup") else "auto: unit scale")
    np.testing.assert_array_equal(scaler.context_mean, 0.0)
    np.testing.assert_array_equal(scaler.context_scale, 1.0)
    np.testing.assert_array_equal(scaler.apply(test), test)
    off = quietly(LEARNERS[name](seed=7, standardise="off"), log)
    assert off.standardiser_ is None
    assert (auto.predict(test) == off.predict(test)).mean() >= 0.99


def test_auto_standardises_each_block_on_its_own(task, tmp_path):
    log, test = task
    contexts_raw = InteractionLog(log.context * SCALE + SHIFT, log.action, log.probability,
                                  log.feedback, log.n_actions, log.reward, log.label)
    learner = quietly(BatchIGL(optimisation=QUICK, seed=8), contexts_raw)
    assert learner.standardiser_.rules == {"context": "auto: off scale",
                                           "feedback": "auto: unit scale"}
    np.testing.assert_array_equal(learner.decode(log.feedback[:50]),
                                  quietly_decode(learner, log.feedback[:50]))
    loaded = load_model(learner.save(tmp_path / "model"))
    assert loaded.standardiser_.rules == learner.standardiser_.rules
    np.testing.assert_array_equal(loaded.predict(test * SCALE + SHIFT),
                                  learner.predict(test * SCALE + SHIFT))


def quietly_decode(learner, feedback):
    """The decoder applied to the feedback as given (the block left as it is)."""
    import torch
    with torch.no_grad():
        return learner.decoder_(torch.from_numpy(feedback)).numpy()


@pytest.mark.parametrize("mode", [True, "yes", None])
def test_an_unknown_mode_is_refused(mode):
    from iglearn.errors import IGLearnError

    for make in (BatchIGL, AIIGL, IGLP, ContextualBandit, Supervised):
        with pytest.raises(IGLearnError, match="standardise is .*choose one of auto, on, off"):
            make(standardise=mode)
    with pytest.raises(IGLearnError, match="choose one of auto, on, off"):
        OnlineRegressionCB(3, 4, standardise=mode)


def test_damaged_statistics_are_refused(task, tmp_path):
    from iglearn.errors import IGLearnError

    learner = quietly(BatchIGL(optimisation=QUICK, seed=4), task[0])
    folder = learner.save(tmp_path / "model")
    metadata = json.loads((folder / "model.json").read_text())
    metadata["standardiser"]["context_scale"][0] = -1.0
    (folder / "model.json").write_text(json.dumps(metadata))
    with pytest.raises(IGLearnError, match="standardiser.context_scale"):
        load_model(folder)


def test_a_constant_context_column_fits(task):
    log, test = task
    constant = log.context.copy()
    constant[:, 0] = 35.0  # digits' first pixel is blank: now a constant at raw scale
    log = InteractionLog(constant, log.action, log.probability, log.feedback, log.n_actions,
                         log.reward, log.label)
    learner = quietly(BatchIGL(optimisation=QUICK, seed=1), log)
    assert learner.standardiser_.context_rule == "auto: off scale"  # a column at 35
    assert learner.standardiser_.context_scale[0] == 1.0
    assert np.isfinite(learner.predict_proba(test)).all()


@pytest.mark.parametrize(("scale", "offset"), [(0.05, 1e5), (200.0, 3e8)])
def test_columns_far_from_zero_varying_by_a_few_float32_steps_are_scaled(scale, offset, task):
    """Columns around 1e5 varying by hundredths (a few float32 steps of their size) or around
    3e8 by hundreds are columns, not constants: each is divided by its spread, and the fit
    gives the actions of the log shifted and scaled by a modest amount."""
    log, test = task
    far = InteractionLog((log.context.astype(np.float64) * scale + offset).astype(np.float32),
                         log.action, log.probability, log.feedback, log.n_actions, log.reward,
                         log.label)
    learner = quietly(ContextualBandit(optimisation=QUICK, seed=1), far)
    reference = quietly(ContextualBandit(optimisation=QUICK, seed=1), raw(log))
    varying = far.context.astype(np.float64).std(0) > 1.2 * np.finfo(np.float32).eps * offset
    assert varying.sum() >= 20
    assert (learner.standardiser_.context_scale[varying] != 1.0).all()
    accuracy = (learner.predict((test.astype(np.float64) * scale + offset).astype(np.float32))
                == reference.predict(test * SCALE + SHIFT)).mean()
    assert accuracy >= 0.85, f"{accuracy:.1%} of the actions agree"


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_a_column_sent_in_another_unit_is_warned_naming_it(name, task, inclusive):
    """Contexts whose column lies mostly beyond the range the model reads (a temperature in
    degrees Fahrenheit where the training log had Celsius) are warned, naming the column by
    the model's feature names; the training log's own contexts, fitted, predicted on and
    evaluated, and held-out contexts of its kind are not."""
    from iglearn.data.formats import FeatureSchema
    from iglearn.errors import DriftWarning
    from iglearn.learners.evaluation import evaluate

    log, test = inclusive if name == "ai-igl" else task
    names = tuple(f"voxel{i}" for i in range(log.context_dim))
    named = dataclasses.replace(raw(log), schema=FeatureSchema(names))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DriftWarning)
        learner = quietly(LEARNERS[name](seed=1), named)
        learner.predict(raw(log).context)
        learner.predict(test * SCALE + SHIFT)
        evaluate(learner, named)
    fahrenheit = test * SCALE + SHIFT
    busy = int(np.argmax(test.std(0)))
    fahrenheit[:, busy] = fahrenheit[:, busy] * 1.8 + 32
    with pytest.warns(DriftWarning, match=rf"contexts: context column 'voxel{busy}': 100% of "
                                          rf"its values lie outside \[.*\], the range of the "
                                          rf"model's training log it reads.*Fahrenheit"):
        learner.predict(fahrenheit)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DriftWarning)
        learner.predict(fahrenheit[:10])  # too few rows to judge


@pytest.mark.parametrize("make", [
    lambda d: OnlineRegressionCB(10, d, refit_every=300, seed=0),
    lambda d: OnlineIGLP(10, d, d, refit_every=300, seed=0),
    lambda d: OnlineIGLP(10, d, d, refit_every=300, seed=0, same_unit="feedback"),
    lambda d: OnlineContextualBandit(10, d, PaperSchedule(iota=10.0, warmup_rounds=300),
                                     seed=0, same_unit="context"),
])
def test_online_learners_take_warm_up_statistics(make, task):
    from iglearn.envs.play import play

    env = digits_environment()
    learner = make(env.context_dim)
    learns = "feedback" if isinstance(learner, OnlineIGLP) else "reward"
    shifted = RawEnvironment(env)
    play(learner, shifted, 900, np.random.default_rng(0), learns_from=learns)
    assert learner.standardiser_ is not None and learner.standardiser_.method == "warm-up"
    one = {"none": (), "context": ("context",), "feedback": ("feedback",)}[learner.same_unit]
    for block, rule in learner.standardiser_.rules.items():  # the blocks named: one scale
        assert rule.endswith(", one scale") == (block in one), (block, rule)
    test = env.test_set()[0] * SCALE + SHIFT
    if hasattr(learner, "predict_values"):
        assert np.isfinite(learner.predict_values(test)).all()
    assert set(np.unique(learner.predict(test))) <= set(range(10))
    if isinstance(learner, OnlineRegressionCB):  # learns on raw inputs as on standardised
        assert learner.accuracy(test, env.test_set()[1]) > 0.5
    if isinstance(learner, OnlineContextualBandit):  # as the batch CB: unit z-scores
        assert learner.standardiser_.context_limit == pytest.approx(CLIP)
        assert learner.accuracy(test, env.test_set()[1]) > 0.5
    if isinstance(learner, OnlineIGLP):  # its re-fits read what a batch IGL-P fit reads
        assert learner.origins == IGLP.origins
        assert np.ndim(learner.standardiser_.context_offset) == 1
        assert learner.standardiser_.apply(test).min() >= 0


class RawEnvironment:
    """An environment whose contexts and feedback are scaled by 0.05 and shifted by 35."""

    def __init__(self, env):
        self.env = env
        self.n_actions, self.independence = env.n_actions, env.independence

    def __getattr__(self, name):
        return getattr(self.env, name)

    def contexts(self, n, rng):
        drawn = self.env.contexts(n, rng)
        return type(drawn)(drawn.features * SCALE + SHIFT, drawn.label)

    def reward(self, contexts, actions):
        return self.env.reward(contexts, actions)

    def observe(self, contexts, actions, reward, rng):
        feedback, flags = self.env.observe(contexts, actions, reward, rng)
        return feedback * SCALE + SHIFT, flags


def test_a_rebased_decoder_reads_new_statistics_as_the_old_decoder_read_the_old_ones():
    """A re-fit's reference decoder, fitted on feedback standardised (and shifted by its
    offset) with a smaller log's statistics, is rebased onto the grown log's: on feedback
    neither limit clips, it decodes every vector as before."""
    from iglearn.learners.batch_igl import rebased_decoder
    from iglearn.models import make_decoder

    rng = np.random.default_rng(4)
    small = 35 + 0.05 * rng.normal(size=(200, 6))
    grown = np.concatenate([small, 35.01 + 0.06 * rng.normal(size=(800, 6))])
    old, new = (Standardiser.of_arrays(np.zeros((len(y), 1)), y, mode="auto",
                                       origins=("mean", "limit")) for y in (small, grown))
    assert old.feedback_offset > 0 and new.feedback_offset > 0
    decoder = make_decoder("linear", 6, torch.Generator().manual_seed(0))
    rebased = rebased_decoder(decoder, old, new)
    y = 35 + 0.02 * rng.normal(size=(50, 6))  # within both limits: nothing clipped
    with torch.no_grad():
        before = decoder(torch.from_numpy(old.apply_feedback(y)))
        after = rebased(torch.from_numpy(new.apply_feedback(y)))
    torch.testing.assert_close(after, before, rtol=1e-4, atol=1e-5)


def test_where_each_learners_standardised_values_start():
    """Standardised raw feedback that is sparse (an image's blank pixels) is shifted to
    non-negative values for the learners whose decoders are tuned on images and words,
    VI-IGL's critics read it centred, and IGL-P reads both blocks from each column's least
    value in the log: an unlit pixel of a raw log reads 0 in its contexts and its feedback,
    as in the task's own features."""
    from iglearn.learners.vi_igl import VIIGL

    env = digits_environment()
    log = env.log(300, seed=0)
    raw = InteractionLog((35 + 0.05 * log.context).astype(np.float32), log.action,
                         log.probability, (35 + 0.05 * log.feedback).astype(np.float32),
                         log.n_actions)
    for learner, origins in ((BatchIGL(seed=0), ("mean", "sparse")),
                             (AIIGL(seed=0), ("mean", "sparse")),
                             (IGLP(seed=0), ("least", "least")),
                             (VIIGL(seed=0), ("mean", "mean"))):
        name = type(learner).__name__
        assert type(learner).origins == origins, name
        scaler = learner.take_statistics(raw)
        assert scaler is not None and scaler.rules == {"context": "auto: off scale",
                                                       "feedback": "auto: off scale"}
        blocks = ((scaler.apply(raw.context), log.context, scaler.context_limit),
                  (scaler.apply_feedback(raw.feedback), log.feedback, scaler.feedback_limit))
        for (values, given, limit), origin in zip(blocks, origins, strict=True):
            lit = given > given.min(0)  # each column's least value is 0 (unlit)
            if origin == "mean":
                assert values.min() < 0 and values.max() <= limit, name
            elif origin in ("limit", "sparse"):  # the digits' feedback images are sparse
                assert values.min() >= 0 and values.max() <= 2 * limit, name
                assert values[~lit].max() > 0.1 * limit, name  # unlit is not 0
            else:
                assert values.min() >= 0, name
                np.testing.assert_allclose(values[~lit], 0.0, atol=1e-6, err_msg=name)
                # lit reads above 0 (but where the column is lit nearly always, at most the
                # clip limit below its mean: the dimmest lit values there read 0)
                assert (values[lit] > 0).mean() > 0.99, name


@pytest.mark.parametrize("name", ["igl", "ai-igl", "vi-igl"])
def test_evaluate_decodes_raw_feedback_as_the_learner_does(name, task, inclusive):
    """``evaluate`` (``iglearn evaluate``) decodes a raw log's feedback as the fitted decoders
    read it, standardised: its decoded value and indicator are the learner's own (it once
    gave the decoder the raw values, and a decoded value and an indicator of 0)."""
    from iglearn.learners import VIIGL
    from iglearn.learners.evaluation import evaluate

    log, _ = inclusive if name == "ai-igl" else task
    shifted = raw(log)
    make = LEARNERS.get(name, lambda **kw: VIIGL(optimisation=QUICK, **kw))
    learner = quietly(make(seed=3), shifted)
    assert learner.standardiser_.feedback_rule == "auto: off scale"
    measured = evaluate(learner, shifted)
    rows = np.arange(len(shifted))
    pi = learner.predict_proba(shifted.context)[rows, shifted.action]
    psi = (learner.decode(shifted.feedback, shifted.action) if name == "ai-igl"
           else learner.decode(shifted.feedback))
    assert measured["decoded_value"] == pytest.approx(
        np.mean(pi * psi / shifted.probability), rel=1e-4)
    assert measured["decoded_value"] > 0.3
    if name != "vi-igl":
        assert measured["indicator"] == pytest.approx(learner.indicator(shifted), rel=1e-4)


DECAYED = {"ai-igl": AIIGL, "vi-igl": VIIGL}
"""The learners whose decoders decay more on standardised feedback."""


def _decoder_weights(learner) -> torch.Tensor:
    decoders = learner.decoders_ if isinstance(learner, AIIGL) else [learner.decoder_]
    return torch.cat([d.net.weight.detach().flatten() for d in decoders])


@pytest.mark.parametrize("name", sorted(DECAYED))
def test_decoders_of_standardised_feedback_decay_more(name):
    # K = 10: AI-IGL's decoders of standardised feedback decay K times the data-scaled decay,
    # of feedback read as it is 3 times
    raw_log = raw(BCIEnvironment(n_symbols=10, noise=0.05).log(300, 0))
    automatic = quietly(DECAYED[name](seed=3, max_restarts=0), raw_log)
    assert automatic.standardiser_.feedback_rule == "auto: off scale"
    # the very values its models read, read as they are: only the decoders' decay differs
    as_read = quietly(DECAYED[name](seed=3, max_restarts=0, standardise="off"),
                      automatic.standardiser_.apply_log(raw_log))
    norms = [float(_decoder_weights(learner).norm()) for learner in (automatic, as_read)]
    assert norms[0] < 0.8 * norms[1]


@pytest.mark.parametrize("name", sorted(DECAYED))
def test_fit_many_fits_standardised_and_unit_scale_feedback_each_as_alone(name):
    env = BCIEnvironment(noise=0.2)  # a spread the learners read as it is
    logs = [raw(env.log(300, 0)), env.log(300, 1)]   # standardised, and read as it is
    settings = dict(optimisation=Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1,
                                              max_steps=20), max_restarts=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = DECAYED[name].fit_many([DECAYED[name](**settings, seed=s)
                                           for s in range(2)], logs)
    assert [learner.standardiser_.feedback_rule for learner in together] == [
        "auto: off scale", "auto: unit scale"]
    for seed, (learner, log) in enumerate(zip(together, logs, strict=True)):
        alone = quietly(DECAYED[name](**settings, seed=seed), log)
        np.testing.assert_allclose(learner.predict_proba(log.context),
                                   alone.predict_proba(log.context), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["igl", "ai-igl"])
def test_a_few_columns_of_click_counts_are_standardised_and_read_centred(name):
    """Counts averaging 1.3 are off the unit scale (their RMS mean is above MAX_RMS_MEAN): read
    as logged, they left 2021 IGL at 0.9 % on this digits log and AI-IGL at 4.8 % on this BCI
    log. They are sparse (a third of them 0), but four columns of them have a clip limit of 3,
    too large a shift (MAX_SHIFT): they are read centred, and both fit."""
    env = digits_environment() if name == "igl" else BCIEnvironment(noise=0.05)
    log = env.log(500, 2)
    clicks = np.random.default_rng(102).poisson(
        (1 + 3 * log.reward)[:, None], size=(len(log), 4)).astype(np.float32)
    counts = InteractionLog(log.context, log.action, log.probability, clicks, log.n_actions)
    learner = (BatchIGL if name == "igl" else AIIGL)(seed=2)
    quietly(learner, counts)
    assert learner.standardiser_.feedback_rule == "auto: off scale"
    assert learner.standardiser_.feedback_limit == pytest.approx(CLIP * column_spread(4))
    assert learner.standardiser_.feedback_offset == 0.0
    assert learner.accuracy(*env.test_set()) > (0.7 if name == "igl" else 0.9)
