"""The types of settings fields, read at run time without importing what the type checker
alone needs.

A settings class that must import without torch (:mod:`iglearn.learners.settings`) names
torch types (``nn.Module``) in its annotations, imported only under ``TYPE_CHECKING``, where
``typing.get_type_hints`` cannot resolve them. :func:`settings_hints` resolves each annotation
in the module of the class that declares it, as ``typing.get_type_hints`` does, except that a
name that module does not define at run time stands for :class:`Unresolved`, a type no value
is an instance of: ``str | nn.Module | ModelFactory`` reads as ``str | Unresolved``, whose
``str`` part is what a command line or a model.json can give.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import math
import numbers
import sys
import types
import typing
from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any, cast


class _Opaque(type):
    """The metaclass of :class:`Unresolved`: an attribute (``nn.Module``) or a subscript
    (``Callable[...]`` of an unknown name) of it is itself."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return cls

    def __getitem__(cls, item: object) -> Any:
        return cls


class Unresolved(metaclass=_Opaque):
    """Stands for a type named in an annotation but imported only for the type checker."""


class _Names(dict):
    """Local names of an annotation's evaluation: none but :class:`Unresolved` for a name
    that neither ``namespace`` (the module's) nor the builtins define."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        super().__init__()
        self.namespace = namespace

    def __missing__(self, name: str) -> Any:
        if name in self.namespace or hasattr(builtins, name):
            raise KeyError(name)  # found in the module's globals or the builtins
        return Unresolved


@functools.cache
def settings_hints(cls: type) -> Mapping[str, Any]:
    """The resolved annotation of every attribute of class ``cls`` and of its bases, by name,
    names imported only under ``TYPE_CHECKING`` standing for :class:`Unresolved`; read-only,
    resolved once per class (the command line asks once per option)."""
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        namespace = vars(sys.modules[klass.__module__])
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            if isinstance(annotation, str):
                annotation = eval(annotation, namespace, _Names(namespace))  # noqa: S307
            hints[name] = annotation
    return MappingProxyType(hints)


INTEGER_LIMIT = 2**63
"""Every integer setting (a seed, a count of epochs or restarts, ...) is below this bound, a
signed 64-bit integer: what a TOML file can write and what a model folder's ``model.json``
and a run's ``run.json`` record and read back (:data:`iglearn.data.limits.MAX_INTEGER_DIGITS`).
A setting is refused beyond it when it is given, not when the model is read."""

SCALARS = (bool, int, float, str, type(None))
"""The types of the settings :func:`check_fields` checks by their annotation."""


def scalar_kinds(hint: Any) -> tuple[type, ...] | None:
    """The types of an annotation made of :data:`SCALARS` only (``int``, ``float | None``),
    or None for any other (a literal, a module or a factory, a seed): those a field's own
    check reads."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    kinds = typing.get_args(hint) if union else (hint,)
    return kinds if kinds and all(kind in SCALARS for kind in kinds) else None


def whole_number(value: object) -> int | None:
    """``value`` as a Python int when it is a whole number (any integral number, numpy's
    too, but a bool), else None: the one test of every setting that counts something."""
    flag = isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b"
    return int(value) if isinstance(value, numbers.Integral) and not flag else None


class _Wrong(Exception):
    """A value of no type that a scalar annotation admits."""


def _scalar(value: object, kinds: tuple[type, ...], infinite: bool = False) -> object:
    """``value`` as the first of ``kinds`` it is: a bool only from a bool (numpy's too), a
    whole number from any integral number but a bool, a float from any finite real number but a
    bool (``infinite``: +inf too); else :class:`_Wrong`."""
    flag = isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b"
    if value is None and type(None) in kinds:
        return None
    if flag:
        if bool in kinds:
            return bool(value)
        raise _Wrong
    if int in kinds and (whole := whole_number(value)) is not None:
        return whole
    if float in kinds and isinstance(value, numbers.Real) and (
            math.isfinite(value) or (infinite and value == math.inf)):
        return float(value)
    if str in kinds and isinstance(value, str):
        return value
    raise _Wrong


def _wanted(kinds: tuple[type, ...], bound: str) -> str:
    """What a field of ``kinds`` takes, in words (``bound``: " >= 1", " > 0" or "")."""
    words = {bool: "True or False", int: f"a whole number{bound}",
             float: f"a finite number{bound}", str: "text", type(None): "None"}
    named = [words[kind] for kind in kinds if not (kind is float and int in kinds)]
    return " or ".join(named)


def check_fields(settings: object, positive: Collection[str] = (),
                 non_negative: Collection[str] = (), infinite: Collection[str] = ()) -> None:
    """Refuse a field of the dataclass ``settings`` whose value its annotation does not admit,
    for the annotations made of :data:`SCALARS` (``corrector="no"``, ``lr=True``, NaN), or
    out of range (``positive``: the names that must be above 0, ``non_negative``: at least 0;
    ``infinite``: the names that may also be +inf; an integer below :data:`INTEGER_LIMIT`),
    in one line naming the field; a numpy number or
    bool is stored as the Python one it is (``update_every=np.int64(100)`` is a whole
    number). The one check of every settings class
    (the learners', their optimisation's, a stream's, a schedule's)."""
    from iglearn.errors import IGLearnError

    hints = settings_hints(cast(type, type(settings)))
    for item in dataclasses.fields(settings):  # type: ignore[arg-type]
        kinds = scalar_kinds(hints.get(item.name)) if item.init else None
        if kinds is None:
            continue
        value = getattr(settings, item.name)
        least = 1 if int in kinds and float not in kinds else 0
        bound = ((f" >= {least}" if least else " > 0") if item.name in positive
                 else " >= 0" if item.name in non_negative else "")
        try:
            read = _scalar(value, kinds, item.name in infinite)
        except _Wrong:
            raise IGLearnError(f"{item.name} must be {_wanted(kinds, bound)}, got "
                               f"{value!r}") from None
        if isinstance(read, int | float) and not isinstance(read, bool) and (
                (item.name in positive and not read > 0)
                or (item.name in non_negative and not read >= 0)):
            raise IGLearnError(f"{item.name} must be {_wanted(kinds, bound)}, got {value!r}")
        if isinstance(read, int) and not isinstance(read, bool) and abs(read) >= INTEGER_LIMIT:
            raise IGLearnError(f"{item.name} must be below 2**63 (what a model records), got "
                               f"{value!r}")
        if read is not value:
            object.__setattr__(settings, item.name, read)  # frozen dataclasses too

