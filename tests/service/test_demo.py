"""The demo's pieces: stroke features, its configuration's refusals, and its API on a real
``iglearn serve --demo`` process (the page itself is played in test_demo_browser.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from iglearn.cli import main
from iglearn.service.demo import (
    CONTEXT_DIM,
    FEEDBACK_DIM,
    GESTURES,
    context_features,
    demo_tables,
    simulated_stroke,
    static_file,
    stroke_features,
    write_demo_config,
)
from iglearn.service.process import ServiceProcess, free_port, write_config
from iglearn.service.storage import SQLiteStorage

from .conftest import tables


def test_stroke_features_ignore_place_and_size_but_not_shape():
    rng = np.random.default_rng(0)
    stroke = simulated_stroke("tick", rng)
    y = stroke_features(stroke)
    assert y.shape == (FEEDBACK_DIM,) and np.isfinite(y).all()
    np.testing.assert_allclose(stroke_features(3 * stroke + [40, -7]), y, atol=1e-5)
    ticks = np.stack([stroke_features(simulated_stroke("tick", rng)) for _ in range(20)])
    crosses = np.stack([stroke_features(simulated_stroke("cross", rng)) for _ in range(20)])
    within = np.linalg.norm(ticks - ticks.mean(0), axis=1).mean()
    between = np.linalg.norm(ticks.mean(0) - crosses.mean(0))
    assert between > 2 * within
    assert not stroke_features(np.zeros((5, 2))).any()  # a dot
    assert set(GESTURES) >= {"tick", "cross", "circle", "zigzag"}


def test_context_features_are_one_hot():
    x = context_features(2, 1)
    assert x.shape == (CONTEXT_DIM,) and x.sum() == 2 and x[2] == 1 and x[3 + 1] == 1


def test_the_page_ships_inside_the_package():
    page = static_file("index.html").decode()
    assert "/demo/demo.js" in page and "aria-live" in page and "http" not in page
    assert b"fetch(" in static_file("demo.js") and static_file("demo.css")


def test_serve_demo_refuses_what_the_page_cannot_play(tmp_path, capsys):
    config = write_config(tmp_path / "s.toml", tables())
    assert main(["serve", "--config", str(config), "--demo", "--insecure-no-auth"]) == 2
    assert "[model] context_dim is 4, but the demo page needs 6" in capsys.readouterr().err
    demo = write_demo_config(tmp_path / "demo")
    assert main(["serve", "--config", str(demo), "--demo"]) == 2
    assert "--insecure-no-auth" in capsys.readouterr().err


@pytest.fixture(scope="module")
def demo_service(tmp_path_factory):
    config = write_demo_config(tmp_path_factory.mktemp("demo"))
    with ServiceProcess(config, free_port(), insecure_no_auth=True, demo=True) as service:
        yield service


def test_demo_api_decides_stores_gestures_and_resets(demo_service, tmp_path):
    rng = np.random.default_rng(1)
    with httpx.Client(base_url=demo_service.url, timeout=30) as http:
        assert http.get("/demo", follow_redirects=True).text.startswith("<!doctype html>")
        for asked, location in (("/demo", "/demo/"), ("/demo?seed=3", "/demo/?seed=3")):
            moved = http.get(asked)  # the page's seed survives the redirect
            assert moved.status_code == 307 and moved.headers["location"] == location
        missing = http.get("/demo/nothing.js")  # it named no field
        assert missing.status_code == 404 and missing.json() == {
            "error": "no file 'nothing.js' in the demo; its files are index.html, demo.js, "
                     "demo.css", "field": "path"}
        d = http.post("/demo/api/decide", json={"colour": 1, "shape": 2}).json()
        assert d["word"] in ("red", "green", "blue") and d["model_version"] == 0
        bad = http.post("/demo/api/decide", json={"colour": 3, "shape": 0})
        assert bad.status_code == 422 and bad.json()["field"] == "colour"
        for colour in ("1" + "0" * 400, "NaN", "1e400"):
            bad = http.post("/demo/api/decide", content=f'{{"colour": {colour}, "shape": 0}}')
            assert bad.status_code == 422 and bad.json()["field"] == "colour", colour
        eid = d["event_id"]
        huge = "1" + "0" * 400  # no float holds it
        for stroke in ("[[1, 2]]", '[[1, "a"], [2, 3]]', '"x"', "[[1, 2], [NaN, 1]]",
                       f"[[1, 2], [{huge}, 1]]", f"[[-{huge}, 2], [3, 1]]",
                       f"[[1, 2], [3, 1], [4, {huge}]]", "[[1, 2], [1e400, 1]]",
                       "[[1, 2], [3, -Infinity]]"):
            answer = http.post("/demo/api/feedback",
                               content=f'{{"event_id": "{eid}", "stroke": {stroke}}}')
            assert answer.status_code == 422 and answer.json()["field"] == "stroke", stroke
        stroke = simulated_stroke("circle", rng).tolist()
        ok = http.post("/demo/api/feedback", json={"event_id": d["event_id"], "stroke": stroke})
        assert ok.status_code == 200, ok.text
        body = ok.json()
        assert body["outcome"] == "joined" and body["interactions"] == 1
        assert body["decoded_reward"] is None  # no model yet
        assert np.allclose(body["feedback"], stroke_features(np.array(stroke)), atol=1e-6)
        again = http.post("/demo/api/feedback", json={"event_id": d["event_id"],
                                                       "stroke": stroke})
        assert again.status_code == 409
        unknown = http.post("/demo/api/feedback", json={"event_id": "nope", "stroke": stroke})
        assert unknown.status_code == 404
        # the core API is untouched: /v1/feedback still answers 204 with no body
        d2 = http.post("/v1/decide", json={"context": context_features(0, 0).tolist()}).json()
        core = http.post("/v1/feedback", json={"event_id": d2["event_id"],
                                               "feedback": body["feedback"]})
        assert core.status_code == 204 and core.content == b""
        assert http.get("/demo/api/status").json()["interactions"] == 2
        after = http.post("/demo/api/reset", json={}).json()
        assert after["interactions"] == 0 and after["model_version"] == 0
        # a reset takes no fields: a POST without a body (curl -X POST) resets too; it was
        # refused as "not valid JSON"
        d3 = http.post("/demo/api/decide", json={"colour": 0, "shape": 0}).json()
        joined = http.post("/demo/api/feedback", json={"event_id": d3["event_id"],
                                                        "stroke": stroke}).json()
        assert joined["interactions"] == 1
        bare = http.post("/demo/api/reset")
        assert bare.status_code == 200 and bare.json()["interactions"] == 0, bare.text
        # an unknown path names the demo's endpoints too (it named /v1, /healthz, /readyz
        # and /metrics only)
        unknown = http.get("/demo/api/decisions")
        assert unknown.status_code == 404 and unknown.json() == {
            "error": "no endpoint /demo/api/decisions; the endpoints are under /v1, /healthz, "
                     "/readyz, /metrics and /demo", "field": "path"}
    storage = SQLiteStorage(demo_service.config.parent / "demo.db")
    assert storage.counts().joined == 0 and storage.models() == []


def test_the_status_the_page_waits_on_serves_a_stored_refit_at_once(tmp_path):
    """The page asks for its next word once the status says no re-fit is pending: the status
    swaps in what the last re-fit stored, without waiting for the server's pickup (an hour
    here, so only the status can have swapped it)."""
    demo = demo_tables(seed=0)
    demo["learning"] |= {"pickup_seconds": 3600.0, "refit_seconds": 3600.0}
    demo["exploration"]["seed"] = 0  # with re-fits by count only: the same rounds every run
    config = write_config(tmp_path / "demo.toml", demo)
    rng = np.random.default_rng(2)
    with ServiceProcess(config, free_port(), insecure_no_auth=True, demo=True) as service, \
            httpx.Client(base_url=service.url, timeout=30) as http:
        deadline = time.monotonic() + 300
        # until a re-fit is stored to be served: the first re-fits, on a few interactions, are
        # often held back (not identified); with exploration unseeded, the first served one
        # came after 5 to 42 interactions in 6 runs (after 7 with this seed)
        for _ in range(150):
            colour, shape = (int(v) for v in rng.integers(3, size=2))
            d = http.post("/demo/api/decide", json={"colour": colour, "shape": shape}).json()
            stroke = simulated_stroke("tick" if d["action"] == colour else "cross", rng).tolist()
            http.post("/demo/api/feedback", json={"event_id": d["event_id"], "stroke": stroke})
            status = http.get("/demo/api/status").json()
            while status["refit_pending"] and time.monotonic() < deadline:
                time.sleep(0.1)
                status = http.get("/demo/api/status").json()
            assert not status["refit_pending"], status
            last = status["last_refit"]
            if last.get("version") and not last.get("held_back"):
                break
        assert last.get("version") and not last.get("held_back"), status
        assert status["model_version"] == last["version"]
        d = http.post("/demo/api/decide", json={"colour": 0, "shape": 0}).json()
        assert d["model_version"] == last["version"]


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 128 + signal.SIGTERM),
                                              (signal.SIGINT, 128 + signal.SIGINT),
                                              (signal.SIGHUP, 128 + signal.SIGHUP)])
def test_demo_deletes_its_temporary_folder_when_stopped(tmp_path, signum, code):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    port = free_port()
    log = tmp_path / "demo.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "iglearn", "demo", "--port", str(port)],
            env=os.environ | {"TMPDIR": str(scratch)}, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/demo/api/status").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        (folder,) = scratch.iterdir()
        assert folder.name.startswith("iglearn-demo-") and (folder / "demo.db").is_file()
        process.send_signal(signum)
        assert process.wait(60) == code, log.read_text()
    finally:
        process.kill()
        process.wait()
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("command", [["demo"], ["serve", "--insecure-no-auth"]])
@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_port_out_of_range_is_refused_by_its_option(tmp_path, capsys, command, port):
    code = main([*command, "--port", port])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"argument --port: must be a port, an integer in [0, 65535] (0: any free one), " \
           f"got '{port}'" in err
    assert "demo.toml" not in err  # not the temporary configuration the user never wrote


def test_demo_never_replaces_files_it_did_not_write(tmp_path, capsys):
    import sqlite3

    def demo(folder) -> tuple[int, str]:
        code = main(["demo", "--folder", str(folder), "--port", str(free_port())])
        return code, capsys.readouterr().err

    def refused(folder, name: str) -> None:
        before = {p.name: (p.is_symlink(), p.is_dir() or p.read_bytes())
                  for p in folder.iterdir()}
        code, err = demo(folder)
        assert code == 2 and err.count("\n") == 1
        assert f"{folder / name}: exists and is not the demo's" in err
        assert "never replaces a file it did not write" in err
        after = {p.name: (p.is_symlink(), p.is_dir() or p.read_bytes())
                 for p in folder.iterdir()}
        assert after == before  # nothing written, nothing changed

    own = tmp_path / "own.toml"
    own.write_text("[model]\nn_actions = 3\n# my notes\n")
    cases = {"a user's toml": lambda f: (f / "demo.toml").write_text(own.read_text()),
             "a link to a user's file": lambda f: (f / "demo.toml").symlink_to(own),
             "a folder": lambda f: (f / "demo.toml").mkdir(),
             "an empty file": lambda f: (f / "demo.toml").touch(),
             "a demo.toml without iglearn's header": lambda f: (f / "demo.toml").write_text(
                 write_demo_config(tmp_path / "model").read_text().split("\n", 2)[2])}
    for name, make in cases.items():
        folder = tmp_path / name.replace(" ", "-").replace("'", "")
        folder.mkdir()
        make(folder)
        refused(folder, "demo.toml")
    assert own.read_text() == "[model]\nn_actions = 3\n# my notes\n"

    # the database beside it: another file or another application's SQLite database
    text = tmp_path / "text"
    text.mkdir()
    (text / "demo.db").write_text("my database of demos\n")
    refused(text, "demo.db")
    other = tmp_path / "other-app"
    other.mkdir()
    with sqlite3.connect(other / "demo.db") as db:
        db.execute("CREATE TABLE notes (x TEXT)")
    db.close()
    refused(other, "demo.db")

    # what iglearn wrote itself it writes again (another seed), and resumes its database
    folder = tmp_path / "mine"
    config = write_demo_config(folder, seed=1)
    SQLiteStorage(folder / "demo.db").close()
    assert write_demo_config(folder, seed=2) == config
    assert "seed = 2" in config.read_text() and config.read_text().startswith("# Written by")
