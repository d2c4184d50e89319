"""benchmarks/small_data.py: the features variants, and its quick grid end to end."""

from __future__ import annotations

import dataclasses
import io
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest

from iglearn.envs.named import named_environment
from iglearn.experiments.results import KEY_COLUMNS
from tests.benchmarks.conftest import benchmark_module


@pytest.fixture(scope="module")
def small_data():
    with benchmark_module("small_data") as module:
        yield module


def test_raw_and_standardised_features(small_data):
    log = named_environment("digits").log(300, np.random.default_rng(0))
    raw, to_raw = small_data.variant(log, "raw")
    np.testing.assert_allclose(raw.context, 35 + 0.05 * log.context, rtol=1e-6)
    np.testing.assert_allclose(raw.feedback, 35 + 0.05 * log.feedback, rtol=1e-6)
    assert raw.action.tolist() == log.action.tolist()
    assert raw.reward is not None and log.reward is not None
    np.testing.assert_array_equal(raw.reward, log.reward)
    np.testing.assert_allclose(to_raw(log.context), raw.context)

    standard, to_standard = small_data.variant(log, "standardised")
    constant = log.context.std(axis=0) == 0  # digits have blank border pixels
    assert constant.any() and not constant.all()
    np.testing.assert_allclose(standard.context[:, constant], 0, atol=1e-6)
    varying = standard.context[:, ~constant]
    np.testing.assert_allclose(varying.mean(axis=0), 0, atol=1e-3)
    np.testing.assert_allclose(varying.std(axis=0), 1, atol=1e-3)
    # the test contexts go through the same map, with the log's statistics
    np.testing.assert_allclose(to_standard(log.context), standard.context, atol=1e-5)
    given, same = small_data.variant(log, "given")
    assert given is log and same(log.context) is log.context


def test_the_same_unit_and_mixed_unit_variants(small_data):
    log = named_environment("bci").log(300, np.random.default_rng(0))
    raw, _ = small_data.variant(log, "raw")
    same, to_same = small_data.variant(log, "raw-same-unit")  # the raw log, another setting
    np.testing.assert_array_equal(same.context, raw.context)
    assert small_data.SETTINGS["raw-same-unit"] == {"same_unit": "both"}
    mixed, to_mixed = small_data.variant(log, "mixed")
    unit = small_data.units(log.context_dim, 0)
    assert unit.min() < 0.1 and unit.max() > 10  # units far apart, drawn once per dimension
    np.testing.assert_array_equal(unit, small_data.units(log.context_dim, 0))
    np.testing.assert_allclose(mixed.context, 35 + 0.05 * unit * log.context, rtol=1e-6)
    np.testing.assert_allclose(mixed.feedback, 35 + 0.05 * small_data.units(
        log.feedback_dim, 1) * log.feedback, rtol=1e-6)
    np.testing.assert_allclose(to_mixed(log.context), mixed.context)
    wrong, _ = small_data.variant(log, "mixed-same-unit")
    np.testing.assert_array_equal(wrong.feedback, mixed.feedback)
    assert small_data.SETTINGS["mixed-same-unit"] == {"same_unit": "both"}
    # the learner gets the variant's setting
    learner, _, _ = small_data.fit_once("CB", same, [0], settings={"same_unit": "both"})
    assert learner is not None
    assert learner.standardiser_.context_rule == "auto: off scale, one scale"


def test_quick_grid_end_to_end(small_data, tmp_path):
    argv = ["--quick", "--tasks", "personalised", "--learners", "CB,SUP", "--jobs", "1",
            "--out", str(tmp_path)]
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert small_data.main(argv) == 0
    frame = pd.read_csv(tmp_path / "small_data.csv")
    assert list(frame.columns) == [*KEY_COLUMNS, "task", "features", "metric", "value"]
    assert set(frame["experiment"]) == {"small_data"}
    assert set(frame["metric"]) == {"accuracy", "reward", "cpu_seconds", "seconds", "failed"}
    wide = frame.pivot_table(index=["method", "trial", "step", "task", "features"],
                             columns="metric", values="value").reset_index()
    # 2 learners x 3 features variants x 2 seeds, one log size: every fit measured once
    assert len(wide) == 12
    assert sorted(wide.groupby(["method", "features"]).size().unique()) == [2]
    assert set(wide["step"]) == {200} and set(wide["trial"]) == {0, 1}
    assert (wide["failed"] == 0).all()
    assert wide["accuracy"].between(0, 1).all() and (wide["cpu_seconds"] > 0).all()
    # a learner's features variants start from the same seed, on the same log
    assert frame.groupby(["trial"])["seed"].nunique().eq(1).all()

    text = (tmp_path / "small_data.md").read_text()
    assert text in printed.getvalue()
    for heading in ("## Features as the task gives them", "## Raw features: x_raw",
                    "## Raw features standardised by hand", "## Raw against standardised"):
        assert heading in text
    sup = wide[(wide["method"] == "SUP") & (wide["features"] == "given")]
    assert f"| personalised | SUP | {100 * sup['accuracy'].mean():.1f} / " in text
    assert (tmp_path / "config.json").exists()
    # the run says how many workers fitted at once, and warns of CPU-seconds read beside others
    assert "1 worker process fitting at once." in text and "`--jobs 1`" not in text
    config = small_data.parse(argv)[0]
    side_by_side = small_data.markdown(frame, config, 1.0, 2)
    assert "2 worker processes fitting at once." in side_by_side
    assert "`--jobs 1` on an otherwise idle machine" in side_by_side

    # a second run finds every cell recorded and gives the same table without fitting
    with redirect_stdout(io.StringIO()):
        assert small_data.main(argv) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "small_data.csv"), frame)


def test_the_action_explained_table(small_data):
    config = small_data.SmallDataConfig(tasks=("digits", "bci"), sizes=(200, 500),
                                        learners=("IGL", "CB"))
    rows = [("digits", 200, 0.05), ("digits", 200, 0.12), ("bci", 200, 0.2),
            ("bci", 200, 0.95), ("bci", 500, 0.9)]
    frame = pd.DataFrame([{"task": task, "method": "IGL", "step": n, "features": "raw",
                           "metric": "action_explained", "value": v} for task, n, v in rows])
    text = "\n".join(small_data._explained_lines(frame, config, [200, 500]))
    assert "| digits | IGL | 0.05–0.12, 0 of 2 | – |" in text
    assert "| bci | IGL | 0.20–0.95, 1 of 2 | 0.90–0.90, 1 of 1 |" in text
    assert "| digits | CB |" not in text   # CB measures no decoder
    # a grid without such fits has no such table
    assert small_data._explained_lines(frame[frame["metric"] == "accuracy"], config,
                                       [200, 500]) == []


def test_refuses_a_grid_with_nothing_to_run(small_data, tmp_path, capsys):
    assert small_data.main(["--tasks", "bci", "--learners", "IGL-P",
                            "--out", str(tmp_path)]) == 2
    assert "no learner of IGL-P runs on bci" in capsys.readouterr().err
    assert small_data.main(["--tasks", "emnist", "--out", str(tmp_path)]) == 2
    assert "--tasks emnist" in capsys.readouterr().err
    # MNIST runs only when asked for, from the folder given
    assert "mnist" not in small_data.SmallDataConfig().tasks
    assert small_data.main(["--tasks", "mnist", "--data-dir", str(tmp_path / "none"),
                            "--out", str(tmp_path)]) == 2
    assert str(tmp_path / "none") in capsys.readouterr().err


def test_the_measured_feedback_variants(small_data):
    """``dwell`` and ``clicks`` replace the feedback by dense and sparse measurements of the
    reward, drawn from the cell's seed; the contexts are the task's."""
    log = named_environment("digits").log(2000, np.random.default_rng(0))
    reward = log.reward > 0
    dwell, to_dwell = small_data.variant(log, "dwell", [1, 2])
    np.testing.assert_array_equal(dwell.context, log.context)
    assert dwell.feedback.shape == (len(log), small_data.MEASURED_COLUMNS)
    a, b, c = small_data.DWELL
    np.testing.assert_allclose(dwell.feedback[~reward].mean(), a, rtol=0.05)
    np.testing.assert_allclose(dwell.feedback[reward].mean(), a + b, rtol=0.05)
    np.testing.assert_allclose(dwell.feedback[~reward].std(), c, rtol=0.1)
    np.testing.assert_array_equal(to_dwell(log.context), log.context)
    clicks, _ = small_data.variant(log, "clicks", [1, 2])
    assert np.array_equal(clicks.feedback, np.round(clicks.feedback)) and clicks.feedback.min() == 0
    np.testing.assert_allclose((clicks.feedback[~reward] == 0).mean(), np.exp(-1), atol=0.03)
    again, _ = small_data.variant(log, "clicks", [1, 2])
    np.testing.assert_array_equal(again.feedback, clicks.feedback)
    on, _ = small_data.variant(log, "clicks-on", [1, 2])  # the same log, another setting
    np.testing.assert_array_equal(on.feedback, clicks.feedback)
    assert small_data.SETTINGS["clicks-on"] == {"standardise": "on"}
    other, _ = small_data.variant(log, "clicks", [1, 3])
    assert not np.array_equal(other.feedback, clicks.feedback)
    with pytest.raises(small_data.IGLearnError, match="the log has none"):
        small_data.variant(dataclasses.replace(log, reward=None), "dwell", [1, 2])
    # the same dwell times, then in about 1 % of the rows one column far out
    far, _ = small_data.variant(log, "dwell-outliers", [1, 2])
    share, low, high = small_data.OUTLIERS
    out = far.feedback >= low
    assert (out.sum(1) <= 1).all() and out.any(0).all()
    np.testing.assert_allclose(out.any(1).mean(), share, atol=0.005)
    assert far.feedback[out].max() <= high
    np.testing.assert_array_equal(far.feedback[~out.any(1)], dwell.feedback[~out.any(1)])
