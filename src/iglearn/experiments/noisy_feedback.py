"""Noisy feedback (Hu, Farnia and Leung, ICML 2024): VI-IGL against 2021 IGL, AI-IGL, E2G and
the baselines when a share p of the feedback images is replaced by a noise digit.

Each trial logs uniform play of the noisy task for every noise kind
(:mod:`iglearn.envs.noisy`: independent of (x, a, r), tied to the action, to the context, to
both) and every p > 0, and of the 2021 task for p = 0 (the same task whatever the kind, run
once); the logs of a trial share their contexts, actions and rewards, only the feedback
differs. It fits on each VI-IGL (:class:`~iglearn.learners.vi_igl.VIIGL`), 2021 IGL
(:class:`~iglearn.learners.BatchIGL`), AI-IGL (:class:`~iglearn.learners.AIIGL`), CB (the true
reward) and SUP (the labels), all with their default settings and linear models, and scores
the argmax policy on the task's test contexts; CB and SUP read no feedback, so they are fitted
once per trial and stand in every setting. E2G (:class:`~iglearn.learners.E2G`, online, the
paper's schedule) plays where its assumption y ⟂ (x, a) | r holds: at p = 0 and on
independent noise. Each batch method fits a worker's trials side by side (``fit_many``).

The VI-IGL paper's figures (read from secondary summaries, unverified) stand beside ours:
they are on its own MNIST task, whose noise images were EMNIST letters.
"""

from __future__ import annotations

import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from iglearn.envs.base import Environment
from iglearn.envs.named import named_environment
from iglearn.experiments.configs import NOISE_KINDS, NOISY_METHODS, NoisyFeedbackConfig
from iglearn.experiments.results import (
    accuracy_summary,
    fit_scored,
    markdown_table,
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
from iglearn.experiments.runner import Execution, StackedTrials, fingerprint, run_trials
from iglearn.learners import AIIGL, BatchIGL, ContextualBandit, IdentifiabilityWarning, Supervised
from iglearn.learners.vi_igl import VIIGL
from iglearn.seeding import integer_seed

EXPERIMENT = "noisy_feedback"
BATCH = {"VI-IGL": VIIGL, "IGL": BatchIGL, "AI-IGL": AIIGL, "CB": ContextualBandit,
         "SUP": Supervised}
"""The batch learners compared, by name."""
FEEDBACK_BLIND = ("CB", "SUP")
"""The methods that read no feedback (CB the true reward, SUP the labels): they are fitted
once per trial and their rows stand in every setting (:func:`setting_seeds`)."""
CLEAN = "none"
"""The kind recorded for p = 0: the 2021 task, shared by every kind."""
PAPER: dict[tuple[str, float], dict[str, float]] = {
    ("independent", 0.1): {"VI-IGL": 0.710, "E2G": 0.250},
         ("none", 0.0): {"VI-IGL": 0.816, "E2G": 0.822}}
"""The VI-IGL paper's reported accuracy (a fraction) on its MNIST task, by (noise kind, p):
VI-IGL and E2G with 10 % of the feedback images replaced by EMNIST letters, and without
noise. Unverified (read from secondary summaries)."""


def settings_run(config: NoisyFeedbackConfig) -> list[tuple[str, float]]:
    """The (kind, p) pairs a trial runs: p = 0 once (kind :data:`CLEAN`) when asked, then each
    kind at each p > 0."""
    pairs = [(CLEAN, 0.0)] if 0.0 in config.p else []
    return pairs + [(kind, p) for kind in config.kinds for p in config.p if p > 0]


def environment_name(kind: str, dataset: str) -> str:
    """The named environment of a noise kind (:data:`CLEAN`: the 2021 task)."""
    return dataset if kind == CLEAN else f"noisy-{kind}-{dataset}"


def setting_seeds(trial_seed: int, kind: str, p: float) -> list[np.random.SeedSequence]:
    """The seeds of one (kind, p) in one trial: the log's, then one per method of
    :data:`~iglearn.experiments.configs.NOISY_METHODS`; they depend on the trial, the kind and
    p only, so that leaving out a kind, a p or a method changes no other result. The log's
    and those of the methods in :data:`FEEDBACK_BLIND` depend on the trial alone: every
    setting of a trial logs the same contexts, actions and rewards (the environments draw
    them alike; only the feedback differs), so those methods' fits are the same in every
    setting."""
    own = np.random.SeedSequence([trial_seed, (CLEAN, *NOISE_KINDS).index(kind),
                                  round(1e6 * p)]).spawn(1 + len(NOISY_METHODS))
    shared = np.random.SeedSequence([trial_seed]).spawn(1 + len(NOISY_METHODS))
    return [shared[0], *(shared[1 + m] if method in FEEDBACK_BLIND else own[1 + m]
                         for m, method in enumerate(NOISY_METHODS))]


def play_e2g(env: Environment, rounds: int, seed: np.random.SeedSequence) -> dict[str, float]:
    """E2G played online for ``rounds`` rounds with the paper's schedule (4000 warm-up rounds
    or a third of the rounds, whichever is fewer; a re-fit every 100): its greedy policy's
    test accuracy, running average reward and seconds."""
    from iglearn.envs.play import play
    from iglearn.learners import E2G, PaperSchedule

    learner_rng, feedback_rng = (np.random.default_rng(s) for s in seed.spawn(2))
    learner = E2G(env.n_actions, env.context_dim, env.feedback_dim,
                  PaperSchedule(warmup_rounds=min(4000, rounds // 3)), seed=learner_rng)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        points = play(learner, env, rounds, feedback_rng)
    test_x, test_y = env.test_set()
    accuracy = learner.accuracy(test_x, test_y) if learner.policy_ is not None else 1 / 10
    return {"accuracy": accuracy, "average_reward": points[-1].average_reward,
            "seconds": time.perf_counter() - start}


def e2g_applies(kind: str) -> bool:
    """Whether E2G's assumption y ⟂ (x, a) | r holds on a kind: the 2021 task and
    independent noise."""
    return kind in (CLEAN, "independent")


def run_stacked(config: NoisyFeedbackConfig, trials: list[int],
                seeds: list[np.random.SeedSequence]) -> list[list[dict]]:
    """Per trial, the tidy rows of every method at every (kind, p) (settings columns ``kind``
    and ``p``) at step = the log's size (E2G: its rounds): accuracy, seconds, and the fit's
    own measures."""
    trial_seeds = [integer_seed(seed) for seed in seeds]
    rows: list[list[dict]] = [[] for _ in trials]
    blind: dict[str, list[dict[str, float | None]]] = {}  # FEEDBACK_BLIND's fits, per trial
    for kind, p in settings_run(config):
        env = named_environment(environment_name(kind, config.dataset), config.data_dir, p)
        spawned = [setting_seeds(trial_seed, kind, p) for trial_seed in trial_seeds]
        logs = [env.log(config.samples, np.random.default_rng(each[0])) for each in spawned]
        test_x, test_y = env.test_set()
        settings = {"kind": kind, "p": p}
        for m, method in enumerate(NOISY_METHODS):
            if method not in config.methods:
                continue
            if method == "E2G":
                if e2g_applies(kind):
                    for t, each in enumerate(spawned):
                        played = play_e2g(env, config.e2g_rounds, each[1 + m])
                        rows[t] += tidy_rows(EXPERIMENT, method, trials[t], trial_seeds[t],
                                             config.e2g_rounds, played, settings)
                continue
            if method in blind:  # the same seeds and logged (x, a, r) as its first fit
                scored = blind[method]
            else:
                scored = fit_scored(BATCH[method], [each[1 + m] for each in spawned], logs,
                                    test_x, test_y)
                if method in FEEDBACK_BLIND:
                    blind[method] = scored
            for t, found in enumerate(scored):
                rows[t] += tidy_rows(EXPERIMENT, method, trials[t], trial_seeds[t],
                                     config.samples, found, settings)
        del logs
    return rows


def run(config: NoisyFeedbackConfig, execution: Execution | None = None,
        folder: Path | None = None) -> pd.DataFrame:
    """Run every trial (recording each in ``folder`` when given, and skipping those already
    there) and return the tidy table."""
    rows = run_trials(StackedTrials(partial(run_stacked, config)), config.trials, config.seed,
                      execution or Execution(), folder, fingerprint(config),
                      "noisy-feedback trials")
    return tidy_frame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (a fraction) per kind, p and method: mean, std (ddof=1), min and trials, and
    the mean seconds per fit (:func:`~iglearn.experiments.results.accuracy_summary`)."""
    return accuracy_summary(frame, ["kind", "p", "method"])


def _paper(kind: str, p: float, method: str) -> str:
    found = PAPER.get((kind, p), {}).get(method)
    return "–" if found is None else f"{100 * found:.1f}"


def markdown(table: pd.DataFrame, config: NoisyFeedbackConfig) -> str:
    """The summary as Markdown: one row per (kind, p), accuracy (%) of every method, the best
    iglearn learner that reads no reward, and the paper's figures (unverified)."""
    methods: list[str] = [m for m in NOISY_METHODS if m in set(table["method"])]
    names = [{"IGL": "2021 IGL"}.get(m, m) for m in methods]
    listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)
    lines = [
        f"# Noisy feedback: {listed}",
        "",
        f"The 2021 task on {config.dataset} with a share p of the feedback images replaced by "
        f"a noise digit (2-9): independent of (x, a, r) (the stand-in for the paper's EMNIST "
        f"letters), tied to the action, to the context, or to both. {config.samples} uniform "
        f"samples per trial and setting; {trials_text(config.trials)}; linear models, each "
        f"learner's default settings. p = 0 is the 2021 task (kind 'none'), run once.",
        "",
        "| kind | p | " + " | ".join(f"{m} (%)" for m in methods)
        + " | best without reward | paper VI-IGL (%) | paper E2G (%) |",
        "|---|---|" + "---|" * (len(methods) + 3),
    ]
    cells = {(row.kind, float(row.p), row.method): row for row in table.itertuples()}
    seconds: list[dict[str, object]] = []
    beaten: list[str] = []
    for kind, p in dict.fromkeys((row.kind, float(row.p)) for row in table.itertuples()):
        found = [cells.get((kind, p, m)) for m in methods]
        shown = [percent(r.mean, r.std) if r is not None else "–" for r in found]
        igl = {m: r.mean for m, r in zip(methods, found, strict=True)
               if r is not None and m not in ("CB", "SUP")}
        best = max(igl, key=lambda m: igl[m]) if igl else "–"
        if "VI-IGL" in igl and "IGL" in igl and igl["IGL"] > igl["VI-IGL"]:
            beaten.append(f"{kind} p = {p:g} ({100 * igl['IGL']:.1f} % against "
                          f"{100 * igl['VI-IGL']:.1f} %)")
        lines.append(f"| {kind} | {p:g} | " + " | ".join(shown) + f" | {best} | "
                     f"{_paper(kind, p, 'VI-IGL')} | {_paper(kind, p, 'E2G')} |")
        seconds.append({"kind": kind, "p": f"{p:g}",  # one row of the seconds table
                        **{m: r.seconds_per_fit for m, r in zip(methods, found, strict=True)
                           if r is not None}})
    lines += [
        "",
        f"{std_note(config.trials)} Chance is 10 %. 'Best without reward': the learner with the "
        f"highest mean among those that read only the feedback (CB reads the true reward, SUP "
        f"the labels)."
        + (f" E2G plays online ({config.e2g_rounds} rounds) where its assumption "
           f"y ⟂ (x, a) | r holds: p = 0 and independent noise." if "E2G" in methods else ""),
        "",
        "2021 IGL beats VI-IGL at: " + ("; ".join(beaten) if beaten else "no setting") + ".",
        "",
        "The paper's columns are the VI-IGL paper's reported accuracies on its own MNIST task "
        "(60000 samples; noise images EMNIST letters): unverified, read from secondary "
        "summaries, not the same data. It reports VI-IGL "
        f"{100 * PAPER['independent', 0.1]['VI-IGL']:.1f} % against E2G "
        f"{100 * PAPER['independent', 0.1]['E2G']:.1f} % with 10 % of the feedback replaced by "
        f"noise independent of (x, a, r), and {100 * PAPER[CLEAN, 0.0]['VI-IGL']:.1f} % against "
        f"{100 * PAPER[CLEAN, 0.0]['E2G']:.1f} % without noise.",
        "",
        "## Mean seconds per fit",
        "",
        markdown_table(pd.DataFrame(seconds)),
    ]
    return "\n".join(lines) + "\n"


def plot(frame: pd.DataFrame, path: Path) -> None:
    """Accuracy (%) against p, one panel per noise kind and one line per method (mean ± std;
    p = 0 is the shared 2021 task), with the paper's reported figures where it gives them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    accuracy = metric(frame, "accuracy")
    kinds = [k for k in dict.fromkeys(accuracy["kind"]) if k != CLEAN] or [CLEAN]
    fig, axes = plt.subplots(1, len(kinds), figsize=(4 * len(kinds), 4), squeeze=False,
                             sharey=True)
    clean = accuracy[accuracy["kind"] == CLEAN]
    for ax, kind in zip(axes[0], kinds, strict=True):
        rows = pd.concat([clean, accuracy[accuracy["kind"] == kind]]) if kind != CLEAN else clean
        for i, name in enumerate(NOISY_METHODS):
            ours = rows[rows["method"] == name].groupby("p")["value"]
            if len(ours):
                mean, std = 100 * ours.mean(), 100 * ours.std().fillna(0)
                ax.errorbar(mean.index, mean, yerr=std, marker="o", capsize=3, color=f"C{i}",
                            label=name)
        for (paper_kind, p), figures in PAPER.items():
            if paper_kind in (kind, CLEAN) and (paper_kind == CLEAN or kind == "independent"):
                for method, value in figures.items():
                    colour = f"C{NOISY_METHODS.index(method)}"
                    ax.plot([p], [100 * value], "s", color=colour, alpha=0.5, markersize=8)
        ax.set_title(f"noise {kind}")
        ax.set_xlabel("p (share of feedback replaced)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("policy accuracy (%)")
    axes[0][0].legend(fontsize=8, title="squares: paper (unverified)", title_fontsize=7)
    fig.suptitle("Noisy feedback (mean ± std over trials)")
    save_figure(fig, path)


def reproduce(config: NoisyFeedbackConfig, out: str | Path,
              execution: Execution | None = None) -> str:
    """Run the comparison and write noisy_feedback.csv, .md, .png and config.json to ``out``;
    finished trials are recorded in ``out/trials`` so an interrupted run resumes."""
    config.check()
    named_environment(config.dataset, config.data_dir)  # data first
    folder = prepare_output(out)
    frame = run(config, execution, folder)
    return write_outputs(folder, EXPERIMENT, frame, markdown(summary(frame), config), config,
                         plot)
