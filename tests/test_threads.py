"""iglearn.threads: every fit runs on its own number of torch threads and gives the caller's
back; ``--threads`` on the command line reaches torch."""

from __future__ import annotations

import warnings

import pytest
import torch

from iglearn import AIIGL, BatchIGL, IGLearnError, Optimisation
from iglearn.envs import digits_environment
from iglearn.learners.iglp import IGLP
from iglearn.threads import torch_threads

SHORT = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=0,
                     batch_size=100)


@pytest.fixture(scope="module")
def log():
    return digits_environment().log(300, seed=3)


def observed(monkeypatch, cls) -> list[int]:
    """The torch thread counts ``cls``'s fits run on, recorded as each fit starts."""
    seen: list[int] = []
    original = cls.__dict__["_fit_stacked"].__func__

    def recording(klass, learners, logs, *rest):
        seen.append(torch.get_num_threads())
        return original(klass, learners, logs, *rest)
    monkeypatch.setattr(cls, "_fit_stacked", classmethod(recording))
    return seen


def test_the_block_runs_on_its_threads_and_restores_the_callers():
    before = torch.get_num_threads()
    with torch_threads(2):
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), torch_threads(3):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before
    for threads in (0, -1, 2**31, 1025, 1.0, True):  # torch cannot take 2**31 threads
        with pytest.raises(IGLearnError, match=r"threads must be a whole number in \[1, 1024\]"):
            BatchIGL(threads=threads)


def blas_threads() -> list[int]:
    """The thread counts of the BLAS libraries loaded in this process (numpy's among them)."""
    from threadpoolctl import threadpool_info

    return [each["num_threads"] for each in threadpool_info() if each["user_api"] == "blas"]


def test_numpys_blas_runs_on_the_blocks_threads_too():
    from threadpoolctl import threadpool_limits

    assert blas_threads(), "numpy's BLAS library is loaded"
    with torch_threads(1):  # the pools are looked up ...
        pass
    import scipy.linalg  # noqa: F401  (... and scipy's BLAS library may load after)
    with threadpool_limits(limits=3, user_api="blas"):
        assert set(blas_threads()) == {3}
        with torch_threads(1):
            assert set(blas_threads()) == {1}
        assert set(blas_threads()) == {3}
        with pytest.raises(RuntimeError), torch_threads(2):
            assert set(blas_threads()) == {2}
            raise RuntimeError("inside")
        assert set(blas_threads()) == {3}


@pytest.mark.parametrize("cls", [BatchIGL, AIIGL])
def test_a_fit_runs_on_one_thread_by_default_and_on_threads_when_set(log, monkeypatch, cls):
    seen = observed(monkeypatch, cls)
    torch.set_num_threads(3)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls(optimisation=SHORT, max_restarts=0, seed=0).fit(log)
            cls(optimisation=SHORT, max_restarts=0, seed=0, threads=2).fit(log)
            cls.fit_many([cls(optimisation=SHORT, max_restarts=0, seed=s, threads=2)
                          for s in (0, 1)], [log, log])
        assert seen == [1, 2, 2]
        assert torch.get_num_threads() == 3  # the caller's count, back
    finally:
        torch.set_num_threads(1)


def test_iglp_fits_on_its_threads(log, monkeypatch):
    seen: list[int] = []
    original = IGLP.fit_arrays

    def recording(self, *args):
        seen.append(torch.get_num_threads())
        return original(self, *args)
    monkeypatch.setattr(IGLP, "fit_arrays", recording)
    IGLP(optimisation=SHORT, seed=0, threads=2).fit(log)
    assert seen == [2] and torch.get_num_threads() == 1


def test_online_refits_run_on_the_learners_threads(monkeypatch):
    from iglearn.learners.e2g import E2G
    from iglearn.learners.schedules import PaperSchedule

    env = digits_environment()
    learner = E2G(env.n_actions, env.context_dim, env.feedback_dim,
                  PaperSchedule(warmup_rounds=100), update_every=50, optimisation=SHORT,
                  max_restarts=0, seed=0)
    learner.threads = 2
    seen: list[int] = []
    original = E2G._refit

    def recording(self, *args):
        seen.append(torch.get_num_threads())
        return original(self, *args)
    monkeypatch.setattr(E2G, "_refit", recording)
    log = env.log(200, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, 200, 50):
            part = slice(start, start + 50)
            actions, probabilities = learner.act_batch(log.context[part])
            learner.learn_batch(log.context[part], actions, probabilities, log.feedback[part])
    assert seen and set(seen) == {2} and torch.get_num_threads() == 1


def test_process_threads_sets_torch_and_blas_for_the_process():
    import os
    import subprocess
    import sys

    program = ("import torch; from threadpoolctl import threadpool_info\n"
               "from iglearn.threads import process_threads\n"
               "def blas(): return sorted({i['num_threads'] for i in threadpool_info() "
               "if i['user_api'] == 'blas'})\n"
               "print(blas()); process_threads(1); print(torch.get_num_threads(), blas())")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out == [f"[{min(2, os.cpu_count() or 1)}]", "1 [1]"]  # the BLAS caps at the cores


def test_predictions_and_decoding_run_on_the_learners_threads(log):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = BatchIGL(optimisation=SHORT, max_restarts=0, seed=0, threads=2).fit(log)
    seen: list[int] = []
    policy, decoder = learner.policy_.probabilities, learner.decoder_.forward

    def recording(function):
        def call(*args):
            seen.append(torch.get_num_threads())
            return function(*args)
        return call
    learner.policy_.probabilities = recording(policy)
    learner.decoder_.forward = recording(decoder)
    torch.set_num_threads(3)
    try:
        learner.predict(log.context)
        learner.decode(log.feedback)
        learner.threads = 1
        learner.predict_proba(log.context[:5])
        assert seen == [2, 2, 1] and torch.get_num_threads() == 3  # the caller's, back
    finally:
        torch.set_num_threads(1)
