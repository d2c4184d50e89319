"""The paper's baselines with the same policy class: SUP reads labels, CB the true reward."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Self

import torch

from iglearn.data.limits import check_fit_size
from iglearn.data.logs import probability_warning
from iglearn.errors import IGLearnError, warn_caller
from iglearn.learners import closed_form
from iglearn.learners.base import StackableLearner, check_finite_fit
from iglearn.learners.monitor import ShortReport
from iglearn.learners.objective import BASELINE, at_action, igl_objective, policy_minorant
from iglearn.learners.settings import FitSettings, Optimisation
from iglearn.learners.stream import AnyLog, has_field, training_data, weight_sums
from iglearn.learners.training import Stage, optimise
from iglearn.learners.trials import Batch, Source, side_by_side
from iglearn.models import Policy, make_policy
from iglearn.models.custom import check_specs
from iglearn.seeding import as_generator, torch_generator

if TYPE_CHECKING:
    from torch import nn

    from iglearn.learners.distributed import RayTrain
    from iglearn.models.custom import ModelFactory


@dataclass(repr=False)
class BaselineReport(ShortReport):
    """What a baseline's fit (:class:`ContextualBandit`, :class:`Supervised`) measured about
    itself, as the IGL learners' reports do: its wall time and its warnings."""

    seconds: float = 0.0
    """Wall time of the fit (with ``fit_many``, an equal share of the whole); also the
    learner's ``seconds_``."""
    warnings: list[str] = field(default_factory=list)
    """The warnings the fit raised (the contextual bandit's: logged probabilities that do
    not fit the logged actions, :func:`~iglearn.data.logs.probability_warning`)."""


@dataclass(eq=False)
class _Baseline(FitSettings, StackableLearner):
    """A policy learner that reads one field of the log besides the interactions."""

    if TYPE_CHECKING:  # set by fit; declared for the type checker, not as settings
        report_: BaselineReport = field(init=False)

    needs: ClassVar[str] = ""
    row_spread: ClassVar[float | None] = None
    """Unit z-scores: the baselines' regressions on contexts fit best there (raw digits, 500
    interactions, 6 seeds: CB 81.0 % at unit spread against 77.1 % at 0.15 a column, SUP
    88.5 % against 86.8 %)."""
    policy: str | nn.Module | ModelFactory = "linear"
    """Policy class: 'linear' (the paper's) or 'mlp'; in Python also a torch module (a
    template) or a factory, as for BatchIGL."""
    optimisation: Optimisation = field(default_factory=Optimisation)
    """Optimiser settings (epochs, batch size, learning rate, weight decay)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.optimisation is None:  # accepted for convenience: the default settings
            self.optimisation = Optimisation()
        check_specs(self)

    def fit(self, log: AnyLog, *, backend: RayTrain | None = None) -> Self:
        """Fit on ``log``: in memory, or streamed from disk; ``backend``: a streamed Parquet
        log data-parallel on Ray Train (:mod:`iglearn.learners.distributed`)."""
        if backend is not None:
            return backend.fit(self, log)
        return super().fit(log)

    def save(self, folder: object, schema: object = None) -> None:
        """Refused: a baseline is measured beside the IGL learners and has no model folder."""
        raise IGLearnError(f"{type(self).__name__} is a baseline that reads the {self.needs}, "
                           f"measured beside the IGL learners; it has no model folder: save "
                           f"a BatchIGL, AIIGL, IGLP or VIIGL")

    @classmethod
    def _fit_stacked(cls, learners: list[_Baseline], logs: list[AnyLog]) -> None:
        """Fit every learner's policy on its log, in memory or streamed."""
        check_fit_size(logs)
        for log in logs:
            if not has_field(log, cls.needs):
                raise IGLearnError(f"{log.source}: {cls.__name__} needs the field "
                                   f"'{cls.needs}', which this log does not have (a table's "
                                   f"{cls.needs} column is read when named: "
                                   f"InteractionLog.from_frame(..., {cls.needs}='column'))")
        notes: list[list[str]] = [[] for _ in logs]
        if cls.needs == "reward":  # the contextual bandit weighs each row by 1/p
            for each, own in zip(logs, notes, strict=True):
                warning = probability_warning(weight_sums(each), len(each), each.source)
                if warning is not None:
                    warn_caller(warning)
                    own.append(warning)
        start = time.perf_counter()
        first, log = learners[0], logs[0]
        generators = [torch_generator(as_generator(learner.seed)) for learner in learners]
        policies = [make_policy(first.policy, log.context_dim, log.n_actions, generator)
                    for generator in generators]
        scalers = [learner.take_statistics(each, feedback=False)
                   for learner, each in zip(learners, logs, strict=True)]
        first.fit_models(policies, training_data(logs, cls.needs, scalers), generators)
        seconds = (time.perf_counter() - start) / len(learners)
        for log, policy in zip(logs, policies, strict=True):  # all, or none kept
            check_finite_fit(log, {"policy": policy})
        for learner, policy, own in zip(learners, policies, notes, strict=True):
            learner.policy_, learner.seconds_ = policy, seconds
            learner.report_ = BaselineReport(seconds, own)

    def fit_models(self, policies: Sequence[Policy], data: Source,
                   generators: Sequence[torch.Generator],
                   optimisation: Optimisation | None = None) -> None:
        """Fit ``policies[t]`` in place (warm-starts from its weights) on trial t of ``data``
        (the signal is the target), all trials as one batched computation; ``optimisation``
        overrides the settings."""
        settings = optimisation or self.optimisation
        with side_by_side(policies) as policy:
            optimise(self.stages(policy, settings), data, settings, generators,
                     self.progress_label("policy"))

    def stages(self, policy: Policy, settings: Optimisation) -> list[Stage]:
        """The stages of a fit, as losses of a mini-batch (one value per trial)."""
        raise NotImplementedError


@dataclass(eq=False)
class Supervised(_Baseline):
    """SUP: logistic regression (cross-entropy) on the correct labels."""

    needs: ClassVar[str] = "label"

    def stages(self, policy: Policy, settings: Optimisation) -> list[Stage]:
        def cross_entropy(batch: Batch) -> torch.Tensor:
            return -at_action(policy(batch.context), batch.signal).mean(-1)
        return [Stage(settings.epochs, list(policy.parameters()), cross_entropy)]


@dataclass(eq=False)
class ContextualBandit(_Baseline):
    """CB: IGL's policy stages with the true reward r in place of psi(y): as many epochs on
    the minorant as IGL's first two stages, then the IPS estimate of V(pi) - V(pi_bad)
    (Eq. 2 with psi = r and the same control variate), so the two differ only in the reward."""

    needs: ClassVar[str] = "reward"

    def stages(self, policy: Policy, settings: Optimisation) -> list[Stage]:
        return reward_stages(policy, _signal, settings.grounding_epochs + settings.policy_epochs,
                             settings)


def _signal(batch: Batch) -> torch.Tensor:
    """The reward a mini-batch carries as its signal."""
    return batch.signal


def reward_stages(policy: Policy, reward: Callable[[Batch], torch.Tensor], minorant_epochs: int,
                  settings: Optimisation) -> list[Stage]:
    """The policy stages on a reward held fixed (``reward(batch)`` of a mini-batch): the
    two-sided minorant (:func:`~iglearn.learners.objective.policy_minorant`) for
    ``minorant_epochs``, then the IPS estimate of V(pi) - V(pi_bad) (Eq. 2 with the reward in
    place of psi and the control variate) for ``settings.epochs``. CB's stages on the true
    reward; AI-IGL's and VI-IGL's policy fits on the decoded reward. A linear policy's
    gradients are computed in closed form (:mod:`iglearn.learners.closed_form`)."""

    def minorant(batch: Batch) -> torch.Tensor:
        return -policy_minorant(policy(batch.context), batch.action, reward(batch),
                                batch.probability)

    def exact(batch: Batch) -> torch.Tensor:
        log_pi = policy(batch.context)
        pi_a = at_action(log_pi, batch.action).exp()
        return -igl_objective(pi_a, reward(batch), batch.probability, log_pi.shape[-1],
                              BASELINE)

    params = list(policy.parameters())
    stages = [Stage(minorant_epochs, params, minorant), Stage(settings.epochs, params, exact)]
    if not closed_form.supports(policy):
        return stages
    forms = [partial(closed_form.minorant_step, policy, reward),
             partial(closed_form.ips_step, policy, reward, baseline=BASELINE)]
    return [replace(stage, closed_form=form) for stage, form in zip(stages, forms, strict=True)]
