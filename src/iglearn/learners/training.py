"""One optimiser for every learner: mini-batch AdamW with a one-cycle learning-rate schedule,
run over a sequence of stages.

Policy learners first maximise a minorant of their objective
(:func:`~iglearn.learners.objective.policy_minorant`, log pi and log(1 - pi) in place of pi):
its gradient does not vanish where a softmax policy puts little mass on the rewarded action,
the plateau that makes softmax policy gradients sensitive to initialisation (Appendix B;
Mei et al., 2020), and for fixed rewards it is concave in a linear policy's weights. The last
stage maximises the exact objective.

A fit runs T trials at once (T = 1 for a single fit, :mod:`iglearn.learners.trials`): every
parameter carries a leading trial axis, each trial shuffles with its own generator, and a
stage's loss returns one value per trial. AdamW's updates are elementwise, so each trial
follows the path it would follow alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from iglearn.learners.settings import Optimisation
from iglearn.learners.trials import Batch, Source, to_device


@dataclass(frozen=True)
class Stage:
    """One stage of a fit: ``loss(batch)`` to minimise over ``params``, where ``batch`` holds
    each trial's mini-batch (fields of shape (T, batch, ...)) and the loss is one value per
    trial (shape (T,))."""

    epochs: int
    params: Sequence[torch.nn.Parameter]
    loss: Callable[[Batch], torch.Tensor]
    scaled: Sequence[torch.nn.Parameter] = ()
    """Parameters among ``params`` trained at ``lr_scale`` times the learning rate."""
    lr_scale: float = 1.0


def stage_epochs(stage: Stage, n: int, settings: Optimisation) -> int:
    """The epochs :func:`run_stage` runs ``stage`` for on ``n`` interactions: 0 for a stage
    with zero epochs, else at least ``stage.epochs`` and enough for ``settings.min_steps``
    steps."""
    if stage.epochs <= 0:
        return 0
    per_epoch = math.ceil(n / min(settings.batch_size, n))
    return max(stage.epochs, math.ceil(settings.min_steps / per_epoch))


def run_stage(stage: Stage, data: Source, settings: Optimisation,
              generators: Sequence[torch.Generator],
              device: torch.device | None = None) -> Iterator[int]:
    """Minimise ``stage.loss`` over shuffled mini-batches of ``data`` (``data.epoch``: in
    memory, or streamed from disk), trial t shuffling with ``generators[t]``; yields the
    epoch number after every pass over the data. A stage with zero epochs is skipped; a small
    log gets more epochs, so that the stage takes at least ``settings.min_steps`` steps. With
    a ``device``, each mini-batch is gathered on the CPU and moved there (the stage's
    parameters must be there already)."""
    epochs = stage_epochs(stage, data.n, settings)
    if epochs == 0:
        return
    n = data.n
    batch = min(settings.batch_size, n)
    per_epoch = math.ceil(n / batch)
    groups = _decay_groups(stage, settings, n)
    optimiser = torch.optim.AdamW(groups, lr=settings.lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimiser, max_lr=[group["lr"] for group in groups], total_steps=epochs * per_epoch)
    for epoch in range(epochs):
        for rows in data.epoch(batch, generators):
            optimiser.zero_grad(set_to_none=True)
            rows = to_device(rows, device)
            stage.loss(rows).sum().backward()  # trials share no parameter
            optimiser.step()
            schedule.step()
        yield epoch


def optimise(stages: Sequence[Stage], data: Source, settings: Optimisation,
             generators: Sequence[torch.Generator]) -> None:
    """Run every stage in order (:func:`run_stage`)."""
    for stage in stages:
        for _ in run_stage(stage, data, settings, generators):
            pass


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
