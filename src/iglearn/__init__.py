"""iglearn: Interaction-Grounded Learning (Xie, Langford, Mineiro, Momennejad, ICML 2021).

A learner sees a context x, picks one of K actions a, and observes only a feedback vector y.
The binary reward r is latent; y is conditionally independent of (x, a) given r. iglearn
learns a policy pi and a reward decoder psi jointly from such interactions.

The names below are imported on first use (``from iglearn import BatchIGL`` imports torch
then), so that ``import iglearn`` and the command line's start stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iglearn.lazy import lazy_names

if TYPE_CHECKING:
    from iglearn._version import __version__
    from iglearn.data.logs import InteractionLog
    from iglearn.data.stream import LogStream, StreamSettings, open_log
    from iglearn.errors import IGLearnError
    from iglearn.learners import (
        AIIGL,
        E2G,
        IGLP,
        VIIGL,
        BatchIGL,
        ContextualBandit,
        FitReport,
        Supervised,
    )
    from iglearn.learners.monitor import EpochRecord
    from iglearn.learners.settings import Optimisation

# Each public name and the module it comes from.
_SOURCES = {
    "AIIGL": "iglearn.learners",
    "BatchIGL": "iglearn.learners",
    "ContextualBandit": "iglearn.learners",
    "E2G": "iglearn.learners",
    "EpochRecord": "iglearn.learners.monitor",
    "FitReport": "iglearn.learners",
    "IGLP": "iglearn.learners",
    "IGLearnError": "iglearn.errors",
    "InteractionLog": "iglearn.data.logs",
    "LogStream": "iglearn.data.stream",
    "Optimisation": "iglearn.learners.settings",
    "StreamSettings": "iglearn.data.stream",
    "Supervised": "iglearn.learners",
    "VIIGL": "iglearn.learners",
    "__version__": "iglearn._version",
    "open_log": "iglearn.data.stream",
}

__all__ = [
    "AIIGL",
    "BatchIGL",
    "ContextualBandit",
    "E2G",
    "EpochRecord",
    "FitReport",
    "IGLP",
    "IGLearnError",
    "InteractionLog",
    "LogStream",
    "Optimisation",
    "StreamSettings",
    "Supervised",
    "VIIGL",
    "__version__",
    "open_log",
]


__getattr__, __dir__ = lazy_names(globals(), _SOURCES)
