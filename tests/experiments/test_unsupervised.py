"""Section 6 on digits: the experiment's trial and the command line on a tiny budget."""

import json

import numpy as np
import pandas as pd
import pytest

from iglearn.cli import main
from iglearn.envs import digits_environment
from iglearn.envs.section6 import FAMILIES, family_environments
from iglearn.experiments.results import RESULT_COLUMNS
from iglearn.experiments.unsupervised import (
    UnsupervisedConfig,
    family_clusters,
    make_families,
    run_units,
    same_decoding,
)
from iglearn.learners.unsupervised import UnsupervisedBandit
from iglearn.seeding import spawn_seeds


def measured(rows: list[dict]) -> dict[str, dict]:
    """Each method's metrics from a unit's tidy rows."""
    by_method: dict[str, dict] = {}
    for row in rows:
        by_method.setdefault(row["method"], {})[row["metric"]] = row["value"]
    return by_method


def test_igl_beats_the_baseline_where_the_baseline_decodes_wrong():
    config = UnsupervisedConfig(trials=1, samples=3000, dataset="digits",
                                families=("theorem3",))
    names, seed = list(FAMILIES["theorem3"]), spawn_seeds(0, 1)[0]
    first = measured(run_units(config, [0], [seed])[0])["unsupervised"]
    # The baseline decodes alike in every environment, so the one whose decoded gap
    # r_i - mean_{j != i} r_j is lowest (Theorem 3's proof) is known from any of them.
    r = np.array([first[f"decoded_{d}"] for d in range(10)])
    worst = int(np.argmin([r[i] - np.delete(r, i).mean() for i in range(10)]))
    rows = run_units(config, [worst], [seed])[0]
    by_method = measured(rows)
    assert set(by_method) == {"unsupervised", "IGL"}
    assert all(row["environment"] == names[worst] and row["family"] == "theorem3"
               and row["step"] == 3000 for row in rows)
    assert [by_method["unsupervised"][f"decoded_{d}"] for d in range(10)] == r.tolist()
    assert by_method["unsupervised"]["decoded_gap"] < 0.1
    assert by_method["IGL"]["decoded_gap"] > 0.8
    assert by_method["IGL"]["accuracy"] > 0.7
    assert by_method["IGL"]["accuracy"] > by_method["unsupervised"]["accuracy"] + 0.4


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_baseline_decodes_the_same_reward_in_every_environment_of_a_family(family):
    envs = family_environments(family, digits_environment())
    clusters = family_clusters(UnsupervisedConfig(), family)
    test_x = next(iter(envs.values())).test_set()[0]
    logs = [env.feedback_first_log(1000, 0) for env in envs.values()]
    fits = [UnsupervisedBandit(clusters, seed=1).fit(log) for log in logs]
    on_log = [fit.decode(log.feedback) for fit, log in zip(fits, logs, strict=True)]
    assert 0 < on_log[0].mean() < 1
    for log, fit, psi in zip(logs, fits, on_log, strict=True):
        np.testing.assert_array_equal(log.feedback, logs[0].feedback)
        np.testing.assert_array_equal(psi, on_log[0])
        np.testing.assert_array_equal(fit.decode(test_x), fits[0].decode(test_x))


def test_unknown_family_is_a_user_error():
    with pytest.raises(ValueError, match="unknown or no Section 6 families"):
        make_families(UnsupervisedConfig(dataset="digits", families=("env3",)))


def test_cli_end_to_end_on_digits(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["reproduce", "unsupervised", "--dataset", "digits", "--family", "env12",
                 "--trials", "1", "--samples", "2000", "--out", str(out), "--quiet",
                 "--seed", "3", "--jobs", "1"]) == 0
    frame = pd.read_csv(out / "unsupervised.csv")
    assert list(frame.columns) == [*RESULT_COLUMNS[:5], "family", "environment",
                                   *RESULT_COLUMNS[5:]]
    assert set(frame["metric"]) == {"accuracy", "seconds", "decoded_gap",
                                    *(f"decoded_{d}" for d in range(10))}
    assert len(frame) == 4 * 13 and set(frame["environment"]) == {"ENV(1)", "ENV(2)"}
    accuracy = frame.loc[frame["metric"] == "accuracy", "value"]
    assert accuracy.between(0, 1).all() and accuracy.max() > 0.5
    assert (frame.loc[frame["metric"] == "seconds", "value"] > 0).all()
    assert (same_decoding(frame)["spread"] == 0).all()  # one log's feedback, one decoder
    text = (out / "unsupervised.md").read_text()
    assert "ENV(1)" in text and "ENV(2)" in text and "IGL" in text
    assert "accuracy (%)" in text and "± is the standard deviation over 1 trial" in text
    assert (out / "unsupervised.png").stat().st_size > 1000
    config = json.loads((out / "config.json").read_text())["config"]
    assert config["samples"] == 2000 and config["families"] == ["env12"]
    assert "wrote" in capsys.readouterr().out


def test_cli_reports_a_bad_output_folder(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["reproduce", "unsupervised", "--dataset", "digits", "--out",
                 str(blocker / "sub"), "--quiet"]) == 2
    assert "cannot write there" in capsys.readouterr().err
