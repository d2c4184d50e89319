"""Environments: the base class, the classification reduction, the MNIST tasks, and
environments whose feedback depends on the action (action-inclusive MNIST, a simulated BCI),
and the noisy-feedback tasks."""

from iglearn.envs.action_inclusive import (
    ActionInclusiveEnvironment,
    ActionRewardFeedback,
    action_inclusive_environment,
    shifted_digit,
)
from iglearn.envs.base import Contexts, Environment, Independence
from iglearn.envs.bci import BCIEnvironment, BCIPatterns
from iglearn.envs.classification import ArraySource, ClassificationEnvironment, LabelFeedback
from iglearn.envs.mnist import digits_environment, make_environment, mnist_environment
from iglearn.envs.named import ENVIRONMENTS, named_environment
from iglearn.envs.noisy import NoisyFeedbackEnvironment, noisy_environment

__all__ = [
    "ENVIRONMENTS",
    "ActionInclusiveEnvironment",
    "ActionRewardFeedback",
    "ArraySource",
    "BCIEnvironment",
    "BCIPatterns",
    "ClassificationEnvironment",
    "Contexts",
    "Environment",
    "Independence",
    "LabelFeedback",
    "NoisyFeedbackEnvironment",
    "action_inclusive_environment",
    "digits_environment",
    "make_environment",
    "mnist_environment",
    "named_environment",
    "noisy_environment",
    "shifted_digit",
]
