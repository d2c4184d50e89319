"""What iglearn shows on the terminal besides its results: progress bars on stderr, warnings
as one line each, and text from files made printable."""

from __future__ import annotations

import sys
import time
import unicodedata
import warnings
from typing import Any, TextIO

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


LINE_SECONDS = 30.0
"""Most seconds between two lines of :class:`ProgressLines` while work goes on."""


class ProgressLines:
    """Progress on a standard error that is no terminal (a file, a pipe, a CI log): plain
    lines, ``DESCRIPTION: N/TOTAL (P %), S s``, one at the start, one each time a tenth more
    of the total is done or :data:`LINE_SECONDS` have passed, and one when it closes
    (``... done in S s``),
    where a bar redrawn with carriage returns would leave one unreadable line, erased at the
    end. The calls of a tqdm bar that iglearn makes: ``update``, ``set_postfix``,
    ``refresh``, ``close``, ``n`` and ``total``."""

    def __init__(self, total: int | None, description: str, enabled: bool):
        self.total, self.description, self.enabled = total, description, enabled
        self.n, self.postfix, self.closed = 0, "", False
        self.start = self.last = time.monotonic()
        self.shown = 0  # the tenths of the total told so far
        if self.total:
            self._line(f"{self._count()}, starting")

    def update(self, n: float = 1) -> None:
        """Count ``n`` more units done; a line when a tenth more is done or time has passed."""
        self.n += int(n)
        now = time.monotonic()
        tenths = int(10 * self.n / self.total) if self.total else 0
        if tenths > self.shown or now - self.last >= LINE_SECONDS:
            self.shown = max(self.shown, tenths)
            if self.total is None or self.n < self.total:  # the end is told by close
                self._line(f"{self._count()}, {now - self.start:.0f} s")

    def set_postfix(self, **values: Any) -> None:
        """Figures to add to the next lines (``name=value``)."""
        self.postfix = ", ".join(f"{name}={value}" for name, value in values.items())

    def refresh(self) -> None:
        """Nothing: a line is written when it is due."""

    def close(self) -> None:
        """The last line, once: done, or where it stopped short of the total."""
        if not self.closed:
            self.closed = True
            how = "done in" if not self.total or self.n >= self.total else "stopped after"
            self._line(f"{self._count()} {how} {time.monotonic() - self.start:.0f} s")

    def _count(self) -> str:
        if not self.total:
            return f"{self.n}"
        return f"{self.n}/{self.total} ({100 * self.n / self.total:.0f} %)"

    def _line(self, text: str) -> None:
        if self.enabled:
            extra = f", {self.postfix}" if self.postfix else ""
            print(f"{self.description}: {text}{extra}", file=sys.stderr, flush=True)
            self.last = time.monotonic()


def progress_bar(total: int | None, description: str, enabled: bool = True) -> Any:
    """A progress bar on stderr over ``total`` units (``tqdm.auto``: a text bar on a terminal,
    a widget in a notebook), cleared when closed, advanced by the caller (``update``) and
    closed by it (``close``); drawn only when ``enabled``. On a standard error that is
    neither (a file, a pipe), plain lines instead (:class:`ProgressLines`)."""
    if not _drawn_on_terminal():
        return ProgressLines(total, description, enabled)
    from tqdm.auto import tqdm  # on first use: tqdm.auto imports asyncio

    return tqdm(desc=description, disable=not enabled, total=total, dynamic_ncols=True,
                leave=False)


def _drawn_on_terminal() -> bool:
    """Whether a bar is drawn: standard error is a terminal, or a notebook shows widgets."""
    try:
        if sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False
    return "ipykernel" in sys.modules


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
