import numpy as np
import pytest

from iglearn import IGLearnError, InteractionLog
from iglearn.data import limits
from iglearn.data.contexts import ContextSet


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
    (dict(action=np.array([0, 1, 2, 3, 0, 1])), ["'action'", "outside [0, 3)",
                                                  "set n_actions to the true number"]),
    # common ways of writing them: actions numbered from 1, probabilities in percent
    (dict(action=np.array([1, 2, 3, 1, 2, 3])), ["'action'", "holds 3 at row 2",
                                                  "outside [0, 3): the values run from 1 to 3",
                                                  "numbered from 1", "subtract 1"]),
    (dict(action=np.array([0, 1, 2, 3, 2, 3])), ["outside [0, 3); fix the value"]),
    (dict(action=np.array([3, 2, 2, 3, 2, 3])), ["outside [0, 3); fix the value"]),
    # K codes with gaps: to be numbered (it said to set n_actions to 6, which fitted actions
    # that never occur); arrays have no column to read with the actions named (frames do)
    (dict(action=np.array([0, 2, 5, 0, 2, 5])), [
        "holds 5 at row 2, outside [0, 3): the values are 3 codes (0, 2, 5), not the indices",
        "number them from 0 to K - 1 first (numpy.searchsorted(codes, values) gives each "
        "code's index)"]),
    (dict(probability=np.full(6, 100 / 3)), ["'probability'", "outside (0, 1]: every value "
                                             "is 33.3, as if they were percentages",
                                             "divide every value by 100"]),
    (dict(probability=np.array([50, 25, 25, 50, 100, 20])),
     ["'probability'", "the values run from 20 to 100", "percentages"]),
    (dict(probability=np.full(6, 150.0)), ["'probability'", "outside (0, 1]; it must be"]),
    # importance weights 1/p (they were told to divide by 100: p = 0.03)
    (dict(probability=np.full(6, 3.0)), ["every value is 3, as if they were importance "
                                         "weights 1/p (take 1 / value): uniform play's over "
                                         "K = 3 actions"]),
    (dict(probability=np.array([2.0, 4, 4, 2, 2, 4])),
     ["the values run from 2 to 4, as if they were percentages (divide every value by 100) "
      "or importance weights 1/p (take 1 / value)"]),
    # a typing error among probabilities is not a scale
    (dict(probability=np.array([1 / 3, 1 / 3, 1.0000001, 1 / 3, 1 / 3, 1 / 3])),
     ["'probability'", "holds 1.0000001 at row 2, outside (0, 1]; it must be"]),
    (dict(action=np.array([0, -1, 2, 0, 0, 1])), ["'action'", "-1"]),
    (dict(action=np.array([0, 1.5, 2, 0, 0, 1])), ["'action'", "not an integer"]),
    (dict(probability=np.zeros(6)), ["'probability'", "(0, 1]"]),
    (dict(probability=np.full(6, 1.5)), ["'probability'", "(0, 1]"]),
    (dict(probability=np.full(5, 0.5)), ["'probability'", "5 rows"]),
    (dict(n_actions=1), ["n_actions", ">= 2"]),
    (dict(n_actions=2.5), ["n_actions"]),
    (dict(reward=np.full(6, 2.0)), ["'reward'", "[-1, 1]"]),
    (dict(reward=np.ones(4)), ["'reward'", "4 rows"]),
    (dict(label=np.full(6, 7)), ["'label'", "outside"]),
    (dict(label=np.zeros(3, dtype=int)), ["'label'", "3 rows"]),
    (dict(context=np.array([["a", "b", "c"]] * 6)), ["'context'", "dtype"]),
    # values a cast would change, and numerically meaningless ones
    (dict(context=np.zeros((6, 0))), ["'context'", "no values per row"]),
    (dict(context=np.ones((6, 3), complex)), ["'context'", "complex128"]),
    (dict(probability=np.full(6, 0.5 + 0j)), ["'probability'", "complex128"]),
    (dict(action=np.zeros(6, "timedelta64[s]")), ["'action'", "timedelta64"]),
    (dict(action=np.full(6, 2**64 - 1, np.uint64)), ["18446744073709551615 at row 0"]),
    (dict(action=np.array([0, 1, 1e300, 0, 0, 1])), ["1e+300 at row 2", "outside [0, 3)"]),
    (dict(label=np.array([0, 1, 2, 0, 0, np.nan])), ["'label'", "nan at row 5",
                                                      "not an integer"]),
    (dict(probability=np.array([0.5, 1e-30, 0.5, 1e-42, 0.5, 0.5])),
     ["'probability'", "below 1e-06", "rows 1, 3 (2 rows)", "PROBABILITY_FLOOR"]),
    (dict(probability=np.full(6, np.nan)), ["'probability'", "nan at row 0", "(0, 1]"]),
    (dict(context=np.full((6, 3), 3e38, np.float32)), ["'context'", "3e+38 at row 0",
                                                        "MAX_ABS_VALUE"]),
    (dict(feedback=np.full((6, 2), -1e300)), ["'feedback'", "-1e+300 at row 0"]),
    (dict(feedback=np.full((6, 2), np.iinfo(np.int64).min)), ["'feedback'",
                                                                "-9223372036854775808"]),
    (dict(reward=np.full(6, np.nan)), ["'reward'", "nan at row 0", "[-1, 1]"]),
    (dict(n_actions=10**12), ["n_actions", "MAX_ACTIONS"]),
    (dict(n_actions=np.float64(3.5)), ["n_actions", "3.5"]),  # (a whole 3.0 is K)
])
def test_every_validation_error_names_the_field(changes, words):
    with pytest.raises(IGLearnError) as error:
        make(**changes)
    message = str(error.value)
    assert message.startswith("log.npz:")
    for word in words:
        assert word in message


def test_many_rare_rows_are_counted_and_a_few_named():
    probability = np.full(6, 1e-9)
    with pytest.raises(IGLearnError, match=r"rows 0, 1, 2, 3, 4, \.\.\. \(6 rows\)"):
        make(probability=probability)


def test_the_limits_are_settings(monkeypatch):
    monkeypatch.setattr(limits, "PROBABILITY_FLOOR", 1e-12)
    assert make(probability=np.full(6, 1e-9)).uniform_weight[0] == pytest.approx(1 / 3e-9)
    monkeypatch.setattr(limits, "MAX_ABS_VALUE", 1e40)
    assert make(context=np.full((6, 3), 3e38, np.float32)).context[0, 0] == np.float32(3e38)


def test_integral_floats_and_booleans_are_accepted_exactly():
    log = make(action=np.array([0.0, 1, 2, 0, 1, 2]), context=np.ones((6, 3), bool),
               probability=np.full(6, 1, np.int8))
    assert log.action.dtype == np.int64 and log.action.tolist() == [0, 1, 2, 0, 1, 2]
    assert log.context.dtype == np.float32 and log.probability.dtype == np.float64


def test_a_context_set_checks_labels_like_a_log():
    with pytest.raises(IGLearnError, match=r"'label' holds 2.5 at row 1, not an integer"):
        ContextSet(np.zeros((2, 3)), 4, np.array([1, 2.5]), "c.npz")
    with pytest.raises(IGLearnError, match=r"'context' holds inf at row 1"):
        ContextSet(np.array([[0.0], [np.inf]]), 4, source="c.npz")


def test_a_column_whose_float32_copy_loses_its_variation_is_warned_about():
    """Values around 1e8 that vary by a few units keep few float32 steps: the log says so,
    naming the column and the fix; values around 35 with a spread of hundredths (a raw
    measurement) keep thousands of steps and are not warned about."""
    import warnings

    rng = np.random.default_rng(0)
    n = 500
    common = dict(action=rng.integers(0, 3, n), probability=np.full(n, 1 / 3),
                  feedback=rng.normal(size=(n, 2)), n_actions=3)
    context = np.column_stack([35 + 0.05 * rng.random(n), 1e8 + rng.normal(0, 0.3, n)])
    with pytest.warns(UserWarning, match=r"field 'context' column 1: its values lie around "
                                         r"1e\+08 .* subtract an offset"):
        InteractionLog(context=context, **common)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        InteractionLog(context=context[:, :1], **common)
        InteractionLog(context=context.astype(np.float32), **common)  # as the caller holds it


def test_a_frame_column_whose_float32_copy_loses_its_variation_is_warned_about_by_name():
    """Read from a table's named columns, the warning names the column, not its position."""
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 200
    frame = pd.DataFrame({"temp": 35 + 0.05 * rng.random(n),
                          "sent_ms": 1.7e8 + rng.integers(0, 4, n),
                          "arm": rng.integers(0, 3, n), "dwell": rng.exponential(2.0, n)})
    with pytest.warns(UserWarning, match=r"column 'sent_ms' \(context\): its values lie "
                                         r"around 1\.7e\+08"):
        InteractionLog.from_frame(frame, 3, context=["temp", "sent_ms"], action="arm",
                                  probability="uniform", feedback="dwell")


def test_rows_fingerprint_is_order_free_versioned_and_sees_a_missing_row():
    """The fingerprint of model.json hashes rows a block at a time (it sorted a copy of the
    whole log): the same rows in another order (and -0.0 for 0.0) give the same value."""
    from iglearn.data.logs import _HASH_ROWS, rows_fingerprint

    rng = np.random.default_rng(3)
    n = 2 * _HASH_ROWS + 5
    context = rng.normal(size=(n, 3)).astype(np.float32)
    context[0, 0] = 0.0
    log = InteractionLog(context=context, action=rng.integers(2, size=n),
                         probability=np.full(n, 0.5), feedback=rng.normal(size=(n, 2)),
                         n_actions=2)
    order = rng.permutation(n)
    shuffled = log.subset(order)
    shuffled.context[np.argsort(order)[0], 0] = -0.0
    assert rows_fingerprint(shuffled) == rows_fingerprint(log)
    assert rows_fingerprint(log).startswith(f"v2:{n}:")
    assert rows_fingerprint(log.subset(np.arange(1, n))) != rows_fingerprint(log)


def test_a_probability_column_of_booleans_is_refused_not_read_as_one():
    """True is no probability: read as p = 1 it made every weight 1 (only a warning that the
    probabilities do not fit the actions). Refused naming the column, from a frame as from
    arrays; booleans stay welcome where they are values (a feature, a reward, a flag)."""
    import pandas as pd

    n = 30
    frame = pd.DataFrame({"x": np.arange(n) % 4 == 0, "arm": np.arange(n) % 3, "p": True,
                          "y": np.arange(n) % 2 == 0})
    with pytest.raises(IGLearnError, match=r"^data frame: column 'p' \(probability\) holds "
                                           r"true/false values; a probability is a number"):
        InteractionLog.from_frame(frame, context=["x"], action="arm", probability="p",
                                  feedback=["y"], n_actions=3)
    with pytest.raises(IGLearnError, match=r"field 'probability' holds true/false values"):
        InteractionLog(np.zeros((n, 1)), frame["arm"].to_numpy(), np.ones(n, bool),
                       np.zeros((n, 1)), 3)
    log = InteractionLog.from_frame(frame.assign(p=1 / 3), context=["x"], action="arm",
                                    probability="p", feedback=["y"], n_actions=3)
    assert log.context.sum() == (np.arange(n) % 4 == 0).sum()


def test_pandas_nullable_numbers_and_torch_tensors_are_read_as_numbers():
    """A log built from pandas' nullable numbers (a frame of Float64 or Int64 columns, as
    convert_dtypes() or dtype_backend='numpy_nullable' gives) or from torch tensors that
    require grad holds the same values as one built from numpy arrays (the frame was refused
    as "dtype 'object'", the tensor raised torch's RuntimeError); a missing value is refused
    as NaN, naming its row, and a column of text stays refused."""
    import pandas as pd
    import torch

    rng = np.random.default_rng(0)
    context, feedback = 35 + 0.05 * rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    plain = make(context=context, feedback=feedback)
    frame = pd.DataFrame(context, columns=list("abc")).astype("Float64")
    frame["c"] = frame["c"].round().astype("Int64")
    for given in (make(context=frame, feedback=pd.DataFrame(feedback).astype("Float64"),
                       action=pd.Series(plain.action, dtype="Int64")),
                  make(context=frame.to_numpy(), feedback=feedback),
                  make(context=torch.tensor(context, requires_grad=True),
                       feedback=torch.tensor(feedback, requires_grad=True))):
        rounded = plain.context.copy()
        if given.context[0, 2] != plain.context[0, 2]:
            rounded[:, 2] = np.round(context[:, 2])
        np.testing.assert_allclose(given.context, rounded)
        np.testing.assert_allclose(given.feedback, plain.feedback)
        assert given.action.tolist() == plain.action.tolist()
    frame.loc[4, "b"] = pd.NA
    with pytest.raises(IGLearnError, match=r"^log.npz: field 'context' holds nan at row 4; "):
        make(context=frame)
    with pytest.raises(IGLearnError, match="field 'context' has dtype 'object'; expected real"):
        make(context=frame.astype(object).assign(a="x"))


def test_a_scipy_sparse_matrix_is_read_as_the_array_it_stands_for():
    """Sparse features (a bag of words as scipy.sparse) give the log of their dense array; the
    matrix was refused as "field 'context' has shape ()", a shape it does not have."""
    sparse = pytest.importorskip("scipy.sparse")
    context = np.eye(6, 4)
    for matrix in (sparse.csr_matrix(context), sparse.coo_array(context)):
        np.testing.assert_array_equal(make(context=matrix).context, context)
    np.testing.assert_array_equal(make(feedback=sparse.csc_matrix(np.ones((6, 2)))).feedback,
                                  np.ones((6, 2)))


def test_rows_of_different_lengths_are_one_line_naming_the_field():
    """A list of rows of different lengths (numpy's ValueError "inhomogeneous shape", which
    named no field) is refused naming the field, by a log, a fitted model and an online
    learner alike."""
    from iglearn.learners import E2G

    ragged = [[0.0, 1.0]] * 5 + [[0.0]]
    with pytest.raises(IGLearnError, match=r"^log.npz: field 'context' holds rows of different "
                                           r"lengths, not an array; give every row the same"):
        make(context=ragged)
    with pytest.raises(IGLearnError, match=r"^act: field 'context' holds rows of different"):
        E2G(2, 2, 1, seed=0).act([1.0, [2.0]])


def test_logs_and_context_sets_compare_by_value():
    """``==`` compared the fields' arrays element-wise and raised "truth value of an array
    ... is ambiguous" for two logs holding the same interactions."""
    log = make(reward=np.ones(6))
    assert log == make(reward=np.ones(6)) and (log != make(reward=np.ones(6))) is False
    assert log != make() and log != make(reward=np.zeros(6))
    assert log != make(reward=np.ones(6), context=np.ones((6, 3)))
    assert log != make(reward=np.ones(6), n_actions=4) and log != "log.npz"
    assert log == log.subset(np.arange(6))
    with pytest.raises(TypeError, match="unhashable"):
        hash(log)
    assert ContextSet(np.zeros((2, 3)), 3) == ContextSet(np.zeros((2, 3)), 3)
    assert ContextSet(np.zeros((2, 3)), 3) != ContextSet(np.zeros((2, 3)), 4)
    assert ContextSet(np.zeros((2, 3)), 3) != ContextSet(np.zeros((3, 3)), 3)


def test_a_subset_takes_positions_masks_and_slices():
    log = make(label=np.arange(6) % 3)
    np.testing.assert_array_equal(log.subset([5, -1, 0]).label, [2, 2, 0])
    np.testing.assert_array_equal(log.subset(log.action == 1).context, log.context[[1, 4]])
    assert len(log.subset(slice(2, None))) == 4 and log.subset(slice(2, 4)).source == "log.npz"


@pytest.mark.parametrize("index, words", [
    ([6], "position 6 is out of range for a log of 6 interactions (0 to 5, or -6 to -1"),
    (np.array([0, -7]), "position -7 is out of range"),
    (np.array([0.5]), "integer positions, a boolean mask or a slice, got float64 values"),
    ([[0, 1]], "got an array of shape (1, 2)"),
    (np.ones(4, bool), "a boolean mask needs one value per interaction (6), got shape (4,)"),
    (np.zeros(6, bool), "the index selects none of its 6 interactions"),
    ([], "the index selects none of its 6 interactions"),
    (slice(8, 9), "the slice slice(8, 9, None) selects none of its 6 interactions"),
])
def test_a_subset_out_of_range_or_empty_is_one_line_naming_the_log(index, words):
    """A position past the end gave numpy's IndexError, naming no log; an empty selection
    the constructor's "the log is empty"."""
    with pytest.raises(IGLearnError) as caught:
        make().subset(index)
    assert str(caught.value).startswith("log.npz: ") and words in str(caught.value)
