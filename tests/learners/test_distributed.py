"""Data-parallel fits on Ray Train: each worker's share of the log and its epochs, the
reductions across workers, a fit on two local workers against the fit in one process, and a
worker killed mid-fit."""

from __future__ import annotations

import math
import os
import signal
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from iglearn import BatchIGL, LogStream, open_log
from iglearn.data.formats import write_table
from iglearn.data.logs import InteractionLog
from iglearn.data.stream import StreamSettings
from iglearn.envs import digits_environment
from iglearn.errors import IGLearnError
from iglearn.learners import IdentifiabilityWarning
from iglearn.learners.corrector import corrector_statistics
from iglearn.learners.distributed import RESUME, RayTrain, WorkerRestartWarning, check_log
from iglearn.learners.stream import StreamTrials
from iglearn.learners.trials import LOCAL
from iglearn.learners.workers import ShardStream, shares
from iglearn.models import make_decoder
from iglearn.models.stacked import stack

STREAM = StreamSettings(stream="on", shuffle_rows=1000, block_rows=256)
ACCURACY_TOLERANCE = 0.02
"""Largest difference in test accuracy between the fit on two workers and the fit in one
process on the 3000-interaction log (the two differ in the shuffle only)."""
INDICATOR_TOLERANCE = 0.02
"""Largest difference in the indicator (Eq. 9) between the two."""


def row_groups(log: InteractionLog, folder: Path, rows: int) -> Path:
    """``log`` as one Parquet file in row groups of ``rows`` rows."""
    write_table(log, folder / "whole.parquet")
    path = folder / "log.parquet"
    pq.write_table(pq.read_table(folder / "whole.parquet"), path, row_group_size=rows)
    return path


@pytest.fixture(scope="module")
def digits(tmp_path_factory) -> Path:
    return row_groups(digits_environment().log(3000, seed=2),
                      tmp_path_factory.mktemp("digits"), 250)


@pytest.fixture(scope="module")
def dyadic(tmp_path_factory) -> Path:
    """A log whose importance weights (1/K)/p are powers of two (K = 4, p in {1/8, 1/4,
    1/2}): every sum of the corrector's statistic is exact in float64, in any order."""
    rng = np.random.default_rng(3)
    n = 1900
    log = InteractionLog(rng.normal(size=(n, 5)).astype(np.float32), rng.integers(4, size=n),
                         rng.choice([0.125, 0.25, 0.5], size=n),
                         rng.normal(size=(n, 3)).astype(np.float32), 4)
    return row_groups(log, tmp_path_factory.mktemp("dyadic"), 300)


def test_shares_deal_whole_row_groups_balanced_by_rows():
    assert shares([5, 5, 5, 1], 2) == [[0, 2], [1, 3]]
    assert shares([10, 1, 1, 1, 1], 2) == [[0], [1, 2, 3, 4]]
    assert sorted(p for share in shares([3] * 7, 3) for p in share) == list(range(7))


def test_every_share_steps_as_often_as_the_whole_log_and_reads_its_rows_once(digits):
    log = open_log(digits, STREAM)
    assert isinstance(log, LogStream)
    steps = math.ceil(len(log) / 256)
    seen = []
    for rank in range(2):
        share = ShardStream(log, rank, 2, LOCAL)
        batches = list(share.epoch(256, np.random.default_rng(0), ("action", "probability")))
        assert len(batches) == steps
        rows = np.concatenate([b["action"] for b in batches])
        assert len(rows) == share.rows
        assert sorted(rows.tolist()) == sorted(np.concatenate(
            [c["action"] for c in share.chunks(("action",))]).tolist())
        seen.append(share.rows)
    assert sum(seen) == len(log) and seen == [1500, 1500]


def test_a_log_a_distributed_fit_cannot_share_out_is_refused_in_one_line(digits):
    with pytest.raises(IGLearnError, match="streamed Parquet log") as memory:
        check_log(open_log(digits), 2)
    with pytest.raises(IGLearnError, match="12 row group.*13 workers") as many:
        check_log(open_log(digits, STREAM), 13)
    for error in (memory, many):
        assert "\n" not in str(error.value)


@pytest.mark.parametrize("seconds", [-1.0, math.inf, math.nan])
def test_a_checkpoint_interval_that_is_not_a_number_of_seconds_is_refused(seconds):
    with pytest.raises(IGLearnError, match="checkpoint_seconds must be a number >= 0"):
        RayTrain(checkpoint_seconds=seconds)


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray instance of two CPUs for every test that runs Ray Train workers."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.train.torch")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def single(digits):
    """The fit in one process of the streamed log, and the test set."""
    contexts, labels = digits_environment().test_set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        learner = BatchIGL(seed=0).fit(open_log(digits, STREAM))
    return learner, contexts, labels


def _shared_statistic(config: dict) -> None:
    """A Ray Train worker: the corrector's statistic of a fixed decoder on this worker's
    share, summed across the workers."""
    import ray.train

    from iglearn.learners.workers import TorchReducer

    context = ray.train.get_context()
    rank, size = context.get_world_rank(), context.get_world_size()
    share = ShardStream(config["log"], rank, size, TorchReducer(size))
    statistic = corrector_statistics(stack([config["decoder"]]),
                                     StreamTrials(share, "feedback"), 4)
    metrics = {"statistic": float(statistic[0]), "rows": share.rows}
    if rank:
        ray.train.report(metrics)
        return
    with tempfile.TemporaryDirectory() as folder:  # a run's metrics are its checkpoint's
        ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder))


@pytest.mark.slow
def test_the_corrector_statistic_summed_across_workers_equals_the_one_process_one(
        dyadic, ray_cluster, tmp_path):
    import ray.cloudpickle
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers' function
    log = open_log(dyadic, STREAM)
    decoder = make_decoder("linear", 3, torch.Generator().manual_seed(1))
    expected = float(corrector_statistics(stack([decoder]), StreamTrials(log, "feedback"),
                                          4)[0])
    result = TorchTrainer(
        _shared_statistic, train_loop_config={"log": log, "decoder": decoder},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(storage_path=str(tmp_path))).fit()
    assert result.error is None
    assert 0 < result.metrics["rows"] < len(log)  # rank 0's share: a part of the log
    assert result.metrics["statistic"] == expected


@pytest.fixture(scope="module")
def two_workers(digits, ray_cluster) -> BatchIGL:
    """The fit on two Ray Train workers of the streamed log, uninterrupted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        return BatchIGL(seed=0).fit(open_log(digits, STREAM), backend=RayTrain(workers=2))


@pytest.mark.slow
def test_two_workers_fit_the_estimator_of_one_process(single, two_workers):
    learner, contexts, labels = single
    two = two_workers
    assert two.distributed_.workers == 2 and two.distributed_.restarts == 0
    assert two.distributed_.resumed_epoch is None and not two.distributed_.notes
    gap = abs(two.accuracy(contexts, labels) - learner.accuracy(contexts, labels))
    assert gap <= ACCURACY_TOLERANCE, gap
    assert abs(two.report_.indicator - learner.report_.indicator) <= INDICATOR_TOLERANCE


@pytest.mark.slow
def test_a_worker_killed_mid_fit_resumes_from_the_last_checkpoint(digits, single,
                                                                  two_workers, tmp_path):
    learner, contexts, labels = single
    pid_file = tmp_path / "worker-1.pid"
    killed: list[int] = []

    def kill_worker_1() -> None:
        deadline = time.monotonic() + 300
        while not list((tmp_path / "ray").rglob(RESUME)) and time.monotonic() < deadline:
            time.sleep(0.05)  # the workers have finished an epoch once a checkpoint is there
        time.sleep(2.0)  # Ray Train has registered it by now
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_worker_1, daemon=True)
    killer.start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        two = BatchIGL(seed=0).fit(open_log(digits, STREAM),
                                   backend=RayTrain(workers=2, storage=str(tmp_path),
                                                    checkpoint_seconds=0.0))
    killer.join(timeout=5)
    assert killed, "the worker was not killed"
    report = two.distributed_
    assert report.restarts >= 1
    assert int(pid_file.read_text()) != killed[0]  # a new process ran worker 1
    assert report.resumed_stage is not None and report.resumed_epoch is not None
    assert report.resumed_epoch >= 1
    note = (f"resumed from the checkpoint after epoch {report.resumed_epoch} of training "
            f"stage {report.resumed_stage}")
    assert any(issubclass(w.category, WorkerRestartWarning) and note in str(w.message)
               for w in caught)
    # the resumed fit ends as the uninterrupted one: the same model, bit for bit
    expected = two_workers.policy_.state_dict()
    for name, value in two.policy_.state_dict().items():
        assert torch.equal(value, expected[name]), name
    assert two.report_.indicator == two_workers.report_.indicator
    assert two.accuracy(contexts, labels) == two_workers.accuracy(contexts, labels)
    gap = abs(two.accuracy(contexts, labels) - learner.accuracy(contexts, labels))
    assert gap <= ACCURACY_TOLERANCE, gap
