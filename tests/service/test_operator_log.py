"""The operator's log lines, in both formats, and the format from the configuration file
and the command line."""

from __future__ import annotations

import json
import math

import pytest

from iglearn.cli import build_parser
from iglearn.errors import IGLearnError
from iglearn.models.archive import pack_model
from iglearn.service.config import load_config
from iglearn.service.operator_log import import_message, log_event, refit_message, stop_message
from iglearn.service.process import write_config

from .conftest import start_service, tables
from .test_api import small_model


def test_text_and_json_lines(capsys):
    message = refit_message("count", 4, 2000, 0.4123, 1.234, None)
    assert message == ("re-fit (count): version 4 on 2000 interactions, indicator 0.4123, "
                       "1.23 s, served")
    text = log_event("text", "refit", message, version=4)
    assert text == "iglearn serve: " + message
    line = log_event("json", "refit", message, version=4, indicator=math.nan, error=None)
    value = json.loads(line)
    assert value["event"] == "refit" and value["version"] == 4 and value["message"] == message
    assert value["indicator"] is None and value["error"] is None and value["time"] > 0
    assert capsys.readouterr().err.splitlines() == [text, line]


def test_failed_refit_message():
    assert refit_message("requested", None, 0, None, 0.5, "3 joined interactions") == (
        "re-fit (requested) stored nothing after 0.50 s: 3 joined interactions")


def test_held_back_refit_message():
    why = "not identified: indicator 0.0100 is not above the restart threshold 0.3333"
    assert refit_message("count", 5, 300, 0.01, 0.25, None, why, 4) == (
        f"re-fit (count): version 5 on 300 interactions, indicator 0.0100, 0.25 s, held back "
        f"({why}); still serving version 4")
    assert refit_message("count", 1, 300, 0.01, 0.25, None, why, 0).endswith(
        "still serving the warm-up exploration")


def test_log_format_from_the_file_and_the_command_line(tmp_path):
    path = write_config(tmp_path / "service.toml", tables(server={"log_format": "json"}))
    config = load_config(path)
    assert config.server.log_format == "json"
    args = build_parser().parse_args(["serve", "--config", str(path), "--log-format", "text"])
    assert config.replace(log_format=args.log_format).server.log_format == "text"
    assert build_parser().parse_args(["serve", "--config", str(path)]).log_format is None
    with pytest.raises(IGLearnError, match="log_format"):
        load_config(write_config(tmp_path / "bad.toml", tables(server={"log_format": "xml"})))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--config", str(path), "--log-format", "xml"])


def test_import_and_stop_messages():
    assert import_message(3, 2, 0.41234) == (
        "imported a model (PUT /v1/model): stored as version 3, indicator 0.4123, served in "
        "place of version 2")
    assert import_message(1, 0, None).endswith("indicator none, served in place of the "
                                               "warm-up exploration")
    assert stop_message(4, 120, 100, 61.2, "SIGHUP") == (
        "stopped (graceful shutdown on SIGHUP, its terminal closed) after 61 s: served model "
        "version 4; "
        "stored 120 decisions and the feedback of 100 since the start; the learning worker "
        "stopped and the exploration's round saved")


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_an_imported_model_and_a_shutdown_each_get_a_line(tmp_path, log_format):
    """PUT /v1/model writes an ``import`` line naming the version stored; SIGTERM (a
    graceful shutdown) writes a ``stop`` line once the service has wound down."""
    small_model(tmp_path / "m")
    running = start_service(tmp_path, server={"log_format": log_format})
    try:
        with running.http() as http, running.http("admin") as admin:
            assert http.post("/v1/decide", json={"context": [0, 0, 0, 1]}).status_code == 200
            imported = admin.put("/v1/model", content=pack_model(tmp_path / "m"))
            assert imported.status_code == 201, imported.text
            version = imported.json()["version"]
    finally:
        running.stop()
    lines = running.process.log.read_text().splitlines()
    if log_format == "text":
        imports = [line for line in lines if "imported a model (PUT /v1/model)" in line]
        assert len(imports) == 1, lines
        assert imports[0].startswith(f"iglearn serve: imported a model (PUT /v1/model): stored "
                                     f"as version {version}, indicator "), imports
        assert imports[0].endswith("served in place of the warm-up exploration"), imports
        assert lines[-1].startswith("iglearn serve: stopped (graceful shutdown on SIGTERM) "
                                    "after "), lines
        assert f"served model version {version}; stored 1 decision and the feedback of 0 " \
               f"since the start" in lines[-1]
        return
    events = [json.loads(line) for line in lines if line.startswith("{")]
    imports = [e for e in events if e["event"] == "import"]
    assert len(imports) == 1 and imports[0]["version"] == version
    assert imports[0]["previous"] == 0 and imports[0]["bytes"] > 0
    assert events[-1]["event"] == "stop" and events[-1]["version"] == version
    assert events[-1]["decisions"] == 1 and events[-1]["feedback"] == 0
    assert events[-1]["signal"] == "SIGTERM"


def test_contexts_outside_the_served_models_range_get_one_drift_line(tmp_path):
    """A model fitted on a temperature in degrees Celsius (around 20) served to a client that
    sends Fahrenheit (around 68): after its first 200 decisions the operator's log says once
    that the configured column lies mostly outside the range the model reads; contexts of
    the model's own kind give no such line."""
    import numpy as np

    from iglearn.data.logs import InteractionLog
    from iglearn.learners import BatchIGL
    from iglearn.learners.registry import save_model
    from iglearn.learners.training import Optimisation

    from .conftest import D_X, D_Y, K

    rng = np.random.default_rng(0)
    celsius = rng.normal(size=(300, D_X)) + np.array([20.0, 0, 0, 0])
    log = InteractionLog(celsius, rng.integers(0, K, 300), np.full(300, 1 / K),
                         rng.normal(size=(300, D_Y)), K)
    settings = Optimisation(grounding_epochs=0, policy_epochs=0, epochs=1, max_steps=1)
    with pytest.warns(UserWarning):
        learner = BatchIGL(seed=0, max_restarts=0, optimisation=settings).fit(log)
    assert learner.standardiser_.context_rule == "auto: off scale"
    save_model(learner, tmp_path / "m")
    running = start_service(tmp_path, model={"context_names": ["temp", "b", "c", "d"]})
    try:
        with running.http("admin") as admin, running.http() as http:
            assert admin.put("/v1/model", content=pack_model(tmp_path / "m")).status_code == 201
            fahrenheit = celsius[:200] * np.array([1.8, 1, 1, 1]) + [32, 0, 0, 0]
            for rows in (celsius[:200], fahrenheit, fahrenheit):
                for start in range(0, 200, 50):
                    answer = http.post("/v1/decide",
                                       json={"contexts": rows[start:start + 50].tolist()})
                    assert answer.status_code == 200, answer.text
                if rows is not fahrenheit:  # a new version's tally starts afresh
                    assert admin.put("/v1/model",
                                     content=pack_model(tmp_path / "m")).status_code == 201
    finally:
        running.stop()
    lines = [line for line in running.process.log.read_text().splitlines()
             if "range of the model's training log" in line]
    assert len(lines) == 1, lines
    assert lines[0].startswith("iglearn serve: the first 200 contexts model version 2 "
                               "decided for: context column 'temp': 100% of its values lie "
                               "outside ["), lines


def test_database_driver_lines_and_an_outage_are_json_once(capsys):
    """psycopg_pool's warnings, in plain text before, become lines of the operator's log:
    an outage's flood of them one line when it begins and one when it ends, any other one
    line; a background task's failure one line with its traceback as a field."""
    import logging

    from iglearn.service.operator_log import OUTAGE, log_error, route_database_log

    pool = logging.getLogger("psycopg.pool")
    kept = pool.handlers[:], pool.propagate, OUTAGE.log_format
    route_database_log("json")
    try:
        for _ in range(20):  # what psycopg_pool writes while the server is down
            pool.warning("error connecting in %r: %s", "iglearn", "connection refused\nIs "
                         "the server running?")
            pool.warning("discarding closed connection: %s", "<psycopg.Connection [BAD]>")
        OUTAGE.up()  # a use of the database succeeded
        pool.warning("rolling back returned connection: %s", "<psycopg.Connection>")
        try:
            raise RuntimeError("disk full")
        except RuntimeError as e:
            log_error("json", "cannot save the service's state", e)
    finally:
        OUTAGE.up()
        OUTAGE.log_format = kept[2]
        pool.handlers, pool.propagate = kept[0], kept[1]
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [line["event"] for line in lines] == ["db_unreachable", "db_reachable", "database",
                                                 "error"]
    assert lines[0]["problem"] == ("error connecting in 'iglearn': connection refused Is the "
                                   "server running?") and lines[0]["level"] == "error"
    assert lines[1]["held"] == 39 and lines[2]["level"] == "warning"
    assert lines[3]["message"] == "cannot save the service's state: RuntimeError: disk full"
    assert "Traceback" in lines[3]["traceback"] and lines[3]["level"] == "error"
