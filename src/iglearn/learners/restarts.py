"""The adaptive restart: the one loop behind every learner's restarts.

The 2021 paper's Appendix B restarts a fit whose indicator stays low from a fresh
initialisation. iglearn's batch learners do so for T trials at once: every trial fits, the
trials whose attempt did not pass their learner's test fit again together from fresh
initialisations, at most ``max_restarts`` times, and each trial keeps its best attempt. What
an attempt is, how it is ranked and what passes belong to the learner (2021 IGL: the
indicator with its confidence margin, :meth:`BatchIGL.fit_with_restarts
<iglearn.learners.batch_igl.BatchIGL.fit_with_restarts>`; AI-IGL: every action grounded,
:meth:`AIIGL.fit_with_restarts <iglearn.learners.ai_igl.AIIGL.fit_with_restarts>`; VI-IGL: the
critic's bound, :meth:`VIIGL.fit_decoders <iglearn.learners.vi_igl.VIIGL.fit_decoders>`).
A learner may fit a trial's next attempts beside its first, when restarts are likely and
side by side cheap; the loop keeps what one attempt at a time would have kept.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Fitted = TypeVar("Fitted")


@dataclass(frozen=True)
class Attempt(Generic[Fitted]):
    """One trial's attempt: what it fitted, its rank among the trial's attempts (larger is
    better; the first of equal ranks is kept), whether it passed the learner's test (the
    trial then stops) and what the learner's report lists for it."""

    fitted: Fitted
    rank: Any
    """A number, or a tuple compared element by element; one that is or holds NaN (a fit that
    diverged) ranks below every other (:func:`outranks`)."""
    passed: bool
    record: Any
    settles: bool = False
    """With ``groups`` (:func:`adaptive_restart`): whether the attempt also ends its group's
    other trials."""


def diverged(rank: Any) -> bool:
    """Whether an attempt's ``rank`` is or holds a NaN: its fit diverged."""
    values = rank if isinstance(rank, tuple) else (rank,)
    return any(isinstance(value, numbers.Real) and math.isnan(value) for value in values)


def outranks(rank: Any, kept: Any) -> bool:
    """Whether an attempt of ``rank`` replaces the trial's best so far, of rank ``kept``: a
    larger rank, or any rank but a diverged one over a diverged one (NaN compares false
    either way, and would keep the first attempt that diverged over every later one)."""
    if diverged(rank):
        return False
    return diverged(kept) or rank > kept


def best_of(ranks: Sequence[Any]) -> int:
    """The index of the attempt :func:`adaptive_restart` keeps among attempts of ``ranks``,
    in the order they were made: the first of the largest, never a diverged one unless all
    are (:func:`outranks`)."""
    best = 0
    for i, rank in enumerate(ranks):
        if outranks(rank, ranks[best]):
            best = i
    return best


def adaptive_restart(trials: int, max_restarts: int,
                     attempt: Callable[[list[int], list[int]], Sequence[Attempt[Fitted]]],
                     groups: Sequence[int] | None = None, ahead: int = 1,
                     ) -> tuple[list[Attempt[Fitted]], list[list[Any]]]:
    """Appendix B's adaptive restart for ``trials`` trials at once.

    ``attempt(numbers, pending)`` fits attempt ``numbers[i]`` (0 first) of trial
    ``pending[i]`` for every i, side by side, and returns their attempts in that order. The
    trials whose attempt did not pass are attempted again, at most ``max_restarts`` more
    times. ``groups``: trial t's group, when the trials are rival initialisations of which
    only the best is kept (2021 IGL's judged starts): once an attempt of one trial settles
    its group, the group's other trials are not attempted again. ``ahead``: attempts of
    each pending trial fitted side by side in one call, before it is known whether the first
    of them passes (AI-IGL on small logs, :meth:`AIIGL.every_attempt
    <iglearn.learners.ai_igl.AIIGL.every_attempt>`); those after an attempt that passed (or
    settled the trial's group) are dropped unread, so the trials end as they would one
    attempt at a time, as long as each attempt's fit depends on its trial and number only.

    Returns:
        per trial, its best attempt (largest rank, the first of equal ones; a diverged one
        only when every attempt diverged) and the records of all its attempts.
    """
    if ahead < 1:
        raise ValueError(f"ahead must be at least 1, got {ahead}")
    best: dict[int, Attempt[Fitted]] = {}
    records: list[list[Any]] = [[] for _ in range(trials)]
    pending = list(range(trials))
    number = 0
    while pending and number <= max_restarts:
        span = range(number, min(number + ahead, max_restarts + 1))
        jobs = [(n, t) for n in span for t in pending]
        fitted = dict(zip(jobs, attempt([n for n, _ in jobs], [t for _, t in jobs]),
                          strict=True))
        for n in span:  # as one attempt at a time: who passed, who goes on
            attempts = [fitted[n, t] for t in pending]
            for t, tried in zip(pending, attempts, strict=True):
                records[t].append(tried.record)
                if t not in best or outranks(tried.rank, best[t].rank):
                    best[t] = tried
            settled = set() if groups is None else {
                groups[t] for t, tried in zip(pending, attempts, strict=True) if tried.settles}
            pending = [t for t, tried in zip(pending, attempts, strict=True)
                       if not tried.passed and (groups is None or groups[t] not in settled)]
            if not pending:
                break
        number = span.stop
    return [best[t] for t in range(trials)], records
