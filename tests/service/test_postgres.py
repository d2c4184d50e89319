"""The PostgreSQL backend's own concerns: the versioned schema and its migrations,
``iglearn serve db upgrade`` (on both backends), the URL in settings and messages, and a
server that cannot be reached."""

from __future__ import annotations

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
