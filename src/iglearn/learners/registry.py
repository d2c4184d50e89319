"""The learners a model folder may hold, by the algorithm name its ``model.json`` records
(``iglearn fit --algorithm``, the service's ``[model] algorithm``): the one registry of
algorithms, and saving and loading a fitted learner through it.

The folder format (files, tensor names, ``model.json``'s records and their checks) is
:mod:`iglearn.models.io`'s, which knows every algorithm's layout but imports no learner; the
classes come from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from iglearn.data.formats.base import FeatureSchema

LEARNERS: dict[str, tuple[str, str, str]] = {
    "igl": ("iglearn.learners.batch_igl", "BatchIGL", "FitReport"),
    "ai-igl": ("iglearn.learners.ai_igl", "AIIGL", "AIIGLReport"),
    "igl-p": ("iglearn.learners.iglp", "IGLP", "IGLPReport"),
    "vi-igl": ("iglearn.learners.vi_igl", "VIIGL", "VIIGLReport")}
"""Each algorithm's learner, by name, in the order of :data:`iglearn.models.io.ALGORITHMS`:
the module that defines it, the learner class and the class of its fit report
(``report_``), by name, so that a command imports only the learner it runs."""


class _Learners(Mapping[str, tuple[type, type]]):
    """:data:`LEARNERS` as classes: a learner's module is imported when its name is looked
    up."""

    def __getitem__(self, name: str) -> tuple[type, type]:
        module, learner, report = LEARNERS[name]
        found = importlib.import_module(module)
        return getattr(found, learner), getattr(found, report)

    def __iter__(self) -> Iterator[str]:
        return iter(LEARNERS)

    def __len__(self) -> int:
        return len(LEARNERS)


_LEARNERS = _Learners()


def learners() -> Mapping[str, tuple[type, type]]:
    """Each algorithm's learner class and the class of its fit report (``report_``), by
    name, in the order of :data:`iglearn.models.io.ALGORITHMS`; looking a name up imports
    that learner's module only."""
    return _LEARNERS


def learner_class(algorithm: str) -> type:
    """The learner class of ``algorithm`` (a name of :func:`learners`)."""
    return learners()[algorithm][0]


def algorithm_of(learner: object) -> str:
    """The name of the algorithm whose learner ``learner`` is (without importing the other
    learners' modules)."""
    cls = type(learner)
    for name, (module, learner_name, _) in LEARNERS.items():
        if cls.__module__ == module and cls.__qualname__ == learner_name:
            return name
    raise TypeError(f"a model folder cannot hold a {cls.__name__}; it holds one of "
                    f"{', '.join(learner for _, learner, _ in LEARNERS.values())}")


def save_model(learner: Any, folder: str | Path, schema: FeatureSchema | None = None,
               extra: dict | None = None) -> Path:
    """Write a fitted learner of the registry to ``folder``, an existing iglearn model there
    replaced, with its algorithm's name (:func:`iglearn.models.io.save_model`, which says what
    ``schema`` and ``extra`` add)."""
    from iglearn.models.io import save_model as write

    return write(learner, algorithm_of(learner), folder, schema, extra)


def load_model(folder: str | Path, algorithm: str | None = None, *,
               import_factories: bool = False, source: str | None = None) -> Any:
    """The fitted learner read back from ``folder``: a :class:`~iglearn.learners.BatchIGL`,
    :class:`~iglearn.learners.AIIGL`, :class:`~iglearn.learners.iglp.IGLP` or
    :class:`~iglearn.learners.VIIGL`, as model.json's ``algorithm`` says, with the settings it
    was fitted with (:func:`iglearn.models.io.read_model`). With ``algorithm``, a folder that
    holds another algorithm's model is refused. ``source``: what messages name instead of the
    folder (the archive it was unpacked from).

    The learner's ``schema_`` holds the feature schema (or None) and ``metadata_`` the whole
    ``model.json``. A model on a custom module (:mod:`iglearn.models.custom`) is rebuilt by
    importing and calling the factory model.json names, which runs that module's code: it
    loads only with ``import_factories=True``, for folders whose factories you trust.
    """
    from iglearn.errors import check_choice
    from iglearn.models.io import read_model

    if algorithm is not None:
        check_choice("algorithm", algorithm, LEARNERS)
    return read_model(folder, learners(), algorithm, import_factories=import_factories,
                      source=source)
