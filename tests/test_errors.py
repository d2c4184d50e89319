"""iglearn.errors: the refusal of a value that is not one of the choices, and warnings that
name the caller's line."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from iglearn import AIIGL, InteractionLog
from iglearn.envs import digits_environment
from iglearn.errors import IGLearnError, check_choice
from iglearn.models import make_policy
from iglearn.service.keys import check_role


def test_a_choice_passes_through():
    assert check_choice("role", "admin", ("client", "admin")) == "admin"


def test_an_unknown_value_names_every_choice_on_one_line():
    with pytest.raises(IGLearnError) as refused:
        check_choice("divergence", "js", ("kl", "chi2"))
    assert str(refused.value) == "unknown divergence 'js'; choose one of kl, chi2"


def test_a_long_or_multiline_value_is_shown_escaped_and_cut():
    with pytest.raises(IGLearnError) as refused:
        check_choice("role", "x\n" * 100, ("client", "admin"))
    message = str(refused.value)
    assert "\n" not in message and "..." in message and message.endswith("client, admin")


def test_the_library_refuses_through_it():
    with pytest.raises(IGLearnError, match="unknown role 'root'; choose one of client, admin"):
        check_role("root")
    with pytest.raises(IGLearnError, match="unknown policy class 'tree'; choose one of "
                                           "linear, mlp"):
        make_policy("tree", 3, 2, torch.Generator())


def test_a_warning_from_deep_in_iglearn_names_the_users_line():
    """A fit's identifiability warning, a dropped row of a DataFrame and a log built from
    imprecise floats each point at the line that called iglearn, not at iglearn's own."""
    log = digits_environment().log(300, seed=0)  # 30 an action: AI-IGL warns
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=50), "f": rng.normal(size=50),
                          "arm": rng.integers(0, 3, 50), "p": 1 / 3})
    frame.loc[3, "a"] = np.nan
    calls = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calls["fit"] = line_of(lambda: AIIGL(seed=0, max_restarts=0, refinements=0).fit(log))
        calls["frame"] = line_of(lambda: InteractionLog.from_frame(
            frame, context=["a"], feedback=["f"], action="arm", probability="p", n_actions=3,
            missing="drop"))
        calls["floats"] = line_of(lambda: InteractionLog(
            context=1e6 + rng.normal(size=(50, 1)) * 1e-3, action=np.zeros(50, int),
            probability=np.ones(50), feedback=np.ones((50, 1)), n_actions=2))
    assert {w.filename for w in caught} == {__file__}
    assert {w.lineno for w in caught} == set(calls.values())
    assert any("min_interactions" in str(w.message) for w in caught)
    assert any("dropped row 3" in str(w.message) for w in caught)
    assert any("float32" in str(w.message) for w in caught)


def line_of(call) -> int:
    """Run ``call`` (a lambda of this file whose call into iglearn begins on its first line)
    and return that line, the one a warning from the call names."""
    call()
    return call.__code__.co_firstlineno


def test_a_log_too_small_to_fit_keeps_its_sizes_across_processes():
    """An experiment's trial runs in a worker process: the error that its log is too small
    comes back pickled, with the sizes the command line names the option by."""
    import pickle

    from iglearn.data.limits import check_fit_size
    from iglearn.errors import TooFewInteractionsError

    env = digits_environment()
    with pytest.raises(TooFewInteractionsError) as caught:
        check_fit_size([env.log(5, seed=0)])
    back = pickle.loads(pickle.dumps(caught.value))
    assert (type(back), str(back)) == (TooFewInteractionsError, str(caught.value))
    assert (back.n, back.n_actions, back.minimum) == (5, 10, 20)
