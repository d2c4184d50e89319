"""Errors a user can act on: each names the problem and the fix."""

from __future__ import annotations

SHOWN_CHARACTERS = 60
"""Longest text of a value from a file that an error message shows (longer ones are cut)."""


class IGLearnError(ValueError):
    """Bad input or a missing resource. The message says what is wrong and how to fix it.

    The command-line interface prints the message on one line and exits with code 2.
    """


class DataNotFoundError(IGLearnError):
    """A data set could not be found locally nor downloaded."""


def shown(value: object) -> str:
    """``value`` as an error message shows a value read from a file: its ``repr`` (so
    newlines, escape sequences and other unprintable characters appear escaped), cut to
    :data:`SHOWN_CHARACTERS` characters."""
    text = repr(value)
    if len(text) > SHOWN_CHARACTERS:
        text = f"{text[:SHOWN_CHARACTERS - 3]}..."
    return text
