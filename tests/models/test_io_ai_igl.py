"""Model folders of every algorithm: model.json names it ("igl" or "ai-igl"), load_model returns
its learner, and an AI-IGL model's K decoders are checked like BatchIGL's one."""

import json
import shutil
import warnings

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from iglearn import BatchIGL, IGLearnError
from iglearn.data.formats import FeatureSchema
from iglearn.envs import action_inclusive_environment
from iglearn.learners import AIIGL, AIIGLReport, registry
from iglearn.learners.iglp import IGLP
from iglearn.learners.training import Optimisation
from iglearn.learners.vi_igl import VIIGL
from iglearn.models import io
from tests.models.test_io import _weights, assert_damage_reported

FAST = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=10)


@pytest.fixture(scope="module")
def log():
    return action_inclusive_environment("digits").log(1500, seed=2)


def fitted(log, **options):
    options = {"optimisation": FAST, "refinements": 0, "seed": 0, **options}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AIIGL(**options).fit(log)


@pytest.fixture(scope="module")
def saved(log, tmp_path_factory):
    """An AI-IGL and a BatchIGL model folder, fitted once; tests damage copies of them."""
    root = tmp_path_factory.mktemp("saved")
    fitted(log).save(root / "ai-igl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        BatchIGL(optimisation=FAST, max_restarts=0, seed=0).fit(log).save(root / "igl")
    return root


def copy_of(saved, tmp_path, kind="ai-igl"):
    shutil.copytree(saved / kind, tmp_path / "m")
    return tmp_path / "m"


@pytest.mark.parametrize("policy, decoder", [("linear", "linear"), ("mlp", "mlp")])
def test_save_load_gives_identical_predictions_and_decoded_rewards(tmp_path, log, policy,
                                                                  decoder):
    learner = fitted(log, policy=policy, decoder=decoder, temperature=0.5)
    schema = FeatureSchema.default(64, 64)
    learner.save(tmp_path / "m", schema)
    loaded = AIIGL.load(tmp_path / "m")
    assert type(registry.load_model(tmp_path / "m")) is AIIGL
    x = log.context[:300]
    np.testing.assert_array_equal(loaded.predict_proba(x), learner.predict_proba(x))
    np.testing.assert_array_equal(loaded.decode(log.feedback, log.action),
                                  learner.decode(log.feedback, log.action))
    assert loaded.indicator(log) == learner.indicator(log)
    assert [d.flipped.item() for d in loaded.decoders_] == learner.report_.flipped
    assert loaded.report_ == learner.report_ and isinstance(loaded.report_, AIIGLReport)
    assert loaded.schema_ == schema and loaded.temperature == 0.5
    assert io.learner_settings(loaded) == io.learner_settings(learner)


def test_model_json_names_the_algorithm_and_the_weights_each_decoder(saved):
    meta = json.loads((saved / "ai-igl" / io.METADATA).read_text())
    assert meta["algorithm"] == "ai-igl" and meta["n_actions"] == 10
    assert meta["settings"]["refinements"] == 0 and meta["decoder"]["temperature"] == 0.5
    tensors = load_file(str(saved / "ai-igl" / io.WEIGHTS))
    assert sorted(k for k in tensors if k.startswith("decoder.")) == sorted(
        f"decoder.{a}.{name}" for a in range(10) for name in ("flipped", "net.bias",
                                                              "net.weight"))
    assert tensors["decoder.7.net.weight"].shape == (1, 64)
    assert json.loads((saved / "igl" / io.METADATA).read_text())["algorithm"] == "igl"


def test_the_algorithms_and_their_names_agree():
    assert tuple(registry.learners()) == io.ALGORITHMS == tuple(io.LAYOUTS)
    assert [cls for cls, _ in registry.learners().values()] == [BatchIGL, AIIGL, IGLP, VIIGL]


def test_a_model_json_without_algorithm_is_batch_igl(tmp_path, saved):
    folder = copy_of(saved, tmp_path, "igl")
    meta = json.loads((folder / io.METADATA).read_text())
    del meta["algorithm"]  # as written before AI-IGL
    (folder / io.METADATA).write_text(json.dumps(meta))
    assert type(registry.load_model(folder)) is BatchIGL and type(BatchIGL.load(folder)) is BatchIGL


def test_a_loaded_model_refits_as_it_was_fitted(tmp_path, log):
    learner = fitted(log, refinements=2, decoder_temperature=0.25, min_interactions=5)
    learner.save(tmp_path / "m")
    loaded = registry.load_model(tmp_path / "m")
    assert (loaded.refinements, loaded.decoder_temperature, loaded.min_interactions,
            loaded.optimisation) == (2, 0.25, 5, FAST)
    learner.seed = loaded.seed = 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner.fit(log)
        loaded.fit(log)
    np.testing.assert_array_equal(loaded.predict_proba(log.context[:100]),
                                  learner.predict_proba(log.context[:100]))


def test_each_learner_class_loads_only_its_own_algorithm(saved):
    with pytest.raises(IGLearnError, match=r"holds an ai-igl model \(AIIGL\), not an igl one"):
        BatchIGL.load(saved / "ai-igl")
    with pytest.raises(IGLearnError, match=r"holds an igl model \(BatchIGL\), not an ai-igl"):
        AIIGL.load(saved / "igl")


def _meta(change):
    def damage(folder):
        path = folder / io.METADATA
        meta = json.loads(path.read_text())
        change(meta)
        path.write_text(json.dumps(meta))
    return damage


def _setitem(record, key, value):
    record[key] = value


DAMAGED = {
    "unknown algorithm": (_meta(lambda m: _setitem(m, "algorithm", "xgboost")),
                          ["'algorithm'", "'xgboost'", "igl, ai-igl"]),
    "algorithm not a string": (_meta(lambda m: _setitem(m, "algorithm", 1)), ["'algorithm'"]),
    "a decoder missing": (_weights(lambda t: [t.pop(k) for k in list(t)
                                             if k.startswith("decoder.3.")]),
                          ["decoder.3 weights", "[]"]),
    "a decoder NaN": (_weights(lambda t: t["decoder.2.net.weight"].fill_(float("nan"))),
                      ["decoder.2 weight 'net.weight'", "NaN"]),
    "a decoder of another shape": (_weights(lambda t: _setitem(t, "decoder.1.net.weight",
                                                               torch.zeros(1, 63))),
                                   ["decoder.1 weight 'net.weight'", "(1, 63)", "(1, 64)"]),
    "an eleventh decoder": (_weights(lambda t: _setitem(t, "decoder.10.net.bias",
                                                        torch.zeros(1))),
                            ["'decoder.10.net.bias'", "no part of the model"]),
    "one decoder's tensors unnumbered": (_weights(lambda t: _setitem(t, "decoder.net.bias",
                                                                     torch.zeros(1))),
                                         ["'decoder.net.bias'", "no part of the model"]),
    "refinements negative": (_meta(lambda m: _setitem(m["settings"], "refinements", -1)),
                             ["'settings.refinements'", ">= 0"]),
    "temperature disagrees": (_meta(lambda m: _setitem(m["settings"], "temperature", 2.0)),
                              ["'settings.temperature'", "1.0"]),
    "covariance not numbers": (_meta(lambda m: _setitem(m["training"], "covariance", ["a"])),
                               ["'training.covariance'", "['a']"]),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damaged_ai_igl_models_say_what_is_wrong_in_one_line(tmp_path, saved, case):
    damage, words = DAMAGED[case]
    folder = copy_of(saved, tmp_path)
    damage(folder)
    assert_damage_reported(folder, words)


def test_an_igl_folder_with_per_action_decoders_is_refused(tmp_path, saved):
    folder = copy_of(saved, tmp_path)
    _meta(lambda m: _setitem(m, "algorithm", "igl"))(folder)
    with pytest.raises(IGLearnError, match="the decoder weights"):
        registry.load_model(folder)
