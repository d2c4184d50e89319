"""The operator's log lines, in both formats."""

from __future__ import annotations

import json
import math

from iglearn.service.operator_log import log_event, refit_message


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
