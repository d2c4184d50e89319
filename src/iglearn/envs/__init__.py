"""Environments: the base class, the classification reduction, and the MNIST tasks."""

from iglearn.envs.base import Contexts, Environment
from iglearn.envs.classification import ArraySource, ClassificationEnvironment, LabelFeedback
from iglearn.envs.mnist import digits_environment, make_environment, mnist_environment

__all__ = [
    "ArraySource",
    "ClassificationEnvironment",
    "Contexts",
    "Environment",
    "LabelFeedback",
    "digits_environment",
    "make_environment",
    "mnist_environment",
]
