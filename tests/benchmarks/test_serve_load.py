"""benchmarks/serve_load.py: its report (markdown, JSON and the re-fit plot), and one short
run against a real service process."""

from __future__ import annotations

import json
import sys

import pytest

from tests.benchmarks.conftest import benchmark_module

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def serve_load():
    with benchmark_module("serve_load") as module:
        yield module


def figures_with(versions: list[dict]) -> dict:
    return {"clients": 4, "interactions_per_s": 812.5, "share_of_ceiling": 0.41,
            "refit_seconds": [0.9, 1.2], "pickup_lag_max_s": 0.8, "versions": versions}


def test_report_lists_every_version_and_target(serve_load, tmp_path):
    versions = [
        {"version": 1, "interactions": 1500, "fit_seconds": 0.912, "stored_at_s": 0.0,
         "pickup_lag_s": 0.41, "first_decided_lag_s": 0.4},
        {"version": 2, "interactions": 4088, "fit_seconds": 1.188, "stored_at_s": 1.9,
         "pickup_lag_s": None, "first_decided_lag_s": None}]
    figures = figures_with(versions)
    targets = {"share_of_ceiling >= 0.5": False, "interactions_per_s >= 500": True}
    text = serve_load.report(figures, targets)
    assert "| 1 | 1500 | 0.912 | 0.00 | 0.410 | 0.400 |" in text
    assert "| 2 | 4088 | 1.188 | 1.90 | - | - |" in text  # never seen: no lag
    assert "| share_of_ceiling | 0.410 |" in text
    assert "- target share_of_ceiling >= 0.5: NOT met" in text
    assert "- target interactions_per_s >= 500: met" in text

    serve_load.write_report(figures, text, serve_load.record(figures, targets),
                            tmp_path / "report")
    folder = tmp_path / "report"
    assert (folder / "serve_load.md").read_text() == text
    saved = json.loads((folder / "serve_load.json").read_text())
    assert saved["figures"]["versions"] == versions
    assert saved["targets"] == targets
    assert (folder / "serve_load.png").read_bytes().startswith(PNG)
    assert sorted(p.name for p in folder.iterdir()) == [
        "serve_load.json", "serve_load.md", "serve_load.png"]  # no temporary file left


@pytest.mark.slow
def test_a_short_run_reports_its_versions(serve_load, tmp_path, monkeypatch, capsys):
    out = tmp_path / "report"
    monkeypatch.setattr(sys, "argv", ["serve_load.py", "--clients", "2", "--seconds", "1.5",
                                      "--refit-every", "300", "--out", str(out)])
    serve_load.main()
    saved = json.loads((out / "serve_load.json").read_text())
    figures = saved["figures"]
    assert figures["interactions_per_s"] > 0 and figures["noop_interactions_per_s"] > 0
    versions = figures["versions"]
    assert versions and all(v["fit_seconds"] > 0 and v["interactions"] >= 300
                            for v in versions)
    text = (out / "serve_load.md").read_text()
    for v in versions:
        assert f"| {v['version']} | {v['interactions']} |" in text
    assert (out / "serve_load.png").read_bytes().startswith(PNG)
    assert "wrote" in capsys.readouterr().out
