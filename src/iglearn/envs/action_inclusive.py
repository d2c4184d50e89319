"""Action-inclusive feedback (Xie et al., "Interaction-Grounded Learning with Action-inclusive
Feedback", NeurIPS 2022): the feedback depends on the action as well as on the reward,
y independent of x given (a, r), instead of the 2021 paper's y independent of (x, a) given r.

The action-inclusive MNIST task of that paper's code keeps the classification task (context =
a digit, r = 1 iff the action is its label) and shows as feedback an image of the digit
(a + 6 r - 3) mod 10: a + 3 when the action is right, a - 3 when it is wrong. Every digit is
then shown after right and after wrong actions alike, so a decoder that reads the digit alone
cannot tell them apart, and the 2021 objective can be gamed by a decoder that recognises the
feedback of one action and a policy that plays it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from iglearn.envs.base import Contexts, Environment, Independence
from iglearn.envs.classification import (
    ClassificationEnvironment,
    LabelledSource,
    class_examples,
    realised_reward,
)
from iglearn.envs.mnist import make_environment

FeedbackRule = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""Maps actions (n,) and binary rewards (n,) to the feedback classes (n,)."""


def shifted_digit(action: np.ndarray, reward: np.ndarray) -> np.ndarray:
    """The AI-IGL paper's rule: the feedback shows the digit (a + 6 r - 3) mod 10, that is
    a + 3 if r = 1 and a - 3 if r = 0 (mod 10)."""
    return (np.asarray(action, dtype=np.int64) + 6 * np.asarray(reward, dtype=np.int64)
            - 3) % 10


class ActionRewardFeedback:
    """Feedback y | (a, r): an example, drawn from ``source``, of the class rule(a, r).

    Args:
        source: where the feedback examples come from.
        rule: the feedback class of each (action, binary reward); default
            :func:`shifted_digit`.
    """

    def __init__(self, source: LabelledSource, rule: FeedbackRule = shifted_digit):
        self.source = source
        self.rule = rule

    def __call__(self, actions: np.ndarray, reward: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
        """Feedback examples (n, source.dim): the realised reward r ~ Bernoulli(reward), then
        one example of class rule(a, r) for each interaction."""
        r = realised_reward(reward, rng)
        return class_examples(self.source, self.rule(np.asarray(actions), r), rng)


class ActionInclusiveEnvironment(Environment):
    """A classification task (its contexts, reward and test set) whose feedback depends on the
    action and the reward (``Independence.ACTION_INCLUSIVE``).

    Args:
        task: the classification environment that supplies contexts, reward and test set.
        feedback: the feedback model y | (a, r).
    """

    independence = Independence.ACTION_INCLUSIVE

    def __init__(self, task: ClassificationEnvironment, feedback: ActionRewardFeedback):
        self.task = task
        self.feedback_model = feedback
        self.n_actions = task.n_actions
        self.context_dim = task.context_dim
        self.feedback_dim = feedback.source.dim

    def contexts(self, n: int, rng: np.random.Generator) -> Contexts:
        return self.task.contexts(n, rng)

    def reward(self, contexts: Contexts, action: np.ndarray) -> np.ndarray:
        return self.task.reward(contexts, action)

    def feedback(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
        """Feedback drawn given the action and the reward (contexts are not read)."""
        return self.feedback_model(actions, reward, rng)

    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        return self.task.test_set()


def action_inclusive_environment(dataset: str = "mnist", data_dir: str | Path | None = None,
                                 rule: FeedbackRule = shifted_digit,
                                 ) -> ActionInclusiveEnvironment:
    """Action-inclusive MNIST ('mnist': contexts and feedback images from infinite MNIST,
    accuracy on the 10000 MNIST test images) or the same rule on scikit-learn's bundled
    digits ('digits', offline): the feedback is an image of the digit rule(a, r), by default
    (a + 6 r - 3) mod 10."""
    task = make_environment(dataset, data_dir)
    return ActionInclusiveEnvironment(task, ActionRewardFeedback(task.feedback_model.source,
                                                                 rule))
