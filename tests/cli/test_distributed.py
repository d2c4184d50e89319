"""``iglearn fit --backend ray``: what cannot run is refused in one line before any work (the
fit itself runs in tests/learners/test_distributed.py and in docs/guides/distributed.md), and
Ctrl-C stops a fit as it stops any command."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from iglearn.data.formats import convert
from iglearn.learners.distributed import RESUME
from tests.cli.conftest import run


@pytest.mark.parametrize("options, message", [
    (("--algorithm", "vi-igl"), "--backend ray fits --algorithm igl and ai-igl"),
    (("--stream", "off"), "--stream off: --backend ray streams"),
    (("--reader", "ray"), "--reader ray: with --backend ray"),
    (("--workers", "0"), "--workers: must be a whole number >= 1"),
    ((), "a distributed fit reads Parquet files or shard folders"),
], ids=["algorithm", "stream-off", "reader-ray", "workers", "npz"])
def test_a_distributed_fit_that_cannot_run_is_refused_in_one_line(small, capsys, tmp_path,
                                                                  options, message):
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "model",
                         "--backend", "ray", *options)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "model").exists()


@pytest.mark.slow  # starts Ray and two Ray Train workers
def test_ctrl_c_stops_a_distributed_fit_as_it_stops_any_command(small, tmp_path):
    """Ray Train's own Ctrl-C handler aborts the run and exits with status 1 and no word;
    iglearn's answer to Ctrl-C is "iglearn: interrupted" and status 130, nothing written."""
    pytest.importorskip("ray.train.torch")
    shards = tmp_path / "shards"
    convert(small / "log.npz", shards, shard_rows=200)
    storage = tmp_path / "run"
    child = subprocess.Popen(
        [sys.executable, "-m", "iglearn", "fit", str(shards), "--out", str(tmp_path / "model"),
         "--backend", "ray", "--workers", "2", "--storage", str(storage),
         "--checkpoint-seconds", "0"],
        start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not list(storage.rglob(RESUME)) and child.poll() is None:
            assert time.monotonic() < deadline, "no epoch ended in 300 s"
            time.sleep(0.05)  # a checkpoint: the workers are fitting
        assert child.poll() is None, child.communicate()
        os.killpg(child.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 130, err
    assert err.strip().splitlines()[-1] == "iglearn: interrupted" and out == ""
    assert not (tmp_path / "model").exists()


def test_a_ray_address_nothing_listens_at_is_refused_in_one_line_at_once(small, capsys,
                                                                         tmp_path):
    """Ray itself retries such an address for minutes, printing a warning every few
    seconds."""
    pytest.importorskip("ray.train.torch")
    shards = tmp_path / "shards"
    convert(small / "log.npz", shards, shard_rows=200)
    with socket.socket() as listener:  # a port of this machine that nothing listens at
        listener.bind(("", 0))
        port = listener.getsockname()[1]
    start = time.monotonic()
    code, out, err = run(capsys, "fit", shards, "--out", tmp_path / "model", "--backend", "ray",
                         "--workers", "2", "--ray-address", f"127.0.0.1:{port}")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"--ray-address 127.0.0.1:{port}: cannot reach a Ray cluster there" in err
    assert time.monotonic() - start < 60 and not (tmp_path / "model").exists()
