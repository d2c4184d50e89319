"""Learners: batch IGL (Eq. 2 with the Appendix B fixes) and the SUP and CB baselines."""

from iglearn.learners.baselines import ContextualBandit, Supervised
from iglearn.learners.batch_igl import BatchIGL, FitReport, IdentifiabilityWarning
from iglearn.learners.training import Optimisation

__all__ = [
    "BatchIGL",
    "ContextualBandit",
    "FitReport",
    "IdentifiabilityWarning",
    "Optimisation",
    "Supervised",
]
