"""AI-IGL: Interaction-Grounded Learning with action-inclusive feedback (Xie, Saran, Foster,
Molu, Momennejad, Jiang, Mineiro, Langford, NeurIPS 2022).

When the feedback may depend on the action as well as on the reward (y independent of x given
(a, r)), the 2021 objective can be gamed: a decoder that recognises which action produced the
feedback, with a policy that plays that action, scores well without decoding any reward. AI-IGL
uses what still holds: for a fixed action a, the context and the feedback are dependent only
through the latent reward. So for any function f_a of the context and any decoder psi_a

    Cov_a(f_a(x), psi_a(y)) = P_a(r=1) P_a(r=0) (E_a[f_a | r=1] - E_a[f_a | r=0])
                                                (E_a[psi_a | r=1] - E_a[psi_a | r=0]),

where E_a is the law of (x, y) when a is played on every context x ~ d0: a pair that covaries
must follow r in both views, up to a common sign.

**The estimator.** A log gathered by any policy mu holds, among the rows where a was played,
(x, y) with density mu(a|x) d0(x) P(y | x, a); weighting row i by 1/p_i (its logging
probability) gives the law E_a. The weights are self-normalised within the action,

    w_ia = 1{a_i = a} / p_i / sum_j 1{a_j = a} / p_j,

and Cov_a(f, psi) = sum_i w_ia f_i psi_i - (sum_i w_ia f_i)(sum_i w_ia psi_i), with f_i and
psi_i the row's own action's values (:func:`action_covariance`). Under uniform logging every
row of action a weighs the same. In a mini-batch the weights are normalised within the batch.

**The indicator.** With f_a = pi(a|x), the sum over actions of Cov_a(pi(a|.), psi_a) equals
sum_a Delta_a Cov_x(pi(a|x), R(x, a)), Delta_a = E_a[psi_a | r=1] - E_a[psi_a | r=0]: zero for
any policy that ignores the context (uniform play), and with equal Delta_a proportional to
V(pi) - sum_a E[pi(a|x)] P(R(x, a) = 1), which is V(pi) - V(pi_bad) for balanced classes. The
per-action centring removes what makes Eq. 9 gameable here: a decoder's offset on the
feedback of one action (:func:`indicator`).

A fit runs these steps, each a function below:

1. grounding (:func:`grounding_stage`, ``Optimisation.grounding_epochs``): per-action scores
   f_a(x) = sigmoid(s_a(x)) and decoders psi_a ascend sum_a Cov_a(f_a, psi_a) jointly (the
   reference code alternates the two sides with the other detached, the same gradients);
2. symmetry breaking (:func:`break_symmetry`): Cov_a is unchanged by (f_a, psi_a) ->
   (1 - f_a, 1 - psi_a). Under uniform play with K >= 3 a rewarded interaction is the rarer
   event for each action (P_a(r=1) = P(label = a), about 1/K), so where the E_a-weighted mean
   of psi_a exceeds one half the pair is flipped: psi_a's corrector flag is set and the score
   s_a is negated;
3. policy (:func:`policy_stages`, ``Optimisation.policy_epochs`` then ``epochs``): with every
   decoder held fixed, the softmax policy pi = softmax(s(x) / temperature) learns from the
   decoded reward psi_{a_i}(y_i) of each logged interaction as ``ContextualBandit`` learns
   from the true reward: the two-sided minorant, then the IPS estimate of V(pi) - V(pi_bad)
   with the control variate (:mod:`iglearn.learners.objective`). The reference code fits each
   f_a to psi_a by squared error, one action at a time; the softmax couples the actions (one
   of them is right), about three points of accuracy on action-inclusive MNIST;
4. refinement (``AIIGL.refinements`` rounds, :func:`regrounding_stage`): the decoders alone
   ascend the indicator, sum_a Cov_a(pi(a|x), psi_a(y)), against the fitted policy held
   fixed, then symmetry breaking and the policy stages run again. The policy has learned from
   every action's interactions, so it separates a's contexts better than the score s_a
   grounded on a's interactions alone, and a decoder that co-adapted with its score to a
   few hundred interactions (the same few hundred in both views) is re-grounded.

The policy plays argmax_a s_a(x) (``predict``) and samples pi(. | x) when it acts
(``predict_proba``). The K scores are one network with K outputs (a linear or MLP policy);
the K decoders run side by side as one stacked module
(:func:`~iglearn.learners.trials.side_by_side`), so every step is one computation across
actions. ``AIIGL.fit_many`` fits T learners on T logs as one computation the same way: the T
policies side by side, and the T x K decoders (trial-major: trial t's decoder of action a is
number t K + a), every loss one value per trial.

:class:`OnlineAIIGL` runs the fit inside Algorithm 1's explore/exploit loop
(:class:`~iglearn.learners.e2g.EpochGreedy`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Self, cast

import numpy as np
import torch
from torch import nn

from iglearn.data.limits import check_igl_logs
from iglearn.data.logs import InteractionLog, as_array, field_values
from iglearn.data.scaling import Mode, SameUnit, standardised_feedback
from iglearn.errors import IGLearnError, warn_caller
from iglearn.learners import closed_form
from iglearn.learners.base import (
    StackableLearner,
    chance_warning,
    check_finite_fit,
    known_rewards,
    log_warnings,
)
from iglearn.learners.baselines import reward_stages
from iglearn.learners.batch_igl import AMBIGUITY_MARGIN, IdentifiabilityWarning
from iglearn.learners.corrector import Oriented
from iglearn.learners.e2g import EpochGreedy
from iglearn.learners.monitor import ShortReport
from iglearn.learners.objective import at_action
from iglearn.learners.restarts import Attempt, adaptive_restart
from iglearn.learners.schedules import DataDrivenSchedule, Schedule
from iglearn.learners.settings import AIIGL_OPTIMISATION as DEFAULT_OPTIMISATION
from iglearn.learners.settings import AIIGLSettings, Optimisation
from iglearn.learners.stream import AnyLog, action_counts, training_data
from iglearn.learners.training import Stage, optimise
from iglearn.learners.trials import (
    Batch,
    Source,
    Trials,
    as_tensor,
    field_tensor,
    fixed_signal,
    reducer_of,
    side_by_side,
)
from iglearn.models import Decoder, Policy, make_decoder, make_policy
from iglearn.models.custom import ModelSpec, check_specs
from iglearn.models.decoders import LinearDecoder, logistic
from iglearn.models.init import output_layer
from iglearn.models.kernels import number
from iglearn.models.stacked import StackedLinear
from iglearn.seeding import SeedLike, as_generator, torch_generator
from iglearn.threads import torch_threads

if TYPE_CHECKING:
    import pandas as pd

    from iglearn.data.formats.base import FeatureSchema
    from iglearn.learners.distributed import RayTrain

_CHUNK = 65536

StageMaker = Callable[[Policy, Decoder, int, Optimisation, float], Stage]
"""A (re-)grounding stage of stacked policies and decoders: :func:`grounding_stage` or
:func:`regrounding_stage`."""

OWN_COUNT = 2
"""AI-IGL's decoders count only their own action's interactions in their weight decay while
each has fewer than this many per feedback column (:func:`decoder_decay_scale`)."""

UNIT_SCALE_DECAY = 3.0
"""On feedback read as it was logged, the most by which counting a decoder's own interactions
raises its weight decay (:func:`decoder_decay_scale`)."""

@dataclass(repr=False)
class AIIGLReport(ShortReport):
    """What an AI-IGL fit measured about itself (no hidden reward is read)."""

    indicator: float
    """sum_a Cov_a(pi(a|x), psi_a(y)) of the final policy and decoders on the training log
    (the module docstring's indicator; 0 for uniform play)."""
    covariance: list[float]
    """Its terms, Cov_a(pi(a|x), psi_a(y)) for each action a."""
    reward_rate: list[float]
    """The E_a-weighted mean of each psi_a: the decoded P_a(r = 1)."""
    flipped: list[bool]
    """Whether each decoder ends flipped by symmetry breaking."""
    interactions: list[int]
    """Interactions in the log where each action was played."""
    seconds: float = 0.0
    """Wall time of the fit."""
    warnings: list[str] = field(default_factory=list)
    """Identifiability warnings raised by the fit."""
    restarts: int = 0
    """Restarts used by the adaptive restart (0 when the first initialisation grounded every
    action; ``max_restarts`` on a small log, where every attempt is made:
    :meth:`AIIGL.every_attempt`)."""
    attempt_indicators: list[float] = field(default_factory=list)
    """Indicator of every initialisation tried, in order."""


@dataclass(eq=False)
class AIIGL(AIIGLSettings, StackableLearner):
    """Learns a softmax policy over K scores and one reward decoder per action from a log
    whose feedback may depend on the action (see the module docstring): ``fit(log)``, or
    several learners on several logs as one batched computation, ``fit_many``.

    The settings are the dataclass fields below; ``optimisation.grounding_epochs`` are the
    epochs of each (re-)grounding stage, ``optimisation.policy_epochs`` and
    ``optimisation.epochs`` those of the policy's minorant and IPS stages.
    """

    if TYPE_CHECKING:  # set by fit; declared for the type checker, not as settings
        decoders_: list[Decoder] = field(init=False)
        report_: AIIGLReport = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.optimisation is None:  # accepted for convenience: the default settings
            self.optimisation = DEFAULT_OPTIMISATION
        check_specs(self)
        if not self.restart_fraction < 1:
            raise IGLearnError(f"restart_fraction must be in [0, 1), got "
                               f"{self.restart_fraction!r}")

    def fit(self, log: AnyLog, *, backend: RayTrain | None = None) -> Self:
        """Fit the policy and the decoders on ``log``, in memory or streamed (reads context,
        action, probability and feedback). Warns (:class:`IdentifiabilityWarning`) when
        K = 2, when an action never occurs in the log or has fewer than
        ``min_interactions`` interactions, and when a decoder calls about half of its action's
        feedback a reward. ``backend``: fit a streamed Parquet log data-parallel on Ray Train
        (:mod:`iglearn.learners.distributed`)."""
        if backend is not None:
            return backend.fit(self, log)
        with torch_threads(self.threads):
            type(self)._fit_stacked([self], [log])
        return self

    @classmethod
    def _fit_stacked(cls, learners: list[AIIGL], logs: list[AnyLog]) -> None:
        """Fit every learner on its log, side by side; each draws its initialisation and its
        shuffles from its own seed, as its own ``fit`` would."""
        check_igl_logs(logs)
        start = time.perf_counter()
        first = learners[0]
        scalers = [learner.take_statistics(log) for learner, log in zip(learners, logs,
                                                                         strict=True)]
        if cls._fit_kinds_apart(learners, logs, scalers):
            return
        data = training_data(logs, "feedback", scalers)
        fits = first.fit_with_restarts(data, logs[0].n_actions,
                                       [as_generator(learner.seed) for learner in learners])
        seconds = (time.perf_counter() - start) / len(learners)
        for log, (policy, decoders, _) in zip(logs, fits, strict=True):  # all, or none kept
            check_finite_fit(log, {"policy": policy, "decoders": decoders})
        for t, (learner, (policy, decoders, tried)) in enumerate(zip(learners, fits,
                                                                     strict=True)):
            learner.policy_, learner.decoders_ = policy, decoders
            learner.report_ = learner._report(logs[t], data.select([t]), seconds)
            learner.report_.restarts, learner.report_.attempt_indicators = len(tried) - 1, tried
            for note in learner.report_.warnings:
                warn_caller(note, IdentifiabilityWarning)

    def fit_with_restarts(self, data: Source, n_actions: int,
                          rngs: Sequence[np.random.Generator],
                          ) -> list[tuple[Policy, list[Decoder], list[float]]]:
        """The adaptive restart around :meth:`fit_models`, for the T trials of ``data`` at
        once (trial t draws from ``rngs[t]``): a trial in which some action did not ground
        (:func:`grounded`) is refitted from a fresh initialisation, with the other such trials,
        at most ``max_restarts`` times; each keeps the attempt with the largest indicator.
        On a small log (:meth:`every_attempt`) every trial makes all ``max_restarts`` + 1
        attempts and keeps the one with the largest indicator, all of them side by side.
        Attempt i of a trial draws its initialisation and shuffles from the i-th generator
        its ``rngs[t]`` gives, however the attempts are fitted.

        Returns:
            per trial, (policy, decoders, indicator of every attempt) of its best attempt.
        """
        d_x, d_y = data.context_dim, data.signal_dim
        standardised = standardised_feedback(self.standardiser_)
        every = self.every_attempt(data, n_actions)

        def attempt(numbers: list[int], pending: list[int]
                    ) -> list[Attempt[tuple[Policy, list[Decoder]]]]:
            generators = [torch_generator(rngs[t]) for t in pending]
            models = [self.initial_models(d_x, d_y, n_actions, g) for g in generators]
            policies, decoders = [m[0] for m in models], [m[1] for m in models]
            self.fit_models(policies, decoders, data.select(pending), generators,
                            standardised=standardised)
            attempts = []
            for t, policy, own in zip(pending, policies, decoders, strict=True):
                terms = indicator_terms(policy, own, data.select([t]))
                indicator = float(terms.sum())
                attempts.append(Attempt((policy, own), indicator,
                                        not every and grounded(terms, self.restart_fraction),
                                        indicator))
            return attempts

        together = every and isinstance(data, Trials)  # a stream is one trial at a time
        best, tried = adaptive_restart(len(rngs), self.max_restarts, attempt,
                                       ahead=self.max_restarts + 1 if together else 1)
        return [(*b.fitted, tried[t]) for t, b in enumerate(best)]

    def every_attempt(self, data: Source, n_actions: int) -> bool:
        """Whether every trial of :meth:`fit_with_restarts` makes all ``max_restarts`` + 1
        attempts and keeps the one with the largest indicator (iglearn's addition): on a log
        of fewer than ``every_attempt_below`` interactions per action. There most fits
        restart (16 digits logs of 500 interactions, K = 10: 10 restarted as given, 14 on
        action-inclusive digits), and the indicator ranks all the attempts better than the
        grounding test stops them (on raw BCI logs of 200 interactions the worst of 16
        seeds rose from 40.2 to 89.6 %). A first attempt can also pass the grounding test
        and still be far from the others: on the BCI's logs of 500 interactions (167 an
        action) such a fit scored 54 % where the best of three scored 96, hence 200 an
        action rather than 100 (docs/results.md, "AI-IGL makes every attempt below 200
        interactions an action"). The attempts of a log in memory are made side by side, at
        little more cost than one: a step on a few hundred interactions costs its
        operations' overhead more than their arithmetic, and a single fit's three attempts
        took about 1.5 times one attempt's CPU (``fit_many`` of 16 logs of 500: 1.6 times
        the adaptive restart's) (docs/results.md, "AI-IGL makes every attempt side by side
        on small logs")."""
        return data.n < n_actions * self.every_attempt_below

    def _report(self, log: AnyLog, everything: Source, seconds: float) -> AIIGLReport:
        """What the fitted models measure on their log ``everything``, with the warnings."""
        covariance = indicator_terms(self.policy_, self.decoders_, everything)
        rates = reward_rates(self.decoders_, everything)
        notes = action_warnings(log, self.min_interactions)
        notes += [f"action {a}: its decoder calls {rate:.1%} of the action's feedback a "
                  f"reward, close to one half, so the sign of its decoded reward is "
                  f"ambiguous; log more interactions of it"
                  for a, rate in enumerate(rates) if abs(rate - 0.5) < AMBIGUITY_MARGIN]
        notes += degenerate_warning(covariance, self.max_restarts + 1,
                                    self.standardiser_ is None)
        return AIIGLReport(
            indicator=float(covariance.sum()), covariance=covariance.tolist(),
            reward_rate=rates.tolist(), flipped=[bool(d.flipped) for d in self.decoders_],
            interactions=action_counts(log).tolist(), seconds=seconds,
            warnings=notes)

    def initial_models(self, context_dim: int, feedback_dim: int, n_actions: int,
                       generator: torch.Generator) -> tuple[Policy, list[Decoder]]:
        """A fresh score network (K outputs, this learner's temperature) and K fresh
        decoders, drawn from ``generator``."""
        policy = make_policy(self.policy, context_dim, n_actions, generator)
        policy.temperature = self.temperature
        decoders = [make_decoder(self.decoder, feedback_dim, generator,
                                 self.decoder_temperature) for _ in range(n_actions)]
        return policy, decoders

    def fit_models(self, policies: Sequence[Policy], decoders: Sequence[Sequence[Decoder]],
                   data: Source, generators: Sequence[torch.Generator],
                   optimisation: Optimisation | None = None, warm: bool = False,
                   standardised: bool = False) -> None:
        """Fit ``policies[t]`` and ``decoders[t]`` (its K decoders) in place on trial t of
        ``data``, shuffling with ``generators[t]``, every trial side by side: from fresh
        models, grounding, symmetry breaking and the policy stages, then ``refinements``
        refinement rounds; with ``warm`` (models already fitted on similar data), one
        refinement round. ``optimisation`` overrides this learner's settings;
        ``standardised``: the feedback the decoders read is standardised
        (:func:`decoder_decay_scale`)."""
        settings = optimisation or self.optimisation
        rounds = 1 if warm else self.refinements
        decay = decoder_decay_scale(data.n, len(decoders[0]), data.signal_dim, standardised)
        if not warm:
            self.first_round(policies, decoders, data, generators, settings, decay)
        for _ in range(rounds):
            self.refinement_round(policies, decoders, data, generators, settings, decay)

    def first_round(self, policies: Sequence[Policy], decoders: Sequence[Sequence[Decoder]],
                    data: Source, generators: Sequence[torch.Generator],
                    settings: Optimisation, decay_scale: float = 1.0) -> None:
        """Steps 1 to 3: grounding, symmetry breaking, the policy stages; the decoders'
        data-scaled weight decay times ``decay_scale``."""
        self._ground(grounding_stage, policies, decoders, data, generators, settings,
                     decay_scale, self.progress_label("grounding"), self.progress_label("policy"))

    def refinement_round(self, policies: Sequence[Policy],
                         decoders: Sequence[Sequence[Decoder]], data: Source,
                         generators: Sequence[torch.Generator], settings: Optimisation,
                         decay_scale: float = 1.0) -> None:
        """Step 4: re-grounding against the policy, symmetry breaking, the policy stages;
        the decoders' data-scaled weight decay times ``decay_scale``."""
        self._ground(regrounding_stage, policies, decoders, data, generators, settings,
                     decay_scale, self.progress_label("re-grounding"),
                     self.progress_label("policy"))

    @staticmethod
    def _ground(stage: StageMaker, policies: Sequence[Policy],
                decoders: Sequence[Sequence[Decoder]], data: Source,
                generators: Sequence[torch.Generator], settings: Optimisation,
                decay_scale: float, progress: str | None = None,
                policy_progress: str | None = None) -> None:
        """The (re-)grounding ``stage`` (the decoders' data-scaled weight decay times
        ``decay_scale``), symmetry breaking in each trial, the policy stages (each with a
        progress bar so described, if given)."""
        k = len(decoders[0])
        with side_by_side(policies) as scores, side_by_side(flat(decoders)) as psi:
            optimise([stage(scores, psi, k, settings, decay_scale)], data, settings,
                     generators, progress)
        for t, (policy, own) in enumerate(zip(policies, decoders, strict=True)):
            break_symmetry(policy, own, data.select([t]))
        fit_policy(policies, decoders, data, generators, settings, policy_progress)

    def _fitted_decoders(self) -> list[Decoder]:
        self._fitted_policy()
        return self.decoders_

    def decode(self, feedback: np.ndarray | pd.DataFrame | InteractionLog,
               actions: np.ndarray | None = None) -> np.ndarray:
        """The decoded reward psi_a(y) of each feedback vector under the action that produced
        it, shape (n,) (on the learner's ``threads``): the feedback an array, a DataFrame
        read by the model's feedback columns or a log (:meth:`feedback_of`); ``actions`` the
        action of each, or None for the log's or the frame's action column."""
        decoders = self._fitted_decoders()
        if actions is None:
            from iglearn.data.frames import is_table

            if not isinstance(feedback, InteractionLog) and not is_table(feedback):
                raise IGLearnError("decode needs the action of each feedback vector: give "
                                   "actions, or a log or data frame that holds them")
            actions = self._field_of(feedback, "action")
        rows, actions = self.standardised_feedback(feedback), as_array(actions, "action", "decode")
        if actions.shape != (len(rows),):
            raise IGLearnError(f"decode needs one action in 0..{len(decoders) - 1} per feedback "
                               f"vector; got actions of shape {actions.shape} for "
                               f"{len(rows)} feedback vectors")
        actions = field_values("action", actions, "decode", len(decoders))
        with torch.no_grad(), torch_threads(self.threads, libraries=False):
            return decoded(decoders, as_tensor(rows), field_tensor(actions)).numpy()

    def orient(self, labelled: InteractionLog, log: AnyLog | None = None) -> Oriented:
        """Choose a two-action fit's direction, action by action, from interactions whose
        reward is known (a calibration session's trials, whose right answer the person was
        told): with K = 2 the reward need not be the rarer event of an action's feedback, so
        symmetry breaking may leave one decoder or both the wrong way round (the fit warns).
        Each action a whose decoded reward psi_a matches the known one on fewer than half of
        ``labelled``'s interactions of a has psi_a flipped and its score s_a negated, as
        symmetry breaking does (:func:`flip_actions`); an action without such interactions
        is left as it is. The policy's softmax couples the actions, so where one action's
        decoder flips and not the other's, negating its score recovers the policy only part
        of the way: given the training ``log``, the policy stages (:func:`fit_policy`) run
        again on it with the decoders held, as the fit ran them; without it the method
        warns. ``labelled``: a log with a ``reward`` or a ``label`` column; not fitted on.
        Returns the rows read, the agreement after the choice and the actions flipped;
        ``save`` keeps them."""
        reward = known_rewards(self, labelled)
        actions = np.asarray(labelled.action)
        agree = (self.decode(labelled.feedback, actions) > 0.5) == (reward > 0)
        decoders = self._fitted_decoders()
        flip = np.array([bool((actions == a).any()) and float(agree[actions == a].mean()) < 0.5
                         for a in range(len(decoders))])
        flip_actions(self.policy_, decoders, flip)
        flipped = tuple(int(a) for a in np.flatnonzero(flip))
        if 0 < len(flipped) < len(decoders):
            if log is None:
                warn_caller(f"orient flipped the decoder of action(s) {list(flipped)} but not "
                            f"of the others; pass the training log (log=, iglearn orient "
                            f"--log) so that the policy is fitted again on the oriented "
                            f"decoders: negating those scores alone recovers it only part of "
                            f"the way")
            else:
                data = training_data([log], "feedback", [self.standardiser_])
                with torch_threads(self.threads):
                    fit_policy([self.policy_], [decoders], data,
                               [torch_generator(as_generator(self.seed))], self.optimisation,
                               self.progress_label("policy"))
        after = np.where(flip[actions], ~agree, agree)
        for a in np.unique(actions):
            chance_warning(float(after[actions == a].mean()), int((actions == a).sum()),
                           f" (the decoder of action {a})")
        return Oriented(len(reward), float(after.mean()), bool(flipped), flipped)

    def indicator(self, log: AnyLog) -> float:
        """The indicator sum_a Cov_a(pi(a|x), psi_a(y)) of the fitted models on ``log`` (in
        memory or streamed): of the fitted model's K and feedback columns
        (:meth:`check_table`)."""
        decoders = self._fitted_decoders()
        self.check_table(log, "indicator", feedback=True)
        data = training_data([log], "feedback", [self.standardiser_])
        return float(indicator_terms(self.policy_, decoders, data).sum())

    def save(self, folder: str | Path, schema: FeatureSchema | None = None) -> Path:
        """Write the fitted policy and the K decoders to ``folder`` (see
        :func:`iglearn.learners.registry.save_model`)."""
        from iglearn.learners.registry import save_model
        return save_model(self, folder, schema)

    @classmethod
    def load(cls, folder: str | Path, import_factories: bool = False) -> AIIGL:
        """A fitted model read from ``folder`` (see :func:`iglearn.learners.registry.load_model`); a
        folder that holds another algorithm's model is refused. A custom policy or decoder is
        rebuilt by importing its recorded factory, only with ``import_factories``."""
        from iglearn.learners.registry import load_model
        # load_model checked the algorithm
        return cast(AIIGL, load_model(folder, "ai-igl", import_factories=import_factories))


def flat(decoders: Sequence[Sequence[Decoder]]) -> list[Decoder]:
    """The K decoders of every trial in one list, trial-major (trial t's decoder of action a
    is number t K + a), as they are stacked."""
    return [decoder for own in decoders for decoder in own]


def action_warnings(log: AnyLog, min_interactions: int) -> list[str]:
    """Warnings that hold before fitting: K = 2, the log's own
    (:func:`~iglearn.learners.base.log_warnings`: actions it never shows, probabilities that
    do not fit its actions), and actions with too few interactions to ground their
    decoders."""
    notes = []
    if log.n_actions == 2:
        notes.append("K = 2: the reward need not be the rarer event for each action, so the "
                     "sign of each decoded reward is not identified; expect arbitrary "
                     "directions, and choose them from a few interactions whose reward or "
                     "label is known (orient, iglearn orient)")
    notes += log_warnings(log)
    seen = action_counts(log)
    few = np.flatnonzero((seen > 0) & (seen < min_interactions)).tolist()
    if few:
        more = ", ..." if len(few) > 5 else ""
        actions = ", ".join(str(a) for a in few[:5]) + more
        counts = ", ".join(str(seen[a]) for a in few[:5]) + more
        which = (f"action {actions} has only {counts} interactions" if len(few) == 1
                 else f"{len(few)} actions, {actions}, have only {counts} interactions")
        notes.append(f"{log.source}: {which}, fewer than min_interactions ({min_interactions}), "
                     f"too few to ground a decoder reliably; log more interactions of every "
                     f"action (or lower min_interactions)")
    return notes


class ActionWeights(NamedTuple):
    """The E_a weights of the module docstring, w_ia = 1{a_i = a} / p_i normalised to sum to
    one over the rows of each action a (:func:`action_weights`): each row weighs only in its
    own action's law, so they are kept one per row."""

    row: torch.Tensor
    """w_{i a_i}, each row's weight in its own action's law, shape (..., n)."""
    action: torch.Tensor
    """a_i, shape (..., n)."""
    n_actions: int
    """K."""

    def means(self, values: torch.Tensor) -> torch.Tensor:
        """E_a of ``values`` (..., n), sum_i w_ia values_i for every action a, shape (..., K)
        (0 for an action without rows)."""
        return values.new_zeros(*values.shape[:-1], self.n_actions).scatter_add(
            -1, self.action, self.row * values)


def action_weights(action: torch.Tensor, probability: torch.Tensor,
                   n_actions: int) -> ActionWeights:
    """The :class:`ActionWeights` of rows with actions and logging probabilities of shape
    (..., n)."""
    inverse = probability.reciprocal()
    totals = inverse.new_zeros(*inverse.shape[:-1], n_actions).scatter_add(-1, action, inverse)
    return ActionWeights(inverse / totals.gather(-1, action), action, n_actions)


def action_covariance(f: torch.Tensor, psi: torch.Tensor, weights: ActionWeights,
                      ) -> torch.Tensor:
    """Cov_a(f, psi) = sum_i w_ia f_i psi_i - (sum_i w_ia f_i)(sum_i w_ia psi_i) for every
    action a: f_i and psi_i of shape (..., n) (each row's own action's values), weights
    from :func:`action_weights`; returns (..., K)."""
    return weights.means(f * psi) - weights.means(f) * weights.means(psi)


def at_own_action(values: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """Each row's value under its own action: values (..., K, n) of every action's model on
    every row, actions (..., n) -> (..., n)."""
    return values.gather(-2, action[..., None, :])[..., 0, :]


def own_decoder(psi: nn.Module, batch: Batch, n_actions: int) -> torch.Tensor:
    """psi_{a_i}(y_i) of each row of the mini-batch ``batch`` (T trials), shape (T, n): the
    T x K stacked decoders ``psi`` (trial-major), each row decoded by its own action's. The
    built-in linear decoders compute each trial's K logits in one product
    (:func:`_own_sigma`); any other decoder runs on every row of its trial (each reading a
    view of its trial's rows: nothing is copied), each row keeping its own action's value."""
    if closed_form.supports_decoder(psi):
        sigma, flags = _own_sigma(cast(Decoder, psi), batch, n_actions)
        return closed_form.flipped_where(flags, sigma)[0]
    trials, n = batch.action.shape
    return at_own_action(psi(_each_decoder(batch, n_actions)).view(trials, n_actions, n),
                         batch.action)


def _each_decoder(batch: Batch, n_actions: int) -> torch.Tensor | list[torch.Tensor]:
    """The rows each of the T x K stacked decoders reads: with one trial, one tensor of K
    views of its rows; else T x K views, trial-major (a stacked layer runs a list trial by
    trial)."""
    signal = batch.signal
    if batch.action.shape[0] == 1:
        return signal.expand(n_actions, *signal.shape[1:])
    return [rows for rows in signal for _ in range(n_actions)]


def _own_sigma(psi: Decoder, batch: Batch, n_actions: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """sigma(z / T) of each row's own action's decoder, of the T x K stacked linear decoders
    ``psi``, before the corrector, and each row's corrector flag, both (T, n). Trial t's K
    decoders are one layer of K outputs on its rows (one product, which rounds a trial alike
    alone and stacked), of whose logits each row keeps its own action's: on digits
    (K = 10, 500 rows, three trials) 100 µs, where the K T one-output products took 240."""
    net = cast(StackedLinear, psi.net)
    trials = batch.action.shape[0]
    weight = net.weight.view(trials, n_actions, -1).transpose(1, 2)
    logits = torch.baddbmm(net.bias.view(trials, 1, n_actions), batch.signal, weight)
    own = logits.gather(-1, batch.action[..., None])[..., 0]
    flags = psi.flipped.view(trials, n_actions).gather(-1, batch.action)
    return logistic(own / number(psi.temperature, own)), flags


def covariance_gradient(f: torch.Tensor, psi: torch.Tensor, weights: ActionWeights
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Cov_a(f, psi) (:func:`action_covariance`, (..., K)) and the gradients of
    -sum_a Cov_a(f, psi) in f_i and in psi_i, each of shape (..., n):
    -w_{i a_i} (psi_i - E_{a_i} psi) and -w_{i a_i} (f_i - E_{a_i} f), with E_a the weighted
    means sum_j w_ja (.)_j; a row's weight is zero in every other action's law."""
    mean_f, mean_psi = weights.means(f), weights.means(psi)
    covariance = weights.means(f * psi) - mean_f * mean_psi
    own = weights.action
    return (covariance, -weights.row * (psi - mean_psi.gather(-1, own)),
            -weights.row * (f - mean_f.gather(-1, own)))


def own_decoded(psi: Decoder, batch: Batch, n_actions: int
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`own_decoder`'s values for K linear decoders and their derivatives in each
    decoder's logit (as :func:`~iglearn.learners.closed_form.decoded`), each (T, n)."""
    sigma, flags = _own_sigma(psi, batch, n_actions)
    return closed_form.flipped_where(flags, sigma,
                                     closed_form.logit_slope(sigma, psi.temperature))


def _set_decoders(psi: Decoder, batch: Batch, n_actions: int, logit: torch.Tensor) -> None:
    """The K stacked linear decoders' gradients from the gradient in each row's own action's
    logit (T, n): decoder a of trial t gets the sum over its rows with a_i = a."""
    trials, n = batch.action.shape
    each = logit.new_zeros(trials, n_actions, n).scatter_(-2, batch.action[..., None, :],
                                                          logit[..., None, :])
    net = cast(StackedLinear, psi.net)
    net.weight.grad = torch.bmm(each, batch.signal).view_as(net.weight)
    net.bias.grad = each.sum(-1).view_as(net.bias)


def grounding_stage(scores: Policy, psi: Decoder, n_actions: int, settings: Optimisation,
                    decay_scale: float = 1.0) -> Stage:
    """Step 1, grounding: per-action scores f_a = sigmoid(s_a) and decoders psi_a ascend
    sum_a Cov_a(f_a, psi_a) on a mini-batch. ``scores`` is the policy stacked as one trial,
    ``psi`` the K decoders stacked along their leading axis (they learn at the learning rate
    times their temperature, their data-scaled weight decay times ``decay_scale``:
    :func:`decoder_decay_scale`)."""

    def loss(batch: Batch) -> torch.Tensor:
        s = at_action(scores.scores(batch.context), batch.action)
        weights = action_weights(batch.action, batch.probability, n_actions)
        f, decoded_psi = logistic(s), own_decoder(psi, batch, n_actions)
        return -action_covariance(f, decoded_psi, weights).sum(-1)

    @torch.no_grad()
    def gradient(batch: Batch) -> torch.Tensor:
        """``loss`` with its gradients in closed form (linear models): d f / d s = f (1 - f)
        and :func:`covariance_gradient`."""
        all_scores = scores.scores(batch.context)
        f = logistic(at_action(all_scores, batch.action))
        weights = action_weights(batch.action, batch.probability, n_actions)
        decoded_psi, slope = own_decoded(psi, batch, n_actions)
        covariance, g_f, g_psi = covariance_gradient(f, decoded_psi, weights)
        closed_form.set_logged_scores(scores.net, batch, all_scores, g_f.mul_(f * (1 - f)))
        _set_decoders(psi, batch, n_actions, g_psi.mul_(slope))
        return -covariance.sum(-1)

    decoders = list(psi.parameters())
    return Stage(settings.grounding_epochs, list(scores.parameters()) + decoders, loss,
                 decoders, psi.temperature, decay_scale,
                 closed_form=gradient if closed_form.supports(scores, psi) else None)


def regrounding_stage(scores: Policy, psi: Decoder, n_actions: int, settings: Optimisation,
                      decay_scale: float = 1.0) -> Stage:
    """Step 4, re-grounding: the decoders alone ascend the indicator
    sum_a Cov_a(pi(a|x), psi_a(y)) on a mini-batch, the policy ``scores`` held fixed (the
    decoders' data-scaled weight decay times ``decay_scale``)."""

    def loss(batch: Batch) -> torch.Tensor:
        with torch.no_grad():
            pi_a = at_action(scores.probabilities(batch.context), batch.action)
        weights = action_weights(batch.action, batch.probability, n_actions)
        return -action_covariance(pi_a, own_decoder(psi, batch, n_actions), weights).sum(-1)

    @torch.no_grad()
    def gradient(batch: Batch) -> torch.Tensor:
        """``loss`` with the decoders' gradients in closed form (:func:`covariance_gradient`)."""
        pi_a = at_action(scores.probabilities(batch.context), batch.action)
        weights = action_weights(batch.action, batch.probability, n_actions)
        decoded_psi, slope = own_decoded(psi, batch, n_actions)
        covariance, _, g_psi = covariance_gradient(pi_a, decoded_psi, weights)
        _set_decoders(psi, batch, n_actions, g_psi.mul_(slope))
        return -covariance.sum(-1)

    decoders = list(psi.parameters())
    return Stage(settings.grounding_epochs, decoders, loss, decoders, psi.temperature,
                 decay_scale, closed_form=gradient if closed_form.supports(scores, psi) else None)


def decoder_decay_scale(n: int, n_actions: int, feedback_dim: int, standardised: bool) -> float:
    """How many times the data-scaled weight decay AI-IGL's decoders get (iglearn's
    addition): while each decoder is fitted on fewer interactions than :data:`OWN_COUNT` times
    its d_y inputs (n / K < OWN_COUNT d_y), K where the feedback is ``standardised``, and
    min(K, :data:`UNIT_SCALE_DECAY`) where it is read as it was logged, on the unit scale;
    else 1.

    The data-scaled decay weight_decay_scale d / n (:attr:`Optimisation.weight_decay_scale`)
    counts the whole log, but the decoder of action a learns from a's interactions only,
    about n / K of them: counted so, its decay is K times as strong. On 16 raw digits logs
    of 500 interactions this raised the mean accuracy from 51.4 to 70.9 % (the worst seed's
    from 21.7 to 55.3 %); from about 2 d_y interactions per decoder the log's count fitted
    better. On the tasks' own feedback, read as it is, K times (10 on digits) lost worst seeds
    and three times fitted best: digits at 500 interactions 61.0 / 37.8 → 68.7 / 52.7 % (mean /
    worst), BCI at 200 +2.3 points, no cell lower, where 2 and 5 times each lost a cell by 3
    points (docs/results.md, "AI-IGL's decoders decayed by their own interactions" and
    "AI-IGL's decoders on feedback as it was logged")."""
    if n >= OWN_COUNT * feedback_dim * n_actions:
        return 1.0
    return float(n_actions) if standardised else min(float(n_actions), UNIT_SCALE_DECAY)


def policy_stages(scores: Policy, target: Callable[[Batch], torch.Tensor],
                  settings: Optimisation) -> list[Stage]:
    """Step 3, policy: the softmax policy ``scores`` learns from the decoded rewards
    psi_{a_i}(y_i), held fixed (``target`` of a mini-batch), as ContextualBandit learns from
    the true reward (:func:`~iglearn.learners.baselines.reward_stages`): the two-sided
    minorant, then the IPS estimate of V(pi) - V(pi_bad) with the control variate."""
    return reward_stages(scores, target, settings.policy_epochs, settings)


def fit_policy(policies: Sequence[Policy], decoders: Sequence[Sequence[Decoder]],
               data: Source, generators: Sequence[torch.Generator],
               settings: Optimisation, progress: str | None = None) -> None:
    """Run the policy stages (:func:`policy_stages`) in place, every trial side by side, on
    the decoded rewards (:func:`own_decoder`, decoded once for a log in memory:
    :func:`~iglearn.learners.trials.fixed_signal`); with ``progress``, a progress bar so
    described."""
    k = len(decoders[0])
    with side_by_side(policies) as scores, side_by_side(flat(decoders)) as psi:
        rewards, target = fixed_signal(data, lambda batch: own_decoder(psi, batch, k))
        optimise(policy_stages(scores, target, settings), rewards, settings, generators,
                 progress)


def decoded(decoders: Sequence[Decoder], feedback: torch.Tensor,
            action: torch.Tensor) -> torch.Tensor:
    """psi_{a_i}(y_i) of every row, each row decoded by its own action's decoder, shape (n,):
    the built-in linear decoders as one layer of K outputs on every row (one product a chunk,
    as :func:`_own_sigma`), any other decoder on its own rows."""
    out = torch.empty(len(action), dtype=torch.float32)
    with torch.no_grad():
        if all(type(decoder) is LinearDecoder and type(decoder.net) is nn.Linear
               for decoder in decoders):
            layers = [cast(nn.Linear, decoder.net) for decoder in decoders]
            weight = torch.cat([layer.weight for layer in layers]).T
            bias = torch.cat([layer.bias for layer in layers])
            temperature = torch.tensor([decoder.temperature for decoder in decoders])
            flags = torch.stack([decoder.flipped for decoder in decoders])
            for start in range(0, len(action), _CHUNK):
                part = slice(start, start + _CHUNK)
                own = action[part]
                logit = torch.addmm(bias, feedback[part], weight).gather(1, own[:, None])
                sigma = logistic(logit[:, 0] / temperature[own])
                out[part] = closed_form.flipped_where(flags[own], sigma)[0]
            return out
        for a, decoder in enumerate(decoders):
            for part in torch.nonzero(action == a)[:, 0].split(_CHUNK):
                out[part] = decoder(feedback[part])
    return out


def action_moments(policy: Policy | None, decoders: Sequence[Decoder],
                   data: Source) -> torch.Tensor:
    """Per action a, the sums over its rows of 1/p, pi(a|x)/p, psi_a(y)/p and
    pi(a|x) psi_a(y)/p, shape (4, K) in float64, on all of ``data`` (one trial) as a streaming
    reduction over its chunks; without a ``policy`` the contexts are not read and the sums
    with pi are 0. The E_a-weighted means of the module docstring are these sums over the
    first."""
    moments = torch.zeros(4, len(decoders), dtype=torch.float64)
    with torch.no_grad():
        for chunk in data.chunks(context=policy is not None):
            action, weight = chunk.action[0], 1.0 / chunk.probability[0].double()
            psi = decoded(decoders, chunk.signal[0], action).double()
            pi_a = torch.zeros_like(psi)
            if policy is not None:
                pi_a = at_action(policy.probabilities(chunk.context[0]), action).double()
            for m, value in enumerate((weight, weight * pi_a, weight * psi, weight * pi_a * psi)):
                moments[m].index_add_(0, action, value)
    return reducer_of(data).sum(moments)  # every process of a data-parallel fit


def _means(moments: torch.Tensor) -> torch.Tensor:
    """The E_a-weighted means (of pi, psi and pi psi) from :func:`action_moments`; an action
    without rows has means 0."""
    return moments[1:] / moments[0].clamp_min(torch.finfo(moments.dtype).tiny)


def reward_rates(decoders: Sequence[Decoder], data: Source) -> np.ndarray:
    """The E_a-weighted mean of psi_a over the rows of each action a, shape (K,)."""
    return _means(action_moments(None, decoders, data))[1].numpy()


def degenerate_warning(terms: np.ndarray, attempts: int, raw: bool) -> list[str]:
    """The warning of a fit whose every covariance term is at most 0 (``terms``, the kept
    attempt's of ``attempts``): no decoded reward depends on the policy's choice, so the
    policy is uniform play's (every decoder settled at a constant, or the fit diverged to
    one); ``raw``: the fit read its inputs unstandardised. Empty otherwise."""
    if (terms > 0).any():
        return []
    hint = ("; standardise is off: raw values far from the unit scale can stop every "
            "decoder, so leave it at auto" if raw else "")
    return [f"no attempt of {attempts} grounded any action (indicator {terms.sum():.3g}: no "
            f"decoded reward depends on the policy's choice), so the policy is no better "
            f"than uniform play; check that the feedback depends on the reward and the "
            f"settings (a learning rate too high settles every decoder){hint}"]


def grounded(terms: np.ndarray, fraction: float) -> bool:
    """Whether every action grounded: each covariance term Cov_a(pi(a|x), psi_a(y)) exceeds
    ``fraction`` times the median term. A decoder that settled at a constant has a term near
    0 (and the policy then learns to avoid its action), the failure the adaptive restart
    retries."""
    return bool(np.all(terms > fraction * np.median(terms)))


def indicator_terms(policy: Policy, decoders: Sequence[Decoder], data: Source) -> np.ndarray:
    """Cov_a(pi(a|x), psi_a(y)) on all of ``data`` (one trial, in memory or streamed), for
    each action a, from the streaming sums of :func:`action_moments`:
    E_a[pi psi] - E_a[pi] E_a[psi]. Their sum is the indicator of the module docstring."""
    mean_pi, mean_psi, mean_both = _means(action_moments(policy, decoders, data))
    return (mean_both - mean_pi * mean_psi).numpy()


def indicator(policy: Policy, decoders: Sequence[Decoder], data: Source) -> float:
    """The indicator sum_a Cov_a(pi(a|x), psi_a(y)) of the module docstring on ``data``."""
    return float(indicator_terms(policy, decoders, data).sum())


def break_symmetry(policy: Policy, decoders: Sequence[Decoder], data: Source) -> np.ndarray:
    """Step 2, symmetry breaking: for each action a whose E_a-weighted mean of psi_a exceeds
    one half (the reward would be the commoner event), flip psi_a to 1 - psi_a (its corrector
    flag) and negate the score s_a (row a of the policy network's last layer), so that
    f_a = sigmoid(s_a) becomes 1 - f_a. Returns which actions were flipped, shape (K,)."""
    flip = reward_rates(decoders, data) > 0.5
    flip_actions(policy, decoders, flip)
    return flip


def flip_actions(policy: Policy, decoders: Sequence[Decoder], flip: np.ndarray) -> None:
    """Flip psi_a to 1 - psi_a (its corrector flag) and negate the score s_a (row a of the
    policy network's last layer) of each action a marked in ``flip`` (K,)."""
    last = output_layer(policy.net)
    with torch.no_grad():
        for a in np.flatnonzero(flip):
            decoders[int(a)].flipped.logical_not_()
            last.weight[a].neg_()
            last.bias[a].neg_()


FIRST_FIT = replace(DEFAULT_OPTIMISATION, policy_epochs=1, small_log=0)
"""Online AI-IGL's fit from scratch at the end of the warm-up: the batch settings with one
epoch of the policy's minorant."""
REFIT = Optimisation(grounding_epochs=1, policy_epochs=0, epochs=1, max_steps=6,
                     batch_size=1000, lr=0.01, small_log=0)
"""Online AI-IGL's warm-started re-fits (one refinement round): one epoch (extended to at
most 6 steps while the loss improves) of re-grounding and of the IPS stage, at half the
learning rate (as E2G's re-fits)."""


class OnlineAIIGL(EpochGreedy):
    """AI-IGL inside Algorithm 1's loop (:class:`~iglearn.learners.e2g.EpochGreedy`): every
    round plays one uniformly random action (kept in the exploration set D), then exploits the
    fitted policy for n_i steps; line 4 is an AI-IGL fit on D, from scratch when the warm-up
    ends and, every ``update_every`` rounds after, one refinement round warm-started from the
    current models (``refit_optimisation``). Every action is returned with the probability it
    was drawn with.

    A fit's indicator here is AI-IGL's, sum_a Cov_a(pi(a|x), psi_a(y)), measured on the
    held-out part of D (every ``holdout_every``-th exploration sample). The data-driven
    schedule's certificate rests on Eq. 9 under the 2021 assumption, so it is refused; use
    the paper or theory schedule.

    Args:
        n_actions: K.
        context_dim: dimension of the contexts x.
        feedback_dim: dimension of the feedback vectors y.
        schedule: the schedule; default the paper's fixed warm-up of 4000 rounds.
        update_every: rounds between re-fits.
        exploit: 'greedy' (argmax of the scores, probability 1) or 'softmax' (sample pi).
        policy: score network class, 'linear' or 'mlp'.
        decoder: decoder class, 'linear' or 'mlp'.
        optimisation: settings of the fit from scratch.
        refit_optimisation: settings of the warm-started re-fits.
        holdout_every: every this many exploration samples, one is held out of the fits and
            measures their indicator (0: none; the indicator is then measured on D).
        seed: seed or numpy Generator.
        standardise: standardise contexts and feedback with the warm-up's statistics (as
            for :class:`~iglearn.learners.e2g.EpochGreedy`).
        same_unit: the blocks measured in one unit (as for
            :class:`~iglearn.learners.e2g.EpochGreedy`).
    """

    _batch: AIIGL

    def __init__(self, n_actions: int, context_dim: int, feedback_dim: int,
                 schedule: Schedule | None = None, update_every: int = 100,
                 exploit: str = "greedy", policy: ModelSpec = "linear",
                 decoder: ModelSpec = "linear",
                 optimisation: Optimisation = FIRST_FIT,
                 refit_optimisation: Optimisation = REFIT, holdout_every: int = 10,
                 seed: SeedLike = None, standardise: Mode = "auto",
                 same_unit: SameUnit = "none"):
        if isinstance(schedule, DataDrivenSchedule):
            raise IGLearnError("the data-driven schedule certifies Eq. 9 under the 2021 "
                               "assumption, which action-inclusive feedback breaks; use the "
                               "paper or theory schedule with OnlineAIIGL")
        super().__init__(n_actions, context_dim, feedback_dim, schedule, update_every,
                         exploit, holdout_every, seed, standardise, same_unit)
        self.refit_optimisation = refit_optimisation
        self._batch = AIIGL(policy, decoder, optimisation)
        self.feedback_dim = feedback_dim
        self.decoders_: list[Decoder] | None = None

    def fitted_models(self) -> dict[str, Any]:
        """The policy and the K decoders each re-fit changes."""
        return {"policy": self.policy_, "decoders": self.decoders_}

    def _refit(self, data: Batch, holdout: Batch | None) -> tuple[float, dict]:
        generator = torch_generator(self.rng)
        warm = self.policy_ is not None
        if not warm:
            self.policy_, self.decoders_ = self._batch.initial_models(
                self.context_dim, self.feedback_dim, self.n_actions, generator)
        assert self.policy_ is not None and self.decoders_ is not None
        self._batch.fit_models([self.policy_], [self.decoders_], Trials.one(data), [generator],
                               self.refit_optimisation if warm else None, warm,
                               standardised_feedback(self.standardiser_))
        value = indicator(self.policy_, self.decoders_,
                          Trials.one(data if holdout is None else holdout))
        return value, {"flipped": sum(bool(d.flipped) for d in self.decoders_)}

    def decode(self, feedback: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """psi_a(y) under the current decoders, for each (raw) feedback vector and its
        action."""
        self._fitted()
        assert self.decoders_ is not None  # fitted together with the policy
        if self.standardiser_ is not None:
            feedback = self.standardiser_.apply_feedback(feedback)
        return decoded(self.decoders_, as_tensor(feedback),
                       field_tensor(np.asarray(actions))).numpy()
