"""``iglearn serve`` on the command line: keys, and the refusals before it starts."""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import iglearn
from iglearn.cli import main
from iglearn.errors import IGLearnError
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
    model = tables()["model"]
    for change in ({"context_dim": "4"}, {"context_dim": 0}, {"feedback_dim": 2.5}):
        config = write_config(tmp_path / "s.toml", tables(model=model | change))
        code, _, err = run(capsys, "serve", "--config", config)
        key = next(iter(change))
        assert code == 2 and f"[model] {key} is" in err and "an integer in [1, 1000000]" in err


def files(folder: Path) -> list[str]:
    """Every file and folder under ``folder``, relative to it."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def port_in_use():
    """A loopback port another program listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


@pytest.mark.parametrize(("keyed", "argv", "says"), [
    (False, ["--insecure-no-auth", "--port", "PORT"], "127.0.0.1:PORT: the port is in use"),
    (True, ["--port", "PORT"], "127.0.0.1:PORT: the port is in use"),
    (True, ["--host", "192.0.2.7", "--port", "0"], "192.0.2.7 is not an address of this"),
    (True, ["--host", "no-such-host.invalid", "--port", "0"], "cannot listen on no-such-host"),
], ids=["port-in-use-new-db", "port-in-use-keyed-db", "address-not-ours", "unknown-host"])
def test_a_port_that_cannot_be_had_is_refused_before_anything_is_created(
        tmp_path, capsys, port_in_use, keyed, argv, says):
    config = write_config(tmp_path / "s.toml", tables())
    if keyed:
        run(capsys, "serve", "keys", "add", "--config", config, "--role", "admin")
    before = files(tmp_path)
    argv = [str(port_in_use) if a == "PORT" else a for a in argv]
    code, _, err = run(capsys, "serve", "--config", config, *argv)
    assert code == 2 and says.replace("PORT", str(port_in_use)) in err
    assert err.count("\n") == 1 and "listening on" not in err and "Traceback" not in err
    assert files(tmp_path) == before


def test_the_port_accepts_connections_once_the_start_line_names_it():
    """The start line ("listening on http://...") came after the port was bound but before
    the server listened: a client that connected on reading it, as a script or a browser
    opened at once does, was refused. The socket now listens when bound, and a connection
    waits in its queue until the server accepts it."""
    from iglearn.service.app import listening_socket

    sock = listening_socket("127.0.0.1", 0)
    try:
        client = socket.create_connection(sock.getsockname(), timeout=5)
        client.close()
    finally:
        sock.close()


def test_refused_starts_leave_no_file_they_created(tmp_path, capsys):
    config = write_config(tmp_path / "s.toml", tables())
    # no key yet, no database yet: none is created
    code, _, err = run(capsys, "serve", "--config", config, "--port", "0")
    assert code == 2 and "no API key yet" in err
    assert files(tmp_path) == ["s.toml"]
    # no key yet in an existing database: it stays as it was, without a WAL left open
    assert run(capsys, "serve", "db", "upgrade", "--config", config)[0] == 0
    before = files(tmp_path)
    assert before == ["s.toml", "service.db"]
    code, _, err = run(capsys, "serve", "--config", config, "--port", "0")
    assert code == 2 and "no API key yet" in err and files(tmp_path) == before
    # a served model that cannot be read
    storage = SQLiteStorage(tmp_path / "service.db")
    storage.add_model("igl", 0, 0.0, {"source": "import"}, b"not an archive")
    storage.close()
    before = files(tmp_path)
    code, _, err = run(capsys, "serve", "--config", config, "--port", "0", "--insecure-no-auth")
    assert code == 2 and "model version 1" in err and "Traceback" not in err
    assert files(tmp_path) == before
    # a database in a folder that does not exist
    code, _, err = run(capsys, "serve", "--config", config, "--port", "0", "--insecure-no-auth",
                       "--db", str(tmp_path / "nowhere" / "s.db"))
    assert code == 2 and "does not exist" in err and files(tmp_path) == before


def test_a_folder_given_as_the_database_is_one_line_naming_it(tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    config = write_config(tmp_path / "s.toml", tables(server={"db": str(folder)}))
    for argv in (["serve", "--config", config, "--port", "0", "--insecure-no-auth"],
                 ["serve", "keys", "add", "--config", config, "--role", "admin"],
                 ["serve", "db", "upgrade", "--config", config]):
        code, _, err = run(capsys, *argv)
        assert code == 2, (argv, err)
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert f"{folder} is a folder" in err and "[server] db" in err, err
        assert files(folder) == []


def test_a_database_the_service_cannot_create_or_that_sits_under_a_file_is_one_line(
        tmp_path, capsys):
    """A database in a folder the service may not write (/proc: read-only even to root) was
    an "internal error" and exit code 1; a path under a file was told its folder does not
    exist. Each is one line naming the path and the fix, for serve and its commands."""
    (tmp_path / "afile").write_text("x")
    for db, words in (("/proc/iglearn-test.db", "cannot open or create the SQLite database"),
                      (str(tmp_path / "afile" / "s.db"), "afile is a file, not a folder")):
        config = write_config(tmp_path / "s.toml", tables(server={"db": db}))
        for argv in (["serve", "--config", config, "--port", "0", "--insecure-no-auth"],
                     ["serve", "keys", "add", "--config", config, "--role", "admin"],
                     ["serve", "db", "upgrade", "--config", config]):
            code, _, err = run(capsys, *argv)
            assert code == 2, (argv, err)
            assert err.count("\n") == 1 and "internal error" not in err, err
            assert words in err and "[server] db (or --db)" in err, err
    assert not Path("/proc/iglearn-test.db").exists()


def test_a_relative_db_on_the_command_line_is_relative_to_the_current_folder(
        tmp_path, capsys, monkeypatch):
    """--db is a command-line path: relative to the current folder, as every path given
    there is (it was taken relative to the configuration file's folder, as the file's own
    [server] db is, and the database landed beside the file)."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "work").mkdir()
    config = write_config(tmp_path / "etc" / "s.toml", tables())
    monkeypatch.chdir(tmp_path / "work")
    code, _, err = run(capsys, "serve", "db", "upgrade", "--config", "../etc/s.toml",
                       "--db", "here.db")
    assert code == 0, err
    assert (tmp_path / "work" / "here.db").is_file()
    assert not (tmp_path / "etc" / "here.db").exists()
    # the file's own relative db stays relative to the file's folder
    assert run(capsys, "serve", "db", "upgrade", "--config", config)[0] == 0
    assert (tmp_path / "etc" / "service.db").is_file()


def sqlite_file(path: Path, rows: int = 200) -> bytes:
    """The bytes of a small SQLite database of another application."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        db.executemany("INSERT INTO notes (text) VALUES (?)", [("x" * 500,)] * rows)
        db.commit()
    return path.read_bytes()


@pytest.mark.parametrize("damage", ["not-sqlite", "truncated", "empty-header"])
def test_a_damaged_demo_database_is_refused_and_nothing_is_left(tmp_path, capsys, damage,
                                                                port_in_use):
    content = {"not-sqlite": b"not a database " * 100,
               "truncated": sqlite_file(tmp_path / "whole.db")[:5000],
               "empty-header": b"SQLite format 3\x00" + bytes(84)}[damage]
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "demo.db").write_bytes(content)
    code, _, err = run(capsys, "demo", "--folder", folder, "--port", "0")
    assert code == 2 and "demo.db: exists and is not the demo's database" in err, err
    assert "open http" not in err and "Traceback" not in err
    assert files(folder) == ["demo.db"]  # the demo.toml it wrote is gone again
    assert (folder / "demo.db").read_bytes() == content
    code, _, err = run(capsys, "demo", "--folder", tmp_path / "new" / "sub", "--port",
                       port_in_use)
    assert code == 2 and "in use" in err and not (tmp_path / "new").exists()


@pytest.mark.parametrize("tables_of", [["notes"], ["notes", "users", "orders"], ["meta"]])
def test_db_upgrade_refuses_another_applications_sqlite_file_unless_adopted(
        tmp_path, capsys, tables_of):
    config = write_config(tmp_path / "s.toml", tables())
    other = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(other)) as db:
        for name in tables_of:
            db.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, text TEXT)")
        db.commit()
    before = other.read_bytes()
    for argv in (["serve", "db", "upgrade"], ["serve", "keys", "add", "--role", "admin"]):
        code, out, err = run(capsys, *argv, "--config", config, "--db", other)
        assert code == 2 and err.count("\n") == 1 and str(other) in err, err
        assert "--adopt" in err if tables_of != ["meta"] else "name of one of iglearn's" in err
        assert other.read_bytes() == before and files(tmp_path) == ["other.db", "s.toml"]
    code, out, err = run(capsys, "serve", "db", "upgrade", "--config", config, "--db", other,
                         "--adopt")
    if tables_of == ["meta"]:  # a table of iglearn's name is never taken over
        assert code == 2 and other.read_bytes() == before
        return
    assert code == 0 and "schema version 1 created" in out
    with contextlib.closing(sqlite3.connect(other)) as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert set(tables_of) | {"meta", "interactions", "models", "api_keys"} <= names
    # adopted, it is iglearn's database from now on
    assert run(capsys, "serve", "db", "upgrade", "--config", config, "--db", other)[0] == 0
    code, out, _ = run(capsys, "serve", "keys", "add", "--config", config, "--db", other,
                       "--role", "client")
    assert code == 0 and out.strip().splitlines()[-1].startswith("iglk_")
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


@pytest.mark.parametrize(("change", "says"), [
    ({"n_actions": 4}, "[model] n_actions is 4 but the database"),
    ({"context_dim": 5}, "[model] context_dim is 5 but the database"),
    ({"feedback_dim": 2}, "[model] feedback_dim is 2 but the database")])
def test_a_database_of_another_shape_is_refused_at_start_naming_the_setting(
        tmp_path, capsys, change, says):
    """A database records the K and widths of its interactions and models at its first
    start; a later start configured otherwise is refused in one line (every decision would
    fail, or the log would mix widths), as a served model of another shape is in a database
    that recorded none."""
    from iglearn.models.archive import pack_model
    from iglearn.service.app import Service
    from iglearn.service.config import load_config

    from .test_api import small_model

    config = write_config(tmp_path / "s.toml", tables())
    Service(load_config(config), insecure_no_auth=True).storage.close()  # records the shape
    moved = write_config(tmp_path / "moved.toml",
                         tables(model=tables()["model"] | change))
    before = files(tmp_path)
    code, _, err = run(capsys, "serve", "--config", moved, "--port", "0", "--insecure-no-auth")
    assert code == 2 and says in err and "configure" in err and "Traceback" not in err
    assert err.count("\n") == 1 and files(tmp_path) == before
    # a database without the record, serving a model of the configured shape
    small_model(tmp_path / "model")
    storage = SQLiteStorage(tmp_path / "old.db")
    storage.add_model("igl", 0, 0.0, {"source": "import"}, pack_model(tmp_path / "model"))
    storage.close()
    key = next(iter(change))
    code, _, err = run(capsys, "serve", "--config", moved, "--port", "0", "--insecure-no-auth",
                       "--db", str(tmp_path / "old.db"))
    assert code == 2 and f"model version 1 has {key}" in err and "Traceback" not in err
    storage = SQLiteStorage(tmp_path / "old.db")
    assert storage.state("shape") is None  # a refused start records nothing
    storage.close()


def test_the_actions_names_of_a_database_keep_their_indices(tmp_path):
    """A database whose decisions were made under named actions is refused under the same
    names in another order (each stored decision and model would read as another action);
    new names for the same indices are recorded, and no names keep the record."""
    from iglearn.service.app import Service
    from iglearn.service.config import load_config

    def service(names):
        model = tables()["model"] | ({} if names is None else {"actions": names})
        config = write_config(tmp_path / "s.toml", tables(model=model))
        return Service(load_config(config), insecure_no_auth=True)

    def recorded():
        storage = SQLiteStorage(tmp_path / "service.db")
        names = storage.state("shape")["actions"]
        storage.close()
        return names

    service(["up", "down", "rest"]).storage.close()
    service(["up", "down", "rest"]).storage.close()  # the same: started again
    with pytest.raises(IGLearnError) as refused:
        service(["down", "up", "rest"])
    message = str(refused.value)
    assert ("[model] actions are ['down', 'up', 'rest'] but the database" in message
            and 'configure actions = ["up", "down", "rest"], or start with a new database'
            in message), message
    assert recorded() == ["up", "down", "rest"]
    service(["rise", "fall", "rest"]).storage.close()  # renamed, the same indices
    assert recorded() == ["rise", "fall", "rest"]
    service(None).storage.close()  # no names: the indices, the record kept
    assert recorded() == ["rise", "fall", "rest"]


def test_a_database_of_another_algorithm_is_refused_with_the_services_fix(tmp_path):
    """Its models were fitted by the configured algorithm: another one is told as a setting
    of the configuration (it named BatchIGL.load and the Python API)."""
    from iglearn.models.archive import pack_model
    from iglearn.service.app import Service
    from iglearn.service.config import load_config

    from .test_api import small_model

    small_model(tmp_path / "model")
    storage = SQLiteStorage(tmp_path / "service.db")
    storage.add_model("igl", 0, 0.0, {"source": "import"}, pack_model(tmp_path / "model"))
    storage.close()
    model = tables()["model"] | {"algorithm": "ai-igl"}
    model.pop("learner")
    config = write_config(tmp_path / "s.toml", tables(model=model))
    with pytest.raises(IGLearnError, match=r"^model version 1 is a model of algorithm 'igl' "
                                           r"but \[model\] algorithm is 'ai-igl'; configure "
                                           r"algorithm = \"igl\", or start with a new "
                                           r"database$"):
        Service(load_config(config), insecure_no_auth=True)


def test_the_version_a_start_loads_is_told_as_served_not_swapped(tmp_path, capsys):
    """At start the stored version is loaded: "serving model version 1" (it said "now
    serving model version 1 (was 0)", a swap from a version never served)."""
    from iglearn.models.archive import pack_model
    from iglearn.service.app import Service
    from iglearn.service.config import load_config

    from .test_api import small_model

    small_model(tmp_path / "model")
    storage = SQLiteStorage(tmp_path / "service.db")
    storage.add_model("igl", 0, 0.0, {"source": "import"}, pack_model(tmp_path / "model"))
    storage.close()
    config = write_config(tmp_path / "s.toml", tables())
    capsys.readouterr()
    Service(load_config(config), insecure_no_auth=True).storage.close()
    err = capsys.readouterr().err
    assert "serving model version 1, stored" in err and "(was" not in err, err


def test_a_damaged_served_version_is_rolled_back_offline_and_the_service_starts(tmp_path,
                                                                                capsys):
    """The served version's stored archive is damaged: the start is refused naming the
    database and the way out that needs no running service (it told the operator to send an
    archive to the service it had refused to start); serve db rollback serves the version
    before, and the service starts on it."""
    from iglearn.models.archive import pack_model
    from iglearn.service.app import Service
    from iglearn.service.config import load_config

    from .test_api import small_model

    small_model(tmp_path / "model")
    storage = SQLiteStorage(tmp_path / "service.db")
    storage.add_model("igl", 0, 0.0, {"source": "import"}, pack_model(tmp_path / "model"))
    storage.add_model("igl", 0, 0.0, {"source": "import"}, b"not an archive")
    storage.close()
    config = write_config(tmp_path / "s.toml", tables())
    db = tmp_path / "service.db"
    with pytest.raises(IGLearnError, match=rf"^{db}: model version 2: not a gzip-compressed "
                                           r"tar archive .*; serve an earlier version with "
                                           r"iglearn serve db rollback --config FILE"):
        Service(load_config(config), insecure_no_auth=True)
    code, _, err = run(capsys, "serve", "db", "rollback", "--config", config, "--version", 7)
    assert code == 2 and "model version 7 is not stored (the stored versions: [1, 2])" in err
    code, out, err = run(capsys, "serve", "db", "rollback", "--config", config)
    assert code == 0, err
    assert out == f"{db}: serving model version 1 (was 2)\n"
    code, _, err = run(capsys, "serve", "db", "rollback", "--config", config)
    assert code == 2 and "no model version earlier than the served 1 is stored" in err
    service = Service(load_config(config), insecure_no_auth=True)
    try:
        assert service.served is not None and service.served.version == 1
    finally:
        service.storage.close()
    code, _, err = run(capsys, "serve", "db", "rollback", "--config", config, "--db",
                       tmp_path / "none.db")
    assert code == 2 and "no service database there yet" in err
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_signal_stops_the_service_gracefully_with_its_status_and_the_database_closed(
        tmp_path, signum):
    import signal

    from .conftest import start_service

    running = start_service(tmp_path)
    with running.http() as http:
        assert http.post("/v1/decide", json={"context": [0, 1, 0, 1]}).status_code == 200
    process = running.process.process
    assert process is not None
    process.send_signal(getattr(signal, signum))
    code = process.wait(30)
    log = running.process.log.read_text()
    assert code == 128 + getattr(signal, signum), log
    named = {"SIGTERM": "SIGTERM", "SIGINT": "SIGINT, Ctrl-C",
             "SIGHUP": "SIGHUP, its terminal closed"}[signum]
    assert f"iglearn serve: stopped (graceful shutdown on {named}) after" in log, log
    assert "interrupted" not in log, log
    # closed, not killed: SQLite's write-ahead log is folded into the database and removed
    assert not (tmp_path / "service.db-wal").exists(), sorted(p.name for p in tmp_path.iterdir())
    storage = SQLiteStorage(tmp_path / "service.db")
    assert storage.counts().decisions == 1
    storage.close()
