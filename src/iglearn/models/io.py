"""Fitted models on disk: a folder with ``weights.safetensors`` (tensors only, nothing that can
run code when loaded) and ``model.json`` (package version, K, dimensions, model classes, the
learner's settings, feature schema, training summary).

A model is written into a temporary folder beside the target and renamed into place, so a
crash never leaves half a model behind. Loading checks every field of ``model.json`` (types,
ranges, the limits of :mod:`iglearn.data.limits`) and the weights (names, shapes and types
against ``model.json``, finite values) before it builds a model, so a damaged model is one
:class:`~iglearn.errors.IGLearnError` line naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import os
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

import iglearn
from iglearn.data import limits, safejson
from iglearn.errors import IGLearnError, shown
from iglearn.files import input_file, remove_folder, replace_folder, temporary_folder
from iglearn.models.decoders import DECODERS, Decoder
from iglearn.models.policies import POLICIES, Policy

if TYPE_CHECKING:
    from iglearn.data.formats.base import FeatureSchema
    from iglearn.learners.batch_igl import BatchIGL

FORMAT = "iglearn-model"
FORMAT_VERSION = 1
METADATA = "model.json"
WEIGHTS = "weights.safetensors"

_POSITIVE = frozenset({"decoder_temperature", "lr", "batch_size"})
"""Settings (of the learner or its optimisation) that must be > 0 in a saved model."""
_NON_NEGATIVE = frozenset({"max_restarts", "grounding_epochs", "policy_epochs", "epochs",
                           "min_steps", "weight_decay", "weight_decay_scale"})
"""Settings that must be >= 0 in a saved model."""


def _linear_layers(module: nn.Module) -> list[nn.Linear]:
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


def _describe(module: Policy | Decoder) -> dict:
    layers = _linear_layers(module.net)
    record = {"class": module.kind, "temperature": module.temperature,
              "input_dim": layers[0].in_features, "output_dim": layers[-1].out_features}
    if len(layers) > 1:
        record["hidden"] = layers[0].out_features
    return record


def _setting_names(cls: type) -> list[str]:
    """The constructor settings of a learner class, but its seed: the dataclass fields of a
    dataclass, else the keyword parameters of ``__init__``."""
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    else:
        names = [name for name, p in inspect.signature(cls.__init__).parameters.items()
                 if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return [name for name in names if name != "seed"]


def _hints(target: Any) -> dict[str, Any]:
    """The resolved type annotations of a class (or of ``__init__``), or {} if they cannot be
    resolved; without one, a setting is only checked to be a JSON scalar."""
    try:
        return typing.get_type_hints(target)
    except (NameError, TypeError):
        return {}


def _setting_types(cls: type) -> dict[str, Any]:
    """The type of each constructor setting of ``cls``: its annotation, or for a dataclass
    field whose default is a dataclass (the optimisation), that default's class."""
    if not dataclasses.is_dataclass(cls):
        return _hints(cls.__init__)
    found = _hints(cls)
    for f in dataclasses.fields(cls):
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        if dataclasses.is_dataclass(default):
            found[f.name] = type(default)
    return found


def learner_settings(learner: object) -> dict[str, Any]:
    """Every constructor setting of ``learner`` but its seed, JSON-ready (a dataclass
    setting, such as the optimisation, as a dict)."""
    out = {}
    for name in _setting_names(type(learner)):
        value = getattr(learner, name)
        if dataclasses.is_dataclass(value):
            value = dataclasses.asdict(value)
        elif not isinstance(value, str | int | float | type(None)):
            raise TypeError(f"setting {name!r} of {type(learner).__name__} is a "
                            f"{type(value).__name__}, which a model folder cannot record")
        out[name] = value
    return out


class _Invalid(Exception):
    """A value of the wrong type or range: ``expected`` says what it should be, ``where`` the
    path below the field checked (``.lr`` in the optimisation, say) and ``value`` the value."""

    def __init__(self, expected: str, value: object, where: str = ""):
        super().__init__(expected)
        self.expected, self.value, self.where = expected, value, where


def _typed(value: object, hint: Any) -> Any:
    """``value`` (from JSON) as the type ``hint`` names: bool, int, float (finite), str, None,
    unions, lists of those and dataclasses (a dict of their fields; unknown keys are left
    out). Raises _Invalid."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(hint):
            try:
                return _typed(value, option)
            except _Invalid:
                pass
        raise _Invalid(" or ".join(_expected(option) for option in typing.get_args(hint)), value)
    if origin is list:
        if not isinstance(value, list):
            raise _Invalid(_expected(hint), value)
        (item,) = typing.get_args(hint)
        return [_typed(each, item) for each in value]
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise _Invalid(_expected(hint), value)
        known, hints = {f.name for f in dataclasses.fields(hint) if f.init}, _hints(hint)
        values = {}
        for key, each in value.items():
            if key in known:
                try:
                    values[key] = _checked(key, each, hints.get(key))
                except _Invalid as e:
                    raise _Invalid(e.expected, e.value, f".{key}{e.where}") from None
        return hint(**values)
    ok = {bool: lambda v: isinstance(v, bool),
          int: lambda v: isinstance(v, int) and not isinstance(v, bool),
          float: lambda v: isinstance(v, int | float) and not isinstance(v, bool)
          and math.isfinite(v),
          str: lambda v: isinstance(v, str),
          type(None): lambda v: v is None}.get(hint)
    if ok is None:  # an annotation this reader does not know: a JSON scalar
        ok = lambda v: isinstance(v, str | int | float | type(None))  # noqa: E731
    if not ok(value):
        raise _Invalid(_expected(hint), value)
    return float(value) if hint is float else value


def _expected(hint: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a finite number", str: "a string",
             type(None): "null"}
    if typing.get_origin(hint) is list:
        return f"a list of {_expected(typing.get_args(hint)[0])}s"
    if dataclasses.is_dataclass(hint):
        return f"an object of {hint.__name__} settings"
    return names.get(hint, "a JSON number, string, boolean or null")


def _checked(name: str, value: object, hint: Any) -> Any:
    """:func:`_typed`, plus the range of the settings in ``_POSITIVE`` and
    ``_NON_NEGATIVE``."""
    value = _typed(value, hint)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if name in _POSITIVE and not (number and value > 0):
        raise _Invalid("a number > 0", value)
    if name in _NON_NEGATIVE and not (number and value >= 0):
        raise _Invalid("a number >= 0", value)
    return value


def _damaged(path: Path, key: str, value: object, expected: str) -> IGLearnError:
    return IGLearnError(f"{path}: field '{key}' is {shown(value)}; expected {expected}; the "
                        f"model is damaged, fit again")


def _integer(record: dict, key: str, low: int, high: int, path: Path, prefix: str = "",
             limit: str | None = None) -> int:
    """``record[key]``, checked to be an integer in [low, high]."""
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        named = f" (iglearn.data.limits.{limit})" if limit else ""
        raise _damaged(path, prefix + key, value, f"an integer in [{low}, {high}]{named}")
    return value


def check_model_folder(folder: Path) -> None:
    """Raise IGLearnError, before any work, unless a model may be written to ``folder``: its
    parent exists and is writable, and ``folder`` is missing, empty, or exactly a model
    iglearn wrote (``model.json``, recognised by its format record, and
    ``weights.safetensors``, both plain files, and nothing else): a folder holding anything
    else is never replaced."""
    folder = Path(folder)
    parent = folder.parent
    if not parent.is_dir():
        raise IGLearnError(f"--out {folder}: the folder {parent} does not exist; create it "
                           f"first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise IGLearnError(f"--out {folder}: cannot write in {parent}; choose a writable "
                           f"folder")
    if folder.is_symlink():
        raise IGLearnError(f"--out {folder}: is a symbolic link; give the folder itself "
                           f"({os.path.realpath(folder)}) or a new name")
    if not folder.exists():
        return
    if not folder.is_dir():
        raise IGLearnError(f"--out {folder}: is a file, not a model folder; choose a new name "
                           f"for --out")
    entries = {entry.name: entry for entry in os.scandir(folder)}
    if not entries:
        return
    model = {METADATA, WEIGHTS}
    others = sorted(set(entries) - model)
    if others:
        more = f" and {len(others) - 1} more entries" if len(others) > 1 else ""
        raise IGLearnError(f"--out {folder}: holds {shown(others[0])}{more}, so it is not a "
                           f"model iglearn wrote; a model replaces a folder only when it holds "
                           f"exactly {METADATA} and {WEIGHTS}: choose a new folder for --out")
    if any(not entry.is_file(follow_symlinks=False) for entry in entries.values()):
        raise IGLearnError(f"--out {folder}: its {METADATA} or {WEIGHTS} is not a plain file, "
                           f"so it is not a model iglearn wrote; choose a new folder for --out")
    if set(entries) != model:
        raise IGLearnError(f"--out {folder}: holds {next(iter(entries))} alone, not a whole "
                           f"iglearn model; choose a new folder for --out, or remove it")
    try:
        read_metadata(folder)
    except IGLearnError as e:
        raise IGLearnError(f"--out {folder}: is not a model this iglearn wrote ({e}); choose a "
                           f"new folder for --out, or remove it") from e


def save_model(learner: BatchIGL, folder: str | Path, schema: FeatureSchema | None = None,
               extra: dict | None = None) -> Path:
    """Write a fitted :class:`~iglearn.learners.BatchIGL` to ``folder``.

    ``model.json`` records every constructor setting of the learner but its seed, so that the
    loaded learner refits as this one did.

    Args:
        learner: a fitted learner.
        folder: the model folder; an existing iglearn model there is replaced.
        schema: names of the context and feedback features (from a DSJSON log).
        extra: more JSON-ready facts for the training summary (the log's name, say).
    """
    folder = Path(folder)
    policy, decoder = learner._fitted_policy(), learner.decoder_
    check_model_folder(folder)
    tensors = {f"policy.{k}": v.detach().contiguous() for k, v in policy.state_dict().items()}
    tensors |= {f"decoder.{k}": v.detach().contiguous()
                for k, v in decoder.state_dict().items()}
    if not all(bool(torch.isfinite(v).all()) for v in tensors.values()):
        raise IGLearnError(f"--out {folder}: the fitted weights hold NaN or infinite values "
                           f"(the fit diverged); fit again, with a lower learning rate")
    p, d = _describe(policy), _describe(decoder)
    report = getattr(learner, "report_", None)
    metadata = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "iglearn": iglearn.__version__,
        "n_actions": p["output_dim"], "context_dim": p["input_dim"],
        "feedback_dim": d["input_dim"], "policy": p, "decoder": d,
        "settings": learner_settings(learner),
        "feature_schema": schema.to_json() if schema is not None else None,
        "training": {**(dataclasses.asdict(report) if report is not None else {}),
                     **(extra or {})},
    }
    try:
        text = json.dumps(metadata, indent=2, default=str, allow_nan=False) + "\n"
    except ValueError as e:
        raise IGLearnError(f"--out {folder}: the training summary holds a NaN or infinite "
                           f"number ({e}); fit again") from None
    tmp = temporary_folder(folder)
    try:
        save_file(tensors, str(tmp / WEIGHTS))
        (tmp / METADATA).write_text(text)
        replace_folder(tmp, folder)
    except OSError as e:
        raise IGLearnError(f"--out {folder}: cannot write the model ({e.strerror or e}); "
                           f"check the free space and permissions") from e
    finally:
        remove_folder(tmp)
    return folder


def _check_module(record: object, key: str, classes: dict, dims: dict[str, tuple[int, str]],
                  path: Path) -> None:
    """The ``policy`` or ``decoder`` record of model.json: class, temperature, dimensions."""
    if not isinstance(record, dict) or not isinstance(record.get("class"), str) or \
            record["class"] not in classes:
        found = record.get("class") if isinstance(record, dict) else record
        raise _damaged(path, f"{key}.class" if isinstance(record, dict) else key, found,
                       f"one of {sorted(classes)}")
    temperature = record.get("temperature")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not (
            math.isfinite(temperature) and temperature > 0):
        raise _damaged(path, f"{key}.temperature", temperature, "a finite number > 0")
    for name, (want, source) in dims.items():
        value = record.get(name)
        if isinstance(value, bool) or value != want:
            raise _damaged(path, f"{key}.{name}", value, f"{want}, {source}")
    if "hidden" in inspect.signature(classes[record["class"]]).parameters:
        _integer(record, "hidden", 1, limits.MAX_HIDDEN, path, f"{key}.", "MAX_HIDDEN")
    elif "hidden" in record:
        raise _damaged(path, f"{key}.hidden", record["hidden"],
                       f"no hidden layer in a {record['class']} {key}")


def read_metadata(folder: str | Path) -> dict:
    """``model.json`` of a model folder, every field checked (see the module's docstring)."""
    from iglearn.data.formats.base import FeatureSchema

    folder = Path(folder)
    if not folder.is_dir():
        raise IGLearnError(f"{folder}: no such model folder; give the --out folder of "
                           f"'iglearn fit'")
    path = folder / METADATA
    if not path.exists():
        raise IGLearnError(f"{path}: missing; {folder} is not an iglearn model folder (fit "
                           f"again with 'iglearn fit')")
    metadata = safejson.read(path, "the model is damaged, fit again", "model description")
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise IGLearnError(f"{path}: not an iglearn model description; fit again")
    version = metadata.get("format_version")
    if version != FORMAT_VERSION:
        raise IGLearnError(
            f"{path}: model format {shown(version)} (written by iglearn "
            f"{shown(metadata.get('iglearn', '?'))}) but this iglearn {iglearn.__version__} "
            f"reads format {FORMAT_VERSION}; install the iglearn version that wrote it, or "
            f"refit")
    k = _integer(metadata, "n_actions", 2, limits.MAX_ACTIONS, path, limit="MAX_ACTIONS")
    d_x = _integer(metadata, "context_dim", 1, limits.MAX_DIM, path, limit="MAX_DIM")
    d_y = _integer(metadata, "feedback_dim", 1, limits.MAX_DIM, path, limit="MAX_DIM")
    _check_module(metadata.get("policy"), "policy", POLICIES,
                  {"input_dim": (d_x, "as 'context_dim' says"),
                   "output_dim": (k, "as 'n_actions' says")}, path)
    _check_module(metadata.get("decoder"), "decoder", DECODERS,
                  {"input_dim": (d_y, "as 'feedback_dim' says"),
                   "output_dim": (1, "one decoded reward")}, path)
    schema = metadata.get("feature_schema")
    if schema is not None:
        parsed = FeatureSchema.from_json(schema, f"{path} (feature_schema)")
        if len(parsed.context) != d_x or len(parsed.feedback) not in (0, d_y):
            raise _damaged(path, "feature_schema", f"{len(parsed.context)} context and "
                           f"{len(parsed.feedback)} feedback names",
                           f"{d_x} context and {d_y} feedback names")
    for key in ("settings", "training"):
        if metadata.get(key) is not None and not isinstance(metadata[key], dict):
            raise _damaged(path, key, metadata[key], "an object")
    return metadata


def _build(kind: str, record: dict, *dims: int) -> nn.Module:
    classes = POLICIES if kind == "policy" else DECODERS
    options = {"temperature": float(record["temperature"])}
    if "hidden" in record:
        options["hidden"] = record["hidden"]
    return classes[record["class"]](*dims, **options)


def _settings(metadata: dict, path: Path) -> dict[str, Any]:
    """The learner's constructor settings recorded in model.json, checked; only those the
    current BatchIGL accepts. A model without settings gets the defaults, with its classes
    and decoder temperature."""
    from iglearn.learners.batch_igl import BatchIGL

    recorded = metadata.get("settings") or {}
    types = _setting_types(BatchIGL)
    settings = {}
    for name in _setting_names(BatchIGL):
        if name in recorded:
            try:
                settings[name] = _checked(name, recorded[name], types.get(name))
            except _Invalid as e:
                raise _damaged(path, f"settings.{name}{e.where}", e.value, e.expected) from None
    fitted = {"policy": metadata["policy"]["class"], "decoder": metadata["decoder"]["class"],
              "decoder_temperature": float(metadata["decoder"]["temperature"])}
    for name, value in fitted.items():
        if name in settings and settings[name] != value:
            raise _damaged(path, f"settings.{name}", settings[name],
                           f"{shown(value)}, as the saved model has")
        settings[name] = value
    return settings


def _report(training: dict, path: Path) -> Any:
    """The FitReport in the training summary, checked, or None when it holds none."""
    from iglearn.learners.batch_igl import FitReport

    fields = {f.name: f for f in dataclasses.fields(FitReport)}
    required = {name for name, f in fields.items()
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    if not required <= set(training):
        return None
    hints = _hints(FitReport)
    values = {}
    for name in fields:
        if name in training:
            try:
                values[name] = _typed(training[name], hints.get(name))
            except _Invalid as e:
                raise _damaged(path, f"training.{name}", training[name], e.expected) from None
    return FitReport(**values)


def load_model(folder: str | Path) -> BatchIGL:
    """A fitted :class:`~iglearn.learners.BatchIGL` read back from ``folder``, with the
    settings it was fitted with (those this iglearn's BatchIGL knows).

    The learner's ``schema_`` holds the feature schema (or None) and ``metadata_`` the whole
    ``model.json``.
    """
    from iglearn.data.formats.base import FeatureSchema
    from iglearn.learners.batch_igl import BatchIGL

    folder = Path(folder)
    metadata = read_metadata(folder)
    meta_path = folder / METADATA
    settings = _settings(metadata, meta_path)
    report = _report(metadata.get("training") or {}, meta_path)
    path = folder / WEIGHTS
    if not path.exists():
        raise IGLearnError(f"{path}: missing; the model is incomplete, fit again")
    input_file(path, "model weights file")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise IGLearnError(f"{path}: cannot be read ({shown(str(e))}); the weights are "
                           f"corrupt, fit again") from None
    k, d_x, d_y = metadata["n_actions"], metadata["context_dim"], metadata["feedback_dim"]
    stray = sorted(key for key in tensors if not key.startswith(("policy.", "decoder.")))
    if stray:
        raise IGLearnError(f"{path}: holds the tensor {shown(stray[0])}, which no part of the "
                           f"model has; the model is corrupt, fit again")
    modules = {}
    for name, dims in (("policy", (d_x, k)), ("decoder", (d_y,))):
        state = {key[len(name) + 1:]: value for key, value in tensors.items()
                 if key.startswith(name + ".")}
        with torch.device("meta"):  # shapes and types only: nothing is allocated
            expected = _build(name, metadata[name], *dims).state_dict()
        if set(state) != set(expected):
            raise IGLearnError(f"{path}: the {name} weights {shown(sorted(state))} do not match "
                               f"a {metadata[name]['class']} {name} ({sorted(expected)}); the "
                               f"model is corrupt, fit again")
        for key, value in state.items():
            if value.shape != expected[key].shape or value.dtype != expected[key].dtype:
                raise IGLearnError(
                    f"{path}: {name} weight '{key}' is {value.dtype} of shape "
                    f"{tuple(value.shape)}, but the {name} model.json describes has "
                    f"{expected[key].dtype} of shape {tuple(expected[key].shape)}; the model "
                    f"is corrupt, fit again")
            if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                raise IGLearnError(f"{path}: {name} weight '{key}' holds NaN or infinite "
                                   f"values; the model is corrupt, fit again")
        module = _build(name, metadata[name], *dims)
        module.load_state_dict(state)
        modules[name] = module.eval()
    learner = BatchIGL(**settings)
    learner.policy_, learner.decoder_ = modules["policy"], modules["decoder"]
    if report is not None:
        learner.report_ = report
    schema = metadata.get("feature_schema")
    learner.schema_ = (FeatureSchema.from_json(schema, str(meta_path))
                       if schema is not None else None)
    learner.metadata_ = metadata
    return learner
