"""``iglearn orient``: a two-action model's direction chosen from labelled interactions."""

import json

import numpy as np
import pytest

from iglearn import InteractionLog
from iglearn.cli import main
from iglearn.data.formats import write_table
from iglearn.envs import make_environment
from tests.cli.conftest import run


def parity_log(n: int, seed: int, labelled: bool = False) -> InteractionLog:
    """The parity of digits (K = 2) under uniform play; two of four feedback numbers rise
    with the reward."""
    rng = np.random.default_rng(seed)
    base = make_environment("digits").log(n, seed=seed)
    parity, arm = base.label % 2, rng.integers(0, 2, n)
    reaction = rng.normal(size=(n, 4)) + (arm == parity)[:, None] * np.array([1.5, 1.0, 0, 0])
    return InteractionLog(base.context, arm, np.full(n, 0.5), reaction.astype(np.float32), 2,
                          label=parity if labelled else None)


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    folder = tmp_path_factory.mktemp("parity")
    write_table(parity_log(600, 0), folder / "log.npz")
    write_table(parity_log(30, 100, labelled=True), folder / "calibration.csv")
    write_table(parity_log(1500, 5, labelled=True), folder / "test.npz")
    write_table(parity_log(30, 101), folder / "unlabelled.csv")
    for algorithm in ("igl", "ai-igl"):
        assert main(["fit", str(folder / "log.npz"), "--out", str(folder / algorithm),
                     "--algorithm", algorithm]) == 0
    return folder


def accuracy(capsys, model, test) -> float:
    code, out, _ = run(capsys, "evaluate", model, test)
    assert code == 0
    return json.loads(out)["accuracy"]


def test_orient_turns_a_two_action_model_the_right_way_and_keeps_its_record(parity, capsys):
    before = accuracy(capsys, parity / "igl", parity / "test.npz")
    assert max(before, 1 - before) > 0.8  # the split is learnt, its direction is open
    code, out, _ = run(capsys, "orient", parity / "igl", parity / "calibration.csv", "--out",
                       parity / "oriented")
    assert code == 0
    said = json.loads(out)
    assert said["rows"] == 30 and said["agreement"] > 0.8
    assert said["flipped"] == (before < 0.5)
    assert accuracy(capsys, parity / "oriented", parity / "test.npz") == pytest.approx(
        max(before, 1 - before))
    training = json.loads((parity / "oriented" / "model.json").read_text())["training"]
    fitted = json.loads((parity / "igl" / "model.json").read_text())["training"]
    assert training["oriented"] == {"data": str(parity / "calibration.csv"), "rows": 30,
                                    "agreement": said["agreement"], "flipped": said["flipped"]}
    assert training["log_fingerprint"] == fitted["log_fingerprint"]
    assert training["indicator"] == fitted["indicator"]
    code, out, _ = run(capsys, "orient", parity / "oriented", parity / "calibration.csv",
                       "--out", parity / "again")
    assert code == 0 and json.loads(out)["flipped"] is False  # already the right way


@pytest.mark.parametrize(("model", "data", "out", "message"), [
    ("ai-igl", "calibration.csv", "x", "an ai-igl model; orient chooses the direction of a "
                                       "two-action igl or vi-igl model"),
    ("igl", "unlabelled.csv", "x", "reward is known: a 'reward' column, or a 'label' column"),
    ("igl", "calibration.csv", "igl", "--out"),
])
def test_orient_refuses_in_one_line_and_writes_nothing(parity, capsys, model, data, out,
                                                       message):
    before = sorted(p.name for p in parity.iterdir())
    code, _, err = run(capsys, "orient", parity / model, parity / data, "--out", parity / out)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert sorted(p.name for p in parity.iterdir()) == before
