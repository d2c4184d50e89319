"""The paper's baselines with the same policy class: SUP reads labels, CB the true reward."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from iglearn.data.logs import InteractionLog
from iglearn.errors import IGLearnError
from iglearn.learners.base import StackableLearner, TrialData, trial_tensors
from iglearn.learners.objective import BASELINE, at_action, igl_objective, policy_minorant
from iglearn.learners.training import Optimisation, Stage, optimise, take
from iglearn.models import Policy, make_policy
from iglearn.models.stacked import stack, unstack_into
from iglearn.seeding import SeedLike, as_generator, torch_generator


@dataclass(eq=False)
class _Baseline(StackableLearner):
    """A policy learner that reads one field of the log besides the interactions."""

    needs: ClassVar[str] = ""
    policy: str = "linear"
    """Policy class: 'linear' (the paper's) or 'mlp'."""
    optimisation: Optimisation = field(default_factory=Optimisation)
    """Optimiser settings (epochs, batch size, learning rate, weight decay)."""
    seed: SeedLike = None
    """Seed or numpy Generator for initialisation and shuffling."""

    def __post_init__(self) -> None:
        if self.optimisation is None:  # accepted for convenience: the default settings
            self.optimisation = Optimisation()

    @classmethod
    def _fit_stacked(cls, learners: list[_Baseline], logs: list[InteractionLog]) -> None:
        """Fit every learner's policy on its log."""
        for log in logs:
            if getattr(log, cls.needs) is None:
                raise IGLearnError(f"{log.source}: {cls.__name__} needs the field "
                                   f"'{cls.needs}', which this log does not have")
        start = time.perf_counter()
        first, log = learners[0], logs[0]
        generators = [torch_generator(as_generator(learner.seed)) for learner in learners]
        policies = [make_policy(first.policy, log.context_dim, log.n_actions, generator)
                    for generator in generators]
        first.fit_models(policies, trial_tensors(logs, cls.needs), generators)
        seconds = (time.perf_counter() - start) / len(learners)
        for learner, policy in zip(learners, policies, strict=True):
            learner.policy_, learner.seconds_ = policy, seconds

    def fit_models(self, policies: Sequence[Policy], data: TrialData,
                   generators: Sequence[torch.Generator],
                   optimisation: Optimisation | None = None) -> None:
        """Fit ``policies[t]`` in place (warm-starts from its weights) on trial t of ``data``
        (context, action, probability, target), all trials as one batched computation;
        ``optimisation`` overrides the settings."""
        policy = stack(policies)
        settings = optimisation or self.optimisation
        stages = [Stage(epochs, list(policy.parameters()), loss)
                  for epochs, loss in self._stages(policy, *data, settings)]
        optimise(stages, len(data[0][0]), settings, generators)
        unstack_into(policy, policies)


@dataclass(eq=False)
class Supervised(_Baseline):
    """SUP: logistic regression (cross-entropy) on the correct labels."""

    needs: ClassVar[str] = "label"

    def _stages(self, policy, context, action, probability, label, settings):
        def loss(index: torch.Tensor) -> torch.Tensor:
            log_pi = policy(take(context, index))
            return -at_action(log_pi, take(label, index)).mean(-1)
        return [(settings.epochs, loss)]


@dataclass(eq=False)
class ContextualBandit(_Baseline):
    """CB: IGL's policy stages with the true reward r in place of psi(y): as many epochs on
    the minorant as IGL's first two stages, then the IPS estimate of V(pi) - V(pi_bad)
    (Eq. 2 with psi = r and the same control variate), so the two differ only in the reward."""

    needs: ClassVar[str] = "reward"

    def _stages(self, policy, context, action, probability, reward, settings):
        def minorant(index: torch.Tensor) -> torch.Tensor:
            log_pi = policy(take(context, index))
            return -policy_minorant(log_pi, take(action, index), take(reward, index),
                                    take(probability, index))

        def exact(index: torch.Tensor) -> torch.Tensor:
            log_pi, a = policy(take(context, index)), take(action, index)
            pi_a = at_action(log_pi, a).exp()
            return -igl_objective(pi_a, take(reward, index), take(probability, index),
                                  log_pi.shape[-1], BASELINE)
        return [(settings.grounding_epochs + settings.policy_epochs, minorant),
                (settings.epochs, exact)]
