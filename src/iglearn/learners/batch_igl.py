"""Batch IGL: maximise Eq. 2 jointly over (pi, psi) on a logged batch (line 4 of E2G), with
the two practical fixes of Appendix B: the data-driven decoder corrector
(:mod:`iglearn.learners.corrector`) and the adaptive restart (:meth:`BatchIGL.fit_with_restarts`).

A fit is three stages (:meth:`BatchIGL.stages`), iglearn's additions to the paper, each a
setting of :class:`BatchIGL` or its :class:`~iglearn.learners.training.Optimisation`:

1. grounding: psi ascends Eq. 2 with self-normalised importance weights, at the learning rate
   times its temperature (the policy's pace), while pi ascends the one-sided minorant
   psi log pi(a|x). A fresh decoder trained at the policy's learning rate with plain weights
   saturates to a constant (indicator 0) on the random initial policy's preferences in many
   initialisations, before pi carries any signal;
2. policy: pi alone ascends the two-sided minorant psi log pi + (1 - psi) log(1 - pi), with
   psi held fixed (concave for a linear policy);
3. exact: Eq. 2 with its control variate over (pi, psi) jointly, psi's term with
   self-normalised weights as in grounding (pi ascends Eq. 2, psi its self-normalised form).

``BatchIGL.paper()`` runs stage 3 alone on Eq. 2 as written, with the corrector and the
restart: the paper's algorithm, for comparison.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, cast

import numpy as np
import torch

from iglearn.data.limits import check_igl_logs
from iglearn.data.logs import InteractionLog
from iglearn.data.scaling import Standardiser
from iglearn.devices import check_device, resolve_device
from iglearn.errors import IGLearnError, warn_caller
from iglearn.learners import closed_form
from iglearn.learners.base import (
    Orientable,
    StackableLearner,
    check_finite_fit,
    log_warnings,
)
from iglearn.learners.corrector import (
    Correction,
    corrector_statistics,
    data_driven_corrector,
    decoded_shares,
    reward_share_bound,
    share_excess,
)
from iglearn.learners.monitor import EpochRecord, FitMonitor, ShortReport
from iglearn.learners.objective import (
    at_action,
    igl_objective,
    indicator_terms,
    policy_minorant,
    self_normalised_objective,
)
from iglearn.learners.restarts import Attempt, adaptive_restart, best_of
from iglearn.learners.settings import (
    CONTINUED_STEPS,
    HOLDOUT_SHARE,
    JUDGED_RESTARTS,
    JUDGED_STEPS,
    BatchIGLSettings,
    Optimisation,
    restart_passes,
    start_settings,
    starts_for,
)
from iglearn.learners.stream import (
    AnyLog,
    training_data,
)
from iglearn.learners.training import Stage, run_stage, stage_epochs
from iglearn.learners.trials import (
    Batch,
    Source,
    as_tensor,
    on_device,
    reducer_of,
    side_by_side,
    to_device,
)
from iglearn.models import Decoder, Policy, make_decoder, make_policy
from iglearn.models.custom import CustomDecoder, check_specs
from iglearn.models.stacked import stack
from iglearn.seeding import as_generator, torch_generator
from iglearn.theory import action_led
from iglearn.threads import torch_threads

if TYPE_CHECKING:
    import pandas as pd

    from iglearn.data.formats.base import FeatureSchema
    from iglearn.learners.distributed import RayTrain

WIDE_LOG = 10.0
"""A log of fewer interactions than this many per context column is wide: its data-scaled
weight decay is strong (:func:`decay_advice`)."""


def decay_advice(n: int, context_dim: int, settings: Optimisation) -> str:
    """What an uncertified fit's warning adds on a wide log (fewer than :data:`WIDE_LOG`
    interactions per context column): the data-scaled weight decay, weight_decay_scale d / n,
    is then strong, and where few of the columns carry the signal it can hold the policy and
    decoder back (on 400 interactions of 64 columns, 3 of them informative, 3 seeds: 42 to
    47 % held-out accuracy uncertified at the default 8, 64 to 65 % certified at 0.25), while
    on digits, where most columns carry some, it is what fits small logs best (300
    interactions, 6 seeds: 73.4 % mean, 66.0 % worst at 8; 69.3 and 39.9 % at 0.25).
    Empty when the log is not wide or the decay is off."""
    scale = settings.weight_decay_scale
    if not scale or n >= WIDE_LOG * context_dim:
        return ""
    return (f"; with {n} interactions for {context_dim} context columns the data-scaled "
            f"weight decay ({scale:g} x {context_dim} / {n} = {scale * context_dim / n:.2g}) is "
            f"strong: where few columns carry the signal a smaller weight_decay_scale "
            f"(--weight-decay-scale 1 or 0.25) may fit better; compare the indicators")


AMBIGUITY_MARGIN = 0.1
MONITOR_ROWS = 16384
"""The history's indicator after each epoch (:class:`EpochRecord`) is measured on the first
this many interactions of the log (all of a smaller log): a full pass after every epoch costs
as much as a good share of the epoch itself on a large log. The indicator that decides the
restarts and that the report gives is measured on the whole log."""
STAGES = ("grounding", "policy", "exact")
"""The names of the three stages of a fit, in order (:meth:`BatchIGL.stages`)."""


class IdentifiabilityWarning(UserWarning):
    """The data may not identify the reward's sign (Section 3, Assumption 2)."""


@dataclass(repr=False)
class FitReport(ShortReport):
    """What a fit measured about itself (no hidden reward is read)."""

    indicator: float
    """Eq. 9, importance-weighted: V_hat(pi, psi) - V_hat(pi_bad, psi) on the training log."""
    flipped: bool
    """Whether the data-driven corrector flipped the final decoder."""
    corrector_statistic: float
    """Uniform-weighted share of feedback the final decoder calls a reward (psi > 0.5)."""
    restarts: int
    """Restarts used (0 when the first initialisation passed the threshold)."""
    threshold: float
    """The indicator threshold of the adaptive restart."""
    attempt_indicators: list[float] = field(default_factory=list)
    """Indicator of every initialisation tried, in order."""
    seconds: float = 0.0
    """Wall time of the fit (with ``fit_many``, an equal share of the whole)."""
    warnings: list[str] = field(default_factory=list)
    """Identifiability warnings raised by the fit."""
    history: list[EpochRecord] = field(default_factory=list)
    """Every epoch of every stage and attempt, in order (:class:`EpochRecord`: loss,
    indicator, corrector statistic, flip, attempt)."""
    indicator_error: float = 0.0
    """Standard error of ``indicator`` (the spread of its terms over the root of their
    count)."""
    restart_confidence: float = 0.0
    """Standard errors by which the indicator had to exceed ``threshold`` to pass."""
    start_indicators: list[float] = field(default_factory=list)
    """The held-out indicator of every initialisation judged before the fit
    (:meth:`BatchIGL.judge_starts`; empty when one was)."""
    action_explained: float | None = None
    """The share of the final decoder's variance on the log that the logged action explains
    (:func:`~iglearn.learners.corrector.action_explained`, weighted to uniform play); above
    :data:`~iglearn.theory.ACTION_EXPLAINED` the fit warns. None in the report of a model
    saved before iglearn measured it."""

    @property
    def identified(self) -> bool:
        """Whether the fit passed the adaptive restart: the indicator exceeds the threshold by
        ``restart_confidence`` standard errors (:meth:`BatchIGL.passes`)."""
        return restart_passes(self.indicator, self.indicator_error, self.restart_confidence,
                              self.threshold)


def share_warning(statistic: float, n_actions: int, attempts: int) -> str:
    """The warning of a fit whose kept decoder, after all its ``attempts``, calls more of the
    feedback a reward than :func:`reward_share_bound` (its
    :func:`~iglearn.learners.corrector.share_excess` above 0, ``BatchIGLSettings.share_test``);
    ``statistic``: the share it calls a reward."""
    return (f"the decoder calls {statistic:.1%} of the feedback a reward after {attempts} "
            f"attempt{'' if attempts == 1 else 's'}, more than the "
            f"{reward_share_bound(n_actions):.1%} plausible when one of {n_actions} actions is "
            f"right ({1 / n_actions:.1%} under uniform play): the policy may not follow the "
            f"reward; log more interactions, or turn the test off (share_test=False; iglearn "
            f"fit --no-share-test) if several actions are right on a context")


def ambiguity_warning(share: float) -> str:
    """The warning of a fit whose decoded reward covers about half of the feedback
    (``share``, within :data:`AMBIGUITY_MARGIN` of one half, weighted to uniform play): the
    symmetry choice, which reads the rarer decoded value as the reward, had little to go
    on."""
    return (f"the decoded sign is ambiguous: {share:.1%} of feedback decodes as reward, "
            f"close to one half, so the choice of which decoded value is the reward (the rarer "
            f"one) may be wrong; check the model on a few labelled interactions, or log more")


def action_warning(explained: float, algorithm: str) -> list[str]:
    """The warning of a fit whose decoded reward the logged action explains (a share
    ``explained`` of its variance above :data:`~iglearn.theory.ACTION_EXPLAINED`,
    :func:`~iglearn.theory.action_led`), naming
    ``algorithm`` (the learner that assumes the feedback depends on the action only through
    the reward); none below it."""
    if not action_led(explained):
        return []
    return [f"the logged action explains {explained:.0%} of the decoded reward's variance "
            f"(uniform play): unless one action is right on most contexts, the decoder follows "
            f"the action rather than the reward, which {algorithm} cannot tell apart; fit AI-IGL "
            f"(iglearn.AIIGL, --algorithm ai-igl) for feedback that shows the action (a gesture "
            f"or a brain response to the choice), IGL-P (iglearn.IGLP, --algorithm igl-p) for "
            f"feedback that differs by user"]


TWO_ACTIONS = "K = 2: "
"""How the warning that a two-action fit's sign is not identified begins."""


def identifiability_warnings(log: AnyLog) -> list[str]:
    """Warnings that hold before fitting: K = 2, and the log's own
    (:func:`~iglearn.learners.base.log_warnings`: actions it never shows, probabilities that
    do not fit its actions)."""
    notes = []
    if log.n_actions == 2:
        notes.append(f"{TWO_ACTIONS}uniform play is never 'sufficiently bad' (Section 3), so the "
                     "sign of the decoded reward is not identified; expect an arbitrary "
                     "direction, and choose it from a few interactions whose reward or label is "
                     "known (orient, iglearn orient)")
    return notes + log_warnings(log)


SIGN_WARNING = re.compile(rf"{TWO_ACTIONS}|the decoded sign is ambiguous: |action \d+: its "
                          rf"decoder calls .* so the sign of its decoded reward is ambiguous")
"""The fit warnings about the direction of the decoded reward (K = 2,
:func:`ambiguity_warning`, AI-IGL's per action), which orienting the model by interactions
whose reward is known settles (``orient``)."""


def settled_by_orienting(note: str) -> bool:
    """Whether the fit's warning ``note`` is one that orienting the model settles
    (:data:`SIGN_WARNING`): an oriented model no longer repeats it."""
    return SIGN_WARNING.match(note) is not None


def streamed_starts(starts: int) -> IGLearnError:
    """The refusal of ``starts`` initialisations judged on a streamed log: they are judged
    on a held-out part of a log in memory."""
    return IGLearnError(f"starts = {starts} (--starts) judges initialisations on a held-out "
                        f"part of a log in memory, and a streamed log is fitted with "
                        f"starts=1: drop starts (--starts), or read the log into memory "
                        f"(stream off, --stream off)")


@dataclass(eq=False)
class BatchIGL(BatchIGLSettings, StackableLearner, Orientable):
    """Jointly learns a softmax policy pi and a sigmoid reward decoder psi from a log
    (``fit``), or several pairs from several logs as one batched computation (``fit_many``).

    The settings are the dataclass fields below. The paper's objective and its Appendix B
    fixes (the corrector and the adaptive restart) are always there; iglearn's own additions
    (the staged fit and the scaled weight decay in ``optimisation``, the control variate, the
    self-normalised psi terms of the grounding and exact stages, the two-sided minorant, soft
    decoders, the policy negation, the reward-share test and judged starts) are each one
    setting, and :meth:`paper` switches them all off.
    """

    if TYPE_CHECKING:  # set by fit; declared for the type checker, not as settings
        decoder_: Decoder = field(init=False)
        report_: FitReport = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.optimisation is None:  # accepted for convenience: the default settings
            self.optimisation = Optimisation()
        check_specs(self)
        check_device(self.device)

    @classmethod
    def paper(cls, **settings: object) -> BatchIGL:
        """A learner that maximises the paper's objective plainly: Eq. 2 as written (no
        control variate) over (pi, psi) from the start, with the corrector and the adaptive
        restart of Appendix B and none of iglearn's additions (no grounding or policy
        stage, no scaled weight decay, no self-normalised psi terms, a one-sided minorant,
        no policy negation, decoders drawn at the default scale, no restart for an
        implausible share of rewards, one start); ``settings`` override."""
        plain: dict[str, Any] = dict(optimisation=Optimisation(grounding_epochs=0, policy_epochs=0,
                                               weight_decay_scale=0.0),
                     flip_policy=False, control_variate=0.0, starts=1, share_test=False,
                     self_normalised_grounding=False, self_normalised_exact=False,
                     two_sided_minorant=False,
                     soft_decoders=False)
        return cls(**{**plain, **settings})

    def fit(self, log: AnyLog, reference: BatchIGL | None = None, *,
            backend: RayTrain | None = None) -> Self:
        """Fit on ``log``, in memory or streamed. ``reference``: a fitted model this fit
        replaces (a re-fit on a grown log); the corrector then keeps the reference's
        orientation of the feedback unless the log clearly says otherwise
        (``reference_confidence``), so that successive re-fits on small logs do not swap
        the meaning of the feedback back and forth. ``backend``: fit a streamed Parquet log
        data-parallel on Ray Train (:mod:`iglearn.learners.distributed`)."""
        if backend is not None:
            if reference is not None:
                raise IGLearnError("a distributed fit takes no reference model; fit without "
                                   "backend, or without reference")
            return backend.fit(self, log)
        if reference is not None and not isinstance(reference, BatchIGL):
            raise IGLearnError(f"reference is the fitted BatchIGL this fit replaces, not a "
                               f"value of type {type(reference).__name__}; fit takes one "
                               f"interaction log (a scikit-learn fit(X, y) has no IGL "
                               f"counterpart)")
        if reference is not None and getattr(reference, "decoder_", None) is None:
            raise IGLearnError("the reference model is not fitted; fit it first, or pass no "
                               "reference")
        width = None if reference is None else reference._fitted("feedback_dim")
        given = getattr(log, "feedback_dim", width)  # not a log: refused by the fit below
        if width is not None and given != width:
            raise IGLearnError(f"{log.source}: its feedback vectors have {given} "
                               f"values, but the reference model's decoder reads {width}; pass "
                               f"the model fitted on this log's earlier interactions, or no "
                               f"reference")
        with torch_threads(self.threads):
            type(self)._fit_stacked([self], [log], None if reference is None else [reference])
        return self

    @classmethod
    def _fit_stacked(cls, learners: list[BatchIGL], logs: list[AnyLog],
                     references: list[BatchIGL] | None = None) -> None:
        """Fit every learner on its log, in memory or streamed (reads context, action,
        probability and feedback); ``references``: one fitted model per learner that the
        fit replaces (:meth:`fit`)."""
        check_igl_logs(logs)
        start = time.perf_counter()
        first, k = learners[0], logs[0].n_actions
        threshold = first.threshold(k)
        in_memory = all(isinstance(log, InteractionLog) for log in logs)
        starts = starts_for(first.starts, len(logs[0]), in_memory)
        if starts > 1 and not in_memory:  # refused before a pass over the stream
            raise streamed_starts(starts)
        scalers = [learner.take_statistics(log) for learner, log in zip(learners, logs,
                                                                          strict=True)]
        rebased = None if references is None else [
            rebased_decoder(r.decoder_, r.standardiser_, scaler)
            for r, scaler in zip(references, scalers, strict=True)]
        rngs = [as_generator(each.seed) for each in learners]
        judged: list[list[float]] = [[] for _ in learners]
        chosen = None
        if starts > 1:
            chosen, judged = first.judge_starts(logs, scalers, rngs, starts, rebased)
        data = training_data(logs, "feedback", scalers)
        monitor = FitMonitor(len(learners), first.progress, first.logdir)
        finished = False
        try:
            fits = first.fit_with_restarts(
                data, k, rngs, starts=chosen, monitor=monitor, references=rebased,
                start_optimisation=None if chosen is None else start_settings(
                    first.optimisation, CONTINUED_STEPS))
            finished = True
        finally:
            monitor.close(finished)
        for log, (value, policy, decoder, _, _) in zip(logs, fits, strict=True):  # all, or none
            check_finite_fit(log, {"policy": policy, "decoder": decoder}, {"indicator": value})
        shares = decoded_shares(stack([fit[2] for fit in fits]), data, k, by_action=True)
        statistics = shares.above.tolist()
        explained = cast(torch.Tensor, shares.explained).tolist()
        excess = share_excess(shares, k) if first.share_test else [0.0] * len(fits)
        seconds = (time.perf_counter() - start) / len(learners)
        for t, (learner, log, fit, statistic, action_share, beyond) in enumerate(
                zip(learners, logs, fits, statistics, explained, excess, strict=True)):
            value, policy, decoder, tried, error = fit
            notes = identifiability_warnings(log)
            if not first.passes(value, error, k):
                notes.append(f"no initialisation passed the restart threshold (indicator "
                             f"{value:.3f} ± {error:.3f}, needs more than {threshold:.3f} + "
                             f"{first.restart_confidence:g} standard errors): the decoder is "
                             f"not certified and the policy may be no better than uniform "
                             f"play; a task whose best policy is right less than about "
                             f"{min(1.0, threshold + 1 / k):.0%} of the time cannot pass it (the "
                             f"indicator is the decoded value above uniform play's): measure "
                             f"the model on labelled data if you have some"
                             f"{decay_advice(len(log), log.context_dim, first.optimisation)}")
            if abs(statistic - 0.5) < AMBIGUITY_MARGIN:
                notes.append(ambiguity_warning(statistic))
            elif beyond > 0.0:
                notes.append(share_warning(statistic, k, len(tried)))
            notes += action_warning(action_share, "2021 IGL")
            for note in notes:
                warn_caller(note, IdentifiabilityWarning)
            learner.policy_, learner.decoder_ = policy, decoder
            learner.report_ = FitReport(
                indicator=value, flipped=bool(decoder.flipped), corrector_statistic=statistic,
                restarts=len(tried) - 1, threshold=threshold, attempt_indicators=tried,
                seconds=seconds, warnings=notes, history=monitor.history[t],
                indicator_error=error, restart_confidence=first.restart_confidence,
                start_indicators=judged[t], action_explained=action_share)

    def judge_starts(self, logs: Sequence[AnyLog], scalers: Sequence[Standardiser | None],
                     rngs: Sequence[np.random.Generator], starts: int,
                     references: Sequence[Decoder] | None = None,
                     ) -> tuple[list[tuple[Policy, Decoder]], list[list[float]]]:
        """The best of ``starts`` initialisations of each log's fit, judged on a held-out part
        of the log (iglearn's addition, setting ``starts``): every log's interactions are
        split by its generator into a held-out :data:`HOLDOUT_SHARE` and the rest; each
        initialisation is fitted on the rest (all of them as one batched fit, each stage
        capped at :data:`JUDGED_STEPS` steps, with the adaptive restart's plain test, the
        indicator above the threshold, on the held-out part: on a fifth of a few hundred
        interactions the confidence margin restarted starts that grounded, at twice the
        CPU) and scored by its indicator (Eq. 9) on the held-out part, an unbiased
        estimate that a fit memorising its data cannot inflate. A start that fails the
        judge's test is restarted at most :data:`JUDGED_RESTARTS` times (the whole fit
        keeps its ``max_restarts``), and once one start of a log passes the whole fit's test
        (``restart_confidence`` standard errors above the threshold), its rivals that have
        not passed are not restarted: the judge keeps only the best start, and each restart
        of a rival costs a judged fit (on 16 raw digits logs of 500 interactions, 54
        attempts in all instead of 62; docs/results.md).

        Returns:
            per log, the best fitted (policy, decoder), from which the fit on the whole log
            continues (each stage capped at :data:`CONTINUED_STEPS` steps; its restarts, if
            it needs any, start afresh), and the held-out indicator of every
            initialisation.
        """
        if not all(isinstance(log, InteractionLog) for log in logs):
            raise streamed_starts(starts)
        trains, holds, seeds = [], [], []
        for log, rng in zip(cast(Sequence[InteractionLog], logs), rngs, strict=True):
            order = rng.permutation(len(log))
            cut = max(1, round(HOLDOUT_SHARE * len(log)))
            holds.append(log.subset(np.sort(order[:cut])))
            trains.append(log.subset(np.sort(order[cut:])))
            seeds.append(rng.spawn(starts))

        def each(items: Sequence[Any]) -> list[Any]:
            return [item for item in items for _ in range(starts)]

        k, trials = logs[0].n_actions, each(range(len(logs)))
        judge = replace(self, progress=False, logdir=None, restart_confidence=0.0,
                        max_restarts=min(self.max_restarts, JUDGED_RESTARTS),
                        optimisation=start_settings(self.optimisation, JUDGED_STEPS))
        fits = judge.fit_with_restarts(
            training_data(trains, "feedback", scalers).select(trials), k,
            [child for row in seeds for child in row],
            holdout=training_data(holds, "feedback", scalers).select(trials),
            references=None if references is None else each(references), groups=trials,
            settle_confidence=self.restart_confidence)
        scores = [[fit[0] for fit in fits[t * starts:(t + 1) * starts]]
                  for t in range(len(logs))]
        best = [t * starts + best_of(score) for t, score in enumerate(scores)]
        return [(fits[b][1], fits[b][2]) for b in best], scores

    def fit_with_restarts(self, data: Source, n_actions: int,
                          rngs: Sequence[np.random.Generator],
                          starts: Sequence[tuple[Policy, Decoder]] | None = None,
                          start_optimisation: Optimisation | None = None,
                          holdout: Source | None = None,
                          monitor: FitMonitor | None = None,
                          references: Sequence[Decoder] | None = None,
                          groups: Sequence[int] | None = None,
                          settle_confidence: float = 0.0,
                          ) -> list[tuple[float, Policy, Decoder, list[float], float]]:
        """The adaptive restart (Appendix B) around line 4 of E2G, for the T trials of ``data``
        at once; trial t draws its initialisations and shuffles from ``rngs[t]``.

        Each attempt fits (pi, psi) (:meth:`fit_models`) and measures the indicator (Eq. 9)
        and its standard error; a trial stops once the indicator exceeds the threshold by
        ``restart_confidence`` standard errors (:meth:`passes`) and its decoder reads the
        sign of the feedback clearly and calls a plausible share of it a reward
        (:meth:`_clear`), or after ``max_restarts`` restarts, and the other trials restart
        together from fresh initialisations. The best attempt is the one with the largest
        lower bound (the indicator less ``restart_confidence`` standard errors) among those
        whose decoder reads the sign clearly, calls a plausible share a reward and whose
        indicator is positive (if any; else the one whose share lies least beyond the
        plausible one): a decoder that calls no feedback a reward reads as 'clear' but has
        learned nothing. The first attempt warm-starts from ``starts[t]`` (fitted in place,
        with ``start_optimisation`` if given) when they are given. With ``holdout``
        (interactions not in ``data``) the indicator is measured there: an unbiased estimate
        that a fit memorising ``data`` cannot inflate. A ``monitor``
        records every epoch. ``references``: a decoder per trial whose orientation the
        corrector keeps unless the data clearly say otherwise (:meth:`fit`). ``groups``: the
        group of each trial, when the trials are rival initialisations of one log
        (:meth:`judge_starts`): a group's trials stop once one of them reads the sign clearly
        and its indicator exceeds the threshold by ``settle_confidence`` standard errors
        (:func:`adaptive_restart`).

        Returns:
            per trial, (indicator, policy, decoder, indicator of every attempt, standard error
            of the indicator) of its best attempt.
        """
        device = resolve_device(self.device)
        data = on_device(data, device)
        holdout = None if holdout is None else on_device(holdout, device)
        z = self.restart_confidence

        def attempt(numbers: list[int], pending: list[int]
                    ) -> list[Attempt[tuple[float, Policy, Decoder, float]]]:
            number = numbers[0]  # attempted one at a time: every trial's number is the same
            if monitor is not None:
                monitor.start_attempt(number, pending)
            generators = [torch_generator(rngs[t]) for t in pending]
            settings = None
            if number == 0 and starts is not None:
                policies, decoders = (list(models) for models in zip(*starts, strict=True))
                settings = start_optimisation
            else:
                policies = [make_policy(self.policy, data.context_dim, n_actions, g)
                            for g in generators]
                decoders = [make_decoder(self.decoder, data.signal_dim, g,
                                         self.decoder_temperature, soft=self.soft_decoders)
                            for g in generators]
            self.fit_models(policies, decoders, data.select(pending), n_actions, generators,
                            settings, monitor,
                            None if references is None else [references[t] for t in pending])
            values, errors = indicator_moments(
                policies, decoders, (data if holdout is None else holdout).select(pending),
                n_actions, device)
            # a decoder with no positive indicator has learned nothing: its sign is no
            # evidence (one that calls no feedback a reward reads as 'clear')
            # an attempt whose decoder calls an implausible share of the feedback a reward
            # does not pass; the attempts within the share rank above the others, which rank
            # by how far beyond it their share lies (judged starts, fitted with a holdout, are
            # not share-tested: the fit that continues from the best on the whole log is)
            signs, excess = self._clear(decoders, data.select(pending), n_actions, device,
                                        shares=holdout is None)
            attempts = []
            for value, error, sign, beyond, policy, decoder in zip(
                    values, errors, signs, excess, policies, decoders, strict=True):
                sure = sign and value > 0 and beyond == 0.0
                attempts.append(Attempt(
                    (value, policy, decoder, error), (sure, -beyond, value - z * error),
                    sure and self.passes(value, error, n_actions), value,
                    sure and restart_passes(value, error, settle_confidence,
                                            self.threshold(n_actions))))
            return attempts

        best, tried = adaptive_restart(len(rngs), self.max_restarts, attempt, groups)
        return [(*b.fitted[:3], tried[t], b.fitted[3]) for t, b in enumerate(best)]

    def _clear(self, decoders: Sequence[Decoder], data: Source, n_actions: int,
               device: torch.device, shares: bool = True) -> tuple[list[bool], list[float]]:
        """Whether each trial's decoder reads the feedback's sign clearly, and by how much the
        share of the feedback it calls a reward exceeds the plausible share. With K >= 3 the
        sign is clear when the corrector statistic lies more than AMBIGUITY_MARGIN from one
        half (under uniform play a reward is a 1/K share of the feedback; a decoder that calls
        about half of it a reward has split the feedback some other way, often with a high
        indicator on a small log that it has memorised); the excess is
        :func:`~iglearn.learners.corrector.share_excess`'s (0 without ``shares`` and with
        ``share_test`` off). Always clear for K = 2."""
        tested = shares and self.share_test
        if n_actions < 3:
            return [True] * len(decoders), [0.0] * len(decoders)
        decoder = cast(Decoder, stack(decoders))
        decoder = decoder if device.type == "cpu" else decoder.to(device)
        measured = decoded_shares(decoder, data, n_actions, device, by_action=tested)
        signs = [abs(s - 0.5) >= AMBIGUITY_MARGIN for s in measured.above.tolist()]
        return signs, (share_excess(measured, n_actions) if tested
                       else [0.0] * len(decoders))

    def threshold(self, n_actions: int) -> float:
        """The adaptive restart's indicator threshold: ``restart_threshold`` if set, else
        1/K, V(pi_bad) of a classification task (Appendix B), for K >= 3, and 0 for K = 2.
        The indicator of a perfect decoder is the policy's accuracy less 1/K, so 1/K asks for
        a policy right twice as often as uniform play, which for K = 2 is every time: every
        2-action fit made all its restarts and warned. With 0, a 2-action fit passes when
        its decoded policy beats uniform play by ``restart_confidence`` standard errors."""
        if self.restart_threshold is not None:
            return self.restart_threshold
        return 0.0 if n_actions == 2 else 1.0 / n_actions

    def passes(self, value: float, error: float, n_actions: int) -> bool:
        """Whether an indicator ``value`` with standard error ``error`` passes the adaptive
        restart: it exceeds the threshold by ``restart_confidence`` standard errors. The
        indicator bounds the policy's value only up to its estimation error (the K eps_D of
        Appendix B's lemma): on a few hundred interactions an indicator just above 1/K is
        as often a policy no better than uniform play."""
        return restart_passes(value, error, self.restart_confidence, self.threshold(n_actions))

    def fit_models(self, policies: Sequence[Policy], decoders: Sequence[Decoder], data: Source,
                   n_actions: int, generators: Sequence[torch.Generator],
                   optimisation: Optimisation | None = None,
                   monitor: FitMonitor | None = None,
                   references: Sequence[Decoder] | None = None) -> None:
        """Maximise Eq. 2 over each pair (policies[t], decoders[t]) on trial t of ``data``, in
        place, warm-starting from their weights and corrector flags: the stages of
        :meth:`stages` in order, with the data-driven corrector after every epoch, on this
        learner's device. ``optimisation`` overrides this learner's settings for this call; a
        ``monitor`` records every epoch (:mod:`iglearn.learners.monitor`); ``references``
        (one decoder per trial) steer the corrector (:meth:`fit`)."""
        settings = optimisation or self.optimisation
        device = resolve_device(self.device)
        data = on_device(data, device)
        reference = None
        if references is not None:
            reference = stack(references)
            reference = reference if device.type == "cpu" else reference.to(device)
        with side_by_side(policies, device) as policy, side_by_side(decoders, device) as decoder:
            # the corrector changes the models between epochs: a checkpoint holds all of them
            state = [*policy.parameters(), *policy.buffers(), *decoder.parameters(),
                     *decoder.buffers()]
            stages = [replace(stage, state=state)
                      for stage in self.stages(policy, decoder, n_actions, settings)]
            if monitor is not None:
                monitor.start_fit(sum(stage_epochs(stage, data.n, settings) for stage in stages))
                stages = [monitor.watch(stage) for stage in stages]
            for name, stage in zip(STAGES, stages, strict=True):
                for epoch in run_stage(stage, data, settings, generators, device):
                    correction = None
                    if self.corrector:
                        correction = data_driven_corrector(
                            policy, decoder, data, n_actions, self.flip_policy, device,
                            reference, self.reference_confidence)
                    if monitor is not None:
                        self._record(monitor, name, epoch, policy, decoder, data, n_actions,
                                     correction, device)

    @staticmethod
    def _record(monitor: FitMonitor, stage: str, epoch: int, policy: Policy,
                decoder: Decoder, data: Source, n_actions: int,
                correction: Correction | None, device: torch.device) -> None:
        """The history of one epoch: the indicator on the first :data:`MONITOR_ROWS`
        interactions, and the corrector statistic on all the data."""
        if correction is None:
            statistic = corrector_statistics(decoder, data, n_actions, device)
            flipped = [False] * len(data)
        else:
            statistic, flipped = correction.statistic, correction.flipped.tolist()
        values = stacked_indicators(policy, decoder, data, n_actions, device, MONITOR_ROWS)
        monitor.epoch(stage, epoch, values, statistic.tolist(), flipped)

    def stages(self, policy: Policy, decoder: Decoder, n_actions: int,
               settings: Optimisation) -> list[Stage]:
        """The three stages of a fit (see the module docstring), as losses of a mini-batch
        (one value per trial) and the parameters each moves."""
        c, k = self.control_variate, n_actions

        def grounding(batch: Batch) -> torch.Tensor:
            log_pi, psi = policy(batch.context), decoder(batch.signal)
            pi_a = at_action(log_pi, batch.action).exp().detach()
            if self.self_normalised_grounding:
                psi_term = self_normalised_objective(pi_a, psi, batch.probability, k)
            else:
                psi_term = igl_objective(pi_a, psi, batch.probability, k, c)
            pi_term = policy_minorant(log_pi, batch.action, psi, batch.probability,
                                      both_sides=False)
            return -(psi_term + pi_term)

        def policy_only(batch: Batch) -> torch.Tensor:
            with torch.no_grad():  # the decoder is held fixed: no graph to build through it
                psi = decoder(batch.signal)
            return -policy_minorant(policy(batch.context), batch.action, psi,
                                    batch.probability, both_sides=self.two_sided_minorant)

        def exact(batch: Batch) -> torch.Tensor:
            pi_a = at_action(policy(batch.context), batch.action).exp()
            psi = decoder(batch.signal)
            if not self.self_normalised_exact:
                return -igl_objective(pi_a, psi, batch.probability, k, c)
            # psi ascends the self-normalised term with pi held, pi Eq. 2 with psi held
            return -(self_normalised_objective(pi_a.detach(), psi, batch.probability, k)
                     + igl_objective(pi_a, psi.detach(), batch.probability, k, c))

        pi, psi = list(policy.parameters()), list(decoder.parameters())
        # In the order of STAGES. psi = sigmoid(g / T) moves 1/T times faster in its logit
        # than pi under Adam's per-parameter steps: at lr * T it grounds at the policy's pace.
        stages = [Stage(settings.grounding_epochs, pi + psi, grounding, psi,
                        decoder.temperature),
                  Stage(settings.policy_epochs, pi, policy_only),
                  Stage(settings.epochs, pi + psi, exact)]
        if not closed_form.supports(policy, decoder):
            return stages
        # linear models: the same losses with their gradients in closed form
        forms = [partial(closed_form.grounding_step, policy, decoder, n_actions=k,
                         self_normalised=self.self_normalised_grounding, baseline=c),
                 partial(closed_form.minorant_step, policy, closed_form.Decoded(decoder),
                         both_sides=self.two_sided_minorant),
                 partial(closed_form.exact_step, policy, decoder, n_actions=k,
                         self_normalised=self.self_normalised_exact, baseline=c)]
        return [replace(stage, closed_form=form)
                for stage, form in zip(stages, forms, strict=True)]

    def decode(self, feedback: np.ndarray | pd.DataFrame | InteractionLog) -> np.ndarray:
        """The decoded reward psi(y) of each (raw) feedback vector (an array, a DataFrame
        read by the model's feedback columns, or a log: :meth:`feedback_of`) (on the
        learner's ``threads``)."""
        self._fitted_policy()
        with torch.no_grad(), torch_threads(self.threads, libraries=False):
            return self.decoder_(as_tensor(self.standardised_feedback(feedback))).numpy()

    def save(self, folder: str | Path, schema: FeatureSchema | None = None) -> Path:
        """Write the fitted model to ``folder``
        (:func:`iglearn.learners.registry.save_model`)."""
        from iglearn.learners.registry import save_model
        return save_model(self, folder, schema)

    @classmethod
    def load(cls, folder: str | Path, import_factories: bool = False) -> BatchIGL:
        """A fitted model read from ``folder`` (see :func:`iglearn.learners.registry.load_model`); a
        folder that holds another algorithm's model is refused. A custom policy or decoder is
        rebuilt by importing its recorded factory, only with ``import_factories``."""
        from iglearn.learners.registry import load_model
        # load_model checked the algorithm
        return cast(BatchIGL, load_model(folder, "igl", import_factories=import_factories))

    def indicator(self, log: AnyLog) -> float:
        """Eq. 9 (importance-weighted) of the fitted (pi, psi) on ``log`` (in memory or
        streamed): of the fitted model's K and feedback columns (:meth:`check_table`)."""
        self.check_table(log, "indicator", feedback=True)
        return indicators([self.policy_], [self.decoder_],
                          training_data([log], "feedback", [self.standardiser_]),
                          log.n_actions)[0]


def rebased_decoder(decoder: Decoder, old: Standardiser | None,
                    new: Standardiser | None) -> Decoder:
    """``decoder``, which reads feedback standardised with ``old`` (None: raw), as a copy
    that reads feedback standardised with ``new``: the change of statistics folded into its
    first linear layer (a re-fit's reference model, whose statistics were those of a smaller
    log). A decoder without a linear first layer (a custom module) is returned as it is."""
    layers = [m for m in decoder.modules() if isinstance(m, torch.nn.Linear)]
    if isinstance(decoder, CustomDecoder) or not layers or (old is None and new is None):
        return decoder
    d = layers[0].in_features

    def moments(scaler: Standardiser | None) -> tuple[np.ndarray, np.ndarray]:
        """(m, s) with which the scaler maps y to (y - m) / s (its offset folded into m)."""
        if scaler is None or scaler.feedback_dim != d:
            return np.zeros(d), np.ones(d)
        return (scaler.feedback_mean - scaler.feedback_offset * scaler.feedback_scale,
                scaler.feedback_scale)

    (m_old, s_old), (m_new, s_new) = moments(old), moments(new)
    # y_old = (y_new s_new + m_new - m_old) / s_old = y_new a + c
    a, c = s_new / s_old, (m_new - m_old) / s_old
    if np.allclose(a, 1.0) and np.allclose(c, 0.0):
        return decoder
    rebased = copy.deepcopy(decoder)
    first = [m for m in rebased.modules() if isinstance(m, torch.nn.Linear)][0]
    with torch.no_grad():
        weight = first.weight.double()
        if first.bias is not None:
            first.bias.add_((weight @ torch.from_numpy(c)).to(first.bias.dtype))
        first.weight.copy_((weight * torch.from_numpy(a)).to(first.weight.dtype))
    return rebased


def indicators(policies: Sequence[Policy], decoders: Sequence[Decoder] | None, data: Source,
               n_actions: int, device: torch.device | None = None) -> list[float]:
    """Eq. 9 (:func:`~iglearn.learners.objective.indicator`) of each trial's pair on its data
    (:func:`indicator_moments`' values); without decoders, the signal itself stands for psi
    (the true reward: the IPS estimate of V(pi) - V(pi_bad))."""
    return indicator_moments(policies, decoders, data, n_actions, device)[0]


def indicator_moments(policies: Sequence[Policy], decoders: Sequence[Decoder] | None,
                      data: Source, n_actions: int, device: torch.device | None = None
                      ) -> tuple[list[float], list[float]]:
    """Eq. 9 of each trial's pair on its data and its standard error
    (:func:`stacked_indicators` of the pairs stacked and moved to ``device`` if given)."""
    on = device if device is not None and device.type != "cpu" else None
    policy = cast(Policy, stack(policies))
    decoder = None if decoders is None else cast(Decoder, stack(decoders))
    if on is not None:
        policy = policy.to(on)
        decoder = None if decoder is None else decoder.to(on)
    return stacked_indicator_moments(policy, decoder, data, n_actions, on)


def stacked_indicators(policy: Policy, decoder: Decoder | None, data: Source, n_actions: int,
                       device: torch.device | None = None,
                       rows: int | None = None) -> list[float]:
    """Eq. 9 of a stacked ``policy`` and ``decoder`` on each trial's data (the values of
    :func:`stacked_indicator_moments`)."""
    return stacked_indicator_moments(policy, decoder, data, n_actions, device, rows)[0]


def stacked_indicator_moments(policy: Policy, decoder: Decoder | None, data: Source,
                              n_actions: int, device: torch.device | None = None,
                              rows: int | None = None) -> tuple[list[float], list[float]]:
    """Eq. 9 of a stacked ``policy`` and ``decoder`` (none: the signal stands for psi) on
    each trial's data (its first ``rows`` interactions if given), and its standard error (the
    standard deviation of the interactions' terms, :func:`~iglearn.learners.objective.
    indicator_terms`, over the square root of their count), in one pass over its chunks (sums
    over chunks, so a streamed log is never in memory), each chunk moved to ``device`` (where
    the models are) if given."""
    total = torch.zeros(len(data), dtype=torch.float64)
    squares = torch.zeros(len(data), dtype=torch.float64)
    limit = data.n if rows is None else min(rows, data.n)
    seen = 0
    with torch.no_grad():
        for chunk in data.chunks(min(limit, 65536)):
            chunk = to_device(chunk, device)
            pi_a = at_action(policy.probabilities(chunk.context), chunk.action)
            psi = torch.stack(list(chunk.signal)) if decoder is None else decoder(chunk.signal)
            terms = indicator_terms(pi_a, psi, chunk.probability, n_actions).cpu().double()
            total += terms.sum(-1)
            squares += terms.square().sum(-1)
            seen += chunk.action.shape[-1]
            if seen >= limit:
                break
    reducer = reducer_of(data)  # the sums of every process of a data-parallel fit
    counted = reducer.sum(torch.tensor([float(seen)], dtype=torch.float64))
    mean = reducer.sum(total) / counted
    spread = (reducer.sum(squares) / counted - mean.square()).clamp_min(0.0)
    return mean.tolist(), (spread / counted).sqrt().tolist()
