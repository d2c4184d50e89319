"""Online learners: the act/learn interface and uniform play (Algorithm 1 and the online CB
baseline are in :mod:`iglearn.learners.e2g`).

Every online learner returns, with each action, the probability with which that action was
actually drawn, so whatever it logs is valid input for off-policy learning (Eq. 2 with p).
Each learner owns its numpy Generator.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from iglearn.data import limits
from iglearn.data.logs import (
    as_array,
    check_n_actions,
    label_accuracy,
    model_rows,
    row_values,
)
from iglearn.errors import IGLearnError
from iglearn.hints import whole_number
from iglearn.seeding import SeedLike, as_generator


class OnlineLearner(ABC):
    """Acts on contexts one at a time or in blocks, and learns from what it observed.

    Args:
        n_actions: K.
        seed: seed or numpy Generator; the learner draws all its randomness from it.
    """

    bounded_reward: ClassVar[bool] = True
    """Whether the rewards a learner of rewards (feedback width 0) takes in ``learn`` must lie
    in [-1, 1], as a log's; a regression on them takes any finite reward."""

    def __init__(self, n_actions: int, seed: SeedLike = None):
        self.n_actions = check_n_actions(n_actions, type(self).__name__)
        self.context_dim: int | None = None
        """The width of the contexts it acts on and learns from (None: any; a learner with
        models sets it)."""
        self.rng = as_generator(seed)
        self.interactions_ = 0
        self.round_ = 0
        """Rounds begun; for learners that never exploit, one per interaction."""
        self.threads = 1
        """Torch threads of each re-fit (the caller's count is restored after it); set it
        before learning for large re-fits (:mod:`iglearn.threads`)."""

    def __repr__(self) -> str:
        """The learner's kind, shape and progress (:meth:`described`), as a notebook shows
        it: ``E2G(n_actions=10, context_dim=64, feedback_dim=64, interactions=1200, ...)``."""
        shown = ", ".join(f"{name}={value!r}" for name, value in self.described().items())
        return f"{type(self).__name__}({shown})"

    def described(self) -> dict[str, object]:
        """What :meth:`__repr__` shows: K, the contexts' width (when fixed) and the
        interactions acted on; a learner that re-fits adds its feedback's width and its
        re-fits."""
        shown: dict[str, object] = {"n_actions": self.n_actions}
        if self.context_dim is not None:
            shown["context_dim"] = self.context_dim
        shown["interactions"] = self.interactions_
        return shown

    @abstractmethod
    def act_batch(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Actions for consecutive contexts (n, d) and the probability each was drawn with.
        It (or :meth:`learn_batch` after it) adds n to ``interactions_`` and the rounds it
        began to ``round_`` (n for a learner that does not explore in rounds): the play loop
        plays to a round."""

    @abstractmethod
    def learn_batch(self, contexts: np.ndarray, actions: np.ndarray,
                    probabilities: np.ndarray, feedback: np.ndarray) -> None:
        """Learn from the interactions just acted on, in the order they were acted on."""

    def fitted_models(self) -> dict[str, Any]:
        """The models a re-fit changes, by name (None: not fitted yet), which
        :meth:`check_refit` reads; a learner without models has none."""
        return {}

    def check_refit(self) -> None:
        """Refuse to go on from a re-fit that diverged (a NaN or infinite parameter in one of
        :meth:`fitted_models`): its actions would be arbitrary and the probabilities it logs
        NaN. One line naming the learner, the interactions and the models."""
        from iglearn.learners.base import diverged_models

        names = diverged_models(self.fitted_models())
        if names:
            raise IGLearnError(f"{type(self).__name__}: the re-fit on {self.interactions_} "
                               f"interactions diverged (NaN or infinite values in its "
                               f"{' and '.join(names)}); lower its fits' learning rate, or "
                               f"drop near-zero logged probabilities")

    def checked_contexts(self, contexts: np.ndarray, source: str = "act",
                         single: bool = False) -> np.ndarray:
        """Contexts (n, d) handed to the learner, checked as a log's are (one line naming a
        NaN, a wrong width or a single vector where n are meant), as float32; ``single``: one
        context, given as one row, whose bad value a message names by its column."""
        return model_rows("context", contexts, self.context_dim, source, single)

    def checked_interactions(self, contexts: np.ndarray, actions: np.ndarray,
                             probabilities: np.ndarray, feedback: np.ndarray | float,
                             signal_dim: int
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What ``learn_batch`` received, checked as a log's fields are before the learner
        keeps any of it: contexts as :meth:`checked_contexts`; one integer action in [0, K)
        and one probability in (0, 1] per context; feedback as :func:`checked_signal` says,
        finite, or (``signal_dim`` 0) one reward in [-1, 1] each. A value that would break
        every later re-fit (a NaN, an action out of range, a probability of 0) is refused
        with one line naming the field and the row, and nothing is learned."""
        contexts = self.checked_contexts(contexts, "learn")
        n = len(contexts)
        actions = row_values("action", actions, n, "learn", self.n_actions)
        probabilities = row_values("probability", probabilities, n, "learn")
        signal = checked_signal(feedback, n, signal_dim)
        signal = (model_rows("feedback", signal, signal_dim, "learn") if signal_dim
                  else row_values("reward", signal, n, "learn", bounded=self.bounded_reward))
        return contexts, actions, probabilities, signal

    def one_context(self, context: np.ndarray, source: str = "act") -> np.ndarray:
        """One context handed to :meth:`act` or :meth:`learn` (a vector of d values, or one
        row of shape (1, d)) as the block of one row the learner reads, checked."""
        row = as_array(context, "context", source)
        if row.ndim == 2 and len(row) == 1:
            row = row[0]
        if row.ndim > 1 or row.ndim == 0 and self.context_dim != 1:
            given = (f"an array of shape {row.shape}; for several contexts use {source}_batch"
                     if row.ndim else "a single number")
            raise IGLearnError(f"{source}: takes one context, {self.context_dim or 'd'} values "
                               f"(or one row of them), but got {given}")
        return self.checked_contexts(row[None], source, single=True)

    def act(self, context: np.ndarray) -> tuple[int, float]:
        """One action for one context (d values), and the probability it was drawn with."""
        contexts = self.one_context(context)
        actions, probabilities = self.act_batch(contexts)
        return int(actions[0]), float(probabilities[0])

    def learn(self, context: np.ndarray, action: int, probability: float,
              feedback: np.ndarray | float) -> None:
        """Learn from one interaction."""
        self.learn_batch(*self.one_interaction(context, action, probability, feedback))

    def one_interaction(self, context: np.ndarray, action: int, probability: float,
                        feedback: np.ndarray | float
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One interaction handed to :meth:`learn` as the block of one row that
        :meth:`learn_batch` reads (the context checked by :meth:`one_context`)."""
        return (self.one_context(context, "learn"), np.array([action]), np.array([probability]),
                as_array(feedback, "feedback", "learn")[None])

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """The greedy action of the learner's current model for each context."""
        raise NotImplementedError(f"{type(self).__name__} has no model to predict with")

    def accuracy(self, contexts: np.ndarray, labels: np.ndarray) -> float:
        """Fraction of contexts whose greedy action (:meth:`predict`) equals the label (one
        integer action per context, checked as a log's labels are)."""
        return label_accuracy(self.predict(contexts), labels, self.n_actions)

    def probabilities(self, contexts: np.ndarray) -> np.ndarray:
        """The distribution (n, K) the next ``act`` would draw its action from, for each
        context as if it were the next one; acting is not advanced."""
        raise NotImplementedError(f"{type(self).__name__} does not say its next step's "
                                  f"probabilities")

    def block_size(self, stop_round: int | None = None) -> int:
        """How many contexts ``act_batch`` may take before ``learn_batch`` must see their
        outcome for the learner to behave exactly as if it acted one step at a time; with
        ``stop_round``, also stop after the exploration step of that round."""
        if stop_round is None:
            return 100
        return max(1, min(100, stop_round - self.round_))


def check_width(name: str, value: object, least: int = 1) -> int:
    """An online learner's ``name`` (a width: ``context_dim``, ``feedback_dim``) as a whole
    number in [``least``, MAX_DIM], or an error naming it."""
    whole = whole_number(value)
    if whole is None or not least <= whole <= limits.MAX_DIM:
        raise IGLearnError(f"{name} must be a whole number from {least} to {limits.MAX_DIM}, "
                           f"got {value!r}")
    return whole


def checked_signal(feedback: np.ndarray | float, n: int, dim: int) -> np.ndarray:
    """What ``learn_batch`` received for ``n`` interactions, in the shape (n,) when the
    learner reads one number per interaction (``dim`` 0) or (n, dim), its values as given (the
    caller checks them as a log's); anything else (an
    (n, 1) column where n numbers are meant, a vector of the wrong length) is refused with
    one line, since broadcasting it would silently learn nothing."""
    signal = as_array(feedback, "feedback", "learn")
    expected = (n, dim) if dim else (n,)
    if dim and signal.ndim > 2 and signal.size == n * dim:  # e.g. images: flattened
        signal = signal.reshape(expected)
    if dim == 1 and signal.ndim <= 1 and signal.size == n:  # one number each: no doubt
        signal = signal.reshape(expected)
    if signal.shape != expected:
        how = (f"{dim} numbers per interaction: a vector of {dim} to learn, an array of "
               f"shape (n, {dim}) to learn_batch" if dim else
               "one number per interaction: a scalar to learn, a flat vector of n to "
               "learn_batch, not a column")
        raise IGLearnError(f"learn received feedback of shape {signal.shape} where shape "
                           f"{expected} is meant; pass {how}")
    return signal


class UniformLearner(OnlineLearner):
    """Uniformly random play, pi_bad of the paper: the reference every learner must beat."""

    def act_batch(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One uniformly random action per context (checked as every learner's are), each
        drawn with probability 1/K."""
        n = len(self.checked_contexts(contexts))
        self.interactions_ += n
        self.round_ += n
        return self.rng.integers(0, self.n_actions, n), np.full(n, 1.0 / self.n_actions)

    def probabilities(self, contexts: np.ndarray) -> np.ndarray:
        """Uniform over the K actions for every context (checked as :meth:`act`'s are)."""
        contexts = self.checked_contexts(contexts, "probabilities")
        return np.full((len(contexts), self.n_actions), 1.0 / self.n_actions)

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """Refused with one line: uniform play has no greedy action to predict."""
        raise IGLearnError(f"{type(self).__name__} plays every action with probability "
                           f"1/{self.n_actions} and has no greedy action to predict; draw "
                           f"actions with act_batch(contexts), or read probabilities(contexts)")

    def accuracy(self, contexts: np.ndarray, labels: np.ndarray) -> float:
        """The expected share of ``contexts`` whose action equals the label: 1/K whatever the
        labels, since each action is drawn with probability 1/K (V(pi_bad) of the paper, the
        value the other learners' greedy accuracy is compared with). Nothing is drawn; the
        contexts and labels are checked as every learner checks them (one line naming a NaN,
        a label outside [0, K), a count that differs from the contexts', no contexts)."""
        contexts = self.checked_contexts(contexts, "accuracy")
        label_accuracy(np.zeros(len(contexts), np.int64), labels, self.n_actions)  # the checks
        return 1.0 / self.n_actions

    def learn_batch(self, contexts: np.ndarray, actions: np.ndarray,
                    probabilities: np.ndarray, feedback: np.ndarray) -> None:
        """Uniform play learns nothing; the contexts, actions and probabilities are checked as
        every learner checks them (one line naming a NaN, an action outside [0, K), a
        probability outside (0, 1], a count that differs from the contexts'), so that a loop
        that runs with uniform play runs with the others too."""
        n = len(self.checked_contexts(contexts, "learn"))
        row_values("action", actions, n, "learn", self.n_actions)
        row_values("probability", probabilities, n, "learn")
