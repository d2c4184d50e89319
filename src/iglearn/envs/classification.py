"""A labelled data set becomes an IGL environment: context = an example, action = a label,
r = 1{action == label}, and feedback = an image whose class depends on r alone.

:func:`realised_reward` and :func:`class_examples` are the two steps every feedback model built
on labelled examples shares (the action-inclusive ones of :mod:`iglearn.envs.action_inclusive`
too): draw a binary reward, then one example of each feedback class."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from iglearn.data.logs import InteractionLog
from iglearn.envs.base import Contexts, Environment, Independence
from iglearn.seeding import SeedLike, as_generator


class LabelledSource(Protocol):
    """Anything that draws labelled examples, optionally all of one class."""

    dim: int

    def draw(self, n: int, rng: np.random.Generator,
             label: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``n`` examples (n, dim) and their labels; all of class ``label`` when given."""
        ...


class ArraySource:
    """Draws rows, with replacement, from a fixed labelled array."""

    def __init__(self, features: np.ndarray, labels: np.ndarray):
        self.features = np.asarray(features, dtype=np.float32)
        self.labels = np.asarray(labels, dtype=np.int64)
        self.dim = self.features.shape[1]
        self._by_label = {int(c): np.flatnonzero(self.labels == c) for c in np.unique(labels)}

    def draw(self, n: int, rng: np.random.Generator,
             label: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        if label is None:
            rows = rng.integers(0, len(self.labels), n)
        else:
            pool = self._by_label[label]
            rows = pool[rng.integers(0, len(pool), n)]
        return self.features[rows], self.labels[rows]


class LabelFeedback:
    """Feedback y | r: an example of a class drawn from a mixture that depends on r only.

    Args:
        source: where the feedback examples come from.
        on_reward: class -> weight of the mixture used when r = 1.
        on_no_reward: class -> weight of the mixture used when r = 0.
    """

    def __init__(self, source: LabelledSource, on_reward: Mapping[int, float],
                 on_no_reward: Mapping[int, float]):
        self.source = source
        self.mixtures = {1: normalised(on_reward), 0: normalised(on_no_reward)}

    def __call__(self, reward: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        r = realised_reward(reward, rng)
        classes = np.empty(r.shape, dtype=np.int64)
        for value, (labels, weights) in self.mixtures.items():
            rows = np.flatnonzero(r == value)
            classes[rows] = labels[rng.choice(len(labels), size=len(rows), p=weights)]
        return self.images(classes, rng)

    def images(self, classes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """See :func:`class_examples`."""
        return class_examples(self.source, classes, rng)

    def uniform_play(self, n_actions: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """See :func:`uniform_play`."""
        return uniform_play(self.mixtures, n_actions)


def realised_reward(reward: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The binary reward each interaction realises: r ~ Bernoulli(reward), one uniform draw
    per interaction (a reward of 0 or 1 is kept as it is; stochastic rewards are drawn)."""
    reward = np.asarray(reward)
    return (rng.random(reward.shape) < reward).astype(np.int64)


def class_examples(source: LabelledSource, classes: np.ndarray,
                   rng: np.random.Generator) -> np.ndarray:
    """One example from ``source`` of each class in ``classes``, shape (n, source.dim),
    drawn class by class in ascending order."""
    out = np.empty((len(classes), source.dim), dtype=np.float32)
    for c in np.unique(classes):
        rows = np.flatnonzero(classes == c)
        out[rows] = source.draw(len(rows), rng, label=int(c))[0]
    return out


def uniform_play(mixtures: Mapping[int, tuple[np.ndarray, np.ndarray]], n_actions: int,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Under uniform play over ``n_actions`` actions with one correct action per context
    (P(r = 1) = 1/K), for the normalised class mixtures r -> (classes, weights): the feedback
    classes of positive mass in ascending order, their marginal
    m(l) = (1/K) p(l | r=1) + (1 - 1/K) p(l | r=0), rounded to 12 decimals so that float
    noise in the mixtures cannot tell equal marginals apart, and
    P(r = 1 | l) = (1/K) p(l | r=1) / m(l)."""
    k = n_actions
    labels = np.union1d(mixtures[0][0], mixtures[1][0])
    given = {r: np.zeros(len(labels)) for r in (0, 1)}
    for r, (classes, weights) in mixtures.items():
        given[r][np.searchsorted(labels, classes)] = weights
    marginal = given[1] / k + (1 - 1 / k) * given[0]
    keep = np.round(marginal, 12) > 0
    p_reward = np.minimum(given[1][keep] / k / marginal[keep], 1.0)
    return labels[keep], np.round(marginal[keep], 12), p_reward


def normalised(mixture: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """A class mixture {class: weight} as (classes, weights summing to one)."""
    labels = np.array(list(mixture.keys()), dtype=np.int64)
    weights = np.array(list(mixture.values()), dtype=np.float64)
    if len(labels) == 0 or (weights < 0).any() or weights.sum() <= 0:
        raise ValueError("a feedback mixture needs at least one class with positive weight")
    return labels, weights / weights.sum()


class ClassificationEnvironment(Environment):
    """The reduction from a labelled data set plus a feedback generator to IGL; the feedback
    depends on the reward alone (``Independence.FULL``).

    Args:
        contexts: source of (context, label) pairs.
        feedback: the feedback model y | r.
        test: held-out (contexts, labels) for accuracy.
        n_actions: the number of labels K.
    """

    independence = Independence.FULL

    def __init__(self, contexts: LabelledSource, feedback: LabelFeedback,
                 test: tuple[np.ndarray, np.ndarray], n_actions: int):
        self.context_source = contexts
        self.feedback_model = feedback
        self._test = (np.asarray(test[0], dtype=np.float32), np.asarray(test[1], dtype=np.int64))
        self.n_actions = n_actions
        self.context_dim = contexts.dim
        self.feedback_dim = feedback.source.dim

    def contexts(self, n: int, rng: np.random.Generator) -> Contexts:
        features, label = self.context_source.draw(n, rng)
        return Contexts(features, label)

    def reward(self, contexts: Contexts, action: np.ndarray) -> np.ndarray:
        return (np.asarray(action) == contexts.label).astype(np.float32)

    def feedback(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
        """Feedback drawn given the reward alone (contexts and actions are not read)."""
        return self.feedback_model(reward, rng)

    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        return self._test

    def feedback_first_log(self, n: int, seed: SeedLike = None) -> InteractionLog:
        """``n`` uniform-play interactions drawn feedback first: the joint law of ``log(n)``,
        but environments with the same feedback marginal under uniform play get byte-identical
        feedback (and contexts) from the same seed.

        An unsupervised decoder sees the feedback alone, so by Theorem 3 it must decode alike
        in environments whose feedback marginals agree; coupling the draws makes that
        literal. The feedback class comes from the marginal m(l) (inverse CDF over ascending
        classes) with its image, then r ~ Bernoulli(P(r = 1 | l)), the context independently
        of r (under uniform play P(r = 1 | x) = 1/K), and the action: the context's label if
        r = 1, else uniform over the other K - 1. Each of the four draws has its own stream
        derived from ``seed``.
        """
        root = int(as_generator(seed).integers(0, 2**63 - 1))
        feedback_rng, reward_rng, context_rng, action_rng = (
            np.random.default_rng([root, stream]) for stream in range(4))
        k = self.n_actions
        labels, marginal, p_reward = self.feedback_model.uniform_play(k)
        pick = np.minimum(np.searchsorted(np.cumsum(marginal), feedback_rng.random(n),
                                          side="right"), len(labels) - 1)
        feedback = self.feedback_model.images(labels[pick], feedback_rng)
        rewarded = reward_rng.random(n) < p_reward[pick]
        ctx = self.contexts(n, context_rng)
        wrong = action_rng.integers(0, k - 1, n)
        action = np.where(rewarded, ctx.label, wrong + (wrong >= ctx.label))
        return InteractionLog(
            context=ctx.features, action=action, probability=np.full(n, 1.0 / k),
            feedback=feedback, n_actions=k, reward=self.reward(ctx, action), label=ctx.label,
            source=type(self).__name__,
        )
