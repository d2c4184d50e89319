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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from iglearn.data.logs import InteractionLog
from iglearn.learners.base import PolicyLearner, as_tensor
from iglearn.learners.objective import (
    BASELINE,
    corrector_statistic,
    igl_objective,
    policy_minorant,
    self_normalised_objective,
)
from iglearn.learners.training import Optimisation, Stage, optimise
from iglearn.models import Decoder, Policy, make_decoder, make_policy
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
    """Wall time of the fit."""
    warnings: list[str] = field(default_factory=list)
    """Identifiability warnings raised by the fit."""


def identifiability_warnings(n_actions: int) -> list[str]:
    """Warnings that hold before looking at the data."""
    if n_actions == 2:
        return ["K = 2: uniform play is never 'sufficiently bad' (Section 3), so the sign "
                "of the decoded reward is not identified; expect an arbitrary direction"]
    return []


class BatchIGL(PolicyLearner):
    """Jointly learns a softmax policy pi and a sigmoid reward decoder psi from a log.

    Args:
        policy: policy class, 'linear' (the paper's) or 'mlp'.
        decoder: decoder class, 'linear' (the paper's) or 'mlp'.
        optimisation: optimiser settings.
        corrector: apply the data-driven decoder corrector.
        max_restarts: most restarts of the adaptive restart procedure (0 disables it).
        restart_threshold: indicator threshold; None means 1/K, V(pi_bad) for classification.
        decoder_temperature: temperature of the decoder's sigmoid (0.1 in Appendix B).
        seed: seed or numpy Generator for initialisation and shuffling.
        flip_policy: negate the policy's scores (its last linear layer) whenever the
            corrector flips the decoder, so the pair moves from (pi_dagger, psi_dagger)
            towards (pi_star, psi_star) together; both classes are closed under the flip.
    """

    def __init__(self, policy: str = "linear", decoder: str = "linear",
                 optimisation: Optimisation | None = None, corrector: bool = True,
                 max_restarts: int = 4, restart_threshold: float | None = None,
                 decoder_temperature: float = 0.1, seed: SeedLike = None,
                 flip_policy: bool = True):
        self.policy = policy
        self.decoder = decoder
        self.decoder_temperature = decoder_temperature
        self.optimisation = optimisation or Optimisation()
        self.corrector = corrector
        self.max_restarts = max_restarts
        self.restart_threshold = restart_threshold
        self.seed = seed
        self.flip_policy = flip_policy

    def fit(self, log: InteractionLog) -> BatchIGL:
        """Fit (pi, psi) on ``log``; reads context, action, probability and feedback only."""
        start = time.perf_counter()
        k = log.n_actions
        threshold = self.threshold(k)
        notes = identifiability_warnings(k)
        data = _tensors(log)
        value, self.policy_, self.decoder_, tried = self.fit_with_restarts(
            data, k, as_generator(self.seed))
        with torch.no_grad():
            statistic = float(corrector_statistic(self.decoder_(data[3]), data[2], k))
        if value <= threshold:
            notes.append(f"no initialisation passed the restart threshold ({value:.3f} <= "
                         f"{threshold:.3f}): the policy may be no better than uniform play")
        if abs(statistic - 0.5) < AMBIGUITY_MARGIN:
            notes.append(f"the decoded sign is ambiguous: {statistic:.1%} of feedback decodes "
                         f"as reward, close to one half")
        for note in notes:
            warnings.warn(note, IdentifiabilityWarning, stacklevel=2)
        self.report_ = FitReport(
            indicator=value, flipped=bool(self.decoder_.flipped), corrector_statistic=statistic,
            restarts=len(tried) - 1, threshold=threshold, attempt_indicators=tried,
            seconds=time.perf_counter() - start, warnings=notes)
        return self

    def fit_with_restarts(self, data: tuple[torch.Tensor, ...], n_actions: int,
                          rng: np.random.Generator,
                          start: tuple[Policy, Decoder] | None = None,
                          start_optimisation: Optimisation | None = None,
                          holdout: tuple[torch.Tensor, ...] | None = None,
                          ) -> tuple[float, Policy, Decoder, list[float]]:
        """Line 4 of E2G with the adaptive restart (Appendix B) on tensors
        (context, action, probability, feedback).

        The first attempt warm-starts from ``start`` (fitted in place, with
        ``start_optimisation`` if given) when it is given; every further attempt starts from a
        fresh initialisation with this learner's optimisation. Attempts stop once the
        indicator (Eq. 9) exceeds the threshold or after ``max_restarts`` restarts. With
        ``holdout`` (interactions not in ``data``) the indicator is measured there: an
        unbiased estimate that a fit memorising ``data`` cannot inflate.

        Returns:
            (indicator, policy, decoder, indicator of every attempt) of the best attempt.
        """
        threshold = self.threshold(n_actions)
        best: tuple[float, Policy, Decoder] | None = None
        tried: list[float] = []
        for attempt in range(self.max_restarts + 1):
            generator = torch_generator(rng)
            settings = None
            if attempt == 0 and start is not None:
                (policy, decoder), settings = start, start_optimisation
            else:
                policy = make_policy(self.policy, data[0].shape[1], n_actions, generator)
                decoder = make_decoder(self.decoder, data[3].shape[1], generator,
                                       self.decoder_temperature)
            self.fit_models(policy, decoder, data, n_actions, generator, settings)
            value = _indicator(policy, decoder, data if holdout is None else holdout,
                               n_actions)
            tried.append(value)
            if best is None or value > best[0]:
                best = (value, policy, decoder)
            if value > threshold:
                break
        return (*best, tried)

    def threshold(self, n_actions: int) -> float:
        """The adaptive restart's indicator threshold (1/K unless set)."""
        return 1.0 / n_actions if self.restart_threshold is None else self.restart_threshold

    def fit_models(self, policy: Policy, decoder: Decoder, data: tuple[torch.Tensor, ...],
                   n_actions: int, generator: torch.Generator,
                   optimisation: Optimisation | None = None) -> None:
        """Maximise Eq. 2 over (policy, decoder) in place (warm-starts from their weights and
        the decoder's corrector flag), updating the flag from all of ``data`` after every
        epoch. ``optimisation`` overrides this learner's settings for this call."""
        context, action, probability, feedback = data

        def terms(index: torch.Tensor) -> tuple[torch.Tensor, ...]:
            log_pi, a = policy(context[index]), action[index]
            pi_a = log_pi.gather(1, a[:, None])[:, 0].exp()
            return log_pi, a, pi_a, decoder(feedback[index]), probability[index]

        def grounding(index: torch.Tensor) -> torch.Tensor:
            # psi ascends Eq. 2 for the current pi; pi ascends the minorant.
            log_pi, a, pi_a, psi, p = terms(index)
            decoder_term = self_normalised_objective(pi_a.detach(), psi, p, n_actions)
            return -(decoder_term + policy_minorant(log_pi, a, psi, p, both_sides=False))

        def policy_step(index: torch.Tensor) -> torch.Tensor:
            log_pi, a, _, psi, p = terms(index)
            return -policy_minorant(log_pi, a, psi, p)

        def exact(index: torch.Tensor) -> torch.Tensor:  # Eq. 2 over (pi, psi) jointly
            _, _, pi_a, psi, p = terms(index)
            return -igl_objective(pi_a, psi, p, n_actions, BASELINE)

        def correct() -> None:
            # The data-driven corrector, on all of the data after every epoch: a decoder
            # that calls the majority of (uniformly re-weighted) feedback a reward is flipped.
            with torch.no_grad():
                if corrector_statistic(decoder(feedback), probability, n_actions) > 0.5:
                    decoder.flipped.logical_not_()
                    if self.flip_policy:
                        _negate_scores(policy)

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
        optimise(stages, len(context), settings, generator,
                 correct if self.corrector else None)

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
        return _indicator(self.policy_, self.decoder_, _tensors(log), log.n_actions)


def _negate_scores(policy: Policy) -> None:
    """Negate the policy's scores (its last linear layer): the pair (pi, psi) that ascended to
    (pi_dagger, psi_dagger) becomes (pi_bar, 1 - psi), so the flipped decoder keeps a policy
    that prefers, rather than avoids, the actions it decodes as rewarded."""
    last = [m for m in policy.modules() if isinstance(m, torch.nn.Linear)][-1]
    for parameter in last.parameters():
        parameter.neg_()


def _tensors(log: InteractionLog) -> tuple[torch.Tensor, ...]:
    return (as_tensor(log.context), torch.from_numpy(log.action),
            as_tensor(log.probability), as_tensor(log.feedback))


def _indicator(policy: Policy, decoder: Decoder, data: tuple[torch.Tensor, ...],
               n_actions: int) -> float:
    """Eq. 9 with importance weights: mean[(pi(a|x) - 1/K) psi(y) / p]."""
    context, action, probability, feedback = data
    total = 0.0
    with torch.no_grad():
        for index in torch.arange(len(context)).split(65536):
            pi = policy.probabilities(context[index]).gather(1, action[index, None])[:, 0]
            psi = decoder(feedback[index])
            total += float(igl_objective(pi, psi, probability[index], n_actions)) * len(index)
    return total / len(context)
