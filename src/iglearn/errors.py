"""Errors a user can act on: each names the problem and the fix."""


class IGLearnError(ValueError):
    """Bad input or a missing resource. The message says what is wrong and how to fix it.

    The command-line interface prints the message on one line and exits with code 2.
    """


class DataNotFoundError(IGLearnError):
    """A data set could not be found locally nor downloaded."""
