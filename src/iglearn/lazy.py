"""Packages whose public names are imported on first use (:pep:`562`), so that importing the
package, and the command line's start, stay light: ``iglearn``, ``iglearn.learners`` and
``iglearn.models``."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(namespace: dict[str, Any], sources: Mapping[str, str]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of a package whose globals are
    ``namespace``: a public name of ``sources`` (name -> module) is imported from its module
    on first use and kept in ``namespace``; ``dir()`` lists the globals and ``__all__``."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(sources[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace["__all__"]})

    return __getattr__, __dir__
