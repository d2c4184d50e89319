"""Batch IGL: maximise Eq. 2 jointly over (pi, psi) on a logged batch (line 4 of E2G),
with the two practical fixes of Appendix B:

- the data-driven decoder corrector: a decoder that calls the majority of (uniformly
  re-weighted) feedback a reward is flipped to 1 - psi, during training and at the end;
- adaptive restart: refit from a fresh initialisation while the indicator (Eq. 9) stays at
  or below a threshold close to V(pi_bad) (1/K for classification).

Whenever the corrector flips the decoder, the policy's scores are negated with it
(``flip_policy``, on by default). Without that, a flip leaves a policy that avoids the actions
the flipped decoder calls rewarded; psi then ascends Eq. 2 towards feedback seen after those
actions, that is towards calling every feedback a reward, and the next flip leaves psi = 0 on
all feedback: a stationary point with indicator 0 (measured: 2 of 4 seeds on scikit-learn
digits end there even with restarts; none with the negation).

In the grounding stage psi ascends Eq. 2 with self-normalised weights and at the learning rate
times its temperature: with neither, a fresh decoder saturated to a constant (psi = 1 on all
feedback, then 0 after the flip, indicator 0) on the random initial policy's preferences in
most initialisations of Section 6's environments, where the rewarded digit is a tenth of the
feedback (measured on MNIST: 0-2 of 6 initialisations passed the restart threshold in
Theorem 3's environments 5 and 8, 4-6 of 6 with both).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from iglearn.data.logs import InteractionLog
from iglearn.learners.base import StackableLearner, TrialData, as_tensor, trial_tensors
from iglearn.learners.objective import (
    BASELINE,
    at_action,
    corrector_statistic,
    igl_objective,
    policy_minorant,
    self_normalised_objective,
)
from iglearn.learners.training import Optimisation, Stage, optimise, take
from iglearn.models import Decoder, Policy, make_decoder, make_policy
from iglearn.models.stacked import last_linear, stack, unstack_into
from iglearn.seeding import SeedLike, as_generator, torch_generator

if TYPE_CHECKING:
    from iglearn.data.formats.base import FeatureSchema

AMBIGUITY_MARGIN = 0.1


class IdentifiabilityWarning(UserWarning):
    """The data may not identify the reward's sign (Section 3, Assumption 2)."""


@dataclass
class FitReport:
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


def identifiability_warnings(n_actions: int) -> list[str]:
    """Warnings that hold before looking at the data."""
    if n_actions == 2:
        return ["K = 2: uniform play is never 'sufficiently bad' (Section 3), so the sign "
                "of the decoded reward is not identified; expect an arbitrary direction"]
    return []


@dataclass(eq=False)
class BatchIGL(StackableLearner):
    """Jointly learns a softmax policy pi and a sigmoid reward decoder psi from a log
    (``fit``), or several pairs from several logs as one batched computation (``fit_many``).

    The settings are the dataclass fields below. The paper's objective and its Appendix B
    fixes (the corrector and the adaptive restart) are always there; iglearn's own additions
    (the staged fit and the scaled weight decay in ``optimisation``, the control variate, the
    self-normalised grounding term, the two-sided minorant and the policy negation) are each
    one setting, and :meth:`paper` switches them all off.
    """

    policy: str = "linear"
    """Policy class: 'linear' (the paper's) or 'mlp'."""
    decoder: str = "linear"
    """Reward decoder class: 'linear' (the paper's) or 'mlp'."""
    optimisation: Optimisation = field(default_factory=Optimisation)
    """Optimiser settings: epochs of each stage, batch size, learning rate, weight decay."""
    corrector: bool = True
    """Apply the data-driven decoder corrector (Appendix B) after every epoch."""
    max_restarts: int = 4
    """Most restarts of the adaptive restart (Appendix B); 0 disables it."""
    restart_threshold: float | None = None
    """Indicator threshold of the adaptive restart; None means 1/K, V(pi_bad) for
    classification."""
    decoder_temperature: float = 0.1
    """Temperature of the decoder's sigmoid (Appendix B: 0.1)."""
    seed: SeedLike = None
    """Seed or numpy Generator for initialisation and shuffling."""
    flip_policy: bool = True
    """Policy negation: negate the policy's scores whenever the corrector flips the decoder,
    so the pair moves from (pi_dagger, psi_dagger) towards (pi_star, psi_star) together."""
    control_variate: float = BASELINE
    """The constant c subtracted from psi in Eq. 2 (0: Eq. 2 exactly as written)."""
    self_normalised_grounding: bool = True
    """In the grounding stage, psi ascends Eq. 2 with self-normalised importance weights (so
    a constant decoder scores 0), rather than plain Eq. 2."""
    two_sided_minorant: bool = True
    """The policy stage's minorant has both terms, psi log pi + (1 - psi) log(1 - pi), rather
    than psi log pi alone."""

    def __post_init__(self) -> None:
        if self.optimisation is None:  # accepted for convenience: the default settings
            self.optimisation = Optimisation()

    @classmethod
    def paper(cls, **settings: object) -> BatchIGL:
        """A learner that maximises the paper's objective plainly: Eq. 2 as written (no
        control variate) over (pi, psi) from the start, with the corrector and the adaptive
        restart of Appendix B and none of iglearn's additions (no grounding or policy
        stage, no scaled weight decay, no policy negation); ``settings`` override."""
        plain = dict(optimisation=Optimisation(grounding_epochs=0, policy_epochs=0,
                                               weight_decay_scale=0.0),
                     flip_policy=False, control_variate=0.0,
                     self_normalised_grounding=False, two_sided_minorant=False)
        return cls(**{**plain, **settings})

    @classmethod
    def _fit_stacked(cls, learners: list[BatchIGL], logs: list[InteractionLog]) -> None:
        """Fit every learner on its log (reads context, action, probability and feedback)."""
        start = time.perf_counter()
        first, k = learners[0], logs[0].n_actions
        threshold = first.threshold(k)
        data = trial_tensors(logs, "feedback")
        fits = first.fit_with_restarts(data, k, [as_generator(each.seed) for each in learners])
        seconds = (time.perf_counter() - start) / len(learners)
        for t, (learner, fit) in enumerate(zip(learners, fits, strict=True)):
            value, policy, decoder, tried = fit
            with torch.no_grad():
                statistic = float(corrector_statistic(decoder(data[3][t]), data[2][t], k))
            notes = identifiability_warnings(k)
            if value <= threshold:
                notes.append(f"no initialisation passed the restart threshold ({value:.3f} <= "
                             f"{threshold:.3f}): the policy may be no better than uniform play")
            if abs(statistic - 0.5) < AMBIGUITY_MARGIN:
                notes.append(f"the decoded sign is ambiguous: {statistic:.1%} of feedback "
                             f"decodes as reward, close to one half")
            for note in notes:
                warnings.warn(note, IdentifiabilityWarning, stacklevel=3)  # the caller's line
            learner.policy_, learner.decoder_ = policy, decoder
            learner.report_ = FitReport(
                indicator=value, flipped=bool(decoder.flipped), corrector_statistic=statistic,
                restarts=len(tried) - 1, threshold=threshold, attempt_indicators=tried,
                seconds=seconds, warnings=notes)

    def fit_with_restarts(self, data: TrialData, n_actions: int,
                          rngs: Sequence[np.random.Generator],
                          starts: Sequence[tuple[Policy, Decoder]] | None = None,
                          start_optimisation: Optimisation | None = None,
                          holdout: TrialData | None = None,
                          ) -> list[tuple[float, Policy, Decoder, list[float]]]:
        """Line 4 of E2G with the adaptive restart (Appendix B), for T trials at once, on
        ``data`` (context, action, probability, feedback of each trial); trial t draws its
        initialisations and shuffles from ``rngs[t]``.

        The first attempt warm-starts from ``starts[t]`` (fitted in place, with
        ``start_optimisation`` if given) when they are given; every further attempt starts
        from a fresh initialisation with this learner's optimisation. A trial stops once its
        indicator (Eq. 9) exceeds the threshold or after ``max_restarts`` restarts; the trials
        still below it restart together. With ``holdout`` (interactions not in ``data``) the
        indicator is measured there: an unbiased estimate that a fit memorising ``data``
        cannot inflate.

        Returns:
            per trial, (indicator, policy, decoder, indicator of every attempt) of its best
            attempt.
        """
        threshold = self.threshold(n_actions)
        best: dict[int, tuple[float, Policy, Decoder]] = {}
        tried: list[list[float]] = [[] for _ in rngs]
        pending = list(range(len(rngs)))
        for attempt in range(self.max_restarts + 1):
            generators = [torch_generator(rngs[t]) for t in pending]
            settings = None
            if attempt == 0 and starts is not None:
                policies, decoders = (list(models) for models in zip(*starts, strict=True))
                settings = start_optimisation
            else:
                policies = [make_policy(self.policy, data[0][0].shape[-1], n_actions, g)
                            for g in generators]
                decoders = [make_decoder(self.decoder, data[3][0].shape[-1], g,
                                         self.decoder_temperature) for g in generators]
            self.fit_models(policies, decoders, _trials(data, pending), n_actions, generators,
                            settings)
            values = _indicator(policies, decoders,
                                _trials(data if holdout is None else holdout, pending),
                                n_actions)
            for t, value, policy, decoder in zip(pending, values, policies, decoders, strict=True):
                tried[t].append(value)
                if t not in best or value > best[t][0]:
                    best[t] = (value, policy, decoder)
            pending = [t for t, value in zip(pending, values, strict=True) if value <= threshold]
            if not pending:
                break
        return [(*best[t], tried[t]) for t in range(len(rngs))]

    def threshold(self, n_actions: int) -> float:
        """The adaptive restart's indicator threshold (1/K unless set)."""
        return 1.0 / n_actions if self.restart_threshold is None else self.restart_threshold

    def fit_models(self, policies: Sequence[Policy], decoders: Sequence[Decoder],
                   data: TrialData, n_actions: int, generators: Sequence[torch.Generator],
                   optimisation: Optimisation | None = None) -> None:
        """Maximise Eq. 2 over each pair (policies[t], decoders[t]) on trial t of ``data``, all
        trials as one batched computation, in place: warm-starts from their weights and the
        decoders' corrector flags, and updates each flag from all of its trial's data after
        every epoch. ``optimisation`` overrides this learner's settings for this call."""
        context, action, probability, feedback = data
        policy, decoder = stack(policies), stack(decoders)
        every_probability = torch.stack(probability)

        def terms(index: torch.Tensor) -> tuple[torch.Tensor, ...]:
            log_pi, a = policy(take(context, index)), take(action, index)
            pi_a = at_action(log_pi, a).exp()
            return log_pi, a, pi_a, decoder(take(feedback, index)), take(probability, index)

        def grounding(index: torch.Tensor) -> torch.Tensor:
            # psi ascends Eq. 2 for the current pi; pi ascends the minorant.
            log_pi, a, pi_a, psi, p = terms(index)
            if self.self_normalised_grounding:
                decoder_term = self_normalised_objective(pi_a.detach(), psi, p, n_actions)
            else:
                decoder_term = igl_objective(pi_a.detach(), psi, p, n_actions,
                                             self.control_variate)
            return -(decoder_term + policy_minorant(log_pi, a, psi, p, both_sides=False))

        def policy_step(index: torch.Tensor) -> torch.Tensor:
            log_pi, a, _, psi, p = terms(index)
            return -policy_minorant(log_pi, a, psi, p, both_sides=self.two_sided_minorant)

        def exact(index: torch.Tensor) -> torch.Tensor:  # Eq. 2 over (pi, psi) jointly
            _, _, pi_a, psi, p = terms(index)
            return -igl_objective(pi_a, psi, p, n_actions, self.control_variate)

        def correct() -> None:
            # The data-driven corrector, on all of each trial's data after every epoch: a
            # decoder that calls the majority of (uniformly re-weighted) feedback a reward
            # is flipped.
            with torch.no_grad():
                psi = decoder(feedback)
                flip = corrector_statistic(psi, every_probability, n_actions) > 0.5
                decoder.flipped.logical_xor_(flip)
                if self.flip_policy:
                    _negate_scores(policy, flip)

        both = [*policy.parameters(), *decoder.parameters()]
        settings = optimisation or self.optimisation
        # Grounding: psi = sigmoid(g / T) moves 1/T times faster in its logit than pi (T = 1)
        # under Adam's per-parameter steps, so it learns at lr * T, at the policy's pace;
        # otherwise it saturates on the random initial policy's preferences within a few
        # dozen steps (constant psi: indicator 0) before pi carries any signal.
        stages = [Stage(settings.grounding_epochs, both, grounding,
                        list(decoder.parameters()), decoder.temperature),
                  Stage(settings.policy_epochs, list(policy.parameters()), policy_step),
                  Stage(settings.epochs, both, exact)]
        optimise(stages, len(context[0]), settings, generators,
                 correct if self.corrector else None)
        unstack_into(policy, policies)
        unstack_into(decoder, decoders)

    def decode(self, feedback: np.ndarray) -> np.ndarray:
        """The decoded reward psi(y) of each feedback vector."""
        self._fitted_policy()
        with torch.no_grad():
            return self.decoder_(as_tensor(feedback)).numpy()

    def save(self, folder: str | Path, schema: FeatureSchema | None = None) -> Path:
        """Write the fitted model to ``folder`` (see :func:`iglearn.models.io.save_model`)."""
        from iglearn.models.io import save_model
        return save_model(self, folder, schema)

    @classmethod
    def load(cls, folder: str | Path) -> BatchIGL:
        """A fitted model read from ``folder`` (see :func:`iglearn.models.io.load_model`)."""
        from iglearn.models.io import load_model
        return load_model(folder)

    def indicator(self, log: InteractionLog) -> float:
        """Eq. 9 (importance-weighted) of the fitted (pi, psi) on ``log``."""
        self._fitted_policy()
        return _indicator([self.policy_], [self.decoder_], trial_tensors([log], "feedback"),
                          log.n_actions)[0]


def _negate_scores(policy: torch.nn.Module, flip: torch.Tensor) -> None:
    """Negate the scores (the last linear layer) of the stacked policy's trials in ``flip``:
    the pair (pi, psi) that ascended to (pi_dagger, psi_dagger) becomes (pi_bar, 1 - psi), so
    the flipped decoder keeps a policy that prefers, rather than avoids, the actions it
    decodes as rewarded."""
    for parameter in last_linear(policy).parameters():
        sign = 1 - 2 * flip.to(parameter.dtype)
        parameter.mul_(sign.view(-1, *[1] * (parameter.dim() - 1)))


def _trials(data: TrialData, rows: list[int]) -> TrialData:
    """The data of trials ``rows``."""
    return tuple([field[t] for t in rows] for field in data)


def _indicator(policies: Sequence[Policy], decoders: Sequence[Decoder], data: TrialData,
               n_actions: int) -> list[float]:
    """Eq. 9 with importance weights, mean[(pi(a|x) - 1/K) psi(y) / p], of each trial's pair
    on its data."""
    policy, decoder = stack(policies), stack(decoders)
    n = len(data[0][0])
    total = torch.zeros(len(policies), dtype=torch.float64)
    with torch.no_grad():
        for start in range(0, n, 65536):
            context, action, probability, feedback = (
                [tensor[start:start + 65536] for tensor in field] for field in data)
            pi = at_action(policy.probabilities(context), torch.stack(action))
            value = igl_objective(pi, decoder(feedback), torch.stack(probability),
                                  n_actions)
            total += value.double() * len(context[0])
    return (total / n).tolist()
