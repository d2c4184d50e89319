"""``iglearn fit --backend ray``: what cannot run is refused in one line before any work (the
fit itself runs in tests/learners/test_distributed.py and in docs/guides/distributed.md)."""

from __future__ import annotations

import pytest

from tests.cli.conftest import run


@pytest.mark.parametrize("options, message", [
    (("--algorithm", "vi-igl"), "--backend ray fits --algorithm igl and ai-igl"),
    (("--stream", "off"), "--stream off: --backend ray streams"),
    (("--reader", "ray"), "--reader ray: with --backend ray"),
    (("--workers", "0"), "workers must be a whole number >= 1"),
    ((), "a distributed fit reads Parquet files or shard folders"),
], ids=["algorithm", "stream-off", "reader-ray", "workers", "npz"])
def test_a_distributed_fit_that_cannot_run_is_refused_in_one_line(small, capsys, tmp_path,
                                                                  options, message):
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "model",
                         "--backend", "ray", *options)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "model").exists()
