"""What the command prints: every exception a one-line message with the right exit code,
strict JSON, printable text, and Lemma 5's bound only where it holds, within [0, 1]."""

from __future__ import annotations

import io as bytes_io
import json
import warnings
import zipfile

import numpy as np
import pytest
import torch

from iglearn.cli import describe, logs, main
from iglearn.data.formats import read_log, write_table
from iglearn.errors import IGLearnError
from iglearn.learners import BatchIGL
from iglearn.models import io
from iglearn.progress import printable
from tests.cli.conftest import FAST, listing, run


def strict_json(text: str) -> object:
    """``text`` parsed as strict JSON: NaN and Infinity are errors."""
    def refuse(constant: str) -> None:
        raise ValueError(f"not strict JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def _numpy_value_error() -> ValueError:
    """A ValueError raised inside numpy on bytes that are not a .npy file."""
    try:
        np.lib.format.read_magic(bytes_io.BytesIO(b"no"))
    except ValueError as e:
        return e
    raise AssertionError("numpy read two bytes as a .npy header")


def _arrow_error() -> Exception:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pq.read_table(pa.BufferReader(b"PAR1 not parquet PAR1"))
    except pa.ArrowException as e:
        return e
    raise AssertionError("pyarrow read garbage")


def _safetensors_error() -> Exception:
    from safetensors import SafetensorError
    from safetensors.numpy import load

    try:
        load(b"\xff" * 16)
    except SafetensorError as e:
        return e
    raise AssertionError("safetensors read garbage")


def _our_value_error() -> ValueError:
    try:
        int("a bug in iglearn's own code")
    except ValueError as e:
        return e
    raise AssertionError


def _recursion_error() -> RecursionError:
    try:
        json.loads("[" * 100_000 + "]" * 100_000)
    except RecursionError as e:
        return e
    raise AssertionError("json parsed 100000 nested lists")


# (exception raised by a command, exit code, words of its one line)
ERRORS = [
    (lambda: IGLearnError("x.npz: field 'action' is bad; fix it"), 2, ["field 'action'"]),
    (lambda: PermissionError(13, "Permission denied", "/data/x.npz"), 2,
     ["/data/x.npz: permission denied"]),
    (lambda: FileNotFoundError(2, "No such file or directory", "y.npz"), 2,
     ["y.npz: no such file or folder"]),
    (lambda: OSError(28, "No space left on device", "out.npz"), 2, ["no space left"]),
    (lambda: OSError(30, "Read-only file system", "out.npz"), 2, ["read-only"]),
    (lambda: OSError(5, "Input/output error"), 2, ["in.npz: Input/output error"]),
    (lambda: MemoryError(), 2, ["in.npz: not enough memory"]),
    (_recursion_error, 2, ["in.npz: nested too deeply"]),
    (lambda: json.JSONDecodeError("Expecting value", "{", 1), 2,
     ["in.npz: cannot be read (JSONDecodeError"]),
    (lambda: UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), 2,
     ["in.npz: cannot be read (UnicodeDecodeError"]),
    (lambda: zipfile.BadZipFile("File is not a zip file"), 2, ["cannot be read (BadZipFile"]),
    (lambda: EOFError("no more data"), 2, ["cannot be read (EOFError"]),
    (_numpy_value_error, 2, ["in.npz: cannot be read (ValueError"]),
    (_arrow_error, 2, ["in.npz: cannot be read (Arrow"]),
    (_safetensors_error, 2, ["in.npz: cannot be read (SafetensorError"]),
    (_our_value_error, 1, ["internal error: ValueError", "--verbose"]),
    (lambda: RuntimeError("a bug\nover two lines"), 1,
     ["internal error: RuntimeError: a bug over"]),
]


@pytest.mark.parametrize("make, code, words", ERRORS,
                         ids=[f"{i}-{code}" for i, (_, code, _) in enumerate(ERRORS)])
def test_every_exception_is_one_line_with_its_exit_code(monkeypatch, capsys, tmp_path, make,
                                                        code, words):
    error = make()

    def failing(args):
        raise error

    monkeypatch.setattr(logs, "_convert", failing)
    assert main(["convert", "in.npz", str(tmp_path / "out.npz")]) == code
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("iglearn: error:" if code == 2 else "iglearn: internal error:")
    for word in words:
        assert word in err, err
    assert describe(error, ["in.npz"])[0] == code


def test_a_permission_error_while_writing_says_permission_denied(small, tmp_path, capsys,
                                                                 monkeypatch):
    import iglearn.files

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".x.npz.part"))

    monkeypatch.setattr(iglearn.files, "new_part_file", denied)
    code, _, err = run(capsys, "convert", small / "log.npz", tmp_path / "x.npz")
    assert code == 2 and "permission denied" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text, shown", [
    ("plain \u00e9t\u00e9 \u6570\u636e", "plain \u00e9t\u00e9 \u6570\u636e"),
    ("a\nb\r\tc", "a\\nb\\r\\tc"),
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("csi\x9b2J del\x7f nul\x00", "csi\\x9b2J del\\x7f nul\\x00"),
    ("left\u202eright\u2028next", "left\\u202eright\\u2028next"),
])
def test_printable_escapes_control_characters(text, shown):
    assert printable(text) == shown


def test_file_names_and_warnings_print_escaped_on_one_line(small, tmp_path, capsys,
                                                           monkeypatch):
    hostile = tmp_path / "bad\x1b[2J\nname\u202e.npz"
    hostile.write_bytes(b"not an archive")
    code, out, err = run(capsys, "evaluate", small / "model", hostile)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "\x1b" not in err and "\u202e" not in err and "bad\\x1b[2J\\nname\\u202e.npz" in err

    def warns(args):
        warnings.warn("first line\nsecond \x1b[31mline", UserWarning, stacklevel=1)
        return 0

    monkeypatch.setattr(logs, "_convert", warns)
    code, _, err = run(capsys, "convert", "a.npz", tmp_path / "b.npz")
    assert code == 0 and err == "iglearn: warning: first line\\nsecond \\x1b[31mline\n"


def _log_with(small, tmp_path, row: int, probability: float, reward: float | None = None):
    """The small log with one probability changed, written with the probability floor off."""
    from iglearn.data import limits

    floor = limits.PROBABILITY_FLOOR
    limits.PROBABILITY_FLOOR = 0.0
    try:
        return _write_log_with(small, tmp_path, row, probability, reward)
    finally:
        limits.PROBABILITY_FLOOR = floor


def _write_log_with(small, tmp_path, row, probability, reward):
    log = read_log(small / "log.npz")
    p = log.probability.copy()
    p[row] = probability
    rewards = None if log.reward is None else log.reward.copy()
    if reward is not None:
        rewards[row] = reward
    fields = {**log.__dict__, "probability": p, "reward": rewards, "source": "x"}
    path = tmp_path / "tiny.npz"
    write_table(type(log)(**fields), path)
    return path


def test_a_non_finite_measure_prints_as_null(small, tmp_path, capsys, monkeypatch):
    # a real one: a reward over a subnormal probability is an infinite importance weight
    from iglearn.data import limits

    tiny = _log_with(small, tmp_path, 0, 1e-320, reward=1.0)
    code, out, err = run(capsys, "evaluate", small / "model", tiny)
    assert code == 2 and len(err.strip().splitlines()) == 1  # below the probability floor
    assert "PROBABILITY_FLOOR" in err
    monkeypatch.setattr(limits, "PROBABILITY_FLOOR", 0.0)   # a user who lowered it
    code, out, err = run(capsys, "evaluate", small / "model", tiny)
    assert code == 0 and strict_json(out)["value_ips"] is None
    import iglearn.learners.evaluation as evaluation

    monkeypatch.setattr(evaluation, "evaluate",
                        lambda learner, table, **_: {"accuracy": float("nan"),
                                                "value_ips": np.float32("inf")})
    code, out, _ = run(capsys, "evaluate", small / "model", small / "test.npz")
    assert code == 0 and strict_json(out)["accuracy"] is None
    assert strict_json(out)["value_ips"] is None


def test_one_tiny_probability_never_gives_a_bound_outside_0_1(small, tmp_path, capsys,
                                                               monkeypatch):
    from iglearn.data import limits

    tiny = _log_with(small, tmp_path, 3, 1e-30)
    code, out, err = run(capsys, "fit", tiny, "--out", tmp_path / "m", *FAST)
    assert code == 2 and "PROBABILITY_FLOOR" in err and not (tmp_path / "m").exists()
    monkeypatch.setattr(limits, "PROBABILITY_FLOOR", 0.0)   # a user who lowered it
    code, out, err = run(capsys, "fit", tiny, "--out", tmp_path / "m", *FAST)
    if code == 0:
        lemma5 = strict_json(out)["lemma5"]
        assert lemma5["max_importance_weight"] == pytest.approx(1e30)
        assert lemma5["applies"] is False and lemma5["value_lower_bound"] is None
        strict_json((tmp_path / "m" / io.METADATA).read_text())
    else:              # the fit diverged, or the data layer refused the probability
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.npz"]


def test_a_certified_bound_is_reported_within_0_1(small, capsys, tmp_path):
    code, out, _ = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m", "--iota",
                       "1e-9", "--v-bad", "1", *FAST)
    lemma5 = strict_json(out)["lemma5"]
    assert code == 0
    # V(pi_bad) = 1 leaves no room: nothing certifies a decoder against a perfect bad policy
    assert lemma5["applies"] is False and lemma5["value_lower_bound"] is None
    code, out, _ = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m", "--iota",
                       "1e-9", "--v-bad", "0", *FAST)
    lemma5 = strict_json(out)["lemma5"]
    if lemma5["applies"]:
        assert 0 <= lemma5["value_lower_bound"] <= 1


@pytest.mark.parametrize("broken", ["indicator", "parameter"])
def test_a_fit_that_diverges_exits_2_and_writes_nothing(small, tmp_path, capsys, monkeypatch,
                                                        broken):
    real = BatchIGL.fit_with_restarts

    def diverging(self, *args, **kwargs):
        fits = real(self, *args, **kwargs)
        value, policy, decoder, tried, error = fits[0]
        if broken == "indicator":
            value = float("nan")
        else:
            with torch.no_grad():
                next(policy.parameters()).view(-1)[0] = float("inf")
        return [(value, policy, decoder, tried, error), *fits[1:]]

    monkeypatch.setattr(BatchIGL, "fit_with_restarts", diverging)
    before = listing(tmp_path)
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m", *FAST)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "the fit diverged" in err and "log.npz" in err
    assert listing(tmp_path) == before


@pytest.mark.parametrize("samples", [1, 2])
def test_a_log_too_small_to_fit_exits_2_naming_the_count_and_the_minimum(tmp_path, capsys,
                                                                         samples):
    log = tmp_path / "log.npz"
    assert run(capsys, "simulate", "digits", "--samples", samples, "--out", log)[0] == 0
    code, _, err = run(capsys, "fit", log, "--out", tmp_path / "model")
    assert code == 2 and not (tmp_path / "model").exists()
    assert f"{samples} interaction" in err and "at least 20 (2 per action)" in err
    assert "diverged" not in err and "Traceback" not in err
    code, _, err = run(capsys, "reproduce", "family", "--samples", samples, "--trials", 1,
                       "--out", tmp_path / "family")
    assert code == 2 and f"--samples {samples} is too few" in err
    assert "at least 20 interactions (2 per action)" in err and "Traceback" not in err


@pytest.mark.parametrize("algorithm", ["igl", "ai-igl", "igl-p", "vi-igl"])
def test_a_log_whose_feedback_never_varies_exits_2_and_writes_nothing(tmp_path, capsys,
                                                                     algorithm):
    log = tmp_path / "flat.npz"
    assert run(capsys, "simulate", "digits", "--samples", 200, "--out", log)[0] == 0
    flat = read_log(log)
    write_table(flat.__class__(context=flat.context, action=flat.action,
                               probability=flat.probability,
                               feedback=np.zeros_like(flat.feedback), n_actions=10), log)
    before = listing(tmp_path)
    code, out, err = run(capsys, "fit", log, "--algorithm", algorithm, "--out",
                         tmp_path / "model")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "the feedback is the same in all 200 interactions" in err
    assert listing(tmp_path) == before


def test_labels_written_their_own_way_in_an_npz_file_are_told_a_fix_it_takes(small, tmp_path,
                                                                            capsys):
    """An .npz file names its fields itself, so --actions cannot read it: the label error
    suggested ``--actions 5,6,...,14``, which evaluate then refused for the file."""
    test = dict(np.load(small / "test.npz"))
    np.savez(tmp_path / "shifted.npz", **{**test, "label": test["label"] + 5})
    code, _, err = run(capsys, "evaluate", small / "model", tmp_path / "shifted.npz")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "the values are 10 codes (5, 6, 7, 8, 9, 10, 11, 12, 13, 14)" in err
    assert "number them from 0 to K - 1 first" in err and "--actions" not in err
