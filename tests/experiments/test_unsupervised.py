"""Section 6 on digits: the experiment's trial and the command line on a tiny budget."""

import json

import numpy as np
import pandas as pd
import pytest

from iglearn.cli import main
from iglearn.envs import digits_environment
from iglearn.envs.section6 import FAMILIES, family_environments
from iglearn.experiments.unsupervised import UnsupervisedConfig, make_families, run_unit
from iglearn.learners.unsupervised import ClusterDecoder
from iglearn.seeding import spawn_seeds


def test_igl_beats_the_baseline_where_the_baseline_decodes_wrong():
    envs = family_environments("theorem3", digits_environment())
    # The environment whose decoded gap r_i - mean_{j != i} r_j is lowest (Theorem 3's proof).
    test_x, test_y = envs["env 0"].test_set()
    psi = ClusterDecoder(10, seed=0).fit(envs["env 0"].log(3000, 0).feedback).decode(test_x)
    r = np.array([psi[test_y == d].mean() for d in range(10)])
    worst = int(np.argmin([r[i] - np.delete(r, i).mean() for i in range(10)]))
    name = f"env {worst}"
    config = UnsupervisedConfig(trials=1, samples=3000, dataset="digits",
                                families=("theorem3",))
    rows = run_unit(config, list(FAMILIES["theorem3"]).index(name), spawn_seeds(0, 1)[0])
    by_method = {row["method"]: row for row in rows}
    assert set(by_method) == {"unsupervised", "IGL"}
    assert all(row["environment"] == name and row["family"] == "theorem3" for row in rows)
    assert by_method["unsupervised"]["decoded_gap"] < 0.1
    assert by_method["IGL"]["decoded_gap"] > 0.8
    assert by_method["IGL"]["accuracy"] > 70
    assert by_method["IGL"]["accuracy"] > by_method["unsupervised"]["accuracy"] + 40


def test_unknown_family_is_a_user_error():
    with pytest.raises(ValueError, match="unknown or no Section 6 families"):
        make_families(UnsupervisedConfig(dataset="digits", families=("env3",)))


def test_cli_end_to_end_on_digits(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["reproduce", "unsupervised", "--dataset", "digits", "--family", "env12",
                 "--trials", "1", "--samples", "2000", "--out", str(out), "--quiet",
                 "--seed", "3", "--jobs", "1"]) == 0
    frame = pd.read_csv(out / "unsupervised.csv")
    assert set(frame.columns) >= {"family", "environment", "method", "trial", "accuracy",
                                  "seed", "seconds", "decoded_gap", "decoded_0", "decoded_9"}
    assert len(frame) == 4 and set(frame["environment"]) == {"ENV(1)", "ENV(2)"}
    assert frame["accuracy"].between(0, 100).all() and (frame["seconds"] > 0).all()
    text = (out / "unsupervised.md").read_text()
    assert "ENV(1)" in text and "ENV(2)" in text and "IGL" in text
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
