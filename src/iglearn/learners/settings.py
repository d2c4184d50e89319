"""The settings of the batch learners, in a module that imports neither torch nor any other
heavy library, so that the command line builds its options from them without importing
what fitting needs: :class:`Optimisation`, and the settings of :class:`BatchIGLSettings`
(:class:`~iglearn.learners.BatchIGL`), :class:`AIIGLSettings`
(:class:`~iglearn.learners.AIIGL`) and :class:`IGLPSettings`
(:class:`~iglearn.learners.iglp.IGLP`), which those learners inherit, with the names of the
values their str settings take.

Annotations that name torch types are written for the type checker only (``TYPE_CHECKING``);
:func:`iglearn.hints.settings_hints` resolves them at run time.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal, Self

from iglearn.data.scaling import Mode, SameUnit, check_mode, check_same_unit
from iglearn.errors import IGLearnError, shown
from iglearn.hints import check_fields
from iglearn.seeding import SeedLike, check_seed
from iglearn.threads import check_threads

if TYPE_CHECKING:
    from torch import nn

    from iglearn.models.custom import ModelFactory

POLICY_KINDS = ("linear", "mlp")
"""The names of the built-in policy classes (:data:`iglearn.models.policies.POLICIES`)."""
DECODER_KINDS = ("linear", "mlp")
"""The names of the built-in decoder classes (:data:`iglearn.models.decoders.DECODERS`)."""
POSITIVE_SETTINGS = frozenset({
    "batch_size", "beta", "critic_clip", "critic_hidden", "critic_pairs", "critic_width",
    "decoder_temperature", "ik_starts", "lr", "ramp_width", "small_lr_scale", "small_steps",
    "starts", "temperature", "window",
})
"""The numeric settings of the learners (and of their optimisation) that must be above 0, a
count of at least 1 or a positive scale; every other must be at least 0 (some have a further
bound of their own, such as IGL-P's ``threshold`` > 1). The command line's options
(:data:`iglearn.cli.settings.POSITIVE`) and a model folder's recorded settings are checked
against it."""
NON_NEGATIVE_SETTINGS = frozenset({
    "every_attempt_below", "epochs", "grounding_epochs", "max_restarts", "max_steps",
    "min_interactions", "patience", "policy_epochs", "reference_confidence", "refinements",
    "restart_confidence", "restart_fraction", "small_log", "tolerance", "weight_decay",
    "weight_decay_scale",
})
"""The numeric settings that must be at least 0, checked as :data:`POSITIVE_SETTINGS` is
(:func:`~iglearn.hints.check_fields`)."""
INFINITE_SETTINGS = frozenset({"reference_confidence"})
"""The settings that may be +inf as well as a finite number (a re-fit that never turns
against its reference model's reading: the decision service's, when the log's contradictions
do not ask it to)."""
EXPLOIT = ("greedy", "softmax")
"""How E2G exploits (:mod:`iglearn.learners.e2g`)."""
METHODS = ("gmm", "kmeans")
"""The clusterings of the unsupervised baseline (:mod:`iglearn.learners.unsupervised`)."""
RULES = ("smallest", "farthest")
"""The reward rules of the unsupervised baseline."""
BASELINE = 0.5
"""The control variate c with which learners ascend Eq. 2
(:mod:`iglearn.learners.objective`)."""


class UnknownSettingError(IGLearnError, TypeError):
    """A keyword that a learner or its optimisation settings do not take (a TypeError, as
    Python's own for an unexpected keyword is)."""


def check_setting_names(cls: type, given: Iterable[str], names: Collection[str]) -> None:
    """Refuse a keyword of ``given`` that is not among ``names``, the settings ``cls`` takes:
    one of the optimisation's settings given to the learner (``BatchIGL(lr=0.1)``) says how
    to change it there, keeping the learner's own optimisation defaults; another names the
    closest setting."""
    unknown = [name for name in given if name not in names]
    if not unknown:
        return
    name, title = unknown[0], cls.__name__
    if "optimisation" in names and name in OPTIMISATION_NAMES:
        raise UnknownSettingError(
            f"{title} has no setting {name!r}: it is a setting of its optimisation; pass "
            f"optimisation=dataclasses.replace({title}().optimisation, {name}=...), which "
            f"keeps {title}'s other optimisation defaults")
    close = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise UnknownSettingError(f"{title} has no setting {name!r}; {hint}help({title}) lists "
                              f"its settings")


class NamedSettings:
    """A settings dataclass whose unknown keywords are refused by
    :func:`check_setting_names`, naming the closest setting, before its ``__init__``
    runs."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        if kwargs and _generated_init(cls):
            check_setting_names(cls, kwargs, {item.name for item in fields(cls)})  # type: ignore[arg-type]
        return super().__new__(cls)


def _generated_init(cls: type) -> bool:
    """Whether ``cls``' ``__init__`` is a dataclass's, which takes its fields and nothing
    else (a subclass may write its own, taking other keywords)."""
    owner = next(c for c in cls.__mro__ if "__init__" in c.__dict__)
    return "__dataclass_fields__" in owner.__dict__


@dataclass(frozen=True)
class Optimisation(NamedSettings):
    """How a learner fits its models: epochs per stage and optimiser settings.

    The stages run in this order (a stage with zero epochs is skipped):
    grounding (the decoders: BatchIGL's pi and psi jointly, pi on the minorant; AIIGL's
    decoders on the per-action covariance; VIIGL's decoder against its critics), policy (pi
    alone on the minorant, rewards or decoder held fixed), exact (the objective itself).

    A stage runs its epochs. On a small log, where they are only a few steps, it runs on
    while its loss improves, up to ``max_steps`` steps (:func:`run_stage`): it stops when the
    mean loss over ``window`` steps has not improved by ``tolerance`` of its progress so far
    for ``patience`` windows.
    """

    grounding_epochs: int = 2
    """Stage one, grounding (IGL: psi ascends Eq. 2 while pi ascends the minorant; AI-IGL:
    each (re-)grounding of the decoders on the per-action covariance; VI-IGL: the decoder's
    min-max stage against its critics)."""
    policy_epochs: int = 2
    """Stage two: pi ascends the minorant with the (decoded) reward held fixed."""
    epochs: int = 3
    """Stage three: the exact objective."""
    batch_size: int = 500
    """Interactions per gradient step."""
    lr: float = 0.02
    """Peak learning rate of each stage's one-cycle schedule."""
    max_steps: int = 240
    """Cap on the steps of a stage that a log extends beyond its epochs (a small log's cap is
    ``small_steps``): the one-cycle schedule spans this many steps, and the stage stops
    earlier once its loss stops improving (``window``, ``patience``, ``tolerance``). A stage
    whose epochs already take this many steps runs exactly its epochs."""
    small_log: int = 5000
    """A log of fewer interactions is small: a stage it extends runs at most ``small_steps``
    steps (or ``max_steps``, if fewer) and peaks at ``small_lr_scale`` times ``lr``
    (0: no log is small)."""
    small_steps: int = 80
    """Cap on the steps of a stage that a small log extends."""
    small_lr_scale: float = 2.5
    """A stage that a small log extends peaks at this multiple of ``lr``. On 16 raw digits
    logs each of 500, 1,000 and 2,000 interactions (two sets of seeds), 80 steps at 2.5 times
    the rate kept BatchIGL's and CB's accuracy of 240 steps at ``lr`` (BatchIGL's mean
    rose by 4 to 6 points at 500), at about half of BatchIGL's CPU at 2,000 and under half of
    CB's. On MNIST logs of 10,000 and 20,000 interactions fewer steps cost BatchIGL, CB and
    SUP accuracy, hence ``small_log`` (docs/results.md). BatchIGL's judged starts and the fit
    that continues from the best run at ``lr`` itself (:func:`start_settings`)."""

    window: int = 20
    """Steps (whole epochs, at least one) over which an extended stage averages its loss to
    judge whether it still improves; the corrector and the fit's history run once a window."""
    patience: int = 2
    """Windows in a row without improvement after which an extended stage anneals its
    learning rate to zero over one more window and stops (0: run to ``max_steps``)."""
    tolerance: float = 0.05
    """A window improves when its mean loss falls below the best so far by more than this
    fraction of the stage's improvement so far (the first window's loss minus the best).
    (On small digits logs, the windows a 0.01 tolerance ran on beyond 0.05 moved the loss by
    a few thousandths and no learner's accuracy, at a fifth to a third of the fit's CPU.)"""
    weight_decay: float = 0.0
    """Fixed part of the decoupled (AdamW) weight decay."""
    weight_decay_scale: float = 8.0
    """Data-scaled part: a fit on n interactions decays a weight matrix with d inputs by
    weight_decay + weight_decay_scale * d / n, a penalty that grows with the parameters per
    output and fades as the data grows (on MNIST, d = 784: 1.6 at 4000 samples, 0.1 at 60000).
    Without it, a few thousand interactions let pi and psi co-adapt to the sample: psi calls
    far more than a K-th of the feedback a reward and the policy follows it. Biases are not
    decayed; 0 switches this iglearn addition off. One step takes at most the whole weight
    (the decay is at most :data:`~iglearn.learners.training.DECAY_STEP_LIMIT` over the peak
    learning rate), however many inputs a few interactions have."""

    def __post_init__(self) -> None:
        check_fields(self, POSITIVE_SETTINGS, NON_NEGATIVE_SETTINGS)

    def cap(self, n: int) -> tuple[int, float]:
        """The most steps of a stage that a log of ``n`` interactions extends, and the
        multiple of ``lr`` at which such a stage peaks."""
        if n < self.small_log:
            return min(self.max_steps, self.small_steps), self.small_lr_scale
        return self.max_steps, 1.0


OPTIMISATION_NAMES = frozenset(item.name for item in fields(Optimisation))
"""The settings of :class:`Optimisation`."""


@dataclass(eq=False, kw_only=True)
class FitSettings(NamedSettings):
    """The settings every batch learner has (keyword-only, after each learner's own)."""

    seed: SeedLike = None
    """Seed or numpy Generator for initialisation and shuffling."""
    threads: int = 1
    """Torch threads of the fit, and those of the BLAS and OpenMP libraries beside it (numpy's,
    scipy's, scikit-learn's): small and mid-sized logs fit fastest on one, large logs gain
    from more. The caller's counts are restored after the fit."""
    standardise: Mode = "auto"
    """Standardise contexts and feedback with the log's per-column means and standard
    deviations (the feedback's weighted by 1/p, to describe uniform play; a constant column
    is only centred; a column that a few far values dominate, by its median and
    interquartile range), as z-scoring by hand would, kept with the model and applied
    wherever it reads inputs
    (:mod:`iglearn.data.scaling`); a learner that reads no feedback (CB, SUP) standardises
    its contexts only. "auto": each block (contexts; feedback) only when it is off the unit
    scale the defaults are tuned for (a column's mean beyond ±3 or standard deviation above
    3, the block's RMS mean above 1 or RMS standard deviation below 0.15, or z-scored
    already), a block on it is read as it is;
    "on": always; "off": never, the models read the raw values. The model records each
    block's rule ("auto: unit scale", "auto: off scale", "on")."""
    same_unit: SameUnit = "none"
    """The blocks measured in one unit, "context", "feedback" or "both" (an image's pixels, a
    voxel pattern, electrode voltages): standardised, such a block's columns share one
    scale, the block's RMS standard deviation, and keep their relative spreads, so that a
    rarely lit pixel or a quiet voxel stays quiet. "none": each column is scaled by its own
    standard deviation, as columns of mixed units (counts beside milliseconds) need. Naming a
    block of mixed units costs much accuracy (a column in a small unit is then all but
    erased); naming a block in one unit gained on raw digits and BCI logs (docs/results.md,
    "Blocks measured in one unit"). A standardised block's rule then ends with ", one
    scale"."""
    progress: bool = False
    """Show progress bars over the epochs of the fit on stderr (tqdm: terminal or notebook),
    one per step of the fit, named by the learner and the step ("VIIGL: decoder"; BatchIGL:
    one per attempt, with its indicator and the corrector's statistic)."""

    def progress_label(self, step: str) -> str | None:
        """The description of a progress bar over ``step`` of a fit ("VIIGL: decoder"), or
        None (no bar) without ``progress``."""
        return f"{type(self).__name__}: {step}" if self.progress else None

    def __post_init__(self) -> None:
        """Refuse a seed, a thread count or a standardise mode that cannot work, naming it (each
        learner's own checks call this first)."""
        check_seed(self.seed)
        check_threads(self.threads)
        check_mode(self.standardise)
        check_same_unit(self.same_unit)
        check_fields(self, POSITIVE_SETTINGS, NON_NEGATIVE_SETTINGS, INFINITE_SETTINGS)
        optimisation = getattr(self, "optimisation", None)  # None: the learner's defaults
        if optimisation is not None and not isinstance(optimisation, Optimisation):
            title = type(self).__name__
            raise IGLearnError(f"optimisation must be an iglearn Optimisation, got "
                               f"{type(optimisation).__name__} {shown(optimisation)}; pass "
                               f"optimisation=dataclasses.replace({title}().optimisation, "
                               f"lr=...), which keeps {title}'s other optimisation defaults")


JUDGED_STARTS = 2
"""The initialisations an auto ``starts`` judges on a log of :data:`JUDGED_SIZES`
interactions. On 16 digits logs of 500 interactions the mean accuracy rose from 79.0 % to
83.0 % and the worst seed from 54.4 % to 80.5 %; four starts did no better (docs/results.md)."""
JUDGED_SIZES = (200, 1000)
"""The log sizes (from, below) at which an auto ``starts`` judges :data:`JUDGED_STARTS`
initialisations: from 1,000 interactions the worst seed is already within a few points of
the mean and a fit costs one initialisation (on two sets of 16 raw digits logs of 1,000
interactions, one start: 87.5 / 85.0 % and 87.7 / 84.6 % mean / worst at 0.4 to 0.5
CPU-seconds, two judged: 87.7 / 85.3 % and 87.7 / 85.0 % at 1.0 to 1.3; at 500 one start's
worst seed fell to 5 and 11 %); below 200 a held-out fifth is a few dozen interactions."""
JUDGED_STEPS = 60
"""The most steps of each stage of an initialisation being judged (the cap of those fits,
when less than the log's cap): enough to tell a start that grounds from one that memorises
the log; the fit on the whole log then continues for at most :data:`CONTINUED_STEPS`. Both
run at the learning rate ``lr`` on a small log too (``small_lr_scale`` 1): judged at 2.5
times it, 16 digits logs of 500 interactions kept starts that grounded worse (mean / worst
accuracy 80.1 / 62.9 % against 82.6 / 78.1 %)."""
CONTINUED_STEPS = 60
"""The most steps of each stage of the fit on the whole log that continues from the best
judged start (the log's cap when less), at the learning rate ``lr`` (``small_lr_scale`` 1).
On 48 digits logs of 500 interactions (``benchmarks/small_data.py``), 60 steps against 120
(which the small log's cap of 80 made 80): 82.2 / 72.5 % against 82.3 / 70.7 % mean / worst
accuracy with the features as given, 78.7 / 57.0 % against 78.3 / 52.7 % raw, at 12 % and 10 %
less CPU; at 200 interactions and on the personalised task the means moved by at most one
point either way (docs/results.md). At a small log's 2.5 times the rate, 3 of 16 continued
fits on 500 and 1,000 raw digits interactions lost their grounding (indicator 0) and
restarted."""
JUDGED_RESTARTS = 1
"""The most restarts of each judged start (with the whole fit's ``max_restarts``, if fewer):
a start that fails the judge's test on the held-out part is fitted afresh once, and the fit
on the whole log keeps its own restarts. On 16 logs each (``benchmarks/small_data.py``, 2021
IGL, features as given and raw), one restart instead of four fitted 84 attempts instead of 132
on raw digits logs of 200 interactions, 74 instead of 115 as given, and on BCI logs, where
the feedback depends on the action and no start can ground, 70 instead of 106 at 500 and 85
instead of 161 at 200; on digits logs of 500 every attempt and accuracy stayed the same, at
200 the mean held (raw) or rose by 0.8 points (as given). No restart at all lost 1.4 to 1.9
points at 200 and the worst seed at 500 as given (75.0 to 72.9 %)."""
HOLDOUT_SHARE = 0.2
"""The share of a log held out to judge the initialisations (``starts``)."""


def start_settings(settings: Optimisation, steps: int) -> Optimisation:
    """``settings`` for BatchIGL's judged starts (``steps`` :data:`JUDGED_STEPS`) or for the
    fit that continues from the best (:data:`CONTINUED_STEPS`): each stage capped at
    ``steps`` (or at the log's cap, when less), at the learning rate ``lr`` on a small log
    too (``small_lr_scale`` 1)."""
    return replace(settings, max_steps=min(settings.max_steps, steps), small_lr_scale=1.0)


def starts_for(starts: int | None, size: int, in_memory: bool) -> int:
    """The initialisations a fit with setting ``starts`` judges on a log of ``size``
    interactions (``in_memory``: not streamed)."""
    if starts is not None:
        return starts
    low, high = JUDGED_SIZES
    return JUDGED_STARTS if in_memory and low <= size < high else 1


def restart_passes(indicator: float, error: float, confidence: float,
                   threshold: float) -> bool:
    """The adaptive restart's test (:meth:`~iglearn.learners.BatchIGL.fit_with_restarts`):
    whether an ``indicator`` (Eq. 9) with standard error ``error`` exceeds ``threshold`` by
    ``confidence`` standard errors (``BatchIGLSettings.restart_confidence``)."""
    return indicator - confidence * error > threshold


@dataclass(eq=False)
class BatchIGLSettings(FitSettings):
    """The settings of :class:`~iglearn.learners.BatchIGL`, which documents them."""

    policy: str | nn.Module | ModelFactory = "linear"
    """Policy class: 'linear' (the paper's) or 'mlp'; in Python also a torch module (a
    template) or a factory (in_dim, out_dim, generator) -> module giving (n, K) scores."""
    decoder: str | nn.Module | ModelFactory = "linear"
    """Reward decoder class: 'linear' (the paper's) or 'mlp'; in Python also a torch module (a
    template) or a factory (in_dim, out_dim, generator) -> module giving one logit per row."""
    optimisation: Optimisation = field(default_factory=Optimisation)
    """Optimiser settings: epochs of each stage, batch size, learning rate, weight decay."""
    corrector: bool = True
    """Apply the data-driven decoder corrector (Appendix B) after every epoch."""
    reference_confidence: float = 1.0
    """When a re-fit is given a reference model (:meth:`fit`'s ``reference``: the model it
    replaces), the corrector turns the decoder against the reference's orientation only when
    its statistic lies more than this many standard errors beyond one half
    (:func:`~iglearn.learners.corrector.oriented_flip`); ``math.inf``: never."""
    max_restarts: int = 4
    """Most restarts of the adaptive restart (Appendix B); 0 disables it."""
    restart_threshold: float | None = None
    """Indicator threshold of the adaptive restart; None means 1/K, V(pi_bad) for
    classification, for K >= 3, and 0 (beating uniform play) for K = 2."""
    starts: int | None = None
    """Initialisations judged before the fit (:meth:`~iglearn.learners.BatchIGL.judge_starts`,
    iglearn's addition): each is fitted briefly on the log less a held-out fifth and scored by
    its indicator on that fifth, and the fit on the whole log continues from the best
    (:data:`CONTINUED_STEPS` steps a stage at most). On a
    few hundred interactions the outcome depends on the initialisation, and the fits that
    memorise the log score highest on it and lowest on held-out interactions. None (auto):
    :data:`JUDGED_STARTS` on in-memory logs of :data:`JUDGED_SIZES` interactions, one
    otherwise; 1: a single initialisation, as the paper."""
    restart_confidence: float = 2.0
    """Standard errors of the indicator by which it must exceed the threshold for an attempt
    to pass the adaptive restart (0: the paper's plain test). On a few hundred interactions an
    indicator just above 1/K is as often a policy no better than uniform play; on large logs
    the standard error is a few thousandths and the test is the paper's."""
    share_test: bool = True
    """The adaptive restart also tests the share of the feedback the decoder calls a reward
    (K >= 3; iglearn's addition): an attempt passes only if its corrector statistic is at
    most :func:`~iglearn.learners.corrector.reward_share_bound`, sqrt(1/(2K)); under uniform
    play one right action of K is a 1/K share, and a decoder that calls several times that a
    reward has split the feedback some other way. The fit keeps an attempt within the bound
    if one is, else the one least beyond it, and warns. Not applied to a decoder that follows the
    logged action (the fit warns of it instead; a fresh start splits such feedback alike);
    off for tasks with several right actions per context. On 16 MNIST logs of 1,000
    interactions (``iglearn reproduce sample-complexity``'s first size) four fits had ended
    at 1.8 to 27.7 % accuracy with decoders calling 27 to 35 % of the feedback a reward (the
    others 11 to 20 %, at 50.6 to 71.8 %); one restart each took them to 55.1 to 73.1 % and
    the mean from 51.7 to 63.0 %."""
    decoder_temperature: float = 0.1
    """Temperature of the decoder's sigmoid (Appendix B: 0.1)."""
    flip_policy: bool = True
    """Policy negation: negate the policy's scores whenever the corrector flips the decoder,
    so the pair moves from (pi_dagger, psi_dagger) towards (pi_star, psi_star) together."""
    control_variate: float = BASELINE
    """The constant c subtracted from psi in Eq. 2 (0: Eq. 2 exactly as written)."""
    self_normalised_grounding: bool = True
    """In the grounding stage, psi ascends Eq. 2 with self-normalised importance weights (so
    a constant decoder scores 0), rather than plain Eq. 2."""
    self_normalised_exact: bool = True
    """In the exact stage, psi ascends Eq. 2 with self-normalised importance weights (pi held
    fixed) while pi ascends Eq. 2 with the control variate (psi held fixed), rather than both
    ascending plain Eq. 2. On a few hundred interactions a policy fitted to the log puts more
    than 1/K on its logged actions, plain Eq. 2 then rewards a decoder that calls every
    feedback a reward, and the corrector's flip leaves one that calls none
    (:func:`~iglearn.learners.objective.self_normalised_objective`): on 16 raw digits logs of
    200 interactions (``benchmarks/small_data.py``) five had attempts that ended so, one every
    attempt, and the worst log rose from 4.1 to 38.4 % (as given, 9.8 to 27.5 %)."""
    two_sided_minorant: bool = True
    """The policy stage's minorant has both terms, psi log pi + (1 - psi) log(1 - pi), rather
    than psi log pi alone."""
    soft_decoders: bool = True
    """Fresh decoders start soft: their last layer scaled by the decoder's temperature
    (:func:`~iglearn.models.decoders.soften`), so that psi starts between 0 and 1 on the
    feedback rather than as a random hard split of it (a custom decoder starts as its factory
    draws it)."""
    device: str = "cpu"
    """Where the fit runs: cpu, cuda, mps, or auto (CUDA, else MPS, else the CPU). On CUDA a
    log in memory is copied to the device once a fit when it takes at most half its free
    memory (:data:`~iglearn.learners.trials.DEVICE_SHARE`); a larger or streamed log, and any
    log on MPS, stays in host memory and moves in mini-batches. The fitted models come back
    to the CPU."""
    logdir: str | None = None
    """Folder for TensorBoard event files of the fit's per-epoch history (needs the
    'tensorboard' extra); none: no TensorBoard."""


AIIGL_OPTIMISATION = Optimisation(grounding_epochs=2, policy_epochs=2, epochs=2, max_steps=120,
                                  small_steps=60)
"""AI-IGL's optimiser settings: two epochs of each (re-)grounding, of the policy's minorant and of
its IPS stage, in mini-batches of 500; a smaller log extends each stage while its loss
improves, to at most 120 steps (up to 20 epochs on 3000 interactions), and a small log (under
5,000 interactions) to at most 60 steps at 2.5 times the learning rate. On 60,000 interactions
every stage runs exactly its two epochs, as with the earlier settings (one minorant epoch,
extended to two by a cap of 240 steps). On small logs the stages ran to about 200 of those 240
steps, which over-fitted the decoders to the log: on digits logs of 500 and 2000 interactions
the cap of 120 raised the mean accuracy (most on 500 interactions and on raw features) at half
the steps; the small-log cap of 60 at 2.5 times the rate raised it again, on digits and
action-inclusive digits, at about half the CPU again (docs/results.md)."""


@dataclass(eq=False)
class AIIGLSettings(FitSettings):
    """The settings of :class:`~iglearn.learners.AIIGL`, which documents them."""

    policy: str | nn.Module | ModelFactory = "linear"
    """Class of the score network s(x) with K outputs: 'linear' or 'mlp'; in Python also a
    torch module (a template) or a factory, as for BatchIGL."""
    decoder: str | nn.Module | ModelFactory = "linear"
    """Class of each action's reward decoder psi_a: 'linear' or 'mlp'; in Python also a torch
    module (a template) or a factory, as for BatchIGL."""
    optimisation: Optimisation = field(default_factory=lambda: AIIGL_OPTIMISATION)
    """Optimiser settings: epochs of each stage, batch size, learning rate, weight decay
    (weight matrices decay by weight_decay + weight_decay_scale * inputs / n)."""
    refinements: int = 1
    """Refinement rounds after the first fit: the decoders re-grounded against the fitted
    policy, symmetry breaking, the policy stages again (0: the paper's single round)."""
    decoder_temperature: float = 0.5
    """Temperature of each decoder's sigmoid, psi_a(y) = sigmoid(g_a(y) / temperature); the
    decoders learn at the learning rate times it."""
    temperature: float = 1.0
    """Temperature of the policy softmax(s(x) / temperature)."""
    min_interactions: int = 100
    """Fewest interactions of one action that ground its decoder without a warning."""
    every_attempt_below: int = 200
    """On a log of fewer than this many interactions per action (K times it in all), every
    attempt of the adaptive restart is made, side by side, and the one with the largest
    indicator kept (:meth:`~iglearn.learners.ai_igl.AIIGL.every_attempt`); 0: never."""
    max_restarts: int = 2
    """Most restarts of the adaptive restart (:meth:`fit_with_restarts`); 0 disables it."""
    restart_fraction: float = 0.5
    """An action whose covariance term is at most this fraction of the median term over the
    actions did not ground (its decoder settled at a constant, or split its feedback some
    other way): the fit restarts. Half rather than a quarter: on 16 action-inclusive digits
    logs of 2,000 interactions (``benchmarks/small_data.py``) the worst fit, whose decoder of
    one action called 45 % of that action's feedback a reward and missed the rewarded ones
    (covariance term 0.38 of the median), restarted and rose from 75.3 to 82.0 %; at 1,000
    interactions the mean rose by 1.1 to 1.2 points on action-inclusive digits and 0.2 to
    0.4 on digits, for up to twice the CPU there (0.18 to 0.27 → 0.30 to 0.34 CPU-s); logs of
    fewer than ``every_attempt_below`` per action make every attempt anyway (docs/results.md,
    "AI-IGL restarts below half the median covariance")."""


REGRESSION_OPTIMISATION = Optimisation(grounding_epochs=0, policy_epochs=0, epochs=3,
                                       batch_size=500, lr=0.05, max_steps=200, patience=0,
                                       weight_decay_scale=1.0, small_log=0)
"""A model fitted from scratch: three epochs of AdamW in mini-batches of 500, extended on a
small log to 200 steps (patience 0: stopping on a plateau of the training loss cost IGL-P
about 2 points of accuracy on logs of 500 to 2000 interactions; measured again with the
tolerance at 0.05, on digits logs of 2000 interactions its inverse-kinematics stage stopped
after 80 steps and the accuracy fell from 82 % to 68 %, while its policy stage, which did
keep the accuracy, costs too little for its stopping to matter), peak learning rate 0.05,
weight decay 1.0 * inputs / n."""


IGLP_OPTIMISATION = replace(REGRESSION_OPTIMISATION, small_log=5000, small_steps=100,
                            small_lr_scale=1.0)
"""IGL-P's optimiser settings (each of its three models): those of a model fitted from scratch
(:data:`REGRESSION_OPTIMISATION`), extended on a log of fewer than 5,000 interactions to 100
steps instead of 200. Its inverse-kinematics model is most of a fit's cost: on 16 logs per
cell of 200 to 2,000 interactions (digits, action-inclusive digits and VW's personalised
simulator, features as given and raw) the CPU per fit fell by 40 to 60 % and the mean
accuracy moved by -0.7 to +2.4 points (+7.8 and +6.3 on the simulator at 200), within the
seeds' spread; at 5,000 interactions 100 steps lost 0.2 to 0.7 points on digits and 2.4 to
5.9 on the family's noisy and grounded digits, so larger logs keep 200 (docs/results.md)."""
IGLP_PERSONAL_OPTIMISATION = REGRESSION_OPTIMISATION
"""IGL-P's default settings with per-user grounding (``users`` > 0): 200 steps, as
OnlineIGLP's (:data:`~iglearn.learners.iglp.PERSONAL_FIRST_FIT`): PersonalIK's product leaves
its saddle at 0 slowly."""


@dataclass(eq=False)
class IGLPSettings(FitSettings):
    """The settings of :class:`~iglearn.learners.iglp.IGLP`, which documents them."""

    model: Literal["linear", "mlp"] = "linear"
    """Class of the inverse-kinematics model h(a | x, y): 'linear' or 'mlp'."""
    policy: str | nn.Module | ModelFactory = "linear"
    """Class of the reward regressor f(x, a) (the policy) and of the flag model: 'linear' or
    'mlp'; in Python also a torch module (a template) or a factory giving (n, K) scores, as
    for BatchIGL (both models are built from it; a model folder records its factory once per
    model)."""
    estimator: Literal["step", "lipschitz", "zhang"] = "lipschitz"
    """How extreme each interaction is: 'step' (VW's rule, L > threshold), 'lipschitz'
    (iglearn's conservative ramp in log L) or 'zhang' (the ramp on h of Zhang, Zhang, Luo and
    Mineiro, NeurIPS 2024: clip((h - ramp_start) / ramp_width, 0, 1))."""
    threshold: float = 3.0
    """Likelihood ratio L above which feedback counts as extreme (3 is VW's rule)."""
    decode_from: Literal["interaction", "feedback"] = "interaction"
    """What a positive interaction's decoded reward is: 'interaction', its own extremeness
    (IGL-P as published), or 'feedback', the mean extremeness of its feedback from its user
    over the log (iglearn's addition, :func:`~iglearn.learners.iglp.fit_feedback_posterior`),
    which does not depend on how well h(a | x, y) ranks the action from the context (a linear
    h on a task whose best action is not linear in it)."""
    ramp_start: float = 0.3
    """Zhang et al.'s beta: the probability h(a | x, y) of the logged action at which the
    'zhang' ramp leaves 0 (0.3 in the authors' code); must exceed 1 / K, the h of feedback
    that says nothing about the action."""
    ramp_width: float = 0.1
    """Zhang et al.'s sigma: the rise of h over which the 'zhang' ramp goes from 0 to 1 (0.1
    in the authors' code)."""
    optimisation: Optimisation = field(default_factory=lambda: IGLP_OPTIMISATION)
    """Optimiser settings of each of the three models (these defaults with ``users`` > 0:
    :data:`IGLP_PERSONAL_OPTIMISATION`, 200 steps)."""
    users: int = 0
    """Per-user grounding: the first ``users`` context features encode the user (a one-hot
    user id, as the coba plug-in puts first); 0: no user part. With users, the
    inverse-kinematics model is :class:`~iglearn.models.personal.PersonalIK`, which grounds
    each feedback's meaning per user (for users who use the same words differently, some
    swapping good and bad ones); ``model`` is then the class of its context part."""
    ik_starts: int = 2
    """With per-user grounding (``users`` > 0), the initialisations of the inverse-kinematics
    model each fit tries: the model it warm-starts from (a fresh one in a first fit) and
    ``ik_starts`` - 1 fresh ones. A fresh one replaces the model it is compared with when its
    log-loss of the logged actions is lower by more than two standard errors
    (:func:`~iglearn.learners.iglp.best_inverse_kinematics`). PersonalIK's product
    s(u, y) g(x') is not convex: a model that settled where no word tells anything stays there
    through every warm-started re-fit. Without users the model is convex and one start is
    fitted whatever this says. 1: the one model only."""


VIIGL_OPTIMISATION = Optimisation(grounding_epochs=3, policy_epochs=2, epochs=3, small_log=1000,
                                  small_steps=120, small_lr_scale=1.5)
"""VI-IGL's optimiser settings: three epochs of the decoder's min-max stage
(``grounding_epochs``), then two of the policy's minorant and three of its IPS stage, in
mini-batches of 500; a smaller log extends each stage while its loss improves, to at most
240 steps, and a log of fewer than 1,000 interactions to at most 120 steps at 1.5 times the
rate. On ``benchmarks/small_data.py``'s logs of 200 and 500 interactions (16 seeds) the
shorter stages cost a quarter to two fifths less CPU and raised the mean accuracy on digits
by 1 to 3.5 points (raw, standardised by hand, and as given at 200; as given at 500 it held,
-0.2 points); on logs of 1,000 and 2,000 interactions as given they lost 0.3 and 0.45
points, hence the bound of 1,000."""
DIVERGENCES = ("kl", "chi2", "chi2-kl")
"""VI-IGL's f-divergence variants: the divergence of the conditional critic G, then (after a
dash, when it differs) that of the marginal critic T (:mod:`iglearn.learners.vi_igl`)."""


@dataclass(eq=False)
class VIIGLSettings(FitSettings):
    """The settings of :class:`~iglearn.learners.vi_igl.VIIGL`, which documents them."""

    policy: str | nn.Module | ModelFactory = "linear"
    """Class of the policy fitted to the decoded reward: 'linear' or 'mlp'; in Python also a
    torch module (a template) or a factory, as for BatchIGL."""
    decoder: str | nn.Module | ModelFactory = "linear"
    """Class of the reward decoder psi(y): 'linear' or 'mlp'; in Python also a torch module (a
    template) or a factory, as for BatchIGL."""
    optimisation: Optimisation = field(default_factory=lambda: VIIGL_OPTIMISATION)
    """Optimiser settings: ``grounding_epochs`` of the decoder's min-max stage (psi against
    the critics), then ``policy_epochs`` and ``epochs`` of the policy's stages."""
    divergence: Literal["kl", "chi2", "chi2-kl"] = "kl"
    """The f-divergence of the variational bounds: 'kl' (KL for both critics), 'chi2'
    (chi-square for both), 'chi2-kl' (chi-square for the conditional critic G, KL for the
    marginal critic T)."""
    beta: float = 10.0
    """The weight of I(X, A; R_psi) against I(Y; X, A | R_psi) in the decoder's objective
    (the paper: 10)."""
    critic_hidden: int = 64
    """Hidden units of each critic's two-layer networks (one on the context, one on the
    feedback)."""
    critic_width: int = 16
    """Width of the embeddings whose inner product is the conditional critic G."""
    critic_pairs: int = 32
    """Samples each sample of a mini-batch is paired with to draw the conditional product law
    of I(Y; X, A | R_psi) (every other one when the mini-batch is smaller)."""
    critic_clip: float = 10.0
    """Critic scores pass through clip * tanh(score / clip), so that exp(score) stays
    finite."""
    decoder_temperature: float = 1.0
    """Temperature of the decoder's sigmoid, psi(y) = sigmoid(g(y) / temperature); the decoder
    learns at the learning rate times it."""
    max_restarts: int = 2
    """Most restarts of the adaptive restart (iglearn's addition): a trial whose decoded
    reward tells almost nothing about the context and action (its marginal bound at most
    ``restart_bound``) fits a fresh decoder and fresh critics, and keeps the attempt with
    the largest marginal bound; 0 disables it."""
    restart_bound: float = 0.01
    """The marginal bound (the critic T's lower bound on I(X, A; R_psi), in nats) at or below
    which an attempt has not grounded. On 16 digits logs of 2,000 interactions (the task's
    own features) the first attempts whose policy then learned the task had bounds of 0.04
    to 0.27, the 4 whose policy did not (accuracy 0.6 to 15 %) -0.002 to -0.001, and a
    restart grounded each. In ``iglearn reproduce noisy-feedback`` (208 fits) the four with
    bounds of 0.002 to 0.003 scored 0, 0.6, 45 and 69 %, the next ones (0.006 to 0.015) 53 to
    87 %; restarting up to 0.005 turned one failure (below 30 %) of five into a success.
    Up to 0.01: a digits log of 5,000 interactions whose only attempt had 0.0052 (81 %)
    restarted and scored 90.5 %; in ``benchmarks/small_data.py`` two worst seeds rose and no
    cell fell, and the noisy-feedback reproduction kept its mean and its 4 failures.
    The bound is measured on the interactions the critics were fitted on, and on a log of a
    few hundred it overstates the dependence: feedback drawn at random, independent of the
    context, the action and the reward, gave 0.05 to 0.28 nats on 110 to 400 interactions of
    a 3-action task (informative feedback 0.24 to 0.32), so there the restart and the
    warning seldom fire."""


ALGORITHM_SETTINGS: dict[str, type[BatchIGLSettings | AIIGLSettings | IGLPSettings
                                   | VIIGLSettings]] = {
    "igl": BatchIGLSettings, "ai-igl": AIIGLSettings, "igl-p": IGLPSettings,
    "vi-igl": VIIGLSettings}
"""The settings of each algorithm a model folder may hold, by name (``iglearn fit
--algorithm``; the learners: :func:`iglearn.learners.registry.learners`)."""
