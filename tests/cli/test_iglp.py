"""iglearn fit --algorithm igl-p and evaluate on personalised logs, end to end."""

import json

from iglearn.models.io import load_model

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
    assert 0.3 < summary["negative"] < 0.7
    assert load_model(tmp_path / "model").estimator == "step"
    code, out, _ = run(capsys, "evaluate", tmp_path / "model", log)
    measures = json.loads(out)
    # the importance-weighted value of the three-state reward: the enjoyed topic, +1
    assert code == 0 and measures["greedy_value_ips"] > 0.8 and "indicator" not in measures
    code, out, _ = run(capsys, "evaluate", tmp_path / "model", test)
    assert json.loads(out)["accuracy"] == 1.0


def test_an_option_of_igl_and_ai_igl_is_refused_with_igl_p(tmp_path, capsys):
    code, _, err = run(capsys, "fit", tmp_path / "missing.npz", "--algorithm", "igl-p",
                       "--decoder", "mlp", "--out", tmp_path / "m")
    assert code == 2 and "--decoder is an option of --algorithm igl or ai-igl" in err
