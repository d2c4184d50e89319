"""Measures of a fitted policy on a log (:mod:`iglearn.learners.evaluation`)."""

import warnings

import numpy as np
import pytest

from iglearn import IGLearnError, InteractionLog, Supervised
from iglearn.envs import digits_environment
from iglearn.learners.evaluation import evaluate
from iglearn.learners.training import Optimisation


@pytest.fixture(scope="module")
def fitted():
    env = digits_environment()
    log = env.log(1500, seed=0)
    model = Supervised(seed=0, optimisation=Optimisation(max_steps=60)).fit(log)
    return model, env.log(2000, seed=1)


def test_each_ips_value_has_its_standard_error(fitted):
    """value_ips and greedy_value_ips are means over the log: their standard errors are
    those of the means of their terms, which the measures give by hand."""
    model, log = fitted
    measures = evaluate(model, log)
    pi = model.predict_proba(log.context).astype(np.float64)
    rows = np.arange(len(log))
    terms = {"value_ips": pi[rows, log.action] * log.reward / log.probability,
             "greedy_value_ips": (pi.argmax(1) == log.action) * log.reward / log.probability}
    for name, values in terms.items():
        assert measures[name] == pytest.approx(values.mean(), rel=1e-9)
        error = values.std(ddof=1) / np.sqrt(len(values))
        assert measures[f"{name}_error"] == pytest.approx(error, rel=1e-6)
    np.testing.assert_allclose(measures["weight_means"], 1.0, atol=0.15)


def test_probabilities_that_are_not_the_logged_actions_are_warned_of(fitted):
    """Every row's probability that of action 0 (not the logged action's): the mean of
    1{A = a} / p per action is far from 1 and the IPS values are biased; said, not silent.
    The log's own probabilities warn of nothing."""
    model, log = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate(model, log)
    skewed = np.where(log.action == 0, 0.5, 0.9)  # not what a uniform policy gave them
    wrong = InteractionLog(log.context, log.action, skewed, log.feedback, log.n_actions,
                           reward=log.reward, label=log.label, source="wrong.csv")
    with pytest.warns(UserWarning, match=r"wrong.csv: the logged probabilities do not fit the "
                                         r"logged actions: the mean of 1/p over each "
                                         r"action's rows, per interaction, is \[0\.2"):
        measures = evaluate(model, wrong)
    assert measures["weight_means"][1] == pytest.approx(
        np.mean((log.action == 1) / 0.9), rel=1e-9)


@pytest.fixture(scope="module")
def named_fit():
    """A BatchIGL and an AIIGL fitted on a user's frame: contexts 'age', 'clicks';
    feedback 'emg_0', 'emg_1'; actions 'arm' with probabilities 'p'."""
    import pandas as pd

    from iglearn import AIIGL, BatchIGL

    rng = np.random.default_rng(0)
    n = 400
    best, arm = rng.integers(0, 3, n), rng.integers(0, 3, n)
    emg = (arm == best)[:, None] + rng.normal(0, 0.3, (n, 2))
    frame = pd.DataFrame({"age": best + rng.normal(0, 0.2, n), "clicks": rng.normal(size=n),
                          "emg_0": emg[:, 0], "emg_1": rng.normal(size=n), "arm": arm,
                          "p": 1 / 3, "best": best})
    mapping = dict(action="arm", probability="p", label="best", n_actions=3)
    log = InteractionLog.from_frame(frame, context=["age", "clicks"],
                                    feedback=["emg_0", "emg_1"], **mapping)
    quick = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = [kind(seed=0, optimisation=quick).fit(log) for kind in (BatchIGL, AIIGL)]
    return models, frame, mapping


@pytest.mark.parametrize("which", [0, 1], ids=["igl", "ai-igl"])
def test_evaluate_and_indicator_refuse_a_log_the_model_would_misread(named_fit, which):
    """A log whose contexts or feedback come in other columns' order, or with another K, or
    a frame that is no log: evaluate and indicator refuse it as predict does (they read the
    columns by position, and other actions as the model's)."""
    models, frame, mapping = named_fit
    model = models[which]
    context, feedback = ["age", "clicks"], ["emg_0", "emg_1"]
    same = InteractionLog.from_frame(frame, context=context, feedback=feedback, **mapping)
    evaluate(model, same)
    model.indicator(same)
    refused = {
        r"its context features are not the model's \(feature 0 is '\^clicks', the model's "
        r"'\^age'\); read the frame by the model's column mapping, InteractionLog\.from_"
        r"frame\(frame, schema=model\.schema_\)":
            dict(context=context[::-1], feedback=feedback),
        r"its feedback features are not the model's \(feature 0 is '\^emg_1'":
            dict(context=context, feedback=feedback[::-1]),
        r"n_actions is 4 but the model was fit with K = 3":
            dict(context=context, feedback=feedback, **{**mapping, "n_actions": 4}),
    }
    for message, columns in refused.items():
        log = InteractionLog.from_frame(frame, **{**mapping, **columns})
        for measure in (lambda t: evaluate(model, t), model.indicator):
            with pytest.raises(IGLearnError, match=f"^data frame: {message}"):
                measure(log)
    for measure, what in ((lambda t: evaluate(model, t), "an interaction log or a context "
                                                           "set"),
                          (model.indicator, "an interaction log")):
        for table in (frame, frame.to_numpy()):
            with pytest.raises(IGLearnError, match=f"takes {what}, not a "
                                                   f"{type(table).__name__}: .*"
                                                   r"InteractionLog\.from_frame"):
                measure(table)
    # a model's evaluation of its own log's contexts stays as it was
    assert evaluate(model, same)["accuracy"] == pytest.approx(
        (model.predict(same.context) == same.label).mean())


def test_a_column_out_of_range_in_a_streamed_log_is_warned_once_for_the_whole_log(tmp_path):
    """A raw log read in pieces (a stream's row groups) whose context column lies beyond the
    model's range in 30 % of the rows of some pieces and 90 % of others is warned once, with
    the share of the whole log (60 %) and naming its file, as the same log in memory is:
    not once per piece with that piece's share, under the name "contexts"."""
    import pyarrow.parquet as pq

    from iglearn import BatchIGL, StreamSettings, open_log
    from iglearn.data.formats import write_table
    from iglearn.errors import DriftWarning

    env = digits_environment()
    train = env.log(600, seed=0)
    raw = InteractionLog(train.context * 0.05 + 35, train.action, train.probability,
                         train.feedback, train.n_actions, train.reward)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = BatchIGL(seed=0, optimisation=Optimisation(max_steps=20)).fit(raw)
    test = env.log(800, seed=1)
    context = test.context * 0.05 + 35
    busy = int(np.argmax(test.context.std(0)))
    shares = np.repeat([0.3, 0.9] * 4, 100)  # pieces of 100 rows, 60 % of the rows in all
    moved = np.arange(800) % 100 < 100 * shares
    context[moved, busy] = context[moved, busy] * 1.8 + 32   # as degrees Fahrenheit
    log = InteractionLog(context, test.action, test.probability, test.feedback,
                         test.n_actions, test.reward)
    write_table(log, tmp_path / "whole.parquet")
    pq.write_table(pq.read_table(tmp_path / "whole.parquet"), tmp_path / "log.parquet",
                   row_group_size=100)
    for table in (open_log(tmp_path / "log.parquet", StreamSettings(stream="on")),
                  open_log(tmp_path / "log.parquet", StreamSettings(stream="off"))):
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            evaluate(model, table)
        drifts = [str(w.message) for w in told if issubclass(w.category, DriftWarning)]
        assert len(drifts) == 1, drifts
        assert drifts[0].startswith(f"{tmp_path / 'log.parquet'}: context column {busy}: 60% "
                                    f"of its values lie outside"), drifts[0]
