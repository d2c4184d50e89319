"""``iglearn load``: a model archive from the service (``GET /v1/model/export``) written as a
model folder; evaluate and predict read an archive as they read a folder."""

import gzip
import json
import shlex

import numpy as np

from iglearn.learners.registry import load_model
from iglearn.models.archive import pack_model
from tests.cli.conftest import run


def test_an_archive_loads_as_the_model_folder_it_was_packed_from(small, tmp_path, capsys):
    archive = tmp_path / "model.tar.gz"
    archive.write_bytes(pack_model(small / "model"))
    code, out, err = run(capsys, "load", archive, "--out", tmp_path / "loaded")
    assert code == 0, err
    record = json.loads(out)
    assert record["algorithm"] == "igl" and record["n_actions"] == 10
    original, loaded = load_model(small / "model"), load_model(tmp_path / "loaded")
    contexts = np.load(small / "test.npz")["context"][:50]
    np.testing.assert_array_equal(original.predict_proba(contexts),
                                  loaded.predict_proba(contexts))
    # evaluate and predict take the archive itself
    from_folder = json.loads(run(capsys, "evaluate", small / "model", small / "test.npz")[1])
    from_archive = json.loads(run(capsys, "evaluate", archive, small / "test.npz")[1])
    assert from_archive["accuracy"] == from_folder["accuracy"]
    assert run(capsys, "predict", archive, small / "test.npz", "--out",
               tmp_path / "p.npz")[0] == 0
    # loading again replaces the model folder
    assert run(capsys, "load", archive, "--out", tmp_path / "loaded")[0] == 0


def test_load_refuses_what_is_not_a_model_archive(small, tmp_path, capsys):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not an archive")
    code, out, err = run(capsys, "load", junk, "--out", tmp_path / "m")
    assert code == 2 and "not a gzip-compressed tar archive" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "m").exists()
    assert not list(tmp_path.glob(".m.*"))  # nothing half-written
    for name, data in (("text.tar.gz", gzip.compress(b"context_0,action\n1,0\n")),
                       ("nothing.tar.gz", gzip.compress(b""))):
        (tmp_path / name).write_bytes(data)  # gzip, but no tar inside: the way to make one
        code, _, err = run(capsys, "load", tmp_path / name, "--out", tmp_path / "m")
        assert code == 2 and "iglearn pack MODEL --out model.tar.gz" in err, err
        assert "send the archive" not in err and not (tmp_path / "m").exists()
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    archive = tmp_path / "model.tgz"
    archive.write_bytes(pack_model(small / "model"))
    code, _, err = run(capsys, "load", archive, "--out", occupied)
    assert code == 2 and "--out" in err
    assert (occupied / "notes.txt").read_text() == "mine"
    code, _, err = run(capsys, "load", tmp_path / "missing.tar.gz", "--out", tmp_path / "m")
    assert code == 2 and "no such model archive" in err


def test_a_model_folder_named_as_an_archive_is_refused_with_the_way_to_pack_it(
        small, tmp_path, capsys):
    """fit, load and orient write a model folder: an --out named model.tar.gz made a folder
    that looked like the archive pack writes, and that load and the service then refused as
    "a folder, not a model archive"; it is refused before any work, with the pack command."""
    archive = tmp_path / "model.tar.gz"
    archive.write_bytes(pack_model(small / "model"))
    for argv in (["fit", small / "log.npz", "--out", tmp_path / "fitted.tar.gz"],
                 ["load", archive, "--out", tmp_path / "loaded.tgz"],
                 ["orient", archive, small / "log.npz", "--out", tmp_path / "my model.TAR.GZ"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert "names a model archive" in err and "iglearn pack" in err, err
    folder, named = shlex.quote(str(tmp_path / "my model")), tmp_path / "my model.TAR.GZ"
    assert f"iglearn pack {folder} --out {shlex.quote(str(named))}" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model.tar.gz"]
