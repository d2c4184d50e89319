"""The device setting: 'cpu' and 'auto' (on a machine without a GPU) fit exactly as before;
an unavailable device is one clear error; on a CUDA machine, the GPU fit matches the CPU fit
up to rounding (marked ``cuda``: run only where torch.cuda.is_available())."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from iglearn import BatchIGL, IGLearnError, Optimisation
from iglearn.devices import mps_available, resolve_device
from iglearn.envs import digits_environment

SHORT = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=2, max_steps=20,
                     batch_size=128)
NO_GPU = not torch.cuda.is_available() and not mps_available()


@pytest.fixture(scope="module")
def log():
    return digits_environment().log(400, seed=4)


def fit(log, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BatchIGL(**{"optimisation": SHORT, "max_restarts": 1, "seed": 0, **options}).fit(log)


@pytest.mark.skipif(not NO_GPU, reason="'auto' picks the GPU here")
def test_cpu_and_auto_fit_exactly_as_without_a_device(log):
    plain, cpu, auto = fit(log), fit(log, device="cpu"), fit(log, device="auto")
    for other in (cpu, auto):
        for mine, its in zip(plain.policy_.state_dict().values(),
                             other.policy_.state_dict().values(), strict=True):
            assert torch.equal(mine, its)
        assert other.report_.attempt_indicators == plain.report_.attempt_indicators
    assert resolve_device("auto") == torch.device("cpu")


def test_an_unknown_device_is_refused_at_construction():
    with pytest.raises(IGLearnError, match="device 'tpu' is not one of cpu, cuda, mps, auto"):
        BatchIGL(device="tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is available here")
def test_an_unavailable_gpu_is_one_clear_error(log):
    learner = BatchIGL(device="cuda", optimisation=SHORT)
    with pytest.raises(IGLearnError, match="no CUDA GPU.*use device 'cpu' or 'auto'"):
        learner.fit(log)


@pytest.mark.cuda
def test_a_cuda_fit_matches_the_cpu_fit(log):
    cpu, gpu = fit(log, max_restarts=0), fit(log, max_restarts=0, device="cuda")
    assert all(p.device.type == "cpu" for p in gpu.policy_.parameters())  # back on the CPU
    np.testing.assert_allclose(gpu.predict_proba(log.context), cpu.predict_proba(log.context),
                               atol=1e-3)
    assert len(gpu.report_.history) == len(cpu.report_.history)


@pytest.mark.cuda
def test_cuda_fit_many_and_predictions_on_the_device(log):
    learners = [BatchIGL(optimisation=SHORT, max_restarts=0, seed=s, device="cuda")
                for s in (0, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        BatchIGL.fit_many(learners, [log, log])
    alone = fit(log, max_restarts=0)
    np.testing.assert_allclose(learners[0].predict_proba(log.context),
                               alone.predict_proba(log.context), atol=1e-3)


def test_logs_stay_where_they_are_off_cuda(log):
    from iglearn.learners.trials import Trials, on_device

    data = Trials.from_logs([log], "feedback")
    for device in (None, torch.device("cpu"), torch.device("mps")):
        assert on_device(data, device) is data


@pytest.mark.cuda
def test_logs_in_memory_are_held_on_cuda_and_batched_there(log):
    from iglearn.learners.trials import Trials, on_device

    data = Trials.from_logs([log, log], "feedback")
    held = on_device(data, torch.device("cuda"))
    assert all(t.is_cuda for field in held._fields() for t in field)
    assert on_device(held, torch.device("cuda")) is held
    cpu_batches = data.epoch(128, [torch.Generator().manual_seed(s) for s in (0, 1)])
    gpu_batches = held.epoch(128, [torch.Generator().manual_seed(s) for s in (0, 1)])
    for mine, theirs in zip(cpu_batches, gpu_batches, strict=True):
        for a, b in zip(mine, theirs, strict=True):
            assert b.is_cuda and torch.equal(a, b.cpu())  # a gather copies rows exactly


@pytest.mark.cuda
def test_logs_too_large_for_the_device_move_batch_by_batch(log, monkeypatch):
    from iglearn.learners import trials

    held = fit(log, max_restarts=0, device="cuda")
    monkeypatch.setattr(trials, "DEVICE_SHARE", 0.0)
    data = trials.Trials.from_logs([log], "feedback")
    assert trials.on_device(data, torch.device("cuda")) is data
    moved = fit(log, max_restarts=0, device="cuda")
    np.testing.assert_allclose(moved.predict_proba(log.context), held.predict_proba(log.context),
                               atol=1e-3)
