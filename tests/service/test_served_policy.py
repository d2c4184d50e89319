"""The served model's pi(. | x) (numpy for a linear softmax policy, else the learner's own) and
the request vectors' checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iglearn.data import limits
from iglearn.learners.batch_igl import BatchIGL
from iglearn.learners.iglp import IGLP
from iglearn.models.policies import make_policy
from iglearn.service.app import SERVED_UNITS_FIX, Rejected, policy_function, vector

D_X, K = 64, 10


def fitted(policy: str, temperature: float = 1.0) -> BatchIGL:
    learner = BatchIGL(policy=policy)
    learner.policy_ = make_policy(policy, D_X, K, torch.Generator().manual_seed(3))
    learner.policy_.temperature = temperature
    return learner


@pytest.mark.parametrize("temperature", [1.0, 0.25])
def test_linear_policy_is_evaluated_with_numpy_and_agrees_with_torch(temperature):
    learner = fitted("linear", temperature)
    pi = policy_function(learner)
    assert pi != learner.predict_proba  # the numpy evaluation
    rng = np.random.default_rng(0)
    for n in (1, 3, 64):
        contexts = (rng.normal(size=(n, D_X)) * 5).astype(np.float32)
        got, want = pi(contexts), learner.predict_proba(contexts)
        assert got.shape == want.shape == (n, K)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got.sum(1), 1.0, rtol=1e-6)


def test_other_policies_use_the_learners_own_predict_proba():
    mlp = fitted("mlp")
    assert policy_function(mlp) == mlp.predict_proba
    iglp = IGLP()
    iglp.policy_ = make_policy("linear", D_X, K, torch.Generator().manual_seed(3))
    assert policy_function(iglp) == iglp.predict_proba  # one-hot on its values, not softmax


@pytest.mark.parametrize(("values", "message"), [
    ([0.0, float("nan"), 1e300], "value 1 is not finite (NaN or infinite)"),
    ([0.0, 1e300, float("inf")], "value 2 is not finite (NaN or infinite)"),
    ([0.0, 1.0, -2 * limits.MAX_ABS_VALUE],
     f"value 2 (-2e+09) exceeds ±{limits.MAX_ABS_VALUE:g}, the most a log may hold; "
     f"{SERVED_UNITS_FIX}"),
    ([0.0, True, 1.0], "value 1 is not a number"),
])
def test_vector_names_the_first_bad_value(values, message):
    with pytest.raises(Rejected) as raised:
        vector(values, "context", 3)
    assert (raised.value.status, raised.value.message, raised.value.field) == (
        422, message, "context")


def test_vector_accepts_the_limit_itself():
    got = vector([limits.MAX_ABS_VALUE, -limits.MAX_ABS_VALUE, 1], "feedback", 3)
    assert got.dtype == np.float32 and got[2] == 1.0
    # values each within the limit whose squares sum beyond the limit's square
    many = vector([-0.9 * limits.MAX_ABS_VALUE] * 64, "feedback", 64)
    assert (many == np.float32(-0.9 * limits.MAX_ABS_VALUE)).all()


@pytest.mark.parametrize(("values", "message"), [
    ([0.0, float("nan"), 1.0], "context value 'temp_c' (entry 1) is not finite (NaN or "
                               "infinite)"),
    ([0.0, 1.0, -2 * limits.MAX_ABS_VALUE],
     f"context value 'ms' (entry 2) is -2e+09, which exceeds ±{limits.MAX_ABS_VALUE:g}, the "
     f"most a log may hold; {SERVED_UNITS_FIX}"),
    ([0.0, "1", 1.0], "context value 'temp_c' (entry 1) is not a number"),
    ([0.0, 1.0], "has 2 values; the service expects 3 ('age', 'temp_c', 'ms')"),
    ("x", "must be a list of 3 ('age', 'temp_c', 'ms') numbers"),
])
def test_vector_names_a_named_contexts_column(values, message):
    with pytest.raises(Rejected) as raised:
        vector(values, "context", 3, ("age", "temp_c", "ms"))
    assert (raised.value.status, raised.value.message, raised.value.field) == (
        422, message, "context")
