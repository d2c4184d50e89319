"""Progress bars on stderr for long work."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress(items: Iterable[T], description: str, enabled: bool = True,
             total: int | None = None) -> Iterator[T]:
    """Iterate over ``items`` with a progress bar (shown only when ``enabled``)."""
    return iter(tqdm(items, desc=description, disable=not enabled, total=total,
                     dynamic_ncols=True, leave=False))


def _one_line(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"iglearn: warning: {message}", file=sys.stderr)


def one_line_warnings() -> None:
    """Show warnings as one line each on stderr (for the command line and its workers)."""
    warnings.showwarning = _one_line
