"""API keys: ``iglearn serve keys list`` and ``keys revoke`` against a running service on
each backend (a revoked key is refused within a second), and the last use recorded without
a write per request."""

from __future__ import annotations

import time

from iglearn.cli import main
from iglearn.service.keys import KEY_POLL_SECONDS, digest, key_id
from iglearn.service.process import write_config
from iglearn.service.storage import SQLiteStorage

from .conftest import start_service, tables


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def listed(capsys, config) -> dict[str, list[str]]:
    """``keys list``'s rows by id: [role, created, last used]."""
    code, out, _ = run(capsys, "serve", "keys", "list", "--config", config)
    assert code == 0
    header, *rows = out.strip().splitlines()
    assert header.split()[:3] == ["id", "role", "created"]
    return {row.split()[0]: row.split()[1:] for row in rows}


def test_list_and_revoke_keys_of_a_running_service(tmp_path, capsys, database):
    running = start_service(tmp_path, database)
    config = tmp_path / "service.toml"
    client, admin = key_id(digest(running.client_key)), key_id(digest(running.admin_key))
    try:
        rows = listed(capsys, config)
        assert rows == {client: [rows[client][0], rows[client][1], "never"],
                        admin: [rows[admin][0], rows[admin][1], "never"]}
        assert rows[client][0] == "client" and rows[admin][0] == "admin"
        text = "".join(" ".join(r) for r in rows.values())
        assert running.client_key not in text and running.admin_key not in text

        with running.http("client") as http:
            for _ in range(20):
                assert http.get("/v1/model").status_code == 200
        # the uses are recorded about every KEY_POLL_SECONDS (not one write per request)
        deadline = time.monotonic() + 10
        while listed(capsys, config)[client][2] == "never":
            assert time.monotonic() < deadline, "the client key's last use was never recorded"
            time.sleep(0.1)
        assert listed(capsys, config)[admin][2] == "never"

        code, _, err = run(capsys, "serve", "keys", "revoke", client, "--config", config)
        assert code == 0 and f"revoked the client key {client}" in err
        revoked = time.monotonic()
        with running.http("client") as http:
            while (status := http.get("/v1/model").status_code) == 200:
                assert time.monotonic() - revoked < 3 * KEY_POLL_SECONDS + 1
                time.sleep(0.02)
        assert status == 401 and time.monotonic() - revoked <= KEY_POLL_SECONDS + 1.0
        with running.http("admin") as http:
            assert http.get("/v1/model").status_code == 200
        assert set(listed(capsys, config)) == {admin}
    finally:
        running.stop()


def test_revoke_names_an_unknown_or_ambiguous_id(tmp_path, capsys):
    config = write_config(tmp_path / "s.toml", tables())
    storage = SQLiteStorage(tmp_path / "service.db")
    for hashed in ("ab" + "1" * 62, "ab" + "2" * 62, "cd" + "3" * 62):
        storage.add_key(hashed, "client")
    storage.close()
    for wanted, says in (("0" * 12, "no key has the id"), ("nothex", "no key has the id"),
                         ("", "no key has the id"), ("ab", "2 keys have the id")):
        code, _, err = run(capsys, "serve", "keys", "revoke", wanted, "--config", config)
        assert code == 2 and err.count("\n") == 1 and says in err and "keys list" in err
    assert len(listed(capsys, config)) == 3  # nothing revoked
    code, _, err = run(capsys, "serve", "keys", "revoke", "AB2", "--config", config)
    assert code == 0 and "revoked the client key ab2222222222" in err
    assert list(listed(capsys, config)) == ["ab1111111111", "cd3333333333"]
