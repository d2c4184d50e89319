"""The ``iglearn`` command line.

Every setting of an experiment, of where its trials run and of the ``fit`` learner is an
option generated from its dataclass field (:mod:`iglearn.cli.settings`); the commands are in
:mod:`iglearn.cli.experiments` (``reproduce``, ``sweep``) and :mod:`iglearn.cli.logs` (``fit``,
``evaluate``, ``predict``, ``simulate``, ``convert``); where they may write, and the clean-up
of what killed runs left, in :mod:`iglearn.cli.paths`.

Errors print one line on stderr and no traceback (``--verbose``, before or after the command,
shows it), control characters escaped (:func:`iglearn.progress.printable`). Exit codes: 2 for
what the user can fix (``iglearn: error: ...`` names the problem and the fix): a bad option or
value, bad input data (an :class:`IGLearnError`, or an error of a library that reads files
raised on a file given: :func:`describe`), a missing, unreadable or unwritable file, no
memory left; 1 for an internal error (``iglearn: internal error: ...``, a bug to report with
the output of ``--verbose``); 130 when interrupted.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import gc
import json
import os
import signal
import sys
import threading
import traceback
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn, cast

import iglearn
from iglearn.cli import experiments, logs, serve
from iglearn.cli.paths import Outputs, check_local
from iglearn.cli.settings import HelpFormatter
from iglearn.errors import IGLearnError
from iglearn.heap import pad_heap
from iglearn.progress import end_progress, one_line, one_line_warnings, printable

__all__ = ["build_parser", "command", "describe", "main"]

# Raised by the libraries that read files only because of what a file holds.
INPUT_ERRORS: tuple[type[BaseException], ...] = (
    json.JSONDecodeError, UnicodeError, zipfile.BadZipFile, zlib.error, EOFError)
# The same, looked up only when their library is loaded: (module, class name).
LIBRARY_INPUT_ERRORS = (("pyarrow", "ArrowException"), ("safetensors", "SafetensorError"))
# Errors that mean "this input is malformed" when raised inside one of READERS.
READER_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError)
READERS = frozenset({"numpy", "pyarrow", "pandas", "safetensors", "json", "zipfile", "gzip",
                     "csv"})


Build = Callable[[argparse.ArgumentParser], None]


class _Parsers(dict):
    """A command's parsers by name; a parser registered with a ``build`` function gets its
    arguments from it when first looked up (parsing, help or inspection), not before."""

    def __init__(self) -> None:
        super().__init__()
        self.builders: dict[int, Build] = {}
        """The build function of each parser not built yet, by the parser's id (a command
        and its aliases share one parser, built once)."""

    def _built(self, name: str) -> argparse.ArgumentParser:
        parser = super().__getitem__(name)
        build = self.builders.pop(id(parser), None)
        if build is not None:
            build(parser)
        return parser

    def __getitem__(self, name: str) -> argparse.ArgumentParser:
        return self._built(name)

    def get(self, name: str, default: Any = None) -> Any:
        return self._built(name) if name in self else default

    def values(self) -> Any:
        return [self._built(name) for name in self]

    def items(self) -> Any:
        return [(name, self._built(name)) for name in self]

    def __iter__(self) -> Iterator[str]:
        return iter(list(super().keys()))


class LazySubParsers(argparse._SubParsersAction):
    """Subcommands whose parsers are built on demand: ``add_parser(name, build=f, ...)``
    creates the parser with its help and description, and ``f(parser)`` adds its arguments
    only when that command is parsed or inspected, so that ``iglearn --help`` and one
    command's parsing import only what that command needs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = _Parsers()

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        """Parse the command's arguments; one it does not know is told by the command's own
        parser, so that the message points to ``iglearn COMMAND --help``."""
        super().__call__(parser, namespace, values, option_string)
        unknown = vars(namespace).pop(argparse._UNRECOGNIZED_ARGS_ATTR, None)
        if unknown:
            self._name_parser_map[values[0]].error(
                f"unrecognized arguments: {' '.join(unknown)}")

    def add_parser(self, name: str, *, build: Build | None = None,
                   **kwargs: Any) -> argparse.ArgumentParser:
        """A new subcommand ``name``; ``build``: adds its arguments when first needed."""
        parser = super().add_parser(name, **kwargs)
        if build is not None:
            cast(_Parsers, self._name_parser_map).builders[id(parser)] = build
        return parser


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, and whose every (sub)command
    accepts --verbose, so that it may come before or after the command's name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", LazySubParsers)
        self.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                          help="show the traceback of an error")

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        """Print ``message`` on one line with where to find the options; exit with code 2. A
        required argument missing beside an option the command does not know (``--otu`` for
        ``--out``) is told as that option: the likelier mistake."""
        if message.startswith("the following arguments are required"):
            unknown = self._unknown_options()
            if unknown:
                message = f"unrecognized arguments: {unknown[0]}"
        self.exit(2, f"iglearn: error: {printable(message)}; see '{self.prog} --help'\n")

    def _unknown_options(self) -> list[str]:
        """The options given to this parser that none of its options is (or begins with)."""
        known = list(self._option_string_actions)
        return [text for text in getattr(self, "_given", [])
                if text.startswith("-") and len(text) > 1 and not text[1:2].isdigit()
                and not any(option.startswith(text.split("=", 1)[0]) for option in known)]


class PrintVersion(argparse.Action):
    """``--version``: print iglearn's version and exit, reading it only then (reading it
    imports the package metadata, which every other command would pay for at start)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> NoReturn:
        print(f"{parser.prog} {iglearn.__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``iglearn`` command."""
    parser = Parser(prog="iglearn", description="Interaction-Grounded Learning: learn from "
                                                "feedback vectors without an explicit reward.")
    parser.set_defaults(verbose=False, reads=())
    parser.add_argument("--version", action=PrintVersion, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    experiments.add_commands(commands)
    logs.add_commands(commands)
    serve.add_commands(commands)
    return parser


class OutputError(IGLearnError):
    """Writing the command's standard output failed (its reader went away, a full disk)."""

    def __init__(self, error: OSError):
        self.errno = error.errno
        super().__init__(_os_error(OSError(error.errno, error.strerror), "standard output"))


class GuardedOutput:
    """The command's standard output, whose write and flush errors are the command's own
    (:class:`OutputError`), not those of the files it reads or writes; everything else is
    the stream's."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return cast(int, self._stream.write(text))
        except OSError as e:
            raise OutputError(e) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            raise OutputError(e) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class LosableOutput:
    """The command's standard error, where a message its reader can no longer take (the
    reader went away: ``iglearn fit ... 2>&1 | head -1``; a full disk) is lost, as Python
    loses a warning it cannot show, rather than ending the command with its work undone: the
    command goes on and ends with its own code, what it would say after that lost too (the
    null device takes the stream's descriptor, so that the exit's flush does not fail)."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return cast(int, self._stream.write(text))
        except OSError:
            self._lose()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            self._lose()

    def _lose(self) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            descriptor = self._stream.fileno()
            os.dup2(os.open(os.devnull, os.O_WRONLY), descriptor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """Run with ``sys.stdout`` a :class:`GuardedOutput` (a closed one, fd 1 not open:
    the null device, where what the command prints is lost as the caller asked) and
    ``sys.stderr`` a :class:`LosableOutput`, then put the streams back."""
    stream, errors = sys.stdout, sys.stderr
    sys.stdout = cast(Any, GuardedOutput(stream if stream is not None
                                         else open(os.devnull, "w")))  # noqa: SIM115
    if errors is not None:
        sys.stderr = cast(Any, LosableOutput(errors))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stream, errors


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``iglearn`` command with ``argv`` (default: ``sys.argv[1:]``); the exit code.

    A reader of standard output that goes away before the command has printed all (``iglearn
    fit ... | head -1``) ends it quietly with code 0, the command's work done (a model
    written); another error writing standard output (a full disk) is one line naming
    standard output, code 2. A message standard error cannot take (``2>&1 | head -1``) is
    lost, the work done all the same."""
    with guarded_stdout():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, --version, or a usage error already printed
        return done.code if isinstance(done.code, int) else 0
    except OutputError as e:  # --help or --version into a closed pipe
        return 0 if e.errno == errno.EPIPE else 2
    if not args.verbose:
        one_line_warnings()
    args.outputs = Outputs()
    restore = end_as_interrupted()
    try:
        check_local(args)  # a URL given as a path: one line, before any work
        code = args.run(args)
        sys.stdout.flush()  # what it printed reaches its reader now, or fails as its own
        return code
    except OutputError as e:
        if e.errno == errno.EPIPE:  # the reader went away: nothing more to say to it
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the exit's flush goes nowhere
            return 0
        end_progress()
        print(printable(f"iglearn: error: {e}"), file=sys.stderr)
        return 2
    except Terminated as e:
        end_progress()
        print(f"iglearn: terminated ({e.name})", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:
        end_progress()
        print("iglearn: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        code, line = describe(e, [str(getattr(args, name)) for name in args.reads
                                  if getattr(args, name, None) is not None])
        end_progress()
        if args.verbose:
            traceback.print_exc()
        print(printable(line), file=sys.stderr)
        return code
    finally:
        restore()
        args.outputs.close()


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a scheduler's time limit) or SIGHUP (the terminal closed) ending a
    command: it unwinds as Ctrl+C does, so that what the command was writing is removed
    (:func:`~iglearn.files.atomic_path`'s part files) and nothing half-written is left."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.name = "SIGTERM" if signum == signal.SIGTERM else "SIGHUP"


def end_as_interrupted() -> Callable[[], None]:
    """Make SIGTERM and SIGHUP end the command as Ctrl+C does (:class:`Terminated`, status
    128 + the signal: 143, 129), where their default would end the process at once and leave
    part files behind; the function that restores the handlers before (the command ``serve``
    sets its own). Only the main thread can set them: elsewhere nothing is changed."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def stop(signum: int, frame: object) -> None:
        raise Terminated(signum)

    ends = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    before = {signum: signal.signal(signum, stop) for signum in ends}

    def restore() -> None:
        for signum, handler in before.items():
            signal.signal(signum, handler)

    return restore


COMMAND_GC_THRESHOLD = 200_000
"""The command's first-generation garbage-collection threshold (Python's default: 700).

Importing torch makes about 165,000 objects that live as long as the process, and each
collection walks the objects made since the one before: with Python's default the collector
took 140 to 200 ms of ``iglearn fit`` on 2,000 interactions, with a threshold of 50,000 still
70 to 150 ms (four or five young collections, most of them during the imports, in some runs a
second-generation one as well), and at 200,000 one collection, about 60 ms.
Memory held by unreachable cycles waits at most 200,000 allocations. The service, whose
requests want short pauses, sets Python's default back once started
(:func:`iglearn.service.app.settle_collector`)."""


def command() -> NoReturn:
    """The ``iglearn`` console command (and ``python -m iglearn``): :func:`main` on the
    process's arguments, collecting garbage in the larger steps of
    :data:`COMMAND_GC_THRESHOLD` and with the heap padded (:func:`iglearn.heap.pad_heap`),
    then :func:`exit_process` with its code."""
    gc.set_threshold(COMMAND_GC_THRESHOLD, *gc.get_threshold()[1:])
    pad_heap()
    exit_process(main())


def exit_process(code: int) -> NoReturn:
    """End the process with exit code ``code``, skipping the interpreter's teardown when
    nothing needs it.

    After a command that imported torch, Python's own exit spends 0.3 to 0.5 s destroying
    the modules' objects (``import torch`` and a normal exit: 1.5 to 2.0 s wall; ending at
    once: 1.1 s), a third of a small fit's whole run. When no thread but daemons is
    left running, every exit handler runs (``atexit``: logging's, multiprocessing's, Ray's,
    the clean-up of temporary folders still open), the standard streams are flushed and
    the process ends there (``os._exit``). With a thread still running (the interpreter
    would wait for it), it is Python's own exit."""
    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon
           for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a closed pipe or
            stream.flush()  # stream (None): nothing more to say
    os._exit(code)


def describe(error: Exception, inputs: Sequence[str] = ()) -> tuple[int, str]:
    """The exit code and the one line that report ``error``, raised by a command that reads
    the files or folders ``inputs``.

    2 (``iglearn: error: ...``): an :class:`IGLearnError`; an ``OSError`` (a permission
    error, a missing file and a full disk each said as such); ``MemoryError`` and
    ``RecursionError``; and what a file can make the libraries that read it raise: a JSON,
    Unicode, zip or zlib error, an end of file, an Arrow or safetensors error, or a
    ValueError, TypeError, KeyError, IndexError or OverflowError raised inside one of
    :data:`READERS` (numpy, pyarrow, ...). Those name the inputs. 1 (``iglearn: internal
    error: ...``): anything else, a bug.
    """
    files = " or ".join(inputs)
    if isinstance(error, IGLearnError):
        return 2, f"iglearn: error: {error}"
    if isinstance(error, MemoryError):
        return 2, (f"iglearn: error: {files or 'this run'}: not enough memory; use a smaller "
                   f"input or smaller option values, or a machine with more memory")
    if isinstance(error, RecursionError):
        return 2, (f"iglearn: error: {files or 'the input'}: nested too deeply to read "
                   f"(RecursionError); the file is malformed, write it again")
    if _input_error(error):
        cause = f"{type(error).__name__}: {one_line(error)}"
        if not files:
            return 2, (f"iglearn: error: the option values cannot be used ({cause}); check "
                       f"them (--verbose shows where it failed)")
        return 2, (f"iglearn: error: {files}: cannot be read ({cause}); the file is truncated, "
                   f"corrupt or not in the format its extension names: write it again "
                   f"(--verbose shows where it failed)")
    if isinstance(error, OSError):
        return 2, f"iglearn: error: {_os_error(error, files or 'a file')}"
    return 1, (f"iglearn: internal error: {type(error).__name__}: {one_line(error)}; run again "
               f"with --verbose for the traceback and report it")


def _input_error(error: Exception) -> bool:
    """True for what a malformed input makes a file-reading library raise."""
    if isinstance(error, INPUT_ERRORS):
        return True
    for module, name in LIBRARY_INPUT_ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(error, cls):
            return True
    if not isinstance(error, READER_ERRORS) or error.__traceback__ is None:
        return False
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return str(tb.tb_frame.f_globals.get("__name__", "")).split(".")[0] in READERS


def _os_error(error: OSError, files: str) -> str:
    """An OSError as its kind says it: permission denied, no such file, no space left."""
    names = [str(name) for name in (error.filename, error.filename2) if name is not None]
    where = " -> ".join(names) or files
    if isinstance(error, PermissionError):
        return (f"{where}: permission denied; check the permissions of the file and its "
                f"folder, or choose another path")
    if isinstance(error, FileNotFoundError):
        return f"{where}: no such file or folder; check the path"
    if error.errno == errno.ENOSPC:
        return f"{where}: no space left on the device; free some space or write elsewhere"
    if error.errno == errno.EROFS:
        return f"{where}: the file system is read-only; write elsewhere"
    return (f"{where}: {one_line(error.strerror or error)}; check the path, its permissions "
            f"and the free space")
