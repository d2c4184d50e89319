"""``iglearn serve`` on the command line: keys, and the refusals before it starts."""

from __future__ import annotations

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
