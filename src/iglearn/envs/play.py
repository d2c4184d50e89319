"""Playing an online learner against an environment: the one act / reward / feedback / learn
loop, with the running true reward and checkpoints for evaluation.

Each step of the loop takes the largest block of contexts the learner can act on at once
without changing what it does (``learner.block_size``), so a block is exactly as many
single steps, and stops at every checkpoint round so that callers can evaluate the learner
there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from iglearn.envs.base import Contexts, Environment
from iglearn.errors import IGLearnError, check_choice

LEARNS_FROM = ("feedback", "reward")


class Player(Protocol):
    """What :func:`play` needs of a learner (every
    :class:`~iglearn.learners.online.OnlineLearner` is one)."""

    round_: int
    interactions_: int

    def block_size(self, stop_round: int | None = None) -> int:
        """Contexts it may act on before it must learn their outcome."""

    def act_batch(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Actions for consecutive contexts and the probability each was drawn with."""

    def learn_batch(self, contexts: np.ndarray, actions: np.ndarray,
                    probabilities: np.ndarray, feedback: np.ndarray) -> None:
        """Learn from the interactions just acted on."""


@dataclass(frozen=True)
class Checkpoint:
    """Where a play stands after the last block it played before a checkpoint round."""

    round: int
    """The learner's ``round_``: rounds begun so far."""
    interactions: int
    """The learner's ``interactions_``: contexts acted on so far."""
    total_reward: float
    """The true reward earned in this play (hidden from IGL learners)."""
    average_reward: float
    """``total_reward`` per interaction of this play: the running average reward."""


class ContextStream:
    """One sequence of contexts, drawn from ``rng`` in chunks as needed and kept, so that
    several learners can be shown the same contexts in the same order (context t at their
    interaction t) and no context is drawn twice."""

    def __init__(self, env: Environment, rng: np.random.Generator, chunk: int = 8192):
        self.env, self.rng, self.chunk = env, rng, chunk
        self._parts: list[Contexts] = []
        self._drawn = 0

    def read(self, start: int, count: int) -> Contexts:
        """Contexts ``start .. start + count - 1`` of the stream."""
        while self._drawn < start + count:
            self._parts.append(self.env.contexts(self.chunk, self.rng))
            self._drawn += self.chunk
        if len(self._parts) > 1:
            self._parts = [Contexts(np.concatenate([c.features for c in self._parts]),
                                    np.concatenate([c.label for c in self._parts]))]
        whole = self._parts[0]
        return Contexts(whole.features[start:start + count], whole.label[start:start + count])


def checked_actions(learner: Player, actions: object, probabilities: object, n: int,
                    n_actions: int) -> tuple[np.ndarray, np.ndarray]:
    """What ``learner.act_batch`` returned for ``n`` contexts, checked as a log's fields are
    (one integer action in [0, ``n_actions``) and one probability in (0, 1] each), so that
    what a learner of one's own logs stays valid for off-policy learning; else one line
    naming it."""
    from iglearn.data.logs import row_values

    source = f"{type(learner).__name__}.act_batch"
    return (row_values("action", actions, n, source, n_actions),
            row_values("probability", probabilities, n, source))


def check_counted(learner: Player, before: tuple[int, int], n: int) -> None:
    """Refuse a learner that acted on and learned from ``n`` contexts without adding them to
    its ``interactions_`` (or turned its ``round_`` back; ``before``: both before it): the
    play loop reads the contexts by ``interactions_`` and stops at a round, so it would run
    forever. Every online learner counts what it acted on (in ``act_batch`` or
    ``learn_batch``)."""
    if learner.interactions_ != before[1] + n or learner.round_ < before[0]:
        raise IGLearnError(
            f"{type(learner).__name__} acted on and learned from {n} contexts but its counters "
            f"went from round_ {before[0]}, interactions_ {before[1]} to {learner.round_}, "
            f"{learner.interactions_}: its act_batch (or learn_batch) must add the contexts "
            f"it acted on to interactions_ and the rounds it began to round_ (one per context "
            f"for a learner that does not explore in rounds), as OnlineLearner's subclasses "
            f"do")


def play(learner: Player, env: Environment, rounds: int, rng: np.random.Generator, *,
         learns_from: str = "feedback", contexts: ContextStream | None = None,
         checkpoints: Iterable[int] = (),
         on_checkpoint: Callable[[Checkpoint], None] | None = None) -> list[Checkpoint]:
    """Play ``learner`` against ``env`` until its ``round_`` reaches ``rounds``.

    Each block: contexts (from ``contexts`` when given, else drawn from ``rng``), the
    learner's actions and their probabilities, the hidden reward, the feedback drawn from
    ``rng`` given the reward, and ``learn_batch`` with the feedback, or with the reward itself
    when ``learns_from='reward'`` (a contextual bandit such as
    :class:`~iglearn.learners.online.OnlineContextualBandit`; no feedback is drawn then).

    Args:
        learner: an online learner; it may have played before (its counters go on).
        env: the environment.
        rounds: the round to play to.
        rng: draws the feedback, and the contexts when ``contexts`` is None.
        learns_from: 'feedback' (IGL) or 'reward'.
        contexts: a stream to read the contexts from, context t at interaction t.
        checkpoints: rounds at which to stop and report, besides ``rounds`` itself; those
            beyond ``rounds`` are ignored.
        on_checkpoint: called with each checkpoint as it is reached, while the learner is as
            it was at that checkpoint (to evaluate it there).

    Returns:
        the checkpoints reached, the last one at ``rounds`` (none if the learner had already
        played that far).
    """
    check_choice("learns_from", learns_from, LEARNS_FROM)
    if rounds < 1:
        raise IGLearnError(f"rounds must be positive, got {rounds}")
    stops = sorted({int(c) for c in checkpoints if 0 < c < rounds} | {rounds})
    stops = [c for c in stops if c > learner.round_]
    reached: list[Checkpoint] = []
    total, first = 0.0, learner.interactions_
    while stops:
        block = learner.block_size(stops[0])
        shown = (env.contexts(block, rng) if contexts is None
                 else contexts.read(learner.interactions_, block))
        before = learner.round_, learner.interactions_
        actions, probabilities = checked_actions(learner, *learner.act_batch(shown.features),
                                                 len(shown.features), env.n_actions)
        reward = env.reward(shown, actions)
        total += float(reward.sum())
        flags = None
        if learns_from == "reward":
            signal = reward
        else:
            signal, flags = env.observe(shown, actions, reward, rng)
        if flags is not None and getattr(learner, "reads_definitely_bad", False):
            learner.learn_batch(shown.features, actions, probabilities, signal,
                                definitely_bad=flags)  # type: ignore[call-arg]
        else:
            learner.learn_batch(shown.features, actions, probabilities, signal)
        check_counted(learner, before, len(shown.features))
        if learner.round_ >= stops[0]:
            stops = [c for c in stops if c > learner.round_]
            played = learner.interactions_ - first
            point = Checkpoint(learner.round_, learner.interactions_, total, total / played)
            reached.append(point)
            if on_checkpoint is not None:
                on_checkpoint(point)
    return reached
