"""The operator's log lines, in both formats, and the format from the configuration file
and the command line."""

from __future__ import annotations

import json
import math

import pytest

from iglearn.cli import build_parser
from iglearn.errors import IGLearnError
from iglearn.service.config import load_config
from iglearn.service.operator_log import log_event, refit_message
from iglearn.service.process import write_config

from .conftest import tables


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
