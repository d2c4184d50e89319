"""Exploration/exploitation schedules {n_i} of E2G (Theorem 2 and the Remark after it).

Round i of an epoch-greedy learner plays one uniformly random action, then exploits its
current policy for n_i steps. Every schedule uses n_i = floor(sqrt(i / (K iota))) once its
warm-up is over; they differ in when the warm-up ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iglearn import theory
from iglearn.errors import IGLearnError
from iglearn.hints import check_fields, whole_number


@dataclass(frozen=True)
class Schedule:
    """Base schedule: exploit floor(sqrt(i / (K iota))) steps in round i after warm-up."""

    iota: float = 100.0
    """Complexity term iota (Appendix B uses n_i = sqrt(i / (100 K)), i.e. iota = 100)."""

    def __post_init__(self) -> None:
        check_fields(self, positive=("iota", "warmup_rounds", "eta"))

    def warmup(self, n_actions: int) -> int | None:
        """The last pure-exploration round, or None when the warm-up ends on a data test."""
        raise NotImplementedError

    def certifies(self, indicator: float, n: int, n_actions: int,
                  explained: float | None = None) -> bool:
        """Whether a fit on ``n`` exploration samples with this indicator ends the warm-up;
        ``explained``: the share of its decoded reward that the logged action explains (a
        decoder that follows the action, :func:`~iglearn.theory.action_led`, certifies
        nothing)."""
        return False

    def exploit_steps(self, i: int, n_actions: int, certified: bool = False) -> int:
        """n_i, the exploitation steps of round i (``certified``: a fit passed the test)."""
        warmup = self.warmup(n_actions)
        done = certified if warmup is None else i > warmup
        return theory.exploit_steps(i, n_actions, self.iota) if done else 0


@dataclass(frozen=True)
class PaperSchedule(Schedule):
    """Appendix B: a fixed warm-up of ``warmup`` exploration rounds (4000), then
    n_i = floor(sqrt(i / (K iota)))."""

    warmup_rounds: int = 4000

    def __post_init__(self) -> None:
        rounds = self.warmup_rounds  # given as warmup (make_schedule, --warmup, coba)
        whole = whole_number(rounds)
        if whole is None or whole < 1:
            raise IGLearnError(f"warmup must be a whole number >= 1, got {rounds!r}")
        super().__post_init__()

    def warmup(self, n_actions: int) -> int:
        return self.warmup_rounds


@dataclass(frozen=True)
class TheorySchedule(Schedule):
    """Theorem 2: explore for T0 = 2 K^2 iota / eta^2 rounds, eta from Assumption 2."""

    eta: float = 0.7

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.eta <= 1:
            raise IGLearnError(f"eta must be in (0, 1] (Assumption 2), got {self.eta}")

    def warmup(self, n_actions: int) -> int:
        return math.floor(theory.warmup_length(n_actions, self.eta, self.iota))


@dataclass(frozen=True)
class DataDrivenSchedule(Schedule):
    """The Remark after Theorem 2: explore until a fit's indicator exceeds
    V(pi_bad) + K eps_D, which certifies Delta_psi > 0; ``v_bad`` bounds V(pi_bad) from
    above (None: 1/K, exact for classification)."""

    v_bad: float | None = None

    def warmup(self, n_actions: int) -> None:
        return None

    def certifies(self, indicator: float, n: int, n_actions: int,
                  explained: float | None = None) -> bool:
        if theory.action_led(explained):  # it passes the test with a policy at chance
            return False
        v_bad = 1.0 / n_actions if self.v_bad is None else self.v_bad
        return theory.certifies_decoder(indicator, n, n_actions, self.iota, v_bad)


SCHEDULES = ("paper", "theory", "data-driven")


def make_schedule(name: str, warmup: int = 4000, eta: float = 0.7, iota: float = 100.0,
                  v_bad: float | None = None) -> Schedule:
    """The schedule called ``name``: 'paper', 'theory' or 'data-driven'."""
    if name == "paper":
        return PaperSchedule(iota=iota, warmup_rounds=warmup)
    if name == "theory":
        return TheorySchedule(iota=iota, eta=eta)
    if name == "data-driven":
        return DataDrivenSchedule(iota=iota, v_bad=v_bad)
    raise IGLearnError(f"unknown schedule {name!r}; choose one of {', '.join(SCHEDULES)}")
