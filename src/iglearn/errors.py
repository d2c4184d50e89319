"""Errors a user can act on: each names the problem and the fix."""

from __future__ import annotations

import shlex
import sys
import warnings
from collections.abc import Iterable
from typing import TypeVar

Choice = TypeVar("Choice")

SHOWN_CHARACTERS = 60
"""Longest text of a value from a file that an error message shows (longer ones are cut)."""


class IGLearnError(ValueError):
    """Bad input or a missing resource. The message says what is wrong and how to fix it.

    The command-line interface prints the message on one line and exits with code 2.
    """


class DataNotFoundError(IGLearnError):
    """A data set could not be found locally nor downloaded."""


class TooFewInteractionsError(IGLearnError):
    """A log too small to fit: ``n`` interactions for ``n_actions`` actions, where a fit
    needs at least ``minimum`` (:func:`iglearn.data.limits.check_fit_size`)."""

    def __init__(self, message: str, n: int = 0, n_actions: int = 0, minimum: int = 0):
        super().__init__(message)
        self.n, self.n_actions, self.minimum = n, n_actions, minimum

    def __reduce__(self) -> tuple[type, tuple[str, int, int, int]]:
        """Pickled whole (raised in a worker process of an experiment)."""
        return type(self), (str(self), self.n, self.n_actions, self.minimum)


class DriftWarning(UserWarning):
    """Rows a fitted model reads lie mostly outside the range of its training log in some
    column (:func:`iglearn.data.scaling.drift_warning`): another unit or origin."""


def warn_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn with ``message``, attributed to the line outside iglearn that led to it (a user's
    ``fit``, ``from_frame`` or ``InteractionLog(...)``), however deep in iglearn it arises,
    so that the warning shows the user's file and line and a filter by module matches the
    user's module. A frame is iglearn's when its module is (a dataclass's generated
    ``__init__`` included, which runs in its class's module)."""
    frame, level = sys._getframe(1), 2  # level 2: warn_caller's caller
    while frame.f_back is not None and _ours(frame.f_globals.get("__name__")):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def _ours(module: object) -> bool:
    return isinstance(module, str) and (module == "iglearn" or module.startswith("iglearn."))


def shown(value: object) -> str:
    """``value`` as an error message shows a value read from a file: its ``repr`` (so
    newlines, escape sequences and other unprintable characters appear escaped), cut to
    :data:`SHOWN_CHARACTERS` characters."""
    text = repr(value)
    if len(text) > SHOWN_CHARACTERS:
        text = f"{text[:SHOWN_CHARACTERS - 3]}..."
    return text


def option_list(items: Iterable[str]) -> str:
    """``items`` as a message writes one list option's value for a shell (``--actions
    left,middle,right``): comma-separated, an item holding a comma, a quote or spaces at its
    ends quoted as the option reads it (:func:`iglearn.cli.settings.items`), and the whole
    quoted for the shell when it needs it (``'"right, far",left'``)."""
    return shlex.quote(",".join(map(_option_item, items)))


def _option_item(item: str) -> str:
    """One item of :func:`option_list`, quoted (a quote inside doubled) when it holds a
    comma, a quote or a line break, or has spaces at its ends."""
    if item == item.strip() and not any(mark in item for mark in ',"\r\n'):
        return item
    return '"' + item.replace('"', '""') + '"'


def check_choice(what: str, value: Choice, choices: Iterable[object]) -> Choice:
    """``value`` if it is one of ``choices``; otherwise an :class:`IGLearnError`
    "unknown {what} {value}; choose one of a, b, c" naming every choice."""
    choices = list(choices)
    if value not in choices:
        raise IGLearnError(f"unknown {what} {shown(value)}; choose one of "
                           f"{', '.join(str(c) for c in choices)}")
    return value


class MissingExtraError(IGLearnError, ImportError):
    """A feature needs an optional extra (``serve``, ``postgres``) that is not installed.
    Its message is one line naming the extra and the command that installs it; it is an
    ``ImportError`` too, raised where importing a module of iglearn needs the extra."""


def require_extra(extra: str, modules: tuple[str, ...], what: str) -> None:
    """Raise :class:`MissingExtraError` when one of ``modules`` cannot be imported: ``what``
    (a command or a module of iglearn) needs the optional ``extra``."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as e:
            from iglearn import __version__

            missing = e.name or module
            raise MissingExtraError(
                f"{what} needs the '{extra}' extra ({missing} is not installed): "
                f"pip install -e '.[{extra}]' in a clone of iglearn, or "
                f"pip install 'iglearn-{__version__}-py3-none-any.whl[{extra}]' from a "
                f"wheel") from None


SERVE_MODULES = ("anyio", "starlette", "uvicorn")
"""What the decision service imports from the ``serve`` extra."""
