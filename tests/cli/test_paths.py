"""Outputs never overlap inputs, fit replaces only a model iglearn wrote, and the next run
cleans what killed runs left (in this process; tests/cli/test_kill.py kills real ones)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iglearn.models import io
from tests.cli.conftest import FAST, copy, listing, run


def _one_line_refusal(code: int, out: str, err: str, *words: str) -> None:
    assert code == 2 and out == "", (code, out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("iglearn: error:"), err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


def _model_with_log_inside(small, tmp):
    model = copy(small / "model", tmp)
    copy(small / "log.npz", model)
    return ["fit", model / "log.npz", "--out", model], ["holds the input file LOG"]


def _folder_holding_the_log(small, tmp):
    copy(small / "log.npz", tmp)
    return ["fit", tmp / "log.npz", "--out", tmp], ["holds the input file LOG"]


def _model_with_another_file(small, tmp):
    model = copy(small / "model", tmp)
    (model / "notes.txt").write_text("mine")
    return ["fit", small / "log.npz", "--out", model], ["holds 'notes.txt'", "choose a new"]


def _folder_with_a_hidden_file(small, tmp):
    (tmp / "m").mkdir()
    (tmp / "m" / ".keep").write_text("")
    return ["fit", small / "log.npz", "--out", tmp / "m"], ["holds '.keep'"]


def _model_json_alone(small, tmp):
    (tmp / "m").mkdir()
    shutil.copy(small / "model" / io.METADATA, tmp / "m")
    return ["fit", small / "log.npz", "--out", tmp / "m"], ["model.json alone"]


def _model_json_of_another_program(small, tmp):
    model = copy(small / "model", tmp)
    (model / io.METADATA).write_text(json.dumps({"format": "someone-else"}))
    return ["fit", small / "log.npz", "--out", model], ["not a model this iglearn wrote"]


def _model_json_a_link(small, tmp):
    model = copy(small / "model", tmp)
    (tmp / "elsewhere.json").write_bytes((model / io.METADATA).read_bytes())
    (model / io.METADATA).unlink()
    (model / io.METADATA).symlink_to(tmp / "elsewhere.json")
    return ["fit", small / "log.npz", "--out", model], ["not a plain file"]


def _out_a_link_to_a_model(small, tmp):
    copy(small / "model", tmp)
    (tmp / "link").symlink_to(tmp / "model")
    return ["fit", small / "log.npz", "--out", tmp / "link"], ["symbolic link"]


def _predict_over_its_contexts(small, tmp):
    contexts = copy(small / "test.npz", tmp)
    return (["predict", small / "model", contexts, "--out", contexts],
            ["is the input file CONTEXTS"])


def _predict_into_the_model(small, tmp):
    model = copy(small / "model", tmp)
    return (["predict", model, small / "test.npz", "--out", model / "p.csv"],
            ["lies inside the input folder MODEL_DIR"])


def _predict_through_a_link(small, tmp):
    contexts = copy(small / "test.npz", tmp)
    (tmp / "p.npz").symlink_to(contexts)
    return (["predict", small / "model", contexts, "--out", tmp / "p.npz"],
            ["is the input file CONTEXTS"])


def _predict_over_a_hard_link(small, tmp):
    contexts = copy(small / "test.npz", tmp)
    os.link(contexts, tmp / "p.npz")
    return (["predict", small / "model", contexts, "--out", tmp / "p.npz"],
            ["is the input file CONTEXTS"])


def _simulate_two_equal_outputs(small, tmp):
    (tmp / "sub").mkdir()
    return (["simulate", "digits", "--samples", "50", "--out", tmp / "a.npz", "--test-out",
             tmp / "sub" / ".." / "a.npz"], ["is the output path --out"])


def _simulate_dsjson_twice(small, tmp):
    return (["simulate", "digits", "--samples", "50", "--out", tmp / "a.dsjson", "--test-out",
             tmp / "a.dsjson"], ["is the output path --out"])


def _simulate_into_the_data_folder(small, tmp):
    return (["simulate", "mnist", "--samples", "50", "--data-dir", tmp, "--out",
             tmp / "log.npz"], ["lies inside the input folder --data-dir"])


def _convert_onto_itself(small, tmp):
    log = copy(small / "log.npz", tmp)
    return ["convert", log, tmp / "." / "log.npz"], ["is the input file IN"]


def _convert_onto_a_link_to_the_input(small, tmp):
    log = copy(small / "log.npz", tmp)
    (tmp / "link.npz").symlink_to(log)
    return ["convert", log, tmp / "link.npz"], ["is the input file IN"]


def _convert_onto_the_input_schema(small, tmp):
    assert run_quiet("convert", small / "log.npz", tmp / "log.dsjson") == 0
    (tmp / "out.npz").symlink_to(tmp / "log.dsjson.schema.json")
    return ["convert", tmp / "log.dsjson", tmp / "out.npz"], ["is the input file IN's schema"]


def _convert_whose_schema_is_the_input(small, tmp):
    log = copy(small / "log.npz", tmp)
    (tmp / "out.dsjson.schema.json").symlink_to(log)
    return ["convert", log, tmp / "out.dsjson"], ["OUT's schema", "is the input file IN"]


def _reproduce_into_the_data_folder(small, tmp):
    return (["reproduce", "table1", "--dataset", "mnist", "--data-dir", tmp, "--out", tmp],
            ["--out", "is the input folder --data-dir"])


def _sweep_around_the_data_folder(small, tmp):
    (tmp / "mnist").mkdir()
    return (["sweep", "--data-dir", tmp / "mnist", "--out", tmp],
            ["holds the input folder --data-dir"])


def _history_inside_the_model(small, tmp):
    return (["fit", small / "log.npz", "--out", tmp / "hy", "--history", tmp / "hy" / "h.jsonl"],
            ["--history", "lies inside the output path --out"])


def run_quiet(*argv) -> int:
    from iglearn.cli import main

    return main([str(a) for a in argv])


REFUSED = [_model_with_log_inside, _folder_holding_the_log, _model_with_another_file,
           _folder_with_a_hidden_file, _model_json_alone, _model_json_of_another_program,
           _model_json_a_link, _out_a_link_to_a_model, _predict_over_its_contexts,
           _predict_into_the_model, _predict_through_a_link, _predict_over_a_hard_link,
           _simulate_two_equal_outputs, _simulate_dsjson_twice, _simulate_into_the_data_folder,
           _convert_onto_itself, _convert_onto_a_link_to_the_input,
           _convert_onto_the_input_schema, _convert_whose_schema_is_the_input,
           _reproduce_into_the_data_folder, _sweep_around_the_data_folder,
           _history_inside_the_model]


@pytest.mark.parametrize("case", REFUSED, ids=[case.__name__.strip("_") for case in REFUSED])
def test_an_output_over_an_input_or_not_iglearns_is_refused_and_nothing_changes(
        small, tmp_path, capsys, case):
    argv, words = case(small, tmp_path)
    capsys.readouterr()
    before = listing(tmp_path)
    code, out, err = run(capsys, *argv, *(FAST if argv[0] == "fit" else ()))
    _one_line_refusal(code, out, err, *words)
    assert listing(tmp_path) == before


URL_CASES = [
    (["load", "http://example.com/model.tar.gz", "--out", "m"],
     ["ARCHIVE http://example.com/model.tar.gz: a URL; iglearn reads local files and folders "
      "only: download it first", "iglearn serve export --url HOST --out model.tar.gz"]),
    (["evaluate", "https://example.com/m.tar.gz", "{small}/test.npz"],
     ["MODEL https://example.com/m.tar.gz: a URL"]),
    (["fit", "s3://bucket/log.parquet", "--out", "m"],
     ["LOG s3://bucket/log.parquet: a URL", "and give the local path"]),
    (["predict", "{small}/model", "HTTPS://example.com/c.csv", "--out", "p.csv"],
     ["CONTEXTS HTTPS://example.com/c.csv: a URL"]),
    (["fit", "{small}/log.npz", "--out", "s3://bucket/model"],
     ["--out s3://bucket/model: a URL; iglearn writes local files and folders only"]),
    (["convert", "{small}/log.npz", "ftp://host/log.csv"], ["OUT ftp://host/log.csv: a URL"]),
    (["simulate", "digits", "--samples", "5", "--out", "log.npz", "--data-dir",
      "https://example.com/mnist"], ["--data-dir https://example.com/mnist: a URL"]),
    (["fit", "file://{small}/log.npz", "--out", "m"],
     ["a file:// URL; give the local path itself ({small}/log.npz)"]),
]


@pytest.mark.parametrize(("argv", "words"), URL_CASES,
                         ids=[f"{argv[0]} {next(a for a in argv if '://' in a)}"
                              for argv, _ in URL_CASES])
def test_a_url_given_as_a_path_is_refused_in_one_line_and_nothing_is_written(
        small, tmp_path, capsys, monkeypatch, argv, words):
    """A URL where a path is read or written is refused naming the argument and the fix (it
    was taken as a path, 'http:/example.com/model.tar.gz: no such model archive', and an
    output URL would have made a folder 'http:')."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *[a.format(small=small) for a in argv])
    _one_line_refusal(code, out, err, *[w.format(small=small) for w in words])
    assert list(tmp_path.iterdir()) == []


def test_a_tilde_no_shell_expanded_is_refused_naming_the_home_folder(small, tmp_path, capsys,
                                                                    monkeypatch):
    """A path starting with ~ that reached iglearn unexpanded (quoted, or from a notebook's
    list of arguments) is refused with the path the shell would have made of it: an output
    was refused as "the folder ~ does not exist; create it first", which makes a folder named
    ~ in the current one."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for argv, name, home in (
            (["predict", small / "model", small / "test.npz", "--out", "~/p.csv"],
             "--out ~/p.csv", tmp_path / "home" / "p.csv"),
            (["convert", "~/log.npz", "log.csv"], "IN ~/log.npz", tmp_path / "home" / "log.npz")):
        code, out, err = run(capsys, *argv)
        _one_line_refusal(code, out, err, f"{name}: ~ is the home folder only where a shell "
                          f"expands it", f"give the path itself ({home})")
    assert list(tmp_path.iterdir()) == []


def test_a_path_that_only_looks_like_a_url_is_a_path(small, tmp_path, capsys, monkeypatch):
    """A Windows drive (C://) and a colon without // are paths, not URLs."""
    monkeypatch.chdir(tmp_path)
    for path in ("C://log.npz", "http:log.npz"):
        code, out, err = run(capsys, "fit", path, "--out", "m")
        _one_line_refusal(code, out, err, "no such file")
        assert "a URL" not in err


def test_fit_replaces_a_model_iglearn_wrote_and_fills_an_empty_folder(small, tmp_path, capsys):
    model = copy(small / "model", tmp_path)
    (tmp_path / "empty").mkdir()
    for target in (model, tmp_path / "empty"):
        code, out, err = run(capsys, "fit", small / "log.npz", "--out", target, "--seed", "7",
                             *FAST)
        assert code == 0, err
        assert sorted(p.name for p in target.iterdir()) == [io.METADATA, io.WEIGHTS]
        assert json.loads((target / io.METADATA).read_text())["training"]["settings"][
            "seed"] == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "model"]


def _age(path: Path, seconds: float = 60) -> Path:
    """Make ``path`` (and what is directly in it) look ``seconds`` old."""
    when = time.time() - seconds
    for each in [*(path.iterdir() if path.is_dir() and not path.is_symlink() else ()), path]:
        os.utime(each, (when, when), follow_symlinks=False)
    return path


def _leftovers(folder: Path, small: Path) -> dict[str, Path]:
    """What killed runs of predict --out p.csv, fit --out m and convert to .npz leave."""
    part = folder / ".p.csv.a1b2c3d4.part"
    part.write_text("action,proba")
    building = folder / ".m.x9y8z7w6"
    building.mkdir()
    (building / io.WEIGHTS).write_bytes(b"half")
    npy = folder / ".npz-q1w2e3r4"
    npy.mkdir()
    (npy / "context.npy").write_bytes(b"\x93NUMPY")
    return {name: _age(path) for name, path in
            (("part", part), ("building", building), ("npy", npy))}


def _lookalikes(folder: Path) -> dict[str, Path]:
    """Files a user may have that look like temporaries but are not iglearn's."""
    notes = folder / ".m.settings"
    notes.mkdir()
    (notes / "notes.txt").write_text("mine")        # a temporary's name, not its content
    other = folder / ".p.csv.backup"
    other.write_text("mine")                        # not tempfile's pattern
    folder_part = folder / ".p.csv.abcdefgh.part"
    folder_part.mkdir()                             # a .part that is a folder
    fresh = folder / ".m.fresh123"
    fresh.mkdir()
    (fresh / io.METADATA).write_text("{}")          # changed after the run started
    os.utime(fresh, (time.time() + 3600, time.time() + 3600))
    for path in (notes, other, folder_part):
        _age(path)
    return {"notes": notes, "other": other, "folder_part": folder_part, "fresh": fresh}


def test_the_next_run_removes_stale_temporaries_of_its_targets_and_nothing_else(
        small, tmp_path, capsys):
    stale = _leftovers(tmp_path, small)
    kept = _lookalikes(tmp_path)
    code, _, err = run(capsys, "predict", small / "model", small / "test.npz", "--out",
                       tmp_path / "p.csv")
    assert code == 0, err
    assert not stale["part"].exists() and not stale["npy"].exists()
    assert stale["building"].exists()                   # another target's (m): left
    assert "removed what interrupted runs left" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m", *FAST)
    assert code == 0, err
    assert not stale["building"].exists()
    assert all(path.exists() for path in kept.values())
    assert (kept["notes"] / "notes.txt").read_text() == "mine"


def test_no_clean_up_while_another_run_writes_in_the_folder(small, tmp_path, capsys):
    stale = _leftovers(tmp_path, small)
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)                  # as a running iglearn command holds it
        code, _, err = run(capsys, "predict", small / "model", small / "test.npz", "--out",
                           tmp_path / "p.csv")
    finally:
        os.close(fd)
    assert code == 0, err
    assert stale["part"].exists() and "removed" not in err
    code, _, err = run(capsys, "predict", small / "model", small / "test.npz", "--out",
                       tmp_path / "p.csv")
    assert code == 0 and not stale["part"].exists()


def test_a_model_set_aside_by_a_killed_fit_is_put_back_first(small, tmp_path, capsys):
    aside = tmp_path / ".m.old.k2j3h4g5"
    aside.mkdir()
    shutil.copytree(small / "model", aside / "model")
    _age(aside)
    # the target is missing: the run was killed between save_model's two renames; evaluate
    # does not write, so it finds no model, while the next fit puts the old one back first
    assert run(capsys, "evaluate", tmp_path / "m", small / "test.npz")[0] == 2
    code, _, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m", "--seed", "3",
                       *FAST)
    assert code == 0, err
    assert "put back the model an interrupted run had set aside" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    assert json.loads((tmp_path / "m" / io.METADATA).read_text())["training"]["settings"][
        "seed"] == 3


def test_a_clean_up_that_fails_warns_and_the_command_still_runs(small, tmp_path, capsys,
                                                                monkeypatch):
    import iglearn.cli.paths

    def failing(target, before):
        raise PermissionError(13, "Permission denied", str(target))

    monkeypatch.setattr(iglearn.cli.paths, "remove_stale_temporaries", failing)
    code, _, err = run(capsys, "predict", small / "model", small / "test.npz", "--out",
                       tmp_path / "p.csv")
    assert code == 0 and (tmp_path / "p.csv").exists()
    assert err.startswith("iglearn: warning:") and "could not remove" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [
    ("fit", "{log}", "--out", "-"), ("convert", "{log}", "-"),
    ("simulate", "digits", "--samples", "50", "--out", "-"),
    ("predict", "{model}", "{test}", "--out", "-")])
def test_standard_output_is_no_output_path(small, tmp_path, monkeypatch, capsys, argv):
    """``-`` names standard output elsewhere; fit (and load) created a folder named "-",
    convert said "unknown file extension '(none)'". Refused in one line, nothing written."""
    monkeypatch.chdir(tmp_path)
    names = {"log": small / "log.npz", "model": small / "model", "test": small / "test.npz"}
    code, out, err = run(capsys, *(a.format(**names) for a in argv))
    _one_line_refusal(code, out, err, " -: iglearn writes files and folders, not standard "
                                      "output; name a path (./- for")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("argv", "message"), [
    (("evaluate", "{model}", "{test}", "--threads", "100000"),
     "iglearn: error: argument --threads: must be an integer in [1, 1024], got '100000'"),
    (("fit", "{log}", "--out", "{out}", "--threads", "2000"),
     "iglearn: error: argument --threads: must be an integer in [1, 1024], got '2000'"),
    (("fit", "{csv}", "--out", "{out}", "--n-actions", "0"),
     "iglearn: error: --n-actions is 0; it must be an integer >= 2"),
])
def test_a_setting_refused_is_named_as_its_option(small, tmp_path, capsys, argv, message):
    """The settings' own checks named the field (``threads must be ...``, ``column mapping:
    n_actions is 0``) where the user typed an option."""
    csv = tmp_path / "log.csv"
    assert run(capsys, "convert", small / "log.npz", csv)[0] == 0
    names = {"log": small / "log.npz", "model": small / "model", "test": small / "test.npz",
             "out": tmp_path / "m", "csv": csv}
    code, out, err = run(capsys, *(a.format(**names) for a in argv))
    _one_line_refusal(code, out, err)
    assert err.startswith(message), err
    assert not (tmp_path / "m").exists()


def test_a_read_only_model_folder_is_replaced_without_a_hidden_copy_left(small, tmp_path,
                                                                         capsys):
    """``fit --out m`` over a model folder its owner made read-only (chmod 555): the old
    model, set aside to be deleted, could not be emptied and stayed beside it as a hidden
    ``.m.XXXXXXXX`` folder, without a word, whatever later fits did."""
    model = tmp_path / "m"
    assert run(capsys, "fit", small / "log.npz", "--out", model, *FAST)[0] == 0
    model.chmod(0o555)
    command = [sys.executable, "-m", "iglearn", "fit", str(small / "log.npz"), "--out",
               str(model), "--seed", "1", "--no-progress", *FAST]
    if os.geteuid() == 0:  # root may write anywhere: drop that power, as a user has none
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv to drop root's file permissions")
        command = [setpriv, "--inh-caps=-all", "--bounding-set=-all", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    assert [path.name for path in tmp_path.iterdir()] == ["m"]
    assert json.loads((model / "model.json").read_text())["format"] == "iglearn-model"
