"""Measures of a fitted policy on a log (:mod:`iglearn.learners.evaluation`)."""

import warnings

import numpy as np
import pytest

from iglearn import InteractionLog, Supervised
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
