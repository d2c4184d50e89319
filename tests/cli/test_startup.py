"""Start-up stays light: ``import iglearn``, building the parser, ``iglearn --help`` and the
help of every command (those generated from the learners' and the experiments' settings too)
import none of torch, pyarrow, ray, starlette, pandas, matplotlib or scikit-learn; running a
command still imports what it needs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("torch", "pyarrow", "ray", "starlette", "pandas", "matplotlib", "sklearn")
OTHER_LEARNERS = {"iglearn.learners.ai_igl", "iglearn.learners.iglp", "iglearn.learners.vi_igl"}
"""The learner modules other than IGL's, which using an IGL model does not import."""


def loaded_after(code: str, prefix: str | None = None) -> list[str]:
    """The heavy modules loaded after running ``code`` in a fresh interpreter (with
    ``prefix``: those whose names start with it, sorted)."""
    wanted = (f"[m for m in {HEAVY!r} if m in sys.modules]" if prefix is None else
              f"sorted(m for m in sys.modules if m.startswith({prefix!r}))")
    script = (f"import sys\n{code}\n"
              f"print('HEAVY=' + __import__('json').dumps({wanted}))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    last = [line for line in done.stdout.splitlines() if line.startswith("HEAVY=")]
    assert last, done.stdout + done.stderr
    return json.loads(last[-1][len("HEAVY="):])


def test_import_iglearn_is_light_and_its_names_load_on_use():
    assert loaded_after("import iglearn; iglearn.__version__; dir(iglearn)") == []
    assert "torch" in loaded_after("from iglearn import BatchIGL; BatchIGL()")
    import iglearn

    assert "BatchIGL" in dir(iglearn) and iglearn.IGLearnError.__name__ == "IGLearnError"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        iglearn.nothing  # noqa: B018


def test_building_the_parser_imports_no_heavy_library():
    assert loaded_after("from iglearn.cli import build_parser; build_parser()") == []


def test_the_version_is_read_from_the_package_metadata_only_when_asked():
    code = ("import iglearn\nfrom iglearn.cli import build_parser\nbuild_parser()\n"
            "before = 'importlib.metadata' in sys.modules\n"
            "version = iglearn.__version__\n"
            "print('SEEN=' + repr((before, 'importlib.metadata' in sys.modules, version)))")
    done = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True,
                          text=True, timeout=120)
    from importlib.metadata import version

    assert f"SEEN={(False, True, version('iglearn'))!r}" in done.stdout, done.stderr


EXPERIMENTS = ("table1", "sample-complexity", "unsupervised", "figure3", "action-inclusive",
               "personalised", "personalized", "family", "noisy-feedback")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["serve", "--help"],
                                  ["reproduce", "--help"], ["simulate", "--help"],
                                  ["convert", "--help"], ["load", "--help"], ["pack", "--help"],
                                  ["demo", "--help"], ["fit", "--help"], ["evaluate", "--help"],
                                  ["predict", "--help"], ["orient", "--help"], ["sweep", "--help"],
                                  *[["reproduce", name, "--help"] for name in EXPERIMENTS]])
def test_help_and_version_import_no_heavy_library(argv):
    code = ("from iglearn.cli import main\n"
            f"assert main({argv!r}) == 0")
    assert loaded_after(code) == []


def test_every_experiment_has_its_help_checked():
    from iglearn.cli.experiments import EXPERIMENTS as COMMANDS

    assert {name for e in COMMANDS for name in (e.name, *e.aliases)} == set(EXPERIMENTS)


def test_help_starts_fast():
    """The median of three ``iglearn fit --help`` (the largest help) in a fresh interpreter
    is well under the 0.5 s target on an idle machine; the bound leaves room for a busy one
    (the import check above is the guarantee)."""
    import statistics
    import time

    def once() -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "iglearn", "fit", "--help"], check=True,
                       capture_output=True, timeout=120)
        return time.perf_counter() - start

    assert statistics.median(once() for _ in range(3)) < 1.5


def test_running_a_command_imports_what_it_needs(tmp_path):
    """Parsing imports no learner; running does, up to the error this run ends with (rounds
    that end in the warm-up)."""
    argv = ["reproduce", "figure3", "--rounds", "1", "--out", str(tmp_path / "f3")]
    code = ("from iglearn.cli import main\n"
            f"assert main({argv!r}) == 2")
    assert "torch" in loaded_after(code)


@pytest.mark.parametrize(("rows", "message"), [
    (None, "no such file"),
    ([[35.1, 35.2, 0, 0.5, 400]] * 3, "3 interactions for 3 actions is too few to fit"),
    ([[35.1, "", 0, 0.5, 400]] * 9, "column 'b' holds a missing value at line 2")])
def test_fit_refuses_a_bad_log_before_it_imports_torch(rows, message, tmp_path):
    """A log that cannot be fitted (missing, too few interactions, a missing value) is
    refused before anything imports torch (a second or more of start-up), with its one-line
    message, and no model folder is written."""
    log = tmp_path / "log.csv"
    if rows is not None:
        log.write_text("a,b,arm,p,latency\n" + "".join(",".join(map(str, row)) + "\n"
                                                        for row in rows))
    argv = ["fit", str(log), "--out", str(tmp_path / "model"), "--context", "a,b",
            "--feedback", "latency", "--action", "arm", "--probability", "p",
            "--n-actions", "3"]
    code = ("import contextlib, io\nfrom iglearn.cli import main\nerr = io.StringIO()\n"
            f"with contextlib.redirect_stderr(err):\n    assert main({argv!r}) == 2\n"
            f"assert {message!r} in err.getvalue(), err.getvalue()")
    assert "torch" not in loaded_after(code)
    assert not (tmp_path / "model").exists()


@pytest.mark.parametrize(("holds", "message"), [
    (["notes.txt"], "holds 'notes.txt', so it is not a model iglearn wrote"),
    (["model.json"], "holds model.json alone, not a whole iglearn model"),
    (["model.json", "weights.safetensors"], "is not a model this iglearn wrote")])
def test_fit_refuses_an_out_folder_it_may_not_replace_before_it_reads_the_log(
        holds, message, tmp_path):
    """``--out`` naming a folder that holds something other than a model iglearn wrote is
    refused before the log is read (by pyarrow) or torch is imported, and the folder is left
    as it was."""
    out = tmp_path / "results"
    out.mkdir()
    for name in holds:
        (out / name).write_text("mine\n")
    log = tmp_path / "log.csv"
    log.write_text("a,arm,p,latency\n" + "1.5,0,0.5,400\n" * 3 + "2.5,1,0.5,300\n" * 3)
    argv = ["fit", str(log), "--out", str(out), "--context", "a", "--feedback", "latency",
            "--action", "arm", "--probability", "p", "--n-actions", "2"]
    code = ("import contextlib, io\nfrom iglearn.cli import main\nerr = io.StringIO()\n"
            f"with contextlib.redirect_stderr(err):\n    assert main({argv!r}) == 2\n"
            f"assert {message!r} in err.getvalue(), err.getvalue()")
    assert loaded_after(code) == []  # neither torch nor pyarrow, which reads the log
    assert sorted(p.name for p in out.iterdir()) == sorted(holds)
    assert all((out / name).read_text() == "mine\n" for name in holds)


@pytest.mark.parametrize("command", [["evaluate", "{tmp}/model", "{tmp}/gone.csv"],
                                     ["predict", "{tmp}/model", "{tmp}/gone.csv", "--out",
                                      "{tmp}/actions.csv"]])
def test_evaluate_and_predict_refuse_a_missing_file_before_they_import_torch(command,
                                                                            tmp_path):
    argv = [word.format(tmp=tmp_path) for word in command]
    code = ("import contextlib, io\nfrom iglearn.cli import main\nerr = io.StringIO()\n"
            f"with contextlib.redirect_stderr(err):\n    assert main({argv!r}) == 2\n"
            "assert 'gone.csv: no such file; check the path' in err.getvalue(), "
            "err.getvalue()")
    assert "torch" not in loaded_after(code)


@pytest.mark.parametrize(("damaged", "message"), [
    (False, "new.csv: no column 'b', which the column mapping reads as context"),
    (True, "model.json: field 'n_actions' is 1; expected an integer in [2, ")])
def test_evaluate_and_predict_refuse_data_unlike_the_model_before_they_import_torch(
        damaged, message, tmp_path):
    """Data that do not match a model folder (here a column of its mapping is missing), and
    a damaged ``model.json``, are told from the ``model.json`` alone, before torch is
    imported; the model is read through torch only once the data match."""
    import json

    import pandas as pd

    from iglearn.cli import main

    rows = [[35.1 + 0.01 * (i % 7), 35.2 - 0.01 * (i % 5), i % 3, 1 / 3, 400 + 50 * (i % 3)]
            for i in range(60)]
    frame = pd.DataFrame(rows, columns=["a", "b", "arm", "p", "latency"])
    frame.to_csv(tmp_path / "log.csv", index=False)
    (frame if damaged else frame.drop(columns=["b"])).to_csv(tmp_path / "new.csv", index=False)
    assert main(["fit", str(tmp_path / "log.csv"), "--out", str(tmp_path / "model"),
                 "--context", "a,b", "--feedback", "latency", "--action", "arm",
                 "--probability", "p", "--n-actions", "3", "--max-steps", "20"]) == 0
    if damaged:
        record = json.loads((tmp_path / "model" / "model.json").read_text())
        (tmp_path / "model" / "model.json").write_text(json.dumps({**record, "n_actions": 1}))
    for argv in (["evaluate", f"{tmp_path}/model", f"{tmp_path}/new.csv"],
                 ["predict", f"{tmp_path}/model", f"{tmp_path}/new.csv", "--out",
                  f"{tmp_path}/actions.csv"]):
        code = ("import contextlib, io\nfrom iglearn.cli import main\nerr = io.StringIO()\n"
                f"with contextlib.redirect_stderr(err):\n    assert main({argv!r}) == 2\n"
                f"assert {message!r} in err.getvalue(), err.getvalue()")
        assert "torch" not in loaded_after(code)
    assert not (tmp_path / "actions.csv").exists()


def test_fit_predict_and_evaluate_import_only_what_they_need(tmp_path):
    """``iglearn fit`` (of a CSV and a Parquet log), ``predict`` and ``evaluate`` read and
    write Arrow columns as views of their buffers (pyarrow's to_numpy, flatten and array
    would import pandas and pyarrow.compute, a tenth of a second or more of their start-up,
    :mod:`iglearn.data.formats.arrow`) and import the learner of the model, not the
    others."""
    from iglearn.cli import main

    log, model = tmp_path / "log.parquet", tmp_path / "model"
    assert main(["simulate", "digits", "--samples", "200", "--out", str(log)]) == 0
    assert main(["convert", str(log), str(tmp_path / "log.csv")]) == 0
    code = ("from iglearn.cli import main\n"
            f"assert main(['fit', {str(tmp_path / 'log.csv')!r}, '--out', "
            f"{str(tmp_path / 'from_csv')!r}]) == 0\n"
            f"assert main(['fit', {str(log)!r}, '--out', {str(model)!r}]) == 0\n"
            f"assert main(['predict', {str(model)!r}, {str(log)!r}, '--out', "
            f"{str(tmp_path / 'actions.parquet')!r}]) == 0\n"
            f"assert main(['evaluate', {str(model)!r}, {str(log)!r}]) == 0\n"
            "assert 'pyarrow.compute' not in sys.modules\n"
            "assert 'iglearn.learners.batch_igl' in sys.modules\n"
            f"assert not {OTHER_LEARNERS!r} & set(sys.modules)")
    assert loaded_after(code, "pandas") == []
    assert (model / "model.json").is_file() and (tmp_path / "actions.parquet").is_file()


def test_the_database_commands_of_the_service_import_no_learner(tmp_path):
    """``serve keys`` and ``serve db upgrade`` use the configuration's database only: they
    read it without building the learner, so they import neither torch nor any learner
    (nor psycopg, for a SQLite database)."""
    config = tmp_path / "service.toml"
    config.write_text('[model]\nn_actions = 3\ncontext_dim = 2\nfeedback_dim = 2\n'
                      '[server]\ndb = "service.db"\n')
    code = ("from iglearn.cli import main\n"
            f"for argv in (['keys', 'add', '--role', 'admin'], ['keys', 'list'], "
            f"['db', 'upgrade']):\n"
            f"    assert main(['serve', *argv, '--config', {str(config)!r}]) == 0\n"
            "assert 'psycopg' not in sys.modules\n"
            f"assert not {OTHER_LEARNERS | {'iglearn.learners.batch_igl'}!r} & set(sys.modules)")
    assert loaded_after(code) == []


def test_the_model_folder_format_imports_no_learner():
    """models/io.py knows every algorithm's folder layout, not its learner: importing it and
    the archive code loads the learners' settings and their registry, whose learners load
    on use, and no learner module."""
    code = "import iglearn.models.io, iglearn.models.archive"
    assert loaded_after(code, "iglearn.learners.") == ["iglearn.learners.registry",
                                                       "iglearn.learners.settings"]


def test_saving_and_loading_a_model_imports_only_its_learner(tmp_path):
    """The registry imports a learner's module when its name is looked up: an IGL model is
    named, saved and loaded without the other learners' modules."""
    code = textwrap.dedent(f"""
        import numpy as np
        from iglearn.data.logs import InteractionLog
        from iglearn.learners import BatchIGL, load_model, save_model
        from iglearn.learners.registry import learners
        assert list(learners()) == ["igl", "ai-igl", "igl-p", "vi-igl"]
        rng = np.random.default_rng(0)
        log = InteractionLog(context=rng.random((40, 3), dtype=np.float32),
                             action=rng.integers(0, 3, 40), probability=np.full(40, 1 / 3),
                             feedback=rng.random((40, 2), dtype=np.float32), n_actions=3)
        save_model(BatchIGL(seed=0, max_restarts=0).fit(log), {str(tmp_path / "m")!r})
        assert type(load_model({str(tmp_path / "m")!r})) is BatchIGL
    """)
    loaded = loaded_after(code, "iglearn.learners.")
    assert "iglearn.learners.batch_igl" in loaded
    assert not OTHER_LEARNERS & set(loaded)


def test_learners_inherit_their_settings_and_the_algorithms_agree():
    import dataclasses

    from iglearn.learners.registry import learners
    from iglearn.learners.settings import ALGORITHM_SETTINGS

    assert tuple(learners()) == tuple(ALGORITHM_SETTINGS)
    for name, (cls, _) in learners().items():
        settings = ALGORITHM_SETTINGS[name]
        assert issubclass(cls, settings)
        assert ([f.name for f in dataclasses.fields(cls)]
                == [f.name for f in dataclasses.fields(settings)])
        assert cls() != cls()  # compared by identity


def test_a_command_still_builds_its_options_when_parsed(capsys):
    from iglearn.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["simulate", "digits", "--samples", "5", "--out", "x.npz"])
    assert (args.env, args.samples, args.policy) == ("digits", 5, "uniform")
