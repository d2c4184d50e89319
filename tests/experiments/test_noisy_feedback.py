"""``iglearn reproduce noisy-feedback`` on digits with a small budget."""

import json

import numpy as np
import pandas as pd
import pytest

from iglearn.envs.named import named_environment
from iglearn.errors import IGLearnError
from iglearn.experiments.configs import NOISY_METHODS, NoisyFeedbackConfig
from iglearn.experiments.noisy_feedback import (
    CLEAN,
    FEEDBACK_BLIND,
    environment_name,
    markdown,
    run_stacked,
    setting_seeds,
    settings_run,
    summary,
)
from iglearn.experiments.results import KEY_COLUMNS
from iglearn.seeding import spawn_seeds
from tests.experiments.conftest import reproduce

SMALL = ["--trials", "1", "--samples", "1500", "--p", "0,0.3", "--kinds", "independent,action",
         "--methods", "VI-IGL,IGL,CB"]


@pytest.fixture(scope="module")
def noisy_run(tmp_path_factory):
    """A one-trial run on digits: p = 0 and p = 0.3 of independent and action noise."""
    out = tmp_path_factory.mktemp("noisy") / "run"
    return out, reproduce("noisy-feedback", *SMALL, "--out", out, "--quiet", "--jobs", "1")


@pytest.mark.slow
def test_writes_the_tidy_table_markdown_and_plot(noisy_run):
    out, printed = noisy_run
    for name in ("noisy_feedback.csv", "noisy_feedback.md", "noisy_feedback.png",
                 "config.json"):
        assert (out / name).stat().st_size > 0
    frame = pd.read_csv(out / "noisy_feedback.csv")
    assert list(frame.columns) == [*KEY_COLUMNS, "kind", "p", "metric", "value"]
    assert set(zip(frame["kind"], frame["p"], strict=True)) == {
        (CLEAN, 0.0), ("independent", 0.3), ("action", 0.3)}
    assert set(frame["method"]) == {"VI-IGL", "IGL", "CB"}
    accuracy = frame[frame["metric"] == "accuracy"]
    assert accuracy["value"].between(0, 1).all()
    clean = accuracy[(accuracy["kind"] == CLEAN) & (accuracy["method"] == "VI-IGL")]
    assert clean["value"].min() > 0.6    # chance is 0.1
    text = (out / "noisy_feedback.md").read_text()
    assert "unverified" in text and "71.0" in text and "81.6" in text
    assert "2021 IGL beats VI-IGL at:" in text
    assert json.loads((out / "config.json").read_text())["config"]["p"] == [0.0, 0.3]


def test_p_zero_runs_once_and_seeds_do_not_depend_on_what_else_runs():
    config = NoisyFeedbackConfig(p=(0.0, 0.1), kinds=("both", "context"))
    assert settings_run(config) == [(CLEAN, 0.0), ("both", 0.1), ("context", 0.1)]
    seeds = spawn_seeds(0, 1)
    small = dict(trials=1, samples=300, methods=("CB",), dataset="digits")
    alone = run_stacked(NoisyFeedbackConfig(p=(0.1,), kinds=("context",), **small), [0], seeds)
    more = run_stacked(NoisyFeedbackConfig(p=(0.0, 0.1), kinds=("action", "context"),
                                           **small), [0], seeds)
    value = {(row["kind"], row["metric"]): row["value"] for row in more[0]}
    for row in alone[0]:
        if row["metric"] == "accuracy":
            assert value[row["kind"], "accuracy"] == row["value"]


def test_a_trials_settings_log_the_same_interactions_and_share_the_blind_fits():
    """Every setting of a trial logs the same contexts, actions and rewards (only the
    feedback differs), and the methods that read no feedback get the same seed in each, so
    their one fit per trial is the fit of every setting."""
    config = NoisyFeedbackConfig(p=(0.0, 0.3), kinds=("independent", "both"))
    logs, seeds = [], []
    for kind, p in settings_run(config):
        env = named_environment(environment_name(kind, "digits"), None, p)
        spawned = setting_seeds(5, kind, p)
        logs.append(env.log(300, np.random.default_rng(spawned[0])))
        blind = [spawned[1 + NOISY_METHODS.index(method)] for method in FEEDBACK_BLIND]
        seeds.append([(seed.entropy, seed.spawn_key) for seed in blind])
    for log, seed in zip(logs[1:], seeds[1:], strict=True):
        for name in ("context", "action", "probability", "reward", "label"):
            np.testing.assert_array_equal(getattr(log, name), getattr(logs[0], name))
        assert not np.array_equal(log.feedback, logs[0].feedback)
        assert seed == seeds[0]
    rows = run_stacked(NoisyFeedbackConfig(trials=1, samples=300, methods=("SUP",), **{
        "p": config.p, "kinds": config.kinds}), [0], spawn_seeds(0, 1))[0]
    accuracy = {(row["kind"], row["p"]): row["value"] for row in rows
                if row["metric"] == "accuracy"}
    assert len(accuracy) == 3 and len(set(accuracy.values())) == 1


def test_markdown_says_where_igl_beats_vi_igl():
    rows = [{"kind": "independent", "p": 0.1, "method": method, "mean": mean, "std": 0.01,
             "min": mean, "n": 2, "seconds_per_fit": 1.0}
            for method, mean in (("VI-IGL", 0.80), ("IGL", 0.85), ("CB", 0.9))]
    text = markdown(pd.DataFrame(rows), NoisyFeedbackConfig(trials=2))
    assert "independent p = 0.1 (85.0 % against 80.0 %)" in text
    # the methods run, not every method (it named E2G and its rounds when E2G was not run)
    assert text.startswith("# Noisy feedback: VI-IGL, 2021 IGL and CB\n")
    assert "E2G plays online" not in text
    row = "| independent | 0.1 | 80.00 ± 1.00 | 85.00 ± 1.00 | 90.00 ± 1.00 | IGL | 71.0 | 25.0 |"
    assert row in text
    frame = pd.DataFrame([{"experiment": "noisy_feedback", "method": "CB", "trial": 0,
                           "seed": 1, "step": 10, "kind": "none", "p": 0.0,
                           "metric": "accuracy", "value": 0.5}])
    assert summary(frame)["mean"].tolist() == [0.5]


@pytest.mark.parametrize("settings", [{"p": (0.1, 0.1)}, {"p": (1.5,)}, {"kinds": ()},
                                      {"trials": 0}])
def test_settings_that_cannot_run_are_refused(settings):
    with pytest.raises(IGLearnError):
        NoisyFeedbackConfig(**settings).check()


def test_e2g_rounds_without_e2g_is_refused():
    """--e2g-rounds without E2G in --methods (the default leaves it out) was dropped without
    a word."""
    with pytest.raises(IGLearnError, match=r"^--e2g-rounds 500 is read by E2G only, which "
                                           r"--methods leaves out; drop --e2g-rounds, or add "
                                           r"E2G to --methods$"):
        NoisyFeedbackConfig(e2g_rounds=500).check()
    NoisyFeedbackConfig(e2g_rounds=500, methods=("E2G", "CB")).check()


@pytest.mark.slow
def test_e2g_plays_where_its_assumption_holds():
    config = NoisyFeedbackConfig(trials=1, samples=300, p=(0.0, 0.2),
                                 kinds=("independent", "action"), methods=("E2G",),
                                 e2g_rounds=600, dataset="digits")
    rows = run_stacked(config, [0], spawn_seeds(0, 1))[0]
    kinds = {row["kind"] for row in rows}
    assert kinds == {CLEAN, "independent"}
    assert all(row["step"] == 600 for row in rows)
    assert np.isfinite([row["value"] for row in rows if row["metric"] == "accuracy"]).all()
