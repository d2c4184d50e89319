"""The paper's baselines with the same policy class: SUP reads labels, CB the true reward."""

from __future__ import annotations

import time

import torch

from iglearn.data.logs import InteractionLog
from iglearn.errors import IGLearnError
from iglearn.learners.base import PolicyLearner, as_tensor
from iglearn.learners.objective import policy_value
from iglearn.learners.training import Optimisation, Stage, optimise
from iglearn.models import make_policy
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
        context = as_tensor(log.context)
        action = torch.from_numpy(log.action)
        probability = as_tensor(log.probability)
        target = torch.from_numpy(target)
        params = list(self.policy_.parameters())
        stages = [Stage(epochs, params, loss) for epochs, loss in
                  self._stages(context, action, probability, target)]
        optimise(stages, len(log), self.optimisation, generator)
        self.seconds_ = time.perf_counter() - start
        return self


class Supervised(_Baseline):
    """SUP: logistic regression (cross-entropy) on the correct labels."""

    needs = "label"

    def _stages(self, context, action, probability, label):
        def loss(index: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.nll_loss(self.policy_(context[index]), label[index])
        return [(self.optimisation.epochs, loss)]


class ContextualBandit(_Baseline):
    """CB: maximise the IPS estimate mean[pi(a|x) r / p] of V(pi) with the true reward, after
    as many epochs on its minorant as IGL's first two stages, so the two differ only in the
    reward."""

    needs = "reward"

    def _stages(self, context, action, probability, reward):
        def loss(index: torch.Tensor, exact: bool) -> torch.Tensor:
            log_pi = self.policy_(context[index]).gather(1, action[index, None])[:, 0]
            return -policy_value(log_pi, reward[index] / probability[index], exact)
        settings = self.optimisation
        return [(settings.grounding_epochs + settings.policy_epochs,
                 lambda index: loss(index, exact=False)),
                (settings.epochs, lambda index: loss(index, exact=True))]
