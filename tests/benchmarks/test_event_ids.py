"""benchmarks/event_ids.py: one short run of each kind of event id."""

from __future__ import annotations

import sys

from tests.benchmarks.conftest import benchmark_module


def test_a_short_run_gives_a_row_per_kind_of_id(monkeypatch, capsys):
    with benchmark_module("event_ids") as module:
        monkeypatch.setattr(module, "MEASURED", 300)
        monkeypatch.setattr(sys, "argv", ["event_ids.py", "--stored", "60", "--runs", "2"])
        module.main()
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 60 |")]
    assert [row.split(" | ")[1] for row in rows] == list(module.IDS)
    for row in rows:  # two runs, each a positive figure
        figures = row.rstrip(" |").split(" | ")[2].split(", ")
        assert len(figures) == 2 and all(float(f) > 0 for f in figures)
