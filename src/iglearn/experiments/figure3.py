"""Figure 3 of the paper: E2G against an online CB learner on the MNIST environment.

Each trial plays E2G (which sees feedback vectors only), epoch-greedy CB (which sees the
true reward) with the same schedule, and uniform play, for ``rounds`` rounds of Algorithm 1
(one exploration step plus n_i exploitation steps each). At every ``eval_every`` rounds it
records, against the number of interactions so far, the running average of the true reward
and the test accuracy of the current greedy policy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from iglearn import theory
from iglearn.envs import Contexts, Environment, make_environment
from iglearn.errors import IGLearnError
from iglearn.experiments.results import (
    format_std,
    mean_std,
    prepare_output,
    write_atomic,
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

METHODS = ("E2G", "CB", "Uniform")


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

    def check(self) -> None:
        """Raise IGLearnError on settings that cannot run."""
        if self.eval_every % self.update_every:
            raise IGLearnError(f"--eval-every {self.eval_every} must be a multiple of "
                               f"--update-every {self.update_every}")
        if self.rounds < 1 or self.trials < 1:
            raise IGLearnError("--rounds and --trials must be positive")
        make_schedule(self.schedule, self.warmup, self.eta, self.iota)


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


class ContextStream:
    """A trial's contexts, drawn once (in chunks, as needed) and replayed in the same order to
    every method, so the methods meet the same contexts and no image is generated twice."""

    def __init__(self, env: Environment, rng: np.random.Generator, chunk: int = 8192):
        self.env, self.rng, self.chunk = env, rng, chunk
        self._parts: list[Contexts] = []
        self._drawn = 0

    def read(self, start: int, count: int) -> Contexts:
        """Contexts ``start .. start + count - 1`` of the stream."""
        while self._drawn < start + count:
            self._parts.append(self.env.contexts(self.chunk, self.rng))
            self._drawn += self.chunk
        if len(self._parts) > 1:
            self._parts = [Contexts(np.concatenate([c.features for c in self._parts]),
                                    np.concatenate([c.label for c in self._parts]))]
        whole = self._parts[0]
        return Contexts(whole.features[start:start + count], whole.label[start:start + count])


def play(learner: OnlineLearner, env: Environment, contexts: ContextStream,
         rng: np.random.Generator, rounds: int, eval_every: int, reads: str) -> list[dict]:
    """Play ``rounds`` rounds on the stream's contexts, acting on whole blocks at once; one
    record per checkpoint. ``rng`` draws the feedback; ``reads`` is what ``learn`` receives:
    'feedback' or 'reward'."""
    test_x, test_y = env.test_set()
    records, total, start = [], 0.0, time.perf_counter()
    while learner.round_ < rounds:
        block = learner.block_size(min(rounds, (learner.round_ // eval_every + 1) * eval_every))
        shown = contexts.read(learner.interactions_, block)
        actions, probabilities = learner.act_batch(shown.features)
        reward = env.reward(shown, actions)  # hidden from E2G
        total += float(reward.sum())
        signal = (env.feedback(shown, actions, reward, rng) if reads == "feedback"
                  else reward)
        learner.learn_batch(shown.features, actions, probabilities, signal)
        if learner.round_ % eval_every == 0 or learner.round_ >= rounds:
            record = {"rounds": learner.round_, "interactions": learner.interactions_,
                      "average_reward": total / learner.interactions_}
            if isinstance(learner, EpochGreedy) and learner.policy_ is not None:
                record["accuracy"] = learner.accuracy(test_x, test_y)
                fit = learner.fits_[-1]
                record["indicator"] = fit["indicator"]
                record["value_lower_bound"] = theory.value_lower_bound(
                    fit["indicator"], fit["indicator_samples"], env.n_actions,
                    learner.schedule.iota, 1.0 / env.n_actions)
            records.append(record)
    records[-1]["seconds"] = time.perf_counter() - start
    return records


def run_trial(config: Figure3Config, trial: int, seed: np.random.SeedSequence) -> list[dict]:
    """Play E2G, CB and uniform play in one trial; tidy rows (method, trial, seed, rounds,
    interactions, metric, value). A pure function of its arguments."""
    env = make_environment(config.dataset, config.data_dir)
    trial_seed = integer_seed(seed)
    rows: list[dict] = []
    interactions = config.rounds
    contexts = ContextStream(env, np.random.default_rng([trial_seed, 0]))
    for index, method in enumerate(METHODS):
        # The same contexts for every method; each learner and its feedback its own Generator.
        learner = make_learner(method, config, env, np.random.default_rng([trial_seed, 1,
                                                                           index]))
        reads = "reward" if method == "CB" else "feedback"
        rounds = interactions if method == "Uniform" else config.rounds
        records = play(learner, env, contexts, np.random.default_rng([trial_seed, 2, index]),
                       rounds, config.eval_every, reads)
        if method == "E2G":
            interactions = records[-1]["interactions"]  # uniform play spans the same range
        for record in records:
            for metric, value in record.items():
                if metric not in ("rounds", "interactions"):
                    rows.append({"method": method, "trial": trial, "seed": trial_seed,
                                 "rounds": record["rounds"],
                                 "interactions": record["interactions"],
                                 "metric": metric, "value": float(value)})
    return rows


def run(config: Figure3Config, execution: Execution | None = None,
        folder: Path | None = None) -> pd.DataFrame:
    """Run every trial (in parallel and recorded in ``folder`` as ``execution`` says) and
    return the tidy table."""
    config.check()
    rows = run_trials(partial(run_trial, config), config.trials, config.seed,
                      execution or Execution(), folder, fingerprint(config), "Figure 3 trials")
    return pd.DataFrame(rows)


def final_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Each method's last value of each metric per trial."""
    last = frame.sort_values("interactions").groupby(["method", "trial", "metric"],
                                                     sort=False).tail(1)
    return last.reset_index(drop=True)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Final values per method and metric: mean, std, min and count over trials."""
    last = final_values(frame)
    table = mean_std(last, ["method", "metric"], "value")
    order = {m: i for i, m in enumerate(METHODS)}
    return table.sort_values(["method", "metric"], key=lambda c: c.map(order)
                             if c.name == "method" else c).reset_index(drop=True)


def markdown(table: pd.DataFrame, frame: pd.DataFrame, config: Figure3Config) -> str:
    """The final values as a Markdown table."""
    interactions = final_values(frame).groupby("method")["interactions"].mean()
    lines = [
        f"# Figure 3: online, {config.dataset}, {config.rounds} rounds, {config.schedule} "
        f"schedule, {config.trials} trials, {config.policy} policy",
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
        seconds = cells.get((method, "seconds"))
        accuracy = ((f"{100 * acc.mean:.2f} ± {format_std(100 * acc.std)}",
                     f"{100 * acc.min:.2f}") if acc is not None else ("n/a", "n/a"))
        lines.append(f"| {method} | {interactions[method]:.0f} | {accuracy[0]} | "
                     f"{accuracy[1]} | {reward.mean:.4f} ± {format_std(reward.std, 4)} | "
                     f"{seconds.mean:.1f} |")
    return "\n".join(lines) + "\n"



def plot(frame: pd.DataFrame, path: Path, dataset: str = "mnist") -> None:
    """Running average reward and greedy test accuracy against interactions: the mean over
    trials with a band of one standard deviation, one curve per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, metric, label in ((axes[0], "average_reward", "running average reward"),
                              (axes[1], "accuracy", "greedy policy test accuracy")):
        for i, method in enumerate(METHODS):
            part = frame[(frame["method"] == method) & (frame["metric"] == metric)]
            if part.empty:
                continue
            curve = part.groupby("rounds").agg(x=("interactions", "mean"),
                                               mean=("value", "mean"), std=("value", "std"))
            std = curve["std"].fillna(0.0)
            ax.plot(curve["x"], curve["mean"], color=f"C{i}", label=method)
            ax.fill_between(curve["x"], curve["mean"] - std, curve["mean"] + std,
                            color=f"C{i}", alpha=0.2)
        ax.set_xlabel("interactions")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    name = "MNIST" if dataset == "mnist" else dataset
    fig.suptitle(f"Figure 3: E2G and online CB on {name} (mean ± std over trials)")
    fig.tight_layout()
    write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)


def reproduce(config: Figure3Config, out: str | Path,
              execution: Execution | None = None) -> str:
    """Run Figure 3 and write figure3.csv, figure3.md, figure3.png and config.json; finished
    trials are recorded in ``out/trials`` for resumption."""
    config.check()
    make_environment(config.dataset, config.data_dir)  # fails early on missing data
    folder = prepare_output(out)
    return write_results(run(config, execution, folder), config, folder)


def write_results(frame: pd.DataFrame, config: Figure3Config, folder: Path) -> str:
    """Write figure3.csv, figure3.md, figure3.png and config.json of a run to ``folder``;
    the Markdown table."""
    return write_outputs(folder, "figure3", frame, markdown(summary(frame), frame, config),
                         config, lambda f, path: plot(f, path, config.dataset))
