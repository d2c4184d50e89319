"""iglearn fit --algorithm igl-p and evaluate on personalised logs, end to end."""

import json
import math

import numpy as np

from iglearn.data.formats import write_table
from iglearn.learners.iglp import IGLP, PersonalIK
from iglearn.learners.registry import load_model

from ..learners.test_iglp import USERS, swapping_log
from .conftest import FAST, run


def test_fit_and_evaluate_igl_p_on_a_simulated_dsjson_log(tmp_path, capsys):
    log, test = tmp_path / "log.dsjson", tmp_path / "test.npz"
    code, out, _ = run(capsys, "simulate", "personalised", "--samples", "4000", "--out", log,
                       "--test-out", test)
    assert code == 0 and json.loads(out)["independence"] == "personalised"
    assert '"_definitely_bad":true' in log.read_text()
    code, out, err = run(capsys, "fit", log, "--algorithm", "igl-p", "--out",
                         tmp_path / "model", "--estimator", "step", *FAST)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["algorithm"] == "igl-p" and summary["definitely_bad_field"]
    assert summary["identifiability_warnings"] == []  # the simulator plays every action
    assert 0.3 < summary["negative"] < 0.7
    assert load_model(tmp_path / "model").estimator == "step"
    code, out, _ = run(capsys, "evaluate", tmp_path / "model", log)
    measures = json.loads(out)
    # the importance-weighted value of the three-state reward: the enjoyed topic, +1
    assert code == 0 and measures["greedy_value_ips"] > 0.8 and "indicator" not in measures
    code, out, _ = run(capsys, "evaluate", tmp_path / "model", test)
    assert json.loads(out)["accuracy"] == 1.0
    # the three-state decoding over a streamed log: the same sums, block by block
    code, _, err = run(capsys, "convert", log, tmp_path / "log.npz")
    assert code == 0, err
    code, out, err = run(capsys, "evaluate", tmp_path / "model", tmp_path / "log.npz",
                         "--stream", "on")
    assert code == 0, err
    streamed = json.loads(out)
    # the converted copy is not the training log's bytes, and a stream is not sketched: it
    # cannot be told (null), and no in-sample note
    assert measures["in_sample"] is True and streamed["in_sample"] is None
    assert streamed.keys() == measures.keys() - {"note"}
    for key in ("decoded_value", "value_ips", "greedy_value_ips"):
        assert math.isclose(streamed[key], measures[key], rel_tol=1e-6, abs_tol=1e-9), key
    code, _, err = run(capsys, "fit", tmp_path / "log.npz", "--algorithm", "igl-p", "--out",
                       tmp_path / "streamed", "--stream", "on")
    assert code == 2 and "igl-p fits a log in memory" in err and "use --stream off" in err
    code, _, err = run(capsys, "fit", tmp_path / "log.npz", "--algorithm", "igl-p", "--out",
                       tmp_path / "streamed", "--reader", "ray")
    assert code == 2 and "igl-p fits a log in memory" in err and "drop --reader ray" in err
    assert not (tmp_path / "streamed").exists()


def test_an_option_of_igl_and_ai_igl_is_refused_with_igl_p(tmp_path, capsys):
    code, _, err = run(capsys, "fit", tmp_path / "missing.npz", "--algorithm", "igl-p",
                       "--decoder", "mlp", "--out", tmp_path / "m")
    assert code == 2 and "--decoder is an option of --algorithm igl or ai-igl or vi-igl" in err


def test_fit_with_per_user_grounding_saves_a_model_predict_and_evaluate_read(tmp_path, capsys):
    """--users: the folder holds per-user grounding, and the loaded model decides as the one
    fitted in Python on the same log and seed."""
    log = swapping_log()
    write_table(log, tmp_path / "log.npz")
    code, out, err = run(capsys, "fit", tmp_path / "log.npz", "--algorithm", "igl-p",
                         "--users", str(USERS), "--out", tmp_path / "model", "--seed", "0")
    assert code == 0, err
    assert json.loads(out)["settings"]["users"] == USERS
    loaded = load_model(tmp_path / "model")
    assert isinstance(loaded.ik_.net, PersonalIK)
    fitted = IGLP(seed=0, users=USERS).fit(log)
    np.testing.assert_array_equal(loaded.predict(log.context), fitted.predict(log.context))
    code, out, err = run(capsys, "evaluate", tmp_path / "model", tmp_path / "log.npz")
    assert code == 0, err
    # half the users swap words: the decoded value of a per-user model is well above uniform
    assert json.loads(out)["greedy_value_ips"] > 0.6
