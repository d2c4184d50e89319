"""``iglearn serve status|export|import|refit``: a running service (a real one, on a loopback
port) managed from the command line, and the one-line errors of talking to one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from iglearn.cli import main
from iglearn.errors import IGLearnError
from iglearn.models.archive import load_archive, pack_model, read_model
from iglearn.service.process import free_port, write_config

from .conftest import D_X, D_Y, K, Running, play, start_service, tables
from .test_api import small_model


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    """A service of its own (the tests change its model) with its keys in files, as
    ``iglearn serve keys add ... > FILE`` writes them; it re-fits only when asked."""
    folder = tmp_path_factory.mktemp("remote")
    service = start_service(folder, learning={"min_interactions": 50000})
    (folder / "admin.key").write_text(service.admin_key + "\n")
    (folder / "client.key").write_text(service.client_key + "\n")
    yield service
    service.stop()


def remote(running: Running, role: str = "admin") -> list[str]:
    """The options that name the service and a key file of ``role``."""
    return ["--url", running.url, "--key-file", str(running.folder / f"{role}.key")]


def served(running: Running) -> int:
    with running.http() as http:
        return int(http.get("/v1/model").json()["version"])


def imports(running: Running) -> int:
    """How many imported versions the service stores."""
    with running.http() as http:
        versions = http.get("/v1/model").json()["versions"]
    return sum(v["source"] == "import" for v in versions)


def test_a_service_managed_from_the_command_line(running, capsys, tmp_path):
    code, out, err = run(capsys, "serve", "status", *remote(running, "client"))
    assert code == 0, err
    status = json.loads(out)
    assert status["url"] == running.url and status["health"]["status"] == "ok"
    assert status["model"]["version"] == 0 and status["model"]["n_actions"] == K

    archive = tmp_path / "served.tar.gz"
    code, _, err = run(capsys, "serve", "export", *remote(running), "--out", archive)
    assert code == 2 and err.count("\n") == 1 and "no model yet" in err
    assert "iglearn serve refit" in err and "iglearn serve import" in err
    assert not archive.exists()
    code, _, err = run(capsys, "serve", "refit", *remote(running), "--wait", "30")
    assert code == 2 and err.count("\n") == 1 and "the re-fit failed" in err, err
    assert "last_refit" in err

    with running.http() as http:
        play(http, 80, np.random.default_rng(0))
    code, out, err = run(capsys, "serve", "refit", *remote(running), "--wait", "120")
    assert code == 0, err
    fitted = json.loads(out)
    assert fitted["version"] >= 1 and fitted["interactions"] > 0
    assert served(running) == fitted["version"]

    code, out, err = run(capsys, "serve", "export", *remote(running), "--out", archive)
    assert code == 0, err
    exported = json.loads(out)
    assert exported["version"] == fitted["version"] and exported["archive"] == str(archive)
    assert exported["bytes"] == archive.stat().st_size
    learner = load_archive(archive.read_bytes())
    assert learner.metadata_["n_actions"] == K and learner.metadata_["context_dim"] == D_X
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served.tar.gz"]  # no temporary

    folder = tmp_path / "offline"
    small_model(folder)
    packed = tmp_path / "offline.tgz"
    packed.write_bytes(pack_model(folder))
    version = fitted["version"]
    for model in (folder, packed, archive):
        code, out, err = run(capsys, "serve", "import", model, *remote(running))
        assert code == 0, err
        imported = json.loads(out)
        assert imported["previous"] == version and imported["version"] == version + 1
        version = imported["version"]
        assert served(running) == version
        with running.http() as http:
            decision = http.post("/v1/decide", json={"context": [1.0, 0, 0, 0]}).json()
        assert decision["model_version"] == version

    code, out, err = run(capsys, "serve", "refit", *remote(running))
    assert code == 0, err
    assert json.loads(out)["status"] == "requested"


def test_the_key_can_come_from_the_environment(running, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("IGLEARN_API_KEY", running.client_key)
    code, out, err = run(capsys, "serve", "status", "--url", running.url)
    assert code == 0, err
    assert json.loads(out)["model"]["context_dim"] == D_X
    out = tmp_path / "m.tar.gz"
    code, _, err = run(capsys, "serve", "export", "--url", running.url, "--out", out)
    assert code == 2 and "is a client key (403)" in err and "$IGLEARN_API_KEY" in err, err
    key_file = running.folder / "admin.key"  # --key-file wins over the variable
    code, _, err = run(capsys, "serve", "export", "--url", running.url, "--key-file", key_file,
                       "--out", out)
    assert code == 0 or "no model yet" in err, err


def test_the_url_defaults_to_the_configs_host_and_port(running, capsys, tmp_path):
    config = write_config(tmp_path / "s.toml", tables(server={"host": "0.0.0.0",
                                                              "port": running.process.port}))
    key = running.folder / "client.key"
    for argv in (["serve", "status", "--config", config, "--key-file", key],
                 ["serve", "--config", config, "status", "--key-file", key]):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        assert json.loads(out)["url"] == f"http://127.0.0.1:{running.process.port}"
    code, _, err = run(capsys, "serve", "--port", running.process.port, "status")
    assert code == 2 and "--port: an option of 'iglearn serve' itself" in err
    assert "--url" in err


@pytest.mark.parametrize(("key", "says"), [
    ("wrong", "refused the key in --key-file"),
    (None, "the service needs an API key (401)"),
    ("client", "needs an admin key, and the key in --key-file"),
])
def test_a_refused_key_is_one_line_naming_the_fix(running, capsys, tmp_path, monkeypatch,
                                                   key, says):
    monkeypatch.delenv("IGLEARN_API_KEY", raising=False)
    argv = ["serve", "export", "--url", running.url, "--out", tmp_path / "m.tar.gz"]
    if key == "wrong":
        (tmp_path / "wrong.key").write_text("iglk_" + "x" * 43 + "\n")
        argv += ["--key-file", tmp_path / "wrong.key"]
    elif key == "client":
        argv += ["--key-file", running.folder / "client.key"]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"iglearn: error: {running.url}: ") and says in err, err
    assert "--key-file" in err and "IGLEARN_API_KEY" in err and "keys add" in err
    assert running.admin_key not in err and running.client_key not in err
    assert not (tmp_path / "m.tar.gz").exists()


def test_a_key_file_that_holds_more_than_a_key_is_refused(running, capsys, tmp_path):
    noisy = tmp_path / "noisy.key"
    noisy.write_text(f"created an admin key, id 2f9c41d07a3e:\n{running.admin_key}\n")
    code, _, err = run(capsys, "serve", "status", "--url", running.url, "--key-file", noisy)
    assert code == 2 and "not one key" in err and running.admin_key not in err


def test_nothing_listening_is_one_line_and_exit_code_2(tmp_path):
    """The installed command, in a process of its own: no traceback."""
    key = tmp_path / "k"
    key.write_text("iglk_anything\n")
    url = f"http://127.0.0.1:{free_port()}"
    for argv in (["status"], ["refit", "--wait", "5"], ["export", "--out", "m.tar.gz"]):
        done = subprocess.run([sys.executable, "-m", "iglearn", "serve", *argv, "--url", url,
                               "--key-file", str(key)], capture_output=True, text=True,
                              cwd=tmp_path, timeout=120,
                              env=os.environ | {"OMP_NUM_THREADS": "1"})
        assert done.returncode == 2 and done.stdout == "", done
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert f"{url}: no decision service answers" in done.stderr
        assert "iglearn serve --config FILE" in done.stderr and "--url" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k"]


def test_an_import_the_service_refuses_is_one_line(running, capsys, tmp_path):
    """A model of other dimensions is refused by the service (422), named by its path."""
    from iglearn.data.logs import InteractionLog
    from iglearn.learners import BatchIGL
    from iglearn.learners.registry import save_model
    from iglearn.learners.training import Optimisation

    rng = np.random.default_rng(0)
    log = InteractionLog(rng.normal(size=(100, D_X + 1)), rng.integers(0, K, 100),
                         np.full(100, 1 / K), rng.normal(size=(100, D_Y)), K)
    settings = Optimisation(grounding_epochs=0, policy_epochs=0, epochs=1, max_steps=1)
    with pytest.warns(UserWarning):
        learner = BatchIGL(seed=0, max_restarts=0, optimisation=settings).fit(log)
    save_model(learner, tmp_path / "wide")
    before = imports(running)
    code, _, err = run(capsys, "serve", "import", tmp_path / "wide", *remote(running))
    assert code == 2 and err.count("\n") == 1, err
    assert f"the service refused {tmp_path / 'wide'} (422" in err and "context_dim" in err
    assert imports(running) == before
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"not an archive")
    code, _, err = run(capsys, "serve", "import", broken, *remote(running))
    assert code == 2 and str(broken) in err and "gzip" in err, err
    with pytest.raises(IGLearnError, match="gzip"):
        read_model(broken)
