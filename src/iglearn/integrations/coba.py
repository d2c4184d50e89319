"""iglearn's online learners as coba learners (coba 8.x, ``pip install -e '.[coba]'``).

coba (the contextual-bandit evaluation framework from the Vowpal Wabbit team) turns any bandit
environment into an IGL one with ``Environments.grounded(n_users, n_normal, n_words, n_good)``
and plays learners on it with the ``SequentialIGL`` evaluator, which hands each learner the
feedback (a word id) in ``learn``'s ``reward`` argument and puts a user id first in every
context. :class:`CobaLearner` wraps any :class:`~iglearn.learners.online.OnlineLearner`:

- ``predict(context, actions)`` acts (``act``) and returns the action and its probability;
- ``learn(context, action, reward, probability)`` passes the feedback on (``learn``);
- ``score(context, actions, action)`` is the probability of ``action`` at the next step
  (:meth:`~iglearn.learners.online.OnlineLearner.probabilities`);
- ``params`` names the learner and its settings, for coba's result tables.

The online learner is built on the first ``predict``, once K and the dimensions are known, by
``make(n_actions, context_dim, feedback_dim)``, which must pickle (coba copies learners): a
class whose constructor starts with those three, or a ``functools.partial`` of one, e.g.
``CobaLearner(partial(E2G, seed=0), words=6)``. :func:`e2g` and :func:`uniform` are two such
makers, and any online learner plugs in the same way (one line). Contexts are dense feature
sequences (or one number); the user id becomes ``users`` one-hot features, or is dropped when
``users`` is 0 (feedback that does not depend on the user). Feedback is a number or a
sequence of numbers; with ``words`` set it is a word id, one-hot encoded into ``words``
features (as ``Environments.grounded`` produces). The entry point ``coba.register`` makes the
names ``iglearn.E2G`` and ``iglearn.Uniform`` known to coba's JSON experiment files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
from coba import Learner

from iglearn.errors import IGLearnError
from iglearn.learners.e2g import E2G
from iglearn.learners.online import OnlineLearner, UniformLearner
from iglearn.learners.schedules import PaperSchedule

Maker = Callable[[int, int, int], OnlineLearner]
"""Builds an online learner from (n_actions, context_dim, feedback_dim)."""


class CobaLearner(Learner):
    """An iglearn online learner behind coba's ``Learner`` interface.

    Args:
        make: builds the online learner from (n_actions, context_dim, feedback_dim) on the
            first ``predict``; it must pickle (a class, or a ``functools.partial``).
        users: the user ids SequentialIGL puts first in each context become this many one-hot
            features; 0 drops the user id; None: contexts carry no user id.
        words: feedback is a word id in [0, words), one-hot encoded; None: feedback is a
            number or a sequence of numbers, used as it is.
        name: the learner's name in coba's results.
        params: further settings to report in coba's results.
    """

    def __init__(self, make: Maker, users: int | None = 0, words: int | None = None,
                 name: str = "iglearn", params: Mapping[str, Any] | None = None):
        if users is not None and users < 0:
            raise IGLearnError(f"users must be >= 0 or None, got {users}")
        if words is not None and words < 1:
            raise IGLearnError(f"words must be >= 1 or None, got {words}")
        self._make, self._users, self._words = make, users, words
        self._name, self._params = name, dict(params or {})
        self.learner: OnlineLearner | None = None
        """The wrapped online learner, once the first ``predict`` has built it."""
        self._actions: list[Any] = []

    @property
    def params(self) -> Mapping[str, Any]:
        """The learner's name and settings, for coba's learner table."""
        return {"family": self._name, "users": self._users, "words": self._words,
                **self._params}

    # -- encoding -----------------------------------------------------------------------
    def context_vector(self, context: Any) -> np.ndarray:
        """A coba context as iglearn's dense float32 context vector."""
        if isinstance(context, Mapping):
            raise IGLearnError("iglearn's coba learners read dense contexts; this environment "
                               "has sparse (dict) contexts: add .dense() or .repr() to it")
        values = list(context) if isinstance(context, Sequence) else [context]
        if self._users is None:
            return np.asarray(values, np.float32)
        user, rest = values[0], np.asarray(values[1:], np.float32)
        if self._users == 0:
            return rest
        if not 0 <= int(user) < self._users:
            raise IGLearnError(f"user id {user} is outside [0, {self._users}); set users to "
                               f"the environment's n_users")
        onehot = np.zeros(self._users, np.float32)
        onehot[int(user)] = 1.0
        return np.concatenate([onehot, rest])

    def feedback_vector(self, feedback: Any) -> np.ndarray:
        """coba's feedback (SequentialIGL's ``reward`` argument) as a float32 vector."""
        values = list(feedback) if isinstance(feedback, Sequence) else [feedback]
        if self._words is None:
            return np.asarray(values, np.float32)
        if len(values) != 1 or not 0 <= int(values[0]) < self._words:
            raise IGLearnError(f"feedback {feedback!r} is not one word id in [0, "
                               f"{self._words}); set words to the environment's n_words")
        onehot = np.zeros(self._words, np.float32)
        onehot[int(values[0])] = 1.0
        return onehot

    def _index(self, action: Any) -> int:
        try:
            return self._actions.index(action)
        except ValueError:
            raise IGLearnError(f"action {action!r} is not one the learner was offered") from None

    def _built(self, context: np.ndarray, actions: Sequence[Any]) -> OnlineLearner:
        if self.learner is None:
            self._actions = list(actions)
            feedback_dim = self._words if self._words is not None else 1
            self.learner = self._make(len(self._actions), len(context), feedback_dim)
        elif list(actions) != self._actions:
            raise IGLearnError("iglearn's online learners need the same actions, in the same "
                               "order, at every interaction")
        return self.learner

    # -- coba's Learner interface ---------------------------------------------------------
    def predict(self, context: Any, actions: Sequence[Any]) -> dict[str, tuple[Any, float]]:
        """Act on ``context``: the chosen action and the probability it was drawn with, in
        coba's explicit form ``{"action_prob": (action, probability)}``."""
        x = self.context_vector(context)
        action, probability = self._built(x, actions).act(x)
        return {"action_prob": (actions[action], probability)}

    def learn(self, context: Any, action: Any, reward: Any, probability: float,
              **kwargs: Any) -> None:
        """Learn from one interaction; under SequentialIGL ``reward`` is the feedback."""
        if self.learner is None:
            raise IGLearnError("learn was called before predict; coba calls predict first")
        self.learner.learn(self.context_vector(context), self._index(action), probability,
                           self.feedback_vector(reward))

    def score(self, context: Any, actions: Sequence[Any], action: Any) -> float:
        """The probability that the next ``predict`` on ``context`` plays ``action``."""
        x = self.context_vector(context)
        learner = self._built(x, actions)
        return float(learner.probabilities(x[None])[0, self._index(action)])


def e2g(warmup: int = 4000, iota: float = 100.0, update_every: int = 100, seed: int = 0,
        **settings: Any) -> Maker:
    """A maker of :class:`~iglearn.learners.e2g.E2G` with the paper's schedule of
    ``warmup`` exploration rounds, then n_i = floor(sqrt(i / (K iota))) exploitation steps in
    round i; ``settings`` go to E2G (policy, decoder, exploit, ...)."""
    return partial(E2G, schedule=PaperSchedule(iota=iota, warmup_rounds=warmup),
                   update_every=update_every, seed=seed, **settings)


def _uniform(n_actions: int, context_dim: int, feedback_dim: int,
             seed: int = 0) -> OnlineLearner:
    return UniformLearner(n_actions, seed)


def uniform(seed: int = 0) -> Maker:
    """A maker of :class:`~iglearn.learners.online.UniformLearner` (pi_bad)."""
    return partial(_uniform, seed=seed)


class E2GLearner(CobaLearner):
    """E2G (Algorithm 1) as a coba learner, registered as ``iglearn.E2G``.

    Args:
        users: as for :class:`CobaLearner`.
        words: as for :class:`CobaLearner`.
        warmup: exploration rounds before the first fit (the paper's schedule).
        iota: the schedule's complexity term (round i exploits floor(sqrt(i / (K iota)))
            steps; the paper's 100 explores every other step for the first 400 K rounds).
        update_every: rounds between re-fits.
        seed: the learner's seed.
    """

    def __init__(self, users: int | None = 0, words: int | None = None, warmup: int = 4000,
                 iota: float = 100.0, update_every: int = 100, seed: int = 0):
        super().__init__(e2g(warmup, iota, update_every, seed), users, words, "iglearn.E2G",
                         {"warmup": warmup, "iota": iota, "update_every": update_every,
                          "seed": seed})


class UniformIGLLearner(CobaLearner):
    """Uniform play through the same adapter, registered as ``iglearn.Uniform``."""

    def __init__(self, users: int | None = 0, words: int | None = None, seed: int = 0):
        super().__init__(uniform(seed), users, words, "iglearn.Uniform", {"seed": seed})
