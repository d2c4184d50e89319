"""One optimiser for every learner: mini-batch AdamW with a one-cycle learning-rate schedule,
run over a sequence of stages, each stopping early on a small log once its loss stops
improving.

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import cast

import torch

from iglearn.errors import IGLearnError
from iglearn.learners.settings import Optimisation
from iglearn.learners.trials import Batch, Source, reducer_of, to_device
from iglearn.progress import progress_bar

DECAY_STEP_LIMIT = 1.0
"""The most of a weight that AdamW's decoupled weight decay removes in one step: a parameter
group's decay is at most this over its peak learning rate (:func:`_decay_groups`). A step
multiplies each weight by 1 - lr decay; a data-scaled decay (``weight_decay_scale`` d / n) with
many inputs d on a small log takes that factor below 0, where each step flips the weight's
sign, and below -1, where the weights grow geometrically: AI-IGL on 60 MNIST interactions
(d = 784) and IGL-P on 2,000 (its inverse kinematics read d = 616,224 inputs) diverged to
NaN, and so did VI-IGL's attempts on 60. With the limit a weight is at most zeroed."""


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
    decay_scale: float = 1.0
    """The data-scaled weight decay (``weight_decay_scale``) of the ``scaled`` parameters'
    weight matrices is this multiple of the others' (the decoders of AI-IGL and VI-IGL:
    :func:`~iglearn.learners.ai_igl.decoder_decay_scale`,
    :func:`~iglearn.learners.vi_igl.decoder_decay_scale`)."""
    state: Sequence[torch.Tensor] = ()
    """Tensors besides ``params`` that change while the stage runs (the corrector's flags,
    parameters the caller changes between epochs): a resumable fit's checkpoints hold them
    too (:meth:`~iglearn.learners.trials.Reducer.begin`)."""
    closed_form: Callable[[Batch], torch.Tensor] | None = None
    """``loss`` with its gradient in closed form: it returns the loss of a mini-batch (one
    value per trial) and sets the gradient of every parameter in ``params`` itself
    (:mod:`iglearn.learners.closed_form`); None: the gradient is autograd's of ``loss``."""


def stage_epochs(stage: Stage, n: int, settings: Optimisation) -> int:
    """The most epochs :func:`run_stage` runs ``stage`` for on ``n`` interactions: 0 for a
    stage with zero epochs, else ``stage.epochs``, or on a smaller log as many as make the
    cap's steps (``settings.cap(n)``)."""
    if stage.epochs <= 0:
        return 0
    return max(stage.epochs, math.ceil(settings.cap(n)[0] / _steps_per_epoch(n, settings)))


def run_stage(stage: Stage, data: Source, settings: Optimisation,
              generators: Sequence[torch.Generator],
              device: torch.device | None = None) -> Iterator[int]:
    """Minimise ``stage.loss`` over shuffled mini-batches of ``data`` (``data.epoch``: in
    memory, or streamed from disk) by AdamW on a one-cycle schedule, trial t shuffling with
    ``generators[t]``; yields the number of the epoch just finished after every epoch, or in
    an extended stage (below) after every window of ``settings.window`` steps' worth of
    epochs. A stage with zero epochs is skipped.

    A stage whose epochs take fewer than the log's cap (``settings.cap``: ``max_steps``, or
    on a small log ``small_steps``) is extended: its schedule spans that many steps (on a
    small log peaking at ``small_lr_scale`` times the learning rate) and, once it has run its
    epochs, each trial whose loss has plateaued (:class:`Plateau`) anneals its learning rate
    to zero over one more window and stops: its parameters stay as they are and its
    generator is left as it was when it stopped, so that each trial ends as it would alone.
    The stage ends when every trial has stopped, or at the cap. With a ``device``, each
    mini-batch is gathered on the CPU and moved there (the stage's parameters must be there
    already); a log that fits in one mini-batch is gathered (and moved) once for the whole
    stage."""
    epochs = stage_epochs(stage, data.n, settings)
    if epochs == 0:
        return
    n, trials = data.n, len(generators)
    batch = min(settings.batch_size, n)
    per_epoch = _steps_per_epoch(n, settings)
    extended = epochs > stage.epochs
    every = max(1, min(epochs, settings.window // per_epoch)) if extended else 1  # a window
    window = every * per_epoch
    optimiser = AdamW(_decay_groups(stage, settings, n, extended), trials)
    schedule = OneCycle(epochs * per_epoch)
    plateau = Plateau(settings.patience, settings.tolerance) if extended else None
    reducer = reducer_of(data)  # the processes of a data-parallel fit agree on every step
    tensors = list({id(t): t for t in (*stage.params, *stage.state)}.values())
    # per trial: the step its closing anneal began (-1: none), the learning-rate factor and
    # beta1 it began from, whether it has stopped, and its generator's state then
    since = torch.full((trials,), -1, dtype=torch.long)
    start_lr = torch.zeros(trials, dtype=torch.float64)
    start_beta = torch.zeros(trials, dtype=torch.float64)
    stopped = torch.zeros(trials, dtype=torch.bool)
    states: dict[int, torch.Tensor] = {}
    total: torch.Tensor | float = 0.0  # each trial's summed loss over the window
    whole: Batch | None = None  # a log that fits in one mini-batch: its rows, gathered once
    annealing_any = False  # whether some trial has begun its closing anneal
    first = 0
    saved = reducer.begin()  # a resumed data-parallel fit: where this stage stood
    if saved is not None:
        _restore(tensors, generators, saved)
        if saved["done"]:  # the stage had ended: as it ended
            return
        first = saved["epoch"] + 1
        optimiser.steps = saved["steps"]
        for mine, theirs in zip(optimiser.means + optimiser.squares,
                                saved["means"] + saved["squares"], strict=True):
            mine.copy_(theirs)
        since, start_lr, start_beta, stopped = (saved[name] for name in (
            "since", "start_lr", "start_beta", "stopped"))
        states, total, annealing_any = saved["states"], saved["total"], saved["annealing"]
        if plateau is not None:
            plateau.first, plateau.best, plateau.waited = saved["plateau"]

    def snapshot(epoch: int, done: bool) -> dict:
        """What a resumed fit needs to go on after ``epoch`` (``done``: the stage's end)."""
        state = {"done": done, "tensors": [t.detach().cpu().clone() for t in tensors],
                 "generators": [g.get_state() for g in generators]}
        if done:
            return state
        return {**state, "epoch": epoch, "steps": optimiser.steps,
                "means": [m.cpu().clone() for m in optimiser.means],
                "squares": [m.cpu().clone() for m in optimiser.squares],
                "since": since.clone(), "start_lr": start_lr.clone(),
                "start_beta": start_beta.clone(), "stopped": stopped.clone(),
                "states": dict(states), "annealing": annealing_any,
                "total": total.clone() if isinstance(total, torch.Tensor) else total,
                "plateau": None if plateau is None else (plateau.first, plateau.best,
                                                         plateau.waited)}

    for epoch in range(first, epochs):
        for rows in data.epoch(batch, generators) if whole is None else [whole]:
            lr, beta1 = schedule.at(optimiser.steps)
            lrs: torch.Tensor | float = lr  # a number while every trial follows the schedule
            betas: torch.Tensor | float = beta1
            if annealing_any:
                annealing = since >= 0
                left = 1.0 - (optimiser.steps - since + 1).double() / (window + 1)
                lrs = torch.where(annealing, start_lr * left.clamp_min(0.0), lr)
                betas = torch.where(annealing, start_beta, beta1)
                lrs = lrs.masked_fill(stopped, 0.0)
                if trials == 1:
                    lrs, betas = float(lrs[0]), float(betas[0])
            rows = to_device(rows, device)
            if per_epoch == 1:  # every epoch is this one batch; the losses are means over it
                whole = rows
            if stage.closed_form is not None:
                values = stage.closed_form(rows)
            else:
                values = stage.loss(rows)
                values.sum().backward()  # trials share no parameter
            reducer.gradients(optimiser.params, int(rows.action.shape[-1]))
            optimiser.step(lrs, betas)
            total = total + values.detach()
        if (epoch + 1) % every and epoch + 1 < epochs:
            continue
        yield epoch
        if plateau is not None:
            finished = (since >= 0) & (optimiser.steps - since >= window) & ~stopped
            for t in finished.nonzero()[:, 0].tolist():
                states[t] = generators[t].get_state()
            stopped |= finished
            if bool(stopped.all()):
                break
            mean = reducer.sum(torch.as_tensor(total).cpu()) / (window * reducer.size)
            total = 0.0
            if epoch + 1 >= stage.epochs:
                begin = plateau.stalled(mean) & (since < 0)
                lr, beta1 = schedule.at(optimiser.steps)
                since = torch.where(begin, optimiser.steps, since)
                annealing_any = bool((since >= 0).any())
                start_lr = torch.where(begin, lr, start_lr)
                start_beta = torch.where(begin, beta1, start_beta)
        reducer.save(partial(snapshot, epoch, False))
    for t, state in states.items():
        generators[t].set_state(state)
    reducer.save(partial(snapshot, epochs - 1, True))


@torch.no_grad()
def _restore(tensors: Sequence[torch.Tensor], generators: Sequence[torch.Generator],
             saved: dict) -> None:
    """Put back the tensors and the generators' states of a :func:`run_stage` snapshot."""
    for tensor, value in zip(tensors, saved["tensors"], strict=True):
        tensor.copy_(value)
    for generator, state in zip(generators, saved["generators"], strict=True):
        generator.set_state(state)


class Plateau:
    """Which trials' loss has stopped improving: each window's mean loss (one value per
    trial) improves when it falls below the trial's best so far by more than ``tolerance``
    times its improvement so far (its first window's loss minus its best); a trial has
    stalled once it has gone ``patience`` windows in a row without improving (never with
    ``patience`` 0)."""

    def __init__(self, patience: int, tolerance: float):
        self.patience, self.tolerance = patience, tolerance
        self.first: torch.Tensor | None = None
        self.best = torch.empty(0)
        self.waited = torch.empty(0)

    def stalled(self, loss: torch.Tensor) -> torch.Tensor:
        """Record one window's mean ``loss`` (shape (T,)); which trials have now stalled."""
        loss = loss.double()
        if self.first is None:
            self.first, self.best = loss, loss
            self.waited = torch.zeros_like(loss)
        else:
            improved = loss < self.best - self.tolerance * (self.first - self.best)
            improved &= loss < self.best
            self.waited = torch.where(improved, 0, self.waited + 1)
            self.best = torch.minimum(self.best, loss)
        return self.waited >= self.patience if self.patience > 0 else self.waited < 0


class OneCycle:
    """The one-cycle schedule (Smith and Topin, 2019; torch's ``OneCycleLR`` with its
    defaults) over ``steps`` steps: the learning rate rises from 1/25 of its peak to the peak
    over the first 30 % of the steps and anneals to 1/25e4 of the peak over the rest (cosine
    curves), while Adam's beta1 falls from 0.95 to 0.85 and rises back."""

    def __init__(self, steps: int, warm_up: float = 0.3, initial: float = 1 / 25,
                 final: float = 1 / 25e4, betas: tuple[float, float] = (0.85, 0.95)):
        self.peak_step = float(warm_up * steps) - 1
        self.last_step = steps - 1
        self.initial, self.final, self.betas = initial, final, betas

    def at(self, step: int) -> tuple[float, float]:
        """The learning rate (a fraction of the peak) and beta1 at ``step`` (from 0)."""
        low, high = self.betas
        if step <= self.peak_step:
            share = step / self.peak_step if self.peak_step > 0 else 1.0
            return _cosine(self.initial, 1.0, share), _cosine(high, low, share)
        span = self.last_step - self.peak_step
        share = min((step - self.peak_step) / span, 1.0) if span > 0 else 1.0
        return _cosine(1.0, self.final, share), _cosine(low, high, share)


def _cosine(start: float, end: float, share: float) -> float:
    """From ``start`` to ``end`` along half a cosine, ``share`` of the way."""
    return end + (start - end) / 2.0 * (math.cos(math.pi * share) + 1)


FUSED_DEVICES = frozenset({"cpu"})
"""Devices whose AdamW steps run torch's fused kernel (:meth:`AdamW._fused_step`), where a
small model's step is dominated by per-operation overhead; elsewhere (CUDA, MPS) they run as
``_foreach`` operations."""


class AdamW:
    """AdamW (Loshchilov and Hutter, 2019; torch's ``AdamW`` step, beta2 0.999, eps 1e-8)
    over the parameter groups of :func:`_decay_groups` (one parameter each, with its own peak
    learning rate and weight decay) of ``trials`` trials side by side: every parameter's
    leading axis holds the trials in order (or several rows per trial, trial-major), and each
    step takes a learning-rate factor and a beta1 per trial. The updates are elementwise, so
    each trial moves as it would alone. Written here so that a fit pays neither
    ``torch.optim``'s one-off import of its compiler stack nor its per-step bookkeeping."""

    def __init__(self, groups: Sequence[dict], trials: int, beta2: float = 0.999,
                 eps: float = 1e-8):
        self.params: list[torch.Tensor] = [group["params"][0] for group in groups]
        self.lrs = [float(group["lr"]) for group in groups]
        self.decays = [float(group["weight_decay"]) for group in groups]
        self.trials, self.beta2, self.eps = trials, beta2, eps
        self.means = [torch.zeros_like(p) for p in self.params]
        self.squares = [torch.zeros_like(p) for p in self.params]
        for p in self.params:
            if p.dim() == 0 or p.shape[0] % trials:
                raise IGLearnError(f"a stacked parameter of shape {tuple(p.shape)} has no "
                                   f"leading axis of {trials} trials")
        self.steps = 0
        self._slices: dict[tuple[int, ...], tuple[list[torch.Tensor], ...]] = {}
        """Each fused call's trial slices of the parameters and moments, by its parameters."""

    @torch.no_grad()
    def step(self, lr_factors: torch.Tensor | float, beta1: torch.Tensor | float) -> None:
        """One step from the parameters' gradients (then cleared): trial t at
        ``lr_factors[t]`` times each group's learning rate, with Adam's beta1 ``beta1[t]``
        (a float: every trial alike); a parameter without a gradient stays as it is."""
        self.steps += 1
        if not isinstance(lr_factors, torch.Tensor) and not isinstance(beta1, torch.Tensor):
            self._uniform_step(float(lr_factors), float(beta1))
            return
        lr_factors = torch.as_tensor(lr_factors, dtype=torch.float64).expand(self.trials)
        beta1 = torch.as_tensor(beta1, dtype=torch.float64).expand(self.trials)
        root2 = math.sqrt(1.0 - self.beta2 ** self.steps)
        correction1 = 1.0 - beta1 ** self.steps
        for p, mean, square, lr, decay in zip(self.params, self.means, self.squares, self.lrs,
                                              self.decays, strict=True):
            grad = p.grad
            if grad is None:
                continue
            rows = p.shape[0] // self.trials
            shape = (-1,) + (1,) * (p.dim() - 1)

            def per_row(values: torch.Tensor, p: torch.Tensor = p, rows: int = rows,
                        shape: tuple[int, ...] = shape) -> torch.Tensor:
                values = values if rows == 1 else values.repeat_interleave(rows)
                return values.to(device=p.device, dtype=p.dtype).view(shape)

            rates = lr_factors * lr
            if decay:
                p.mul_(per_row(1.0 - rates * decay))
            mean.lerp_(grad, per_row(1.0 - beta1))
            square.mul_(self.beta2).addcmul_(grad, grad, value=1.0 - self.beta2)
            denominator = square.sqrt().div_(root2).add_(self.eps)
            p.sub_(mean.div(denominator).mul_(per_row(rates / correction1)))
            p.grad = None

    def _uniform_step(self, lr_factor: float, beta1: float) -> None:
        """:meth:`step` when every trial has the same learning-rate factor and beta1: the
        same arithmetic, on all parameters at once (torch's ``_foreach`` kernels), with the
        factors as numbers: a small model's step costs a few operations, not a few per
        parameter."""
        live = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not live:
            return
        if self.params[live[0]].device.type in FUSED_DEVICES:
            self._fused_step(live, lr_factor, beta1)
            return
        params = [self.params[i] for i in live]
        grads = [cast(torch.Tensor, p.grad) for p in params]
        means = [self.means[i] for i in live]
        squares = [self.squares[i] for i in live]
        rates = [lr_factor * self.lrs[i] for i in live]
        decayed = [(p, 1.0 - rate * self.decays[i])
                   for p, rate, i in zip(params, rates, live, strict=True) if self.decays[i]]
        if decayed:
            torch._foreach_mul_([p for p, _ in decayed], [factor for _, factor in decayed])
        root2 = math.sqrt(1.0 - self.beta2 ** self.steps)
        correction1 = 1.0 - beta1 ** self.steps
        torch._foreach_lerp_(means, grads, 1.0 - beta1)
        torch._foreach_mul_(squares, self.beta2)
        torch._foreach_addcmul_(squares, grads, grads, value=1.0 - self.beta2)
        denominators = torch._foreach_sqrt(squares)
        torch._foreach_div_(denominators, root2)
        torch._foreach_add_(denominators, self.eps)
        updates = torch._foreach_div(means, denominators)
        torch._foreach_mul_(updates, [rate / correction1 for rate in rates])
        torch._foreach_sub_(params, updates)
        for p in params:
            p.grad = None

    def _fused_step(self, live: Sequence[int], lr_factor: float, beta1: float) -> None:
        """:meth:`_uniform_step` by torch's fused AdamW kernel (``torch._fused_adamw_``, the
        kernel of ``torch.optim.AdamW(fused=True)``), one call per distinct (learning rate,
        weight decay) among the parameters in ``live``: the same update in one pass over
        each parameter instead of some ten, which is most of a small model's step. The kernel
        rounds an element differently by where it lies in its tensor (its last few take a
        scalar path), so it is given each trial's slice as a tensor of its own: a trial's
        parameters get the same bits stacked with others as alone."""
        step = torch.tensor(float(self.steps))
        calls: dict[tuple[float, float], list[int]] = {}
        for i in live:
            calls.setdefault((lr_factor * self.lrs[i], self.decays[i]), []).append(i)
        for (rate, decay), group in calls.items():
            key = tuple(group)
            if key not in self._slices:  # views of tensors updated in place: made once
                self._slices[key] = tuple(self._trial_slices(tensors, group) for tensors in
                                          (self.params, self.means, self.squares))
            params, means, squares = self._slices[key]
            grads = self._trial_slices([cast(torch.Tensor, self.params[i].grad).contiguous()
                                        for i in group], range(len(group)))
            torch._fused_adamw_(params, grads, means, squares, [], [step] * len(params),
                                lr=rate, beta1=beta1, beta2=self.beta2, weight_decay=decay,
                                eps=self.eps, amsgrad=False, maximize=False)
        for i in live:
            self.params[i].grad = None

    def _trial_slices(self, tensors: Sequence[torch.Tensor], indices: Iterable[int]
                      ) -> list[torch.Tensor]:
        """Each trial's part of ``tensors[i]`` for i in ``indices``, flat, in order: views (an
        error, never a silent copy, for a tensor that cannot be viewed so), as the fused
        kernel updates the parameters and their moments in place."""
        if self.trials == 1:  # one view each: cheaper than unbinding a trial axis of one
            return [tensors[i].view(-1) for i in indices]
        return [row for i in indices for row in tensors[i].view(self.trials, -1).unbind(0)]


def optimise(stages: Sequence[Stage], data: Source, settings: Optimisation,
             generators: Sequence[torch.Generator], progress: str | None = None) -> None:
    """Run every stage in order (:func:`run_stage`); with ``progress``, a progress bar on
    stderr so described over the stages' epochs (:func:`~iglearn.progress.progress_bar`),
    where a stage that stops early counts all the epochs it might have run."""
    epochs = [stage_epochs(stage, data.n, settings) for stage in stages]
    bar = None if progress is None else progress_bar(sum(epochs), progress)
    try:
        for stage, most in zip(stages, epochs, strict=True):
            done = 0
            for epoch in run_stage(stage, data, settings, generators):
                if bar is not None:
                    bar.update(epoch + 1 - done)
                done = epoch + 1
            if bar is not None:
                bar.update(most - done)
                bar.refresh()  # each stage's end is drawn, however fast it ran
    finally:
        if bar is not None:
            bar.close()


def _steps_per_epoch(n: int, settings: Optimisation) -> int:
    return math.ceil(n / min(settings.batch_size, n))


def _decay_groups(stage: Stage, settings: Optimisation, n: int, extended: bool = False
                  ) -> list[dict]:
    """One AdamW parameter group per parameter of ``stage``: weight matrices (a trial axis and
    two more) decayed by weight_decay + weight_decay_scale * inputs / n, at most
    :data:`DECAY_STEP_LIMIT` over the group's peak learning rate, biases undecayed;
    peak learning rate settings.lr (times the cap's scale, settings.cap(n), in a stage the log
    ``extended``); the stage's scaled parameters at stage.lr_scale times that rate, their
    data-scaled decay times stage.decay_scale."""
    scaled = {id(param) for param in stage.scaled}
    peak = settings.lr * (settings.cap(n)[1] if extended else 1.0)
    groups = []
    for param in stage.params:
        own = id(param) in scaled
        decay = 0.0
        lr = peak * (stage.lr_scale if own else 1.0)
        if param.dim() >= 3:
            decay = settings.weight_decay + (settings.weight_decay_scale * param.shape[-1] / n
                                             * (stage.decay_scale if own else 1.0))
            if lr > 0.0:
                decay = min(decay, DECAY_STEP_LIMIT / lr)
        groups.append({"params": [param], "weight_decay": decay, "lr": lr})
    return groups
