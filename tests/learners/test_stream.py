"""Fits streamed from disk: the full passes as streaming reductions equal the in-memory ones,
the mini-batch stream is seeded, and every learner fits a stream about as well as the same
log in memory."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from iglearn import AIIGL, BatchIGL, ContextualBandit, LogStream, Supervised, open_log
from iglearn.data.formats import write_table
from iglearn.data.limits import MIN_PER_ACTION, check_feedback_varies
from iglearn.data.stream import StreamSettings
from iglearn.envs import action_inclusive_environment, digits_environment
from iglearn.errors import IGLearnError
from iglearn.learners import IdentifiabilityWarning, Optimisation
from iglearn.learners.ai_igl import indicator_terms, own_decoder, reward_rates
from iglearn.learners.batch_igl import indicators
from iglearn.learners.corrector import corrector_statistics
from iglearn.learners.evaluation import evaluate
from iglearn.learners.iglp import IGLP
from iglearn.learners.stream import StreamTrials, training_data
from iglearn.learners.trials import fixed_signal
from iglearn.learners.unsupervised import UnsupervisedBandit
from iglearn.learners.vi_igl import VIIGL
from iglearn.models import make_decoder, make_policy
from iglearn.models.stacked import stack

STREAM = StreamSettings(stream="on", shuffle_rows=1000, block_rows=256)
QUICK = Optimisation(max_steps=60)


def stored(env, n: int, folder, seed: int) -> tuple[str, str]:
    """``env``'s log of ``n`` interactions as Parquet in row groups of 250 rows, and npz."""
    log = env.log(n, seed=seed)
    write_table(log, folder / "whole.parquet")
    pq.write_table(pq.read_table(folder / "whole.parquet"), folder / "log.parquet",
                   row_group_size=250)
    write_table(log, folder / "log.npz")
    return str(folder / "log.parquet"), str(folder / "log.npz")


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    return stored(digits_environment(), 3000, tmp_path_factory.mktemp("digits"), 2)


@pytest.fixture(scope="module")
def inclusive(tmp_path_factory):
    return stored(action_inclusive_environment("digits"), 3000,
                  tmp_path_factory.mktemp("inclusive"), 4)


def test_streaming_reductions_equal_the_in_memory_ones(digits):
    memory, stream = open_log(digits[0]), open_log(digits[0], STREAM)
    assert isinstance(stream, LogStream)
    generator = torch.Generator().manual_seed(0)
    policy = make_policy("linear", memory.context_dim, 10, generator)
    decoders = [make_decoder("linear", memory.feedback_dim, generator, 0.5) for _ in range(10)]
    both = [training_data([log], "feedback") for log in (memory, stream)]
    values = [corrector_statistics(stack(decoders[:1]), data, 10) for data in both]
    torch.testing.assert_close(values[0], values[1], rtol=1e-6, atol=1e-9)
    values = [indicators([policy], decoders[:1], data, 10) for data in both]
    np.testing.assert_allclose(values[0], values[1], rtol=1e-4, atol=1e-7)
    values = [indicator_terms(policy, decoders, data) for data in both]
    np.testing.assert_allclose(values[0], values[1], rtol=1e-4, atol=1e-7)
    values = [reward_rates(decoders, data) for data in both]
    np.testing.assert_allclose(values[0], values[1], rtol=1e-5)
    learner = Supervised(optimisation=Optimisation(max_steps=10), seed=0).fit(memory)
    learner.decoder_ = decoders[0]
    measured = [evaluate(learner, log) for log in (memory, stream)]
    assert measured[0].keys() == measured[1].keys() >= {"accuracy", "value_ips", "indicator"}
    for key in measured[0]:
        assert measured[0][key] == pytest.approx(measured[1][key], rel=1e-5, abs=1e-7), key


def test_streamed_mini_batches_follow_the_seed(digits):
    data = StreamTrials(open_log(digits[1], STREAM), "feedback")

    def first_batches(seed: int) -> list[torch.Tensor]:
        batches = data.epoch(500, [torch.Generator().manual_seed(seed)])
        return [next(batches).action for _ in range(3)]

    assert all(torch.equal(a, b) for a, b in zip(first_batches(0), first_batches(0),
                                                 strict=True))
    assert not torch.equal(first_batches(0)[0], first_batches(1)[0])
    batch = next(data.epoch(500, [torch.Generator().manual_seed(0)]))
    assert batch.context.shape == (1, 500, 64) and batch.signal.shape == (1, 500, 64)


@pytest.mark.parametrize("make, which, floor, gap", [
    (lambda: BatchIGL(optimisation=QUICK, seed=0), "digits", 0.8, 0.08),
    # a one-epoch fit of the harder task, whose accuracy varies by about 0.1 with the shuffle
    (lambda: AIIGL(optimisation=Optimisation(1, 1, 1, max_steps=40), refinements=0, seed=0),
     "inclusive", 0.45, 0.15),
    (lambda: Supervised(optimisation=QUICK, seed=0), "digits", 0.8, 0.08),
    (lambda: ContextualBandit(optimisation=QUICK, seed=0), "digits", 0.8, 0.08),
], ids=["igl", "ai-igl", "sup", "cb"])
def test_a_streamed_fit_is_as_accurate_as_the_fit_in_memory(make, which, floor, gap, digits,
                                                            inclusive):
    path = (digits if which == "digits" else inclusive)[1 if which == "inclusive" else 0]
    env = digits_environment() if which == "digits" else action_inclusive_environment("digits")
    contexts, labels = env.test_set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        accuracy = [make().fit(open_log(path, settings)).accuracy(contexts, labels)
                    for settings in (StreamSettings(stream="off"), STREAM)]
    # the two differ only in the shuffle: within the noise of one seed's fit
    assert min(accuracy) > floor and abs(accuracy[0] - accuracy[1]) < gap, accuracy


def test_a_streamed_fit_on_its_device_records_the_history_of_one_in_memory(digits):
    settings = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=2, max_steps=0,
                            batch_size=250)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        memory, streamed = (
            BatchIGL(optimisation=settings, max_restarts=0, seed=0, device="auto")
            .fit(open_log(digits[0], reading)).report_
            for reading in (StreamSettings(stream="off"), STREAM))
    assert [(r.attempt, r.stage, r.epoch) for r in streamed.history] == [
        (r.attempt, r.stage, r.epoch) for r in memory.history] and len(memory.history) == 4
    for report in (memory, streamed):
        last = report.history[-1]
        # the last epoch's record is the fitted pair's: its indicator, its corrector statistic
        assert math.isclose(last.indicator, report.indicator, abs_tol=1e-5)
        assert math.isclose(last.corrector_statistic, report.corrector_statistic, abs_tol=1e-6)
        assert all(0 <= r.corrector_statistic <= 1 and math.isfinite(r.loss)
                   for r in report.history)


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("make", [BatchIGL, AIIGL, IGLP, ContextualBandit, Supervised,
                                  UnsupervisedBandit])
def test_a_log_too_small_to_fit_is_refused_naming_the_count_and_the_minimum(make, n):
    log = digits_environment().log(n, seed=0)
    shown = "1 interaction " if n == 1 else f"{n} interactions "
    with pytest.raises(IGLearnError, match=shown + r"for 10 actions is too few to fit; a fit "
                                           r"needs at least 20 \(2 per action\)"):
        make(seed=0).fit(log)


@pytest.mark.parametrize("make", [BatchIGL, AIIGL, IGLP, VIIGL])
def test_a_log_whose_feedback_never_varies_is_refused_by_the_learners_that_read_it(make):
    log = digits_environment().log(300, seed=0)
    log = dataclasses.replace(log, feedback=np.full_like(log.feedback, 0.25), source="flat.npz")
    with pytest.raises(IGLearnError, match=r"^flat.npz: the feedback is the same in all 300 "
                                           r"interactions; .*check how the feedback was logged"):
        make(seed=0).fit(log)
    for reader in (ContextualBandit, Supervised):  # they read the reward or the label
        assert reader(seed=0, optimisation=QUICK).fit(log).predict(log.context).shape == (300,)
    varied = log.feedback.copy()
    varied[-1, 0] = 1.0  # one interaction differs: the check passes
    check_feedback_varies([dataclasses.replace(log, feedback=varied)])


@pytest.mark.filterwarnings("ignore::iglearn.learners.IdentifiabilityWarning")
def test_a_log_of_two_interactions_per_action_is_fitted():
    log = action_inclusive_environment("digits").log(20, seed=0)
    assert len(log) == MIN_PER_ACTION * log.n_actions
    model = BatchIGL(seed=0, max_restarts=0, optimisation=Optimisation(max_steps=10)).fit(log)
    assert model.predict(log.context).shape == (20,)


def test_a_streamed_log_is_not_split_to_judge_starts(digits):
    stream = open_log(digits[0], STREAM)
    with pytest.raises(IGLearnError, match="streamed log is fitted with starts=1"):
        BatchIGL(seed=0, starts=2, optimisation=QUICK).fit(stream)


def test_starts_on_a_stream_are_refused_before_a_pass_naming_both_fixes(digits, monkeypatch):
    """starts > 1 on a streamed log was refused only after the fit's first pass over it (the
    standardiser's statistics: minutes on a large log), in Python's terms alone; it is
    refused before any pass, naming the command's options too."""
    stream = open_log(digits[0], STREAM)

    def no_pass(self, log):
        raise AssertionError("a pass over the stream before the refusal")

    monkeypatch.setattr(BatchIGL, "take_statistics", no_pass)
    with pytest.raises(IGLearnError, match=r"starts = 3 \(--starts\) .* drop starts "
                                           r"\(--starts\), or read the log into memory "
                                           r"\(stream off, --stream off\)"):
        BatchIGL(seed=0, starts=3, optimisation=QUICK).fit(stream)


def test_a_fixed_signal_is_decoded_once_in_memory_and_per_mini_batch_when_streamed(digits):
    memory, stream = (training_data([open_log(digits[0], settings)], "feedback")
                      for settings in (None, STREAM))
    generator = torch.Generator().manual_seed(3)
    psi = stack([make_decoder("linear", memory.signal_dim, generator, 0.5) for _ in range(10)])
    decode = lambda batch: own_decoder(psi, batch, 10)  # noqa: E731
    decoded, read = fixed_signal(memory, decode, rows=700)  # passes of unequal length
    assert decoded is not memory and decoded.context is memory.context
    index = torch.randperm(memory.n, generator=generator)[None, :500]
    with torch.no_grad():
        torch.testing.assert_close(read(decoded.batch(index)), decode(memory.batch(index)))
    same, read = fixed_signal(stream, decode)
    assert same is stream
    batch = next(iter(stream.epoch(200, [torch.Generator().manual_seed(0)])))
    with torch.no_grad():
        torch.testing.assert_close(read(batch), decode(batch))
    assert not read(batch).requires_grad


def test_a_small_streamed_log_makes_every_attempt_of_ai_igl_one_at_a_time(tmp_path):
    # 400 interactions, K = 10: fewer than every_attempt_below an action, so every attempt is
    # made, one at a time from a stream (side by side in memory)
    path, _ = stored(action_inclusive_environment("digits"), 400, tmp_path, 0)
    quick = Optimisation(1, 1, 1, max_steps=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        fits = [AIIGL(optimisation=quick, refinements=0, seed=0).fit(open_log(path, settings))
                for settings in (STREAM, StreamSettings(stream="off"))]
    for fit in fits:
        report = fit.report_
        assert report.restarts == 2 and len(report.attempt_indicators) == 3
        assert report.indicator == pytest.approx(max(report.attempt_indicators), rel=1e-5)
