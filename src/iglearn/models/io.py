"""Fitted models on disk: a folder with ``weights.safetensors`` (tensors only, nothing that can
run code when loaded) and ``model.json`` (package version, the algorithm, K, dimensions, model
classes, the learner's settings, feature schema, training summary).

``model.json`` names the algorithm whose learner the folder holds (:data:`ALGORITHMS`):
``"igl"`` (:class:`~iglearn.learners.BatchIGL`: one decoder, tensors ``decoder.<param>``) or
``"ai-igl"`` (:class:`~iglearn.learners.AIIGL`: one decoder per action a, tensors
``decoder.<a>.<param>``, all of the class ``decoder`` describes) or ``"igl-p"``
(:class:`~iglearn.learners.iglp.IGLP`: no decoder but the inverse-kinematics model h(a | x, y)
and the flag model g(x, a), tensors ``ik.<param>`` and ``flags.<param>``, described by the
records ``ik`` and ``flags``; ``policy`` is its reward regressor; with per-user grounding
the ``ik`` record has class ``"personal"``, :class:`~iglearn.models.personal.PersonalIK` on
(x, y), with its ``users`` and the ``model`` class of the rest of the context; a model fitted
with ``decode_from="feedback"`` adds the linear feedback posterior q(u, y), tensors
``posterior.<param>``, record ``posterior``); a ``model.json`` without the
field, written before AI-IGL, is ``"igl"``. :func:`read_model` returns that algorithm's
learner, given each algorithm's learner class: this module knows the folder format of every
algorithm (:data:`LAYOUTS`) but imports no learner; the learners' registry
(:mod:`iglearn.learners.registry`: ``load_model``, ``save_model``) gives the classes.

``standardiser`` holds the statistics the learner standardises contexts and feedback with
(:meth:`iglearn.data.scaling.Standardiser.to_dict`: per-column means and scales); a model
without it (saved with ``standardise`` off, or before iglearn standardised) reads raw values.

A model is written into a temporary folder beside the target and renamed into place, so a
crash never leaves half a model behind. Loading checks every field of ``model.json`` (types,
ranges, the limits of :mod:`iglearn.data.limits`) and the weights (their file's size, then
names, shapes and types against ``model.json``, finite values) before it builds a model, so a
damaged model is one :class:`~iglearn.errors.IGLearnError` line naming the file and the field
(for a model unpacked from an archive, the archive and the member: :func:`member_label`).
Reading ``model.json`` (:func:`read_metadata`) imports no torch (the classes are checked by
their names, :mod:`iglearn.models.kinds`), so a command can check a model folder and the
data against it before it imports torch; the weights are read through it. A
record naming a factory, wherever it is (:func:`factory_records`), is refused unless the
caller asks for factories to be imported.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
import shlex
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import iglearn
from iglearn.data import limits, safejson
from iglearn.data.scaling import Standardiser
from iglearn.errors import IGLearnError, check_choice, shown
from iglearn.files import (
    MODEL_FILES,
    input_file,
    remove_folder,
    replace_folder,
    replaceable_folder,
    set_ordinary_mode,
    temporary_folder,
)
from iglearn.hints import settings_hints
from iglearn.learners.settings import (
    ALGORITHM_SETTINGS,
    NON_NEGATIVE_SETTINGS,
    POSITIVE_SETTINGS,
)
from iglearn.models.kinds import (
    CUSTOM,
    DECODER_KINDS,
    HIDDEN,
    IK_KINDS,
    PERSONAL,
    POLICY_KINDS,
    POSTERIOR_KINDS,
)

if TYPE_CHECKING:
    import torch
    from torch import nn

    from iglearn.data.formats.base import FeatureSchema
    from iglearn.models.decoders import Decoder
    from iglearn.models.policies import Policy

FORMAT = "iglearn-model"
FORMAT_VERSION = 1
METADATA, WEIGHTS = MODEL_FILES

MIN_TEMPERATURE = 1.1754943508222875e-38
"""The smallest temperature ``model.json`` may give a policy or a decoder: float32's smallest
normal number (torch.finfo(torch.float32).tiny), below which the division by it is a
division by 0 (NaN probabilities)."""
_FACTORY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
"""An importable factory path, ``module:function``."""
RUNTIME = frozenset({"seed", "device", "threads", "progress", "logdir"})
"""Learner settings a model folder does not record: the seed, and where and how visibly a fit
runs (the device, the torch threads, the progress bar, the TensorBoard folder)."""
DEFAULT_ALGORITHM = "igl"
"""The algorithm of a model.json without an ``algorithm`` field (written before AI-IGL)."""


@dataclass(frozen=True)
class Algorithm:
    """How a model folder holds the fitted models of one algorithm's learner."""

    name: str
    """The name model.json records, and ``iglearn fit --algorithm`` takes."""
    per_action: bool
    """One decoder per action (``decoders_``, tensors ``decoder.<a>.<param>``), rather than
    one (``decoder_``, tensors ``decoder.<param>``)."""
    models: tuple[str, ...] = ()
    """Instead of decoders, these models of the policy classes (attribute ``<name>_``,
    tensors ``<name>.<param>``, model.json record ``<name>``)."""
    optional: tuple[str, ...] = ()
    """Further models, saved when the learner has one (attribute ``<name>_`` not None) and
    read when model.json has their record (IGL-P's feedback posterior)."""
    built_from: tuple[tuple[str, str], ...] = ()
    """(record, setting) pairs: a record built from a setting of another name (IGL-P's flag
    model from its ``policy`` setting, a custom module included); any other record is built
    from the setting of its own name."""

    def setting_of(self, record: str) -> str:
        """The learner setting that builds the model of ``record``."""
        return dict(self.built_from).get(record, record)

    def saved_models(self, learner: Any) -> list[str]:
        """The models of ``learner`` a folder holds: :attr:`models`, then those of
        :attr:`optional` it has."""
        return [*self.models, *(name for name in self.optional
                                if getattr(learner, f"{name}_", None) is not None)]

    def recorded_models(self, metadata: Mapping[str, Any]) -> list[str]:
        """The models a folder's ``metadata`` (model.json) describes: :attr:`models`, then
        those of :attr:`optional` it has a record of."""
        return [*self.models, *(name for name in self.optional if name in metadata)]

    def saved(self, learner: Any) -> list[tuple[str, Policy | Decoder]]:
        """The fitted models of ``learner`` besides its policy, each with the prefix of its
        tensors (and, for :attr:`models`, the name of its model.json record): the models by
        name, or the decoders (one per action: ``decoder.<a>``)."""
        if self.models:
            return [(name, getattr(learner, f"{name}_")) for name in self.saved_models(learner)]
        decoders = list(learner.decoders_) if self.per_action else [learner.decoder_]
        return list(zip(self.prefixes(len(decoders)), decoders, strict=True))

    def prefixes(self, n_actions: int) -> list[str]:
        """The tensor name prefix of each decoder (the other models' are their names)."""
        if self.per_action:
            return [f"decoder.{a}" for a in range(n_actions)]
        return ["decoder"]


LAYOUTS: dict[str, Algorithm] = {
    "igl": Algorithm("igl", per_action=False),
    "ai-igl": Algorithm("ai-igl", per_action=True),
    "igl-p": Algorithm("igl-p", per_action=False, models=("ik", "flags"),
                       optional=("posterior",), built_from=(("flags", "policy"),)),
    "vi-igl": Algorithm("vi-igl", per_action=False)}
"""How a folder holds each algorithm's models, by the name model.json records."""
ALGORITHMS = tuple(ALGORITHM_SETTINGS)
"""The algorithms' names, in the order of their settings (:data:`LAYOUTS` has each)."""
Learners = Mapping[str, tuple[type, type]]
"""Each algorithm's learner class and the class of its fit report (``report_``, kept in
model.json's training summary), by name: :func:`iglearn.learners.registry.learners`."""


def _linear_layers(module: nn.Module) -> list[nn.Linear]:
    from torch import nn

    return [m for m in module.modules() if isinstance(m, nn.Linear)]


def _describe(module: Policy | Decoder, spec: object, name: str) -> dict:
    """The ``policy`` or ``decoder`` record of model.json; ``spec`` is the learner's setting
    that built ``module`` (a custom module's factory is recorded by its import path)."""
    from iglearn.models.custom import CustomDecoder, CustomPolicy, factory_path
    from iglearn.models.personal import PersonalIK

    if isinstance(module, CustomPolicy | CustomDecoder):
        in_dim, out_dim = module.dims
        return {"class": CUSTOM, "factory": factory_path(spec, name),
                "temperature": module.temperature, "input_dim": in_dim, "output_dim": out_dim}
    if isinstance(module.net, PersonalIK):
        d_x, d_y, users = module.net.dims
        personal = {"class": PERSONAL, "temperature": module.temperature,
                    "input_dim": d_x + d_y,
                    "output_dim": _linear_layers(module.net.context)[-1].out_features,
                    "users": users, "model": module.net.model}
        hidden = module.net.hidden
        return personal if hidden is None else {**personal, "hidden": hidden}
    layers = _linear_layers(module.net)
    record = {"class": module.kind, "temperature": module.temperature,
              "input_dim": layers[0].in_features, "output_dim": layers[-1].out_features}
    if len(layers) > 1:
        record["hidden"] = layers[0].out_features
    return record


def _setting_names(cls: type) -> list[str]:
    """The constructor settings of a learner class, but its seed and where and how visibly it
    runs (:data:`RUNTIME`): the dataclass fields of a
    dataclass, else the keyword parameters of ``__init__``."""
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    else:
        init = cast(Any, cls).__init__  # the class's own constructor, read not called
        names = [name for name, p in inspect.signature(init).parameters.items()
                 if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return [name for name in names if name not in RUNTIME]


def _hints(target: Any) -> Mapping[str, Any]:
    """The resolved type annotations of a class (:func:`~iglearn.hints.settings_hints`) or of
    ``__init__``, or {} if they cannot be resolved; without one, a setting is only checked to
    be a JSON scalar."""
    try:
        if isinstance(target, type):
            return settings_hints(target)
        return typing.get_type_hints(target)
    except (NameError, TypeError):
        return {}


def _setting_types(cls: type) -> dict[str, Any]:
    """The type of each constructor setting of ``cls``: its annotation, or for a dataclass
    field whose default is a dataclass (the optimisation), that default's class."""
    if not dataclasses.is_dataclass(cls):
        return dict(_hints(cast(Any, cls).__init__))  # the class's own constructor
    found = dict(_hints(cls))
    for f in dataclasses.fields(cls):
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        if dataclasses.is_dataclass(default):
            found[f.name] = type(default)
    return found


def learner_settings(learner: object) -> dict[str, Any]:
    """Every constructor setting of ``learner`` but its seed, JSON-ready (a dataclass
    setting, such as the optimisation, as a dict)."""
    from iglearn.models.custom import factory_path, is_custom

    out = {}
    for name in _setting_names(type(learner)):
        value = getattr(learner, name)
        if name in ("policy", "decoder") and is_custom(value):
            value = factory_path(value, name)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
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
        required = [f.name for f in dataclasses.fields(hint) if f.init
                    and f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING]
        absent = [name for name in required if name not in values]
        if absent:
            raise _Invalid(f"an object with the field '{absent[0]}'", value)
        return cast(Any, hint)(**values)  # a dataclass of settings
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
    return float(cast(float, value)) if hint is float else value


def _expected(hint: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a finite number", str: "a string",
             type(None): "null"}
    if typing.get_origin(hint) is list:
        return f"a list of {_expected(typing.get_args(hint)[0])}s"
    if dataclasses.is_dataclass(hint):
        return f"an object of {cast(type, hint).__name__} settings"
    return names.get(hint, "a JSON number, string, boolean or null")


def _checked(name: str, value: Any, hint: Any) -> Any:
    """:func:`_typed`, plus the range of the settings in
    :data:`~iglearn.learners.settings.POSITIVE_SETTINGS` (None where the setting may be
    None) and ``NON_NEGATIVE_SETTINGS``."""
    value = _typed(value, hint)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if name in POSITIVE_SETTINGS and value is not None and not (number and value > 0):
        raise _Invalid("a number > 0", value)
    if name in NON_NEGATIVE_SETTINGS and not (number and value >= 0):
        raise _Invalid("a number >= 0", value)
    return value


def _damaged(path: str | Path, key: str, value: object, expected: str) -> IGLearnError:
    return IGLearnError(f"{path}: field '{key}' is {shown(value)}; expected {expected}; the "
                        f"model is damaged, fit again")


def _integer(record: dict, key: str, low: int, high: int, path: str | Path, prefix: str = "",
             limit: str | None = None) -> int:
    """``record[key]``, checked to be an integer in [low, high]."""
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        named = f" (iglearn.data.limits.{limit})" if limit else ""
        raise _damaged(path, prefix + key, value, f"an integer in [{low}, {high}]{named}")
    return value


def check_model_folder(folder: Path, option: str = "model folder") -> None:
    """Raise IGLearnError, before any work, unless a model may be written to ``folder``
    (named ``option`` in messages: ``--out`` on the command line): its
    parent exists and is writable, and ``folder`` is missing, empty, or exactly a model
    iglearn wrote (``model.json``, recognised by its format record, and
    ``weights.safetensors``, both plain files, and nothing else:
    :func:`~iglearn.files.replaceable_folder`): a folder holding anything else is never
    replaced. A folder named as a model archive (``model.tar.gz``) is refused too: it would
    be taken for the archive ``iglearn pack`` writes, and refused where an archive is read
    (``load``, the service); the message gives the pack command."""
    from iglearn.models.archive import ARCHIVE_SUFFIXES  # archive imports this module

    folder = Path(folder)
    suffix = next((s for s in ARCHIVE_SUFFIXES if folder.name.lower().endswith(s)), None)
    if suffix is not None:
        stem = folder.with_name(folder.name[:-len(suffix)] or "model")
        raise IGLearnError(f"{option} {folder}: names a model archive ({suffix}), but a model "
                           f"is written as a folder; write it to a folder ({stem.name}, say), "
                           f"then make the archive with 'iglearn pack "
                           f"{shlex.quote(str(stem))} --out {shlex.quote(str(folder))}' "
                           f"(iglearn.models.archive.pack_model in Python)")
    if not replaceable_folder(folder, option, (METADATA, WEIGHTS), "model"):
        return
    try:
        read_metadata(folder)
    except IGLearnError as e:
        raise IGLearnError(f"{option} {folder}: is not a model this iglearn wrote ({e}); "
                           f"choose a new folder, or remove it") from e


def save_model(learner: Any, algorithm: str, folder: str | Path,
               schema: FeatureSchema | None = None, extra: dict | None = None) -> Path:
    """Write a fitted learner of ``algorithm`` (a name of :data:`LAYOUTS`) to ``folder``; the
    learners' registry names the algorithm (:func:`iglearn.learners.registry.save_model`).

    ``model.json`` records the algorithm and every constructor setting of the learner but its
    seed, so that the loaded learner refits as this one did.

    Args:
        learner: a fitted learner.
        folder: the model folder; an existing iglearn model there is replaced.
        schema: names of the context and feedback features (from a DSJSON log) and the
            column mapping of a table; default: the schema of the log the learner was fitted
            on (its ``schema_``), if any.
        extra: more JSON-ready facts for the training summary (the log's name, say).
    """
    import torch
    from safetensors.torch import save_file

    folder = Path(folder)
    if schema is None:
        schema = getattr(learner, "schema_", None)
    layout = LAYOUTS[check_choice("algorithm", algorithm, LAYOUTS)]
    policy = learner._fitted_policy()
    saved = layout.saved(learner)
    check_model_folder(folder)
    tensors = {f"policy.{k}": v.detach().contiguous() for k, v in policy.state_dict().items()}
    for prefix, model in saved:
        tensors |= {f"{prefix}.{k}": v.detach().contiguous()
                    for k, v in model.state_dict().items()}
    if not all(bool(torch.isfinite(v).all()) for v in tensors.values()):
        raise IGLearnError(f"model folder {folder}: the fitted weights hold NaN or infinite values "
                           f"(the fit diverged); fit again, with a lower learning rate")
    p = _describe(policy, getattr(learner, "policy", None), "policy")
    report = getattr(learner, "report_", None)
    if layout.models:
        described = {name: _describe(model, getattr(learner, layout.setting_of(name), None),
                                     name)
                     for name, model in saved}
        feedback_dim = learner.feedback_dim_  # IGL-P's models: no decoder
    else:
        described = {"decoder": _describe(saved[0][1], getattr(learner, "decoder", None),
                                          "decoder")}
        feedback_dim = described["decoder"]["input_dim"]
    metadata = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "iglearn": iglearn.__version__,
        "algorithm": layout.name, "n_actions": p["output_dim"], "context_dim": p["input_dim"],
        "feedback_dim": feedback_dim, "policy": p, **described,
        "settings": learner_settings(learner),
        "feature_schema": schema.to_json() if schema is not None else None,
        "standardiser": (learner.standardiser_.to_dict()
                         if learner.standardiser_ is not None else None),
        "training": {**(dataclasses.asdict(report) if report is not None else {}),
                     **(extra or {})},
    }
    text = safejson.dumps(metadata, indent=2) + "\n"  # a number that is not finite: null
    size = len(text.encode())
    if size > limits.MAX_JSON_BYTES:  # never write what no reader of it accepts
        names = "" if schema is None else (f": its feature schema names {len(schema.context)} "
                                           f"context and {len(schema.feedback)} feedback "
                                           f"features")
        raise IGLearnError(f"model folder {folder}: its model.json would hold {size} bytes, "
                           f"more than {limits.MAX_JSON_BYTES} "
                           f"(iglearn.data.limits.MAX_JSON_BYTES), which a model is read "
                           f"within{names}; fit on fewer features (a log's rare sparse "
                           f"features, a bag of words, left out or hashed), or raise the "
                           f"limit where the model is written and read")
    tmp = temporary_folder(folder)
    try:
        save_file(tensors, str(tmp / WEIGHTS))
        set_ordinary_mode(tmp / WEIGHTS)  # safetensors creates it 0600
        (tmp / METADATA).write_text(text)
        replace_folder(tmp, folder)
    except OSError as e:
        raise IGLearnError(f"model folder {folder}: cannot write the model ({e.strerror or e}); "
                           f"check the free space and permissions") from e
    finally:
        remove_folder(tmp)
    return folder


def _check_module(record: object, key: str, classes: Sequence[str],
                  dims: dict[str, tuple[int, str]], path: str | Path) -> None:
    """The ``policy`` or ``decoder`` record of model.json: class (of ``classes``, or a custom
    module's, with its factory's import path, ``module:function``), temperature,
    dimensions."""
    if not isinstance(record, dict) or not isinstance(record.get("class"), str) or \
            record["class"] not in {*classes, CUSTOM}:
        found = record.get("class") if isinstance(record, dict) else record
        raise _damaged(path, f"{key}.class" if isinstance(record, dict) else key, found,
                       f"one of {sorted({*classes, CUSTOM})}")
    if record["class"] == CUSTOM:
        factory = record.get("factory")
        if not isinstance(factory, str) or not _FACTORY.fullmatch(factory):
            raise _damaged(path, f"{key}.factory", factory,
                           "the import path 'module:function' of the module's factory")
    temperature = record.get("temperature")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not (
            math.isfinite(temperature) and temperature >= MIN_TEMPERATURE):
        raise _damaged(path, f"{key}.temperature", temperature,
                       f"a finite number >= {MIN_TEMPERATURE:.3g} (smaller is 0 in float32)")
    for name, (want, source) in dims.items():
        value = record.get(name)
        if isinstance(value, bool) or value != want:
            raise _damaged(path, f"{key}.{name}", value, f"{want}, {source}")
    if record["class"] in (CUSTOM, PERSONAL):  # checked by their own rules
        return
    if record["class"] in HIDDEN:
        _integer(record, "hidden", 1, limits.MAX_HIDDEN, path, f"{key}.", "MAX_HIDDEN")
    elif "hidden" in record:
        raise _damaged(path, f"{key}.hidden", record["hidden"],
                       f"no hidden layer in a {record['class']} {key}")


MAX_MODEL_JSON_CONTAINERS = 100_000
"""Most objects and lists a ``model.json`` may hold (one iglearn writes holds a few dozen and
one per restart of its fit). Python spends a few hundred bytes on each it parses, so a
``model.json`` of ``{},`` repeated up to :data:`iglearn.data.limits.MAX_JSON_BYTES` would
cost about 45 times its size; it is refused before it is parsed."""


def _few_containers(data: bytes, path: str) -> None:
    """An error unless the JSON text ``data`` holds at most MAX_MODEL_JSON_CONTAINERS objects
    and lists (counted outside its strings when the quick count is over)."""
    count = data.count(b"{") + data.count(b"[")
    if count > MAX_MODEL_JSON_CONTAINERS:
        bare = safejson.JSON_STRING.sub(b'""', data)
        count = bare.count(b"{") + bare.count(b"[")
    if count > MAX_MODEL_JSON_CONTAINERS:
        raise IGLearnError(f"{path}: holds {count} objects and lists, more than "
                           f"{MAX_MODEL_JSON_CONTAINERS} "
                           f"(iglearn.models.io.MAX_MODEL_JSON_CONTAINERS); the model is "
                           f"damaged, fit again")


def member_label(source: str, name: str) -> str:
    """How messages name the file ``name`` of a model that came as ``source`` (an archive, an
    upload) and was unpacked into a temporary folder: ``"m.tar.gz (model.json)"``."""
    return f"{source} ({name})"


def _label(folder: Path, name: str, source: str | None) -> str:
    """How messages name the file ``name`` of the model folder ``folder``: its path, or
    :func:`member_label` of ``source`` when the folder was unpacked from it."""
    return str(folder / name) if source is None else member_label(source, name)


def read_metadata(folder: str | Path, source: str | None = None) -> dict:
    """``model.json`` of a model folder, every field checked (see the module's docstring);
    ``source``: what messages name instead of the folder (an archive it was unpacked from)."""
    from iglearn.data.formats.base import FeatureSchema

    folder = Path(folder)
    if not folder.is_dir():
        from iglearn.models.archive import is_archive  # archive imports this module

        if folder.is_file() and is_archive(folder):
            raise IGLearnError(f"{source or folder}: a model archive, not a model folder; read "
                               f"it with iglearn.models.archive.read_model, or write it as a "
                               f"folder with 'iglearn load {folder} --out FOLDER'")
        what = "a file, not a model folder" if folder.exists() else "no such model folder"
        raise IGLearnError(f"{source or folder}: {what}; give the --out folder of 'iglearn "
                           f"fit'")
    path = _label(folder, METADATA, source)
    if not (folder / METADATA).exists():
        raise IGLearnError(f"{path}: missing; {source or folder} is not an iglearn model "
                           f"folder (fit again with 'iglearn fit')")
    metadata = safejson.read(folder / METADATA, "the model is damaged, fit again",
                             "model description", name=path,
                             check=lambda data: _few_containers(data, path))
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise IGLearnError(f"{path}: not an iglearn model description; fit again")
    version = metadata.get("format_version")
    if version != FORMAT_VERSION:
        raise IGLearnError(
            f"{path}: model format {shown(version)} (written by iglearn "
            f"{shown(metadata.get('iglearn', '?'))}) but this iglearn {iglearn.__version__} "
            f"reads format {FORMAT_VERSION}; install the iglearn version that wrote it, or "
            f"refit")
    kind = algorithm_record(metadata, path)
    k = _integer(metadata, "n_actions", 2, limits.MAX_ACTIONS, path, limit="MAX_ACTIONS")
    d_x = _integer(metadata, "context_dim", 1, limits.MAX_DIM, path, limit="MAX_DIM")
    d_y = _integer(metadata, "feedback_dim", 1, limits.MAX_DIM, path, limit="MAX_DIM")
    _check_module(metadata.get("policy"), "policy", POLICY_KINDS,
                  {"input_dim": (d_x, "as 'context_dim' says"),
                   "output_dim": (k, "as 'n_actions' says")}, path)
    if kind.models and _personal(metadata):  # first: the posterior's dimensions read it
        _check_personal(metadata, path)
    for name, classes, dims in _module_records(kind, metadata):
        _check_module(metadata.get(name), name, classes, dims, path)
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
    if metadata.get("standardiser") is not None:
        Standardiser.from_dict(metadata["standardiser"], str(path), d_x, d_y)
    return metadata


def _personal(metadata: dict) -> bool:
    """Whether model.json's inverse-kinematics record ``ik`` is per-user grounding."""
    record = metadata.get("ik")
    return isinstance(record, dict) and record.get("class") == PERSONAL


def _module_records(kind: Algorithm, metadata: dict
                    ) -> list[tuple[str, Sequence[str], dict[str, tuple[int, str]]]]:
    """The model.json records besides ``policy`` of an algorithm: name, the classes it may
    name, and the dimensions it must have."""
    k, d_x, d_y = metadata["n_actions"], metadata["context_dim"], metadata["feedback_dim"]
    if kind.models:
        inputs = {"ik": (d_x + d_y, "d_x + d_y, the context and feedback per-user grounding "
                                    "reads") if _personal(metadata) else
                  (d_x + d_y + d_x * d_y, "d_x + d_y + d_x d_y, the inverse-kinematics "
                                          "features"),
                  "flags": (d_x, "as 'context_dim' says"),
                  "posterior": (_dims("posterior", metadata)[0],
                                "u + d_y + u d_y, the users' and feedback's features (u: the "
                                "ik record's users, 0 without)")}
        outputs = {"posterior": (1, "one decoded extremeness")}
        classes = {"ik": IK_KINDS, "posterior": POSTERIOR_KINDS}
        return [(name, classes.get(name, POLICY_KINDS),
                 {"input_dim": inputs[name],
                  "output_dim": outputs.get(name, (k, "as 'n_actions' says"))})
                for name in kind.recorded_models(metadata)]
    return [("decoder", DECODER_KINDS, {"input_dim": (d_y, "as 'feedback_dim' says"),
                                   "output_dim": (1, "one decoded reward")})]


def _check_personal(metadata: dict, path: str | Path) -> None:
    """The per-user grounding record ``ik``: its users (1 to d_x - 1) and the class of its
    context part (an mlp with its hidden width). The ``users`` and ``model`` settings must
    agree with them (:func:`_settings`)."""
    record = metadata["ik"]
    _integer(record, "users", 1, metadata["context_dim"] - 1, path, "ik.")
    model = record.get("model")
    if model not in POLICY_KINDS:
        raise _damaged(path, "ik.model", model, f"one of {sorted(POLICY_KINDS)}")
    if model == "mlp":
        _integer(record, "hidden", 1, limits.MAX_HIDDEN, path, "ik.", "MAX_HIDDEN")
    elif "hidden" in record:
        raise _damaged(path, "ik.hidden", record["hidden"], f"no hidden layer in a {model} "
                                                              f"context part")


def _dims(name: str, metadata: dict) -> tuple[int, ...]:
    """The constructor dimensions of the model ``name`` of a model folder."""
    k, d_x, d_y = metadata["n_actions"], metadata["context_dim"], metadata["feedback_dim"]
    if name == "ik" and _personal(metadata):
        return d_x, d_y, k
    if name == "posterior":
        users = metadata["ik"]["users"] if _personal(metadata) else 0
        return users + d_y + users * d_y, 1
    return {"policy": (d_x, k), "decoder": (d_y,), "ik": (d_x + d_y + d_x * d_y, k),
            "flags": (d_x, k)}[name]


def algorithm_record(metadata: dict, path: str | Path) -> Algorithm:
    """The algorithm model.json names (:data:`DEFAULT_ALGORITHM` when it names none)."""
    name = metadata.get("algorithm", DEFAULT_ALGORITHM)
    if not isinstance(name, str) or name not in ALGORITHMS:
        raise _damaged(path, "algorithm", name, f"one of {', '.join(ALGORITHMS)}")
    return LAYOUTS[name]


def _build(kind: str, record: dict, *dims: int,
           factories: dict[str, Any] | None = None) -> nn.Module:
    import torch
    from torch import nn

    from iglearn.models.custom import CustomDecoder, CustomPolicy, check_contract
    from iglearn.models.decoders import DECODERS
    from iglearn.models.personal import PersonalIK
    from iglearn.models.policies import POLICIES, Policy

    if record["class"] == CUSTOM:
        factory = (factories or {})[kind]
        in_dim, out_dim = (dims[0], 1) if kind == "decoder" else (dims[0], dims[1])
        module = factory(in_dim, out_dim, torch.Generator().manual_seed(0))
        if not isinstance(module, nn.Module):
            raise IGLearnError(f"the {kind} factory {record['factory']} returned a "
                               f"{type(module).__name__}, not a torch.nn.Module")
        check_contract(module, in_dim, out_dim, "decoder" if kind == "decoder" else "policy")
        wrapper = CustomDecoder if kind == "decoder" else CustomPolicy
        return wrapper(module, float(record["temperature"]), record["factory"],
                       (in_dim, out_dim))
    if record["class"] == PERSONAL:
        d_x, d_y, k = dims
        return Policy(PersonalIK(d_x, d_y, record["users"], k, record["model"],
                                 hidden=record.get("hidden")), float(record["temperature"]))
    classes = DECODERS if kind == "decoder" else POLICIES
    options = {"temperature": float(record["temperature"])}
    if "hidden" in record:
        options["hidden"] = record["hidden"]
    return classes[record["class"]](*dims, **options)


def _settings(metadata: dict, path: str | Path, cls: type,
              factories: dict[str, Any] | None = None) -> dict[str, Any]:
    """The learner's constructor settings recorded in model.json, checked; only those the
    current learner class ``cls`` accepts. A model without settings gets the defaults, with its
    classes and temperatures."""
    recorded = metadata.get("settings") or {}
    types = _setting_types(cls)
    names = _setting_names(cls)
    settings = {}
    for name in names:
        if name in recorded:
            try:
                settings[name] = _checked(name, recorded[name], types.get(name))
            except _Invalid as e:
                raise _damaged(path, f"settings.{name}{e.where}", e.value, e.expected) from None
    fitted = {"policy": metadata["policy"]["class"],
              "temperature": float(metadata["policy"]["temperature"])}
    if "decoder" in metadata:
        fitted |= {"decoder": metadata["decoder"]["class"],
                   "decoder_temperature": float(metadata["decoder"]["temperature"])}
    if "ik" in metadata:  # per-user grounding: its users and the class of its context part
        personal = _personal(metadata)
        fitted |= {"model": metadata["ik"]["model" if personal else "class"],
                   "users": metadata["ik"]["users"] if personal else 0,
                   "decode_from": "feedback" if "posterior" in metadata else "interaction"}
    for name, value in fitted.items():
        if name not in names:  # BatchIGL's policy temperature is not a setting
            continue
        if factories and name in factories:  # a custom module: its factory
            settings[name] = factories[name]
            continue
        if name in settings and settings[name] != value:
            raise _damaged(path, f"settings.{name}", settings[name],
                           f"{shown(value)}, as the saved model has")
        settings[name] = value
    return settings


def _report(training: dict, path: str | Path, cls: type) -> Any:
    """The fit report of class ``cls`` in the training summary, checked, or None when it holds
    none."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    required = {name for name, f in fields.items()
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    if not required <= set(training):
        return None
    hints = _hints(cls)
    values = {}
    for name in fields:
        if name in training:
            try:
                values[name] = _typed(training[name], hints.get(name))
            except _Invalid as e:
                raise _damaged(path, f"training.{name}", training[name], e.expected) from None
    return cls(**values)


def recorded_schema(metadata: dict, path: str | Path) -> FeatureSchema | None:
    """The feature schema a checked ``model.json`` (:func:`read_metadata`) records, or None;
    ``path`` names it in messages."""
    from iglearn.data.formats.base import FeatureSchema

    schema = metadata.get("feature_schema")
    return None if schema is None else FeatureSchema.from_json(schema, str(path))


def read_model(folder: str | Path, learners: Learners, algorithm: str | None = None, *,
               import_factories: bool = False, source: str | None = None) -> Any:
    """The fitted learner read back from ``folder``, of the class ``learners`` gives for the
    algorithm model.json names (:func:`iglearn.learners.registry.load_model` gives them all),
    with the settings it was fitted with (those this iglearn's learner class knows). With
    ``algorithm``, a folder that holds another algorithm's model is refused. ``source``: what
    messages name instead of the folder (the archive it was unpacked from, see
    :func:`member_label`).

    The learner's ``schema_`` holds the feature schema (or None) and ``metadata_`` the whole
    ``model.json``.

    A model on a custom module (:mod:`iglearn.models.custom`) is rebuilt by importing and
    calling the factory model.json names, which runs that module's code: a model.json with
    any record naming a factory, whichever record of whichever algorithm
    (:func:`factory_records`), loads only with ``import_factories=True``, for folders whose
    factories you trust.

    The weights file is read only once its size is within what the tensors model.json
    describes take (:func:`weights_bytes`), so a damaged or hostile file never costs more
    memory than the model it claims to be.
    """
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    folder = Path(folder)
    metadata = read_metadata(folder, source)
    meta_path = _label(folder, METADATA, source)
    kind = algorithm_record(metadata, meta_path)
    cls, report_cls = learners[kind.name]
    if algorithm is not None and kind.name != algorithm:
        wanted = learners[algorithm][0].__name__
        raise IGLearnError(f"{source or folder}: holds an {kind.name} model "
                           f"({cls.__name__}), not an {algorithm} one; load it with "
                           f"{cls.__name__}.load or iglearn.learners.load_model, or "
                           f"fit {'an' if wanted[0] in 'AEIOU' else 'a'} {wanted}")
    factories = _factories(metadata, meta_path, import_factories, kind, cls)
    settings = _settings(metadata, meta_path, cls, factories)
    report = _report(metadata.get("training") or {}, meta_path, report_cls)
    path = folder / WEIGHTS
    weights_path = _label(folder, WEIGHTS, source)
    if not path.exists():
        raise IGLearnError(f"{weights_path}: missing; the model is incomplete, fit again")
    k, d_x, d_y = metadata["n_actions"], metadata["context_dim"], metadata["feedback_dim"]
    parts, expected_states, most = _expected_weights(metadata, kind, factories)
    # a custom module's expected weights are what its factory builds now
    corrupt = ("the weights are corrupt, fit again" if not factories else
               f"the factory {shown(factory_records(metadata)[0][1])} builds other weights "
               f"than those saved (changed since the model was fitted?), or the weights are "
               f"corrupt: restore the factory as it was, or fit again")
    size = input_file(path, "model weights file")
    if size > most:
        raise IGLearnError(f"{weights_path}: {size} bytes, more than the {most} bytes the "
                           f"tensors {METADATA} describes take; {corrupt}")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise IGLearnError(f"{weights_path}: cannot be read ({shown(str(e))}); the weights are "
                           f"corrupt, fit again") from None
    groups: dict[str, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        part, rest = _part(key, kind)
        groups.setdefault(part, {})[rest] = value
    prefixes = {prefix for prefix, _, _ in parts}
    stray = sorted(key for key in tensors if _part(key, kind)[0] not in prefixes)
    if stray:
        raise IGLearnError(f"{weights_path}: holds the tensor {shown(stray[0])}, which no part "
                           f"of the model has; the model is corrupt, fit again")
    modules = {}
    for prefix, name, dims in parts:
        state = groups.get(prefix, {})
        expected = expected_states[name]
        if set(state) != set(expected):
            raise IGLearnError(f"{weights_path}: the {prefix} weights {shown(sorted(state))} "
                               f"do not match a {metadata[name]['class']} {name} "
                               f"({sorted(expected)}); {corrupt}")
        for key, value in state.items():
            if value.shape != expected[key].shape or value.dtype != expected[key].dtype:
                raise IGLearnError(
                    f"{weights_path}: {prefix} weight '{key}' is {value.dtype} of shape "
                    f"{tuple(value.shape)}, but the {name} model.json describes has "
                    f"{expected[key].dtype} of shape {tuple(expected[key].shape)}; {corrupt}")
            if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                raise IGLearnError(f"{weights_path}: {prefix} weight '{key}' holds NaN or "
                                   f"infinite values; the model is corrupt, fit again")
        module = _build(name, metadata[name], *dims, factories=factories)
        module.load_state_dict(state)
        modules[prefix] = module.eval()
    learner = cls(**settings)
    learner.policy_ = modules["policy"]
    if kind.models:
        for name in kind.recorded_models(metadata):
            setattr(learner, f"{name}_", modules[name])
        learner.feedback_dim_ = d_y
    elif kind.per_action:
        learner.decoders_ = [modules[prefix] for prefix in kind.prefixes(k)]
    else:
        learner.decoder_ = modules["decoder"]
    if report is not None:
        learner.report_ = report
    learner.schema_ = recorded_schema(metadata, meta_path)
    statistics = metadata.get("standardiser")  # none: saved raw, or before standardisation
    learner.standardiser_ = (None if statistics is None else
                             Standardiser.from_dict(statistics, meta_path, d_x, d_y))
    learner.metadata_ = metadata
    return learner


def _parts(metadata: dict, kind: Algorithm) -> list[tuple[str, str, tuple[int, ...]]]:
    """The parts of a model: tensor name prefix, model.json record, constructor
    dimensions."""
    k, d_x, d_y = metadata["n_actions"], metadata["context_dim"], metadata["feedback_dim"]
    parts: list[tuple[str, str, tuple[int, ...]]] = [("policy", "policy", (d_x, k))]
    if kind.models:
        return parts + [(name, name, _dims(name, metadata))
                        for name in kind.recorded_models(metadata)]
    return parts + [(prefix, "decoder", (d_y,)) for prefix in kind.prefixes(k)]


WEIGHTS_HEADER_BYTES = 4096
"""Bytes a weights file may hold besides its tensors and 256 bytes per tensor (safetensors'
header: each tensor's name, type, shape and offsets)."""


def weights_bytes(tensors: dict[str, torch.Tensor]) -> int:
    """The most bytes a weights file of ``tensors`` (their names, shapes and types: meta
    tensors will do) may take: their bytes and a header (:data:`WEIGHTS_HEADER_BYTES`)."""
    data = sum(t.numel() * t.element_size() for t in tensors.values())
    return 8 + WEIGHTS_HEADER_BYTES + 256 * len(tensors) + data


def _expected_weights(metadata: dict, kind: Algorithm, factories: dict
                      ) -> tuple[list, dict[str, dict], int]:
    """The weights ``model.json`` describes: its parts (:func:`_parts`), the expected state
    (names, shapes, types) of each record they name, and :func:`weights_bytes` of them all."""
    parts = _parts(metadata, kind)
    dims = {name: shape for _, name, shape in parts}  # AI-IGL's decoders: one record
    states = {name: _expected_state(metadata, name, shape, factories)
              for name, shape in dims.items()}
    most = weights_bytes({f"{prefix}.{key}": value for prefix, name, _ in parts
                          for key, value in states[name].items()})
    return parts, states, most


def weights_budget(folder: str | Path, source: str | None = None) -> int | None:
    """:func:`weights_bytes` of the model whose ``model.json`` (checked) is in ``folder``, or
    None for a model on a custom module (its tensors are known only once its factory, which
    is not imported here, runs)."""
    metadata = read_metadata(folder, source)
    if factory_records(metadata):
        return None
    kind = algorithm_record(metadata, _label(Path(folder), METADATA, source))
    return _expected_weights(metadata, kind, {})[2]


def factory_records(metadata: object) -> list[tuple[str, object]]:
    """Every record of model.json, at any depth, that names a factory (class 'custom' or a
    'factory' field), whichever learner saved it: its path ('decoder', 'ik',
    'settings.x') and the factory it names, sorted."""
    found: list[tuple[str, object]] = []
    stack: list[tuple[object, str]] = [(metadata, "")]
    while stack:
        item, where = stack.pop()
        children: list[tuple[object, str]] = []
        if isinstance(item, dict):
            if where and (item.get("class") == CUSTOM or "factory" in item):
                found.append((where, item.get("factory")))
            children = [(child, f"{where}.{key}" if where else str(key))
                        for key, child in item.items()]
        elif isinstance(item, list):
            children = [(child, f"{where}[{i}]") for i, child in enumerate(item)]
        stack.extend((child, at) for child, at in children if isinstance(child, dict | list))
    return sorted(found, key=lambda record: record[0])


def _factories(metadata: dict, path: str | Path, allowed: bool, kind: Algorithm, cls: type
               ) -> dict[str, Any]:
    """The factories of the custom modules model.json names, imported only when ``allowed``
    (every record naming one is found, :func:`factory_records`; nothing is imported
    otherwise) and only for a module the algorithm's learner (of class ``cls``) builds from a
    setting of the same name; otherwise an error saying how to opt in, or that the model is
    damaged."""
    records = factory_records(metadata)
    if records and not allowed:
        where, factory = records[0]
        more = f" (and {len(records) - 1} more records)" if len(records) > 1 else ""
        raise IGLearnError(f"{path}: the {where} record{more} names the factory {shown(factory)} "
                           f"of a custom module; loading it imports and runs that code, so it "
                           f"loads only when asked, in Python (the command line imports no "
                           f"factory): load_model(folder, import_factories=True) (or "
                           f"{cls.__name__}.load(folder, import_factories=True)) if you trust "
                           f"it")
    modules = {name for _, name, _ in _parts(metadata, kind)}
    settings = set(_setting_names(cls))
    custom = {}
    for where, factory in records:
        record, setting = metadata.get(where), kind.setting_of(where)
        source = metadata.get(setting) if setting != where else record  # built alike
        if where not in modules or setting not in settings or not isinstance(record, dict) or \
                record.get("class") != CUSTOM or not isinstance(source, dict) or \
                source.get("factory") != record.get("factory"):
            raise IGLearnError(f"{path}: the {where} record names the factory "
                               f"{shown(factory)}, but an {kind.name} model builds no "
                               f"{where} from a factory; the model is damaged, fit again")
        custom[where] = record["factory"]  # a checked import path (read_metadata)
    from iglearn.models.custom import import_factory

    return {name: import_factory(factory, name, str(path)) for name, factory in custom.items()}


def _part(key: str, kind: Algorithm) -> tuple[str, str]:
    """The part of the model a tensor name belongs to ('policy', 'decoder' or, one decoder
    per action, 'decoder.<a>') and its name within that part."""
    part, _, rest = key.partition(".")
    if part == "decoder" and kind.per_action:
        index, _, rest = rest.partition(".")
        part = f"decoder.{index}"
    return part, rest


def _expected_state(metadata: dict, name: str, dims: tuple[int, ...],
                    factories: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The state (names, shapes and types only: nothing is allocated, but for a custom
    module, built once on the CPU) of the ``name`` module ('policy' or 'decoder') model.json
    describes."""
    import torch

    if metadata[name]["class"] == CUSTOM:
        return _build(name, metadata[name], *dims, factories=factories).state_dict()
    with torch.device("meta"):
        return _build(name, metadata[name], *dims).state_dict()
