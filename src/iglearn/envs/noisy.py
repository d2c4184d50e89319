"""Noisy feedback (Hu, Farnia and Leung, "An Information Theoretic Approach to
Interaction-Grounded Learning", ICML 2024): the 2021 MNIST task (context a digit, r = 1 iff
the action is its label, feedback an image of 1 if r = 1 and of 0 if not) where, with
probability p, the feedback image is replaced by an image of a noise digit:

- ``independent``: a digit drawn uniformly from 2, ..., 9, independent of (x, a, r). The paper
  replaced the feedback by EMNIST letters, which iglearn does not ship; the stand-in is an
  image of a digit other than the two reward digits, drawn at random, which is independent of
  (x, a, r) in the same way;
- ``action``: the digit 2 + (a mod 8), tied to the action;
- ``context``: the digit 2 + (label mod 8), tied to the context (its label);
- ``both``: the digit 2 + ((label + a) mod 8), tied to the context and the action.

Whether an interaction's feedback is replaced is drawn independently of everything, with
probability p; the noise digit is then a function of (x, a) as its kind says, or uniform.
With p = 0 every kind is the 2021 task. Only the ``independent`` kind keeps the 2021
assumption y ⟂ (x, a) | r; the others make the feedback depend on the action, the context or
both (:class:`~iglearn.envs.base.Independence`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np

from iglearn.envs.base import Contexts, Environment, Independence
from iglearn.envs.classification import (
    ClassificationEnvironment,
    class_examples,
    realised_reward,
)
from iglearn.envs.mnist import make_environment
from iglearn.errors import IGLearnError, check_choice

NoiseKind = Literal["independent", "action", "context", "both"]
NOISE_KINDS: tuple[NoiseKind, ...] = ("independent", "action", "context", "both")
"""What the noise digit depends on: nothing, the action, the context, or both."""
NOISE_DIGITS = np.arange(2, 10)
"""The digits a replaced feedback image may show: every digit but the reward digits 1 and 0."""
INDEPENDENCE = {"independent": Independence.FULL, "action": Independence.ACTION_INCLUSIVE,
                "context": Independence.PERSONALISED, "both": Independence.PERSONALISED}
"""The conditional independence each kind's feedback satisfies (for p > 0)."""


def noise_digits(kind: str, label: np.ndarray, action: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
    """The digit a replaced feedback image shows, for each interaction: uniform over
    :data:`NOISE_DIGITS` (``independent``), or 2 + (a mod 8), 2 + (label mod 8),
    2 + ((label + a) mod 8) (``action``, ``context``, ``both``)."""
    label, action = np.asarray(label, dtype=np.int64), np.asarray(action, dtype=np.int64)
    m = len(NOISE_DIGITS)
    if kind == "independent":
        return NOISE_DIGITS[rng.integers(0, m, len(action))]
    check_choice("noise kind", kind, NOISE_KINDS)
    index = {"action": action, "context": label, "both": label + action}[kind]
    return NOISE_DIGITS[index % m]


class NoisyFeedbackEnvironment(Environment):
    """The 2021 task of ``task`` (its contexts, reward, test set and feedback y | r) with each
    feedback image replaced, with probability ``p``, by an image of a noise digit of
    ``kind`` (see the module docstring).

    Args:
        task: the classification environment (MNIST or digits) with the 2021 feedback.
        kind: what the noise digit depends on: 'independent', 'action', 'context', 'both'.
        p: the probability that a feedback image is replaced, in [0, 1].
    """

    independence = Independence.FULL

    def __init__(self, task: ClassificationEnvironment, kind: str, p: float):
        check_choice("noise kind", kind, NOISE_KINDS)
        if not (isinstance(p, int | float) and 0.0 <= p <= 1.0):
            raise IGLearnError(f"the noise probability p must be in [0, 1], got {p!r}")
        self.task, self.kind, self.p = task, kind, float(p)
        self.independence = INDEPENDENCE[kind] if p > 0 else Independence.FULL  # type: ignore[misc]
        self.n_actions = task.n_actions
        self.context_dim = task.context_dim
        self.feedback_dim = task.feedback_dim

    def contexts(self, n: int, rng: np.random.Generator) -> Contexts:
        return self.task.contexts(n, rng)

    def reward(self, contexts: Contexts, action: np.ndarray) -> np.ndarray:
        return self.task.reward(contexts, action)

    def feedback_classes(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The digit each feedback image shows and whether it was replaced: the 2021 class
        (1 if the realised reward is 1, else 0), then, for each interaction replaced with
        probability p, its noise digit (:func:`noise_digits`)."""
        classes = realised_reward(reward, rng)  # the 2021 class: 1 if r = 1, else 0
        replaced = rng.random(len(actions)) < self.p
        noise = noise_digits(self.kind, contexts.label, actions, rng)
        return np.where(replaced, noise, classes), replaced

    def feedback(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
        """Feedback images: one example of each interaction's class
        (:meth:`feedback_classes`)."""
        classes, _ = self.feedback_classes(contexts, actions, reward, rng)
        return class_examples(self.task.feedback_model.source, classes, rng)

    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        return self.task.test_set()


def noisy_environment(dataset: str = "mnist", kind: str = "independent", p: float = 0.1,
                      data_dir: str | Path | None = None) -> NoisyFeedbackEnvironment:
    """The noisy-feedback task on ``dataset`` ('mnist', infinite MNIST with accuracy on the
    10000 test images, or 'digits', scikit-learn's bundled digits, offline): noise ``kind``,
    replacement probability ``p``."""
    return NoisyFeedbackEnvironment(make_environment(dataset, data_dir), kind, p)
