"""Watching a fit: the per-epoch history of a fit report, a progress bar, and TensorBoard.

After every epoch of every stage, :class:`FitMonitor` records for each trial what the fit
measures about itself (no hidden reward is read): the mean loss of the epoch's mini-batches,
the indicator (Eq. 9, importance-weighted, on the training log), the corrector's statistic
after the corrector, and whether the corrector flipped the decoder. The attempt number counts
the adaptive restarts. A single fit with ``progress`` shows a bar (``tqdm.auto``: a text bar
on a terminal, a widget in a notebook); with ``logdir``, the same measures go to TensorBoard
under CleanRL-style names (``losses/<stage>_loss``, ``charts/indicator``,
``charts/corrector_statistic``, ``charts/flipped``, ``charts/attempt``), one scalar per epoch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch

from iglearn.errors import IGLearnError
from iglearn.learners.training import Stage
from iglearn.learners.trials import Batch
from iglearn.progress import progress_bar

TENSORBOARD_HINT = "install TensorBoard with: pip install -e '.[tensorboard]'"


@dataclass
class EpochRecord:
    """One epoch of one stage of a fit, as the fit measured it."""

    attempt: int
    """Initialisation tried (0 the first; each restart adds one)."""
    stage: str
    """The stage: grounding, policy or exact."""
    epoch: int
    """Epoch within the stage, from 0; in a stage that a small log extends, which is recorded
    once per window of ``window`` steps, the window's last epoch."""
    loss: float
    """Mean over the epoch's mini-batches of the loss the stage minimises (minus its
    objective)."""
    indicator: float
    """Eq. 9, importance-weighted, on the training log after the epoch (and the corrector):
    on its first ``MONITOR_ROWS`` (16384) interactions (:mod:`iglearn.learners.batch_igl`)."""
    corrector_statistic: float
    """Uniform-weighted share of feedback the decoder calls a reward, after the corrector."""
    flipped: bool
    """Whether the corrector flipped the decoder after this epoch."""


class ShortReport:
    """A fit report that prints as a short summary: numbers to four significant digits, a
    list of more than four values as its first four and its length, a list of epoch
    records as their count, and warnings one per line (``str``; ``repr`` counts them). The
    fields themselves keep everything (``report.history``: every epoch)."""

    def _items(self) -> list[tuple[str, object]]:
        return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(cast(Any, self))]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(
            f"{name}={_brief(value, name)}" for name, value in self._items()) + ")"

    def __str__(self) -> str:
        lines = [type(self).__name__]
        for name, value in self._items():
            if name == "warnings" and isinstance(value, list):
                lines += [f"  warning: {text}" for text in value] or ["  warnings: none"]
            else:
                lines.append(f"  {name}: {_brief(value, name)}")
        return "\n".join(lines)


def _brief(value: object, name: str) -> str:
    """``value`` as :class:`ShortReport` shows it."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        if name == "warnings":
            return f"<{len(value)} warnings>"
        if value and isinstance(value[0], EpochRecord):
            return f"<{len(value)} epoch records>"
        shown = ", ".join(_brief(item, name) for item in value[:4])
        return f"[{shown}, ... ({len(value)} values)]" if len(value) > 4 else f"[{shown}]"
    return repr(value)


def summary_writer(logdir: str | Path) -> Any:
    """A TensorBoard ``SummaryWriter`` on ``logdir``, or an error naming the extra to
    install."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise IGLearnError(f"--logdir {logdir}: TensorBoard is not installed; "
                           f"{TENSORBOARD_HINT}") from None
    return SummaryWriter(log_dir=str(logdir))


class FitMonitor:
    """Collects the history of T trials fitted side by side, and shows or logs it."""

    def __init__(self, trials: int, progress: bool = False, logdir: str | Path | None = None):
        self.history: list[list[EpochRecord]] = [[] for _ in range(trials)]
        """Per trial, its epochs in order."""
        self.progress = progress and trials == 1
        self.writers = []
        if logdir is not None:
            folders = ([Path(logdir)] if trials == 1
                       else [Path(logdir) / f"trial_{t}" for t in range(trials)])
            self.writers = [summary_writer(folder) for folder in folders]
        self.steps = [0] * trials
        self.attempt, self.pending = 0, list(range(trials))
        self._sum: torch.Tensor | None = None
        self._batches = 0
        self._bar: Any = None

    def start_attempt(self, attempt: int, pending: Sequence[int]) -> None:
        """The fit's next initialisation, of the trials numbered ``pending``."""
        self.attempt, self.pending = attempt, list(pending)

    def start_fit(self, total_epochs: int) -> None:
        """The stages of one attempt begin: ``total_epochs`` epochs in all."""
        if self.progress:
            self._close_bar()
            self._bar = progress_bar(total_epochs, f"fit (attempt {self.attempt})")

    def watch(self, stage: Stage) -> Stage:
        """``stage`` with a loss (and closed form, if it has one) that also adds each
        mini-batch's loss to the epoch's sum."""
        closed_form = stage.closed_form
        return dataclasses.replace(stage, loss=self._summed(stage.loss), closed_form=(
            None if closed_form is None else self._summed(closed_form)))

    def _summed(self, inner: Callable[[Batch], torch.Tensor]
                ) -> Callable[[Batch], torch.Tensor]:
        """``inner``, also adding each mini-batch's loss to the epoch's sum."""
        def loss(batch: Batch) -> torch.Tensor:
            value = inner(batch)
            detached = value.detach()
            self._sum = detached if self._sum is None else self._sum + detached
            self._batches += 1
            return value
        return loss

    def epoch(self, stage: str, epoch: int, indicators: Sequence[float],
              statistics: Sequence[float], flipped: Sequence[bool]) -> None:
        """Record the epoch just finished (one value per pending trial)."""
        losses = ((self._sum / max(self._batches, 1)).tolist() if self._sum is not None
                  else [float("nan")] * len(self.pending))
        self._sum, self._batches = None, 0
        for i, t in enumerate(self.pending):
            record = EpochRecord(self.attempt, stage, epoch, float(losses[i]),
                                 float(indicators[i]), float(statistics[i]), bool(flipped[i]))
            self.history[t].append(record)
            if self.writers:
                self._write(self.writers[t], record, self.steps[t])
            self.steps[t] += 1
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix(stage=stage, indicator=f"{indicators[0]:.3f}",
                                  statistic=f"{statistics[0]:.3f}")

    @staticmethod
    def _write(writer: Any, record: EpochRecord, step: int) -> None:
        writer.add_scalar(f"losses/{record.stage}_loss", record.loss, step)
        writer.add_scalar("charts/indicator", record.indicator, step)
        writer.add_scalar("charts/corrector_statistic", record.corrector_statistic, step)
        writer.add_scalar("charts/flipped", float(record.flipped), step)
        writer.add_scalar("charts/attempt", record.attempt, step)

    def _close_bar(self, finished: bool = True) -> None:
        if self._bar is not None:
            if finished:  # the epochs the attempt ran, fewer than its most
                self._bar.total = self._bar.n
            self._bar.close()
            self._bar = None

    def close(self, finished: bool = True) -> None:
        """Close the progress bar and flush and close the TensorBoard writers; ``finished``
        False (an error or an interruption stopped the fit) leaves the bar at the epochs
        done of the attempt's total, so that it says where the fit stopped rather than that
        it was done."""
        self._close_bar(finished)
        for writer in self.writers:
            writer.close()
