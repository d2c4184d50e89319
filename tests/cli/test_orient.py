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
                                    "agreement": said["agreement"], "flipped": said["flipped"],
                                    "flipped_actions": []}
    assert training["log_fingerprint"] == fitted["log_fingerprint"]
    assert training["indicator"] == fitted["indicator"]
    code, out, _ = run(capsys, "orient", parity / "oriented", parity / "calibration.csv",
                       "--out", parity / "again")
    assert code == 0 and json.loads(out)["flipped"] is False  # already the right way


def test_an_oriented_model_no_longer_warns_that_its_direction_is_open(parity, capsys):
    """evaluate repeats what the fit warned of, but not, once orient has chosen the direction
    from known rewards, the advice to orient it (K = 2) nor an ambiguous sign; it did."""
    code, out, err = run(capsys, "evaluate", parity / "igl", parity / "test.npz")
    assert code == 0 and "K = 2:" in err
    assert any(note.startswith("K = 2:") for note in json.loads(out)["fit_warnings"])
    assert run(capsys, "orient", parity / "igl", parity / "calibration.csv", "--out",
               parity / "turned")[0] == 0
    code, out, err = run(capsys, "evaluate", parity / "turned", parity / "test.npz")
    assert code == 0 and "K = 2" not in err and "ambiguous" not in err and "orient" not in err
    assert not any("K = 2" in note or "ambiguous" in note
                   for note in json.loads(out).get("fit_warnings", []))


@pytest.mark.parametrize(("model", "data", "extra", "message"), [
    ("igl", "calibration.csv", ["--log", "log.npz"],
     "--log: an igl model is oriented by DATA alone"),
    ("igl", "unlabelled.csv", [], "reward is known: a 'reward' column, or a 'label' column"),
    ("igl", "test.npz", ["--out", "igl"], "--out"),
])
def test_orient_refuses_in_one_line_and_writes_nothing(parity, capsys, model, data, extra,
                                                       message):
    before = sorted(p.name for p in parity.iterdir())
    out = ["--out", parity / "x"] if "--out" not in extra else []
    extra = [parity / e if i % 2 else e for i, e in enumerate(extra)]
    code, _, err = run(capsys, "orient", parity / model, parity / data, *out, *extra)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert sorted(p.name for p in parity.iterdir()) == before


def test_orient_turns_each_action_of_an_ai_igl_model_and_refits_its_policy(tmp_path, capsys):
    """A binary BCI (two intents), AI-IGL: each action's decoder is oriented on its own, and
    with --log the policy is fitted again on the training log."""
    from iglearn.envs.bci import BCIEnvironment

    env = BCIEnvironment(n_symbols=2)
    write_table(env.log(1000, seed=0), tmp_path / "log.npz")
    calibration = env.log(30, seed=100)
    write_table(InteractionLog(calibration.context, calibration.action, calibration.probability,
                               calibration.feedback, 2, label=calibration.label),
                tmp_path / "calibration.csv")
    test_x, test_y = env.test_set()
    write_table(InteractionLog(test_x, np.zeros(len(test_x), int), np.full(len(test_x), 0.5),
                               np.zeros((len(test_x), env.feedback_dim), np.float32), 2,
                               label=test_y), tmp_path / "test.npz")
    assert main(["fit", str(tmp_path / "log.npz"), "--out", str(tmp_path / "model"),
                 "--algorithm", "ai-igl"]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "orient", tmp_path / "model", tmp_path / "calibration.csv",
                       "--log", tmp_path / "log.npz", "--out", tmp_path / "oriented")
    assert code == 0
    said = json.loads(out)
    assert said["rows"] == 30 and said["log"] == str(tmp_path / "log.npz")
    assert said["flipped"] == bool(said["flipped_actions"])
    assert accuracy(capsys, tmp_path / "oriented", tmp_path / "test.npz") > 0.95


def test_orienting_settles_the_warnings_about_the_direction_alone():
    from iglearn.learners.batch_igl import action_warning, ambiguity_warning, settled_by_orienting

    assert settled_by_orienting(ambiguity_warning(0.52))
    assert settled_by_orienting("action 3: its decoder calls 48.0% of the action's feedback a "
                                "reward, close to one half, so the sign of its decoded reward "
                                "is ambiguous; log more interactions of it")  # AI-IGL's
    assert not settled_by_orienting(action_warning(0.9, "IGL")[0])


def test_a_direction_chosen_from_too_few_interactions_is_warned_of(parity, capsys, tmp_path):
    """orient on 2 labelled interactions chose a direction, said an agreement of 1.0 and
    nothing else (and evaluate no longer warned that the direction is open): now it warns
    that the choice is not told apart from chance; 30 interactions that agree are not."""
    write_table(parity_log(2, 100, labelled=True), tmp_path / "two.csv")
    for algorithm, warnings in (("igl", 1), ("ai-igl", None)):
        code, out, err = run(capsys, "orient", parity / algorithm, tmp_path / "two.csv",
                             "--out", tmp_path / algorithm)
        assert code == 0 and json.loads(out)["rows"] == 2
        told = [line for line in err.splitlines() if "chosen at random" in line]
        assert told and all(line.startswith("iglearn: warning: orient") for line in told), err
        assert warnings is None or len(told) == warnings
    code, _, err = run(capsys, "orient", parity / "igl", parity / "calibration.csv", "--out",
                       tmp_path / "thirty")
    assert code == 0 and "chosen at random" not in err
