"""`--device` on fit, predict and evaluate (cpu and auto give today's results here), the
per-epoch history in fit's summary, `--progress` (shown unasked on a terminal), `--logdir`,
and CSV logs end to end."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from iglearn import BatchIGL
from iglearn.devices import mps_available
from tests.cli.conftest import FAST, run
from tests.test_threads import observed

NO_GPU = not torch.cuda.is_available() and not mps_available()


@pytest.mark.skipif(not NO_GPU, reason="'auto' picks the GPU here")
def test_fit_with_device_cpu_or_auto_gives_the_model_of_a_fit_without(small, tmp_path, capsys):
    weights = load_file(str(small / "model" / "weights.safetensors"))
    for device in ("cpu", "auto"):
        code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / device,
                             "--device", device, *FAST)
        assert code == 0, err
        assert json.loads(out)["settings"]["device"] == device
        again = load_file(str(tmp_path / device / "weights.safetensors"))
        assert all(torch.equal(weights[name], again[name]) for name in weights)
    for command in (["predict", small / "model", small / "test.npz", "--out",
                     tmp_path / "p.npz"], ["evaluate", small / "model", small / "test.npz"]):
        code, out, err = run(capsys, *command, "--device", "auto")
        assert code == 0, err


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is available here")
def test_an_unavailable_device_fails_before_any_output(small, tmp_path, capsys):
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                         "--device", "cuda")
    assert code == 2 and "no CUDA GPU" in err and not (tmp_path / "m").exists()
    code, out, err = run(capsys, "predict", small / "model", small / "test.npz", "--out",
                         tmp_path / "p.csv", "--device", "cuda")
    assert code == 2 and "no CUDA GPU" in err and not (tmp_path / "p.csv").exists()


def test_fit_reports_its_history_and_shows_progress(small, tmp_path, capsys):
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                         "--progress", "--grounding-epochs", "1", "--policy-epochs", "1",
                         "--epochs", "1", "--max-steps", "0", "--max-restarts", "0",
                         "--history", tmp_path / "history.jsonl")
    assert code == 0, err
    assert json.loads(out)["history"] == {"file": str(tmp_path / "history.jsonl"),
                                          "epochs": 3}
    lines = (tmp_path / "history.jsonl").read_text().splitlines()
    history = [json.loads(line) for line in lines]
    assert [(h["stage"], h["epoch"]) for h in history] == [
        ("grounding", 0), ("policy", 0), ("exact", 0)]
    assert set(history[0]) == {"attempt", "stage", "epoch", "loss", "indicator",
                               "corrector_statistic", "flipped"}
    assert "fit (attempt 0)" in err
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert meta["training"]["history"] == history
    assert "device" not in meta["settings"] and "progress" not in meta["settings"]


@pytest.mark.parametrize(("algorithm", "bars"), [
    ("ai-igl", ["AIIGL: grounding", "AIIGL: policy"]),
    ("igl-p", ["IGLP: inverse kinematics", "IGLP: policy"]),
    ("vi-igl", ["VIIGL: decoder", "VIIGL: policy"])])
def test_every_algorithm_shows_progress_bars_over_its_stages(small, tmp_path, capsys,
                                                             algorithm, bars):
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                         "--algorithm", algorithm, "--progress", *FAST)
    assert code == 0, err
    assert all(bar in err for bar in bars), err
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                         "--algorithm", algorithm, *FAST)
    assert code == 0 and not any(bar in err for bar in bars), err


def on_terminal(*argv: object) -> tuple[int, str]:
    """Run ``iglearn *argv`` in a child process whose stderr is a terminal (a pseudo-terminal
    of 100 columns): its exit code and what it wrote there."""
    import fcntl
    import pty
    import termios

    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "iglearn.cli", *map(str, argv)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=child)
    os.close(child)
    written = bytearray()
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        written += chunk
    os.close(main)
    return process.wait(timeout=300), written.decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals")
def test_fit_shows_its_bars_unasked_on_a_terminal_and_hides_them_when_told(small, tmp_path):
    code, err = on_terminal("fit", small / "log.npz", "--out", tmp_path / "shown",
                            "--algorithm", "vi-igl", *FAST)
    assert code == 0 and "VIIGL: decoder" in err and "VIIGL: policy" in err, err
    code, err = on_terminal("fit", small / "log.npz", "--out", tmp_path / "hidden",
                            "--algorithm", "vi-igl", "--no-progress", *FAST)
    assert code == 0 and "VIIGL" not in err, err


def test_fit_prints_a_short_summary_and_history_holds_every_epoch(small, tmp_path, capsys):
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                         "--max-restarts", "2", "--restart-threshold", "2", "--history",
                         tmp_path / "h.jsonl", *FAST)  # never passed: three attempts
    assert code == 0, err
    assert len(out.splitlines()) <= 30
    summary = json.loads(out)
    assert summary["restarts"] == 2 and summary["samples"] == 800
    assert {"indicator", "corrector_flipped", "identifiability_warnings", "lemma5",
            "seconds", "model"} <= set(summary)
    records = [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()]
    assert [r["attempt"] for r in records].count(2) > 0
    assert len(records) == summary["epochs"] == summary["history"]["epochs"]
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert meta["training"]["history"] == records


def test_history_is_refused_for_an_algorithm_without_one(small, tmp_path, capsys):
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                         "--algorithm", "ai-igl", "--history", tmp_path / "h.jsonl")
    assert code == 2 and out == "" and "--history" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "m").exists() and not (tmp_path / "h.jsonl").exists()


def test_fit_writes_tensorboard_events_to_logdir(small, tmp_path, capsys):
    pytest.importorskip("tensorboard")
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                         "--logdir", tmp_path / "runs", "--max-restarts", "0", *FAST)
    assert code == 0, err
    assert list((tmp_path / "runs").glob("events.out.tfevents.*"))


def test_a_csv_log_fits_and_predicts(small, tmp_path, capsys):
    assert run(capsys, "convert", small / "log.npz", tmp_path / "log.csv")[0] == 0
    header = (tmp_path / "log.csv").read_text().splitlines()[0].replace('"', "")
    assert header.startswith("context_0,context_1,") and header.endswith(",n_actions")
    code, out, err = run(capsys, "fit", tmp_path / "log.csv", "--out", tmp_path / "m", *FAST)
    assert code == 0, err
    code, out, err = run(capsys, "predict", tmp_path / "m", tmp_path / "log.csv", "--out",
                         tmp_path / "p.csv")
    assert code == 0, err
    assert json.loads(out)["rows"] == 800


def test_the_threads_option_reaches_torch(small, tmp_path, capsys, monkeypatch):
    seen = observed(monkeypatch, BatchIGL)
    for option, expected in (([], 1), (["--threads", "2"], 2)):
        code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                             "--max-restarts", "0", *option, *FAST)
        assert code == 0, err
        assert seen[-1] == expected and torch.get_num_threads() == 1
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                         "--threads", "0")
    assert code == 2 and "--threads" in err
