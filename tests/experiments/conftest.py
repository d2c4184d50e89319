"""What the experiment tests share."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

from iglearn.cli import main


def reproduce(*argv: object) -> str:
    """Run ``iglearn reproduce *argv`` in this process, check that it succeeds, and return what
    it printed (usable from fixtures of any scope, unlike pytest's capsys)."""
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert main(["reproduce", *map(str, argv)]) == 0
    return printed.getvalue()
