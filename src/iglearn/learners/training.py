"""One optimiser for every learner: mini-batch AdamW with a one-cycle learning-rate schedule,
run over a sequence of stages.

Policy learners first maximise a minorant of their objective
(:func:`~iglearn.learners.objective.policy_minorant`, log pi and log(1 - pi) in place of pi):
its gradient does not vanish where a softmax policy puts little mass on the rewarded action,
the plateau that makes softmax policy gradients sensitive to initialisation (Appendix B;
Mei et al., 2020), and for fixed rewards it is concave in a linear policy's weights. The last
stage maximises the exact objective.

A fit runs T trials at once (T = 1 for a single fit): every parameter carries a leading trial
axis (:mod:`iglearn.models.stacked`), each trial shuffles with its own generator, each
mini-batch gathers T trials' rows into one tensor (:func:`take`), and a stage's loss returns
one value per trial. AdamW's updates are elementwise, so each trial
follows exactly the path it would follow alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Optimisation:
    """How a learner fits its models: epochs per stage and optimiser settings.

    The stages run in this order (a stage with zero epochs is skipped):
    grounding (IGL only: pi and psi jointly, pi on the minorant), policy (pi alone on the
    minorant, rewards or decoder held fixed), exact (the objective itself).
    """

    grounding_epochs: int = 2
    """Stage one (IGL): psi ascends Eq. 2 while pi ascends the minorant."""
    policy_epochs: int = 2
    """Stage two: pi ascends the minorant with the (decoded) reward held fixed."""
    epochs: int = 3
    """Stage three: the exact objective."""
    batch_size: int = 500
    """Interactions per gradient step."""
    lr: float = 0.02
    """Peak learning rate of each stage's one-cycle schedule."""
    min_steps: int = 240
    """Small data sets get more epochs so that each stage takes at least this many steps."""
    weight_decay: float = 0.0
    """Fixed part of the decoupled (AdamW) weight decay."""
    weight_decay_scale: float = 8.0
    """Data-scaled part: a fit on n interactions decays a weight matrix with d inputs by
    weight_decay + weight_decay_scale * d / n, a penalty that grows with the parameters per
    output and fades as the data grows (on MNIST, d = 784: 1.6 at 4000 samples, 0.1 at 60000).
    Without it, a few thousand interactions let pi and psi co-adapt to the sample: psi calls a
    third of the feedback a reward and the policy follows it. Biases are not decayed."""


@dataclass(frozen=True)
class Stage:
    """One stage of a fit: ``loss(index)`` to minimise over ``params``, where ``index`` holds
    each trial's mini-batch (shape (T, batch)) and the loss one value per trial (shape (T,))."""

    epochs: int
    params: Sequence[torch.nn.Parameter]
    loss: Callable[[torch.Tensor], torch.Tensor]
    scaled: Sequence[torch.nn.Parameter] = ()
    """Parameters among ``params`` trained at ``lr_scale`` times the learning rate."""
    lr_scale: float = 1.0


def optimise(stages: Sequence[Stage], n: int, settings: Optimisation,
             generators: Sequence[torch.Generator],
             after_epoch: Callable[[], None] | None = None) -> None:
    """Run each stage over shuffled mini-batches of ``range(n)``, trial t shuffling with
    ``generators[t]``, calling ``after_epoch()`` at the end of every pass over the data."""
    batch = min(settings.batch_size, n)
    per_epoch = math.ceil(n / batch)
    for stage in stages:
        if stage.epochs <= 0:
            continue
        epochs = max(stage.epochs, math.ceil(settings.min_steps / per_epoch))
        groups = _decay_groups(stage, settings, n)
        optimiser = torch.optim.AdamW(groups, lr=settings.lr)
        schedule = torch.optim.lr_scheduler.OneCycleLR(
            optimiser, max_lr=[group["lr"] for group in groups], total_steps=epochs * per_epoch)
        for _ in range(epochs):
            orders = torch.stack([torch.randperm(n, generator=g) for g in generators])
            for index in orders.split(batch, dim=1):
                optimiser.zero_grad(set_to_none=True)
                stage.loss(index).sum().backward()  # trials share no parameter
                optimiser.step()
                schedule.step()
            if after_epoch is not None:
                after_epoch()


def take(trials: Sequence[torch.Tensor], index: torch.Tensor) -> torch.Tensor:
    """Rows ``index[t]`` of each trial's tensor ``trials[t]``, as one (T, batch, ...) tensor.

    A fit holds each field of its T logs as T separate tensors (no copy of the logs); only
    the mini-batches are gathered into one tensor."""
    first = trials[0]
    out = torch.empty((*index.shape, *first.shape[1:]), dtype=first.dtype)
    for t, tensor in enumerate(trials):
        torch.index_select(tensor, 0, index[t], out=out[t])
    return out


def _decay_groups(stage: Stage, settings: Optimisation, n: int) -> list[dict]:
    """One AdamW parameter group per parameter of ``stage``: weight matrices (a trial axis and
    two more) decayed by weight_decay + weight_decay_scale * inputs / n, biases undecayed;
    peak learning rate settings.lr, times stage.lr_scale for the stage's scaled parameters."""
    scaled = {id(param) for param in stage.scaled}
    groups = []
    for param in stage.params:
        decay = 0.0
        if param.dim() >= 3:
            decay = settings.weight_decay + settings.weight_decay_scale * param.shape[-1] / n
        lr = settings.lr * (stage.lr_scale if id(param) in scaled else 1.0)
        groups.append({"params": [param], "weight_decay": decay, "lr": lr})
    return groups
