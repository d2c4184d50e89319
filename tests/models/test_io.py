"""Model folders: safetensors weights plus model.json; atomic writes; checked loading."""

import dataclasses
import json
import math
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from iglearn import BatchIGL, IGLearnError
from iglearn.data.formats import FeatureSchema
from iglearn.envs import digits_environment
from iglearn.learners import registry
from iglearn.learners.training import Optimisation
from iglearn.models import io
from tests.data.mutations import FUZZ, mutate_bytes, mutate_json, one_line

FAST = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=10)


@pytest.fixture(scope="module")
def digits_log():
    return digits_environment().log(1500, seed=1)


def fitted(log, **options):
    options = {"optimisation": FAST, "max_restarts": 0, "seed": 0, **options}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BatchIGL(**options).fit(log)


@pytest.fixture(scope="module")
def saved(digits_log, tmp_path_factory):
    """A linear and an MLP model folder, fitted once; tests damage copies of them."""
    root = tmp_path_factory.mktemp("saved")
    fitted(digits_log).save(root / "linear", FeatureSchema.default(64, 64))
    fitted(digits_log, policy="mlp", decoder="mlp").save(root / "mlp")
    return root


def copy_of(saved, tmp_path, kind="linear"):
    shutil.copytree(saved / kind, tmp_path / "m")
    return tmp_path / "m"


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
        loaded.seed = 3
        loaded.fit(digits_log)
    registry.save_model(loaded, tmp_path / "m")
    again = registry.load_model(tmp_path / "m")
    np.testing.assert_array_equal(again.predict_proba(x), loaded.predict_proba(x))
    assert again.schema_ is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def _other_settings() -> dict:
    """A value unlike the default for every setting of BatchIGL: booleans flipped, numbers
    changed, the optimisation made small."""
    changed = {"optimisation": FAST, "max_restarts": 1, "restart_threshold": 0.3,
               "decoder_temperature": 0.05, "policy": "mlp", "decoder": "mlp"}
    for field in dataclasses.fields(BatchIGL):
        if field.name in io.RUNTIME:  # where and how visibly a fit runs: not recorded
            continue
        if field.name not in changed and isinstance(field.default, bool):
            changed[field.name] = not field.default
        elif field.name not in changed and isinstance(field.default, float):
            changed[field.name] = field.default / 2
    return changed


def test_a_loaded_model_keeps_every_setting_and_refits_as_it_was_fitted(tmp_path, digits_log):
    changed = _other_settings()
    learner = fitted(digits_log, **changed)
    learner.save(tmp_path / "m")
    loaded = registry.load_model(tmp_path / "m")
    for name, value in changed.items():
        assert getattr(loaded, name) == value, name
    assert io.learner_settings(loaded) == io.learner_settings(learner)
    # the same seed, the same fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner.seed = loaded.seed = 5
        learner.fit(digits_log)
        loaded.fit(digits_log)
    x = digits_log.context[:100]
    np.testing.assert_array_equal(loaded.predict_proba(x), learner.predict_proba(x))


def test_models_without_settings_load_with_their_classes_and_temperature(tmp_path, saved):
    folder = copy_of(saved, tmp_path, "mlp")
    meta = json.loads((folder / io.METADATA).read_text())
    del meta["settings"]
    meta["decoder"]["temperature"] = 0.2
    (folder / io.METADATA).write_text(json.dumps(meta))
    loaded = registry.load_model(folder)
    assert (loaded.policy, loaded.decoder, loaded.decoder_temperature) == ("mlp", "mlp", 0.2)
    assert loaded.max_restarts == BatchIGL().max_restarts
    assert loaded.decoder_.temperature == 0.2


def test_a_policy_temperature_near_0_gives_the_greedy_policy(tmp_path, saved, digits_log):
    """A temperature of 2e-38 (allowed: float32 holds it) makes each row's largest score take
    all the probability: no inf / inf, no NaN."""
    folder = copy_of(saved, tmp_path, "mlp")
    meta = json.loads((folder / io.METADATA).read_text())
    meta["policy"]["temperature"] = 2e-38
    (folder / io.METADATA).write_text(json.dumps(meta))
    x = digits_log.context[:200]
    probabilities = registry.load_model(folder).predict_proba(x)
    assert np.isfinite(probabilities).all()
    np.testing.assert_allclose(probabilities.sum(1), 1.0, rtol=1e-6)
    assert (probabilities.max(1) >= 0.5).all()
    greedy = registry.load_model(copy_of(saved, tmp_path / "again", "mlp")).predict(x)
    np.testing.assert_array_equal(probabilities.argmax(1), greedy)


def test_settings_this_version_does_not_know_are_left_out(tmp_path, saved):
    folder = copy_of(saved, tmp_path)
    meta = json.loads((folder / io.METADATA).read_text())
    meta["settings"]["a_future_switch"] = True
    meta["settings"]["optimisation"]["a_future_step"] = 3
    del meta["settings"]["max_restarts"]
    (folder / io.METADATA).write_text(json.dumps(meta))
    loaded = registry.load_model(folder)
    assert loaded.optimisation == FAST and loaded.max_restarts == BatchIGL().max_restarts


def test_weights_are_safetensors_and_metadata_describes_the_model(saved):
    raw = (saved / "linear" / io.WEIGHTS).read_bytes()
    header = int.from_bytes(raw[:8], "little")
    assert json.loads(raw[8:8 + header])["policy.net.weight"]["shape"] == [10, 64]
    meta = json.loads((saved / "linear" / io.METADATA).read_text())
    assert meta["n_actions"] == 10 and meta["context_dim"] == 64 and meta["feedback_dim"] == 64
    assert meta["policy"]["class"] == "linear" and "indicator" in meta["training"]
    assert meta["iglearn"] and meta["format_version"] == io.FORMAT_VERSION
    assert meta["settings"]["optimisation"] == dataclasses.asdict(FAST)
    assert "seed" not in meta["settings"]


# --- damaged models: one line naming the file and the field, nothing built ---------------

def _edit(path, change):
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def change(meta):
        record = meta
        for key in keys[:-1]:
            record = record[key]
        record[keys[-1]] = value
    return lambda m: _edit(m / io.METADATA, change)


def _text(old, new):
    def damage(m):
        path = m / io.METADATA
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))
    return damage


def _weights(change):
    def damage(m):
        tensors = load_file(str(m / io.WEIGHTS))
        change(tensors)
        save_file(tensors, str(m / io.WEIGHTS))
    return damage


def _nan(tensors):
    tensors["policy.net.weight"][3, 5] = float("nan")


def _float64(tensors):
    tensors["decoder.net.weight"] = tensors["decoder.net.weight"].double()


def _stray(tensors):
    tensors["extra"] = torch.zeros(2)


def _fifo(m):
    (m / io.METADATA).unlink()
    os.mkfifo(m / io.METADATA)


DAMAGED = {
    "model.json missing": (lambda m: (m / io.METADATA).unlink(), ["model.json", "missing"]),
    "model.json not JSON": (lambda m: (m / io.METADATA).write_text("{not json"),
                            ["model.json", "not valid JSON"]),
    "model.json a FIFO": (_fifo, ["model.json", "not a regular file"]),
    "format version": (_set("format_version", 99), ["format 99", "reads format 1"]),
    "context_dim differs": (_set("context_dim", 7), ["'policy.input_dim'", "64", "7"]),
    "context_dim a string": (_set("context_dim", "64"), ["'context_dim'", "'64'"]),
    "n_actions 0": (_set("n_actions", 0), ["'n_actions'", "[2, 1000000]"]),
    "n_actions 10**12": (_set("n_actions", 10**12), ["'n_actions'", "MAX_ACTIONS"]),
    "unknown class": (_set("policy", {"class": "tree"}), ["'policy.class'", "'tree'"]),
    "policy not an object": (_set("policy", [1]), ["'policy'", "[1]"]),
    "temperature 0": (_set("decoder", "temperature", 0),
                      ["'decoder.temperature'", ">= 1.18e-38"]),
    "temperature negative": (_set("policy", "temperature", -1.0),
                             ["'policy.temperature'", ">= 1.18e-38"]),
    "temperature 1e-300": (_set("policy", "temperature", 1e-300),
                           ["'policy.temperature'", "1e-300", "0 in float32"]),
    "temperature a string": (_set("policy", "temperature", "hot"),
                             ["'policy.temperature'", "'hot'"]),
    "temperature NaN": (_text('"temperature": 0.1', '"temperature": NaN'), ["NaN"]),
    "temperature 1e400": (_text('"temperature": 0.1', '"temperature": 1e400'),
                          ["'1e400'", "range"]),
    "hidden on a linear model": (_set("policy", "hidden", 3), ["'policy.hidden'"]),
    "feature schema too short": (_set("feature_schema", {"context": ["a"], "feedback": []}),
                                 ["'feature_schema'", "64 context"]),
    "feature schema not names": (_set("feature_schema", {"context": [1, 2]}),
                                 ["feature_schema", "strings"]),
    "settings decoder_temperature 0": (_set("settings", "decoder_temperature", 0),
                                       ["'settings.decoder_temperature'", "> 0"]),
    "settings max_restarts negative": (_set("settings", "max_restarts", -1),
                                       ["'settings.max_restarts'", ">= 0"]),
    "settings max_restarts a float": (_set("settings", "max_restarts", 2.5),
                                      ["'settings.max_restarts'", "an integer"]),
    "settings corrector a string": (_set("settings", "corrector", "yes"),
                                    ["'settings.corrector'", "a boolean"]),
    "settings lr a string": (_set("settings", "optimisation", "lr", "fast"),
                             ["'settings.optimisation.lr'", "'fast'"]),
    "settings batch_size 0": (_set("settings", "optimisation", "batch_size", 0),
                              ["'settings.optimisation.batch_size'", "> 0"]),
    "settings small_steps 0": (_set("settings", "optimisation", "small_steps", 0),
                               ["'settings.optimisation.small_steps'", "> 0"]),
    "settings starts 0": (_set("settings", "starts", 0), ["'settings.starts'", "> 0"]),
    "settings policy disagrees": (_set("settings", "policy", "mlp"),
                                  ["'settings.policy'", "'linear'"]),
    "settings not an object": (_set("settings", [1, 2]), ["'settings'", "an object"]),
    "training indicator a string": (_set("training", "indicator", "high"),
                                    ["'training.indicator'", "'high'"]),
    "1000-deep nesting": (_text('"training": {', '"training": ' + "[" * 1000 + "{"),
                          ["model.json", "deep"]),
    "100000-deep nesting": (_text('"training": {', '"training": ' + "[" * 100000 + "{"),
                            ["model.json", "MAX_MODEL_JSON_CONTAINERS"]),
    "5000-digit integer": (_set("n_actions", 10**4000), ["model.json", "digits"]),
    "a key twice": (_text('"format_version": 1', '"format_version": 1, "format_version": 1'),
                    ["'format_version'", "twice"]),
    "weights missing": (lambda m: (m / io.WEIGHTS).unlink(), ["weights.safetensors", "missing"]),
    "weights garbage": (lambda m: (m / io.WEIGHTS).write_bytes(
        b"\x10\x00\x00\x00\x00\x00\x00\x00{garbage"), ["weights.safetensors", "corrupt"]),
    "weights NaN": (_weights(_nan), ["'net.weight'", "NaN"]),
    "weights float64": (_weights(_float64), ["'net.weight'", "torch.float64"]),
    "weights stray tensor": (_weights(_stray), ["'extra'"]),
}


def assert_damage_reported(folder: Path, words: list[str]) -> None:
    """Loading ``folder`` fails with one line that names the folder and every one of
    ``words``."""
    with pytest.raises(IGLearnError) as error:
        registry.load_model(folder)
    message = str(error.value)
    assert len(message.splitlines()) == 1 and str(folder) in message, message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damaged_models_say_what_is_wrong_in_one_line(tmp_path, saved, case):
    damage, words = DAMAGED[case]
    folder = copy_of(saved, tmp_path)
    damage(folder)
    assert_damage_reported(folder, words)


def test_a_huge_hidden_layer_is_refused_before_anything_is_allocated(tmp_path, saved):
    folder = copy_of(saved, tmp_path, "mlp")
    _set("policy", "hidden", 200_000_000)(folder)
    with pytest.raises(IGLearnError, match=r"'policy.hidden' is 200000000.*MAX_HIDDEN"):
        registry.load_model(folder)
    # within the limit but not what the weights hold: refused before the model is built
    _set("policy", "hidden", 1_000_000)(folder)
    with pytest.raises(IGLearnError, match=r"shape \(256,?.*shape \(1000000,"):
        registry.load_model(folder)


def test_an_unreadable_model_is_reported_as_such(tmp_path, saved, monkeypatch):
    folder = copy_of(saved, tmp_path)
    target = str(folder / io.METADATA)
    real_open = os.open

    def refusing_open(path, *args, **kwargs):  # what a file without read permission does
        if os.fspath(path) == target:
            raise PermissionError(13, "Permission denied", target)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    with pytest.raises(IGLearnError, match="permission denied"):
        registry.load_model(folder)


def test_missing_folder_and_non_model_target(tmp_path, digits_log):
    with pytest.raises(IGLearnError, match="no such model folder"):
        registry.load_model(tmp_path / "absent")
    from iglearn.models.archive import pack_model

    model = fitted(digits_log).save(tmp_path / "model")
    (tmp_path / "model.tar.gz").write_bytes(pack_model(model))
    with pytest.raises(IGLearnError, match="a model archive, not a model folder; read it with "
                                           "iglearn.models.archive.read_model"):
        registry.load_model(tmp_path / "model.tar.gz")
    for name in ("new.tar.gz", "new.TGZ"):  # saved as a folder of that name, once
        with pytest.raises(IGLearnError, match=rf"^model folder .*{name}: names a model "
                                               rf"archive.*iglearn pack \S*new --out \S*{name}'"):
            fitted(digits_log).save(tmp_path / name)
        assert not (tmp_path / name).exists()
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(IGLearnError, match="notes.txt: a file, not a model folder"):
        registry.load_model(tmp_path / "notes.txt")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("keep me")
    with pytest.raises(IGLearnError, match="not a model iglearn wrote"):
        fitted(digits_log).save(tmp_path / "busy")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "keep me"
    with pytest.raises(IGLearnError, match="^model folder .*: the folder .* does not exist"):
        fitted(digits_log).save(tmp_path / "absent" / "m")  # the Python API names no option


def test_a_failed_write_leaves_no_half_model(tmp_path, digits_log, monkeypatch):
    learner = fitted(digits_log)

    def broken(tensors, filename):
        with open(filename, "wb") as f:
            f.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("safetensors.torch.save_file", broken)  # as save_model imports it
    with pytest.raises(IGLearnError, match="No space left"):
        learner.save(tmp_path / "m")
    assert list(tmp_path.iterdir()) == []


def test_diverged_weights_are_not_saved(tmp_path, digits_log):
    learner = fitted(digits_log)
    with torch.no_grad():
        learner.decoder_.net.weight[0, 0] = float("inf")
    with pytest.raises(IGLearnError, match="NaN or infinite"):
        learner.save(tmp_path / "m")
    assert list(tmp_path.iterdir()) == []


# --- fuzzing model.json: any change is either a model or one IGLearnError line ----------

def _load_once(folder: Path) -> None:
    """Load ``folder``: a model, or one IGLearnError line naming it; nothing written."""
    before = sorted(p.name for p in folder.parent.rglob("*"))
    try:
        registry.load_model(folder)
    except IGLearnError as error:
        assert one_line(str(error)) and str(folder) in str(error), str(error)
    assert sorted(p.name for p in folder.parent.rglob("*")) == before


@FUZZ
@given(data=st.data())
def test_fuzzed_model_json_loads_or_fails_in_one_line(saved, data):
    kind = data.draw(st.sampled_from(["linear", "mlp"]))
    meta = mutate_json(data, json.loads((saved / kind / io.METADATA).read_text()))
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "m"
        shutil.copytree(saved / kind, folder)
        (folder / io.METADATA).write_text(json.dumps(meta))
        _load_once(folder)


@FUZZ
@given(data=st.data())
def test_fuzzed_model_bytes_load_or_fail_in_one_line(saved, data):
    name = data.draw(st.sampled_from([io.METADATA, io.WEIGHTS]))
    raw = mutate_bytes(data, (saved / "linear" / name).read_bytes())
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "m"
        shutil.copytree(saved / "linear", folder)
        (folder / name).write_bytes(raw)
        _load_once(folder)


def test_settings_restore_only_finite_numbers():
    hints = io._hints(Optimisation)
    assert io._typed(0.5, hints["lr"]) == 0.5
    for bad in (math.inf, True, "0.5", None):
        with pytest.raises(io._Invalid):
            io._typed(bad, hints["lr"])


def test_saving_never_replaces_a_folder_iglearn_did_not_write(digits_log, tmp_path):
    learner = fitted(digits_log)
    target = tmp_path / "model"
    learner.save(target)
    (target / "notes.txt").write_text("mine")
    with pytest.raises(IGLearnError, match="not a model iglearn wrote"):
        learner.save(target)
    assert (target / "notes.txt").read_text() == "mine"


def test_a_model_is_replaced_in_one_step(digits_log, tmp_path, monkeypatch):
    from iglearn import files

    learner = fitted(digits_log)
    target = tmp_path / "model"
    learner.save(target)
    before = (target / io.METADATA).read_bytes()
    swaps = []
    real = files._exchange
    monkeypatch.setattr(files, "_exchange", lambda a, b: swaps.append((a, b)) or real(a, b))
    registry.save_model(learner, target, extra={"note": "second"})
    assert len(swaps) == 1 and swaps[0][1] == target  # one atomic exchange, no set-aside
    assert (target / io.METADATA).read_bytes() != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # nothing left beside it


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_every_file_of_a_model_folder_gets_the_mode_of_a_new_file(tmp_path, digits_log, mask):
    learner = fitted(digits_log)
    old = os.umask(mask)
    try:
        learner.save(tmp_path / "m")
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "m").iterdir()}
    assert modes == {io.METADATA: 0o666 & ~mask, io.WEIGHTS: 0o666 & ~mask}


def test_model_json_is_strict_json_whatever_the_metadata_holds(digits_log, tmp_path):
    learner = fitted(digits_log)
    extra = {"nan": float("nan"), "inf": np.float32("inf"), "list": [1.0, -math.inf],
             "count": np.int64(3)}
    registry.save_model(learner, tmp_path / "m", extra=extra)

    def refuse(literal: str) -> None:
        raise AssertionError(f"{literal} in model.json")

    record = json.loads((tmp_path / "m" / "model.json").read_text(), parse_constant=refuse)
    assert {k: record["training"][k] for k in extra} == {
        "nan": None, "inf": None, "list": [1.0, None], "count": 3}
    assert registry.load_model(tmp_path / "m").metadata_["training"]["nan"] is None



def test_the_kinds_model_json_is_checked_against_are_those_of_the_classes():
    """model.json is checked without the model classes (:mod:`iglearn.models.kinds`), so
    that reading it imports no torch: the names and hidden layers it accepts are the
    classes'."""
    import inspect

    from iglearn.models import kinds
    from iglearn.models.custom import CustomDecoder, CustomPolicy
    from iglearn.models.decoders import DECODERS
    from iglearn.models.personal import PersonalIK
    from iglearn.models.policies import POLICIES

    assert tuple(POLICIES) == kinds.POLICY_KINDS and tuple(DECODERS) == kinds.DECODER_KINDS
    for classes in (POLICIES, DECODERS):
        assert {name for name, cls in classes.items()
                if "hidden" in inspect.signature(cls).parameters} == kinds.HIDDEN & set(classes)
    assert PersonalIK.kind == kinds.PERSONAL
    assert CustomPolicy.kind == CustomDecoder.kind == kinds.CUSTOM
    assert set(kinds.IK_KINDS) == {*POLICIES, PersonalIK.kind}


def test_a_model_whose_model_json_no_reader_accepts_is_not_written(tmp_path, digits_log,
                                                                   monkeypatch):
    """A fit whose feature schema names so many features (a DSJSON log's rare sparse features)
    that model.json would exceed MAX_JSON_BYTES is refused when saved, saying why and what to
    change; the folder is not made (it was written, then refused by every reader as
    damaged)."""
    from iglearn.data import limits

    learner = fitted(digits_log)
    learner.save(tmp_path / "ok", FeatureSchema.default(64, 64))
    size = (tmp_path / "ok" / io.METADATA).stat().st_size
    monkeypatch.setattr(limits, "MAX_JSON_BYTES", size - 1)
    with pytest.raises(IGLearnError, match=rf"model folder .*big: its model\.json would hold "
                                           rf"{size} bytes, more than {size - 1} .*MAX_JSON_"
                                           rf"BYTES.*names 64 context and 64 feedback features; "
                                           rf"fit on fewer features"):
        learner.save(tmp_path / "big", FeatureSchema.default(64, 64))
    assert not (tmp_path / "big").exists()
    monkeypatch.setattr(limits, "MAX_JSON_BYTES", size)
    io.read_metadata(tmp_path / "ok")  # the limit a reader holds it to is the same
