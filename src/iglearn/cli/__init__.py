"""The ``iglearn`` command line.

Every setting of an experiment, of where its trials run and of the ``fit`` learner is an
option generated from its dataclass field (:mod:`iglearn.cli.settings`); the commands are in
:mod:`iglearn.cli.experiments` (``reproduce``, ``sweep``) and :mod:`iglearn.cli.logs` (``fit``,
``evaluate``, ``predict``, ``simulate``, ``convert``).

Errors print one line on stderr and no traceback (``--verbose``, before or after the command,
shows it). Exit codes: 2 for what the user can fix (a bad option or value, bad input data, a
missing file, an unwritable output: ``iglearn: error: ...`` names the problem and the fix), 1
for an internal error (``iglearn: internal error: ...``, a bug to report with the output of
``--verbose``), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

import iglearn
from iglearn.cli import experiments, logs
from iglearn.cli.settings import HelpFormatter
from iglearn.errors import IGLearnError
from iglearn.progress import one_line_warnings

__all__ = ["build_parser", "main"]


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, and whose every (sub)command
    accepts --verbose, so that it may come before or after the command's name."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                          help="show the traceback of an error")

    def error(self, message: str) -> NoReturn:
        """Print ``message`` on one line with where to find the options; exit with code 2."""
        self.exit(2, f"iglearn: error: {message}; see '{self.prog} --help'\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``iglearn`` command."""
    parser = Parser(prog="iglearn", description="Interaction-Grounded Learning: learn from "
                                                "feedback vectors without an explicit reward.")
    parser.set_defaults(verbose=False)
    parser.add_argument("--version", action="version", version=f"%(prog)s {iglearn.__version__}",
                        help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    experiments.add_commands(commands)
    logs.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``iglearn`` command with ``argv`` (default: ``sys.argv[1:]``); the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, --version, or a usage error already printed
        return done.code if isinstance(done.code, int) else 0
    if not args.verbose:
        one_line_warnings()
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("iglearn: interrupted", file=sys.stderr)
        return 130
    except IGLearnError as e:
        _report(args.verbose, f"iglearn: error: {e}")
        return 2
    except OSError as e:
        _report(args.verbose, f"iglearn: error: {e}; check the path, its permissions and the "
                              f"free space")
        return 2
    except Exception as e:
        _report(args.verbose, f"iglearn: internal error: {type(e).__name__}: {e}; run again "
                              f"with --verbose for the traceback and report it")
        return 1


def _report(verbose: bool, line: str) -> None:
    if verbose:
        traceback.print_exc()
    print(" ".join(line.split()), file=sys.stderr)
