import pandas as pd
import pytest

from iglearn.cli import main
from iglearn.errors import IGLearnError
from iglearn.experiments.sweep import grid_points, parse_grid


def test_parse_grid_and_points():
    grid = parse_grid(["lr=0.01,0.02", "policy=linear,mlp", "samples=100"])
    assert grid == {"lr": [0.01, 0.02], "policy": ["linear", "mlp"], "samples": [100]}
    assert len(grid_points(grid)) == 4


@pytest.mark.parametrize("item, words", [
    ("lr", "NAME=V1"), ("foo=1", "cannot sweep 'foo'"), ("lr=fast", "float"),
    ("policy=cnn", "invalid value 'cnn'"), ("samples=-5", "invalid value -5"),
])
def test_bad_grids_are_explained(item, words):
    with pytest.raises(IGLearnError, match=words):
        parse_grid([item])


def test_sweep_cli_writes_one_tidy_table_with_common_seeds(tmp_path):
    out = tmp_path / "sweep"
    assert main(["sweep", "--set", "lr=0.01,0.03", "--dataset", "digits", "--samples", "800",
                 "--trials", "2", "--methods", "IGL,CB", "--jobs", "1", "--quiet",
                 "--out", str(out)]) == 0
    frame = pd.read_csv(out / "sweep.csv")
    assert len(frame) == 2 * 2 * 2 and set(frame["method"]) == {"IGL", "CB"}
    assert frame.groupby("trial")["seed"].nunique().eq(1).all()  # same seeds at every point
    assert "lr" in (out / "sweep.md").read_text()


def test_sample_complexity_cli(tmp_path):
    out = tmp_path / "sc"
    assert main(["reproduce", "sample-complexity", "--samples", "300,1200", "--trials", "1",
                 "--dataset", "digits", "--jobs", "1", "--quiet", "--out", str(out)]) == 0
    frame = pd.read_csv(out / "sample_complexity.csv")
    assert sorted(frame["samples"].unique()) == [300, 1200]
    assert set(frame["method"]) == {"SUP", "CB", "IGL"}
    sup = frame[frame["method"] == "SUP"].set_index("samples")["accuracy"]
    assert sup[1200] > 70
    assert (out / "sample_complexity.png").stat().st_size > 1000
