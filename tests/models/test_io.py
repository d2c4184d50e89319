"""Model folders: safetensors weights plus model.json; atomic writes; checked loading."""

import json
import warnings

import numpy as np
import pytest

from iglearn import BatchIGL, IGLearnError
from iglearn.data.formats import FeatureSchema
from iglearn.envs import digits_environment
from iglearn.learners.training import Optimisation
from iglearn.models import io

FAST = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, min_steps=10)


@pytest.fixture(scope="module")
def digits_log():
    return digits_environment().log(1500, seed=1)


def fitted(log, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BatchIGL(optimisation=FAST, max_restarts=0, seed=0, **options).fit(log)


@pytest.mark.parametrize("policy, decoder", [("linear", "linear"), ("mlp", "mlp")])
def test_save_load_fit_save_load_gives_identical_predictions(tmp_path, digits_log, policy,
                                                            decoder):
    learner = fitted(digits_log, policy=policy, decoder=decoder)
    schema = FeatureSchema.default(64, 64)
    learner.save(tmp_path / "m", schema)
    loaded = BatchIGL.load(tmp_path / "m")
    x = digits_log.context[:200]
    np.testing.assert_array_equal(loaded.predict_proba(x), learner.predict_proba(x))
    np.testing.assert_array_equal(loaded.decode(digits_log.feedback[:50]),
                                  learner.decode(digits_log.feedback[:50]))
    assert loaded.schema_ == schema and loaded.report_.indicator == learner.report_.indicator
    # refit the loaded learner, save over the old model, load again
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded.optimisation, loaded.max_restarts, loaded.seed = FAST, 0, 3
        loaded.fit(digits_log)
    io.save_model(loaded, tmp_path / "m")
    again = io.load_model(tmp_path / "m")
    np.testing.assert_array_equal(again.predict_proba(x), loaded.predict_proba(x))
    assert again.schema_ is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_weights_are_safetensors_and_metadata_describes_the_model(tmp_path, digits_log):
    fitted(digits_log).save(tmp_path / "m")
    raw = (tmp_path / "m" / io.WEIGHTS).read_bytes()
    header = int.from_bytes(raw[:8], "little")
    assert json.loads(raw[8:8 + header])["policy.net.weight"]["shape"] == [10, 64]
    meta = json.loads((tmp_path / "m" / io.METADATA).read_text())
    assert meta["n_actions"] == 10 and meta["context_dim"] == 64 and meta["feedback_dim"] == 64
    assert meta["policy"]["class"] == "linear" and "indicator" in meta["training"]
    assert meta["iglearn"] and meta["format_version"] == io.FORMAT_VERSION


def _edit(path, **changes):
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize("damage, words", [
    (lambda m: (m / io.METADATA).unlink(), ["model.json", "missing"]),
    (lambda m: (m / io.METADATA).write_text("{not json"), ["model.json", "not valid JSON"]),
    (lambda m: _edit(m / io.METADATA, format_version=99), ["format 99", "reads format 1"]),
    (lambda m: _edit(m / io.METADATA, context_dim=7), ["shape", "context_dim=7"]),
    (lambda m: _edit(m / io.METADATA, n_actions=0), ["'n_actions'", "positive"]),
    (lambda m: _edit(m / io.METADATA, policy={"class": "tree"}), ["unknown policy class"]),
    (lambda m: (m / io.WEIGHTS).unlink(), ["weights.safetensors", "missing"]),
    (lambda m: (m / io.WEIGHTS).write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{garbage"),
     ["weights.safetensors", "corrupt"]),
])
def test_damaged_models_say_what_is_wrong(tmp_path, digits_log, damage, words):
    fitted(digits_log).save(tmp_path / "m")
    damage(tmp_path / "m")
    with pytest.raises(IGLearnError) as error:
        io.load_model(tmp_path / "m")
    for word in words:
        assert word in str(error.value)


def test_missing_folder_and_non_model_target(tmp_path, digits_log):
    with pytest.raises(IGLearnError, match="no such model folder"):
        io.load_model(tmp_path / "absent")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("keep me")
    with pytest.raises(IGLearnError, match="not an iglearn model folder"):
        fitted(digits_log).save(tmp_path / "busy")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "keep me"


def test_a_failed_write_leaves_no_half_model(tmp_path, digits_log, monkeypatch):
    learner = fitted(digits_log)

    def broken(tensors, filename):
        with open(filename, "wb") as f:
            f.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(io, "save_file", broken)
    with pytest.raises(IGLearnError, match="No space left"):
        learner.save(tmp_path / "m")
    assert list(tmp_path.iterdir()) == []
