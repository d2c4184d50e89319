"""Learners: batch IGL (Eq. 2 with the Appendix B fixes), AI-IGL for action-inclusive
feedback, the SUP and CB baselines, and the online learners (E2G, online AI-IGL, online CB,
uniform play)."""

from iglearn.learners.ai_igl import AIIGL, AIIGLReport, OnlineAIIGL
from iglearn.learners.baselines import ContextualBandit, Supervised
from iglearn.learners.batch_igl import BatchIGL, FitReport, IdentifiabilityWarning
from iglearn.learners.e2g import E2G, EpochGreedy, OnlineContextualBandit
from iglearn.learners.online import OnlineLearner, UniformLearner
from iglearn.learners.schedules import (
    DataDrivenSchedule,
    PaperSchedule,
    Schedule,
    TheorySchedule,
    make_schedule,
)
from iglearn.learners.training import Optimisation

__all__ = [
    "AIIGL",
    "AIIGLReport",
    "BatchIGL",
    "ContextualBandit",
    "DataDrivenSchedule",
    "E2G",
    "EpochGreedy",
    "FitReport",
    "IdentifiabilityWarning",
    "OnlineAIIGL",
    "OnlineContextualBandit",
    "OnlineLearner",
    "Optimisation",
    "PaperSchedule",
    "Schedule",
    "Supervised",
    "TheorySchedule",
    "UniformLearner",
    "make_schedule",
]
