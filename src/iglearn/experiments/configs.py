"""The settings of each experiment of :mod:`iglearn.experiments`, in a module that imports
neither torch nor pandas, so that the command line builds the options of ``iglearn
reproduce`` and ``iglearn sweep`` without importing what running them needs. Each
experiment's module imports its settings from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from iglearn.errors import IGLearnError
from iglearn.learners.schedules import make_schedule


def repeated(name: str, values: Sequence[object]) -> str | None:
    """The message refusing option ``--name``'s comma-separated ``values`` when one is given
    twice (which would run a setting twice and count it as two trials), or None."""
    if len(set(values)) == len(values):
        return None
    return f"--{name} lists a value twice ({','.join(map(str, values))}); give each once"


def check_distinct(config: object, names: Sequence[str]) -> None:
    """Refuse ``config``'s settings ``names`` (lists of values) that give a value twice."""
    for name in names:
        problem = repeated(name, getattr(config, name))
        if problem is not None:
            raise IGLearnError(problem)


# Table 1 (:mod:`iglearn.experiments.table1`).
PAPER = {"SUP": (0.9062, 0.0102), "CB": (0.8558, 0.0450), "IGL": (0.8221, 0.0433)}
"""The paper's reported Table 1: policy accuracy as a fraction, (mean, std) over its trials."""


@dataclass
class Table1Config:
    """Settings of the Table 1 reproduction."""

    trials: int = 16
    """Independent trials (fresh log and initialisation each)."""
    samples: int = 60000
    """Logged interactions per trial (uniform logging policy)."""
    seed: int = 0
    """Root seed; trial seeds are spawned from it."""
    dataset: str = "mnist"
    """'mnist' (the paper's infinite-MNIST environment) or 'digits' (scikit-learn, offline)."""
    data_dir: str | None = None
    """Folder with the four MNIST .gz files (else $IGLEARN_DATA, the cache, a download)."""
    policy: str = "linear"
    """Policy class for all three learners: 'linear' (the paper's) or 'mlp'."""
    decoder: str = "linear"
    """IGL decoder class: 'linear' (the paper's) or 'mlp'."""
    lr: float = 0.02
    """Peak learning rate of every learner."""
    decoder_temperature: float = 0.1
    """Temperature of IGL's sigmoid decoder (Appendix B: 0.1)."""
    methods: tuple[str, ...] = ("SUP", "CB", "IGL")
    """Which learners to fit."""

    def __post_init__(self) -> None:
        check_distinct(self, ("methods",))


SWEEPABLE = ("lr", "decoder_temperature", "samples", "policy", "decoder")
"""Settings of :class:`Table1Config` a sweep may vary (the command line reads each value as
that setting's own option does)."""


# Sample complexity (:mod:`iglearn.experiments.sample_complexity`).
DEFAULT_SAMPLES = (1000, 2000, 5000, 10000, 20000, 60000)


@dataclass
class SampleComplexityConfig:
    """Settings of the sample-complexity experiment."""

    samples: tuple[int, ...] = DEFAULT_SAMPLES
    """Log sizes to try."""
    trials: int = 4
    """Trials per log size."""
    seed: int = 0
    """Root seed (every log size uses the same trial seeds)."""
    dataset: str = "mnist"
    """'mnist' or 'digits'."""
    data_dir: str | None = None
    """Folder with the MNIST files."""
    policy: str = "linear"
    """Policy class of all three learners."""

    def __post_init__(self) -> None:
        check_distinct(self, ("samples",))


# Section 6, unsupervised decoding (:mod:`iglearn.experiments.unsupervised`).
@dataclass
class UnsupervisedConfig:
    """Settings of the Section 6 experiment."""

    trials: int = 1
    """Independent trials (fresh logs and initialisations each); one keeps the default run
    (12 environments x 2 methods on 60000 samples) short (benchmarks/unsupervised.md)."""
    samples: int = 60000
    """Logged interactions per environment and trial (uniform logging policy)."""
    seed: int = 0
    """Root seed; trial seeds are spawned from it."""
    dataset: str = "mnist"
    """'mnist' (infinite MNIST, the paper's) or 'digits' (scikit-learn, offline)."""
    data_dir: str | None = None
    """Folder with the four MNIST .gz files (else $IGLEARN_DATA, the cache, a download)."""
    clusters: int | None = None
    """Clusters of the baseline; None: the number of feedback classes of the family (10 for
    Theorem 3, 3 for ENV(1)/ENV(2)), the feedback's natural clustering."""
    method: str = "gmm"
    """The baseline's clustering: 'gmm' or 'kmeans'."""
    rule: str = "smallest"
    """The baseline's reward rule: 'smallest' or 'farthest' cluster."""
    families: tuple[str, ...] = ("theorem3", "env12")
    """Which families to run: 'theorem3' and/or 'env12'."""
    max_restarts: int = 9
    """IGL's adaptive restarts."""
    restart_threshold: float | None = 0.4
    """IGL's restart threshold on the indicator (Eq. 9); None: 1/K. A bad local optimum
    (pi_dagger, psi) has indicator (V(pi_dagger) - 1/K) * Delta_psi <= 1/K, which sampling
    noise can push past 1/K; a good one about (1 - 1/K) * Delta_psi."""
    flip_policy: bool = True
    """IGL negates the policy's scores whenever the corrector flips the decoder (see
    :class:`~iglearn.learners.BatchIGL`; its default)."""

    def __post_init__(self) -> None:
        check_distinct(self, ("families",))


# Figure 3 (:mod:`iglearn.experiments.figure3`).
@dataclass
class Figure3Config:
    """Settings of the Figure 3 reproduction."""

    trials: int = 16
    """Independent trials."""
    rounds: int = 10000
    """Rounds i of Algorithm 1 per trial (each: 1 exploration + n_i exploitation steps)."""
    warmup: int = 4000
    """Pure-exploration rounds of the 'paper' schedule (Appendix B: 4000)."""
    schedule: str = "paper"
    """'paper' (fixed warm-up), 'theory' (T0 = 2 K^2 iota / eta^2) or 'data-driven'."""
    eta: float = 0.7
    """Assumption 2's gap, for the 'theory' schedule."""
    iota: float = 100.0
    """Complexity term: n_i = floor(sqrt(i / (K iota))) after warm-up."""
    update_every: int = 100
    """Rounds between re-fits (Appendix B: 100)."""
    eval_every: int = 500
    """Rounds between checkpoints (a multiple of update_every)."""
    exploit: str = "greedy"
    """Exploitation: 'greedy' (argmax, probability 1) or 'softmax' (sample pi_i)."""
    seed: int = 0
    """Root seed; trial seeds are spawned from it."""
    dataset: str = "mnist"
    """'mnist' (the paper's infinite-MNIST environment) or 'digits' (scikit-learn, offline)."""
    data_dir: str | None = None
    """Folder with the four MNIST .gz files (else $IGLEARN_DATA, the cache, a download)."""
    policy: str = "linear"
    """Policy class of both learners: 'linear' (the paper's) or 'mlp'."""
    decoder: str = "linear"
    """E2G's decoder class: 'linear' (the paper's) or 'mlp'."""

    def check(self, n_actions: int) -> None:
        """Raise IGLearnError on settings that cannot run, or that would end before the
        learners fit a policy and exploit it with ``n_actions`` (K) actions."""
        if self.eval_every % self.update_every:
            raise IGLearnError(f"--eval-every {self.eval_every} must be a multiple of "
                               f"--update-every {self.update_every}")
        if self.rounds < 1 or self.trials < 1:
            raise IGLearnError("--rounds and --trials must be positive")
        for name, schedule in (("warmup", "paper"), ("eta", "theory")):
            value = getattr(self, name)
            if self.schedule != schedule and value != getattr(Figure3Config, name):
                raise IGLearnError(f"--{name} {value} is read by the {schedule} schedule only "
                                   f"(--schedule is {self.schedule}); drop --{name}, or add "
                                   f"--schedule {schedule}")
        warmup = make_schedule(self.schedule, self.warmup, self.eta, self.iota).warmup(n_actions)
        if warmup is not None and self.rounds <= warmup:
            fix = ("lower --warmup" if self.schedule == "paper" else
                   f"lower --iota or raise --eta (T0 = 2 K^2 iota / eta^2 with K = {n_actions})")
            raise IGLearnError(f"--rounds {self.rounds} ends within the {self.schedule} "
                               f"schedule's warm-up of {warmup} rounds, so no learner would "
                               f"exploit; raise --rounds above {warmup} or {fix}")
        if warmup is None and self.rounds < self.update_every:
            raise IGLearnError(f"--rounds {self.rounds} ends before the first fit at round "
                               f"{self.update_every}; raise --rounds or lower --update-every")


# Action-inclusive feedback (:mod:`iglearn.experiments.action_inclusive`).
@dataclass
class ActionInclusiveConfig:
    """Settings of the action-inclusive reproduction."""

    trials: int = 16
    """Independent trials (fresh logs and initialisations each)."""
    samples: int = 60000
    """Logged interactions per trial on action-inclusive MNIST (uniform logging policy)."""
    bci_samples: int = 10000
    """Logged interactions per trial and noise level on the BCI simulation (uniform)."""
    noise: tuple[float, ...] = (0.01, 0.05, 0.1, 0.2)
    """Noise levels of the BCI simulation (standard deviation added to every entry of the
    contexts and feedback)."""
    seed: int = 0
    """Root seed; trial seeds are spawned from it."""
    dataset: str = "mnist"
    """Images of the action-inclusive task: 'mnist' (infinite MNIST) or 'digits'
    (scikit-learn's bundled digits, offline)."""
    data_dir: str | None = None
    """Folder with the four MNIST .gz files (else $IGLEARN_DATA, the cache, a download)."""
    methods: tuple[Literal["AI-IGL", "IGL", "CB", "SUP"], ...] = ("AI-IGL", "IGL", "CB", "SUP")
    """Which learners to fit: AI-IGL (AIIGL), IGL (2021, BatchIGL), CB (true reward), SUP
    (labels)."""


# Personalised feedback (:mod:`iglearn.experiments.personalized`).
OnlineMethod = Literal["IGL-P", "IGL-P zhang", "IGL-P step", "CB"]
Task = Literal["personalised", "personalised-continuous", "grounded-digits", "grounded-mnist"]
ONLINE: tuple[OnlineMethod, ...] = ("IGL-P", "IGL-P zhang", "IGL-P step", "CB")
"""The online methods: IGL-P (conservative estimate), IGL-P with Zhang et al.'s estimate,
IGL-P with VW's step rule, CB (true reward)."""
TASKS: tuple[Task, ...] = ("personalised", "personalised-continuous", "grounded-digits")


@dataclass
class PersonalizedConfig:
    """Settings of the personalised reproduction."""

    trials: int = 16
    """Independent trials (fresh context streams, feedback and initialisations)."""
    rounds: int = 10000
    """Interactions played on VW's simulator ('personalised'); the report also reads the
    running average at ``report_at``."""
    short_rounds: int = 2500
    """Interactions played on the other tasks."""
    report_at: int = 2500
    """The earlier round the table reports (VW's test reads 2500)."""
    exploration: Literal["igw", "epsilon"] = "igw"
    """Exploration of iglearn's online methods: igw (inverse gap weighting with the growing
    gamma sqrt(1 + t) / gamma0 of Zhang et al., NeurIPS 2024) or epsilon (epsilon-greedy, VW's
    protocol). VW always plays epsilon-greedy."""
    gamma0: float = 2.0
    """IGW's gamma0 (OnlineIGLP's default; the authors' code uses 10)."""
    epsilon: float = 0.2
    """Exploration probability of epsilon-greedy, VW's always (VW's simulator test uses
    0.2)."""
    eval_every: int = 500
    """Rounds between checkpoints of the curves."""
    batch_samples: int = 20000
    """Uniform interactions of each trial's batch log (0: no batch part)."""
    tasks: tuple[Task, ...] = TASKS
    """Online tasks: VW's simulator with token feedback, the same with continuous feedback
    vectors, grounded digits (and grounded MNIST)."""
    methods: tuple[OnlineMethod, ...] = ONLINE
    """Online methods."""
    vw: Literal["auto", "on", "off"] = "auto"
    """Vowpal Wabbit's --experimental_igl beside the online methods, on the same contexts
    and feedback seeds: auto (when the vowpalwabbit package is installed, else the report
    says it is not), on (needs it: stops with the install command when it is missing), off."""
    seed: int = 0
    """Root seed; trial seeds are spawned from it."""
    data_dir: str | None = None
    """Folder with the four MNIST .gz files, for grounded MNIST."""

    def check(self) -> None:
        """Refuse settings that cannot run."""
        for name in ("rounds", "short_rounds", "eval_every", "trials"):
            if getattr(self, name) < 1:
                raise IGLearnError(f"--{name.replace('_', '-')} must be at least 1")
        if not 0 <= self.epsilon <= 1:
            raise IGLearnError(f"--epsilon must be in [0, 1], got {self.epsilon}")
        if not self.gamma0 > 0:
            raise IGLearnError(f"--gamma0 must be positive, got {self.gamma0}")
        if self.exploration != "igw" and self.gamma0 != PersonalizedConfig.gamma0:
            raise IGLearnError(f"--gamma0 {self.gamma0} is read by --exploration igw only "
                               f"(--exploration is {self.exploration}); drop --gamma0, or "
                               f"add --exploration igw")
        check_distinct(self, ("tasks", "methods"))

    def rounds_of(self, task: str) -> int:
        """Interactions played on ``task``."""
        return self.rounds if task == "personalised" else self.short_rounds


# The IGL family (:mod:`iglearn.experiments.family`).
Method = Literal["IGL", "AI-IGL", "IGL-P", "CB", "SUP", "VI-IGL"]
Family = Literal["2021", "action-inclusive", "personalised", "grounded", "noisy"]
METHODS: tuple[Method, ...] = ("IGL", "AI-IGL", "IGL-P", "CB", "SUP", "VI-IGL")
"""The learners compared: 2021 IGL (BatchIGL), AI-IGL, IGL-P, CB (true reward), SUP (labels),
VI-IGL."""
FAMILIES: tuple[Family, ...] = ("2021", "action-inclusive", "personalised", "grounded",
                                "noisy")
"""The environment families, in the table's column order."""


@dataclass
class FamilyConfig:
    """Settings of the IGL-family comparison."""

    trials: int = 3
    """Independent trials (fresh logs and initialisations each)."""
    samples: int = 5000
    """Uniformly logged interactions per trial on each classification-derived family."""
    personalised_samples: int = 20000
    """Uniformly logged interactions per trial on the personalised simulator."""
    dataset: Literal["digits", "mnist"] = "digits"
    """Images of the classification-derived families: 'digits' (scikit-learn's bundled digits,
    offline) or 'mnist' (infinite MNIST)."""
    families: tuple[Family, ...] = FAMILIES
    """Environment families: '2021' (y independent of (x, a) given r), 'action-inclusive'
    (y independent of x given (a, r)), 'personalised' (VW's IGL simulator: three latent
    states, a definitely-bad flag), 'grounded' (users who swap good and bad words), 'noisy'
    (the 2021 task with 10 % of the feedback replaced by noise digits independent of
    (x, a, r))."""
    methods: tuple[Method, ...] = METHODS
    """Learners: IGL (2021, BatchIGL), AI-IGL, IGL-P, CB (true reward), SUP (labels),
    VI-IGL."""
    seed: int = 0
    """Root seed; trial seeds are spawned from it."""
    data_dir: str | None = None
    """Folder with the four MNIST .gz files (else $IGLEARN_DATA, the cache, a download)."""

    def check(self) -> None:
        """Refuse settings that cannot run."""
        for name in ("trials", "samples", "personalised_samples"):
            if getattr(self, name) < 1:
                raise IGLearnError(f"--{name.replace('_', '-')} must be at least 1")
        check_distinct(self, ("families", "methods"))
        if ("personalised" not in self.families
                and self.personalised_samples != FamilyConfig.personalised_samples):
            raise IGLearnError(f"--personalised-samples {self.personalised_samples} is read by "
                               f"the personalised family only, which --families leaves out; "
                               f"drop --personalised-samples, or add personalised to "
                               f"--families")

    def environment_name(self, family: str) -> str:
        """The named environment of ``family``."""
        return {"2021": self.dataset, "action-inclusive": f"action-inclusive-{self.dataset}",
                "personalised": "personalised", "grounded": f"grounded-{self.dataset}",
                "noisy": f"noisy-independent-{self.dataset}"}[family]

    def samples_of(self, family: str) -> int:
        """Logged interactions per trial on ``family``."""
        return self.personalised_samples if family == "personalised" else self.samples


# Noisy feedback (:mod:`iglearn.experiments.noisy_feedback`).
NoisyMethod = Literal["VI-IGL", "IGL", "AI-IGL", "E2G", "CB", "SUP"]
NoiseKind = Literal["independent", "action", "context", "both"]
NOISY_METHODS: tuple[NoisyMethod, ...] = ("VI-IGL", "IGL", "AI-IGL", "E2G", "CB", "SUP")
"""The learners of the noisy-feedback comparison: VI-IGL, 2021 IGL (BatchIGL), AI-IGL, E2G
(online, where its assumption holds), CB (true reward), SUP (labels)."""
NOISE_KINDS: tuple[NoiseKind, ...] = ("independent", "action", "context", "both")
"""What a replaced feedback image's digit depends on (:mod:`iglearn.envs.noisy`)."""


@dataclass
class NoisyFeedbackConfig:
    """Settings of the noisy-feedback reproduction."""

    trials: int = 16
    """Independent trials (fresh logs and initialisations each)."""
    samples: int = 1000
    """Uniformly logged interactions per trial, noise kind and p. A fit's cost hardly depends
    on it below a few thousand (each stage runs up to ``max_steps`` steps); 1000 keeps the
    default run (16 trials of 13 settings, five learners each) to about 860 CPU-seconds. The
    paper's setting is 60000 on MNIST (``--dataset mnist --samples 60000``)."""
    p: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3)
    """Probabilities that a feedback image is replaced by a noise digit; p = 0 (the 2021
    task, the same for every kind) runs once."""
    kinds: tuple[NoiseKind, ...] = NOISE_KINDS
    """Noise kinds: the noise digit independent of (x, a, r), tied to the action, to the
    context, or to both."""
    methods: tuple[NoisyMethod, ...] = ("VI-IGL", "IGL", "AI-IGL", "CB", "SUP")
    """Learners: VI-IGL, IGL (2021, BatchIGL), AI-IGL, E2G (online; run on independent noise
    only, where its assumption y ⟂ (x, a) | r holds, and at p = 0), CB (true reward), SUP
    (labels)."""
    e2g_rounds: int = 10000
    """Rounds E2G plays online (the paper's schedule: 4000 warm-up rounds, a re-fit every
    100)."""
    dataset: Literal["digits", "mnist"] = "digits"
    """Images of contexts and feedback: 'digits' (scikit-learn's bundled digits, offline) or
    'mnist' (infinite MNIST, the paper's)."""
    seed: int = 0
    """Root seed; trial seeds are spawned from it."""
    data_dir: str | None = None
    """Folder with the four MNIST .gz files (else $IGLEARN_DATA, the cache, a download)."""

    def check(self) -> None:
        """Refuse settings that cannot run, or would run a setting twice."""
        for name in ("trials", "samples", "e2g_rounds"):
            if getattr(self, name) < 1:
                raise IGLearnError(f"--{name.replace('_', '-')} must be at least 1")
        if any(not 0.0 <= p <= 1.0 for p in self.p):
            raise IGLearnError(f"--p values must lie in [0, 1], got {','.join(map(str, self.p))}")
        check_distinct(self, ("p", "kinds", "methods"))
        if "E2G" not in self.methods and self.e2g_rounds != NoisyFeedbackConfig.e2g_rounds:
            raise IGLearnError(f"--e2g-rounds {self.e2g_rounds} is read by E2G only, which "
                               f"--methods leaves out; drop --e2g-rounds, or add E2G to "
                               f"--methods")
        if not self.kinds:
            raise IGLearnError("--kinds names no noise kind; give at least one")
