"""``iglearn serve`` on the command line: keys, and the refusals before it starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import iglearn
from iglearn.cli import main
from iglearn.service.keys import digest
from iglearn.service.process import write_config
from iglearn.service.storage import SQLiteStorage

from .conftest import tables


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_keys_add_prints_the_key_on_its_last_line(tmp_path, capsys):
    config = write_config(tmp_path / "s.toml", tables())
    code, out, err = run(capsys, "serve", "keys", "add", "--config", config, "--role", "client")
    assert code == 0
    key = out.strip().splitlines()[-1]
    assert key.startswith("iglk_") and " " not in key and key not in err
    assert SQLiteStorage(tmp_path / "service.db").keys() == [(digest(key), "client")]
    code, _, err = run(capsys, "serve", "keys", "add", "--config", config, "--role", "root")
    assert code == 2 and "invalid choice" in err


def test_refuses_to_start_without_a_key_or_off_loopback(tmp_path, capsys):
    config = write_config(tmp_path / "s.toml", tables())
    code, _, err = run(capsys, "serve", "--config", config)
    assert code == 2 and "no API key" in err and "keys add" in err
    code, _, err = run(capsys, "serve", "--config", config, "--insecure-no-auth",
                       "--host", "0.0.0.0")
    assert code == 2 and "loopback" in err
    code, _, err = run(capsys, "serve")
    assert code == 2 and "--config" in err


def test_bad_configuration_is_one_line(tmp_path, capsys):
    config = write_config(tmp_path / "s.toml", tables(model={"n_actions": 0}))
    code, _, err = run(capsys, "serve", "--config", config)
    assert code == 2 and err.count("\n") == 1 and "[model] n_actions" in err


BLOCKER = '''\
import os, sys


class _Unimportable:
    """Makes the modules named in IGLEARN_TEST_UNIMPORTABLE fail to import, as when the
    extra that installs them is missing."""

    names = set(os.environ["IGLEARN_TEST_UNIMPORTABLE"].split(","))

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Unimportable())
'''


def without(tmp_path, modules: str, *argv: str, code: str | None = None
            ) -> subprocess.CompletedProcess:
    """Run ``iglearn ARGV`` (or the Python ``code``) in a child process where ``modules``
    (comma-separated) cannot be imported: a sitecustomize on its PYTHONPATH blocks them."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = os.environ | {"IGLEARN_TEST_UNIMPORTABLE": modules, "PYTHONPATH": os.pathsep.join(
        [str(site), str(Path(iglearn.__file__).parents[1])])}
    command = ["-c", code] if code is not None else ["-m", "iglearn", *argv]
    return subprocess.run([sys.executable, *command], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


SERVE = "anyio,starlette,uvicorn,httpx,uvloop,httptools"


@pytest.mark.parametrize(("modules", "argv", "what", "extra"), [
    (SERVE, ("serve", "--config", "s.toml"), "iglearn serve", "serve"),
    (SERVE, ("serve", "--config", "s.toml", "--insecure-no-auth"), "iglearn serve", "serve"),
    ("uvicorn", ("serve", "--config", "s.toml"), "iglearn serve", "serve"),
    (SERVE, ("demo", "--port", "1"), "iglearn demo", "serve"),
    ("anyio", ("demo", "--folder", "kept"), "iglearn demo", "serve"),
    ("psycopg,psycopg_pool", ("serve", "db", "upgrade", "--config", "s.toml", "--db",
                              "postgresql://iglearn@127.0.0.1:1/x"), "a postgresql:// database",
     "postgres"),
    ("psycopg_pool", ("serve", "keys", "list", "--config", "s.toml", "--db",
                      "postgresql://iglearn@127.0.0.1:1/x"), "a postgresql:// database",
     "postgres"),
])
def test_a_missing_extra_is_one_line_naming_it(tmp_path, modules, argv, what, extra):
    write_config(tmp_path / "s.toml", tables())
    done = without(tmp_path, modules, *argv)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"iglearn: error: {what} needs the '{extra}' extra (")
    assert f"pip install -e '.[{extra}]'" in done.stderr
    assert f"-py3-none-any.whl[{extra}]'" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml", "site"]  # nothing written


def test_serve_db_on_sqlite_needs_no_extra(tmp_path):
    write_config(tmp_path / "s.toml", tables())
    done = without(tmp_path, SERVE + ",psycopg,psycopg_pool",
                   "serve", "db", "upgrade", "--config", "s.toml")
    assert done.returncode == 0 and "schema version 1 created" in done.stdout, done.stderr


def test_importing_the_client_without_the_extra_says_what_to_install(tmp_path):
    code = ("import iglearn.client\n"
            "raise SystemExit('imported')")
    done = without(tmp_path, "httpx", code=code)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("iglearn.errors.MissingExtraError: iglearn.client needs the "
                           "'serve' extra (httpx is not installed): pip install -e '.[serve]'")
    check = ("try:\n    import iglearn.client\nexcept ImportError as e:\n"
             "    print(type(e).__name__, str(e).count('\\n'))")
    done = without(tmp_path, "httpx", code=check)
    assert done.returncode == 0 and done.stdout.split() == ["MissingExtraError", "0"]
