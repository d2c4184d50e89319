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
import functools
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any


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
