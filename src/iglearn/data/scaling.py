"""Scale-free inputs: the one preprocessing step every learner applies to contexts and
feedback before its models see them, with statistics of the log it was fitted on.

A :class:`Standardiser` holds, per column, a mean and a scale of the contexts and of the
feedback, and maps x to (x - mean) / scale, the scale being the column's standard deviation
over ROW_SPREAD / √d (:data:`ROW_SPREAD`, d the block's non-constant columns), so that the
block's rows spread as the learners' defaults are tuned for. A learner takes the statistics
of its training log when it fits (:meth:`Standardiser.of_log`, or for a log streamed from disk
:meth:`Standardiser.of_stream`, one extra pass over it), keeps them with its models (a model
folder's ``model.json`` records them, :meth:`Standardiser.to_dict`) and applies them wherever
its models read a context or a feedback vector: ``predict``, ``predict_proba``, ``evaluate``,
the service's decisions, the coba plug-in. A raw log (voxel intensities around 35 with a
spread of a few hundredths, say) then fits as its standardised copy would, and the weight
decay and the initialisations, which assume inputs of unit scale, mean what they say.

Which blocks are standardised: the learners' ``standardise`` setting (:data:`MODES`) is
``"on"`` (both blocks, always), ``"off"`` (neither: the learner keeps no standardiser) or
``"auto"`` (the default): each block, the contexts and the feedback, is standardised only
when it is off the unit scale the learners' defaults (initialisation, learning rate, weight
decay, decoder temperature) are tuned for (:func:`off_scale`): some column's mean beyond
±:data:`MAX_MEAN` or standard deviation above :data:`MAX_STD`, or the block's RMS column mean
above :data:`MAX_RMS_MEAN` or RMS standard deviation below :data:`MIN_RMS_STD`, or every
column z-scored already (:func:`z_scored`: a
unit spread, too wide for the defaults on many columns, which it then narrows). Images
scaled to [0, 1], one-hot tokens and the built-in simulators' features are on that scale and
are left as they are (the block keeps identity statistics, mean 0 and scale 1, so one code
path applies them); values around 35, counts averaging more than 1 or milliseconds are not.
Each block records its
rule (:data:`RULES`): ``"on"``, ``"auto: off scale"`` (standardised) or ``"auto: unit
scale"`` (left as it is), a standardised block with one scale (below) followed by
:data:`ONE_SCALE` (``"auto: off scale, one scale"``).

The statistics of a standardised block:

- contexts: unweighted mean and standard deviation of the log's contexts. A context is drawn
  before the action, so its law does not depend on the logging policy;
- feedback: mean and standard deviation weighted by the importance weight 1/p of each row, so
  that they describe the feedback of uniform play, whatever policy logged the log (under
  uniform logging every row weighs the same);
- a column whose standard deviation is 0 (a constant column; below float32's resolution, 2^-23
  of its mean's size, or 1e-12, which is rounding) has scale 1: it is centred, never divided
  by zero;
- every other column, a near-constant one (a pixel lit in a few images) included, is divided
  by its own standard deviation and multiplied by ROW_SPREAD / √d, as z-scoring by hand and
  then narrowing does: a raw log then fits as the same log z-scored by hand would (which
  "auto" narrows the same way), up to rounding. (A floor on the scales of near-constant columns
  made the two differ by several points on single small fits of images, with no gain in
  accuracy over many.) A block the learner's ``same_unit`` setting (:data:`SAME_UNIT`) names
  as measured in one unit (an image's pixels, a voxel pattern, electrode voltages) has one
  scale for all its non-constant columns instead, its RMS standard deviation times
  √d / ROW_SPREAD (:func:`scales`): the rows spread as much, and the columns keep their
  relative spreads, so a rarely lit pixel stays quiet instead of being raised to the spread
  of the others. Columns of mixed units (counts beside milliseconds) need a scale each, which
  is the default: no statistic of the log tells the two kinds apart reliably (a near-constant
  pixel and a count of a few both have a standard deviation far below the block's);
- the standardised values are clipped to ±:data:`CLIP` standard deviations of their column
  (the block's limit, :func:`clip_limit`, kept with the statistics), so that a rare value far
  out (a near-constant column's lit pixel) weighs no more than a common one (with one scale:
  ±CLIP times the block's RMS column spread, the same limit); a block left as it is is never
  clipped;
- a column that a few far values dominate (:func:`outlying_columns`: at most
  :data:`OUTLIER_SHARE` of its rows beyond Tukey's far-out fences, and a standard deviation
  above :data:`INFLATION` times the one its quartiles imply: a tab left open for an hour
  among dwell times of seconds, a sensor's glitch) is centred at its median and scaled by
  its interquartile range over 1.349 instead, so that its other rows spread as a clean
  column's and the far values are clipped at the limit; by its mean and standard deviation
  the rows would crowd at one value: with 1 % of such rows in four columns of dwell times,
  2021 IGL fitted 2,000 digits interactions to 31.3 % (88.7 % without them). The quartiles
  are read from a uniform sample of at most :data:`SAMPLE_ROWS` rows taken in the same pass
  (all of a smaller log); "auto" decides whether to standardise a block on every value, far
  ones included. No column of the built-in tasks (images, one-hot words, the BCI's
  patterns), as given or raw, is outlying: their lit pixels lie out in many rows, not a few;
- standardised feedback that is sparse (:func:`sparse_block`: its columns hold their least
  value in at least :data:`SPARSE_SHARE` of the rows, as an image's blank pixels, zero
  counts and absent words do) and of many columns (its limit at most :data:`MAX_SHIFT`: 36
  columns or more) is then shifted by its limit
  (:attr:`Standardiser.feedback_offset`), so that its values lie in [0, 2 limit], never
  negative, as the [0, 1] images and one-hot tokens the decoders' defaults (initialisation,
  temperature) are tuned on; standardised contexts stay centred. Centred sparse feedback
  fits worse: the 2021 task's feedback images on digits, centred by hand and otherwise as
  given, fitted 500 interactions to 53.8 / 3.2 % (mean / worst of 16 seeds) against 81.3 /
  75.5 % as given, and 81.8 / 64.0 % shifted by +1. On raw digits logs the shift raised IGL
  at 500 interactions from 57.5 to 74.8 % and IGL-P at 2,000 from 67.1 to 77.7 %
  (docs/results.md, "Feedback shifted to non-negative values"); shifting the contexts as
  well cost IGL-P most of its accuracy (20.3 %). Dense feedback (measurements: dwell times
  in milliseconds, voxel intensities) stays centred: shifted, a few columns of dwell times
  fitted 1,000 digits interactions to 22.3 % (IGL) and 10.8 % (AI-IGL), centred to 86.9 and
  82.9 %; and so does sparse feedback of few columns, whose limit is large (3 for 4 columns of
  click counts): shifted, such counts (under ``standardise="on"``; "auto" reads counts of a
  few as they were logged) fitted 1,000 digits interactions to 38.8 % (IGL) and
  21.0 % (AI-IGL), centred to 86.0 and 81.0 % (docs/results.md, "Dense feedback is
  centred, sparse feedback shifted");
  VI-IGL, whose critics read the feedback, keeps it centred (its ``origins`` are ("mean",
  "mean")): shifted, its raw digits fits fell from 89.4 to 15.7 % at 2,000 interactions;
- where a standardised block's zero lies is each learner's (``origins``, :data:`ORIGINS`,
  one per block; by default :data:`DEFAULT_ORIGINS`, the contexts centred and the feedback
  shifted by its limit where it is sparse and of many columns, centred otherwise). IGL-P
  reads both blocks from each column's least value in the log ("least": the values shifted
  by (mean - least) / scale per column, :attr:`Standardiser.context_offset`, and clipped no
  lower than that least value; a least value beyond the clip limit, a far outlier, leaves
  the zero at the limit), so that an unlit pixel, an absent word or a quiet electrode reads
  0 as in the tasks' own features: its inverse-kinematics model reads the product of the
  context and the feedback, a conjunction only where absence is 0 (:attr:`IGLP.origins
  <iglearn.learners.iglp.IGLP.origins>`).

The moments are accumulated block by block in float64 with the parallel update of Chan et
al. (Welford's update for a block of rows), each column's least value and the weight of its
rows at it beside them, and the sample by reservoir sampling drawn row by row from a fixed
seed, so the statistics of a log in memory and of the same log streamed agree up to
rounding (a data-parallel fit pools its processes' samples: all of their rows where they fit
in :data:`SAMPLE_ROWS`, a sample in proportion otherwise). The online learners accumulate
them the same way over the interactions they have seen when their first fit is due (the
warm-up) and keep them from then on (:attr:`Standardiser.method` says how the statistics
were taken).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from iglearn.errors import IGLearnError, shown

if TYPE_CHECKING:
    from iglearn.data.logs import InteractionLog
    from iglearn.data.stream import Block, LogStream

METHODS = ("log", "stream", "warm-up")
"""How a standardiser's statistics were taken: from the whole log in memory, in one extra
pass over a log streamed from disk, or from an online learner's interactions before its
first fit."""

MODES = ("auto", "on", "off")
"""The values of a learner's ``standardise`` setting (see the module docstring)."""

Mode = Literal["auto", "on", "off"]
"""The type of a learner's ``standardise`` setting."""

SAME_UNIT = ("none", "context", "feedback", "both")
"""The values of a learner's ``same_unit`` setting: the blocks measured in one unit, whose
columns share one scale when the block is standardised (see the module docstring)."""

SameUnit = Literal["none", "context", "feedback", "both"]
"""The type of a learner's ``same_unit`` setting."""

ORIGINS = ("mean", "limit", "least", "sparse")
"""Where a standardised block's zero lies (a learner's ``origins``, one per block; see the
module docstring): at each column's mean (values in [-limit, limit]), at the mean less the
clip limit (values in [0, 2 limit]), at each column's least value in the log, if no
farther below its mean than the clip limit (values in [0, (mean - least) / scale + limit],
within [0, 2 limit]; :func:`origin_offset`), or at the mean less the clip limit for a sparse
block of many columns (:func:`sparse_block`, a limit at most :data:`MAX_SHIFT`) and at each
column's mean for any other."""

Origin = Literal["mean", "limit", "least", "sparse"]
"""The type of an entry of a learner's ``origins``."""

Origins = tuple[Origin, Origin]
"""The origins of the contexts and of the feedback."""

DEFAULT_ORIGINS: Origins = ("mean", "sparse")
"""The learners' origins unless they say otherwise: the contexts centred, the feedback
shifted to non-negative values by its limit where it is sparse and of many columns, centred
otherwise (:func:`sparse_block`, :data:`MAX_SHIFT`)."""

SPARSE_SHARE = 0.1
"""A block is sparse (:func:`sparse_block`) where its non-constant columns hold their least
value in at least this share of the rows, on average (weighted as the block's moments): an
image's blank pixels (the digits task's feedback images, 0.45; raw, 35 + 0.05 x, alike), zero
counts, absent words. Measurements (milliseconds, voxel intensities, the simulated BCI's
0.001) hold it once."""

MAX_SHIFT = 1.0
"""Origin "sparse" shifts a sparse block by its clip limit only where that limit is at most
this: a block of at least 36 non-constant columns (at :data:`ROW_SPREAD` and :data:`CLIP`),
whose shifted values then lie in [0, 2 limit] as the [0, 1] images the decoders are tuned
on do. A block of fewer columns has a larger limit (3 for 4 columns), and shifted by it, its
rows would move every decoder's initial output far off its middle (a linear decoder's
initial logit spreads by about limit / √3 from the shift alone); it stays centred."""

Offset = float | np.ndarray
"""A standardised block's shift (:func:`origin_offset`): one number for every column, or one
per column."""

ONE_SCALE = ", one scale"
"""What a standardised block's rule ends with when its columns share one scale."""

RULES = ("on", "auto: off scale", "auto: unit scale", "not read")
"""What was done to a block and why: standardised as ``standardise`` is "on", standardised as
it is off the unit scale ("auto"), left as it is, on the unit scale ("auto"), or no block (the
feedback of a learner that does not read it)."""

MAX_MEAN = 3.0
""""auto" standardises a block with some column's mean beyond ±3 (values around 35, counts,
milliseconds); [0, 1] images and z-scored features have means within ±1."""

MAX_STD = 3.0
"""... or with some column's standard deviation above 3; the built-in environments' columns
have standard deviations of at most 1.5."""

MAX_RMS_MEAN = 1.0
"""... or whose RMS column mean is above 1: counts averaging more than 1 (clicks), which a
decoder reads as logged far off its middle, as it reads feedback shifted by a large limit
(:data:`MAX_SHIFT`). [0, 1] images and one-hot words have at most 1, every built-in
environment's block at most 0.81 (the continuous personalised simulator's feedback). Four
columns of clicks drawn Poisson(1 + 3 r), read as logged, fitted 500 digits interactions to
22.5 % (2021 IGL), 22.3 % (AI-IGL) and 17.2 % (VI-IGL), and standardised (centred: few
columns) to 73.1, 55.5 and 72.0 % (docs/results.md, "Counts averaging more than 1 are
standardised")."""

MIN_RMS_STD = 0.15
"""... or whose RMS standard deviation over its columns is below 0.15 (a block measured in
units too large for its spread: the digits task's images scaled by 0.05). The built-in
environments' blocks on the unit scale have 0.197 (the digits task's feedback images) to 0.9;
the simulated BCI's, 0.02 to 0.2 by its noise level, are standardised below 0.15. On digits
logs of 1,000 interactions with both blocks scaled by s (docs/results.md, "Blocks of a small
spread are standardised"), leaving them as they are cost every learner but AI-IGL accuracy
from s = 0.5 (RMS 0.135 and 0.099; CB 84.0 against 86.5 %) and much more at s = 0.3 (IGL-P
35.9 against 68.9 %), where at s = 0.7 (0.19 and 0.14) read as logged did as well or better
(AI-IGL 86.3 against 84.4 %) but for SUP (89.7 against 90.7 %)."""

ROW_SPREAD = 2.0
"""The spread of a standardised block's rows, the square root of its columns' summed
variances: each of its d non-constant columns gets the standard deviation ROW_SPREAD / √d
(:func:`column_spread`): 0.25 for 64 columns, 1 for 4. Unit z-scores on many columns are
too wide for the learners' defaults (initialisation, learning rate, weight decay, decoder
temperature), which are tuned for [0, 1] images and the like, and they widen an image's rare
pixels most: on raw digits logs (64 columns) 2021 IGL fitted 500 interactions to 21 % and
IGL-P 2000 to 14 % at unit spread, against 67 % and 82 % on the features as given
(docs/results.md, "Small logs"). On few columns unit z-scores fit well (a 4-column service
log needed no more), and ROW_SPREAD keeps them. A learner tuned otherwise says so
(``row_spread``): the baselines CB and SUP standardise to unit z-scores."""

CLIP = 3.0
"""Standardised values are clipped to ±CLIP standard deviations of their column (±0.75 for a
64-column block at :data:`ROW_SPREAD`): a rare large value (an image's edge pixel, lit in a
few rows out of hundreds, lies ten or more of its column's standard deviations out) then
weighs no more than a common one, where it would otherwise sway a linear model fitted on a
few hundred interactions. A normal column loses 0.27 % of its values' tails. Measured on raw
digits logs (docs/results.md, "Clipped standardised values"): 3 and 4 raise the mean
accuracy of every learner by 0.5 to 1.4 points at 2,000 interactions; 2 raised it most on
digits but clips 4.6 % of a normal column, which a feedback whose tail carries the signal
(a slow reaction, say) would lose. A model saved without a limit (before it existed) is
not clipped."""

Z_MEAN = 0.25
"""A block is z-scored already (:func:`z_scored`) when every column's mean is within ±0.25
..."""

Z_STD = (0.75, 1.25)
"""... and every non-constant column's standard deviation within 0.75 to 1.25 (a log
z-scored by hand; its feedback's importance-weighted moments drift from 0 and 1 under a
non-uniform logging policy)."""

_CONSTANT = float(np.finfo(np.float32).eps)
"""A column whose standard deviation is at most this fraction of its mean's size (or 1e-12)
is constant: its scale is 1. The fraction is float32's resolution (2^-23, one step between
neighbouring float32 values at the mean's size; logs hold float32 values): a column that only
rounding moves, its values one or two float32 steps apart, is constant, and one that moves by
a few steps, values around 1e5 varying by a few hundredths, is not. (A fraction of 1e-6 took
such columns for constant and left their few hundredths unscaled beside unit z-scores:
digits contexts times 0.05 plus 1e5 fitted 1,000 interactions to 23 % against 87 %.)"""


CHUNK_ROWS = 2048
"""Rows of a log :class:`Moments` takes at a time."""

SAMPLE_ROWS = 1024
"""Rows of a log :class:`Moments` keeps as a uniform sample (all of a smaller log), from
which :func:`outlying_columns` reads each column's quartiles."""

SAMPLE_SEED = 20211
"""The seed of that sample's draws (reservoir sampling, Vitter's algorithm R): the same log
gives the same sample, in memory or streamed in blocks of any size."""

FENCE = 3.0
"""A value lies out when it is more than FENCE interquartile ranges below its column's first
quartile or above its third (Tukey's far-out fences)."""

OUTLIER_SHARE = 0.05
"""A column is outlying (:func:`outlying_columns`) only when at most this share of its rows
(by weight) lies out: a rare far value (a tab left open for an hour beside dwell times of
seconds), not a common one (an image's lit pixels, 7 % to 19 % of the digits task's rows out
in the columns where the quartiles differ)."""

INFLATION = 4.0
"""... and its standard deviation exceeds INFLATION times the one its quartiles imply
(IQR / 1.349, a normal column's): the rare values dominate it. The built-in tasks' columns
with at most :data:`OUTLIER_SHARE` of their rows out have at most 3.0 (digits), 1.9 (MNIST);
four columns of dwell times with 1 % of the rows of one column replaced by a value of minutes
to an hour have about 100."""

NORMAL_IQR = 1.349
"""The interquartile range of a standard normal law: IQR / NORMAL_IQR is a standard
deviation that a few far values do not move."""


class Moments:
    """Running weighted mean and sum of squared deviations per column (float64), each
    column's least value and the weight of its rows there, updated a block of rows at a time
    (Chan et al.'s parallel form of Welford's update), and a uniform sample of at most
    :data:`SAMPLE_ROWS` rows with their weights (Vitter's reservoir algorithm R, drawn from
    :data:`SAMPLE_SEED` row by row, so blocks of any size give the same sample), whose
    quartiles tell an outlying column (:func:`outlying_columns`)."""

    def __init__(self, dim: int):
        self.weight = 0.0
        self.mean = np.zeros(dim, np.float64)
        self.squares = np.zeros(dim, np.float64)
        self.least = np.full(dim, np.inf)
        self.floor = np.zeros(dim, np.float64)
        self.rows = 0
        """Rows offered to the sample so far."""
        self.sample = np.zeros((0, dim), np.float64)
        self.sample_weight = np.zeros(0, np.float64)
        self._draws = np.random.default_rng(SAMPLE_SEED)
        self._outlying: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, values: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Add rows ``values`` (n, dim), each of weight ``weights`` (n,) (default 1), a chunk
        of :data:`CHUNK_ROWS` rows at a time (each chunk converted to float64 alone, so that
        a large log costs no float64 copy of itself and stays in the processor's cache)."""
        for start in range(0, len(values), CHUNK_ROWS):
            stop = start + CHUNK_ROWS
            self._add_chunk(values[start:stop], None if weights is None else weights[start:stop])

    def _add_chunk(self, values: np.ndarray, weights: np.ndarray | None) -> None:
        """The parallel update with one chunk of rows, and the sample's."""
        values = np.asarray(values, np.float64)
        if len(values) == 0:
            return
        least = values.min(0)
        at_least = values == least
        if weights is None:
            w = np.ones(len(values))
            total = float(len(values))
            mean = values.sum(0) / total
            squares = np.square(values - mean).sum(0)
            floor = at_least.sum(0, dtype=np.float64)
        else:
            w = np.asarray(weights, np.float64)
            total = float(w.sum())
            mean = (w @ values) / total
            squares = w @ np.square(values - mean)
            floor = w @ at_least
        self._merge(total, mean, squares, least, floor)
        self._offer(values, w)

    def _offer(self, values: np.ndarray, weights: np.ndarray) -> None:
        """Reservoir sampling (algorithm R): the first :data:`SAMPLE_ROWS` rows fill the
        sample; row i after them replaces a uniform draw j of 0, ..., i where j is a place
        in the sample."""
        room = max(0, SAMPLE_ROWS - len(self.sample))
        if room:
            self.sample = np.concatenate([self.sample, values[:room]])
            self.sample_weight = np.concatenate([self.sample_weight, weights[:room]])
        rest = len(values) - min(room, len(values))
        if rest > 0:
            seen = self.rows + len(values) - rest
            place = self._draws.integers(0, np.arange(seen, seen + rest) + 1)
            kept = np.flatnonzero(place < SAMPLE_ROWS)  # rows of the chunk's last ``rest``
            # a place drawn twice keeps the later row, as one row at a time would
            later = kept[len(kept) - 1 - np.unique(place[kept][::-1], return_index=True)[1]]
            self.sample[place[later]] = values[-rest:][later]
            self.sample_weight[place[later]] = weights[-rest:][later]
        self.rows += len(values)
        self._outlying = None

    def _merge(self, total: float, mean: np.ndarray, squares: np.ndarray,
               least: np.ndarray, floor: np.ndarray) -> None:
        """Chan et al.'s update with the moments of other rows: their weight ``total``, mean,
        sum of squared deviations, least values and the weight of their rows at them
        (``floor``)."""
        self._outlying = None
        if total == 0.0:
            return
        self.floor = np.where(least < self.least, floor,
                              np.where(least == self.least, self.floor + floor, self.floor))
        self.least = np.minimum(self.least, least)
        if self.weight == 0.0:
            self.weight, self.mean, self.squares = total, mean, squares
            return
        delta = mean - self.mean
        combined = self.weight + total
        self.mean = self.mean + delta * (total / combined)
        self.squares = self.squares + squares + np.square(delta) * (self.weight * total
                                                                    / combined)
        self.weight = combined

    def packed(self) -> np.ndarray:
        """These moments as one vector, the part of one process that :meth:`across` gathers:
        weight, means, sums of squared deviations, least values, the weight at them, the rows
        offered to the sample, its size, and the sample and its weights padded to
        :data:`SAMPLE_ROWS` rows."""
        d, size = len(self.mean), len(self.sample)
        sample = np.zeros((SAMPLE_ROWS, d + 1))
        sample[:size, :d], sample[:size, d] = self.sample, self.sample_weight
        return np.concatenate([[self.weight], self.mean, self.squares, self.least, self.floor,
                               [self.rows, size], sample.ravel()])

    def across(self, reducer: Any) -> Moments:
        """The moments of the rows of every process of a data-parallel fit, merged in the
        processes' order (``reducer``: a :class:`~iglearn.learners.trials.Reducer`); the
        samples are pooled (:meth:`_pool`)."""
        import torch

        d = len(self.mean)
        merged = Moments(d)
        parts = []
        for part in reducer.gather(torch.from_numpy(self.packed())).numpy():
            merged._merge(float(part[0]), part[1:1 + d], part[1 + d:1 + 2 * d],
                          part[1 + 2 * d:1 + 3 * d], part[1 + 3 * d:1 + 4 * d])
            rows, size = int(part[1 + 4 * d]), int(part[2 + 4 * d])
            sample = part[3 + 4 * d:].reshape(SAMPLE_ROWS, d + 1)[:size]
            parts.append((rows, sample[:, :d], sample[:, d]))
        merged._pool(parts)
        return merged

    def _pool(self, parts: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
        """The sample of the processes' rows from each one's (rows offered, sample, weights):
        all their sampled rows where they fit in :data:`SAMPLE_ROWS`, else that many drawn
        without replacement (from :data:`SAMPLE_SEED`), each with probability in proportion
        to the rows it stands for (a process's rows over its sample's size): a uniform sample
        of the whole log when every process's sample is, all of a log small enough."""
        values = np.concatenate([p[1] for p in parts])
        weights = np.concatenate([p[2] for p in parts])
        self.rows = sum(p[0] for p in parts)
        if len(values) > SAMPLE_ROWS:
            stands = np.concatenate([np.full(len(p[1]), p[0] / max(len(p[1]), 1))
                                     for p in parts])
            chosen = np.sort(np.random.default_rng(SAMPLE_SEED).choice(
                len(values), SAMPLE_ROWS, replace=False, p=stands / stands.sum()))
            values, weights = values[chosen], weights[chosen]
        self.sample, self.sample_weight = values, weights
        self._outlying = None

    def outlying(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(which columns are outlying, their medians, their robust standard deviations
        IQR / :data:`NORMAL_IQR`), from the sample (:func:`outlying_columns`); computed once
        per set of rows."""
        if self._outlying is None:
            _, std = self.moments()
            self._outlying = outlying_columns(self.sample, self.sample_weight, std)
        return self._outlying

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """(mean, standard deviation) of each column over every row."""
        return self.mean.copy(), np.sqrt(np.maximum(self.squares / max(self.weight, 1e-300),
                                                    0.0))

    def robust_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """(centre, spread) of each column of a standardised block: its mean and standard
        deviation, or for an outlying column (:func:`outlying_columns`) its median and
        IQR / :data:`NORMAL_IQR`, which its few far values do not move."""
        mean, std = self.moments()
        if not len(mean):
            return mean, std
        out, median, robust = self.outlying()
        return np.where(out, median, mean), np.where(out, robust, std)

    def floor_shares(self) -> np.ndarray:
        """The share of each column's rows (by weight) at its least value."""
        return self.floor / max(self.weight, 1e-300)

    def statistics(self) -> tuple[np.ndarray, np.ndarray]:
        """(mean, scale) of a standardised block (see :func:`scales`)."""
        mean, std = self.robust_moments()
        return mean, scales(mean, std)


def weighted_quantiles(values: np.ndarray, weights: np.ndarray,
                       levels: Iterable[float]) -> list[np.ndarray]:
    """Per column of ``values`` (n, d), the least value at or below which at least a share q
    of the rows' ``weights`` lies, for each q of ``levels`` (numpy's "inverted_cdf"
    quantile, which it is where the weights are equal); NaN for no row."""
    levels = list(levels)
    if len(values) == 0:
        return [np.full(values.shape[1], np.nan) for _ in levels]
    if np.all(weights == weights[0]):
        return list(np.quantile(values, levels, axis=0, method="inverted_cdf"))
    columns = np.ascontiguousarray(values.T)  # a row per column: sorted in place, fast
    order = np.argsort(columns, axis=1)  # tied values have equal weight sums either way
    ranked = np.take_along_axis(columns, order, 1)
    cumulative = np.cumsum(weights[order], axis=1)
    cumulative /= cumulative[:, -1:]
    found = []
    for q in levels:
        index = np.minimum((cumulative < q - 1e-12).sum(1), len(values) - 1)
        found.append(ranked[np.arange(len(columns)), index])
    return found


def outlying_columns(sample: np.ndarray, weights: np.ndarray, std: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which columns a few far values dominate, from a sample of the rows (n, d) with their
    weights and each column's standard deviation over every row: its quartiles differ, at
    most :data:`OUTLIER_SHARE` of the sample's weight lies beyond Tukey's far-out fences
    (:data:`FENCE` interquartile ranges past the quartiles), and ``std`` exceeds
    :data:`INFLATION` times IQR / :data:`NORMAL_IQR`. Returns that mask, each column's
    median and IQR / :data:`NORMAL_IQR`. Such a column's mean and standard deviation
    describe its outliers, not its rows: standardised by them, the rows crowd at one value
    (four columns of dwell times in milliseconds, in 1 % of the rows one of them a tab left
    open for minutes to an hour: 2021 IGL fitted 2,000 digits interactions to 31.3 % against
    88.7 % without them, VI-IGL to 14.6 % against 89.2 %; scaled by their quartiles, to 88.7
    and 88.5 %; docs/results.md, "Outlying columns are scaled by their quartiles")."""
    q1, median, q3 = weighted_quantiles(sample, weights, (0.25, 0.5, 0.75))
    spread = q3 - q1
    if len(sample) == 0:
        return np.zeros(len(std), bool), median, spread
    beyond = (sample < q1 - FENCE * spread) | (sample > q3 + FENCE * spread)
    share = (weights @ beyond) / max(float(weights.sum()), 1e-300)
    robust = spread / NORMAL_IQR
    out = (spread > 0) & (share <= OUTLIER_SHARE) & (std > INFLATION * robust)
    return out, median, robust


def rms(values: np.ndarray) -> float:
    """The RMS of a block's per-column values, its standard deviations or means (0 for a
    block of no columns)."""
    return float(np.sqrt(np.mean(np.square(values)))) if len(values) else 0.0


def constant_columns(mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """Which columns are constant: a standard deviation of at most :data:`_CONSTANT` of the
    mean's size, or 1e-12 (rounding)."""
    return std <= np.maximum(_CONSTANT * np.abs(mean), 1e-12)


def column_spread(columns: int, row_spread: float | None = ROW_SPREAD) -> float:
    """The standard deviation each of ``columns`` non-constant columns of a standardised
    block gets: ``row_spread`` / √columns, or 1 (unit z-scores) for ``row_spread`` None or
    no column."""
    if row_spread is None or columns == 0:
        return 1.0
    return row_spread / math.sqrt(columns)


def scales(mean: np.ndarray, std: np.ndarray,
           row_spread: float | None = ROW_SPREAD, one_scale: bool = False) -> np.ndarray:
    """The scale of each column of a standardised block: its standard deviation over
    :func:`column_spread` (the block's rows then spread ``row_spread``), or with
    ``one_scale`` (a block measured in one unit) the RMS standard deviation of the block's
    non-constant columns over it, for every one of them (the rows spread ``row_spread`` all
    the same, the columns keeping their relative spreads); 1 for a constant column."""
    constant = constant_columns(mean, std)
    spread = column_spread(int((~constant).sum()), row_spread)
    if one_scale:
        std = np.full_like(std, rms(std[~constant]))
    return np.where(constant, 1.0, std / spread)


def z_scored(mean: np.ndarray, std: np.ndarray) -> bool:
    """Whether a block looks z-scored already: some column is not constant, and every column
    is either constant or has a mean within ±:data:`Z_MEAN` and a standard deviation within
    :data:`Z_STD`."""
    constant = constant_columns(mean, std)
    if constant.all():
        return False
    low, high = Z_STD
    return bool(np.all(constant | ((np.abs(mean) <= Z_MEAN) & (std >= low) & (std <= high))))


def off_scale(mean: np.ndarray, std: np.ndarray) -> bool:
    """Whether a block of columns with these means and standard deviations is off the unit
    scale: some |mean| > :data:`MAX_MEAN`, some standard deviation > :data:`MAX_STD`, an
    RMS mean > :data:`MAX_RMS_MEAN`, an RMS standard deviation < :data:`MIN_RMS_STD`, or
    z-scored already (:func:`z_scored`, unit spread, which standardising narrows to
    :data:`ROW_SPREAD`); a block of no columns is on it."""
    if not len(mean):
        return False
    return bool(np.abs(mean).max() > MAX_MEAN or std.max() > MAX_STD
                or rms(mean) > MAX_RMS_MEAN or rms(std) < MIN_RMS_STD
                or z_scored(mean, std))


def check_mode(mode: object) -> Mode:
    """``mode`` if it is one of :data:`MODES`; otherwise an IGLearnError naming them."""
    if mode not in MODES:
        raise IGLearnError(f"standardise is {shown(mode)}; choose one of {', '.join(MODES)}")
    return cast(Mode, mode)


def check_same_unit(same_unit: object) -> SameUnit:
    """``same_unit`` if it is one of :data:`SAME_UNIT`; otherwise an IGLearnError naming
    them."""
    if same_unit not in SAME_UNIT:
        raise IGLearnError(f"same_unit is {shown(same_unit)}; choose one of "
                           f"{', '.join(SAME_UNIT)}")
    return cast(SameUnit, same_unit)


def check_origin(origin: object) -> Origin:
    """``origin`` if it is one of :data:`ORIGINS`; otherwise an IGLearnError naming them."""
    if origin not in ORIGINS:
        raise IGLearnError(f"origin is {shown(origin)}; choose one of {', '.join(ORIGINS)}")
    return cast(Origin, origin)


def check_users_unit(same_unit: SameUnit, users: object) -> None:
    """Refuse ``same_unit`` naming the contexts when they begin with a user id's one-hot
    features, which are not in the unit of the measurements after them: ``users`` is the
    learner's setting, true (a count, "auto") where it reads them (IGL-P's per-user grounding,
    a coba learner's user ids)."""
    if users and one_scale(same_unit, "context"):
        raise IGLearnError(f"same_unit={same_unit!r} names the contexts as measured in one "
                           f"unit, but they begin with the user id's one-hot features (users="
                           f"{users!r}); set same_unit to 'none' or 'feedback', or users to 0")


def one_scale(same_unit: SameUnit, block: str) -> bool:
    """Whether ``block`` ("context" or "feedback") is one ``same_unit`` names."""
    return same_unit in (block, "both")


def block_statistics(moments: Moments, mode: Mode, row_spread: float | None = ROW_SPREAD,
                     one: bool = False, origin: Origin = "mean"
                     ) -> tuple[np.ndarray, np.ndarray, str, float | None, Offset,
                                tuple[int, ...]]:
    """(mean, scale, rule, limit, offset, outlying) of a block under ``mode`` ("on" or
    "auto"): its statistics (:meth:`Moments.robust_moments`: an outlying column's median and
    quartiles; with ``one``, one scale for its columns, :func:`scales`), the clipping limit
    of its standardised values (:func:`clip_limit`) and their shift to the block's
    ``origin`` (:func:`origin_offset`) and its outlying columns (:func:`outlying_columns`)
    when it is standardised; identity statistics (0, 1), no limit, no shift and no outlying
    column when "auto" leaves it as it is."""
    mean, std = moments.moments()
    if not len(mean):
        return mean, std, "not read", None, 0.0, ()
    rule = "on" if mode == "on" else "auto: off scale" if off_scale(mean, std) else None
    if rule is None:
        return np.zeros_like(mean), np.ones_like(std), "auto: unit scale", None, 0.0, ()
    mean, std = moments.robust_moments()  # the rule read every value, far ones included
    scale, limit = scales(mean, std, row_spread, one), clip_limit(mean, std, row_spread)
    return (mean, scale, rule + ONE_SCALE if one else rule, limit,
            origin_offset(check_origin(origin), mean, scale, moments.least, limit,
                          sparse_block(moments)),
            tuple(int(c) for c in np.flatnonzero(moments.outlying()[0])))


def sparse_block(moments: Moments) -> bool:
    """Whether a block is sparse: its non-constant columns hold their least value in at least
    :data:`SPARSE_SHARE` of the rows on average (a block of constant columns is)."""
    mean, std = moments.moments()
    varying = ~constant_columns(mean, std)
    return not varying.any() or float(moments.floor_shares()[varying].mean()) >= SPARSE_SHARE


def origin_offset(origin: Origin, mean: np.ndarray, scale: np.ndarray, least: np.ndarray,
                  limit: float, sparse: bool) -> Offset:
    """What a standardised block's values are shifted by so that their zero lies at
    ``origin`` (:data:`ORIGINS`): nothing ("mean"), the clip ``limit`` ("limit"; "sparse"
    where the block is ``sparse`` and the limit at most :data:`MAX_SHIFT`, else nothing), or per
    column (mean - least) / scale, the column's least value in the log ("least"; never below
    0, a constant column's rounding included), but at most the clip limit: a least value
    farther below the mean (a far outlier, a missing value written as 0) would be clipped to
    the limit as any value beyond it is, so the zero lies there instead and the other values
    keep their place."""
    if origin == "limit" or origin == "sparse" and sparse and limit <= MAX_SHIFT:
        return limit
    if origin == "least":
        return np.clip((mean - least) / scale, 0.0, limit)
    return 0.0


def clip_limit(mean: np.ndarray, std: np.ndarray,
               row_spread: float | None = ROW_SPREAD) -> float:
    """The bound on a standardised block's values: :data:`CLIP` standard deviations of a
    non-constant column (:func:`column_spread`)."""
    return CLIP * column_spread(int((~constant_columns(mean, std)).sum()), row_spread)


@dataclass(frozen=True, eq=False)
class Standardiser:
    """Per-column means and scales of the contexts and the feedback (float64 arrays), and the
    rule each block followed; see the module docstring. ``apply`` and ``apply_feedback`` map
    rows to (x - mean) / scale in float32, clipped to the block's limit, the feedback then
    shifted by its offset (a block left as it is: only to float32)."""

    context_mean: np.ndarray
    """Mean of each context column, shape (d_x,)."""
    context_scale: np.ndarray
    """Scale of each context column (its standard deviation over :func:`column_spread`, 1
    if constant), shape (d_x,)."""
    feedback_mean: np.ndarray
    """Importance-weighted mean of each feedback column, shape (d_y,) ((0,): no feedback)."""
    feedback_scale: np.ndarray
    """Importance-weighted scale of each feedback column, shape (d_y,)."""
    method: str = "log"
    """How the statistics were taken: one of :data:`METHODS`."""
    context_rule: str = "on"
    """What was done to the contexts and why: one of :data:`RULES`, a standardised block's
    followed by :data:`ONE_SCALE` when its columns share one scale."""
    feedback_rule: str = "on"
    """What was done to the feedback and why (as ``context_rule``)."""
    context_limit: float | None = None
    """Standardised contexts are clipped to ±this (:func:`clip_limit`); None: not clipped (a
    block left as it is, or a model saved before clipping)."""
    feedback_limit: float | None = None
    """Standardised feedback is clipped to ±this; None: not clipped."""
    feedback_offset: Offset = 0.0
    """Added to standardised (and clipped) feedback (:func:`origin_offset`): the feedback
    limit, so that every value lies in [0, 2 limit] (origin "limit", the default; see the
    module docstring), or per column (mean - least) / scale (origin "least"); 0 for centred
    feedback, a block left as it is, or a model saved before the offset."""
    context_offset: Offset = 0.0
    """Added to standardised (and clipped) contexts, as ``feedback_offset``: 0 (centred, the
    default), or per column (mean - least) / scale (origin "least")."""
    context_outlying: tuple[int, ...] = ()
    """The context columns a few far values dominated (:func:`outlying_columns`), whose mean
    and scale are their median and interquartile range over 1.349; () in a model saved
    before iglearn looked for them."""
    feedback_outlying: tuple[int, ...] = ()
    """The feedback columns likewise."""

    def __post_init__(self) -> None:
        for name in ("context_mean", "context_scale", "feedback_mean", "feedback_scale"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), np.float64))
        for name in ("context_offset", "feedback_offset"):
            value = getattr(self, name)
            object.__setattr__(self, name, float(value) if np.ndim(value) == 0
                               else np.asarray(value, np.float64))
        for name in ("context_outlying", "feedback_outlying"):
            object.__setattr__(self, name, tuple(int(c) for c in getattr(self, name)))
        # float32 copies for apply: the arithmetic the models run in (None: left as it is)
        object.__setattr__(self, "_context", _factors(self.context_mean, self.context_scale,
                                                      self.context_rule, self.context_limit,
                                                      self.context_offset))
        object.__setattr__(self, "_feedback", _factors(self.feedback_mean, self.feedback_scale,
                                                       self.feedback_rule, self.feedback_limit,
                                                       self.feedback_offset))

    @property
    def rules(self) -> dict[str, str]:
        """Each block's rule, ``{"context": ..., "feedback": ...}`` (what a fit reports)."""
        return {"context": self.context_rule, "feedback": self.feedback_rule}

    # -- taking the statistics -----------------------------------------------------------
    @classmethod
    def of_arrays(cls, context: np.ndarray, feedback: np.ndarray | None = None,
                  probability: np.ndarray | None = None, method: str = "log",
                  mode: Mode = "on", row_spread: float | None = ROW_SPREAD,
                  origins: Origins = DEFAULT_ORIGINS,
                  same_unit: SameUnit = "none") -> Standardiser:
        """The statistics of contexts (n, d_x) and feedback (n, d_y) (none: no feedback is
        standardised), the feedback weighted by 1/``probability`` when given; ``mode`` "on"
        or "auto" (see :meth:`of_blocks`)."""
        return cls.of_blocks([{"context": np.asarray(context),
                               **({} if feedback is None else {"feedback": feedback}),
                               **({} if probability is None else {"probability": probability})}],
                             np.asarray(context).shape[1],
                             0 if feedback is None else np.asarray(feedback).reshape(
                                 len(context), -1).shape[1], method, mode,
                             row_spread=row_spread, origins=origins, same_unit=same_unit)

    @classmethod
    def of_log(cls, log: InteractionLog, feedback: bool = True,
               mode: Mode = "on", row_spread: float | None = ROW_SPREAD,
               origins: Origins = DEFAULT_ORIGINS,
               same_unit: SameUnit = "none") -> Standardiser:
        """The statistics of a log in memory: contexts, and (unless ``feedback`` is False)
        feedback weighted by 1/p."""
        return cls.of_arrays(log.context, log.feedback if feedback else None, log.probability,
                             "log", mode, row_spread, origins, same_unit)

    @classmethod
    def of_stream(cls, stream: LogStream, feedback: bool = True,
                  mode: Mode = "on", row_spread: float | None = ROW_SPREAD,
                  origins: Origins = DEFAULT_ORIGINS,
                  same_unit: SameUnit = "none", progress: bool = False) -> Standardiser:
        """The statistics of a log streamed from disk, in one pass over it (its chunks: the
        memory of a block, not of the log); equal to :meth:`of_log` of the same log up to
        rounding. ``progress``: a bar of the rows read
        (:func:`~iglearn.data.stream.watched`)."""
        from iglearn.data.stream import watched

        fields = ("context", "probability", "feedback") if feedback else ("context",)
        blocks = watched(stream.chunks(fields), len(stream), f"statistics of {stream.source}",
                         progress)
        return cls.of_blocks(blocks, stream.context_dim,
                             stream.feedback_dim if feedback else 0, "stream", mode,
                             getattr(stream, "reducer", None), row_spread, origins,
                             same_unit)

    @classmethod
    def of_blocks(cls, blocks: Iterable[Block], context_dim: int, feedback_dim: int,
                  method: str, mode: Mode = "on", reducer: Any = None,
                  row_spread: float | None = ROW_SPREAD,
                  origins: Origins = DEFAULT_ORIGINS,
                  same_unit: SameUnit = "none") -> Standardiser:
        """The statistics accumulated over blocks of rows (fields ``context`` and, when
        ``feedback_dim`` > 0, ``feedback``, weighted by 1/``probability`` if the block has
        it). ``mode`` "on" standardises both blocks; "auto" each block off the unit scale
        only (:func:`off_scale`), the other keeping identity statistics. With a
        ``reducer`` (a share of a data-parallel fit's log), the statistics of every share.
        ``origins``: where the zero of the standardised contexts and of the feedback lies
        (:data:`ORIGINS`; by default the contexts centred and the feedback shifted by its
        limit, :attr:`feedback_offset`). ``same_unit``: the blocks whose columns share one
        scale (:data:`SAME_UNIT`)."""
        if check_mode(mode) == "off":
            raise IGLearnError("standardise 'off' takes no statistics; the learner keeps no "
                               "standardiser")
        contexts, feedback = Moments(context_dim), Moments(feedback_dim)
        for block in blocks:
            contexts.add(block["context"])
            if feedback_dim:
                p = block.get("probability")
                y = np.asarray(block["feedback"]).reshape(len(block["context"]), -1)
                feedback.add(y, None if p is None else 1.0 / np.asarray(p, np.float64))
        if reducer is not None:
            contexts, feedback = contexts.across(reducer), feedback.across(reducer)
        same_unit = check_same_unit(same_unit)
        context_origin, feedback_origin = origins
        mx, sx, context_rule, context_limit, context_offset, context_out = block_statistics(
            contexts, mode, row_spread, one_scale(same_unit, "context"), context_origin)
        my, sy, feedback_rule, feedback_limit, feedback_offset, feedback_out = (
            block_statistics(feedback, mode, row_spread, one_scale(same_unit, "feedback"),
                             feedback_origin))
        return cls(mx, sx, my, sy, method, context_rule, feedback_rule, context_limit,
                   feedback_limit, feedback_offset, context_offset, context_out, feedback_out)

    @classmethod
    def identity(cls, context_dim: int, feedback_dim: int = 0) -> Standardiser:
        """Means 0 and scales 1, both blocks left as they are ("auto: unit scale")."""
        return cls(np.zeros(context_dim), np.ones(context_dim), np.zeros(feedback_dim),
                   np.ones(feedback_dim), "log", RULES[2], RULES[2])

    # -- applying them -------------------------------------------------------------------
    @property
    def context_dim(self) -> int:
        """d_x."""
        return len(self.context_mean)

    @property
    def feedback_dim(self) -> int:
        """d_y (0 when the feedback is not standardised)."""
        return len(self.feedback_mean)

    def apply(self, context: np.ndarray) -> np.ndarray:
        """Standardised contexts, float32 of the shape given ((n, d_x) or (d_x,))."""
        return _scaled(context, self.context_mean, self._context,  # type: ignore[attr-defined]
                       "context")

    def apply_feedback(self, feedback: np.ndarray) -> np.ndarray:
        """Standardised feedback vectors, float32 (n, d_y); unchanged (as float32) when this
        standardiser holds no feedback statistics."""
        if not self.feedback_dim:
            return np.asarray(feedback, np.float32)
        return _scaled(feedback, self.feedback_mean,
                       self._feedback, "feedback")  # type: ignore[attr-defined]

    def apply_block(self, block: Block) -> Block:
        """A block of rows with its ``context`` and ``feedback`` (those it has)
        standardised; the other fields as they were."""
        out = dict(block)
        if "context" in out and len(out["context"]):
            out["context"] = self.apply(out["context"])
        if "feedback" in out and self.feedback_dim:
            out["feedback"] = self.apply_feedback(out["feedback"])
        return out

    def apply_log(self, log: InteractionLog) -> InteractionLog:
        """The log with its contexts and feedback standardised (a copy)."""
        from iglearn.data.logs import InteractionLog

        return InteractionLog(self.apply(log.context), log.action, log.probability,
                              self.apply_feedback(log.feedback), log.n_actions, log.reward,
                              log.label, log.source, log.definitely_bad)

    # -- model.json ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (lists of floats), read back by :meth:`from_dict`."""
        return {"method": self.method, "context_rule": self.context_rule,
                "feedback_rule": self.feedback_rule,
                "context_mean": self.context_mean.tolist(),
                "context_scale": self.context_scale.tolist(),
                "feedback_mean": self.feedback_mean.tolist(),
                "feedback_scale": self.feedback_scale.tolist(),
                "context_limit": self.context_limit, "feedback_limit": self.feedback_limit,
                "context_offset": _offset_record(self.context_offset),
                "feedback_offset": _offset_record(self.feedback_offset),
                "context_outlying": list(self.context_outlying),
                "feedback_outlying": list(self.feedback_outlying)}

    @classmethod
    def from_dict(cls, record: object, where: str, context_dim: int,
                  feedback_dim: int | None = None) -> Standardiser:
        """The standardiser a :meth:`to_dict` record describes, checked: ``context_dim``
        finite means and positive finite scales, and ``feedback_dim`` of each (None: any
        number, 0 included). Raises IGLearnError naming ``where`` (the file) and the field."""
        def damaged(field: str, value: object, expected: str) -> IGLearnError:
            return IGLearnError(f"{where}: field 'standardiser{field}' is {shown(value)}; "
                                f"expected {expected}; the model is damaged, fit again")

        if not isinstance(record, dict):
            raise damaged("", record, "an object of means and scales")
        method = record.get("method")
        if method not in METHODS:
            raise damaged(".method", method, f"one of {', '.join(METHODS)}")
        rules = {name: record.get(name, "on") for name in ("context_rule", "feedback_rule")}
        for name, rule in rules.items():
            if not (rule in RULES or isinstance(rule, str) and rule.endswith(ONE_SCALE)
                    and rule.removesuffix(ONE_SCALE) in RULES[:2]):
                raise damaged(f".{name}", rule, f"one of {', '.join(RULES)}, the first two "
                                                f"may end with '{ONE_SCALE}'")
        values: dict[str, np.ndarray] = {}
        for name in ("context_mean", "context_scale", "feedback_mean", "feedback_scale"):
            value: Any = record.get(name)
            want = context_dim if name.startswith("context") else feedback_dim
            ok = (isinstance(value, list)
                  and all(isinstance(v, int | float) and not isinstance(v, bool)
                          and math.isfinite(v) for v in value)
                  and (want is None or len(value) == want))
            if ok and name.endswith("scale"):
                ok = all(v > 0 for v in value)
            if not ok or (name == "feedback_scale"
                          and len(value) != len(values["feedback_mean"])):
                size = "as many" if want is None else str(want)
                kind = "positive finite numbers" if name.endswith("scale") else "finite numbers"
                raise damaged(f".{name}", value if not isinstance(value, list)
                              else f"a list of {len(value)}", f"a list of {size} {kind}")
            values[name] = np.asarray(value, np.float64)
        limits = {name: record.get(name) for name in ("context_limit", "feedback_limit")}
        for name, limit in limits.items():  # absent or null: saved before clipping
            if limit is not None and not (isinstance(limit, int | float)
                                          and not isinstance(limit, bool)
                                          and math.isfinite(limit) and limit > 0):
                raise damaged(f".{name}", limit, "a positive finite number or null")
        offsets: dict[str, Offset] = {}
        for block in ("context", "feedback"):  # absent: saved before the offsets
            offset = record.get(f"{block}_offset", 0.0)
            columns = len(values[f"{block}_mean"])
            if _number_at_least_0(offset):
                offsets[block] = float(offset)
            elif (isinstance(offset, list) and len(offset) == columns
                  and all(_number_at_least_0(v) for v in offset)):
                offsets[block] = np.asarray(offset, np.float64)
            else:
                raise damaged(f".{block}_offset", offset if not isinstance(offset, list)
                              else f"a list of {len(offset)}",
                              f"a finite number >= 0 or a list of {columns} of them")
        outlying: dict[str, tuple[int, ...]] = {}
        for block in ("context", "feedback"):  # absent: saved before iglearn looked for them
            found = record.get(f"{block}_outlying", [])
            columns = len(values[f"{block}_mean"])
            if not (isinstance(found, list) and all(
                    isinstance(c, int) and not isinstance(c, bool) and 0 <= c < columns
                    for c in found)):
                raise damaged(f".{block}_outlying", found if not isinstance(found, list)
                              else f"a list of {len(found)}",
                              f"a list of column numbers from 0 to {columns - 1}")
            outlying[block] = tuple(found)
        return cls(values["context_mean"], values["context_scale"], values["feedback_mean"],
                   values["feedback_scale"], method, rules["context_rule"],
                   rules["feedback_rule"], limits["context_limit"], limits["feedback_limit"],
                   offsets["feedback"], offsets["context"], outlying["context"],
                   outlying["feedback"])


def _number_at_least_0(value: object) -> bool:
    """Whether ``value`` is a finite number >= 0 (not a bool)."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)


def _offset_record(offset: Offset) -> float | list[float]:
    """An offset as ``model.json`` records it: a number, or a list of one per column."""
    return float(offset) if np.ndim(offset) == 0 else np.asarray(offset).tolist()


Factors = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | np.float32 | None,
                np.float32 | None, np.ndarray | np.float32]
"""The float32 (mean, its rounding error, 1 / scale, lower bound or None, upper bound or None,
offset) :func:`_scaled` applies."""


def _standardised(rule: str) -> bool:
    """Whether a block under ``rule`` is standardised (not left as it is, nor unread)."""
    return rule not in (RULES[2], RULES[3])


def _factors(mean: np.ndarray, scale: np.ndarray, rule: str, limit: float | None,
             offset: Offset = 0.0) -> Factors | None:
    """The float32 :data:`Factors` ``apply`` uses; None for a block left as it is. The mean
    is kept as two float32 numbers, its float32 rounding and what that rounding left out.
    The values are clipped to [-limit, limit], or with an offset per column (origin
    "least") to [-offset, limit]: none below the column's zero (its least value in the log,
    or the limit below its mean)."""
    if not _standardised(rule):
        return None
    high = mean.astype(np.float32)
    upper = None if limit is None else np.float32(limit)
    per_column = np.ndim(offset) > 0
    lower = -np.asarray(offset, np.float32) if per_column else (
        None if upper is None else -upper)
    return (high, (mean - high).astype(np.float32), (1.0 / scale).astype(np.float32),
            lower, upper, np.asarray(offset, np.float32) if per_column else np.float32(offset))


def _unclipped(rows: np.ndarray, factors: Factors) -> np.ndarray:
    """Rows (float32) less the mean, in its two float32 steps (:func:`_scaled`), times
    1 / scale: the standardised values before clipping and shifting."""
    out = rows - factors[0]
    out -= factors[1]
    out *= factors[2]
    return out


def _scaled(rows: np.ndarray, mean: np.ndarray, factors: Factors | None,
            name: str) -> np.ndarray:
    """Rows (float32) less the mean, times 1 / scale, clipped and shifted as ``factors``
    say. The mean is taken off in two float32 steps, its rounding then what the rounding
    left out: a raw value and its column's mean agree in their leading digits (35.0x and
    35.0y), so the first difference is exact and the second puts back the mean's lost
    digits, and the result is the float64 arithmetic's up to float32 rounding (the mean
    rounded once to float32 shifts a column by up to 4e-5 of its standard deviation on values
    around 35 with a spread of a few hundredths, and a raw log then fits less like the same
    log z-scored by hand)."""
    rows = np.asarray(rows, np.float32)
    if rows.shape[-1:] != mean.shape:
        raise IGLearnError(f"the {name} vectors have {rows.shape[-1] if rows.ndim else 0} "
                           f"values but the model was fitted on {len(mean)}; give vectors of "
                           f"the fitted dimension")
    if factors is None:
        return rows
    out = _unclipped(rows, factors)
    lower, upper, offset = factors[3:]
    if lower is not None or upper is not None:
        np.clip(out, lower, upper, out=out)
    if np.any(offset):
        out += offset
    return out


DRIFT_SHARE = 0.5
"""A column of the rows a model reads has drifted (:func:`drift_warning`) when more than this
share of its values lie beyond the range the model reads (its clip limits). On the training
log itself, a column scaled by its standard deviation holds at most 1/9 of its values
beyond ±3 of them (Chebyshev), and an outlying column, scaled by its quartiles, a few per
cent."""

DRIFT_ROWS = 20
"""Fewest rows :func:`drift_warning` judges: a handful of contexts can all lie far out by
chance."""


def _block(standardiser: Standardiser, block: str
           ) -> tuple[np.ndarray, np.ndarray, str, Factors | None]:
    """The mean, scale, rule and float32 :data:`Factors` of ``block`` ("context" or
    "feedback")."""
    if block == "context":
        return (standardiser.context_mean, standardiser.context_scale,
                standardiser.context_rule, standardiser._context)  # type: ignore[attr-defined]
    return (standardiser.feedback_mean, standardiser.feedback_scale,
            standardiser.feedback_rule, standardiser._feedback)  # type: ignore[attr-defined]


def beyond_limits(standardiser: Standardiser, rows: np.ndarray, block: str
                  ) -> np.ndarray | None:
    """How many of ``rows`` (raw, of ``block`` "context" or "feedback") lie beyond the
    block's clip limits in each column, by more than a hundredth of the limit (past
    rounding): values the model reads as the limit; 0 for a constant column of the log, whose
    values it centres in their own units. None for a block that is not judged: left as it
    is (no limits), or standardised with one scale (a column may then spread past the limits
    in its own log)."""
    _, scale, rule, factors = _block(standardiser, block)
    if factors is None or rule.endswith(ONE_SCALE):
        return None
    lower, upper = factors[3], factors[4]
    if lower is None or upper is None:
        return None
    z = _unclipped(np.asarray(rows, np.float32).reshape(-1, len(scale)), factors)
    margin = 0.01 * upper
    beyond = ((z > upper + margin) | (z < lower - margin)).sum(0)
    beyond[scale == 1.0] = 0  # a constant column (scale 1): its log gives no range to leave
    return beyond


def drift_message(standardiser: Standardiser, beyond: np.ndarray, rows: int, block: str,
                  source: str, names: tuple[str, ...] | None = None) -> str | None:
    """The warning of ``rows`` rows of ``block`` a model read, ``beyond`` of each column's
    values beyond its limits (:func:`beyond_limits`), when a column lies mostly outside the
    range of the model's training log, or None: more than :data:`DRIFT_SHARE` of its values,
    in at least :data:`DRIFT_ROWS` rows. The model reads every such value as the limit, so
    it tells nothing, and a column sent in another unit or from another origin than the
    training log's (degrees Fahrenheit for Celsius, milliseconds for seconds, a raw time
    stamp for a shifted one) turns a model to chance without an error. ``names``: the
    block's column names (a model's feature schema), else columns are named by position."""
    if rows < DRIFT_ROWS:
        return None
    share = beyond / rows
    drifted = np.flatnonzero(share > DRIFT_SHARE)
    if not len(drifted):
        return None
    j = int(drifted[0])
    mean, scale, _, factors = _block(standardiser, block)
    assert factors is not None  # beyond_limits judged the block: it has limits
    lower, upper = factors[3], factors[4]
    assert lower is not None and upper is not None
    least = mean[j] + float(np.broadcast_to(lower, mean.shape)[j]) * scale[j]
    most = mean[j] + float(upper) * scale[j]
    column = (f"column {shown(names[j].removeprefix('^'))}"  # a table's column as named
              if names is not None and j < len(names) else f"column {j}")
    more = f" (and {len(drifted) - 1} more)" if len(drifted) > 1 else ""
    return (f"{source}: {block} {column}{more}: {share[j]:.0%} of its values lie outside "
            f"[{least:.4g}, {most:.4g}], the range of the model's training log it reads, and "
            f"are read as that range's ends; check that it has the training log's unit and "
            f"origin (degrees Fahrenheit for Celsius, milliseconds for seconds, a raw time "
            f"stamp for a shifted one)")


def drift_warning(standardiser: Standardiser, rows: np.ndarray, block: str, source: str,
                  names: tuple[str, ...] | None = None) -> str | None:
    """:func:`drift_message` of ``rows`` (raw, of ``block``), or None (too few rows, or a
    block not judged)."""
    if len(rows) < DRIFT_ROWS:
        return None
    beyond = beyond_limits(standardiser, rows, block)
    return None if beyond is None else drift_message(standardiser, beyond, len(rows), block,
                                                     source, names)


def standardised_feedback(standardiser: Standardiser | None) -> bool:
    """Whether a learner with this standardiser (None: ``standardise`` off) reads its
    feedback standardised (its rule "on" or "auto: off scale", with one scale or not), on
    the scale :data:`ROW_SPREAD` sets rather than as it was logged."""
    return (standardiser is not None and bool(standardiser.feedback_dim)
            and _standardised(standardiser.feedback_rule))


def standardiser_of(log: InteractionLog | LogStream, feedback: bool = True,
                    mode: Mode = "on", row_spread: float | None = ROW_SPREAD,
                    origins: Origins = DEFAULT_ORIGINS,
                    same_unit: SameUnit = "none", progress: bool = False) -> Standardiser:
    """The statistics of a log in memory (:meth:`Standardiser.of_log`) or streamed
    (:meth:`Standardiser.of_stream`, one extra pass, shown with ``progress``); with
    ``feedback`` False, of the contexts only (a learner that does not read the feedback);
    ``mode`` "on" or "auto"; ``origins``: where each block's zero lies (:data:`ORIGINS`);
    ``same_unit``: the blocks whose columns share one scale (:data:`SAME_UNIT`)."""
    from iglearn.data.stream import LogStream

    if isinstance(log, LogStream):
        return Standardiser.of_stream(log, feedback, mode, row_spread, origins, same_unit,
                                      progress)
    return Standardiser.of_log(log, feedback, mode, row_spread, origins, same_unit)
