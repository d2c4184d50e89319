"""Trials give the same rows whatever runs them, and an interrupted run resumes."""

import json
import os
import signal
import subprocess
import sys
import time
from functools import partial

import numpy as np
import pandas as pd
import pytest

from iglearn.errors import IGLearnError
from iglearn.experiments.results import SCHEMA
from iglearn.experiments.runner import Execution, StackedTrials, fingerprint, run_trials
from iglearn.experiments.table1 import Table1Config, run_stacked
from iglearn.processes import TOKEN_NOTICE
from tests.process_table import HAS_PROC, alive, cpu_seconds, spawned_children, wait_gone

CONFIG = Table1Config(trials=3, samples=800, dataset="digits", seed=7)


def toy_trial(index: int, seed: np.random.SeedSequence) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"trial": index, "value": float(rng.random())}]


def test_rows_are_ordered_by_trial_and_seeded_by_index(tmp_path):
    rows = run_trials(toy_trial, 4, 3, Execution(jobs=1, show_progress=False))
    assert [r["trial"] for r in rows] == [0, 1, 2, 3]
    again = run_trials(toy_trial, 2, 3, Execution(jobs=1, show_progress=False))
    assert again == rows[:2]


def drop_timing(rows):
    frame = pd.DataFrame(rows)
    return frame[frame["metric"] != "seconds"].reset_index(drop=True)


def test_same_results_for_any_job_count_and_backend_and_close_for_any_stack(tmp_path, capfd):
    # Identical for any job count and backend (the same kernels run); side by side
    # (--stack) the batched kernels may round differently, so within a tolerance.
    trials = StackedTrials(partial(run_stacked, CONFIG))
    alone = run_trials(trials, 3, CONFIG.seed, Execution(jobs=1, stack=1, show_progress=False))
    assert set(pd.DataFrame(alone)["metric"]) == {"accuracy", "seconds", "indicator",
                                                  "restarts", "flipped"}
    two_jobs = run_trials(trials, 3, CONFIG.seed, Execution(jobs=2, stack=1, show_progress=False))
    pd.testing.assert_frame_equal(drop_timing(alone), drop_timing(two_jobs), check_exact=True)
    for jobs, stack in ((1, 3), (2, 2)):
        rows = drop_timing(run_trials(trials, 3, CONFIG.seed,
                                      Execution(jobs=jobs, stack=stack, show_progress=False)))
        expected = drop_timing(alone)
        assert rows.drop(columns="value").equals(expected.drop(columns="value"))
        close = {"accuracy": 0.01, "indicator": 1e-3, "restarts": 0, "flipped": 0}
        for name, tolerance in close.items():
            rows_of = rows["metric"] == name
            np.testing.assert_allclose(rows.loc[rows_of, "value"].astype(float),
                                       expected.loc[rows_of, "value"].astype(float),
                                       atol=tolerance, rtol=0, err_msg=name)
    pytest.importorskip("ray")
    ray = run_trials(trials, 3, CONFIG.seed,
                     Execution(backend="ray", jobs=2, stack=1, show_progress=False))
    pd.testing.assert_frame_equal(drop_timing(alone), drop_timing(ray), check_exact=True)
    assert TOKEN_NOTICE not in capfd.readouterr().err   # Ray's notice kept off stderr


def blocks_of(indices, seeds):
    """Stacked trials whose rows show the block they ran in (a stacked fit's rounding
    depends on it)."""
    return [[{"trial": index, "block": list(indices)}] for index in indices]


def test_stacked_trials_run_in_blocks_fixed_by_index_whatever_the_jobs_and_resuming(tmp_path):
    """Trials 0-3, 4-7, ... run together with stack 4, whatever the jobs; a resumed run
    runs every block with a missing trial whole, so it gives the rows of an uninterrupted
    one (it ran the missing trials as one new block: other roundings, other numbers)."""
    trials = StackedTrials(blocks_of)
    whole = run_trials(trials, 10, 0, Execution(jobs=1, stack=4, show_progress=False))
    assert [row["block"] for row in whole] == [[0, 1, 2, 3]] * 4 + [[4, 5, 6, 7]] * 4 + [
        [8, 9]] * 2
    for jobs in (2, 3):
        assert run_trials(trials, 10, 0, Execution(jobs=jobs, stack=4,
                                                   show_progress=False)) == whole
    execution = Execution(jobs=1, stack=4, show_progress=False)
    run_trials(trials, 10, 0, execution, tmp_path, {"a": 1})
    for index in (1, 5):
        (tmp_path / "trials" / f"trial-{index:05d}.json").unlink()
    assert run_trials(trials, 10, 0, execution, tmp_path, {"a": 1}) == whole


def test_recorded_trials_are_skipped_and_fresh_starts_over(tmp_path):
    calls = []

    def counting(index, seed):
        calls.append(index)
        return toy_trial(index, seed)

    execution = Execution(jobs=1, show_progress=False)
    first = run_trials(counting, 3, 0, execution, tmp_path, {"a": 1})
    assert calls == [0, 1, 2]
    assert run_trials(counting, 4, 0, execution, tmp_path, {"a": 1})[:3] == first
    assert calls == [0, 1, 2, 3]
    run_trials(counting, 4, 0, Execution(jobs=1, show_progress=False, fresh=True), tmp_path,
               {"a": 1})
    assert calls == [0, 1, 2, 3, 0, 1, 2, 3]
    with pytest.raises(IGLearnError, match=r"different configuration \(--a: 1 recorded, 2 "
                                           r"now\); pass --fresh"):
        run_trials(counting, 4, 0, execution, tmp_path, {"a": 2})


def test_a_run_that_fails_before_a_trial_finishes_records_nothing_and_blocks_nothing(tmp_path):
    """The manifest goes in with the first finished trial: a run refused by its first trial
    used to leave trials/run.json, which then refused the corrected run as "a different
    configuration"; a manifest without trials (an older run's) blocks nothing either."""
    def refused(index, seed):
        raise IGLearnError("too few interactions")

    execution = Execution(jobs=1, show_progress=False)
    with pytest.raises(IGLearnError, match="too few"):
        run_trials(refused, 2, 0, execution, tmp_path, {"samples": 10})
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "trials").mkdir()
    (tmp_path / "trials" / "run.json").write_text('{"samples": 10}\n')
    assert len(run_trials(toy_trial, 2, 0, execution, tmp_path, {"samples": 300})) == 2
    assert json.loads((tmp_path / "trials" / "run.json").read_text()) == {"samples": 300}


def table1_command(out, trials):
    return [sys.executable, "-m", "iglearn.cli", "reproduce", "table1", "--dataset", "digits",
            "--trials", str(trials), "--samples", "800", "--jobs", "1", "--stack", "2", "--quiet",
            "--seed", "3", "--out", str(out)]


def test_sigkill_mid_run_then_resume_matches_an_uninterrupted_run(tmp_path):
    trials = 4
    out = tmp_path / "killed"
    process = subprocess.Popen(table1_command(out, trials), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(list(out.glob("trials/trial-*.json"))) < 2:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    recorded = len(list(out.glob("trials/trial-*.json")))
    assert 2 <= recorded < trials, "the run should have been killed mid-way"
    assert not (out / "table1.csv").exists()

    subprocess.run(table1_command(out, trials), check=True, capture_output=True)
    subprocess.run(table1_command(tmp_path / "whole", trials), check=True, capture_output=True)
    resumed = pd.read_csv(out / "table1.csv")
    whole = pd.read_csv(tmp_path / "whole" / "table1.csv")
    methods = resumed.groupby("trial")["method"].nunique()
    assert sorted(methods.items()) == [(t, 3) for t in range(trials)]
    pd.testing.assert_frame_equal(drop_timing(resumed), drop_timing(whole))
    for path in (out / "trials").glob("trial-*.json"):
        json.loads(path.read_text())  # every record is complete JSON


def test_unknown_backend_is_an_error():
    with pytest.raises(IGLearnError, match="unknown backend"):
        run_trials(toy_trial, 1, 0, Execution(backend="slurm"))


def test_fingerprint_names_the_row_schema_and_not_the_trial_count():
    assert fingerprint(CONFIG)["schema"] == SCHEMA and "trials" not in fingerprint(CONFIG)
    assert fingerprint(CONFIG) == fingerprint(Table1Config(trials=9, samples=800,
                                                           dataset="digits", seed=7))


@pytest.mark.skipif(not HAS_PROC, reason="reads the process table in /proc")
@pytest.mark.parametrize("moment", ["starting", "computing"])
def test_killing_a_run_takes_its_workers_with_it_at_once(tmp_path, moment):
    # SIGKILL reaches the run alone: each worker must notice by itself, and stop computing
    # for nobody within a second, whether it was still starting or deep in a trial
    command = [sys.executable, "-m", "iglearn", "reproduce", "table1", "--dataset", "digits",
               "--trials", "4", "--samples", "30000", "--jobs", "2", "--stack", "1", "--quiet",
               "--out", str(tmp_path / "out")]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        workers: list[int] = []
        while time.monotonic() < deadline and len(workers) < 2:
            workers = spawned_children(process.pid)
            time.sleep(0.02)
        assert len(workers) >= 2, "the run never started its workers"
        if moment == "computing":  # past its start-up (~1 CPU s) and into the trials
            while time.monotonic() < deadline and min(map(cpu_seconds, workers)) < 2.5:
                time.sleep(0.05)
            assert all(alive(pid) for pid in workers), "a worker ended before the kill"
    finally:
        process.kill()
        process.wait()
    bound = 2.0 if moment == "computing" else 10.0  # starting: its interpreter starts first
    survivors = wait_gone(workers, bound)
    assert survivors == [], f"workers {survivors} outlived the killed run by {bound} s"


def test_a_damaged_record_runs_again_and_fresh_keeps_what_is_not_a_record(tmp_path):
    execution = Execution(jobs=1, show_progress=False)
    first = run_trials(toy_trial, 3, 0, execution, tmp_path, {"a": 1})
    (tmp_path / "trials" / "trial-00001.json").write_text('[{"trial": 1, "val')
    with pytest.warns(UserWarning, match="trial-00001.json: the trial record is damaged"):
        again = run_trials(toy_trial, 3, 0, execution, tmp_path, {"a": 1})
    assert again == first
    json.loads((tmp_path / "trials" / "trial-00001.json").read_text())  # rewritten whole
    (tmp_path / "trials" / "notes.txt").write_text("mine")
    run_trials(toy_trial, 2, 0, Execution(jobs=1, show_progress=False, fresh=True), tmp_path,
               {"a": 1})
    assert (tmp_path / "trials" / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in (tmp_path / "trials").iterdir()) == [
        "notes.txt", "run.json", "trial-00000.json", "trial-00001.json"]


def non_finite_trial(index: int, seed: np.random.SeedSequence) -> list[dict]:
    return [{"trial": index, "nan": float("nan"), "inf": np.float32("inf"),
             "count": np.int64(2), "values": np.array([1.0, -np.inf])}]


def test_every_record_a_run_writes_is_strict_json(tmp_path):
    from iglearn.experiments.results import write_config

    def refuse(literal: str) -> None:
        raise AssertionError(f"{literal} in strict JSON")

    execution = Execution(jobs=1, show_progress=False)
    config = {"lr": float("inf"), "eps": np.float32("nan"), "path": tmp_path}
    rows = run_trials(non_finite_trial, 2, 0, execution, tmp_path, config)
    write_config(tmp_path / "config.json", config)
    written = [*(tmp_path / "trials").iterdir(), tmp_path / "config.json"]
    assert len(written) == 4
    for path in written:
        json.loads(path.read_text(), parse_constant=refuse)
    assert json.loads((tmp_path / "config.json").read_text())["config"] == {
        "lr": None, "eps": None, "path": str(tmp_path)}
    again = run_trials(non_finite_trial, 2, 0, execution, tmp_path, config)  # from records
    assert again == [{"trial": i, "nan": None, "inf": None, "count": 2, "values": [1.0, None]}
                     for i in range(2)]
    assert np.isnan(rows[0]["nan"])  # a fresh run gives the trial's own values
