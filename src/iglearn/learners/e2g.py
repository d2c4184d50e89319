"""E2G, Explore-Exploit Ground learning (Algorithm 1): online IGL by epoch-greedy.

    for i = 1, 2, ...
        play a uniformly random action on x_t, observe y_t         (line 2)
        D_i = D_{i-1} + {(x_t, a_t, y_t)}                          (line 3)
        (pi_i, psi_i) = argmax  E_D[K psi(y) pi(a|x)] - E_D[psi(y)] (line 4)
        execute pi_i for n_i steps                                  (line 5)

:class:`EpochGreedy` is this loop, behind the act/learn interface: ``act`` runs lines 2 and 5
(:meth:`EpochGreedy.next_step_explores`), ``learn`` runs line 3 and, when due, line 4
(:meth:`EpochGreedy.learn_batch`). :class:`E2G` fills in line 4 with
:meth:`BatchIGL.fit_with_restarts <iglearn.learners.batch_igl.BatchIGL.fit_with_restarts>` (the
corrector and the adaptive restart of Appendix B) on D_i, warm-started from
(pi_{i-1}, psi_{i-1}) with a short optimisation and re-run from fresh initialisations only when
the warm start's indicator falls to the restart threshold. A tenth of D is held out of the fits
to measure the indicator (Eq. 9), an unbiased estimate of (V(pi) - V(pi_bad)) Delta_psi that a
fit memorising a few thousand samples cannot inflate. As in Appendix B, line 4 runs every
``update_every`` rounds (100) rather than every round. The reward is never read: ``learn``
receives feedback vectors. :class:`OnlineContextualBandit` is the same loop with the true
reward in line 4 (Figure 3's CB).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import Any, ClassVar, cast

import numpy as np
import torch

from iglearn.data.scaling import Mode, SameUnit, Standardiser, check_mode, check_same_unit
from iglearn.errors import IGLearnError, check_choice, warn_caller
from iglearn.hints import whole_number
from iglearn.learners.base import PolicyLearner
from iglearn.learners.baselines import ContextualBandit
from iglearn.learners.batch_igl import (
    BatchIGL,
    IdentifiabilityWarning,
    action_warning,
    indicators,
)
from iglearn.learners.corrector import decoded_shares
from iglearn.learners.online import OnlineLearner, check_width
from iglearn.learners.schedules import PaperSchedule, Schedule
from iglearn.learners.settings import EXPLOIT as EXPLOIT
from iglearn.learners.settings import Optimisation
from iglearn.learners.trials import Batch, Trials, as_tensor
from iglearn.models import Decoder, Policy, make_policy
from iglearn.models.custom import ModelSpec
from iglearn.models.stacked import stack
from iglearn.sampling import sample_actions
from iglearn.seeding import SeedLike, torch_generator
from iglearn.theory import action_led
from iglearn.threads import torch_threads

FIRST_FIT = Optimisation(max_steps=120, small_log=0)
"""Line 4 from scratch (the end of the warm-up): the batch learners' settings with a cap of 120
steps on a stage (on the warm-up's 4000 samples, up to 15 epochs a stage), whatever the log's
size."""
REFIT = Optimisation(grounding_epochs=0, policy_epochs=0, epochs=1, max_steps=6,
                     batch_size=1000, lr=0.01, small_log=0)
"""Line 4 warm-started from (pi_{i-1}, psi_{i-1}), which is near the new optimum: one epoch
(extended to at most 6 steps while the loss improves) of the exact objective in batches of
1000 at half the learning rate (``benchmarks/figure3.py`` measures the alternatives)."""


def check_update_every(update_every: int) -> None:
    """Refuse a re-fit interval below one round, naming it (also where coba's learners are
    configured, before the learner is made)."""
    whole = whole_number(update_every)
    if whole is None or whole < 1:
        raise IGLearnError(f"update_every must be a whole number >= 1, got {update_every!r}")


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
        standardise: standardise contexts (and feedback vectors) with the statistics of the
            exploration set when the first fit is due (the warm-up), kept from then on
            (:mod:`iglearn.data.scaling`, method 'warm-up'): "auto" each block off the unit
            scale only, "on" always, "off" never (the models read raw values).
        same_unit: the blocks measured in one unit, "context", "feedback" or "both", whose
            columns share one scale when standardised; "none": a scale per column
            (:class:`~iglearn.learners.settings.FitSettings`).
    """

    context_dim: int
    least_signal: ClassVar[int] = 1
    """The fewest numbers ``learn`` receives per interaction (0: a scalar reward)."""
    _batch: PolicyLearner
    """The batch learner each re-fit runs (set by the subclass); the warm-up's statistics
    follow its row spread and origins, as its own fit's would."""

    def __init__(self, n_actions: int, context_dim: int, signal_dim: int,
                 schedule: Schedule | None = None, update_every: int = 100,
                 exploit: str = "greedy", holdout_every: int = 0, seed: SeedLike = None,
                 standardise: Mode = "auto", same_unit: SameUnit = "none"):
        super().__init__(n_actions, seed)
        self.context_dim = check_width("context_dim", context_dim)
        self.standardise = check_mode(standardise)
        self.same_unit = check_same_unit(same_unit)
        self.standardiser_: Standardiser | None = None
        """The warm-up's statistics, set at the first fit (None before, or when off)."""
        self._signal_dim = check_width("feedback_dim", signal_dim,
                                       least=self.least_signal)
        check_choice("exploit mode", exploit, EXPLOIT)
        check_update_every(update_every)
        held = whole_number(holdout_every)
        if held is None or not (held == 0 or held >= 2):
            raise IGLearnError(f"holdout_every must be 0 (none held out) or a whole number >= 2 "
                               f"(one exploration sample in every that many held out), got "
                               f"{holdout_every!r}")
        if schedule is not None and not isinstance(schedule, Schedule):
            raise IGLearnError(f"schedule must be a Schedule, got {schedule!r}; build one by "
                               f"name with iglearn.learners.make_schedule("
                               f"{schedule if isinstance(schedule, str) else 'paper'!r})")
        self.schedule = schedule or PaperSchedule()
        self.update_every = int(update_every)
        self.exploit = exploit
        self.policy_: Policy | None = None
        self.explored_ = 0
        self.exploited_ = 0
        self.certified_ = False
        """Whether a fit passed the schedule's data test (data-driven schedule); never a fit
        whose decoded reward follows the action (its ``action_explained``,
        :func:`~iglearn.theory.action_led`)."""
        self.fits_: list[dict] = []
        """Each re-fit's record: its round, indicator and the samples it was measured on,
        whether the learner is certified, seconds, and what the subclass adds (E2G: restarts,
        the corrector's flip and ``action_explained``)."""
        self._exploit_left = 0
        self._pending: list[np.ndarray] = []
        self.holdout_every = held
        self._store = ExplorationSet(context_dim, signal_dim)
        self._holdout = ExplorationSet(context_dim, signal_dim)

    def described(self) -> dict[str, object]:
        """:meth:`OnlineLearner.described` with the feedback's width (none for a learner of
        rewards), the exploration steps, the re-fits and whether a fit was certified."""
        shown = super().described()
        interactions = shown.pop("interactions")
        if self._signal_dim:
            shown["feedback_dim"] = self._signal_dim
        shown.update(interactions=interactions, explored=self.explored_,
                     refits=len(self.fits_), certified=self.certified_)
        return shown

    # -- acting: lines 2 and 5 ------------------------------------------------------------
    def next_step_explores(self) -> bool:
        """Advance Algorithm 1 by one step; whether that step explores. While n_i steps of
        round i remain, the step executes pi_i (line 5); otherwise round i + 1 begins with one
        uniformly random action (line 2) and fixes its n_{i+1} from the schedule."""
        if self._exploit_left > 0 and self.policy_ is not None:
            self._exploit_left -= 1
            return False
        self.round_ += 1
        self._exploit_left = self.schedule.exploit_steps(self.round_, self.n_actions,
                                                         self.certified_)
        return True

    def act_batch(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        contexts = self.checked_contexts(contexts)
        n, k = len(contexts), self.n_actions
        explore = np.array([self.next_step_explores() for _ in range(n)], dtype=bool)
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
            probs = policy.probabilities(as_tensor(self.standardised(contexts))).double().numpy()
        if self.exploit == "greedy":
            return np.eye(self.n_actions)[probs.argmax(1)]
        return probs / probs.sum(1, keepdims=True)

    def probabilities(self, contexts: np.ndarray) -> np.ndarray:
        """Uniform when the next step explores (line 2), else the exploitation distribution
        (line 5)."""
        contexts = self.checked_contexts(contexts, "probabilities")
        if self._exploit_left > 0 and self.policy_ is not None:
            return self.exploit_distribution(contexts)
        return np.full((len(contexts), self.n_actions), 1.0 / self.n_actions)

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

    # -- learning: lines 3 and 4 -----------------------------------------------------------
    def learn_batch(self, contexts: np.ndarray, actions: np.ndarray,
                    probabilities: np.ndarray, feedback: np.ndarray) -> None:
        """Line 3: add the exploration steps among these interactions to D (every
        ``holdout_every``-th to the held-out part); line 4 whenever a re-fit is due."""
        contexts, actions, probabilities, feedback = self.checked_interactions(
            contexts, actions, probabilities, feedback, self._signal_dim)
        explore = self._take_pending(len(actions))
        rows = np.flatnonzero(explore)
        first = self.explored_learned + 1
        held = np.zeros(len(rows), dtype=bool)
        if self.holdout_every:
            held = (np.arange(first - 1, first - 1 + len(rows)) % self.holdout_every
                    == self.holdout_every - 1)
        if self.standardiser_ is not None:  # D holds the rows as the models read them
            contexts = self.standardiser_.apply(contexts)
            if self._signal_dim:
                feedback = self.standardiser_.apply_feedback(feedback)
        for store, part in ((self._store, rows[~held]), (self._holdout, rows[held])):
            store.append(contexts[part], actions[part], probabilities[part], feedback[part])
        for count in range(first, self.explored_learned + 1):  # line 3, then line 4 when due
            if self._refit_due(count):
                if self.standardise != "off" and self.standardiser_ is None:
                    self._take_warmup_statistics()
                start = time.perf_counter()
                held_out = count // self.holdout_every if self.holdout_every else 0
                holdout = self._holdout.tensors(held_out) if held_out else None
                with torch_threads(self.threads):
                    indicator, extra = self._refit(self._store.tensors(count - held_out),
                                                   holdout)
                self.check_refit()
                measured = held_out or count
                self.certified_ = self.certified_ or self.schedule.certifies(
                    indicator, measured, self.n_actions, extra.get("action_explained"))
                self.fits_.append({"round": count, "indicator": indicator,
                                   "indicator_samples": measured,
                                   "certified": self.certified_,
                                   "seconds": time.perf_counter() - start, **extra})

    def _take_warmup_statistics(self) -> None:
        """The statistics of every exploration sample so far (uniform play), kept as
        ``standardiser_``; D's rows are standardised in place."""
        stores = (self._store, self._holdout)
        blocks = [{"context": store.context[:store.n], "probability": store.probability[:store.n],
                   **({"feedback": store.signal[:store.n]} if self._signal_dim else {})}
                  for store in stores if store.n]
        batch = type(self._batch)  # the re-fits' learner: its row spread and origins
        scaler = Standardiser.of_blocks(blocks, self._store.context.shape[1], self._signal_dim,
                                        "warm-up", self.standardise,
                                        row_spread=batch.row_spread, origins=batch.origins,
                                        same_unit=self.same_unit)
        for store in stores:
            store.context[:store.n] = scaler.apply(store.context[:store.n])
            if self._signal_dim:
                store.signal[:store.n] = scaler.apply_feedback(store.signal[:store.n])
        self.standardiser_ = scaler

    def standardised(self, contexts: np.ndarray) -> np.ndarray:
        """Contexts as the policy reads them (standardised with the warm-up's statistics,
        once taken)."""
        if self.standardiser_ is None:
            return np.asarray(contexts, np.float32)
        return self.standardiser_.apply(contexts)

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
    def _refit(self, data: Batch, holdout: Batch | None) -> tuple[float, dict]:
        """Line 4: re-fit the policy on the exploration set; return its indicator (on
        ``holdout`` when given) and fit notes."""

    def fitted_models(self) -> dict[str, Any]:
        """The policy (and, in subclasses, the decoders) line 4 re-fits."""
        return {"policy": self.policy_}

    # -- evaluation -----------------------------------------------------------------------
    def _fitted(self) -> Policy:
        if self.policy_ is None:
            raise IGLearnError(f"{type(self).__name__} has no policy yet: it fits one when "
                               f"its warm-up ends; play more rounds first")
        return self.policy_

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """The greedy action of the current policy for each context (checked:
        :meth:`~iglearn.learners.online.OnlineLearner.checked_contexts`)."""
        policy = self._fitted()
        contexts = self.checked_contexts(contexts, "predict")
        with torch.no_grad():
            return policy.scores(as_tensor(self.standardised(contexts))).argmax(1).numpy()


class E2G(EpochGreedy):
    """Algorithm 1 with a schedule {n_i} (paper, theory or data-driven).

    Args:
        n_actions: K.
        context_dim: dimension of the contexts x.
        feedback_dim: dimension of the feedback vectors y.
        schedule: the schedule; default the paper's fixed warm-up of 4000 rounds.
        update_every: rounds between re-fits of (pi, psi) (Appendix B: 100).
        exploit: 'greedy' (play argmax pi_i, probability 1) or 'softmax' (sample pi_i).
        policy: policy class, 'linear' (the paper's) or 'mlp'.
        decoder: decoder class, 'linear' (the paper's) or 'mlp'.
        optimisation: settings of fits from a fresh initialisation.
        refit_optimisation: settings of warm-started re-fits.
        max_restarts: most restarts per fit of the adaptive restart.
        restart_threshold: its indicator threshold; None means 1/K.
        holdout_every: every this many exploration samples, one is held out of line 4 and
            measures the indicator instead (default 10: a tenth), so that the adaptive
            restart also rejects fits that memorise D; 0 fits on all of D.
        seed: seed or numpy Generator.
        standardise: standardise contexts and feedback with the warm-up's statistics (as
            for :class:`EpochGreedy`).
        same_unit: the blocks measured in one unit (as for :class:`EpochGreedy`).
    """

    _batch: BatchIGL

    def __init__(self, n_actions: int, context_dim: int, feedback_dim: int,
                 schedule: Schedule | None = None, update_every: int = 100,
                 exploit: str = "greedy", policy: ModelSpec = "linear",
                 decoder: ModelSpec = "linear",
                 optimisation: Optimisation | None = FIRST_FIT,
                 refit_optimisation: Optimisation | None = REFIT, max_restarts: int = 4,
                 restart_threshold: float | None = None, holdout_every: int = 10,
                 seed: SeedLike = None, standardise: Mode = "auto",
                 same_unit: SameUnit = "none"):
        super().__init__(n_actions, context_dim, feedback_dim, schedule, update_every,
                         exploit, holdout_every, seed, standardise, same_unit)
        self.refit_optimisation = refit_optimisation
        self._batch = BatchIGL(policy, decoder, optimisation or Optimisation(),
                               max_restarts=max_restarts,
                               restart_threshold=restart_threshold)
        self.decoder_: Decoder | None = None

    def fitted_models(self) -> dict[str, Any]:
        """The policy and the decoder line 4 re-fits."""
        return {"policy": self.policy_, "decoder": self.decoder_}

    def _refit(self, data: Batch, holdout: Batch | None) -> tuple[float, dict]:
        # Line 4 on D_i, warm-started from (pi_{i-1}, psi_{i-1}) once they exist.
        starts = (None if self.policy_ is None or self.decoder_ is None
                  else [(self.policy_, self.decoder_)])
        [(indicator, self.policy_, self.decoder_, tried, _)] = self._batch.fit_with_restarts(
            Trials.one(data), self.n_actions, [self.rng], starts, self.refit_optimisation,
            None if holdout is None else Trials.one(holdout))
        shares = decoded_shares(stack([self.decoder_]), Trials.one(data), self.n_actions,
                                by_action=True)
        explained = float(cast(torch.Tensor, shares.explained)[0])
        if not any(action_led(fit.get("action_explained")) for fit in self.fits_):
            for note in action_warning(explained, "E2G"):  # once per learner
                warn_caller(note, IdentifiabilityWarning)
        return indicator, {"restarts": len(tried) - 1, "flipped": bool(self.decoder_.flipped),
                           "action_explained": explained}

    def decode(self, feedback: np.ndarray) -> np.ndarray:
        """psi_i(y), the current decoded reward of each (raw) feedback vector."""
        self._fitted()
        assert self.decoder_ is not None  # fitted together with the policy
        if self.standardiser_ is not None:
            feedback = self.standardiser_.apply_feedback(feedback)
        with torch.no_grad():
            return self.decoder_(as_tensor(feedback)).numpy()


class OnlineContextualBandit(EpochGreedy):
    """Epoch-greedy with the true reward: the same loop and schedule as E2G, but line 4
    maximises ContextualBandit's IPS objective mean[pi(a|x) r / p] on the exploration set.
    ``learn`` receives the reward r in place of the feedback vector.

    Args:
        n_actions: K.
        context_dim: dimension of the contexts.
        schedule: the schedule {n_i}, as for :class:`EpochGreedy`.
        update_every: rounds between re-fits, as for :class:`EpochGreedy`.
        exploit: 'greedy' or 'softmax', as for :class:`EpochGreedy`.
        policy: policy class, 'linear' or 'mlp'.
        optimisation: settings of the first fit (from scratch).
        refit_optimisation: settings of the warm-started re-fits.
        seed: seed or numpy Generator.
        standardise: standardise contexts with the warm-up's statistics (as for
            :class:`EpochGreedy`).
        same_unit: "context" (or "both"): the contexts are measured in one unit (as for
            :class:`EpochGreedy`).
    """

    least_signal: ClassVar[int] = 0

    _batch: ContextualBandit

    def __init__(self, n_actions: int, context_dim: int, schedule: Schedule | None = None,
                 update_every: int = 100, exploit: str = "greedy", policy: ModelSpec = "linear",
                 optimisation: Optimisation | None = FIRST_FIT,
                 refit_optimisation: Optimisation | None = REFIT, seed: SeedLike = None,
                 standardise: Mode = "auto", same_unit: SameUnit = "none"):
        super().__init__(n_actions, context_dim, 0, schedule, update_every, exploit, 0, seed,
                         standardise, same_unit)
        self.refit_optimisation = refit_optimisation
        self._batch = ContextualBandit(policy, optimisation or Optimisation())

    def _refit(self, data: Batch, holdout: Batch | None) -> tuple[float, dict]:
        generator = torch_generator(self.rng)
        settings = None
        if self.policy_ is None:
            self.policy_ = make_policy(self._batch.policy, self.context_dim, self.n_actions,
                                       generator)
        else:
            settings = self.refit_optimisation
        self._batch.fit_models([self.policy_], Trials.one(data), [generator], settings)
        # Eq. 9 with psi = r: the IPS estimate of V(pi) - V(pi_bad)
        [indicator] = indicators([self.policy_], None,
                                 Trials.one(data if holdout is None else holdout),
                                 self.n_actions)
        return indicator, {}


class ExplorationSet:
    """The exploration set D of Algorithm 1 as growable numpy arrays, viewed as tensors
    without copying."""

    def __init__(self, context_dim: int, signal_dim: int, capacity: int = 1024):
        self.n = 0
        self.context = np.empty((capacity, context_dim), np.float32)
        self.action = np.empty(capacity, np.int64)
        self.probability = np.empty(capacity, np.float32)
        shape = (capacity, signal_dim) if signal_dim else (capacity,)
        self.signal = np.empty(shape, np.float32)

    def __len__(self) -> int:
        return self.n

    def append(self, context: np.ndarray, action: np.ndarray, probability: np.ndarray,
               signal: np.ndarray) -> None:
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

    def tensors(self, count: int) -> Batch:
        """The first ``count`` samples as tensors."""
        return Batch(torch.from_numpy(self.context[:count]),
                     torch.from_numpy(self.action[:count]),
                     torch.from_numpy(self.probability[:count]),
                     torch.from_numpy(self.signal[:count]))
