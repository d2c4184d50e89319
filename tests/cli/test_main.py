"""The ``iglearn`` parser: every setting an option with help and its default; --version,
--verbose anywhere, ``python -m iglearn``, one-line errors."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
import types
import typing
from dataclasses import fields, is_dataclass

import pytest

import iglearn
from iglearn.cli import build_parser, experiments, logs, main
from iglearn.cli.settings import build_settings, choices, flag
from iglearn.errors import IGLearnError
from iglearn.experiments import table1
from iglearn.experiments.action_inclusive import ActionInclusiveConfig
from iglearn.experiments.figure3 import Figure3Config
from iglearn.experiments.runner import Execution
from iglearn.experiments.sample_complexity import SampleComplexityConfig
from iglearn.experiments.table1 import Table1Config
from iglearn.experiments.unsupervised import UnsupervisedConfig
from iglearn.hints import settings_hints
from iglearn.learners import AIIGL, BatchIGL

# (command, its required arguments, settings whose every field is an option, the namespace
# key, fields left out)
SETTINGS = [
    (("reproduce", "table1"), [], Table1Config(), experiments.CONFIG, ()),
    (("reproduce", "sample-complexity"), [], SampleComplexityConfig(), experiments.CONFIG, ()),
    (("reproduce", "unsupervised"), [], UnsupervisedConfig(), experiments.CONFIG, ()),
    (("reproduce", "figure3"), [], Figure3Config(), experiments.CONFIG, ()),
    (("reproduce", "action-inclusive"), [], ActionInclusiveConfig(), experiments.CONFIG, ()),
    (("sweep",), [], experiments.sweep_defaults(), experiments.CONFIG, ()),
    *[(("reproduce", e.name), [], Execution(), experiments.EXECUTION, ())
      for e in experiments.EXPERIMENTS],
    (("sweep",), [], Execution(), experiments.EXECUTION, ()),
    (("fit",), ["log.npz", "--out", "m"], BatchIGL(), logs.LEARNER, ("seed",)),
    (("fit",), ["log.npz", "--out", "m", "--algorithm", "ai-igl"], AIIGL(), logs.LEARNER,
     ("seed",)),
]


def leaf_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) of every command that runs something."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        yield path, parser
    for action in subparsers:
        for name, sub in action.choices.items():
            yield from leaf_parsers(sub, (*path, name))


def setting_fields(settings: object, prefix: str = ""):
    """(dotted path, owner class, field, value) of every setting, nested dataclasses
    flattened."""
    for field in fields(settings):
        value = getattr(settings, field.name)
        if is_dataclass(value):
            yield from setting_fields(value, f"{prefix}{field.name}.")
        else:
            yield f"{prefix}{field.name}", type(settings), field, value


def another_value(cls: type, field, value) -> tuple[list[str], object]:
    """Command-line words that set ``field`` to a value other than ``value``, and that value."""
    hint = settings_hints(cls)[field.name]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    sequence = typing.get_origin(hint) is tuple
    item = typing.get_args(hint)[0] if sequence else hint
    if field.name == "show_progress":  # its option is --quiet
        return ["--quiet"], False
    if item is bool:
        words = ["--no-" + field.name.replace("_", "-")] if value else [flag(field.name)]
        return words, not value
    if field.name in choices():
        options = choices()[field.name]
        if sequence:
            new = (options[-1],) if value != (options[-1],) else (options[0],)
        else:
            new = next(c for c in options if c != value)
    elif typing.get_origin(item) is typing.Literal:
        new = next(c for c in typing.get_args(item) if c != value)
    elif item is str:
        new = "somewhere"
    elif sequence:
        new = (7, 9)
    elif item is float and value is not None and 0 < value < 1:  # a share: halved stays one
        new = value / 2
    else:
        new = item(2 * value) if value else item(3)
    return [flag(field.name), ",".join(map(str, new)) if sequence else str(new)], new


@pytest.mark.parametrize("command, required, settings, key, left_out", SETTINGS)
def test_every_setting_has_an_option_with_help_and_default(command, required, settings, key,
                                                           left_out):
    parser = dict(leaf_parsers(build_parser()))[command]
    options = {action.dest: action for action in parser._actions}
    for path, _, _, _ in setting_fields(settings):
        if path in left_out:
            continue
        action = options.get(f"{key}.{path}")
        assert action is not None, f"{type(settings).__name__}.{path} has no option"
        assert action.help and len(action.help) > 20, path
        assert "(default: " in action.help, path


@pytest.mark.parametrize("command, required, settings, key, left_out", SETTINGS)
def test_every_setting_given_reaches_the_settings(command, required, settings, key, left_out):
    parser = dict(leaf_parsers(build_parser()))[command]
    for path, owner, field, value in setting_fields(settings):
        if path in left_out:
            continue
        words, new = another_value(owner, field, value)
        built = build_settings(parser.parse_args([*required, *words]), settings, key)
        for name in path.split("."):
            built = getattr(built, name)
        assert built == new, (path, words)


def test_every_option_and_argument_has_help_and_every_default_is_shown():
    for path, parser in leaf_parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, (path, action.dest)
            takes_value = action.option_strings and action.nargs != 0
            if takes_value and not action.required:
                help_text = parser._get_formatter()._get_help_string(action)
                assert "(default: " in help_text, (path, action.dest)


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"iglearn {iglearn.__version__}"


def test_python_dash_m_iglearn_help():
    result = subprocess.run([sys.executable, "-m", "iglearn", "--help"], capture_output=True,
                            text=True)
    assert result.returncode == 0
    for command in ("reproduce", "sweep", "fit", "evaluate", "predict", "simulate", "convert"):
        assert command in result.stdout


@pytest.mark.parametrize("before", [True, False])
def test_verbose_before_or_after_the_command_shows_the_traceback(tmp_path, capsys, before):
    command = ["convert", str(tmp_path / "absent.npz"), str(tmp_path / "out.npz")]
    argv = ["--verbose", *command] if before else [*command, "--verbose"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("iglearn: error:")
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_usage_errors_are_one_line_naming_the_option(capsys):
    assert main(["reproduce", "table1", "--trials", "0"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("iglearn: error:")
    assert "--trials" in err and "iglearn reproduce table1 --help" in err


@pytest.mark.parametrize("option", ["--seed", "--max-restarts", "--small-log"])
def test_an_integer_option_a_model_cannot_record_is_refused_naming_it(capsys, tmp_path,
                                                                      option):
    """A model.json holds integers below 2**63: ``fit --seed 100000000000000000000`` used to
    exit 0 with a model that every later command called damaged (and a re-fit refused)."""
    out = tmp_path / "m"
    assert main(["fit", str(tmp_path / "log.npz"), "--out", str(out), option,
                 "100000000000000000000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"iglearn: error: argument {option}: must be an integer >= 0 and "
                          f"below 2**63, got '100000000000000000000'")
    assert len(err.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize("argv, said", [
    # the command's own help, not iglearn's (it said "see 'iglearn --help'")
    (["fit", "log.npz", "--out", "m", "--learning-rate", "0.1"],
     "unrecognized arguments: --learning-rate 0.1; see 'iglearn fit --help'"),
    # a misspelt option, not the option it stood for (it said "required: --out")
    (["fit", "log.npz", "--otu", "m"], "unrecognized arguments: --otu; see 'iglearn fit --help'"),
    (["fit", "--out", "m"], "the following arguments are required: LOG; see 'iglearn fit --help'"),
    (["serve", "keys", "add", "--bogus"],
     "unrecognized arguments: --bogus; see 'iglearn serve keys add --help'"),
])
def test_an_unknown_option_is_told_by_its_command(capsys, argv, said):
    assert main(argv) == 2
    assert capsys.readouterr().err == f"iglearn: error: {said}\n"


def test_an_internal_error_is_one_line_asking_for_verbose(monkeypatch, capsys, tmp_path):
    def broken(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(logs, "_convert", broken)
    assert main(["convert", str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "internal error" in err and "a bug" in err and "--verbose" in err


@pytest.mark.parametrize("argv", [["--help"], ["reproduce", "--help"],
                                  ["reproduce", "table1", "--help"], ["fit", "--help"]])
def test_help(argv, capsys):
    assert main(argv) == 0 and "iglearn" in capsys.readouterr().out


@pytest.mark.parametrize("error, code, line", [
    (IGLearnError("the trial failed"), 2, "iglearn: error: the trial failed"),
    (KeyboardInterrupt(), 130, "iglearn: interrupted"),
])
def test_an_error_during_a_progress_bar_starts_on_its_own_line(monkeypatch, capsys, tmp_path,
                                                               error, code, line):
    def failing(*args, **kwargs):
        raise error

    monkeypatch.setattr(table1, "run_stacked", failing)
    assert main(["reproduce", "table1", "--dataset", "digits", "--trials", "2",
                 "--samples", "100", "--jobs", "1", "--out", str(tmp_path / "out")]) == code
    err = capsys.readouterr().err
    assert "Table 1 trials" in err   # the bar was drawn
    assert line in err.split("\n"), repr(err)


@pytest.mark.parametrize(("signum", "code", "name"), [(signal.SIGTERM, 143, "SIGTERM"),
                                                      (signal.SIGHUP, 129, "SIGHUP")])
def test_sigterm_ends_a_command_as_ctrl_c_does_with_nothing_half_written(tmp_path, signum, code,
                                                                        name):
    """``kill`` (a scheduler's time limit, ``timeout``) or a closed terminal ended a command at
    once and left its part file behind; now it unwinds as Ctrl+C does: one line, status 128 +
    the signal, the part file removed and no output."""
    child = subprocess.Popen(
        [sys.executable, "-m", "iglearn", "simulate", "digits", "--samples", "2000000",
         "--out", str(tmp_path / "big.csv")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob(".big.csv.*.part")) and child.poll() is None:
            assert time.monotonic() < deadline, "no part file in 120 s"
            time.sleep(0.02)
        assert child.poll() is None, child.communicate()
        child.send_signal(signum)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == code, err
    assert err.strip().splitlines() == [f"iglearn: terminated ({name})"] and out == ""
    assert list(tmp_path.iterdir()) == []


def test_the_help_names_a_setting_as_its_option(capsys):
    """The help is the settings' docstrings, which named other settings as Python does
    ("a fit's shuffle_rows, block_rows", "(0: run to max_steps)") where the reader types
    options."""
    for command in ("fit", "evaluate"):
        assert main([command, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        for name in ("memory_limit_gb", "shuffle_rows", "block_rows", "max_steps",
                     "small_steps"):
            assert name not in text, (command, name)
    assert "a fit's --shuffle-rows, --block-rows" in text.replace("--block- rows",
                                                                   "--block-rows")


@pytest.mark.parametrize("command", ["fit", "evaluate", "orient", "predict"])
@pytest.mark.parametrize("threads", ["0", "-1", "100000", "1.5", "abc"])
def test_every_wrong_thread_count_states_the_one_range(capsys, tmp_path, command, threads):
    """``--threads 0`` said "an integer >= 1 and below 2**63" and ``--threads 100000`` "a
    whole number in [1, 1024]": two ranges for one option."""
    args = {"fit": [str(tmp_path / "log.npz"), "--out", str(tmp_path / "m")],
            "evaluate": [str(tmp_path / "m"), str(tmp_path / "log.npz")],
            "orient": [str(tmp_path / "m"), str(tmp_path / "log.npz")],
            "predict": [str(tmp_path / "m"), str(tmp_path / "x.npz")]}[command]
    assert main([command, *args, "--threads", threads]) == 2
    assert capsys.readouterr().err == (f"iglearn: error: argument --threads: must be an "
                                       f"integer in [1, 1024], got {threads!r}; see 'iglearn "
                                       f"{command} --help'\n")


@pytest.mark.parametrize("threads", [0, 5000, 1.5, "2"])
def test_a_typed_thread_count_states_the_one_range(threads):
    from iglearn.cli.settings import SettingRefused, typed_value
    from iglearn.learners.settings import BatchIGLSettings

    with pytest.raises(SettingRefused, match=r"expected an integer in \[1, 1024\]$"):
        typed_value(BatchIGLSettings, "threads", threads)
