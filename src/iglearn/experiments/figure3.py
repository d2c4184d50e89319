"""Figure 3 of the paper: E2G against an online CB learner on the MNIST environment.

Each trial plays E2G (which sees feedback vectors only), epoch-greedy CB (which sees the
true reward) with the same schedule, and uniform play, for ``rounds`` rounds of Algorithm 1
(one exploration step plus n_i exploitation steps each), all with
:func:`iglearn.envs.play.play` on the same contexts. At every ``eval_every`` rounds it
records, against the number of interactions so far (``step``), the running average of the
true reward and, once a policy is fitted, its greedy test accuracy, its fit's indicator
(Eq. 9) and, where the indicator certifies Delta_psi > 0, Lemma 5's lower bound on its value.
Settings under which no learner would ever exploit are refused before anything runs.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from iglearn import theory
from iglearn.envs import Environment, make_environment
from iglearn.envs.play import Checkpoint, ContextStream, play
from iglearn.errors import IGLearnError
from iglearn.experiments.configs import Figure3Config
from iglearn.experiments.results import (
    format_std,
    metric,
    percent,
    prepare_output,
    save_figure,
    std_note,
    tidy_frame,
    tidy_rows,
    trials_text,
    write_outputs,
)
from iglearn.experiments.runner import Execution, fingerprint, run_trials
from iglearn.learners import (
    EpochGreedy,
    OnlineContextualBandit,
    OnlineLearner,
    UniformLearner,
)
from iglearn.learners.e2g import E2G
from iglearn.learners.schedules import make_schedule
from iglearn.seeding import integer_seed

if TYPE_CHECKING:
    from matplotlib.axes import Axes

METHODS = ("E2G", "CB", "Uniform")


def make_learner(method: str, config: Figure3Config, env: Environment,
                 seed: np.random.Generator) -> OnlineLearner:
    """A fresh learner called ``method`` ('E2G', 'CB' or 'Uniform')."""
    schedule = make_schedule(config.schedule, config.warmup, config.eta, config.iota)
    if method == "E2G":
        return E2G(env.n_actions, env.context_dim, env.feedback_dim, schedule,
                   config.update_every, config.exploit, config.policy, config.decoder,
                   seed=seed)
    if method == "CB":
        return OnlineContextualBandit(env.n_actions, env.context_dim, schedule,
                                      config.update_every, config.exploit, config.policy,
                                      seed=seed)
    if method == "Uniform":
        return UniformLearner(env.n_actions, seed)
    raise IGLearnError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")


def measure(learner: OnlineLearner, config: Figure3Config, env: Environment,
            point: Checkpoint) -> dict[str, float | bool | None]:
    """The metrics of a checkpoint: the running average reward, and for a learner with a
    policy its greedy test accuracy, the indicator of its last fit and Lemma 5's lower bound
    on its value where that fit certifies Delta_psi > 0 (else None: not measured); under the
    data-driven schedule, whether a fit has been certified."""
    metrics: dict[str, float | bool | None] = {"average_reward": point.average_reward}
    if isinstance(learner, EpochGreedy) and learner.policy_ is not None:
        test_x, test_y = env.test_set()
        fit = learner.fits_[-1]
        metrics["accuracy"] = learner.accuracy(test_x, test_y)
        metrics["indicator"] = fit["indicator"]
        metrics["value_lower_bound"] = value_bound(fit, env.n_actions, learner.schedule.iota)
    if isinstance(learner, EpochGreedy) and config.schedule == "data-driven":
        metrics["certified"] = learner.certified_
    return metrics


def value_bound(fit: dict, n_actions: int, iota: float) -> float | None:
    """Lemma 5's lower bound on V(pi) from a fit's indicator, clipped to [0, 1], or None where
    the indicator does not certify Delta_psi > 0 (V(pi_bad) = 1/K, as in classification)."""
    bound = theory.lemma5_value_lower_bound(fit["indicator"], fit["indicator_samples"],
                                            n_actions, iota, 1.0 / n_actions)
    return None if bound is None else min(1.0, max(0.0, bound))


def run_trial(config: Figure3Config, trial: int, seed: np.random.SeedSequence) -> list[dict]:
    """Play E2G, CB and uniform play in one trial; the tidy rows of every checkpoint (step:
    the interactions so far; setting: the round). A pure function of its arguments."""
    env = make_environment(config.dataset, config.data_dir)
    trial_seed = integer_seed(seed)
    rows: list[dict] = []
    interactions = config.rounds
    contexts = ContextStream(env, np.random.default_rng([trial_seed, 0]))
    for index, method in enumerate(METHODS):
        # The same contexts for every method; each learner and its feedback its own Generator.
        rounds = interactions if method == "Uniform" else config.rounds
        measured = play_method(method, config, env, contexts, rounds,
                               np.random.default_rng([trial_seed, 1, index]),
                               np.random.default_rng([trial_seed, 2, index]))
        if method == "E2G":
            interactions = measured[-1][0].interactions  # uniform play spans the same range
        for point, metrics in measured:
            rows += tidy_rows("figure3", method, trial, trial_seed, point.interactions,
                              metrics, {"round": point.round})
    return rows


def play_method(method: str, config: Figure3Config, env: Environment, contexts: ContextStream,
                rounds: int, learner_rng: np.random.Generator,
                feedback_rng: np.random.Generator) -> list[tuple[Checkpoint, dict]]:
    """Play a fresh ``method`` learner for ``rounds`` rounds on ``contexts``; each
    checkpoint with its metrics (:func:`measure`), the last also with the seconds played."""
    learner = make_learner(method, config, env, learner_rng)
    measured: list[tuple[Checkpoint, dict]] = []

    def evaluate(point: Checkpoint) -> None:
        measured.append((point, measure(learner, config, env, point)))

    start = time.perf_counter()
    play(learner, env, rounds, feedback_rng, contexts=contexts, on_checkpoint=evaluate,
         learns_from="reward" if method == "CB" else "feedback",
         checkpoints=range(config.eval_every, rounds, config.eval_every))
    measured[-1][1]["seconds"] = time.perf_counter() - start
    return measured


def run(config: Figure3Config, execution: Execution | None = None,
        folder: Path | None = None) -> pd.DataFrame:
    """Run every trial (in parallel and recorded in ``folder`` as ``execution`` says) and
    return the tidy table."""
    config.check(make_environment(config.dataset, config.data_dir).n_actions)
    rows = run_trials(partial(run_trial, config), config.trials, config.seed,
                      execution or Execution(), folder, fingerprint(config), "Figure 3 trials")
    return tidy_frame(rows)


def final_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Each method's last value of each metric per trial."""
    last = frame.sort_values("step", kind="stable").groupby(["method", "trial", "metric"],
                                                            sort=False).tail(1)
    return last.reset_index(drop=True)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Final values per method and metric: mean, std (ddof=1), min and count over trials."""
    table = final_values(frame).groupby(["method", "metric"], sort=False)["value"].agg(
        mean="mean", std="std", min="min", n="count").reset_index()
    order = {m: i for i, m in enumerate(METHODS)}
    return table.sort_values(["method", "metric"], key=lambda c: c.map(order)
                             if c.name == "method" else c).reset_index(drop=True)


def markdown(table: pd.DataFrame, frame: pd.DataFrame, config: Figure3Config) -> str:
    """The final values as a Markdown table (accuracy in percent), with what ± is and,
    under the data-driven schedule, whether any fit was certified."""
    interactions = final_values(frame).groupby("method")["step"].mean()
    lines = [
        f"# Figure 3: online, {config.dataset}, {config.rounds} rounds, {config.schedule} "
        f"schedule, {trials_text(config.trials)}, {config.policy} policy",
        "",
        "| Method | interactions | greedy accuracy (%) | min (%) | average reward | "
        "seconds |",
        "|---|---|---|---|---|---|",
    ]
    cells = {(r.method, r.metric): r for r in table.itertuples()}
    for method in METHODS:
        if (method, "average_reward") not in cells:
            continue
        acc = cells.get((method, "accuracy"))
        reward = cells[(method, "average_reward")]
        seconds = cells[(method, "seconds")]  # every method reports its seconds
        accuracy = ((percent(acc.mean, acc.std), f"{100 * acc.min:.2f}") if acc is not None
                    else ("n/a", "n/a"))
        lines.append(f"| {method} | {interactions[method]:.0f} | {accuracy[0]} | "
                     f"{accuracy[1]} | {reward.mean:.4f} ± {format_std(reward.std, 4)} | "
                     f"{seconds.mean:.1f} |")
    lines += ["", f"Final values. {std_note(config.trials)} Uniform play has no policy to "
              f"score (n/a)."]
    if config.schedule == "data-driven":
        lines += ["", *certification(frame)]
    return "\n".join(lines) + "\n"


def certification(frame: pd.DataFrame) -> list[str]:
    """Per learner of the data-driven schedule, a line saying in how many trials a fit was
    certified (indicator > 1/K + K eps_D), or that none was."""
    certified = metric(final_values(frame), "certified")
    lines = []
    for method in METHODS:
        part = certified[certified["method"] == method]
        if part.empty:
            continue
        count, trials = int((part["value"] > 0).sum()), len(part)
        if count:
            lines.append(f"{method}: a fit was certified in {count} of {trials} trials.")
        else:
            lines.append(f"{method}: no fit was certified in any of its {trials} trials, so it "
                         f"explored throughout and never played its policy; its accuracy is "
                         f"that of an uncertified fit.")
    return lines


def plot(frame: pd.DataFrame, path: Path, dataset: str = "mnist") -> None:
    """Running average reward and greedy test accuracy (%) against interactions: the mean
    over trials with a band of one standard deviation, one curve per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    draw(axes[0], frame, "average_reward")
    draw(axes[1], frame, "accuracy")
    name = "MNIST" if dataset == "mnist" else dataset
    fig.suptitle(f"Figure 3: E2G and online CB on {name} (mean ± std over trials)")
    save_figure(fig, path)


def reproduce(config: Figure3Config, out: str | Path,
              execution: Execution | None = None) -> str:
    """Run Figure 3 and write figure3.csv, figure3.md, figure3.png and config.json; finished
    trials are recorded in ``out/trials`` for resumption."""
    config.check(make_environment(config.dataset, config.data_dir).n_actions)  # data too
    folder = prepare_output(out)
    return write_results(run(config, execution, folder), config, folder)


def draw(ax: Axes, frame: pd.DataFrame, name: str) -> None:
    """One panel of :func:`plot`: ``name`` ('average_reward' or 'accuracy', in %) against
    interactions, the mean over trials with a band of one standard deviation per method."""
    label, scale = {"average_reward": ("running average reward", 1.0),
                    "accuracy": ("greedy policy test accuracy (%)", 100.0)}[name]
    for i, method in enumerate(METHODS):
        part = metric(frame, name)
        part = part[part["method"] == method]
        if part.empty:
            continue
        curve = part.groupby("round").agg(x=("step", "mean"), mean=("value", "mean"),
                                          std=("value", "std"))
        mean, std = scale * curve["mean"], scale * curve["std"].fillna(0.0)
        ax.plot(curve["x"], mean, color=f"C{i}", label=method)
        ax.fill_between(curve["x"], mean - std, mean + std, color=f"C{i}", alpha=0.2)
    ax.set_xlabel("interactions")
    ax.set_ylabel(label)
    ax.grid(alpha=0.3)
    ax.legend()


def write_results(frame: pd.DataFrame, config: Figure3Config, folder: Path) -> str:
    """Write figure3.csv, figure3.md, figure3.png and config.json of a run to ``folder``;
    the Markdown table."""
    return write_outputs(folder, "figure3", frame, markdown(summary(frame), frame, config),
                         config, lambda f, path: plot(f, path, config.dataset))
