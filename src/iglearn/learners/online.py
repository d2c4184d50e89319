"""Online learners: the act/learn interface, the epoch-greedy skeleton shared by E2G and the
online CB baseline, and uniform play.

Every online learner returns, with each action, the probability with which that action was
actually drawn, so whatever it logs is valid input for off-policy learning (Eq. 2 with p).
Each learner owns its numpy Generator.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod

import numpy as np
import torch

from iglearn.errors import IGLearnError
from iglearn.learners.base import as_tensor, one_trial
from iglearn.learners.baselines import ContextualBandit
from iglearn.learners.objective import at_action, igl_objective
from iglearn.learners.schedules import PaperSchedule, Schedule
from iglearn.learners.training import Optimisation
from iglearn.models import Policy, make_policy
from iglearn.sampling import sample_actions
from iglearn.seeding import SeedLike, as_generator, torch_generator

EXPLOIT = ("greedy", "softmax")

# The first fit (from scratch) uses the batch learners' settings with half their minimum of
# steps per stage: on the warm-up's 4000 samples that is still 15 epochs a stage, and the
# re-fits continue from it. Warm-started re-fits start near the previous optimum: one epoch
# (at least 6 steps) of the exact objective in batches of 1000 at half the rate suffices.
# Measured on Figure 3 (4 trials, final E2G accuracy): these re-fits 87.0 %, at least 10 steps
# 87.1 % in 40 % more time, 20+ steps of 500 87.3 % in twice the time; 20 steps at a quarter
# of the rate could not lift a weak first fit (77.6 % -> 80.4 %), these do (-> 86-87 %).
FIRST_FIT = Optimisation(min_steps=120)
REFIT = Optimisation(grounding_epochs=0, policy_epochs=0, epochs=1, min_steps=6,
                     batch_size=1000, lr=0.01)


class OnlineLearner(ABC):
    """Acts on contexts one at a time or in blocks, and learns from what it observed.

    Args:
        n_actions: K.
        seed: seed or numpy Generator; the learner draws all its randomness from it.
    """

    def __init__(self, n_actions: int, seed: SeedLike = None):
        if n_actions < 2:
            raise IGLearnError(f"an online learner needs at least 2 actions, got {n_actions}")
        self.n_actions = n_actions
        self.rng = as_generator(seed)
        self.interactions_ = 0
        self.round_ = 0
        """Rounds begun; for learners that never exploit, one per interaction."""

    @abstractmethod
    def act_batch(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Actions for consecutive contexts (n, d) and the probability each was drawn with."""

    @abstractmethod
    def learn_batch(self, contexts: np.ndarray, actions: np.ndarray,
                    probabilities: np.ndarray, feedback: np.ndarray) -> None:
        """Learn from the interactions just acted on, in the order they were acted on."""

    def act(self, context: np.ndarray) -> tuple[int, float]:
        """One action for one context, and the probability it was drawn with."""
        actions, probabilities = self.act_batch(np.asarray(context)[None])
        return int(actions[0]), float(probabilities[0])

    def learn(self, context: np.ndarray, action: int, probability: float,
              feedback: np.ndarray | float) -> None:
        """Learn from one interaction."""
        self.learn_batch(np.asarray(context)[None], np.array([action]),
                         np.array([probability]), np.asarray(feedback)[None])

    def block_size(self, stop_round: int | None = None) -> int:
        """How many contexts ``act_batch`` may take before ``learn_batch`` must see their
        outcome for the learner to behave exactly as if it acted one step at a time; with
        ``stop_round``, also stop after the exploration step of that round."""
        if stop_round is None:
            return 100
        return max(1, min(100, stop_round - self.round_))


class UniformLearner(OnlineLearner):
    """Uniformly random play, pi_bad of the paper: the reference every learner must beat."""

    def act_batch(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(contexts)
        self.interactions_ += n
        self.round_ += n
        return self.rng.integers(0, self.n_actions, n), np.full(n, 1.0 / self.n_actions)

    def learn_batch(self, contexts, actions, probabilities, feedback) -> None:
        """Uniform play learns nothing."""


class EpochGreedy(OnlineLearner):
    """Algorithm 1's loop: round i explores one uniformly random action (kept in the
    exploration set D), then executes the current policy for n_i steps. The policy is re-fit
    on D every ``update_every`` rounds (Appendix B: 100) and when the warm-up ends;
    subclasses say how.

    Exploitation either plays the greedy action of the fitted softmax policy (probability
    1.0, as epoch-greedy and the paper's test-time argmax) or samples from it
    (``exploit='softmax'``, line 5 of Algorithm 1 literally, probability pi_i(a|x)).
    n_i is fixed when round i begins, so a data-driven certificate earned by the fit after
    round i's exploration step first allows exploitation in round i + 1.

    Args:
        n_actions: K.
        context_dim: dimension of the contexts.
        signal_dim: dimension of what ``learn`` receives per interaction (0: a scalar).
        schedule: the schedule {n_i}; default the paper's (4000 warm-up rounds).
        update_every: rounds between re-fits.
        exploit: 'greedy' or 'softmax'.
        holdout_every: every this many exploration samples, one is held out of the fits
            and used to measure their indicator (0: none held out).
        seed: seed or numpy Generator.
    """

    def __init__(self, n_actions: int, context_dim: int, signal_dim: int,
                 schedule: Schedule | None = None, update_every: int = 100,
                 exploit: str = "greedy", holdout_every: int = 0, seed: SeedLike = None):
        super().__init__(n_actions, seed)
        if exploit not in EXPLOIT:
            raise IGLearnError(f"unknown exploit mode {exploit!r}; choose one of {EXPLOIT}")
        if update_every < 1:
            raise IGLearnError(f"update_every must be at least 1, got {update_every}")
        self.schedule = schedule or PaperSchedule()
        self.update_every = update_every
        self.exploit = exploit
        self.policy_: Policy | None = None
        self.explored_ = 0
        self.exploited_ = 0
        self.certified_ = False
        """Whether a fit passed the schedule's data test (data-driven schedule)."""
        self.fits_: list[dict] = []
        self._exploit_left = 0
        self._pending: list[np.ndarray] = []
        self.holdout_every = holdout_every
        self._store = _Store(context_dim, signal_dim)
        self._holdout = _Store(context_dim, signal_dim)

    # -- acting ---------------------------------------------------------------------------
    def act_batch(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        contexts = np.asarray(contexts, dtype=np.float32)
        n, k = len(contexts), self.n_actions
        explore = np.empty(n, dtype=bool)
        for j in range(n):  # line 2 starts a round; line 5 runs n_i exploitation steps
            if self._exploit_left > 0 and self.policy_ is not None:
                explore[j] = False
                self._exploit_left -= 1
            else:
                explore[j] = True
                self.round_ += 1
                self._exploit_left = self.schedule.exploit_steps(self.round_, k,
                                                                 self.certified_)
        actions = np.empty(n, dtype=np.int64)
        probabilities = np.empty(n, dtype=np.float64)
        rows = np.flatnonzero(explore)
        actions[rows] = self.rng.integers(0, k, len(rows))
        probabilities[rows] = 1.0 / k
        rows = np.flatnonzero(~explore)
        if len(rows):
            actions[rows], probabilities[rows] = self._exploit(contexts[rows])
        self._pending.append(explore)
        self.explored_ += int(explore.sum())
        self.exploited_ += int(n - explore.sum())
        self.interactions_ += n
        return actions, probabilities

    def exploit_distribution(self, contexts: np.ndarray) -> np.ndarray:
        """The distribution (n, K) exploitation steps draw actions from: one-hot on the
        greedy action ('greedy') or pi_i(. | x) ('softmax')."""
        policy = self._fitted()
        with torch.no_grad():
            probs = policy.probabilities(as_tensor(contexts)).double().numpy()
        if self.exploit == "greedy":
            return np.eye(self.n_actions)[probs.argmax(1)]
        return probs / probs.sum(1, keepdims=True)

    def _exploit(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        probs = self.exploit_distribution(contexts)
        greedy = self.exploit == "greedy"
        actions = probs.argmax(1) if greedy else sample_actions(probs, self.rng)
        return actions, probs[np.arange(len(contexts)), actions]

    def block_size(self, stop_round: int | None = None) -> int:
        """Steps until (and including) the exploration step after which the next re-fit
        happens, or of round ``stop_round`` if that comes first: acting on that many
        contexts at once is exactly Algorithm 1."""
        steps = self._exploit_left if self.policy_ is not None else 0
        i = self.round_
        while True:
            i += 1
            steps += 1
            if self._refit_due(i) or (stop_round is not None and i >= stop_round):
                return steps
            steps += self.schedule.exploit_steps(i, self.n_actions, self.certified_)

    # -- learning -------------------------------------------------------------------------
    def learn_batch(self, contexts: np.ndarray, actions: np.ndarray,
                    probabilities: np.ndarray, feedback: np.ndarray) -> None:
        explore = self._take_pending(len(actions))
        rows = np.flatnonzero(explore)
        first = self.explored_learned + 1
        held = np.zeros(len(rows), dtype=bool)
        if self.holdout_every:
            held = (np.arange(first - 1, first - 1 + len(rows)) % self.holdout_every
                    == self.holdout_every - 1)
        contexts, actions = np.asarray(contexts), np.asarray(actions)
        probabilities, feedback = np.asarray(probabilities), np.asarray(feedback)
        for store, part in ((self._store, rows[~held]), (self._holdout, rows[held])):
            store.append(contexts[part], actions[part], probabilities[part], feedback[part])
        for count in range(first, self.explored_learned + 1):  # line 3, then line 4 when due
            if self._refit_due(count):
                start = time.perf_counter()
                held_out = count // self.holdout_every if self.holdout_every else 0
                holdout = self._holdout.tensors(held_out) if held_out else None
                indicator, extra = self._refit(self._store.tensors(count - held_out),
                                               holdout)
                measured = held_out or count
                self.certified_ = self.certified_ or self.schedule.certifies(
                    indicator, measured, self.n_actions)
                self.fits_.append({"round": count, "indicator": indicator,
                                   "indicator_samples": measured,
                                   "certified": self.certified_,
                                   "seconds": time.perf_counter() - start, **extra})

    @property
    def explored_learned(self) -> int:
        """|D|: exploration samples learned from so far (held out or not)."""
        return len(self._store) + len(self._holdout)

    def _take_pending(self, n: int) -> np.ndarray:
        pending = np.concatenate(self._pending) if self._pending else np.empty(0, bool)
        if len(pending) < n:
            raise IGLearnError(f"learn got {n} interactions but only {len(pending)} were "
                               f"acted on since the last learn; pass exactly the acted "
                               f"interactions, in order")
        self._pending = [pending[n:]] if len(pending) > n else []
        return pending[:n]

    def _refit_due(self, count: int) -> bool:
        warmup = self.schedule.warmup(self.n_actions)
        if warmup is not None and count < warmup:
            return False
        return count % self.update_every == 0 or count == warmup

    @abstractmethod
    def _refit(self, data: tuple[torch.Tensor, ...],
               holdout: tuple[torch.Tensor, ...] | None) -> tuple[float, dict]:
        """Re-fit the policy on the exploration set; return its indicator (on ``holdout``
        when given) and fit notes."""

    # -- evaluation -----------------------------------------------------------------------
    def _fitted(self) -> Policy:
        if self.policy_ is None:
            raise IGLearnError(f"{type(self).__name__} has no policy yet: it fits one when "
                               f"its warm-up ends; play more rounds first")
        return self.policy_

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """The greedy action of the current policy for each context."""
        policy = self._fitted()
        with torch.no_grad():
            return policy.net(as_tensor(contexts)).argmax(1).numpy()

    def accuracy(self, contexts: np.ndarray, labels: np.ndarray) -> float:
        """Fraction of contexts whose greedy action equals the label."""
        return float((self.predict(contexts) == np.asarray(labels)).mean())


class OnlineContextualBandit(EpochGreedy):
    """Epoch-greedy with the true reward: the same loop and schedule as E2G, but line 4
    maximises ContextualBandit's IPS objective mean[pi(a|x) r / p] on the exploration set.
    ``learn`` receives the reward r in place of the feedback vector.

    Args:
        n_actions: K.
        context_dim: dimension of the contexts.
        schedule, update_every, exploit: as for :class:`EpochGreedy`.
        policy: policy class, 'linear' or 'mlp'.
        optimisation: settings of the first fit (from scratch).
        refit_optimisation: settings of the warm-started re-fits.
        seed: seed or numpy Generator.
    """

    def __init__(self, n_actions: int, context_dim: int, schedule: Schedule | None = None,
                 update_every: int = 100, exploit: str = "greedy", policy: str = "linear",
                 optimisation: Optimisation | None = FIRST_FIT,
                 refit_optimisation: Optimisation | None = REFIT, seed: SeedLike = None):
        super().__init__(n_actions, context_dim, 0, schedule, update_every, exploit, 0, seed)
        self.context_dim = context_dim
        self.refit_optimisation = refit_optimisation
        self._batch = ContextualBandit(policy, optimisation)

    def _refit(self, data: tuple[torch.Tensor, ...],
               holdout: tuple[torch.Tensor, ...] | None) -> tuple[float, dict]:
        generator = torch_generator(self.rng)
        settings = None
        if self.policy_ is None:
            self.policy_ = make_policy(self._batch.policy, self.context_dim, self.n_actions,
                                       generator)
        else:
            settings = self.refit_optimisation
        self._batch.fit_models([self.policy_], one_trial(data), [generator], settings)
        context, action, probability, reward = data if holdout is None else holdout
        with torch.no_grad():  # Eq. 9 with psi = r: the IPS estimate of V(pi) - V(pi_bad)
            pi = at_action(self.policy_.probabilities(context), action)
            indicator = float(igl_objective(pi, reward, probability, self.n_actions))
        return indicator, {}


class _Store:
    """The exploration set D as growable numpy arrays, viewed as tensors without copying."""

    def __init__(self, context_dim: int, signal_dim: int, capacity: int = 1024):
        self.n = 0
        self.context = np.empty((capacity, context_dim), np.float32)
        self.action = np.empty(capacity, np.int64)
        self.probability = np.empty(capacity, np.float32)
        shape = (capacity, signal_dim) if signal_dim else (capacity,)
        self.signal = np.empty(shape, np.float32)

    def __len__(self) -> int:
        return self.n

    def append(self, context, action, probability, signal) -> None:
        m = len(action)
        if self.n + m > len(self.action):
            size = max(2 * len(self.action), self.n + m)
            for name in ("context", "action", "probability", "signal"):
                old = getattr(self, name)
                new = np.empty((size, *old.shape[1:]), old.dtype)
                new[:self.n] = old[:self.n]
                setattr(self, name, new)
        rows = slice(self.n, self.n + m)
        self.context[rows], self.action[rows] = context, action
        self.probability[rows], self.signal[rows] = probability, signal
        self.n += m

    def tensors(self, count: int) -> tuple[torch.Tensor, ...]:
        """The first ``count`` samples as (context, action, probability, signal) tensors."""
        return (torch.from_numpy(self.context[:count]), torch.from_numpy(self.action[:count]),
                torch.from_numpy(self.probability[:count]),
                torch.from_numpy(self.signal[:count]))
