"""The IGL family side by side: every learner on every kind of feedback, where each works and
where it fails, and which assumption explains it.

Five environment families, each with the conditional independence its feedback satisfies
(:class:`~iglearn.envs.base.Independence`):

- **2021** (``digits`` / ``mnist``): the feedback depends on the reward alone,
  y ⟂ (x, a) | r (Xie et al. 2021, Assumption 1);
- **action-inclusive** (``action-inclusive-digits`` / ``-mnist``): the feedback shows the digit
  (a + 6 r - 3) mod 10, so it depends on the action: y ⟂ x | (a, r) (Xie et al. 2022);
- **personalised** (``personalised``, Vowpal Wabbit's IGL simulator): three latent states
  (enjoyed +1, neutral 0, hated -1) and a rare definitely-bad flag (Maghakian et al. 2023);
- **grounded** (``grounded-digits`` / ``-mnist``): half of the users swap good and bad words, so
  the feedback depends on the context (the user);
- **noisy** (``noisy-independent-digits`` / ``-mnist``): the 2021 task with 10 % of the
  feedback images replaced by a noise digit independent of (x, a, r) (Hu et al. 2024).

Each trial logs ``samples`` interactions of each family under uniform play
(``personalised_samples`` on the simulator) and fits on them 2021 IGL
(:class:`~iglearn.learners.BatchIGL`), AI-IGL (:class:`~iglearn.learners.AIIGL`), IGL-P
(:class:`~iglearn.learners.iglp.IGLP`), CB (the true reward), SUP (the labels) and VI-IGL
(:class:`~iglearn.learners.vi_igl.VIIGL`), each with its default settings and linear models.
The greedy policy is scored on the family's test contexts: its accuracy (the share of
contexts on which it picks the correct action: the label, or the user's enjoyed topic) and
its expected true reward. The report shows accuracy on the classification-derived families
and the expected true reward on the personalised simulator, and words each verdict
("works", "fails", ...) from thresholds relative to CB and to chance computed from the
measured numbers (:func:`verdict`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iglearn.data.logs import InteractionLog
from iglearn.envs.base import Contexts, Environment
from iglearn.envs.named import named_environment
from iglearn.experiments.configs import FAMILIES, METHODS, FamilyConfig
from iglearn.experiments.results import (
    format_std,
    metric,
    prepare_output,
    std_note,
    tidy_frame,
    tidy_rows,
    trials_text,
    write_outputs,
)
from iglearn.experiments.runner import Execution, fingerprint, run_trials
from iglearn.learners import AIIGL, BatchIGL, ContextualBandit, IdentifiabilityWarning, Supervised
from iglearn.learners.base import PolicyLearner
from iglearn.learners.iglp import IGLP
from iglearn.learners.vi_igl import VIIGL
from iglearn.seeding import integer_seed

EXPERIMENT = "family"
WORKS = 0.8
"""A trial "works" when its score closes at least this share of the gap between chance and
CB's mean score."""
FAILS = 0.2
"""A trial "fails" when its score closes at most this share of that gap."""
IK_FEATURE_LIMIT = 100_000
"""IGL-P's inverse-kinematics input has d_x + d_y + d_x d_y features; above this many (MNIST
images as both context and feedback: 616 224) it is not run."""


def measure_of(family: str) -> str:
    """The metric a family's table column shows: the expected true reward on the personalised
    simulator (its reward is +1, 0 or -1), the accuracy elsewhere."""
    return "reward" if family == "personalised" else "accuracy"


def not_run(method: str, env: Environment) -> str | None:
    """Why ``method`` is not fitted on ``env``, or None when it is."""
    features = env.context_dim + env.feedback_dim + env.context_dim * env.feedback_dim
    if method == "IGL-P" and features > IK_FEATURE_LIMIT:
        return (f"IGL-P not run: its inverse-kinematics input (x, y, x ⊗ y) would have "
                f"{features} features per interaction")
    return None


Learner = BatchIGL | AIIGL | IGLP | ContextualBandit | Supervised | VIIGL
"""A learner of the comparison."""


def make_learner(method: str, seed: np.random.Generator, **settings: Any) -> Learner:
    """A fresh learner of ``method`` with ``settings`` (fields every batch learner has, such
    as ``standardise``) and its defaults for the rest."""
    if method == "IGL":
        return BatchIGL(seed=seed, **settings)
    if method == "AI-IGL":
        return AIIGL(seed=seed, **settings)
    if method == "IGL-P":
        return IGLP(seed=seed, **settings)
    if method == "CB":
        return ContextualBandit(seed=seed, **settings)
    if method == "VI-IGL":
        return VIIGL(seed=seed, **settings)
    return Supervised(seed=seed, **settings)


def greedy_scores(learner: PolicyLearner, env: Environment) -> dict[str, float]:
    """The greedy policy on the test contexts: its accuracy, its expected true reward, and
    the share of contexts where its action's reward is negative (a hated topic)."""
    test_x, test_y = env.test_set()
    reward = env.reward(Contexts(test_x, test_y), learner.predict(test_x))
    return {"accuracy": learner.accuracy(test_x, test_y), "reward": float(np.mean(reward)),
            "negative": float(np.mean(reward < 0))}


def chance_scores(env: Environment) -> dict[str, float]:
    """Uniform play's accuracy and expected true reward on the test contexts."""
    test_x, test_y = env.test_set()
    contexts = Contexts(test_x, test_y)
    rewards = np.stack([env.reward(contexts, np.full(len(test_y), a))
                        for a in range(env.n_actions)])
    return {"accuracy": 1.0 / env.n_actions, "reward": float(rewards.mean())}


def fit_scores(method: str, log: InteractionLog, env: Environment,
               seed: np.random.Generator) -> dict[str, float]:
    """Fit ``method`` on ``log`` and score its greedy policy; with the fit's wall time."""
    start = time.perf_counter()
    with warnings.catch_warnings():  # 2021 IGL's identifiability warnings are expected here
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        learner = make_learner(method, seed).fit(log)
    seconds = time.perf_counter() - start
    return {**greedy_scores(learner, env), "seconds": seconds}


def run_trial(config: FamilyConfig, trial: int, seed: np.random.SeedSequence) -> list[dict]:
    """One trial: a fresh uniform log of every family, every method fitted on it; the tidy rows
    (settings: family, environment). A pure function of its arguments; each family's and
    method's seed depends on the trial and on their positions in :data:`FAMILIES` and
    :data:`METHODS` only, so leaving one out changes no other result."""
    trial_seed = integer_seed(seed)
    rows: list[dict] = []
    for family in config.families:
        f = FAMILIES.index(family)
        name = config.environment_name(family)
        env = named_environment(name, config.data_dir)
        samples = config.samples_of(family)
        log = env.log(samples, np.random.default_rng([trial_seed, f]))
        settings = {"family": family, "environment": name}
        for method in config.methods:
            if not_run(method, env) is not None:
                continue
            learner_seed = np.random.default_rng([trial_seed, f, 1 + METHODS.index(method)])
            found = fit_scores(method, log, env, learner_seed)
            if family != "personalised":
                del found["negative"]
            rows += tidy_rows(EXPERIMENT, method, trial, trial_seed, samples, found, settings)
    return rows


def run(config: FamilyConfig, execution: Execution | None = None,
        folder: Path | None = None) -> pd.DataFrame:
    """Run every trial (recorded in ``folder`` when given) and return the tidy table."""
    rows = run_trials(partial(run_trial, config), config.trials, config.seed,
                      execution or Execution(), folder, fingerprint(config), "family trials")
    return tidy_frame(rows)


@dataclass(frozen=True)
class Verdict:
    """A method's measured standing in one family, relative to chance and to CB."""

    mean: float
    std: float
    worst: float
    n: int
    works: int
    """Trials that close at least :data:`WORKS` of the gap between chance and CB."""
    fails: int
    """Trials that close at most :data:`FAILS` of it."""
    words: str
    """The verdict in words."""


def verdict(values: np.ndarray, chance: float, reference: float | None) -> Verdict:
    """Word the scores of one method's trials against chance and the reference (CB's mean):
    'works' when every trial closes at least :data:`WORKS` of the gap, 'fails' when every one
    closes at most :data:`FAILS`, 'unstable' when each does one or the other but not all the
    same, 'partly' otherwise; 'no reference' without CB or when CB is not above chance."""
    values = np.asarray(values, dtype=np.float64)
    std = float(values.std(ddof=1)) if len(values) > 1 else float("nan")
    mean, worst, n = float(values.mean()), float(values.min()), len(values)
    if reference is None:
        return Verdict(mean, std, worst, n, 0, 0, "no reference (CB not run: add CB to "
                                                  "--methods)")
    if reference <= chance + 1e-9:
        return Verdict(mean, std, worst, n, 0, 0, "no reference (CB not above chance)")
    gain = (values - chance) / (reference - chance)
    works, fails = int((gain >= WORKS).sum()), int((gain <= FAILS).sum())
    if works == len(values):
        words = "works"
    elif fails == len(values):
        words = "fails"
    elif works + fails == len(values):
        words = f"unstable: works in {works}, fails in {fails} of {len(values)} trials"
    else:
        words = f"partly: {100 * float(gain.mean()):.0f} % of CB's gain over chance"
    return Verdict(mean, std, worst, n, works, fails, words)


def verdicts(frame: pd.DataFrame, config: FamilyConfig) -> dict[tuple[str, str], Verdict]:
    """The verdict of every measured (family, method), on the family's measure."""
    out: dict[tuple[str, str], Verdict] = {}
    for family in config.families:
        name = measure_of(family)
        chance = chance_scores(named_environment(config.environment_name(family),
                                                 config.data_dir))[name]
        scores = metric(frame, name)
        scores = scores[scores["family"] == family]
        cb = scores[scores["method"] == "CB"]["value"]
        reference = float(cb.mean()) if len(cb) else None
        for method in config.methods:
            values = scores[scores["method"] == method].sort_values("trial")["value"]
            if len(values):
                out[family, method] = verdict(values.to_numpy(), chance, reference)
    return out


TITLES = {"2021": "2021: y ⟂ (x, a) given r", "action-inclusive":
          "action-inclusive: y ⟂ x given (a, r)",
          "personalised": "personalised: 3 states, a definitely-bad flag",
          "grounded": "grounded: per-user words",
          "noisy": "noisy: 10 % of the feedback replaced by noise"}
"""Column titles: the family and the independence its feedback satisfies."""
ABOUT = {
    "2021": "The feedback is an image of a digit drawn given the reward alone, so y ⟂ (x, a) | r "
            "holds, and with it the weaker y ⟂ x | (a, r); the reward has two states.",
    "action-inclusive": "The feedback shows the digit (a + 6 r - 3) mod 10: it depends on the "
                        "action as well as the reward, so y ⟂ (x, a) | r is violated while "
                        "y ⟂ x | (a, r) holds.",
    "personalised": "Vowpal Wabbit's IGL simulator: the reward is +1 on the user's enjoyed "
                    "topic, -1 on the hated one and 0 elsewhere, and the feedback a token "
                    "(click/like, skip/dislike, none); one hated reaction in ten is the "
                    "flagged 'dislike'. Both users share one vocabulary, so the tokens depend "
                    "on the latent state alone; but there are three states, and the enjoyed "
                    "and hated topics are equally rare under uniform play, so a learner that "
                    "decodes a binary reward from feedback alone cannot tell which rare "
                    "reaction is the good one: only the definitely-bad signal separates them.",
    "grounded": "Half of the users say a good word when the action is right and a bad one "
                "otherwise; the other half swap good and bad words, and the user is part of "
                "the context. The feedback depends on the context, so both y ⟂ (x, a) | r and "
                "y ⟂ x | (a, r) are violated; the personalised model holds, with two states "
                "and no definitely-bad flag.",
    "noisy": "The 2021 task, but each feedback image is replaced, with probability 0.1, by an "
             "image of a digit from 2 to 9 drawn independently of (x, a, r) (the stand-in for "
             "the VI-IGL paper's EMNIST letters). y ⟂ (x, a) | r still holds; the feedback "
             "has three kinds of image instead of two.",
}
"""What each family's feedback is and which independence it satisfies."""
ASSUMPTIONS = {
    ("2021", "IGL"): "its assumption y ⟂ (x, a) | r holds",
    ("2021", "AI-IGL"): "its assumption y ⟂ x | (a, r) holds (implied by the 2021 one)",
    ("2021", "IGL-P"): "its model holds: the neutral feedback (r = 0) is the same whatever the "
                       "action; two states and no flag",
    ("action-inclusive", "IGL"): "its assumption y ⟂ (x, a) | r is violated (y shows a)",
    ("action-inclusive", "AI-IGL"): "its assumption y ⟂ x | (a, r) holds",
    ("action-inclusive", "IGL-P"): "its model needs neutral feedback (r = 0) that says nothing "
                                   "about the action, and here a wrong action's feedback shows "
                                   "(a - 3) mod 10, which names the action: that assumption is "
                                   "violated",
    ("personalised", "IGL"): "it assumes a binary reward and reads no definitely-bad signal, "
                             "so enjoyed and hated reactions are symmetric to it",
    ("personalised", "AI-IGL"): "it assumes a binary reward and reads no definitely-bad "
                                "signal, so enjoyed and hated reactions are symmetric to it",
    ("personalised", "IGL-P"): "its model holds: three latent states and a definitely-bad "
                               "signal that says which extreme reaction is negative",
    ("grounded", "IGL"): "its assumption y ⟂ (x, a) | r is violated (y depends on the user)",
    ("grounded", "AI-IGL"): "its assumption y ⟂ x | (a, r) is violated (y depends on the user)",
    ("grounded", "IGL-P"): "its model holds: the feedback may depend on the user, and a wrong "
                           "action's word is the same whatever the action; the right action's "
                           "word, good or bad, is the extreme one",
    ("noisy", "IGL"): "its assumption y ⟂ (x, a) | r holds; the noise images are a third kind "
                      "of feedback its decoder must place",
    ("noisy", "AI-IGL"): "its assumption y ⟂ x | (a, r) holds (implied by the 2021 one)",
    ("noisy", "IGL-P"): "its model holds: the noise, like the unrewarded feedback, says nothing "
                        "about the action; two states and no flag",
    ("noisy", "VI-IGL"): "its assumption y ⟂ (x, a) | r holds, and it asks the decoded reward "
                         "to explain all that the feedback says about (x, a), which the noise "
                         "does not change",
    ("2021", "VI-IGL"): "its assumption y ⟂ (x, a) | r holds",
    ("action-inclusive", "VI-IGL"): "its assumption y ⟂ (x, a) | r is violated (y shows a): a "
                                    "binary R_psi cannot explain what the feedback says about "
                                    "the action",
    ("personalised", "VI-IGL"): "it assumes a binary reward and reads no definitely-bad "
                                "signal, so enjoyed and hated reactions are symmetric to it",
    ("grounded", "VI-IGL"): "its assumption y ⟂ (x, a) | r is violated (y depends on the user)",
}
"""Whether each IGL learner's assumption holds in each family (fixed facts about the
environments, not claims about the results)."""
READS = {"CB": "reads the true reward: the reference", "SUP": "reads the labels"}


def _score(value: float, family: str) -> str:
    return f"{100 * value:.1f} %" if measure_of(family) == "accuracy" else f"{value:+.3f}"


def _cell(v: Verdict, family: str) -> str:
    if measure_of(family) == "accuracy":
        return f"{100 * v.mean:.1f} ± {format_std(100 * v.std, 1)}"
    return f"{v.mean:+.3f} ± {format_std(v.std, 3)}"


def _short(words: str) -> str:
    return words.split(":")[0]


def markdown(frame: pd.DataFrame, config: FamilyConfig) -> str:
    """The report: one table (methods × families, each cell mean ± std and the verdict), the
    chance row, and a paragraph per family generated from the numbers."""
    found = verdicts(frame, config)
    envs = {family: named_environment(config.environment_name(family), config.data_dir)
            for family in config.families}
    chance = {family: chance_scores(env) for family, env in envs.items()}
    header = [f"{f} ({config.environment_name(f)}), "
              + ("accuracy (%)" if measure_of(f) == "accuracy" else "expected true reward")
              for f in config.families]
    lines = [
        "# The IGL family: where each learner works and where it fails",
        "",
        f"Each trial logs uniform play: {config.samples} interactions of each "
        f"classification-derived family ({config.dataset}) and {config.personalised_samples} "
        f"of the personalised simulator; every method is fitted on the same log with its "
        f"default settings and linear models, and its greedy policy scored on the family's "
        f"test contexts: accuracy on the classification-derived families, expected true reward "
        f"(+1 enjoyed topic, -1 hated, 0 otherwise; every user and time of day once) on the "
        f"personalised simulator. {trials_text(config.trials)}.",
        "",
        "| method | " + " | ".join(header) + " |",
        "|---|" + "---|" * len(header),
    ]
    for method in config.methods:
        cells = []
        for family in config.families:
            v = found.get((family, method))
            reason = not_run(method, envs[family])
            cells.append("not run" if reason else "–" if v is None
                         else f"{_cell(v, family)} ({_short(v.words)})")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines.append("| chance (uniform play) | " + " | ".join(
        _score(chance[f][measure_of(f)], f).replace(" %", "") for f in config.families) + " |")
    lines += [
        "",
        f"{std_note(config.trials)} Verdicts compare every trial with chance and CB's mean: "
        f"'works' when each trial closes at least {WORKS:.0%} of the gap between chance and CB, "
        f"'fails' when each closes at most {FAILS:.0%}, 'unstable' when the trials split "
        f"between the two, 'partly' otherwise. IGL: 2021 IGL (BatchIGL); CB: the true reward; "
        f"SUP: the labels; VI-IGL: the conditional mutual information learner (Hu et al. "
        f"2024).",
    ]
    for family in config.families:
        lines += ["", f"## {TITLES[family]}", "", paragraph(family, config, frame, found,
                                                           chance[family], envs[family])]
    return "\n".join(lines) + "\n"


def _mean(frame: pd.DataFrame, family: str, method: str, name: str) -> float:
    """The mean of metric ``name`` of ``method`` in ``family`` over trials."""
    rows = metric(frame, name)
    return float(rows[(rows["family"] == family) & (rows["method"] == method)]["value"].mean())


def paragraph(family: str, config: FamilyConfig, frame: pd.DataFrame,
              found: dict[tuple[str, str], Verdict], chance: dict[str, float],
              env: Environment) -> str:
    """One family's paragraph: the fixed text on its feedback and each learner's assumption,
    and what was measured, worded from the numbers."""
    name = measure_of(family)
    what = ("accuracy of the greedy policy on the held-out test images" if name == "accuracy"
            else "expected true reward of the greedy policy over every (user, time of day), "
                 "each once: the simulator has no other contexts")
    parts = [ABOUT[family],
             f"Measured: the {what} ({config.environment_name(family)}, "
             f"{config.samples_of(family)} uniform interactions, {trials_text(config.trials)}); "
             f"chance {_score(chance[name], family)}."]
    for method in config.methods:
        reason = not_run(method, env)
        if reason:
            parts.append(f"{reason}.")
            continue
        v = found.get((family, method))
        if v is None:
            continue
        said = f"{method}: {_score(v.mean, family)} (worst trial {_score(v.worst, family)}"
        if family == "personalised":
            said += (f"; enjoyed topic in {100 * _mean(frame, family, method, 'accuracy'):.0f} %"
                     f", a hated one in {100 * _mean(frame, family, method, 'negative'):.0f} % "
                     f"of contexts")
        said += ")"
        if method in READS:
            parts.append(f"{said}; it {READS[method]}.")
        else:
            parts.append(f"{said}, {v.words}; {ASSUMPTIONS[family, method]}.")
    return " ".join(parts)


def reproduce(config: FamilyConfig, out: str | Path, execution: Execution | None = None) -> str:
    """Run the comparison and write family.csv, family.md and config.json to ``out``; finished
    trials are recorded in ``out/trials`` so an interrupted run resumes."""
    config.check()
    for family in config.families:
        named_environment(config.environment_name(family), config.data_dir)  # data first
    folder = prepare_output(out)
    frame = run(config, execution, folder)
    return write_outputs(folder, EXPERIMENT, frame, markdown(frame, config), config)
