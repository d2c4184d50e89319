"""The suite's shared fixtures (tests/conftest.py) keep each test's own settings."""

import warnings

import pytest


@pytest.mark.filterwarnings("error::UserWarning")
def test_a_filterwarnings_mark_rules_over_the_suites_default():
    """The conftest shows every warning no other filter handles; a test's own mark still
    decides (a mark that turns a warning into an error raises it)."""
    with pytest.raises(UserWarning):
        warnings.warn("a warning the mark turns into an error", UserWarning, stacklevel=1)
