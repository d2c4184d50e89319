"""The paper's baselines with the same policy class: SUP reads labels, CB the true reward."""

from __future__ import annotations

import time

import torch

from iglearn.data.logs import InteractionLog
from iglearn.errors import IGLearnError
from iglearn.learners.base import PolicyLearner, as_tensor
from iglearn.learners.objective import BASELINE, igl_objective, policy_minorant
from iglearn.learners.training import Optimisation, Stage, optimise
from iglearn.models import Policy, make_policy
from iglearn.seeding import SeedLike, as_generator, torch_generator


class _Baseline(PolicyLearner):
    needs = ""

    def __init__(self, policy: str = "linear", optimisation: Optimisation | None = None,
                 seed: SeedLike = None):
        self.policy = policy
        self.optimisation = optimisation or Optimisation()
        self.seed = seed

    def fit(self, log: InteractionLog):
        """Fit the policy on ``log``."""
        target = getattr(log, self.needs)
        if target is None:
            raise IGLearnError(f"{log.source}: {type(self).__name__} needs the field "
                               f"'{self.needs}', which this log does not have")
        start = time.perf_counter()
        generator = torch_generator(as_generator(self.seed))
        self.policy_ = make_policy(self.policy, log.context_dim, log.n_actions, generator)
        data = (as_tensor(log.context), torch.from_numpy(log.action),
                as_tensor(log.probability), torch.from_numpy(target))
        self.fit_models(self.policy_, data, generator)
        self.seconds_ = time.perf_counter() - start
        return self

    def fit_models(self, policy: Policy, data: tuple[torch.Tensor, ...],
                   generator: torch.Generator, optimisation: Optimisation | None = None) -> None:
        """Fit ``policy`` in place (warm-starts from its weights) on tensors
        (context, action, probability, target); ``optimisation`` overrides the settings."""
        context, action, probability, target = data
        self.policy_ = policy
        settings = optimisation or self.optimisation
        stages = [Stage(epochs, list(policy.parameters()), loss) for epochs, loss in
                  self._stages(context, action, probability, target, settings)]
        optimise(stages, len(context), settings, generator)


class Supervised(_Baseline):
    """SUP: logistic regression (cross-entropy) on the correct labels."""

    needs = "label"

    def _stages(self, context, action, probability, label, settings):
        def loss(index: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.nll_loss(self.policy_(context[index]), label[index])
        return [(settings.epochs, loss)]


class ContextualBandit(_Baseline):
    """CB: IGL's policy stages with the true reward r in place of psi(y): as many epochs on
    the minorant as IGL's first two stages, then the IPS estimate of V(pi) - V(pi_bad)
    (Eq. 2 with psi = r and the same control variate), so the two differ only in the reward."""

    needs = "reward"

    def _stages(self, context, action, probability, reward, settings):
        def minorant(index: torch.Tensor) -> torch.Tensor:
            log_pi = self.policy_(context[index])
            return -policy_minorant(log_pi, action[index], reward[index], probability[index])

        def exact(index: torch.Tensor) -> torch.Tensor:
            log_pi = self.policy_(context[index])
            pi_a = log_pi.gather(1, action[index, None])[:, 0].exp()
            return -igl_objective(pi_a, reward[index], probability[index], log_pi.shape[1],
                                  BASELINE)
        return [(settings.grounding_epochs + settings.policy_epochs, minorant),
                (settings.epochs, exact)]
