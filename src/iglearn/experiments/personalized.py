"""Personalised feedback with three latent states: IGL-P against the true-reward contextual
bandit on Vowpal Wabbit's IGL simulator, its continuous-feedback variant and grounded digits,
and against the 2021 IGL learner on logged interactions.

**Online.** Each trial plays every method on the same stream of contexts (context t at
interaction t), all with the same exploration (``exploration``: by default inverse gap
weighting with the growing gamma sqrt(1 + t) / gamma0 of Zhang, Zhang, Luo and Mineiro,
NeurIPS 2024; or epsilon-greedy, epsilon 0.2, VW's protocol) around a reward regressor
re-fitted as the interactions grow (:class:`~iglearn.learners.regression.OnlineRegression`):
IGL-P with the conservative (Lipschitz) estimate, with Zhang et al.'s estimate and with VW's
step rule (:class:`~iglearn.learners.iglp.OnlineIGLP`), and CB, the same loop reading the true
reward (:class:`~iglearn.learners.regression.OnlineRegressionCB`). Every method draws its feedback
from a generator with the same seed. Checkpoints record the running average true reward and
the greedy policy's accuracy on the task's test contexts (the enjoyed topic of each user).

**Vowpal Wabbit.** With ``vw`` 'auto' (the default) or 'on', each trial also plays VW's
``--experimental_igl`` (:class:`~iglearn.experiments.vowpal.VowpalIGL`, driven round by round
with DSJSON lines) on every task, on the same context stream, with a feedback generator of the
same seed, as the ``VW`` method, always epsilon-greedy (epsilon 0.2).
:func:`~iglearn.experiments.vowpal.vw_status` checks first that the installed
``vowpalwabbit`` package can; when it is missing (or cannot), 'auto' says so in the report's
VW line and 'on' stops with the install command.

**Batch.** Each trial also logs ``batch_samples`` uniform interactions of the token-feedback
simulator and fits IGL-P and 2021 IGL (:class:`~iglearn.learners.BatchIGL`) on them: how
often each picks the enjoyed topic.
"""

from __future__ import annotations

import time
import warnings
from functools import partial
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from iglearn.envs.base import Environment
from iglearn.envs.named import named_environment
from iglearn.envs.play import Checkpoint, ContextStream, play
from iglearn.errors import IGLearnError
from iglearn.experiments.configs import ONLINE, PersonalizedConfig
from iglearn.experiments.results import (
    format_std,
    markdown_table,
    metric,
    prepare_output,
    save_figure,
    std_note,
    tidy_frame,
    tidy_rows,
    trials_text,
    write_outputs,
)
from iglearn.experiments.runner import Execution, fingerprint, run_trials
from iglearn.experiments.vowpal import VW_ARGS, VowpalIGL, vw_status
from iglearn.learners import BatchIGL, IdentifiabilityWarning
from iglearn.learners.iglp import IGLP, OnlineIGLP
from iglearn.learners.regression import OnlineRegression, OnlineRegressionCB
from iglearn.seeding import integer_seed

EXPERIMENT = "personalized"
BATCH = ("IGL-P", "IGL")
"""The batch methods on uniform logs: IGL-P and 2021 IGL."""
VW = "VW"
"""The method name of Vowpal Wabbit's --experimental_igl in the tables."""


ESTIMATOR: dict[str, Literal["step", "lipschitz", "zhang"]] = {
    "IGL-P": "lipschitz", "IGL-P zhang": "zhang", "IGL-P step": "step"}
"""The estimator of each IGL-P method."""


def make_learner(method: str, env: Environment, config: PersonalizedConfig,
                 rng: np.random.Generator) -> OnlineRegression | VowpalIGL:
    """A fresh online learner of ``method`` for ``env``, exploring as ``config`` says."""
    if method == VW:
        return VowpalIGL(env.n_actions, config.epsilon, seed=rng)
    if method == "CB":
        return OnlineRegressionCB(env.n_actions, env.context_dim, config.exploration,
                                  config.epsilon, gamma0=config.gamma0, seed=rng)
    return OnlineIGLP(env.n_actions, env.context_dim, env.feedback_dim, config.exploration,
                      config.epsilon, estimator=ESTIMATOR[method], gamma0=config.gamma0,
                      seed=rng)


def play_method(method: str, config: PersonalizedConfig, env: Environment, task: str,
                contexts: ContextStream, learner_rng: np.random.Generator,
                feedback_rng: np.random.Generator) -> list[tuple[Checkpoint, dict]]:
    """Play a fresh ``method`` learner on ``contexts``; each checkpoint with its running
    average reward and greedy test accuracy (the last also with the seconds played and the
    CPU seconds per 1,000 rounds, the checkpoints' evaluations included)."""
    learner = make_learner(method, env, config, learner_rng)
    test_x, test_y = env.test_set()
    rounds = config.rounds_of(task)
    measured: list[tuple[Checkpoint, dict]] = []

    def evaluate(point: Checkpoint) -> None:
        found: dict[str, float] = {"average_reward": point.average_reward}
        if learner.fitted_:
            found["accuracy"] = learner.accuracy(test_x, test_y)
        measured.append((point, found))

    stops = set(range(config.eval_every, rounds, config.eval_every))
    if config.report_at < rounds:
        stops.add(config.report_at)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        play(learner, env, rounds, feedback_rng, contexts=contexts, on_checkpoint=evaluate,
             learns_from="reward" if method == "CB" else "feedback", checkpoints=sorted(stops))
    finally:
        if isinstance(learner, VowpalIGL):
            learner.close()
    measured[-1][1]["seconds"] = time.perf_counter() - start
    measured[-1][1]["cpu_per_1000"] = 1000 * (time.process_time() - cpu) / rounds
    return measured


def run_trial(config: PersonalizedConfig, trial: int, seed: np.random.SeedSequence,
              with_vw: bool = False) -> list[dict]:
    """One trial: every online method on every task (same contexts, same feedback seed), VW
    too when ``with_vw``, then the batch fits; the tidy rows (settings: task, round). A pure
    function of its arguments."""
    trial_seed = integer_seed(seed)
    rows: list[dict] = []
    for t, task in enumerate(config.tasks):
        env = named_environment(task, config.data_dir)
        contexts = ContextStream(env, np.random.default_rng([trial_seed, t, 0]))
        for m, method in enumerate((*ONLINE, VW)):
            if method not in config.methods and not (method == VW and with_vw):
                continue
            measured = play_method(method, config, env, task, contexts,
                                   np.random.default_rng([trial_seed, t, 1, m]),
                                   np.random.default_rng([trial_seed, t, 2]))
            for point, found in measured:
                rows += tidy_rows(EXPERIMENT, method, trial, trial_seed, point.interactions,
                                  found, {"task": task, "round": point.round})
    if config.batch_samples:
        rows += batch_rows(config, trial, trial_seed)
    return rows


def batch_rows(config: PersonalizedConfig, trial: int, trial_seed: int) -> list[dict]:
    """IGL-P and 2021 IGL fitted on one uniform log of the token-feedback simulator: the share
    of test contexts on which each picks the enjoyed topic."""
    env = named_environment("personalised")
    log = env.log(config.batch_samples, np.random.default_rng([trial_seed, 99]))
    test_x, test_y = env.test_set()
    rows: list[dict] = []
    for m, method in enumerate(BATCH):
        start = time.perf_counter()
        learner_seed = np.random.default_rng([trial_seed, 99, m])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IdentifiabilityWarning)
            learner = (IGLP(seed=learner_seed) if method == "IGL-P"
                       else BatchIGL(seed=learner_seed)).fit(log)
        found = {"accuracy": learner.accuracy(test_x, test_y),
                 "seconds": time.perf_counter() - start}
        rows += tidy_rows(EXPERIMENT, method, trial, trial_seed, config.batch_samples, found,
                          {"task": "personalised (batch, uniform log)", "round": 0})
    return rows


def run(config: PersonalizedConfig, execution: Execution | None = None,
        folder: Path | None = None, with_vw: bool = False) -> pd.DataFrame:
    """Run every trial (recorded in ``folder`` when given), with VW when ``with_vw``, and
    return the tidy table."""
    rows = run_trials(partial(run_trial, config, with_vw=with_vw), config.trials, config.seed,
                      execution or Execution(), folder, fingerprint(config, with_vw=with_vw),
                      "personalised trials")
    return tidy_frame(rows)


def _cell(values: pd.Series, scale: float = 1.0) -> str:
    if values.empty:
        return "–"
    return (f"{scale * values.mean():.3f} ± {format_std(scale * values.std(), 3)} "
            f"(worst {scale * values.min():.3f})")


def summary(frame: pd.DataFrame, config: PersonalizedConfig) -> pd.DataFrame:
    """Per task and method (VW last, when it played): the running average true reward at
    ``report_at`` and at the end (mean ± std, worst trial), the final greedy accuracy, the
    seconds per trial and the CPU seconds per 1,000 rounds."""
    reward = metric(frame, "average_reward")
    accuracy = metric(frame, "accuracy")
    seconds = metric(frame, "seconds")
    cpu = metric(frame, "cpu_per_1000")
    out = []
    for task in config.tasks:
        last = config.rounds_of(task)
        for method in (*config.methods, VW):
            mine = reward[(reward["task"] == task) & (reward["method"] == method)]
            if mine.empty:
                continue
            early = mine[mine["round"] == min(config.report_at, last)]["value"]
            final = mine[mine["round"] == last]["value"]
            acc = accuracy[(accuracy["task"] == task) & (accuracy["method"] == method)
                           & (accuracy["round"] == last)]["value"]
            secs = seconds[(seconds["task"] == task) & (seconds["method"] == method)]["value"]
            per_1000 = cpu[(cpu["task"] == task) & (cpu["method"] == method)]["value"]
            out.append({"task": task, "method": method,
                        "rounds": last,
                        f"reward @ {config.report_at}": _cell(early) if last > config.report_at
                        else "–",
                        "reward @ end": _cell(final),
                        "final accuracy (%)": _cell(acc, 100.0),
                        "seconds": f"{secs.mean():.1f}",
                        "CPU-s / 1,000 rounds": f"{per_1000.mean():.3f}"
                        if len(per_1000) else "–"})
    return pd.DataFrame(out)


def batch_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Batch accuracy per method: mean ± std, worst trial, trials below 95 %."""
    accuracy = metric(frame, "accuracy")
    batch = accuracy[accuracy["round"] == 0]
    out = []
    for method in BATCH:
        values = batch[batch["method"] == method]["value"]
        if len(values):
            out.append({"method": method, "enjoyed topic picked (%)": _cell(values, 100.0),
                        "trials below 95 %": int((values < 0.95).sum()),
                        "trials": len(values)})
    return pd.DataFrame(out)


def markdown(frame: pd.DataFrame, config: PersonalizedConfig, vw: str | None) -> str:
    """The report: online table, batch table, notes; ``vw`` is why VW did not play (None when
    it did, or was turned off)."""
    if config.vw == "off":
        vw_line = "VW: not run (--vw off)."
    elif vw is not None:
        vw_line = f"VW: not run: {vw}."
    else:
        vw_line = ("VW: Vowpal Wabbit's --experimental_igl ("
                   + VW_ARGS.format(epsilon=config.epsilon, seed=0).split(" --quiet")[0]
                   + ", seeded per trial), played round by round from Python with DSJSON "
                   "lines on the same contexts and feedback seeds.")
    explored = (f"epsilon-greedy (epsilon {config.epsilon})" if config.exploration == "epsilon"
                else f"inverse gap weighting with gamma_t = sqrt(1 + t) / {config.gamma0:g} "
                     f"(Zhang et al.'s schedule)")
    others = (f", {config.short_rounds} on the other tasks"
              if any(task != "personalised" for task in config.tasks) else "")
    lines = [
        "# Personalised feedback: IGL-P on Vowpal Wabbit's IGL simulator",
        "",
        f"Online: {explored} for every iglearn method (VW: epsilon-greedy, epsilon "
        f"{config.epsilon}), "
        f"{config.rounds} rounds on VW's simulator (2 users, 7 topics, click/like/skip/"
        f"dislike/none)"
        f"{others}; every method sees the same "
        f"contexts; {trials_text(config.trials)}. Running average true reward (+1 enjoyed topic, "
        f"-1 hated, 0 otherwise; grounded digits: 1 when right), mean ± std and the worst "
        f"trial.",
        "",
        markdown_table(summary(frame, config)),
        "",
        std_note(config.trials) + " The largest running average epsilon-greedy can reach on "
        f"VW's simulator is {1 - config.epsilon:.2f} (a random topic is as often hated as "
        "enjoyed); inverse gap weighting explores less as its gamma grows.",
        "",
        "IGL-P: the conservative (Lipschitz) estimate; IGL-P zhang: Zhang et al.'s ramp on h "
        "(beta 0.3, sigma 0.1); IGL-P step: VW's step rule; CB: the "
        "same loop fitted to the true reward. CPU-s / 1,000 rounds: the process's CPU time "
        "over the whole play, checkpoint evaluations included.",
        "",
        vw_line,
    ]
    batch = batch_summary(frame)
    if not batch.empty:
        lines += ["", f"## Batch: {config.batch_samples} uniform interactions of VW's "
                      f"simulator (token feedback)", "", markdown_table(batch)]
    return "\n".join(lines) + "\n"


def plot(frame: pd.DataFrame, path: Path) -> None:
    """Running average true reward against rounds, one panel per task: the mean over trials
    with a band of one standard deviation, one curve per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reward = metric(frame, "average_reward")
    tasks = list(dict.fromkeys(reward["task"]))
    fig, axes = plt.subplots(1, max(1, len(tasks)), figsize=(5 * max(1, len(tasks)), 4),
                             squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=False):
        for i, method in enumerate((*ONLINE, VW)):
            part = reward[(reward["task"] == task) & (reward["method"] == method)]
            if part.empty:
                continue
            curve = part.groupby("round")["value"].agg(["mean", "std"])
            std = curve["std"].fillna(0.0)
            ax.plot(curve.index, curve["mean"], color=f"C{i}", label=method)
            ax.fill_between(curve.index, curve["mean"] - std, curve["mean"] + std,
                            color=f"C{i}", alpha=0.2)
        ax.set_title(task)
        ax.set_xlabel("rounds")
        ax.set_ylabel("running average true reward")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Personalised IGL (mean ± std over trials)")
    save_figure(fig, path)


def reproduce(config: PersonalizedConfig, out: str | Path,
              execution: Execution | None = None) -> str:
    """Run the comparison and write personalized.csv, .md, .png and config.json to ``out``;
    finished trials are recorded in ``out/trials`` so an interrupted run resumes."""
    config.check()
    for task in config.tasks:
        named_environment(task, config.data_dir)  # data first
    vw = vw_status() if config.vw != "off" else None
    if config.vw == "on" and vw is not None:
        raise IGLearnError(f"--vw on: {vw}")
    folder = prepare_output(out)
    frame = run(config, execution, folder, with_vw=config.vw != "off" and vw is None)
    return write_outputs(folder, EXPERIMENT, frame, markdown(frame, config, vw), config,
                         plot)
