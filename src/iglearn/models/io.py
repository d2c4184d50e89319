"""Fitted models on disk: a folder with ``weights.safetensors`` (tensors only, nothing that can
run code when loaded) and ``model.json`` (package version, K, dimensions, model classes,
feature schema, training summary).

A model is written into a temporary folder beside the target and renamed into place, so a
crash never leaves half a model behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

import iglearn
from iglearn.errors import IGLearnError
from iglearn.models.decoders import DECODERS, Decoder
from iglearn.models.policies import POLICIES, Policy

if TYPE_CHECKING:
    from iglearn.data.formats.base import FeatureSchema
    from iglearn.learners.batch_igl import BatchIGL

FORMAT = "iglearn-model"
FORMAT_VERSION = 1
METADATA = "model.json"
WEIGHTS = "weights.safetensors"


def _linear_layers(module: nn.Module) -> list[nn.Linear]:
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


def _describe(module: Policy | Decoder) -> dict:
    layers = _linear_layers(module.net)
    record = {"class": module.kind, "temperature": module.temperature,
              "input_dim": layers[0].in_features, "output_dim": layers[-1].out_features}
    if len(layers) > 1:
        record["hidden"] = layers[0].out_features
    return record


def check_model_folder(folder: Path) -> None:
    """Raise IGLearnError, before any work, when a model cannot be written to ``folder``: its
    parent is missing or not writable, or it exists and is not an (empty or) model folder."""
    parent = folder.parent
    if not parent.is_dir():
        raise IGLearnError(f"--out {folder}: the folder {parent} does not exist; create it "
                           f"first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise IGLearnError(f"--out {folder}: cannot write in {parent}; choose a writable "
                           f"folder")
    if folder.exists() and not (folder.is_dir() and (
            (folder / METADATA).exists() or not any(folder.iterdir()))):
        raise IGLearnError(f"--out {folder}: exists and is not an iglearn model folder; "
                           f"choose a new name")


def save_model(learner: BatchIGL, folder: str | Path, schema: FeatureSchema | None = None,
               extra: dict | None = None) -> Path:
    """Write a fitted :class:`~iglearn.learners.BatchIGL` to ``folder``.

    Args:
        learner: a fitted learner.
        folder: the model folder; an existing iglearn model there is replaced.
        schema: names of the context and feedback features (from a DSJSON log).
        extra: more JSON-ready facts for the training summary (the log's name, say).
    """
    folder = Path(folder)
    policy, decoder = learner._fitted_policy(), learner.decoder_
    check_model_folder(folder)
    parent = folder.parent
    p, d = _describe(policy), _describe(decoder)
    report = getattr(learner, "report_", None)
    metadata = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "iglearn": iglearn.__version__,
        "n_actions": p["output_dim"], "context_dim": p["input_dim"],
        "feedback_dim": d["input_dim"], "policy": p, "decoder": d,
        "feature_schema": schema.to_json() if schema is not None else None,
        "training": {**(asdict(report) if report is not None else {}), **(extra or {})},
    }
    tensors = {f"policy.{k}": v.detach().contiguous() for k, v in policy.state_dict().items()}
    tensors |= {f"decoder.{k}": v.detach().contiguous()
                for k, v in decoder.state_dict().items()}
    try:
        tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{folder.name}."))
    except OSError as e:
        raise IGLearnError(f"--out {folder}: cannot write in {parent} ({e.strerror}); choose a "
                           f"writable folder") from e
    old = None
    try:
        save_file(tensors, str(tmp / WEIGHTS))
        (tmp / METADATA).write_text(json.dumps(metadata, indent=2, default=str) + "\n")
        os.chmod(tmp, 0o777 & ~_umask())
        for name in (WEIGHTS, METADATA):
            os.chmod(tmp / name, 0o666 & ~_umask())
        if folder.exists():
            old = Path(tempfile.mkdtemp(dir=parent, prefix=f".{folder.name}.old."))
            os.replace(folder, old / "model")
        os.replace(tmp, folder)
    except OSError as e:
        if old is not None and not folder.exists():
            os.replace(old / "model", folder)
        raise IGLearnError(f"--out {folder}: cannot write the model ({e.strerror or e}); "
                           f"check the free space and permissions") from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return folder


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_metadata(folder: str | Path) -> dict:
    """``model.json`` of a model folder, checked for format and version."""
    folder = Path(folder)
    if not folder.is_dir():
        raise IGLearnError(f"{folder}: no such model folder; give the --out folder of "
                           f"'iglearn fit'")
    path = folder / METADATA
    try:
        metadata = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise IGLearnError(f"{path}: missing; {folder} is not an iglearn model folder (fit "
                           f"again with 'iglearn fit')") from e
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IGLearnError(f"{path}: not valid JSON ({e}); the model is corrupt, fit "
                           f"again") from e
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise IGLearnError(f"{path}: not an iglearn model description; fit again")
    version = metadata.get("format_version")
    if version != FORMAT_VERSION:
        raise IGLearnError(
            f"{path}: model format {version!r} (written by iglearn "
            f"{metadata.get('iglearn', '?')}) but this iglearn {iglearn.__version__} reads "
            f"format {FORMAT_VERSION}; install the iglearn version that wrote it, or refit")
    for key in ("n_actions", "context_dim", "feedback_dim"):
        value = metadata.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise IGLearnError(f"{path}: field '{key}' is {value!r}; expected a positive "
                               f"integer; the model is corrupt, fit again")
    for key, classes in (("policy", POLICIES), ("decoder", DECODERS)):
        record = metadata.get(key)
        if not isinstance(record, dict) or record.get("class") not in classes:
            raise IGLearnError(f"{path}: unknown {key} class in {record!r}; expected one of "
                               f"{sorted(classes)}")
    return metadata


def _build(kind: str, record: dict, *dims: int) -> nn.Module:
    classes = POLICIES if kind == "policy" else DECODERS
    options = {"temperature": float(record.get("temperature", 1.0))}
    if "hidden" in record:
        options["hidden"] = int(record["hidden"])
    return classes[record["class"]](*dims, **options)


def load_model(folder: str | Path) -> BatchIGL:
    """A fitted :class:`~iglearn.learners.BatchIGL` read back from ``folder``.

    The learner's ``schema_`` holds the feature schema (or None) and ``metadata_`` the whole
    ``model.json``.
    """
    from iglearn.data.formats.base import FeatureSchema
    from iglearn.learners.batch_igl import BatchIGL, FitReport

    folder = Path(folder)
    metadata = read_metadata(folder)
    path = folder / WEIGHTS
    if not path.exists():
        raise IGLearnError(f"{path}: missing; the model is incomplete, fit again")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as e:
        raise IGLearnError(f"{path}: cannot be read ({e}); the weights are corrupt, fit "
                           f"again") from e
    k, d_x, d_y = metadata["n_actions"], metadata["context_dim"], metadata["feedback_dim"]
    policy = _build("policy", metadata["policy"], d_x, k)
    decoder = _build("decoder", metadata["decoder"], d_y)
    for name, module in (("policy", policy), ("decoder", decoder)):
        state = {key[len(name) + 1:]: value for key, value in tensors.items()
                 if key.startswith(name + ".")}
        expected = module.state_dict()
        if set(state) != set(expected):
            raise IGLearnError(f"{path}: the {name} weights {sorted(state)} do not match a "
                               f"{metadata[name]['class']} {name} ({sorted(expected)}); the "
                               f"model is corrupt, fit again")
        for key, value in state.items():
            if value.shape != expected[key].shape:
                raise IGLearnError(
                    f"{path}: {name} weight '{key}' has shape {tuple(value.shape)} but "
                    f"model.json says K={k}, context_dim={d_x}, feedback_dim={d_y} "
                    f"(shape {tuple(expected[key].shape)}); the model is corrupt, fit again")
        module.load_state_dict(state)
        module.eval()
    learner = BatchIGL(policy=metadata["policy"]["class"],
                       decoder=metadata["decoder"]["class"])
    learner.policy_, learner.decoder_ = policy, decoder
    training = metadata.get("training") or {}
    known = FitReport.__dataclass_fields__
    if {"indicator", "flipped", "corrector_statistic", "restarts", "threshold"} <= set(training):
        learner.report_ = FitReport(**{key: training[key] for key in known if key in training})
    schema = metadata.get("feature_schema")
    learner.schema_ = (FeatureSchema.from_json(schema, str(folder / METADATA))
                       if schema is not None else None)
    learner.metadata_ = metadata
    return learner
