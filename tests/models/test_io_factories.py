"""One guard for every recorded factory: a model.json of any algorithm in which any record
(a module's, or any other object at any depth) names a factory loads only with
``import_factories=True``; without it, loading is one line naming the record, from a folder,
an archive or the command line, and the factory's module is never imported."""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from iglearn import BatchIGL, IGLearnError
from iglearn.envs import action_inclusive_environment
from iglearn.learners import AIIGL, VIIGL
from iglearn.learners.iglp import IGLP
from iglearn.learners.registry import load_model
from iglearn.learners.training import Optimisation
from iglearn.models.archive import pack_model, read_model
from iglearn.models.custom import CustomDecoder, CustomPolicy
from iglearn.models.io import METADATA, WEIGHTS, factory_records
from tests.cli.conftest import run

FAST = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=5)
LEARNERS = {"igl": lambda: BatchIGL(optimisation=FAST, max_restarts=0, seed=0),
            "ai-igl": lambda: AIIGL(optimisation=FAST, refinements=0, seed=0),
            "igl-p": lambda: IGLP(optimisation=FAST, seed=0),
            "vi-igl": lambda: VIIGL(optimisation=FAST, seed=0)}


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A model folder of every algorithm, fitted once; tests tamper with copies."""
    root = tmp_path_factory.mktemp("saved")
    log = action_inclusive_environment("digits").log(300, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, make in LEARNERS.items():
            make().fit(log).save(root / name)
    return root


@pytest.fixture
def trap(tmp_path, monkeypatch) -> tuple[str, Path]:
    """An importable module, new to this test, that leaves a file behind when imported: its
    factory's import path and that file."""
    marker = tmp_path / "imported"
    module = f"iglearn_trap_{tmp_path.name.replace('-', '_')}"
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / f"{module}.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n"
        f"def make(in_dim, out_dim, generator):\n    import torch\n"
        f"    return torch.nn.Linear(in_dim, out_dim)\n")
    monkeypatch.syspath_prepend(str(folder))
    yield f"{module}:make", marker
    sys.modules.pop(module, None)


def tampered(saved: Path, tmp_path: Path, algorithm: str, edit) -> Path:
    folder = tmp_path / f"{algorithm}-{len(list(tmp_path.iterdir()))}"
    shutil.copytree(saved / algorithm, folder)
    metadata = json.loads((folder / METADATA).read_text())
    edit(metadata)
    (folder / METADATA).write_text(json.dumps(metadata))
    return folder


def module_records(saved: Path, algorithm: str) -> list[str]:
    """The records of the saved model.json that describe a model (they have a class)."""
    metadata = json.loads((saved / algorithm / METADATA).read_text())
    return [key for key, value in metadata.items() if isinstance(value, dict) and "class" in value]


def assert_refused_without_import(folder: Path, record: str, marker: Path, tmp_path: Path):
    archive = tmp_path / f"{folder.name}.tar.gz"
    archive.write_bytes(pack_model(folder))
    for where, load in ((folder / METADATA, lambda: load_model(folder)),
                        (f"{archive} ({METADATA})", lambda: read_model(archive))):
        with pytest.raises(IGLearnError) as refused:
            load()
        message = str(refused.value)
        assert "\n" not in message and message.startswith(f"{where}: ")
        assert f"the {record} record" in message and "import_factories=True" in message
    assert not marker.exists()


def test_every_record_of_every_algorithm_naming_a_factory_is_refused_unimported(
        saved, tmp_path, trap):
    factory, marker = trap
    cases = 0
    for algorithm in LEARNERS:
        records = module_records(saved, algorithm)
        assert "policy" in records and len(records) >= 2
        for record in records:
            def custom(metadata, record=record):
                metadata[record] |= {"class": "custom", "factory": factory}

            def stray_factory(metadata, record=record):  # the class left as it was
                metadata[record]["factory"] = factory

            for edit in (custom, stray_factory):
                folder = tampered(saved, tmp_path, algorithm, edit)
                assert_refused_without_import(folder, record, marker, tmp_path)
                cases += 1
    # policy and decoder (igl); the same (ai-igl); policy, ik, flags (igl-p); policy and
    # decoder (vi-igl)
    assert cases == 2 * (2 + 2 + 3 + 2)


def test_a_factory_anywhere_else_in_model_json_is_refused_too(saved, tmp_path, trap):
    factory, marker = trap
    edits = {"settings.optimisation": lambda m: m["settings"]["optimisation"].update(
                 factory=factory),
             "training.extra": lambda m: m["training"].update(extra={"factory": factory}),
             "later[1]": lambda m: m.__setitem__("later", [{}, {"class": "custom"}])}
    for algorithm in LEARNERS:
        for where, edit in edits.items():
            folder = tampered(saved, tmp_path, algorithm, edit)
            records = [at for at, _ in factory_records(json.loads(
                (folder / METADATA).read_text()))]
            assert records == [where]
            assert_refused_without_import(folder, where, marker, tmp_path)


def test_with_consent_only_a_module_the_learner_builds_from_a_factory_imports_it(
        saved, tmp_path, trap):
    factory, marker = trap
    for algorithm, record in (("igl-p", "ik"), ("igl-p", "flags"), ("igl", "training")):
        def edit(metadata, record=record):
            metadata[record] |= {"class": "custom", "factory": factory}
        folder = tampered(saved, tmp_path, algorithm, edit)
        with pytest.raises(IGLearnError, match=f"builds no {record} from a factory"):
            load_model(folder, import_factories=True)
        assert not marker.exists()
    folder = tampered(saved, tmp_path, "igl", lambda m: m["decoder"].update(
        {"class": "custom", "factory": factory}))
    loaded = load_model(folder, import_factories=True)  # asked: imported and built
    assert marker.exists() and isinstance(loaded.decoder_, CustomDecoder)


def test_the_command_line_refuses_a_factory_in_one_line_naming_the_archive(
        saved, tmp_path, trap, capsys):
    factory, marker = trap
    for record in ("ik", "flags"):
        folder = tampered(saved, tmp_path, "igl-p", lambda m, record=record: m[record].update(
            {"class": "custom", "factory": factory}))
        archive = tmp_path / f"{record}.tar.gz"
        archive.write_bytes(pack_model(folder))
        code, _, err = run(capsys, "load", archive, "--out", tmp_path / f"out-{record}")
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{archive} ({METADATA}): the {record} record" in err
        assert ".out-" not in err and "Traceback" not in err
        assert not (tmp_path / f"out-{record}").exists()
    assert not marker.exists()


@pytest.mark.parametrize("algorithm", list(LEARNERS))
def test_every_learners_load_asks_for_consent_and_imports_only_with_it(
        saved, tmp_path, trap, algorithm):
    factory, marker = trap
    cls = type(LEARNERS[algorithm]())
    original = cls.load(saved / algorithm)
    folder = tampered(saved, tmp_path, algorithm, lambda m: m["policy"].update(
        {"class": "custom", "factory": factory}))
    weights = load_file(folder / WEIGHTS)  # a custom policy's weights: its module's and a flag
    save_file(weights | {"policy.negated": torch.tensor(False)}, folder / WEIGHTS)
    with pytest.raises(IGLearnError) as refused:  # tampered: refused, nothing imported
        cls.load(folder)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{folder / METADATA}: the policy record")
    assert f"{cls.__name__}.load(folder, import_factories=True)" in message
    assert not marker.exists()
    loaded = cls.load(folder, import_factories=True)  # consented: imported and built
    assert marker.exists() and isinstance(loaded, cls)
    assert isinstance(loaded.policy_, CustomPolicy)
    context = action_inclusive_environment("digits").log(50, seed=5).context
    np.testing.assert_allclose(loaded.predict_proba(context), original.predict_proba(context),
                               atol=1e-6)
    other = next(name for name in LEARNERS if name != algorithm)
    with pytest.raises(IGLearnError, match=f"holds an {other} model"):  # consent is no more
        cls.load(tampered(saved, tmp_path, other, lambda m: None), import_factories=True)
