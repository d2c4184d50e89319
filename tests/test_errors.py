"""iglearn.errors: the refusal of a value that is not one of the choices."""

import pytest
import torch

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
