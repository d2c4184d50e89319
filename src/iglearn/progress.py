"""What iglearn shows on the terminal besides its results: progress bars on stderr, warnings
as one line each, and text from files made printable."""

from __future__ import annotations

import sys
import unicodedata
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, TypeVar

T = TypeVar("T")

# Characters that move the cursor or reorder text without being control characters.
_INVISIBLE_LAYOUT = frozenset("\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
                              "\u2066\u2067\u2068\u2069")
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: object) -> str:
    """``str(text)`` with every control character escaped as Python writes it in a string
    literal (``\\n``, ``\\x1b``, ``\\x9b``, ``\\u202e``): a file name or a feature name read from
    a file then prints on the line it belongs to, and cannot move the cursor, recolour the
    terminal or reverse the text after it."""
    out = []
    for char in str(text):
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif unicodedata.category(char) == "Cc" or char in _INVISIBLE_LAYOUT:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def one_line(text: object) -> str:
    """Free text (a library's error message, say) on one printable line: runs of whitespace,
    line breaks included, become one space, then :func:`printable`."""
    return printable(" ".join(str(text).split()))


def progress_bar(total: int | None, description: str, items: Iterable[T] | None = None,
                 enabled: bool = True) -> Any:
    """A progress bar on stderr over ``total`` units (``tqdm.auto``: a text bar on a terminal,
    a widget in a notebook), cleared when closed: over ``items`` when given, or advanced by
    the caller (``update``) and closed by it (``close``); drawn only when ``enabled``."""
    from tqdm.auto import tqdm  # on first use: tqdm.auto imports asyncio

    return tqdm(items, desc=description, disable=not enabled, total=total,
                dynamic_ncols=True, leave=False)


def progress(items: Iterable[T], description: str, enabled: bool = True,
             total: int | None = None) -> Iterator[T]:
    """Iterate over ``items`` with a progress bar (shown only when ``enabled``)."""
    return iter(progress_bar(total, description, items, enabled))


def end_progress() -> None:
    """Close every progress bar still drawn (one a loop left behind when an error stopped it),
    each left at its last state on a line of its own, so that what is printed next, an error
    say, starts on a new line rather than on the bar's."""
    bars = sys.modules.get("tqdm.std")  # none drawn when tqdm was never imported
    for bar in list(getattr(getattr(bars, "tqdm", None), "_instances", ())):
        bar.leave = True
        bar.close()


def _one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: TextIO | None = None, line: str | None = None) -> None:
    print(f"iglearn: warning: {printable(message)}", file=sys.stderr)


def one_line_warnings() -> None:
    """Show each warning as one line on stderr, ``iglearn: warning: ...``, its control
    characters (line breaks included) escaped by :func:`printable` (for the command line and
    its workers)."""
    warnings.showwarning = _one_line
