import pandas as pd
import pytest

from iglearn.cli import main
from iglearn.experiments.results import RESULT_COLUMNS
from iglearn.experiments.sweep import grid_points


def test_grid_points_are_every_combination():
    grid = {"lr": [0.01, 0.02], "policy": ["linear", "mlp"], "samples": [100]}
    points = grid_points(grid)
    assert len(points) == 4 and {"lr": 0.02, "policy": "mlp", "samples": 100} in points


@pytest.mark.parametrize("item, words", [
    ("lr", "NAME=V1"), ("foo=1", "cannot sweep 'foo'"), ("lr=fast", "lr"),
    ("policy=cnn", "policy"), ("samples=-5", "samples"),
])
def test_bad_grids_are_explained(item, words, capsys):
    assert main(["sweep", "--set", item, "--dataset", "digits"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err


def test_a_value_or_a_setting_given_twice_is_refused(capsys, tmp_path):
    """lr=0.01,0.01 ran one point twice and reported it as 2 trials; --set lr twice kept the
    last; --samples 300,300 of the sample-complexity experiment ran one size twice."""
    cases = [(["sweep", "--set", "lr=0.01,0.01"], "lr lists a value twice (0.01,0.01)"),
             (["sweep", "--set", "lr=0.01", "--set", "lr=0.02"],
              "--set lr is given twice; give its values once, comma-separated (lr=V1,V2)"),
             (["reproduce", "sample-complexity", "--samples", "300,300"],
              "--samples lists a value twice (300,300); give each once"),
             # the option was dropped without a word, and config.json recorded it as used
             (["sweep", "--set", "lr=0.01,0.02", "--lr", "0.05"],
              "--lr is swept by --set lr, which gives its values; drop one of them"),
             (["sweep", "--set", "samples=300,600", "--samples", "500"],
              "--samples is swept by --set samples"),
             # fitted once, recorded twice in config.json
             (["sweep", "--methods", "IGL,CB,IGL"], "--methods lists a value twice (IGL,CB,IGL)"),
             (["reproduce", "table1", "--methods", "IGL,IGL"],
              "--methods lists a value twice (IGL,IGL); give each once"),
             # every environment of the family ran twice, its rows counted as two trials
             (["reproduce", "unsupervised", "--families", "env12,env12"],
              "--families lists a value twice (env12,env12); give each once")]
    for argv, words in cases:
        assert main([*argv, "--dataset", "digits", "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and words in err, err
    assert not (tmp_path / "x").exists()


def test_sweep_cli_writes_one_tidy_table_with_common_seeds(tmp_path):
    out = tmp_path / "sweep"
    assert main(["sweep", "--set", "lr=0.01,0.03", "--dataset", "digits", "--samples", "800",
                 "--trials", "2", "--methods", "IGL,CB", "--jobs", "1", "--quiet",
                 "--out", str(out)]) == 0
    frame = pd.read_csv(out / "sweep.csv")
    assert list(frame.columns) == [*RESULT_COLUMNS[:5], "lr", *RESULT_COLUMNS[5:]]
    assert set(frame["experiment"]) == {"sweep"} and (frame["step"] == 800).all()
    accuracy = frame[frame["metric"] == "accuracy"]
    assert len(accuracy) == 2 * 2 * 2 and set(accuracy["method"]) == {"IGL", "CB"}
    assert accuracy["value"].between(0.5, 1).all()
    assert frame.groupby("trial")["seed"].nunique().eq(1).all()  # same seeds at every point
    text = (out / "sweep.md").read_text()
    assert "| lr | method | accuracy (%) |" in text and "| 0.03 | IGL |" in text


def test_sample_complexity_cli(tmp_path):
    out = tmp_path / "sc"
    assert main(["reproduce", "sample-complexity", "--samples", "300,1200", "--trials", "1",
                 "--dataset", "digits", "--jobs", "1", "--quiet", "--out", str(out)]) == 0
    frame = pd.read_csv(out / "sample_complexity.csv")
    assert list(frame.columns) == [*RESULT_COLUMNS[:5], "samples", *RESULT_COLUMNS[5:]]
    assert set(frame["experiment"]) == {"sample-complexity"}
    assert sorted(frame["samples"].unique()) == [300, 1200]
    assert (frame["step"] == frame["samples"]).all()
    assert set(frame["method"]) == {"SUP", "CB", "IGL"}
    accuracy = frame[frame["metric"] == "accuracy"]
    sup = accuracy[accuracy["method"] == "SUP"].set_index("samples")["value"]
    assert 0.7 < sup[1200] <= 1
    text = (out / "sample_complexity.md").read_text()
    assert "SUP accuracy (%)" in text and "± is the standard deviation over 1 trial" in text
    assert (out / "sample_complexity.png").stat().st_size > 1000


def _refused(capsys, argv: list[str]) -> str:
    """The one line a refused command prints."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("change, named", [
    (["--set", "lr=0.01,0.03"], "--set lr: 0.01,0.02 recorded, 0.01,0.03 now"),
    (["--set", "lr=0.01,0.02", "--seed", "1"], "--seed: 0 recorded, 1 now"),
    (["--set", "lr=0.01,0.02", "--policy", "mlp"], "--policy: 'linear' recorded, 'mlp' now"),
    (["--set", "lr=0.01,0.02", "--set", "decoder_temperature=0.1,0.2"],
     "--set decoder-temperature: none recorded, 0.1,0.2 now"),
    ([], "--set lr: 0.01,0.02 recorded, none now"),
])
def test_a_sweep_refused_to_resume_names_the_option_that_changed(tmp_path, capsys, change,
                                                                  named):
    """The refusal named a "--base" option that does not exist, with the whole recorded
    configuration, whatever had changed (and even when nothing had: a tuple read back as a
    list differed)."""
    out = tmp_path / "sweep"
    common = ["--dataset", "digits", "--samples", "300", "--trials", "1", "--jobs", "1",
              "--quiet", "--out", str(out)]
    assert main(["sweep", "--set", "lr=0.01,0.02", *common]) == 0
    assert main(["sweep", "--set", "lr=0.01,0.02", *common]) == 0  # the same: it resumes
    capsys.readouterr()
    err = _refused(capsys, ["sweep", *change, *common])
    assert err == (f"iglearn: error: {out} holds trials of a different configuration "
                   f"({named}); pass --fresh to start over there, or choose another --out")


def test_sample_complexity_refused_to_resume_names_its_own_options(tmp_path, capsys):
    """It named "--base" with a samples of 60000 the user never gave."""
    out = tmp_path / "sc"
    common = ["--dataset", "digits", "--trials", "1", "--jobs", "1", "--quiet",
              "--out", str(out)]
    assert main(["reproduce", "sample-complexity", "--samples", "300,200", *common]) == 0
    assert main(["reproduce", "sample-complexity", "--samples", "200,300", *common]) == 0
    capsys.readouterr()
    for change, named in ((["--samples", "300,400"], "--samples: 200,300 recorded, 300,400 now"),
                          (["--samples", "200,300", "--seed", "1"], "--seed: 0 recorded, 1 now")):
        err = _refused(capsys, ["reproduce", "sample-complexity", *change, *common])
        assert f"different configuration ({named}); pass --fresh" in err


def test_a_sweep_resumed_with_its_set_options_in_another_order_is_refused(tmp_path, capsys):
    """The grid's points run in the order of the --set options and a trial's record is
    found by its index: given in another order, the recorded trials were taken for other
    points, and a sweep resumed after an interruption wrote one point twice and left
    another out."""
    out = tmp_path / "sweep"
    common = ["--dataset", "digits", "--samples", "300", "--trials", "1", "--stack", "1",
              "--jobs", "1", "--quiet", "--out", str(out)]
    lr, temperature = ["--set", "lr=0.01,0.02"], ["--set", "decoder_temperature=0.05,0.1"]
    assert main(["sweep", *lr, *temperature, *common]) == 0
    assert main(["sweep", *lr, *temperature, *common]) == 0  # the same: it resumes
    capsys.readouterr()
    err = _refused(capsys, ["sweep", *temperature, *lr, *common])
    assert ("different configuration (the order of the --set options: "
            "lr,decoder_temperature recorded, decoder_temperature,lr now); pass --fresh") in err
    frame = pd.read_csv(out / "sweep.csv")
    points = frame[frame["metric"] == "accuracy"][["lr", "decoder_temperature"]]
    assert len(points.drop_duplicates()) == 4


def test_the_closing_line_names_the_folder_the_files_went_to(tmp_path, capsys, monkeypatch):
    """--out '' (an unset variable, say) wrote into the current folder and said "wrote
    /sweep.csv", the root's; a trailing slash gave "results/x//sweep.csv"."""
    monkeypatch.chdir(tmp_path)
    common = ["--dataset", "digits", "--samples", "300", "--trials", "1", "--jobs", "1",
              "--quiet"]
    for out, shown in (("", "."), ("x/", "x")):
        assert main(["sweep", "--set", "lr=0.01", *common, "--out", out]) == 0
        last = capsys.readouterr().out.strip().splitlines()[-1]
        assert last == f"wrote {shown}/sweep.csv, sweep.md and config.json"
        assert (tmp_path / shown / "sweep.csv").is_file()


def test_an_out_that_is_a_file_is_named_as_one(tmp_path, capsys):
    """It was refused as "cannot write there (File exists); choose a writable folder"."""
    blocker = tmp_path / "results.csv"
    blocker.write_text("mine\n")
    err = _refused(capsys, ["sweep", "--set", "lr=0.01", "--dataset", "digits", "--samples",
                            "300", "--trials", "1", "--jobs", "1", "--out", str(blocker)])
    assert err == (f"iglearn: error: --out {blocker}: is a file, not a folder; choose a new "
                   f"name for --out")
    assert blocker.read_text() == "mine\n"


def test_another_experiments_folder_is_refused_naming_the_experiment(tmp_path, capsys):
    """A sample-complexity run in a sweep's folder was refused as "--set lr: 0.01 recorded,
    none now", naming an option sample-complexity does not have."""
    out = tmp_path / "run"
    common = ["--dataset", "digits", "--trials", "1", "--jobs", "1", "--quiet",
              "--out", str(out)]
    assert main(["sweep", "--set", "lr=0.01", "--samples", "300", *common]) == 0
    capsys.readouterr()
    err = _refused(capsys, ["reproduce", "sample-complexity", "--samples", "300", *common])
    assert ("different configuration (the experiment: 'sweep' recorded, 'sample-complexity' "
            "now); pass --fresh") in err
