"""A fit's per-epoch history, its progress bar and its TensorBoard events."""

from __future__ import annotations

import dataclasses
import math
import warnings

import pytest

from iglearn import BatchIGL, EpochRecord, Optimisation
from iglearn.envs import digits_environment
from iglearn.learners.batch_igl import STAGES
from iglearn.learners.registry import load_model

SHORT = Optimisation(grounding_epochs=1, policy_epochs=2, epochs=3, max_steps=0,
                     batch_size=100)


@pytest.fixture(scope="module")
def log():
    return digits_environment().log(300, seed=2)


def fit(log, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BatchIGL(optimisation=SHORT, seed=0, **options).fit(log)


def test_the_history_has_every_epoch_of_every_stage_and_attempt(log):
    learner = fit(log, max_restarts=2, restart_threshold=2.0)  # never passed: 3 attempts
    report = learner.report_
    assert report.restarts == 2
    per_attempt = [(name, epoch) for name, epochs in zip(STAGES, (1, 2, 3), strict=True)
                   for epoch in range(epochs)]
    assert [(r.attempt, r.stage, r.epoch) for r in report.history] == [
        (attempt, name, epoch) for attempt in range(3) for name, epoch in per_attempt]
    for attempt, indicator in enumerate(report.attempt_indicators):
        last = [r for r in report.history if r.attempt == attempt][-1]
        assert math.isclose(last.indicator, indicator, abs_tol=1e-5)
    assert all(0 <= r.corrector_statistic <= 1 and math.isfinite(r.loss)
               for r in report.history)
    assert report.flipped == any(r.flipped for r in report.history) or not any(
        r.flipped for r in report.history) or report.restarts > 0


def test_the_history_is_kept_in_the_model_folder(log, tmp_path):
    learner = fit(log, max_restarts=0)
    loaded = load_model(learner.save(tmp_path / "m"))
    assert loaded.report_.history == learner.report_.history
    assert all(isinstance(r, EpochRecord) for r in loaded.report_.history)


def test_side_by_side_fits_keep_each_trial_its_own_history(log):
    learners = [BatchIGL(optimisation=SHORT, max_restarts=0, seed=s) for s in (0, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        BatchIGL.fit_many(learners, [log, log])
    alone = fit(log, max_restarts=0)
    assert len(learners[0].report_.history) == len(alone.report_.history) == 6
    for mine, its in zip(learners[0].report_.history, alone.report_.history, strict=True):
        assert (mine.stage, mine.epoch, mine.flipped) == (its.stage, its.epoch, its.flipped)
        assert math.isclose(mine.indicator, its.indicator, abs_tol=1e-4)


def test_progress_shows_a_bar_for_a_single_fit(log, capsys):
    fit(log, max_restarts=0, progress=True)
    err = capsys.readouterr().err
    assert "fit (attempt 0)" in err and "6/6" in err
    fit(log, max_restarts=0)
    assert "fit (attempt" not in capsys.readouterr().err


def test_tensorboard_gets_cleanrl_style_scalars(log, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    learner = fit(log, max_restarts=0, logdir=str(tmp_path / "runs"))
    events = EventAccumulator(str(tmp_path / "runs"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"losses/grounding_loss", "losses/policy_loss", "losses/exact_loss",
            "charts/indicator", "charts/corrector_statistic", "charts/flipped",
            "charts/attempt"} <= tags
    indicator = [event.value for event in events.Scalars("charts/indicator")]
    assert indicator == pytest.approx([r.indicator for r in learner.report_.history])
    assert [e.step for e in events.Scalars("losses/exact_loss")] == [3, 4, 5]


def test_the_record_fields_are_documented():
    from iglearn.cli.settings import field_docs

    assert set(field_docs(EpochRecord)) == {f.name for f in dataclasses.fields(EpochRecord)}


def test_a_report_prints_as_a_short_summary_and_keeps_its_history(log, capsys):
    learner = fit(log, max_restarts=2, restart_threshold=2.0)  # 3 attempts, 18 epochs
    report = learner.report_
    print(report)
    printed = capsys.readouterr().out.splitlines()
    # a line per field (the warnings a line each, or one saying there are none)
    assert len(printed) == len(dataclasses.fields(report)) + max(1, len(report.warnings))
    assert printed[0] == "FitReport"
    assert f"  history: <{len(report.history)} epoch records>" in printed
    assert f"  restarts: {report.restarts}" in printed
    assert "\n" not in repr(report) and len(repr(report)) < 400
    assert "EpochRecord" not in repr(report) + str(report)
    assert len(report.history) == 18  # the attribute keeps every record


def test_the_other_reports_print_short_too():
    from iglearn.learners.ai_igl import AIIGLReport
    from iglearn.learners.iglp import IGLPReport

    report = AIIGLReport(0.5, [0.05] * 10, [0.5] * 10, [False] * 10, [300] * 10,
                         warnings=["K = 2: the sign is not identified"])
    text = str(report)
    assert "  covariance: [0.05, 0.05, 0.05, 0.05, ... (10 values)]" in text
    assert "  warning: K = 2: the sign is not identified" in text
    assert len(text.splitlines()) <= 12 and "<1 warnings>" in repr(report)
    assert report.covariance == [0.05] * 10
    assert str(IGLPReport(0.25, 0.5, 0.125, 0.75)).splitlines() == [
        "IGLPReport", "  extreme: 0.25", "  negative: 0.5", "  flagged: 0.125",
        "  decoded_value: 0.75", "  seconds: 0", "  warnings: none"]
    several = str(IGLPReport(0.25, 0.5, 0.125, 0.75, ik_losses=[1.5, 1.25], ik_kept=1))
    assert "  ik_losses: [1.5, 1.25]" in several and "  ik_kept: 1" in several


def test_a_fit_interrupted_says_where_its_progress_stopped(log, capsys, monkeypatch):
    """A fit stopped by Ctrl+C (or SIGTERM, which the command turns into an exception) after
    two of its six epochs ends its progress on "2/6 (33 %) stopped after", not on "2/2
    (100 %) done" as a fit that finished early."""
    from iglearn.learners.monitor import FitMonitor

    monkeypatch.setattr("iglearn.progress._drawn_on_terminal", lambda: False)
    epoch = FitMonitor.epoch

    def interrupted(self, *args, **kwargs):
        epoch(self, *args, **kwargs)
        if self._bar is not None and self._bar.n == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(FitMonitor, "epoch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fit(log, max_restarts=0, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("fit (attempt 0): 2/6 (33 %) stopped after"), lines
