"""The PostgreSQL backend's own concerns: the versioned schema and its migrations,
``iglearn serve db upgrade`` (on both backends), the URL in settings and messages, and a
server that cannot be reached."""

from __future__ import annotations

import socket

import pytest

from iglearn.cli import main
from iglearn.errors import IGLearnError
from iglearn.service.config import load_config
from iglearn.service.process import free_port, write_config
from iglearn.service.storage import open_storage

from .conftest import tables


def upgrade(capsys, config) -> tuple[int, str, str]:
    code = main(["serve", "db", "upgrade", "--config", str(config)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_db_upgrade_creates_then_reports_up_to_date(tmp_path, capsys, database):
    config = write_config(tmp_path / "s.toml", tables(server={"db": database}))
    code, out, _ = upgrade(capsys, config)
    assert code == 0 and "schema version 1 created" in out
    code, out, _ = upgrade(capsys, config)
    assert code == 0 and "schema version 1, up to date" in out
    storage = open_storage(load_config(config).db_path)
    storage.close()


def test_schema_versions_and_migrations(postgres_server, tmp_path, capsys, monkeypatch):
    import psycopg

    from iglearn.service import postgres

    url = postgres_server.new_database()
    open_storage(url).close()  # an empty database gets the schema
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT version, description FROM "
                                  "iglearn_schema_version").fetchall()
    assert [r[0] for r in rows] == [1] and "interaction log" in rows[0][1]

    # a newer iglearn brings a migration: the service refuses the older database until
    # 'iglearn serve db upgrade' has applied it
    extra = ("a table for the test", "CREATE TABLE iglearn_test_extra (x integer)")
    monkeypatch.setattr(postgres, "MIGRATIONS", (*postgres.MIGRATIONS, extra))
    monkeypatch.setattr(postgres, "SCHEMA_VERSION", 2)
    with pytest.raises(IGLearnError, match="version 1, but this iglearn needs 2; run "
                                           "'iglearn serve db upgrade"):
        open_storage(url)
    config = write_config(tmp_path / "s.toml", tables(server={"db": url}))
    code, out, _ = upgrade(capsys, config)
    assert code == 0 and "upgraded from version 1 to 2" in out
    open_storage(url).close()
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT count(*) FROM iglearn_test_extra").fetchone() == (0,)

    # an older iglearn refuses a newer database
    monkeypatch.setattr(postgres, "MIGRATIONS", postgres.MIGRATIONS[:1])
    monkeypatch.setattr(postgres, "SCHEMA_VERSION", 1)
    with pytest.raises(IGLearnError, match="version 2 is newer than this iglearn's"):
        open_storage(url)


def test_url_setting_and_an_unreachable_server(tmp_path, capsys):
    pytest.importorskip("psycopg")
    url = f"postgresql://iglearn:s3cret@127.0.0.1:{free_port()}/iglearn"
    config = load_config(write_config(tmp_path / "s.toml", tables(server={"db": url})))
    assert config.db_path == url and config.db_shown == url.replace("s3cret", "***")
    with pytest.raises(IGLearnError, match="cannot connect to PostgreSQL") as error:
        open_storage(url)
    assert "s3cret" not in str(error.value) and "\n" not in str(error.value)
    code = main(["serve", "--config", str(tmp_path / "s.toml"), "--insecure-no-auth"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot connect to PostgreSQL" in err and "s3cret" not in err


def contents(url: str) -> dict[str, list[tuple]]:
    """Every table of the database at ``url`` with its rows (sorted)."""
    import psycopg

    with psycopg.connect(url) as connection:
        names = [r[0] for r in connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
            "ORDER BY table_name").fetchall()]
        return {name: sorted(connection.execute(f'SELECT * FROM "{name}"').fetchall())
                for name in names}


def test_refused_starts_leave_nothing_in_the_database(postgres_server, tmp_path, capsys):
    import psycopg

    def serve(*argv) -> str:
        code = main(["serve", "--config", str(config), *map(str, argv)])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
        return err

    url = postgres_server.new_database()
    config = write_config(tmp_path / "s.toml", tables(server={"db": url}))
    other = socket.create_server(("127.0.0.1", 0))  # a port another program listens on
    port_in_use = other.getsockname()[1]
    # an empty database, no key yet (or no port): no schema is created
    for argv, says in ((["--port", 0], "no API key yet"),
                       (["--port", port_in_use], "in use"),
                       (["--port", port_in_use, "--insecure-no-auth"], "in use")):
        assert says in serve(*argv) and contents(url) == {}
    other.close()
    # another application's database: its tables stay as they were, and no others come
    with psycopg.connect(url) as connection:
        connection.execute("CREATE TABLE notes (id integer PRIMARY KEY, text text)")
        connection.execute("INSERT INTO notes VALUES (1, 'kept')")
    before = contents(url)
    assert "no API key yet" in serve("--port", 0) and contents(url) == before
    # iglearn's schema without a key; then a served model that cannot be read
    assert upgrade(capsys, config)[0] == 0
    before = contents(url)
    assert "iglearn_keys" in before and before["notes"] == [(1, "kept")]
    assert "no API key yet" in serve("--port", 0) and contents(url) == before
    storage = open_storage(url, pool_size=1)
    storage.add_model("igl", 0, 0.0, {"source": "import"}, b"not an archive")
    storage.close()
    before = contents(url)
    assert "model version 1" in serve("--port", 0, "--insecure-no-auth")
    assert contents(url) == before
