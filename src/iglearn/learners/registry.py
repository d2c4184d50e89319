"""The learners a model folder may hold, by the algorithm name its ``model.json`` records
(``iglearn fit --algorithm``, the service's ``[model] algorithm``): the one registry of
algorithms, and saving and loading a fitted learner through it.

The folder format (files, tensor names, ``model.json``'s records and their checks) is
:mod:`iglearn.models.io`'s, which knows every algorithm's layout but imports no learner; the
classes come from here.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from iglearn.data.formats.base import FeatureSchema


@cache
def learners() -> dict[str, tuple[type, type]]:
    """Each algorithm's learner class and the class of its fit report (``report_``), by
    name, in the order of :data:`iglearn.models.io.ALGORITHMS`."""
    from iglearn.learners.ai_igl import AIIGL, AIIGLReport
    from iglearn.learners.batch_igl import BatchIGL, FitReport
    from iglearn.learners.iglp import IGLP, IGLPReport
    from iglearn.learners.vi_igl import VIIGL, VIIGLReport

    return {"igl": (BatchIGL, FitReport), "ai-igl": (AIIGL, AIIGLReport),
            "igl-p": (IGLP, IGLPReport), "vi-igl": (VIIGL, VIIGLReport)}


def learner_class(algorithm: str) -> type:
    """The learner class of ``algorithm`` (a name of :func:`learners`)."""
    return learners()[algorithm][0]


def algorithm_of(learner: object) -> str:
    """The name of the algorithm whose learner ``learner`` is."""
    for name, (cls, _) in learners().items():
        if type(learner) is cls:
            return name
    raise TypeError(f"a model folder cannot hold a {type(learner).__name__}; it holds one of "
                    f"{', '.join(cls.__name__ for cls, _ in learners().values())}")


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
    from iglearn.models.io import read_model

    return read_model(folder, learners(), algorithm, import_factories=import_factories,
                      source=source)
