"""iglearn: Interaction-Grounded Learning (Xie, Langford, Mineiro, Momennejad, ICML 2021).

A learner sees a context x, picks one of K actions a, and observes only a feedback vector y.
The binary reward r is latent; y is conditionally independent of (x, a) given r. iglearn
learns a policy pi and a reward decoder psi jointly from such interactions.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("iglearn")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

from iglearn.data.logs import InteractionLog
from iglearn.data.stream import LogStream, StreamSettings, open_log
from iglearn.errors import IGLearnError
from iglearn.learners import AIIGL, BatchIGL, ContextualBandit, FitReport, Supervised
from iglearn.learners.monitor import EpochRecord
from iglearn.learners.training import Optimisation

__all__ = [
    "AIIGL",
    "BatchIGL",
    "ContextualBandit",
    "EpochRecord",
    "FitReport",
    "IGLearnError",
    "InteractionLog",
    "LogStream",
    "Optimisation",
    "StreamSettings",
    "Supervised",
    "__version__",
    "open_log",
]
