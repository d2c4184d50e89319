"""fit_many: several fits as one batched computation, each as it would be alone.

The batched kernels may round differently from the single-trial ones on some CPUs, so the
promise is equal models up to a small tolerance, and the same discrete decisions (restarts,
corrector flips) on these logs."""

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

from iglearn import (
    AIIGL,
    VIIGL,
    BatchIGL,
    ContextualBandit,
    IGLearnError,
    InteractionLog,
    Supervised,
)
from iglearn.envs import digits_environment
from iglearn.learners import IdentifiabilityWarning, Optimisation
from iglearn.learners.base import unseen_action_warnings
from iglearn.learners.iglp import IGLP
from iglearn.seeding import as_generator


@pytest.fixture(scope="module")
def logs():
    env = digits_environment()
    return [env.log(1500, np.random.default_rng(seed)) for seed in range(3)]


def _assert_same_models(a, b) -> None:
    for name in ("policy_", "decoder_"):
        if hasattr(a, name):
            for x, y in zip(getattr(a, name).state_dict().values(),
                            getattr(b, name).state_dict().values(), strict=True):
                if x.is_floating_point():
                    torch.testing.assert_close(x, y, rtol=1e-3, atol=1e-4)
                else:
                    assert torch.equal(x, y)


QUICK = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=60)


@pytest.mark.parametrize("make", [
    lambda seed: Supervised(seed=seed, optimisation=QUICK),
    lambda seed: ContextualBandit(seed=seed, optimisation=QUICK),
    lambda seed: BatchIGL(seed=seed, optimisation=QUICK),
    # one start: two MLP starts scored within rounding of each other on held-out
    # interactions may be chosen differently alone and together
    pytest.param(lambda seed: BatchIGL("mlp", "mlp", seed=seed, optimisation=QUICK, starts=1),
                 marks=pytest.mark.slow),
    # every trial restarts; the ones still below the threshold restart together
    pytest.param(lambda seed: BatchIGL(seed=seed, optimisation=QUICK, restart_threshold=0.93,
                                       max_restarts=2), marks=pytest.mark.slow),
], ids=["SUP", "CB", "IGL", "IGL-mlp", "IGL-restarts"])
def test_fit_many_equals_fitting_each_alone(make, logs):
    with warnings.catch_warnings():  # the restart case warns that no attempt passed
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        alone = [make(10 + t).fit(log) for t, log in enumerate(logs)]
        together = type(alone[0]).fit_many([make(10 + t) for t in range(len(logs))], logs)
    for a, b in zip(alone, together, strict=True):
        _assert_same_models(a, b)
        if isinstance(a, BatchIGL):
            np.testing.assert_allclose(a.report_.attempt_indicators,
                                       b.report_.attempt_indicators, rtol=1e-3, atol=1e-4)
            assert a.report_.flipped == b.report_.flipped
    if isinstance(alone[0], BatchIGL) and alone[0].restart_threshold:
        assert sorted(len(a.report_.attempt_indicators) for a in alone) != [1, 1, 1]


def test_fit_many_rejects_what_cannot_run_together(logs):
    with pytest.raises(IGLearnError, match="one class and settings"):
        BatchIGL.fit_many([BatchIGL(seed=0), BatchIGL(seed=1, max_restarts=0)], logs[:2])
    with pytest.raises(IGLearnError, match="learners.1. is of type Supervised; fit those with "
                                           "Supervised.fit_many"):
        BatchIGL.fit_many([BatchIGL(seed=0), Supervised(seed=1)], logs[:2])
    with pytest.raises(IGLearnError, match="one log per learner"):
        BatchIGL.fit_many([BatchIGL(seed=0)], logs[:2])
    # not learners of the class (a TypeError from vars(), an AttributeError for IGL-P)
    with pytest.raises(IGLearnError, match=r"^BatchIGL.fit_many fits BatchIGL learners, but "
                                           r"learners\[1\] is of type str; give BatchIGL"):
        BatchIGL.fit_many([BatchIGL(seed=0), "seed 1"], logs[:2])
    with pytest.raises(IGLearnError, match=r"learners\[0\] is of type IGLP; fit it on its own "
                                           r"with fit\(log\)"):
        BatchIGL.fit_many([IGLP(seed=0), IGLP(seed=1)], logs[:2])
    with pytest.raises(IGLearnError, match="is of type BatchIGL; fit those with BatchIGL.fit_many"):
        AIIGL.fit_many([BatchIGL(seed=0), BatchIGL(seed=1)], logs[:2])
    with pytest.raises(IGLearnError, match="logs of one shape"):
        BatchIGL.fit_many([BatchIGL(seed=0), BatchIGL(seed=1)],
                          [logs[0], logs[1].subset(np.arange(1000))])
    learner = BatchIGL(seed=0)  # the first log's fit was lost: the same object came back twice
    with pytest.raises(IGLearnError, match=r"one learner is listed more than once.*not "
                                           r"\[learner\] \* n"):
        BatchIGL.fit_many([learner] * 2, logs[:2])
    rng = np.random.default_rng(0)
    with pytest.raises(IGLearnError, match="share one numpy Generator"):
        BatchIGL.fit_many([BatchIGL(seed=rng), BatchIGL(seed=rng)], logs[:2])
    blind = dataclasses.replace(logs[1], reward=None)
    with pytest.raises(IGLearnError, match=r"needs the field 'reward', which this log does not "
                                           r"have \(.*from_frame\(\.\.\., reward='column'\)"):
        ContextualBandit.fit_many([ContextualBandit(seed=0), ContextualBandit(seed=1)],
                                  [logs[0], blind])


@pytest.mark.parametrize("make", [BatchIGL, AIIGL, IGLP, VIIGL, ContextualBandit, Supervised],
                         ids=lambda c: c.__name__)
def test_a_fit_given_something_other_than_a_log_says_how_to_make_one(make, tmp_path):
    frame, best = _own_columns_frame(60)
    for given, fix in [(frame, r"not a DataFrame: read it with "
                                r"iglearn\.InteractionLog\.from_frame"),
                       (str(tmp_path / "log.csv"), r"not a file name \('.*log\.csv'\): read it "
                                                   r"with iglearn\.open_log\(path\)"),
                       (pa.Table.from_pandas(frame), r"not a Table: read it with "
                                                     r"iglearn\.InteractionLog\.from_frame"),
                       (frame.to_numpy(), r"not a value of type ndarray: an IGL fit "
                                          r"reads logged interactions")]:
        with pytest.raises(IGLearnError, match="^fit takes an interaction log, " + fix):
            make(seed=0).fit(given)
    if hasattr(make, "fit_many"):
        with pytest.raises(IGLearnError, match="not a DataFrame"):
            make.fit_many([make(seed=0)], [frame])


def test_a_scikit_learn_fit_x_y_and_a_bad_seed_are_refused_naming_them(logs):
    frame, best = _own_columns_frame(60)
    with pytest.raises(IGLearnError, match="^reference is the fitted BatchIGL this fit "
                                           "replaces, not a value of type ndarray"):
        BatchIGL(seed=0).fit(logs[0], best)
    refused = r"^seed must be a whole number in \[0, 2\*\*63\)"
    for seed in (-1, 1.5, "7", True, 2**63):
        with pytest.raises(IGLearnError, match=refused):
            VIIGL(seed=seed)
    with pytest.raises(IGLearnError, match=rf"{refused}.*got -3"):
        as_generator(-3)  # what an environment's log or a learner's fit draws from


def _own_columns_frame(n: int = 600, seed: int = 0):
    """A log as a user's table: contexts 'age', 'clicks'; feedback 'emg_0'...; 'arm', 'p'."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    best = rng.integers(0, 3, n)
    arm = rng.integers(0, 3, n)
    emg = (arm == best)[:, None] + rng.normal(0, 0.3, (n, 3))
    frame = pd.DataFrame({"age": best + rng.normal(0, 0.2, n), "clicks": rng.normal(size=n),
                          **{f"emg_{i}": emg[:, i] for i in range(3)}, "arm": arm, "p": 1 / 3})
    return frame, best


def test_a_frame_with_its_own_columns_fits_saves_and_predicts_by_name(tmp_path):
    from iglearn import BatchIGL, InteractionLog

    frame, best = _own_columns_frame()
    log = InteractionLog.from_frame(frame, context=["age", "clicks"], feedback="emg_*",
                                    action="arm", probability="p", n_actions=3)
    learner = BatchIGL(seed=0).fit(log)
    assert learner.n_actions_ == 3 and learner.schema_ is not None
    from_frame = learner.predict(frame)           # the columns are found by their names
    assert np.array_equal(from_frame, learner.predict(log.context))
    # the contexts alone, in another order, read the same
    assert np.array_equal(learner.predict(frame[["clicks", "age"]]), from_frame)
    learner.save(tmp_path / "model")              # keeps the mapping without being told
    loaded = BatchIGL.load(tmp_path / "model")
    assert np.array_equal(loaded.predict(frame[["age", "clicks"]]), from_frame)
    assert loaded.accuracy(frame, best) > 0.6     # chance is 1/3
    with pytest.raises(IGLearnError, match="clicks"):
        loaded.predict(frame[["age"]])


@pytest.mark.parametrize("algorithm", ["igl", "ai-igl", "vi-igl"])
def test_decode_reads_a_frame_by_its_feedback_column_names(algorithm, tmp_path):
    from iglearn import AIIGL, BatchIGL, InteractionLog
    from iglearn.learners.vi_igl import VIIGL

    frame, _ = _own_columns_frame(300)
    frame = frame.assign(arm=frame["arm"].map({0: "left", 1: "rest", 2: "right"}))
    log = InteractionLog.from_frame(frame, context=["age", "clicks"], feedback="emg_*",
                                    action="arm", probability="p",
                                    actions=["left", "rest", "right"])
    kind = {"igl": BatchIGL, "ai-igl": AIIGL, "vi-igl": VIIGL}[algorithm]
    quick = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, small_steps=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kind(seed=0, optimisation=quick).fit(log).save(tmp_path / "model")
    learner = kind.load(tmp_path / "model")

    def decode(feedback, *actions):
        return learner.decode(feedback, *actions)

    given = (log.action,) if algorithm == "ai-igl" else ()
    expected = decode(log.feedback, *given)
    assert expected.std() > 0  # the check below can tell columns apart
    turned = frame[["emg_2", "p", "arm", "emg_0", "emg_1", "age"]]  # another order, more
    assert np.allclose(decode(turned, *given), expected)
    assert np.allclose(decode(log, *given), expected)
    assert np.allclose(decode(frame[["emg_1", "emg_0", "emg_2"]], *given), expected)  # alone
    if algorithm == "ai-igl":  # the actions from the frame's or the log's own column
        assert np.allclose(decode(turned), expected) and np.allclose(decode(log), expected)
        with pytest.raises(IGLearnError, match="^decode needs the action of each feedback"):
            decode(log.feedback)
    with pytest.raises(IGLearnError, match="emg_1"):
        decode(frame[["emg_0", "emg_2", "arm"]], *given)


def test_a_frame_with_a_column_named_source_is_read_as_any_other(tmp_path):
    """A column 'source' is an attribute of a pandas frame: it is no name of its rows (it
    was taken as one, and its values' truth was asked)."""
    from iglearn import BatchIGL, InteractionLog

    frame, _ = _own_columns_frame(300)
    frame = frame.rename(columns={"clicks": "source"})
    log = InteractionLog.from_frame(frame, context=["age", "source"], feedback="emg_*",
                                    action="arm", probability="p", n_actions=3)
    quick = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, small_steps=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = BatchIGL(seed=0, optimisation=quick).fit(log)
    assert np.array_equal(learner.predict(frame), learner.predict(log.context))
    assert np.allclose(learner.decode(frame), learner.decode(log.feedback))


@pytest.mark.parametrize("name, d, model", [("AI-IGL", 784, "policy and decoders"),
                                            ("IGL-P", 128, "inverse-kinematics model")])
def test_a_fit_that_diverges_is_refused_naming_the_log_and_the_model(name, d, model,
                                                                     wide_log, monkeypatch):
    # without the decay's limit these fits diverge to NaN (tests/learners/test_training.py)
    from iglearn.experiments.family import make_learner
    from iglearn.learners import training

    monkeypatch.setattr(training, "DECAY_STEP_LIMIT", float("inf"))
    log = dataclasses.replace(wide_log(60, d), source="wide.npz")
    learner = make_learner(name, np.random.default_rng(0))
    with warnings.catch_warnings(), pytest.raises(IGLearnError) as refused:
        warnings.simplefilter("ignore")
        learner.fit(log)
    message = str(refused.value)
    assert message.startswith("wide.npz: the fit diverged") and model in message
    assert "lower the learning rate" in message and "\n" not in message
    assert getattr(learner, "policy_", None) is None  # nothing of the fit is kept


def test_fit_many_keeps_no_fit_when_one_of_them_diverged(logs, monkeypatch):
    real = Supervised.fit_models

    def second_diverges(self, policies, *args, **kwargs):
        real(self, policies, *args, **kwargs)
        with torch.no_grad():
            next(policies[1].parameters()).view(-1)[0] = float("nan")

    monkeypatch.setattr(Supervised, "fit_models", second_diverges)
    learners = [Supervised(seed=s, optimisation=QUICK) for s in range(2)]
    with pytest.raises(IGLearnError, match="the fit diverged"):
        Supervised.fit_many(learners, logs[:2])
    assert all(getattr(learner, "policy_", None) is None for learner in learners)


def _every_learner(log, tmp_path):
    """A quick fit of each batch learner on ``log``, and each IGL learner saved and loaded
    back."""
    from iglearn import AIIGL, VIIGL
    from iglearn.learners import load_model
    from iglearn.learners.iglp import IGLP

    fitted = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (BatchIGL, AIIGL, IGLP, VIIGL, ContextualBandit, Supervised):
            learner = make(seed=0, optimisation=QUICK).fit(log)
            fitted.append(learner)
            if make in (ContextualBandit, Supervised):  # the baselines have no model folder
                with pytest.raises(IGLearnError, match=f"^{make.__name__} is a baseline .* it "
                                                       f"has no model folder"):
                    learner.save(tmp_path / make.__name__)
            else:
                fitted.append(load_model(learner.save(tmp_path / make.__name__)))
    return fitted


def test_a_fitted_model_checks_the_contexts_and_feedback_it_is_given(logs, tmp_path):
    """NaN, a single vector, a wrong width or text is refused naming the field and the fix,
    by predict, predict_proba, accuracy and decode alike, fitted or loaded; no contexts give
    no actions (K probabilities each)."""
    log = logs[0]
    raw = dataclasses.replace(log, context=35 + 0.05 * log.context,
                              feedback=35 + 0.05 * log.feedback)
    x = raw.context[:5].copy()
    x[2, 7] = np.nan
    for learner in _every_learner(raw, tmp_path):
        name = type(learner).__name__
        for call in (learner.predict, learner.predict_proba,
                     lambda c, m=learner: m.accuracy(c, log.label[:5])):
            with pytest.raises(IGLearnError, match="'context' holds nan at row 2"):
                call(x)
            with pytest.raises(IGLearnError, match=r"shape \(64,\).*reshape\(1, -1\)"):
                call(raw.context[0])
            with pytest.raises(IGLearnError, match="have 10 values but the model was fitted "
                                                   "on 64"):
                call(raw.context[:5, :10])
            with pytest.raises(IGLearnError, match="expected real numbers"):
                call(np.full((2, 64), "35.1"))
            # a model fitted on arrays reads a frame in iglearn's layout, not the user's names
            with pytest.raises(IGLearnError, match=r"^data frame: this model was fitted on a "
                                                   r"log without column names.*frame\.to_numpy"
                                                   r"\(\).*context_0, \.\.\., context_63\)"):
                call(pd.DataFrame(raw.context[:5]).add_prefix("px"))
        np.testing.assert_array_equal(
            learner.predict(pd.DataFrame(raw.context[:5]).add_prefix("context_")),
            learner.predict(raw.context[:5]))
        assert learner.predict(raw.context[:0]).shape == (0,), name
        assert learner.predict_proba(raw.context[:0]).shape == (0, 10), name
        with pytest.raises(IGLearnError, match="'label' has 4 rows but 'context' has 5"):
            learner.accuracy(raw.context[:5], log.label[:4])
        with pytest.raises(IGLearnError, match="'label' has dtype"):
            learner.accuracy(raw.context[:5], log.label[:5].astype(str))
        if not hasattr(learner, "decode"):
            continue
        y = raw.feedback[:3].copy()
        y[1, 0] = np.inf
        decode = {"AIIGL": lambda f, m=learner: m.decode(f, log.action[:3]),
                  "IGLP": lambda f, m=learner: m.decode(raw.context[:3], log.action[:3], f),
                  }.get(name, learner.decode)
        with pytest.raises(IGLearnError, match="'feedback' holds inf at row 1"):
            decode(y)
        assert decode(raw.feedback[:3]).shape[0] == 3, name


DECODING = [
    lambda: BatchIGL(seed=0, optimisation=QUICK, max_restarts=0),
    lambda: AIIGL(seed=0, optimisation=QUICK, max_restarts=0),
    lambda: VIIGL(seed=0, optimisation=QUICK, max_restarts=0),
    lambda: IGLP(seed=0),
]
"""Quick learners of every algorithm that decodes the feedback."""


@pytest.mark.parametrize("make", DECODING, ids=["IGL", "AI-IGL", "VI-IGL", "IGL-P"])
def test_every_learner_that_decodes_the_feedback_warns_of_an_action_the_log_never_shows(
        make, logs):
    log = dataclasses.replace(logs[0], n_actions=11)  # the digits show actions 0 to 9
    (note,) = unseen_action_warnings(log)
    assert "n_actions is 11 but action 10 never occurs in the log" in note
    with pytest.warns(IdentifiabilityWarning) as caught:
        learner = make().fit(log)
    assert note in [str(each.message) for each in caught]
    assert note in learner.report_.warnings


@pytest.mark.parametrize("make", DECODING, ids=["IGL", "AI-IGL", "VI-IGL", "IGL-P"])
def test_every_learner_that_reads_the_probabilities_warns_when_they_do_not_fit_the_actions(
        make, logs, tmp_path):
    """A probability column that is not the logged action's probability (here 0.5 for every
    row of a uniform K = 10 log) is warned at the fit, as ``evaluate`` warns it, in memory and
    streamed, and a log whose column is right is not."""
    from iglearn import open_log
    from iglearn.data.formats import write_table
    from iglearn.data.stream import StreamSettings

    wrong = dataclasses.replace(logs[0], probability=np.full(len(logs[0]), 0.5))
    write_table(wrong, tmp_path / "wrong.npz")
    stream = open_log(tmp_path / "wrong.npz", StreamSettings(stream="on"))
    if isinstance(make(), IGLP):  # IGL-P fits in memory only, and says so
        with pytest.raises(IGLearnError, match="IGL-P fits a log in memory, not a stream"):
            make().fit(stream)
    for log in (wrong,) if isinstance(make(), IGLP) else (wrong, stream):
        with pytest.warns(IdentifiabilityWarning) as caught:
            learner = make().fit(log)
        notes = [str(each.message) for each in caught]
        (note,) = [n for n in notes if "probabilities do not fit the logged actions" in n]
        assert note.startswith(f"{log.source}: ") and "per interaction, is [0.2" in note
        assert note in learner.report_.warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        learner = make().fit(logs[0])
    assert not [w for w in caught if "probabilities do not fit" in str(w.message)]


def test_the_contextual_bandit_warns_when_the_probabilities_do_not_fit_the_actions(logs):
    """CB weighs its rows by 1/p as the IGL learners do, so it warns the same; SUP, which
    reads the labels only, does not."""
    wrong = dataclasses.replace(logs[0], probability=np.full(len(logs[0]), 0.5))
    with pytest.warns(UserWarning, match="probabilities do not fit the logged actions"):
        ContextualBandit(seed=0, optimisation=QUICK).fit(wrong)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Supervised(seed=0, optimisation=QUICK).fit(wrong)
        ContextualBandit(seed=0, optimisation=QUICK).fit(logs[0])


def test_a_file_read_without_the_models_feature_names_is_refused_not_misread(tmp_path):
    """A DSJSON file names its features in its own order of first appearance: one written by
    another program (VW's tooling) in another order, read without the model's schema, holds
    the same features in other columns. A model given that log or context set refuses it,
    naming a feature and the fix; read with the model's schema it predicts as on the training
    columns. (An array carries no names: nothing to check.)"""
    from iglearn.data.formats import FeatureSchema, read_contexts, read_log, write_table

    rng = np.random.default_rng(0)
    # names of no numbered family (x^f0, x^f1, ... are read in the order of their numbers)
    n, names = 400, ["x^age", "x^dose", "x^pulse", "x^temp", "x^weight"]
    best = rng.integers(0, 3, n)
    arm = rng.integers(0, 3, n)
    context = np.eye(3, 5)[best] + rng.normal(0, 0.1, (n, 5))
    feedback = ((arm == best)[:, None] + rng.normal(0, 0.3, (n, 2))).astype(np.float32)
    schema = FeatureSchema(tuple(names), ("y^a", "y^b"))
    log = InteractionLog(context, arm, np.full(n, 1 / 3), feedback, 3, schema=schema)
    write_table(log, tmp_path / "train.dsjson")
    reversed_log = dataclasses.replace(log, context=log.context[:, ::-1],
                                       schema=FeatureSchema(tuple(names[::-1]), ("y^a", "y^b")))
    write_table(reversed_log, tmp_path / "other.dsjson")
    (tmp_path / "other.dsjson.schema.json").unlink()  # as another program writes it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = BatchIGL(seed=0, optimisation=QUICK).fit(read_log(tmp_path / "train.dsjson"))
    for table in (read_log(tmp_path / "other.dsjson"), read_contexts(tmp_path / "other.dsjson")):
        assert table.schema is not None and table.schema.context[0] == "x^weight"
        with pytest.raises(IGLearnError, match=r"other\.dsjson: its context features are not "
                                               r"the model's \(feature 0 is 'x\^weight', the "
                                               r"model's 'x\^age'\); read it with the model's "
                                               r"feature schema, read_log\(path, schema=model"):
            model.predict(table)
    aligned = read_contexts(tmp_path / "other.dsjson", schema=model.schema_)
    np.testing.assert_array_equal(model.predict(aligned), model.predict(log.context))
    np.testing.assert_array_equal(model.predict(read_log(tmp_path / "train.dsjson")),
                                  model.predict(log.context))


@pytest.mark.parametrize("make", [BatchIGL, AIIGL, IGLP, Supervised])
def test_a_log_of_read_only_arrays_fits_and_predicts_without_torchs_warning(logs, make):
    """pandas' arrays under copy-on-write are read-only (``frame.to_numpy()``); torch warned
    about each ("The given NumPy array is not writable"), shown as if from the user's code."""
    log = logs[0]
    fields = {name: np.array(getattr(log, name)) for name in
              ("context", "action", "probability", "feedback", "label")}
    for array in fields.values():
        array.flags.writeable = False
    frozen = InteractionLog(**fields, n_actions=log.n_actions)
    quick = Optimisation(max_steps=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = make(seed=0, optimisation=quick).fit(frozen)
        model.predict(fields["context"])
        model.accuracy(fields["context"], fields["label"])
    assert not [w for w in caught if "not writable" in str(w.message)]


@pytest.mark.parametrize("make", [
    lambda: Supervised(seed=0, optimisation=QUICK),
    lambda: ContextualBandit(seed=0, optimisation=QUICK),
], ids=["SUP", "CB"])
def test_the_baselines_report_their_fit_as_the_igl_learners_do(make, logs):
    """``report_.seconds`` and ``report_.warnings`` read alike on every learner; a baseline's
    ``seconds_`` stays, equal to its report's."""
    learner = make().fit(logs[0])
    report = learner.report_
    assert report.seconds == learner.seconds_ > 0 and report.warnings == []
    assert str(report).splitlines() == [type(report).__name__, f"  seconds: {report.seconds:.4g}",
                                        "  warnings: none"]
    together = type(learner).fit_many([make(), make()], logs[:2])
    assert [each.report_.seconds for each in together] == [each.seconds_ for each in together]


def test_the_contextual_bandit_records_the_probability_warning_it_warns(logs):
    """Each fit of ``fit_many`` records its own log's warning, and still warns it."""
    wrong = dataclasses.replace(logs[0], probability=np.full(len(logs[0]), 0.5))
    with pytest.warns(UserWarning, match="probabilities do not fit the logged actions") as caught:
        bad, good = ContextualBandit.fit_many(
            [ContextualBandit(seed=0, optimisation=QUICK) for _ in range(2)], [wrong, logs[1]])
    (note,) = [str(w.message) for w in caught if "probabilities do not fit" in str(w.message)]
    assert bad.report_.warnings == [note] and good.report_.warnings == []
    assert Supervised(seed=0, optimisation=QUICK).fit(wrong).report_.warnings == []


def test_accuracy_reads_labels_that_are_numeric_action_names_as_those_names():
    """Actions named by codes 42, 7, 3 (read with actions=[...]): labels given as those codes
    are the actions they name, as the log's label column was read; labels that are indices
    0 to K - 1 (the log's ``label``) still count as indices; a code naming no action is an
    error naming it."""
    from iglearn import BatchIGL, InteractionLog

    frame, best = _own_columns_frame(400)
    codes = np.array([42, 7, 3])
    frame = frame.assign(arm=codes[frame["arm"]])
    log = InteractionLog.from_frame(frame, context=["age", "clicks"], feedback="emg_*",
                                    action="arm", probability="p", actions=[42, 7, 3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = BatchIGL(seed=0, optimisation=QUICK).fit(log)
    expected = float((learner.predict(frame) == best).mean())
    assert expected > 0.5  # chance is 1/3: the check below can tell the readings apart
    assert learner.accuracy(frame, codes[best]) == pytest.approx(expected)
    assert learner.accuracy(frame, best) == pytest.approx(expected)
    assert learner.accuracy(frame, codes[best].astype(str)) == pytest.approx(expected)
    with pytest.raises(IGLearnError, match=r"holds '99' at row 0, none of the actions"):
        learner.accuracy(frame, np.r_[99, codes[best][1:]])


def test_predict_on_a_frame_with_a_column_the_model_does_not_read_says_to_drop_it():
    """predict takes no ``ignore``: a column the model does not read is told to be dropped
    from the frame, naming it and the drop that does it."""
    from iglearn import BatchIGL, InteractionLog

    frame, _ = _own_columns_frame(300)
    log = InteractionLog.from_frame(frame, context=["age", "clicks"], feedback="emg_*",
                                    action="arm", probability="p", n_actions=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = BatchIGL(seed=0, optimisation=QUICK).fit(log)
    with pytest.raises(IGLearnError, match=r"^data frame: column 'note' is not among the "
                                           r"model's columns \(.*\); drop it from the frame "
                                           r"first \(frame\.drop\(columns=\['note'\]\)\)$"):
        learner.predict(frame.assign(note=1.0))
    assert np.array_equal(learner.predict(frame.assign(note=1.0).drop(columns=["note"])),
                          learner.predict(frame))


def _raw_log(n: int = 400, k: int = 3) -> InteractionLog:
    """n uniform interactions of raw measurements (35 + 0.05 x): the context tells the right
    action, the feedback whether the action was right."""
    rng = np.random.default_rng(0)
    best, arm = rng.integers(0, k, n), rng.integers(0, k, n)
    context = 35 + 0.05 * (np.eye(k)[best] + rng.normal(0, 0.3, (n, k)))
    feedback = 35 + 0.05 * ((arm == best)[:, None] + rng.normal(0, 0.3, (n, 4)))
    return InteractionLog(context, arm, np.full(n, 1 / k), feedback, k, label=best)


@pytest.mark.parametrize("make", [BatchIGL, IGLP], ids=["IGL", "IGL-P"])
def test_a_fitted_model_reads_nullable_frames_and_tensors_as_their_numbers(make):
    """predict on the array of a frame of pandas' nullable numbers (frame.to_numpy(), which
    the message for a frame of other names suggests, holds Python objects) and on a torch
    tensor that requires grad gives the actions of the plain array (they were refused as
    "dtype 'object'" and with torch's RuntimeError)."""
    log = _raw_log()
    learner = make(seed=0).fit(log)
    expected = learner.predict(log.context)
    nullable = pd.DataFrame(log.context.astype(np.float64)).astype("Float64").to_numpy()
    assert nullable.dtype == object
    for given in (nullable, torch.tensor(log.context, requires_grad=True)):
        np.testing.assert_array_equal(learner.predict(given), expected)

def test_decode_checks_the_actions_it_is_given():
    """AI-IGL's and IGL-P's decode refuse an action out of range or not an integer naming the
    value and its row (IGL-P's raised torch's errors; AI-IGL's named only the shape), and
    IGL-P's refuses feedback of another number of rows than the contexts."""
    log = _raw_log()
    ai, iglp = AIIGL(seed=0).fit(log), IGLP(seed=0).fit(log)
    decoders = {"AI-IGL": lambda actions, feedback=log.feedback: ai.decode(feedback, actions),
                "IGL-P": lambda actions, feedback=log.feedback: iglp.decode(log.context,
                                                                            actions, feedback)}
    for name, decode in decoders.items():
        assert decode(log.action.astype(float)).shape == (len(log),), name
        with pytest.raises(IGLearnError, match=r"^decode: field 'action' holds \d at row 0, "
                                               r"outside \[0, 3\)"):
            decode(log.action + 3)
        with pytest.raises(IGLearnError, match=r"^decode: field 'action' holds \d.5 at row 0, "
                                               r"not an integer"):
            decode(log.action + 0.5)
    with pytest.raises(IGLearnError, match=r"^decode: field 'feedback' has 399 rows but "
                                           r"'context' has 400"):
        decoders["IGL-P"](log.action, log.feedback[:-1])
