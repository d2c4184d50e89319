import numpy as np
import pytest

from iglearn import IGLearnError, InteractionLog


def make(**changes):
    n = 6
    fields = dict(context=np.zeros((n, 3)), action=np.arange(n) % 3,
                  probability=np.full(n, 1 / 3), feedback=np.ones((n, 2)), n_actions=3,
                  source="log.npz")
    fields.update(changes)
    return InteractionLog(**fields)


def test_valid_log_converts_types():
    log = make(reward=np.ones(6), label=np.zeros(6, dtype=int))
    assert len(log) == 6 and log.context_dim == 3 and log.feedback_dim == 2
    assert log.context.dtype == np.float32 and log.action.dtype == np.int64
    np.testing.assert_allclose(log.uniform_weight, 1.0)
    assert len(log.subset(np.array([0, 2]))) == 2


def test_one_dimensional_feedback_becomes_a_column():
    assert make(feedback=np.ones(6)).feedback.shape == (6, 1)


@pytest.mark.parametrize("changes, words", [
    (dict(context=np.zeros((6, 2, 2))), ["'context'", "shape"]),
    (dict(context=np.zeros((0, 3)), action=np.zeros(0, int), probability=np.zeros(0),
          feedback=np.zeros((0, 2))), ["empty"]),
    (dict(context=np.full((6, 3), np.nan)), ["'context'", "NaN"]),
    (dict(feedback=np.full((6, 2), np.inf)), ["'feedback'", "infinite"]),
    (dict(feedback=np.ones((5, 2))), ["'feedback'", "5 rows"]),
    (dict(action=np.arange(5) % 3), ["'action'", "5 rows"]),
    (dict(action=np.array([0, 1, 2, 3, 0, 1])), ["'action'", "outside [0, 3)"]),
    (dict(action=np.array([0, -1, 2, 0, 0, 1])), ["'action'", "-1"]),
    (dict(action=np.array([0, 1.5, 2, 0, 0, 1])), ["'action'", "non-integer"]),
    (dict(probability=np.zeros(6)), ["'probability'", "(0, 1]"]),
    (dict(probability=np.full(6, 1.5)), ["'probability'", "(0, 1]"]),
    (dict(probability=np.full(5, 0.5)), ["'probability'", "5 rows"]),
    (dict(n_actions=1), ["n_actions", ">= 2"]),
    (dict(n_actions=2.5), ["n_actions"]),
    (dict(reward=np.full(6, 2.0)), ["'reward'", "[0, 1]"]),
    (dict(reward=np.ones(4)), ["'reward'", "4 rows"]),
    (dict(label=np.full(6, 7)), ["'label'", "outside"]),
    (dict(label=np.zeros(3, dtype=int)), ["'label'", "3 rows"]),
    (dict(context=np.array([["a", "b", "c"]] * 6)), ["'context'", "dtype"]),
])
def test_every_validation_error_names_the_field(changes, words):
    with pytest.raises(IGLearnError) as error:
        make(**changes)
    message = str(error.value)
    assert message.startswith("log.npz:")
    for word in words:
        assert word in message
