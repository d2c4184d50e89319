"""The commands on people's own logs: simulate, fit, evaluate, predict, convert."""

import json
import math
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

from iglearn.cli import main
from iglearn.data.formats import read_log, write_table
from iglearn.data.logs import InteractionLog
from iglearn.learners import BatchIGL
from iglearn.models import io
from iglearn.theory import lemma5_value_lower_bound
from tests.cli.conftest import run
from tests.data.test_frames import user_frame

FAST = ("--max-steps", "60")   # short fits keep the end-to-end runs to seconds


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A skewed-policy digits log, its test contexts and a model fitted on it."""
    folder = tmp_path_factory.mktemp("cli")
    assert main(["simulate", "digits", "--samples", "3000", "--out", str(folder / "log.npz"),
                 "--policy", "skewed", "--seed", "3", "--test-out",
                 str(folder / "test.parquet")]) == 0
    assert main(["fit", str(folder / "log.npz"), "--out", str(folder / "model"), *FAST]) == 0
    return folder


def test_simulate_writes_a_log_with_logged_probabilities(workspace):
    log = read_log(workspace / "log.npz")
    assert len(log) == 3000 and log.n_actions == 10 and log.reward is not None
    assert log.probability.min() >= 0.05 - 1e-9 and log.probability.std() > 0.01


def test_fit_reports_and_evaluate_measures_far_above_chance(workspace, capsys, tmp_path):
    code, out, err = run(capsys, "fit", workspace / "log.npz", "--out", tmp_path / "m",
                         "--seed", "1", *FAST)
    assert code == 0
    summary = json.loads(out)
    for key in ("samples", "n_actions", "indicator", "corrector_flipped", "restarts",
                "identifiability_warnings", "lemma5", "action_explained"):
        assert key in summary
    assert summary["samples"] == 3000 and summary["n_actions"] == 10
    assert summary["action_explained"] < 0.1   # the feedback shows the reward, not the action
    bound = summary["lemma5"]
    # the skewed policy logs probabilities down to 1/(2K): importance weights up to 20, not K
    weight = 1 / read_log(workspace / "log.npz").probability.min()
    assert bound["max_importance_weight"] == pytest.approx(weight) and 10 < weight <= 20
    assert bound["value_lower_bound"] == pytest.approx(lemma5_value_lower_bound(
        summary["indicator"], 3000, 10, bound["iota"], 0.1, weight))
    meta = json.loads((tmp_path / "m" / io.METADATA).read_text())
    assert meta["training"]["samples"] == 3000
    code, out, _ = run(capsys, "evaluate", tmp_path / "m", workspace / "test.parquet")
    assert code == 0 and json.loads(out)["accuracy"] > 0.6   # chance is 0.1
    code, out, _ = run(capsys, "evaluate", tmp_path / "m", workspace / "log.npz")
    measures = json.loads(out)
    assert {"accuracy", "value_ips", "decoded_value", "indicator"} <= set(measures)
    assert measures["value_ips"] > 0.5


def test_feedback_that_shows_the_action_is_warned_and_certifies_nothing(capsys, tmp_path):
    # the simulated BCI's feedback is a response to the action taken: 2021 IGL's decoder
    # reads the action, its indicator is high and its policy plays one action
    code, _, _ = run(capsys, "simulate", "bci", "--samples", "300", "--out",
                     tmp_path / "bci.npz", "--seed", "0")
    assert code == 0
    code, out, err = run(capsys, "fit", tmp_path / "bci.npz", "--out", tmp_path / "m")
    summary = json.loads(out)
    assert code == 0 and summary["action_explained"] > 0.5
    assert any("logged action explains" in note and "--algorithm ai-igl" in note
               for note in summary["identifiability_warnings"])
    # and told on stderr, one line each, as the command's other warnings are
    told = [line for line in err.splitlines() if line.startswith("iglearn: warning: ")]
    assert len(told) == len(summary["identifiability_warnings"])
    assert any("logged action explains" in line for line in told)
    assert summary["lemma5"]["applies"] is False
    assert summary["lemma5"]["value_lower_bound"] is None
    # evaluating the model says its fit's warnings again, in the record and on stderr
    code, out, err = run(capsys, "evaluate", tmp_path / "m", tmp_path / "bci.npz")
    measures = json.loads(out)
    assert code == 0 and measures["fit_warnings"] == summary["identifiability_warnings"]
    assert any(line.startswith("iglearn: warning: the model's fit warned: ") and
               "logged action explains" in line for line in err.splitlines()), err
    assert measures["value_ips_error"] > 0 and len(measures["weight_means"]) == 3


def test_fit_options_reach_the_learner_and_the_model(workspace, capsys, tmp_path):
    code, out, _ = run(capsys, "fit", workspace / "log.npz", "--out", tmp_path / "m",
                       "--objective", "paper", "--lr", "0.05", "--no-corrector", "--epochs", "2",
                       "--restart-threshold", "0.3", "--seed", "2", *FAST)
    assert code == 0
    expected = BatchIGL.paper(corrector=False, restart_threshold=0.3, seed=2)
    settings = json.loads(out)["settings"]
    assert settings["optimisation"] == {**asdict(expected.optimisation), "lr": 0.05,
                                        "epochs": 2, "max_steps": 60}
    assert {k: v for k, v in settings.items() if k != "optimisation"} == {
        k: v for k, v in asdict(expected).items() if k != "optimisation"}
    model = json.loads((tmp_path / "m" / io.METADATA).read_text())
    assert model["training"]["settings"] == settings
    assert model["training"]["objective"] == "paper"
    assert json.loads(out)["restart_threshold"] == 0.3


@pytest.mark.parametrize("mode,shifted,same_unit,rules", [
    ("auto", False, "none", {"context": "auto: unit scale", "feedback": "auto: unit scale"}),
    ("auto", True, "none", {"context": "auto: off scale", "feedback": "auto: off scale"}),
    ("auto", True, "context", {"context": "auto: off scale, one scale",
                               "feedback": "auto: off scale"}),
    ("on", False, "both", {"context": "on, one scale", "feedback": "on, one scale"}),
    ("off", True, "none", "off"),
])
def test_fit_reports_which_blocks_it_standardised(workspace, capsys, tmp_path, mode, shifted,
                                                  same_unit, rules):
    log = read_log(workspace / "log.npz")
    if shifted:  # raw measurements: around 35 with a small spread
        log = type(log)(log.context * 0.05 + 35, log.action, log.probability,
                        log.feedback * 0.05 + 35, log.n_actions)
    write_table(log, tmp_path / "log.npz")
    code, out, err = run(capsys, "fit", tmp_path / "log.npz", "--out", tmp_path / "m",
                         "--standardise", mode, "--same-unit", same_unit, "--epochs", "1",
                         *FAST)
    assert code == 0, err
    assert json.loads(out)["standardisation"] == rules
    record = json.loads((tmp_path / "m" / io.METADATA).read_text())["standardiser"]
    if rules == "off":
        assert record is None
    else:
        assert {"context": record["context_rule"], "feedback": record["feedback_rule"]} == rules


def test_fit_from_each_format_gives_the_same_model(workspace, capsys, tmp_path):
    outputs = []
    for suffix in (".parquet", ".dsjson"):
        assert run(capsys, "convert", workspace / "log.npz", tmp_path / f"l{suffix}")[0] == 0
        code, out, _ = run(capsys, "fit", tmp_path / f"l{suffix}", "--out",
                           tmp_path / f"m{suffix}", *FAST)
        assert code == 0
        outputs.append(json.loads(out)["indicator"])
    reference = json.loads((workspace / "model" / io.METADATA).read_text())
    assert outputs[0] == pytest.approx(reference["training"]["indicator"], abs=1e-6)
    assert outputs[1] == pytest.approx(outputs[0], abs=1e-6)
    dsjson_model = json.loads((tmp_path / "m.dsjson" / io.METADATA).read_text())
    assert dsjson_model["feature_schema"]["context"][:2] == ["x^x0", "x^x1"]
    # contexts in DSJSON are read with the model's feature schema
    code, out, _ = run(capsys, "predict", tmp_path / "m.dsjson", tmp_path / "l.dsjson",
                       "--out", tmp_path / "p.csv")
    assert code == 0 and json.loads(out)["rows"] == 3000


def test_a_parquet_table_in_iglearns_column_names_without_its_metadata_reads_as_csv(
        workspace, capsys, tmp_path):
    """A Parquet table in iglearn's column names (context_0, ..., n_actions) that iglearn did
    not write, so without K in its metadata (pandas' to_parquet of a log's CSV), reads as the
    CSV does: convert takes K from its column n_actions, predict and evaluate from the
    model; it was refused as missing K's metadata."""
    assert run(capsys, "convert", workspace / "log.npz", tmp_path / "l.csv")[0] == 0
    frame = pd.read_csv(tmp_path / "l.csv")
    frame.to_parquet(tmp_path / "l.parquet", index=False)
    code, out, err = run(capsys, "convert", tmp_path / "l.parquet", tmp_path / "o.npz")
    assert code == 0, err
    assert json.loads(out)["n_actions"] == 10 and json.loads(out)["rows"] == 3000
    contexts = frame[[name for name in frame.columns if name.startswith("context_")]]
    contexts.to_parquet(tmp_path / "c.parquet", index=False)
    code, out, err = run(capsys, "predict", workspace / "model", tmp_path / "c.parquet",
                         "--out", tmp_path / "p.csv")
    assert code == 0, err
    assert json.loads(out)["rows"] == 3000
    code, out, err = run(capsys, "evaluate", workspace / "model", tmp_path / "l.parquet")
    assert code == 0, err
    assert json.loads(out)["in_sample"] is True
    code, _, err = run(capsys, "evaluate", workspace / "model", tmp_path / "l.parquet",
                       "--stream", "on")
    assert code == 2 and "a Parquet table iglearn did not write" in err and "convert" in err
    code, _, err = run(capsys, "convert", tmp_path / "c.parquet", tmp_path / "c.npz")
    assert code == 2 and "K is unknown" in err and "--n-actions" in err


def test_contexts_saved_by_numpy_without_k_take_the_models(workspace, capsys, tmp_path):
    """Contexts saved as np.savez(path, context=x, label=y), without n_actions, are read
    with the model's K by predict and evaluate (they were refused: "missing field
    'n_actions'"); convert, which has no model, still asks for it."""
    test = np.load(workspace / "log.npz")
    np.savez(tmp_path / "c.npz", context=test["context"][:200], label=test["label"][:200])
    code, out, err = run(capsys, "predict", workspace / "model", tmp_path / "c.npz", "--out",
                         tmp_path / "p.csv")
    assert code == 0 and json.loads(out)["rows"] == 200, err
    code, out, err = run(capsys, "evaluate", workspace / "model", tmp_path / "c.npz")
    assert code == 0 and json.loads(out)["samples"] == 200 and "accuracy" in out, err
    code, _, err = run(capsys, "convert", tmp_path / "c.npz", tmp_path / "c.csv")
    assert code == 2 and "missing field 'n_actions'" in err


@pytest.mark.parametrize("suffix", [".csv", ".npz", ".parquet"])
def test_predict_writes_actions_and_probabilities(workspace, capsys, tmp_path, suffix):
    out_file = tmp_path / f"p{suffix}"
    code, out, _ = run(capsys, "predict", workspace / "model", workspace / "test.parquet",
                       "--out", out_file)
    assert code == 0
    if suffix == ".csv":
        frame = pd.read_csv(out_file)
    elif suffix == ".npz":
        frame = pd.DataFrame(dict(np.load(out_file, allow_pickle=False)))
    else:
        frame = pd.read_parquet(out_file)
    assert list(frame.columns) == ["action", "probability"] and len(frame) == 539
    assert frame["action"].between(0, 9).all() and frame["probability"].between(0, 1).all()
    assert sum(json.loads(out)["action_counts"]) == 539
    # every action's probability, beside the chosen one's
    every_file = tmp_path / f"every{suffix}"
    code, _, err = run(capsys, "predict", workspace / "model", workspace / "test.parquet",
                       "--out", every_file, "--all-probabilities")
    assert code == 0, err
    if suffix == ".npz":
        every = np.load(every_file)["probabilities"]
    else:
        table = pd.read_csv(every_file) if suffix == ".csv" else pd.read_parquet(every_file)
        names = [f"probability_{a}" for a in range(10)]
        assert list(table.columns) == ["action", "probability", *names]
        every = table[names].to_numpy()
    assert every.shape == (539, 10)
    np.testing.assert_allclose(every.sum(1), 1, atol=1e-6)
    np.testing.assert_array_equal(every.argmax(1), frame["action"])
    np.testing.assert_allclose(every[np.arange(539), frame["action"]], frame["probability"],
                               rtol=1e-6)


def test_sampled_predictions_are_seeded(workspace, capsys, tmp_path):
    for name in ("a", "b"):
        run(capsys, "predict", workspace / "model", workspace / "test.parquet", "--out",
            tmp_path / f"{name}.csv", "--sample", "--seed", "4")
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()


def _other_k(path):
    log = read_log(path)
    write_table(type(log)(context=log.context, action=log.action % 5,
                          probability=log.probability, feedback=log.feedback, n_actions=5,
                          source="x"), path.parent / "k5.npz")
    return path.parent / "k5.npz"


def _other_dim(path):
    log = read_log(path)
    write_table(type(log)(context=log.context[:, :10], action=log.action,
                          probability=log.probability, feedback=log.feedback, n_actions=10,
                          source="x"), path.parent / "d10.npz")
    return path.parent / "d10.npz"


def _contexts_only(path):
    from iglearn.data.contexts import ContextSet

    log = read_log(path)
    write_table(ContextSet(log.context, 10, source="x"), path.parent / "contexts.npz")
    return path.parent / "contexts.npz"


@pytest.mark.parametrize("command, make, words", [
    ("evaluate", _other_k, ["k5.npz", "n_actions is 5", "K = 10"]),
    ("predict", _other_k, ["k5.npz", "n_actions is 5", "K = 10"]),
    ("evaluate", _other_dim, ["d10.npz", "'context'", "dimension 10", "expects 64"]),
    ("predict", _other_dim, ["d10.npz", "'context'", "dimension 10", "expects 64"]),
    ("fit", _contexts_only, ["contexts.npz", "contexts only"]),
])
def test_data_that_does_not_fit_the_model(workspace, capsys, tmp_path, command, make, words):
    data = make(workspace / "log.npz")
    out = tmp_path / "out.csv"
    argv = {"evaluate": ["evaluate", workspace / "model", data],
            "predict": ["predict", workspace / "model", data, "--out", out],
            "fit": ["fit", data, "--out", tmp_path / "m", *FAST]}[command]
    code, stdout, err = run(capsys, *argv)
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1
    for word in words:
        assert word in err, err
    assert not out.exists() and not (tmp_path / "m").exists()


def test_missing_or_corrupt_model_folder(workspace, capsys, tmp_path):
    code, _, err = run(capsys, "evaluate", tmp_path / "absent", workspace / "test.parquet")
    assert code == 2 and "no such model folder" in err
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / io.METADATA).write_text("{")
    code, _, err = run(capsys, "predict", tmp_path / "broken", workspace / "test.parquet",
                       "--out", tmp_path / "p.csv")
    assert code == 2 and "model.json" in err and "not valid JSON" in err
    assert not (tmp_path / "p.csv").exists()


def test_unwritable_outputs_create_nothing(workspace, capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cases = [
        (["fit", workspace / "log.npz", "--out", blocker / "m"], "does not exist"),
        (["fit", workspace / "log.npz", "--out", blocker], "is a file, not a model folder"),
        # a folder named as an archive (it was written as a folder named model.tar.gz)
        (["fit", workspace / "log.npz", "--out", tmp_path / "model.tar.gz"],
         "names a model archive (.tar.gz), but a model is written as a folder; write it to a "
         "folder (model, say), then make the archive with 'iglearn pack "),
        (["predict", workspace / "model", workspace / "test.parquet", "--out",
          tmp_path / "no" / "p.csv"], "does not exist"),
        (["predict", workspace / "model", workspace / "test.parquet", "--out",
          tmp_path / "p.txt"], "unknown file extension"),
        (["simulate", "digits", "--samples", "10", "--out", tmp_path / "no" / "l.npz"],
         "does not exist"),
        (["simulate", "digits", "--samples", "10", "--out", tmp_path / "l.json"],
         "unknown file extension"),
    ]
    for argv, words in cases:
        code, _, err = run(capsys, *argv)
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_lemma5_bound():
    assert lemma5_value_lower_bound(0.2, 100, 10, 1.0, 0.1) is None  # 0.2 < 0.1 + 10*0.0707
    bound = lemma5_value_lower_bound(0.8, 100_000, 10, 2.0, 0.1)
    assert bound == pytest.approx(0.8 - 10 * math.sqrt(2.0 / 200_000) + 0.1)
    with pytest.raises(ValueError):
        lemma5_value_lower_bound(0.5, 0, 10, 1.0, 0.1)


COLUMN_OPTIONS = ("--context", "age,clicks", "--feedback", "emg_*", "--action", "arm",
                  "--probability", "p", "--n-actions", "3")


def replaced(option: str, value: str) -> list[str]:
    """COLUMN_OPTIONS with ``option`` given ``value`` instead."""
    options = list(COLUMN_OPTIONS)
    options[options.index(option) + 1] = value
    return options


def test_a_csv_with_its_own_column_names_fits_and_the_model_keeps_the_mapping(capsys,
                                                                                tmp_path):
    frame, best = user_frame(600)
    frame.to_csv(tmp_path / "log.csv", index=False)  # no n_actions column: --n-actions
    code, _, err = run(capsys, "fit", tmp_path / "log.csv", "--out", tmp_path / "model",
                       *COLUMN_OPTIONS, *FAST)
    assert code == 0, err
    schema = json.loads((tmp_path / "model" / io.METADATA).read_text())["feature_schema"]
    assert schema["columns"]["context"] == ["age", "clicks"]
    assert schema["columns"]["feedback"] == ["emg_0", "emg_1", "emg_2", "emg_10"]
    assert schema["columns"]["n_actions"] == 3 and schema["columns"]["action"] == "arm"
    test, test_best = user_frame(300, seed=1)
    test[["clicks", "age"]].to_csv(tmp_path / "contexts.csv", index=False)
    code, _, err = run(capsys, "predict", tmp_path / "model", tmp_path / "contexts.csv",
                       "--out", tmp_path / "p.csv")
    assert code == 0, err
    predicted = pd.read_csv(tmp_path / "p.csv")["action"].to_numpy()
    assert len(predicted) == 300 and (predicted == test_best).mean() > 0.5  # chance: 1/3
    code, _, err = run(capsys, "evaluate", tmp_path / "model", tmp_path / "log.csv")
    assert code == 0, err
    # the whole log through the model's mapping, a column left unread with --ignore
    frame.assign(user=7).to_csv(tmp_path / "users.csv", index=False)
    code, _, err = run(capsys, "predict", tmp_path / "model", tmp_path / "users.csv",
                       "--ignore", "user", "--out", tmp_path / "q.csv")
    assert code == 0, err
    assert len(pd.read_csv(tmp_path / "q.csv")) == 600
    test[["age"]].to_csv(tmp_path / "age.csv", index=False)
    code, _, err = run(capsys, "predict", tmp_path / "model", tmp_path / "age.csv", "--out",
                       tmp_path / "r.csv")
    assert code == 2 and "no column 'clicks', which the column mapping reads as context" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r.csv").exists()


def test_a_folder_of_shards_in_the_users_own_names_fits_and_predicts(capsys, tmp_path):
    """A folder of Parquet files in the user's column names (a Spark job's output) reads
    through the column options as one table; predicting reads the contexts only, so a missing
    feedback value is no error there (it was, with a fix predict has no option for); shards
    whose columns differ are refused naming the shard."""
    frame, best = user_frame(900)
    shards = tmp_path / "shards"
    shards.mkdir()
    for i in range(3):
        frame.iloc[300 * i:300 * (i + 1)].to_parquet(shards / f"part-{i}.parquet")
    code, _, err = run(capsys, "fit", shards, "--out", tmp_path / "model", *COLUMN_OPTIONS,
                       *FAST)
    assert code == 0, err
    holed = frame.copy()
    holed.loc[317, "emg_2"] = np.nan
    holed.iloc[300:600].to_parquet(shards / "part-1.parquet")
    holed.to_csv(tmp_path / "holed.csv", index=False)
    for data, out in ((shards, "p.csv"), (tmp_path / "holed.csv", "q.csv")):
        code, _, err = run(capsys, "predict", tmp_path / "model", data, "--out", tmp_path / out)
        assert code == 0, err
    predicted = pd.read_csv(tmp_path / "p.csv")["action"].to_numpy()
    assert len(predicted) == 900 and (predicted == best).mean() > 0.5  # chance: 1/3
    np.testing.assert_array_equal(pd.read_csv(tmp_path / "q.csv")["action"], predicted)
    code, _, err = run(capsys, "evaluate", tmp_path / "model", shards)  # evaluate reads it
    assert code == 2 and "column 'emg_2' holds a missing value at row 317" in err
    frame.iloc[600:].drop(columns="clicks").to_parquet(shards / "part-2.parquet")
    code, _, err = run(capsys, "fit", shards, "--out", tmp_path / "other", *COLUMN_OPTIONS)
    assert code == 2 and "part-2.parquet: lacks the column 'clicks', unlike the folder's " \
                         "first shard part-0.parquet" in err, err


def test_shards_in_the_users_own_names_may_order_their_columns_differently(capsys, tmp_path):
    """The column options read columns by name, yet a folder whose shards (written by
    different jobs) ordered the same columns differently was refused as "holds the columns
    in another order"; each shard is now read in the first shard's order."""
    frame, _ = user_frame(600)
    shards = tmp_path / "shards"
    shards.mkdir()
    frame.iloc[:300].to_parquet(shards / "part-0.parquet")
    frame.iloc[300:, ::-1].to_parquet(shards / "part-1.parquet")
    code, _, err = run(capsys, "fit", shards, "--out", tmp_path / "model", *COLUMN_OPTIONS,
                       *FAST)
    assert code == 0, err
    frame.to_parquet(tmp_path / "whole.parquet")
    code, _, err = run(capsys, "fit", tmp_path / "whole.parquet", "--out", tmp_path / "whole",
                       *COLUMN_OPTIONS, *FAST)
    assert code == 0, err
    for model, out_file in (("model", "a.csv"), ("whole", "b.csv")):  # the same fit
        assert run(capsys, "predict", tmp_path / model, tmp_path / "whole.parquet", "--out",
                   tmp_path / out_file)[0] == 0
    np.testing.assert_array_equal(pd.read_csv(tmp_path / "a.csv")["action"],
                                  pd.read_csv(tmp_path / "b.csv")["action"])


def test_named_actions_are_read_by_their_names_and_predicted_as_them(capsys, tmp_path):
    """A CSV whose action and label columns write the actions as words fits with --actions
    (a name that holds a comma quoted, as the error's suggestion writes it for the shell);
    the model keeps the names, ``predict`` writes them (CSV and Parquet) and ``evaluate``
    reads the labels by them."""
    frame, best = user_frame(600)
    names = ["left", "right, far", "middle"]
    frame = frame.assign(arm=np.array(names)[frame["arm"]], correct=np.array(names)[best])
    frame.to_csv(tmp_path / "log.csv", index=False)
    options = [*COLUMN_OPTIONS[:-2], "--label", "correct"]
    code, _, err = run(capsys, "fit", tmp_path / "log.csv", "--out", tmp_path / "model",
                       *options, *FAST)
    suggested = """'left,middle,"right, far"'"""
    assert code == 2 and f"--actions {suggested}" in err
    code, _, err = run(capsys, "fit", tmp_path / "log.csv", "--out", tmp_path / "model",
                       *options, "--actions", "left,middle", *FAST)
    assert code == 2 and "none of the actions ('left', 'middle')" in err
    code, _, err = run(capsys, "fit", tmp_path / "log.csv", "--out", tmp_path / "model",
                       *options, "--actions", 'left,"right, far",middle', *FAST)
    assert code == 0, err
    schema = json.loads((tmp_path / "model" / io.METADATA).read_text())["feature_schema"]
    assert schema["columns"]["actions"] == names
    for suffix in (".csv", ".parquet"):
        code, out, err = run(capsys, "predict", tmp_path / "model", tmp_path / "log.csv",
                             "--out", tmp_path / f"p{suffix}")
        assert code == 0, err
        assert json.loads(out)["actions"] == names
        read = pd.read_csv if suffix == ".csv" else pd.read_parquet
        predicted = read(tmp_path / f"p{suffix}")["action"]
        assert set(predicted) <= set(names)
        assert (predicted.map(names.index) == best).mean() > 0.5  # chance: 1/3
    code, out, err = run(capsys, "evaluate", tmp_path / "model", tmp_path / "log.csv")
    assert code == 0, err
    accuracy = json.loads(out)["accuracy"]
    assert accuracy > 0.5
    # the model's names in another order are its names: read by name, not by position
    code, out, err = run(capsys, "evaluate", tmp_path / "model", tmp_path / "log.csv",
                         "--actions", 'middle,left,"right, far"')
    assert code == 0 and json.loads(out)["accuracy"] == accuracy, err
    code, _, err = run(capsys, "evaluate", tmp_path / "model", tmp_path / "log.csv",
                       "--actions", 'middle,"right, far",up')
    assert code == 2 and "actions names the model's action 'middle' at position 1" in err


def test_the_models_columns_given_in_another_order_are_read_by_name(capsys, tmp_path):
    """--context naming the model's columns in another order reads them in the model's
    order (it read each column as another: accuracy near chance); new names stand for the
    model's by position, and a model's name at another position among them is refused."""
    frame, _ = user_frame(600)
    frame.to_csv(tmp_path / "log.csv", index=False)
    code, _, err = run(capsys, "fit", tmp_path / "log.csv", "--out", tmp_path / "model",
                       *COLUMN_OPTIONS, *FAST)
    assert code == 0, err
    test, best = user_frame(300, seed=1)
    test.assign(label=best).to_csv(tmp_path / "test.csv", index=False)
    test.assign(label=best).rename(columns={"age": "years"}).to_csv(tmp_path / "renamed.csv",
                                                                    index=False)
    measured = []
    for data, context in (("test.csv", None), ("test.csv", "clicks,age"),
                          ("renamed.csv", "years,clicks")):
        given = () if context is None else ("--context", context)
        code, out, err = run(capsys, "evaluate", tmp_path / "model", tmp_path / data, *given)
        assert code == 0, err
        measured.append(json.loads(out)["accuracy"])
        code, out, err = run(capsys, "predict", tmp_path / "model", tmp_path / data, *given,
                             "--out", tmp_path / f"{len(measured)}.csv")
        assert code == 0, err
    assert measured[0] > 0.5 and measured[1] == measured[0] == measured[2]
    predicted = [pd.read_csv(tmp_path / f"{i}.csv")["action"] for i in (1, 2, 3)]
    assert (predicted[0] == predicted[1]).all() and (predicted[0] == predicted[2]).all()
    code, _, err = run(capsys, "evaluate", tmp_path / "model", tmp_path / "renamed.csv",
                       "--context", "clicks,years")
    assert code == 2 and ("context names the model's context column 'clicks' at position 1, "
                          "but the model reads it at 2 (age, clicks)") in err


def test_convert_reads_a_mapped_csv_and_keeps_the_mapping(capsys, tmp_path):
    frame, _ = user_frame(50)
    frame.assign(user=7).to_csv(tmp_path / "log.csv", index=False)
    code, _, err = run(capsys, "convert", tmp_path / "log.csv", tmp_path / "log.parquet",
                       *COLUMN_OPTIONS, "--ignore", "user")
    assert code == 0, err
    log = read_log(tmp_path / "log.parquet")
    assert log.schema is not None and log.schema.columns is not None
    assert log.schema.columns.context == ("age", "clicks") and log.context_dim == 2
    np.testing.assert_allclose(log.feedback[:, 3], frame["emg_10"], rtol=1e-6)


def test_bad_column_options_are_one_line(capsys, tmp_path, small):
    frame, _ = user_frame(50)
    frame.to_csv(tmp_path / "log.csv", index=False)
    twice = tmp_path / "twice.csv"
    twice.write_text("age,age,arm,p,emg_0\n1,2,0,0.5,1\n")
    tab = tmp_path / "log.tsv"
    frame.to_csv(tab, index=False, sep="\t")
    cases = [
        ([tmp_path / "log.csv", *COLUMN_OPTIONS[:-2]], "K is unknown"),
        ([tmp_path / "log.csv", *replaced("--context", "age,height")],
         "no column 'height'"),
        ([tmp_path / "log.csv", *replaced("--context", "age,arm")],
         "column 'arm' is read by both context and action"),
        ([tmp_path / "log.csv", *replaced("--context", "age")],
         "column 'clicks' is read by no field"),
        ([tmp_path / "log.csv", *replaced("--feedback", "eeg_*")],
         "no column starts with 'eeg_'"),
        ([twice, *COLUMN_OPTIONS], "2 columns are named 'age'"),
        # argparse would keep the last silently
        ([tmp_path / "log.csv", *COLUMN_OPTIONS, "--context", "clicks"],
         "argument --context: given twice; give it once, its values comma-separated (a,b)"),
        ([small / "log.npz", "--action", "arm"],
         "reads .csv and .parquet files and folders of .parquet shards only"),
        # K alone: said as such (it called --n-actions "a column mapping")
        ([small / "log.npz", "--n-actions", "10"],
         "log.npz: --n-actions (n_actions) gives K to a .csv or .parquet table that has no "
         "column 'n_actions'; a .npz file holds K itself: drop --n-actions"),
        # the file's own problem first: a mapping would not help it
        ([tab, *COLUMN_OPTIONS], "unknown file extension '.tsv'; use one of .npz, .parquet, "
                                 ".csv, .dsjson (a tab- or semicolon-separated table reads as "
                                 ".csv: rename it)"),
        ([tmp_path / "gone.npz", "--action", "arm"], "gone.npz: no such file"),
    ]
    for argv, words in cases:
        code, _, err = run(capsys, "fit", *argv, "--out", tmp_path / "m")
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "m").exists()


def test_a_word_in_a_csv_action_column_is_named_at_its_line_with_the_fix(capsys, tmp_path):
    """A word among the action indices of a CSV file names its line (the header is line 1)
    and says to correct the row; a column of words names its first line and asks for the
    names in the order of their indices. It named the first row's valid index and suggested
    --actions with the indices and the word, or the words sorted as if that were their
    order."""
    frame, _ = user_frame(50)
    arm = frame["arm"].astype(object)
    arm.iloc[7] = "two"
    frame.assign(arm=arm).to_csv(tmp_path / "stray.csv", index=False)
    code, _, err = run(capsys, "fit", tmp_path / "stray.csv", "--out", tmp_path / "m",
                       *COLUMN_OPTIONS)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "stray.csv: column 'arm' holds a word among action indices ('two' at line 9); " \
           "correct or remove the rows that hold words, line 9 (1 row)" in err, err
    assert "--actions 0" not in err
    words = np.array(["one", "two", "three"])[frame["arm"]]
    frame.assign(arm=words).to_csv(tmp_path / "words.csv", index=False)
    code, _, err = run(capsys, "fit", tmp_path / "words.csv", "--out", tmp_path / "m",
                       *COLUMN_OPTIONS)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"names the actions in words ('{words[0]}' at line 2)" in err, err
    assert "give the names in the order of their indices" in err
    assert "--actions one,three,two, sorted here: reorder them so that the first is " \
           "action 0" in err
    assert not (tmp_path / "m").exists()


def test_evaluate_on_the_training_log_says_it_is_in_sample(workspace, capsys, tmp_path):
    code, out, _ = run(capsys, "evaluate", workspace / "model", workspace / "log.npz")
    assert code == 0
    measures = json.loads(out)
    assert measures["in_sample"] is True and measures["note"].startswith(
        "the data are rows of the log the model was fitted on (all of it or a part): these "
        "measures are in-sample")
    copied = tmp_path / "same.npz"   # the same bytes under another name
    copied.write_bytes((workspace / "log.npz").read_bytes())
    code, out, _ = run(capsys, "evaluate", workspace / "model", copied)
    assert code == 0 and json.loads(out)["in_sample"] is True
    # the same interactions saved again in another format and order: in sample too (it said
    # false, which asserts held-out data)
    log = read_log(workspace / "log.npz")
    order = np.random.default_rng(0).permutation(len(log))
    shuffled = InteractionLog(log.context[order], log.action[order], log.probability[order],
                              log.feedback[order], log.n_actions, reward=log.reward[order],
                              label=log.label[order])
    write_table(shuffled, tmp_path / "shuffled.parquet")
    code, out, _ = run(capsys, "evaluate", workspace / "model", tmp_path / "shuffled.parquet")
    assert code == 0 and json.loads(out)["in_sample"] is True
    for data in (workspace / "test.parquet", tmp_path / "other.npz"):
        if data.suffix == ".npz":   # another log of the same size and shape
            assert run(capsys, "simulate", "digits", "--samples", "3000", "--out", data,
                       "--policy", "skewed", "--seed", "4")[0] == 0
            assert data.stat().st_size == (workspace / "log.npz").stat().st_size
        code, out, _ = run(capsys, "evaluate", workspace / "model", data)
        assert code == 0
        measures = json.loads(out)
        assert measures["in_sample"] is False and "note" not in measures


def test_evaluate_on_part_of_the_training_log_says_how_much(workspace, capsys, tmp_path):
    """Rows of the training log only (a fifth of it, reordered) are in sample; half training
    rows and half new ones are not, with the share of training rows (estimated from the
    fit's row sketch) and a note saying the measures mix the two; new rows share none."""
    log = read_log(workspace / "log.npz")
    assert run(capsys, "simulate", "digits", "--samples", "600", "--out", tmp_path / "new.npz",
               "--seed", "11")[0] == 0
    new = read_log(tmp_path / "new.npz")
    part = log.subset(np.random.default_rng(0).permutation(len(log))[:600])
    mixed = InteractionLog(*(np.concatenate([getattr(part, f)[:300], getattr(new, f)[:300]])
                             for f in ("context", "action", "probability", "feedback")),
                           log.n_actions)
    for name, data, in_sample in (("part", part, True), ("mixed", mixed, False)):
        write_table(data, tmp_path / f"{name}.npz")
        code, out, _ = run(capsys, "evaluate", workspace / "model", tmp_path / f"{name}.npz")
        assert code == 0
        measures = json.loads(out)
        assert measures["in_sample"] is in_sample, name
        if in_sample:
            assert measures["training_rows_share"] == 1.0 and "in-sample" in measures["note"]
        else:
            assert 0.3 < measures["training_rows_share"] < 0.7
            assert measures["note"].startswith(f"about {measures['training_rows_share']:.0%} "
                                               f"of these rows are rows of the log the model "
                                               f"was fitted on")


def test_evaluate_on_the_training_logs_contexts_with_labels_says_it_is_in_sample(
        workspace, capsys, tmp_path):
    """The training log's contexts as a labelled context set (no action or feedback) are in
    sample (it said false); half of them among new contexts are told as a share."""
    from iglearn.data.contexts import ContextSet
    from iglearn.data.formats import read_contexts

    log = read_log(workspace / "log.npz")
    new = read_contexts(workspace / "test.parquet")
    for name, context, label, in_sample in (
            ("same", log.context[::-1], log.label[::-1], True),
            ("mixed", np.concatenate([log.context[:300], new.context[:300]]),
             np.concatenate([log.label[:300], new.label[:300]]), False)):
        write_table(ContextSet(context, log.n_actions, label), tmp_path / f"{name}.npz")
        code, out, err = run(capsys, "evaluate", workspace / "model", tmp_path / f"{name}.npz")
        assert code == 0, err
        measures = json.loads(out)
        assert measures["in_sample"] is in_sample and "accuracy" in measures, name
        if in_sample:
            assert measures["note"].startswith("the data are contexts of the log the "
                                               "model was fitted on (all of it or a part): "
                                               "these measures are in-sample")
        else:
            assert 0.3 < measures["training_rows_share"] < 0.7
            assert " of these contexts are contexts of the log" in measures["note"]


def test_evaluate_with_a_model_that_does_not_name_its_log_says_null(workspace, capsys,
                                                                    tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    for name in (io.WEIGHTS, io.METADATA):
        (model / name).write_bytes((workspace / "model" / name).read_bytes())
    meta = json.loads((model / io.METADATA).read_text())
    del meta["training"]["log_fingerprint"], meta["training"]["rows_fingerprint"]
    del meta["training"]["rows_sketch"]
    (model / io.METADATA).write_text(json.dumps(meta))
    code, out, _ = run(capsys, "evaluate", model, workspace / "log.npz")
    assert code == 0 and json.loads(out)["in_sample"] is None


def test_fit_names_the_columns_it_scaled_by_their_quartiles(capsys, tmp_path):
    """Dwell times with a tab left open in a few rows: the summary names the feedback
    columns whose median and quartiles scaled them, by the table's own names; a log without
    such values has no such line."""
    rng = np.random.default_rng(0)
    n = 600
    best, arm = rng.integers(0, 3, n), rng.integers(0, 3, n)
    dwell = 2000 + 3000 * (arm == best)[:, None] + rng.normal(0, 1000, (n, 2))
    clean = pd.DataFrame({"age": best + rng.normal(0, 0.2, n), "arm": arm, "p": 1 / 3,
                          "dwell_ms": dwell[:, 0], "scroll_ms": dwell[:, 1]})
    far = clean.copy()
    far.loc[::97, "scroll_ms"] = 3.6e6  # an hour
    options = ("--context", "age", "--feedback", "dwell_ms,scroll_ms", "--action", "arm",
               "--probability", "p", "--n-actions", "3", *FAST)
    for name, frame, expected in (("far", far, {"feedback": ["scroll_ms"]}),
                                  ("clean", clean, None)):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        code, out, err = run(capsys, "fit", tmp_path / f"{name}.csv", "--out",
                             tmp_path / name, *options)
        assert code == 0, err
        assert json.loads(out).get("outlying_columns") == expected
        record = json.loads((tmp_path / name / io.METADATA).read_text())["standardiser"]
        assert record["feedback_outlying"] == ([1] if expected else [])


def test_fit_and_evaluate_drop_rows_with_missing_values_only_when_told(capsys, tmp_path):
    """A CSV log with empty cells is refused, naming the line, unless ``--missing drop``:
    then the rows are left out, stderr names their lines, and the fit is the fit of the log
    without them. predict has no such option (it answers every row), and the model's mapping
    refuses such rows."""
    rng = np.random.default_rng(0)
    n = 300
    best, arm = rng.integers(0, 3, n), rng.integers(0, 3, n)
    frame = pd.DataFrame({"age": best + rng.normal(0, 0.2, n), "arm": arm, "p": 1 / 3,
                          "dwell_ms": 2000 + 3000 * (arm == best) + rng.normal(0, 500, n)})
    holes = frame.copy()
    holes.loc[[4, 150], "dwell_ms"] = np.nan
    holes.loc[7, "age"] = np.nan
    holes.to_csv(tmp_path / "holes.csv", index=False)
    frame.drop(index=[4, 7, 150]).to_csv(tmp_path / "complete.csv", index=False)
    options = ("--context", "age", "--feedback", "dwell_ms", "--action", "arm",
               "--probability", "p", "--n-actions", "3", *FAST)
    code, _, err = run(capsys, "fit", tmp_path / "holes.csv", "--out", tmp_path / "no",
                       *options)
    assert code == 2 and "column 'age' holds a missing value at line 9;" in err
    assert not (tmp_path / "no").exists()
    code, out, err = run(capsys, "fit", tmp_path / "holes.csv", "--out", tmp_path / "dropped",
                         *options, "--missing", "drop")
    assert code == 0, err
    assert "dropped lines 6, 9, 152 (3 rows) with a missing value" in err
    assert json.loads(out)["samples"] == n - 3
    code, out, err = run(capsys, "fit", tmp_path / "complete.csv", "--out",
                         tmp_path / "complete", *options)
    assert code == 0, err
    measured = []
    for name in ("dropped", "complete"):
        code, out, err = run(capsys, "evaluate", tmp_path / name, tmp_path / "complete.csv")
        assert code == 0, err
        measured.append({key: value for key, value in json.loads(out).items()
                         if key not in ("model", "in_sample", "note")})
    assert measured[0] == measured[1]  # the same rows, in the same order: the same fit
    code, _, err = run(capsys, "evaluate", tmp_path / "dropped", tmp_path / "holes.csv")
    assert code == 2 and "at line 9; remove or impute" in err
    code, out, err = run(capsys, "evaluate", tmp_path / "dropped", tmp_path / "holes.csv",
                         "--missing", "drop")
    assert code == 0 and json.loads(out)["samples"] == n - 3, err
    code, _, err = run(capsys, "predict", tmp_path / "dropped", tmp_path / "holes.csv",
                       "--out", tmp_path / "p.csv", "--missing", "drop")
    assert code == 2 and "--missing" in err
    record = json.loads((tmp_path / "dropped" / io.METADATA).read_text())
    assert "missing" not in record["feature_schema"]["columns"]
    # a partly labelled log: no fit reads the label, so ignoring it is the fix
    frame.assign(truth=np.where(np.arange(n) < 10, best, np.nan)).to_csv(
        tmp_path / "labelled.csv", index=False)
    code, _, err = run(capsys, "fit", tmp_path / "labelled.csv", "--out", tmp_path / "l",
                       *options, "--label", "truth")
    assert code == 2 and err == ("iglearn: error: " + str(tmp_path / "labelled.csv") + ": "
                                 "column 'truth' holds a missing value at line 12; to "
                                 "evaluate, read the labelled rows only (missing='drop', "
                                 "--missing drop); to fit, which reads no label, leave the "
                                 "column unread (ignore=['truth'], not as label; --ignore "
                                 "truth without --label)\n")
    code, _, err = run(capsys, "fit", tmp_path / "labelled.csv", "--out", tmp_path / "l",
                       *options, "--ignore", "truth")
    assert code == 0, err
    # a column named label is read as the label unless ignored, and the fix works for it
    # too (it was refused as "read as label and ignored"); evaluate reads it again
    frame.assign(label=np.where(np.arange(n) < 100, best, np.nan)).to_csv(
        tmp_path / "partly.csv", index=False)
    code, _, err = run(capsys, "fit", tmp_path / "partly.csv", "--out", tmp_path / "m",
                       *options)
    assert code == 2 and "column 'label' holds a missing value at line 102" in err
    code, _, err = run(capsys, "fit", tmp_path / "partly.csv", "--out", tmp_path / "m",
                       *options, "--ignore", "label")
    assert code == 0, err
    code, _, err = run(capsys, "evaluate", tmp_path / "m", tmp_path / "partly.csv")
    assert code == 2 and "column 'label' holds a missing value at line 102" in err
    code, out, err = run(capsys, "evaluate", tmp_path / "m", tmp_path / "partly.csv",
                         "--missing", "drop")
    assert code == 0, err
    measures = json.loads(out)
    assert measures["samples"] == 100 and 0 <= measures["accuracy"] <= 1
    code, out, err = run(capsys, "predict", tmp_path / "m", tmp_path / "partly.csv", "--out",
                         tmp_path / "all.csv")
    assert code == 0 and len(pd.read_csv(tmp_path / "all.csv")) == n, err


def test_evaluate_reads_a_column_the_model_ignored_when_told_to(capsys, tmp_path):
    """A model fitted with --ignore liked (a true reward column no fit reads) evaluates on a
    table's liked column given --reward liked: the field given wins over the model's ignore
    list, on the command line and in Python; both at once in one mapping is still refused."""
    from iglearn.data.contexts import ContextSet
    from iglearn.learners.registry import load_model

    frame, best = user_frame(300)
    frame = frame.assign(liked=(frame["arm"] == best).astype(float), user_id=7, truth=best)
    frame.to_csv(tmp_path / "log.csv", index=False)
    code, _, err = run(capsys, "fit", tmp_path / "log.csv", "--out", tmp_path / "m",
                       *COLUMN_OPTIONS, "--ignore", "user_id,liked", "--label", "truth", *FAST)
    assert code == 0, err
    code, out, err = run(capsys, "evaluate", tmp_path / "m", tmp_path / "log.csv",
                         "--reward", "liked")
    assert code == 0, err
    assert 0 <= json.loads(out)["value_ips"] <= 3
    model = load_model(tmp_path / "m")
    contexts = ContextSet.from_frame(frame.drop(columns=["truth"]), schema=model.schema_,
                                     label="liked")
    np.testing.assert_array_equal(contexts.label, frame["liked"].astype(int))
    code, _, err = run(capsys, "evaluate", tmp_path / "m", tmp_path / "log.csv",
                       "--reward", "liked", "--ignore", "liked")
    assert code == 2 and "column 'liked' is read as reward and ignored" in err


def test_a_model_on_a_custom_module_says_the_command_line_does_not_load_it(workspace, capsys,
                                                                           tmp_path):
    """The message named Python calls only; a command-line user is told that the command line
    imports no factory."""
    from iglearn.learners import Optimisation
    from tests.models.test_custom import two_layer

    log = read_log(workspace / "log.npz")
    learner = BatchIGL(policy=two_layer, optimisation=Optimisation(max_steps=20),
                       max_restarts=0, seed=0).fit(log)
    learner.save(tmp_path / "custom")
    code, _, err = run(capsys, "predict", tmp_path / "custom", workspace / "log.npz", "--out",
                       tmp_path / "p.csv")
    assert code == 2 and "in Python (the command line imports no factory)" in err, err
    assert not (tmp_path / "p.csv").exists()


def test_the_fit_options_given_again_to_predict_read_as_the_model_reads(capsys, tmp_path):
    """The column options a model was fitted with, prefixes and an ignore prefix included,
    given again to predict (a prefix before a name was refused as a name at another
    position), and a table of the contexts alone (an ignore prefix matching nothing was
    refused); a missing label or feedback value is no concern of a prediction, in Python
    too."""
    frame, _ = user_frame(600)
    frame = frame.assign(score=1.5, truth=np.nan)
    frame.to_csv(tmp_path / "log.csv", index=False)
    options = ("--context", "emg_*,age", "--feedback", "clicks", "--action", "arm",
               "--probability", "p", "--n-actions", "3", "--ignore", "sc*,truth")
    code, _, err = run(capsys, "fit", tmp_path / "log.csv", "--out", tmp_path / "model",
                       *options, *FAST)
    assert code == 0, err
    outputs = []
    for data, given in ((tmp_path / "log.csv", ()), (tmp_path / "log.csv", options[:2])):
        outputs.append(tmp_path / f"p{len(outputs)}.csv")
        code, _, err = run(capsys, "predict", tmp_path / "model", data, *given, "--out",
                           outputs[-1])
        assert code == 0, err
    frame[["age", "emg_0", "emg_1", "emg_2", "emg_10"]].to_csv(tmp_path / "contexts.csv",
                                                                index=False)
    outputs.append(tmp_path / "p2.csv")
    code, _, err = run(capsys, "predict", tmp_path / "model", tmp_path / "contexts.csv",
                       "--out", outputs[-1])
    assert code == 0, err
    first = pd.read_csv(outputs[0])["action"]
    for path in outputs[1:]:
        assert (pd.read_csv(path)["action"] == first).all()
    from iglearn.learners.registry import load_model

    model = load_model(tmp_path / "model")
    np.testing.assert_array_equal(model.predict(frame.assign(label=np.nan)), first)


def _eeg_model(tmp_path, capsys) -> tuple[pd.DataFrame, np.random.Generator]:
    """A model fitted (into ``model``) on 400 interactions of raw EEG-like contexts read by
    their own column names from ``eeg.csv``; the log and the generator that drew it."""
    rng = np.random.default_rng(0)
    n = 400
    eeg = 37 + rng.normal(0, 0.5, (n, 3))
    frame = pd.DataFrame({**{f"eeg_{i}": eeg[:, i] for i in range(3)},
                          "chosen": rng.integers(0, 3, n), "prop": 1 / 3,
                          "fb_rt": rng.normal(800, 100, n)})
    frame.to_csv(tmp_path / "eeg.csv", index=False)
    code, _, err = run(capsys, "fit", tmp_path / "eeg.csv", "--out", tmp_path / "model",
                       "--context", "eeg_*", "--feedback", "fb_*", "--action", "chosen",
                       "--probability", "prop", "--n-actions", 3, *FAST)
    assert code == 0, err
    return frame, rng


def test_predict_warns_of_a_drifted_column_by_its_name_and_the_file(tmp_path, capsys):
    frame, rng = _eeg_model(tmp_path, capsys)
    frame["eeg_1"] *= 1000  # sent in another unit
    frame.to_csv(tmp_path / "new.csv", index=False)
    code, _, err = run(capsys, "predict", tmp_path / "model", tmp_path / "new.csv", "--out",
                       tmp_path / "actions.csv")
    assert code == 0, err
    assert f"warning: {tmp_path / 'new.csv'}: context column 'eeg_1': 100% of its values" in err


def test_predict_of_a_long_file_warns_of_a_drifted_column_once_with_the_files_share(tmp_path,
                                                                                    capsys):
    """Contexts read in slices of 65,536 rows, one column in another unit in 30 % of the
    first slice's rows and 90 % of the rest's: one warning with the file's share (about
    60 %), not one per slice with its own (the first slice's 30 % not told at all)."""
    frame, rng = _eeg_model(tmp_path, capsys)
    rows = 65536 + 50000
    contexts = pd.DataFrame({f"eeg_{i}": 37 + rng.normal(0, 0.5, rows) for i in range(3)})
    share = np.where(np.arange(rows) < 65536, 0.3, 0.9)
    moved = (np.arange(rows) % 10) < 10 * share    # 30 % of the first slice, 90 % after
    contexts.loc[moved, "eeg_1"] *= 1000               # sent in another unit
    contexts.to_parquet(tmp_path / "new.parquet", index=False)
    code, _, err = run(capsys, "predict", tmp_path / "model", tmp_path / "new.parquet",
                       "--out", tmp_path / "actions.csv")
    assert code == 0, err
    told = [line for line in err.splitlines() if "of its values lie outside" in line]
    expected = f"{moved.mean():.0%}"
    assert len(told) == 1 and f"'eeg_1': {expected} of its values" in told[0], told
