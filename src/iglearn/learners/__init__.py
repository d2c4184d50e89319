"""Learners: batch IGL (Eq. 2 with the Appendix B fixes), AI-IGL for action-inclusive
feedback, IGL-P for personalised feedback, VI-IGL (conditional mutual information, for noisy
feedback), the SUP and CB baselines, and the online learners (E2G, online AI-IGL, online
IGL-P, online CB, uniform play).

The names below are imported on first use (they import torch), so that the light modules of
this package (:mod:`iglearn.learners.settings`, :mod:`iglearn.learners.schedules`) import
without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iglearn.lazy import lazy_names

if TYPE_CHECKING:
    from iglearn.learners.ai_igl import AIIGL, AIIGLReport, OnlineAIIGL
    from iglearn.learners.baselines import ContextualBandit, Supervised
    from iglearn.learners.batch_igl import BatchIGL, FitReport, IdentifiabilityWarning
    from iglearn.learners.e2g import E2G, EpochGreedy, OnlineContextualBandit
    from iglearn.learners.iglp import IGLP, IGLPReport, OnlineIGLP
    from iglearn.learners.online import OnlineLearner, UniformLearner
    from iglearn.learners.registry import load_model, save_model
    from iglearn.learners.schedules import (
        DataDrivenSchedule,
        PaperSchedule,
        Schedule,
        TheorySchedule,
        make_schedule,
    )
    from iglearn.learners.settings import Optimisation
    from iglearn.learners.vi_igl import VIIGL, VIIGLReport

# Each public name and the module it comes from.
_SOURCES = {
    "AIIGL": "iglearn.learners.ai_igl",
    "AIIGLReport": "iglearn.learners.ai_igl",
    "BatchIGL": "iglearn.learners.batch_igl",
    "ContextualBandit": "iglearn.learners.baselines",
    "DataDrivenSchedule": "iglearn.learners.schedules",
    "E2G": "iglearn.learners.e2g",
    "EpochGreedy": "iglearn.learners.e2g",
    "FitReport": "iglearn.learners.batch_igl",
    "IGLP": "iglearn.learners.iglp",
    "IGLPReport": "iglearn.learners.iglp",
    "IdentifiabilityWarning": "iglearn.learners.batch_igl",
    "OnlineAIIGL": "iglearn.learners.ai_igl",
    "OnlineContextualBandit": "iglearn.learners.e2g",
    "OnlineIGLP": "iglearn.learners.iglp",
    "OnlineLearner": "iglearn.learners.online",
    "Optimisation": "iglearn.learners.settings",
    "PaperSchedule": "iglearn.learners.schedules",
    "Schedule": "iglearn.learners.schedules",
    "Supervised": "iglearn.learners.baselines",
    "TheorySchedule": "iglearn.learners.schedules",
    "UniformLearner": "iglearn.learners.online",
    "VIIGL": "iglearn.learners.vi_igl",
    "VIIGLReport": "iglearn.learners.vi_igl",
    "load_model": "iglearn.learners.registry",
    "make_schedule": "iglearn.learners.schedules",
    "save_model": "iglearn.learners.registry",
}

__all__ = [
    "AIIGL",
    "AIIGLReport",
    "BatchIGL",
    "ContextualBandit",
    "DataDrivenSchedule",
    "E2G",
    "EpochGreedy",
    "FitReport",
    "IGLP",
    "IGLPReport",
    "IdentifiabilityWarning",
    "OnlineAIIGL",
    "OnlineContextualBandit",
    "OnlineIGLP",
    "OnlineLearner",
    "Optimisation",
    "PaperSchedule",
    "Schedule",
    "Supervised",
    "TheorySchedule",
    "UniformLearner",
    "VIIGL",
    "VIIGLReport",
    "load_model",
    "make_schedule",
    "save_model",
]


__getattr__, __dir__ = lazy_names(globals(), _SOURCES)
