"""``iglearn reproduce EXPERIMENT`` and ``iglearn sweep``: the paper's experiments, with one
option per field of each experiment's settings and of :class:`Execution`."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from iglearn.cli.paths import check_paths
from iglearn.cli.settings import add_settings, build_settings, flag, value_parser
from iglearn.errors import IGLearnError, TooFewInteractionsError
from iglearn.experiments.runner import Execution
from iglearn.files import removed_if_failed
from iglearn.progress import printable

CONFIG, EXECUTION = "config", "execution"


@dataclass(frozen=True)
class Experiment:
    """One ``iglearn reproduce`` command."""

    name: str
    """The command's name."""
    help: str
    """One line for the list of commands."""
    description: str
    """What the command does, for its --help."""
    module: str
    """The module of :mod:`iglearn.experiments` that runs it (imported when the command
    runs): its ``reproduce`` function."""
    settings: str
    """The name of the experiment's settings class (a dataclass) in
    :mod:`iglearn.experiments.configs`, which imports no heavy library (its options are
    built from it)."""
    files: str
    """The files it writes, for the closing line."""
    aliases: tuple[str, ...] = ()
    """Other names the command answers to."""

    @property
    def defaults(self) -> object:
        """The experiment's settings with the options' defaults."""
        return getattr(importlib.import_module("iglearn.experiments.configs"), self.settings)()

    @property
    def reproduce(self) -> Callable[[Any, str, Execution], str]:
        """Runs the experiment: (settings, output folder, execution) -> Markdown summary."""
        return self._module().reproduce

    def _module(self) -> Any:
        return importlib.import_module(f"iglearn.experiments.{self.module}")


EXPERIMENTS = (
    Experiment("table1", "Table 1: SUP, CB and IGL in batch mode on MNIST",
               "Table 1: each trial logs fresh uniform interactions and fits SUP, CB and IGL; "
               "accuracy is the argmax policy's on the test images.",
               "table1", "Table1Config",
               "table1.csv, table1.md, table1.png and config.json"),
    Experiment("sample-complexity", "SUP, CB and IGL accuracy against the number of samples",
               "Accuracy of SUP, CB and IGL against the number of logged samples: how much "
               "data grounding costs.",
               "sample_complexity", "SampleComplexityConfig",
               "sample_complexity.csv, .md, .png and config.json"),
    Experiment("unsupervised", "Section 6: unsupervised reward decoding vs IGL",
               "Section 6 (Theorem 3): in every environment of two families whose feedback "
               "looks the same under uniform play, compare a baseline that decodes the reward "
               "by clustering feedback with IGL.",
               "unsupervised", "UnsupervisedConfig",
               "unsupervised.csv, unsupervised.md, unsupervised.png and config.json"),
    Experiment("figure3", "Figure 3: E2G and online CB on MNIST",
               "Figure 3: each trial plays E2G (feedback vectors only), epoch-greedy CB (true "
               "reward) with the same schedule, and uniform play; it records the running "
               "average reward and the greedy policy's test accuracy.",
               "figure3", "Figure3Config",
               "figure3.csv, figure3.md, figure3.png and config.json"),
    Experiment("action-inclusive", "AI-IGL vs 2021 IGL, CB and SUP on action-inclusive feedback",
               "Action-inclusive feedback (Xie et al. 2022): each trial logs fresh uniform "
               "interactions on action-inclusive MNIST and on the simulated BCI at every noise "
               "level, and fits AI-IGL, 2021 IGL, CB (true reward) and SUP (labels); accuracy "
               "is the argmax policy's on the task's test contexts, beside the AI-IGL paper's "
               "reported figures on its own tasks.",
               "action_inclusive", "ActionInclusiveConfig",
               "action_inclusive.csv, action_inclusive.md, action_inclusive.png and "
               "config.json"),
    Experiment("personalised", "IGL-P on VW's IGL simulator, its continuous variant and "
               "grounded digits",
               "Personalised feedback (Maghakian et al. 2023): each trial plays IGL-P (the "
               "conservative estimate, Zhang et al.'s and VW's step rule) and a true-reward "
               "CB, all with the same exploration (IGW with Zhang et al.'s growing gamma, or "
               "epsilon-greedy), on the same context stream of VW's IGL simulator, its "
               "continuous-feedback variant and grounded digits, and fits IGL-P and 2021 IGL "
               "on a uniform log; Vowpal Wabbit's --experimental_igl joins where the installed "
               "vowpalwabbit package can drive it.",
               "personalized", "PersonalizedConfig",
               "personalized.csv, personalized.md, personalized.png and config.json",
               aliases=("personalized",)),
    Experiment("family", "every IGL learner on every kind of feedback: where each works",
               "The IGL family side by side: each trial logs uniform play on four environment "
               "families (2021 feedback, action-inclusive, VW's personalised simulator, "
               "grounded), fits 2021 IGL, AI-IGL, IGL-P, CB (true reward) and SUP (labels) on "
               "each log, and scores the greedy policy on held-out contexts (accuracy; expected "
               "true reward on the simulator); the report words where each works and fails "
               "from the numbers and names the assumption each family violates.",
               "family", "FamilyConfig", "family.csv, family.md and config.json"),
    Experiment("noisy-feedback", "VI-IGL vs 2021 IGL, AI-IGL, E2G, CB and SUP on noisy feedback",
               "Noisy feedback (Hu, Farnia and Leung 2024): each trial logs fresh uniform "
               "interactions of the 2021 task with a share p of the feedback images replaced "
               "by a noise digit (independent of everything, tied to the action, the context, "
               "or both), and fits VI-IGL, 2021 IGL, AI-IGL, CB (true reward) and SUP (labels); "
               "E2G plays online where its assumption holds (--methods); accuracy is the argmax "
               "policy's on the test images, beside the VI-IGL paper's reported figures "
               "(unverified).",
               "noisy_feedback", "NoisyFeedbackConfig",
               "noisy_feedback.csv, noisy_feedback.md, noisy_feedback.png and config.json"),
)



def sweep_defaults() -> Any:
    """The settings a sweep starts from: Table 1's, with fewer trials and IGL alone."""
    from iglearn.experiments.configs import Table1Config

    return Table1Config(trials=2, methods=("IGL",))


def add_run_options(parser: argparse.ArgumentParser, out: str) -> None:
    """--out, and one option per field of :class:`Execution` (where and how trials run), its
    ``show_progress`` as --quiet."""
    group = add_settings(parser, Execution(), EXECUTION, "output and execution",
                         Execution.__doc__, skip=("show_progress",))
    group.add_argument("--out", default=out, metavar="DIR",
                       help="output folder; running again there resumes its recorded trials")
    group.add_argument("--quiet", dest=f"{EXECUTION}.show_progress", action="store_false",
                       default=argparse.SUPPRESS,
                       help="hide the progress bar over trials (default: shown)")


def _check_out(config: object, out: str) -> None:
    """--out may not be, lie inside or hold the MNIST folder --data-dir (``--fresh`` deletes
    OUT/trials)."""
    data_dir = getattr(config, "data_dir", None)
    check_paths([("--data-dir", data_dir)] if data_dir else [], [("--out", out)])


def _execution(args: argparse.Namespace) -> Execution:
    """The execution options; a Ray cluster that cannot be reached is told before anything
    is read or written (:func:`~iglearn.processes.check_reachable`), and so is a
    ``--ray-address`` without ``--backend ray``, which would run the trials here."""
    execution = build_settings(args, Execution(), EXECUTION)
    if execution.ray_address and execution.backend != "ray":
        raise IGLearnError(f"--ray-address {execution.ray_address}: trials run on a Ray "
                           f"cluster with --backend ray only; add --backend ray, or drop "
                           f"--ray-address to run them here")
    if execution.backend == "ray" and execution.ray_address:
        from iglearn.processes import check_reachable
        check_reachable(execution.ray_address)
    return execution


@contextmanager
def _removed_if_empty(out: str) -> Iterator[None]:
    """Within the block, --out and the folders above it that do not exist yet are removed
    again if the block raises and they are empty: a run that fails before it records a trial
    (a setting its environment refuses, too little memory) creates no output; one that
    recorded trials keeps them, to resume."""
    with removed_if_failed([*reversed(Path(out).parents), Path(out)]):
        yield


@contextmanager
def _samples_named(config: Any, grid: dict[str, list] | None = None) -> Iterator[None]:
    """Within the block, a log too small to fit is told as the option that sized it
    (``--samples 5``, a ``*_samples`` setting of ``config`` or of a sweep's ``grid``, whose
    value, or one of whose values, is the log's size) with the least it needs; before, the
    message named the environment's log and no option."""
    try:
        yield
    except TooFewInteractionsError as e:
        from iglearn.data.limits import MIN_PER_ACTION

        for f in fields(config):
            if f.name.endswith("samples"):
                given = (grid or {}).get(f.name, getattr(config, f.name))
                if e.n in (given if isinstance(given, list | tuple) else [given]):
                    raise IGLearnError(
                        f"{flag(f.name)} {e.n} is too few for the experiment's "
                        f"{e.n_actions} actions: a fit needs at least {e.minimum} "
                        f"interactions ({MIN_PER_ACTION} per action); give {flag(f.name)} "
                        f"{e.minimum} or more") from None
        raise


def _run(experiment: Experiment, args: argparse.Namespace) -> int:
    config = build_settings(args, experiment.defaults, CONFIG)
    _check_out(config, args.out)
    with _removed_if_empty(args.out), _samples_named(config):
        print(experiment.reproduce(config, args.out, _execution(args)))
    print(f"wrote {printable(Path(args.out))}/{experiment.files}")
    return 0


def _grid_item(text: str) -> tuple[str, list]:
    """argparse type of --set: ``NAME=V1,V2,...``, each value read as option --NAME reads it."""
    from iglearn.experiments.configs import SWEEPABLE, Table1Config, repeated

    name, sep, values = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or not values:
        raise argparse.ArgumentTypeError(f"{text!r}: write NAME=V1,V2,... (e.g. lr=0.01,0.02)")
    if name not in SWEEPABLE:
        raise argparse.ArgumentTypeError(f"cannot sweep {name!r}; choose from "
                                         f"{', '.join(SWEEPABLE)}")
    parse = value_parser(Table1Config, name)
    try:
        parsed = [parse(value) for value in values.split(",")]
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{name}: {e}") from e
    problem = repeated(name, parsed)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem.removeprefix("--"))
    return name, parsed


def _sweep(args: argparse.Namespace) -> int:
    from iglearn.experiments.sweep import reproduce_sweep

    names = [name for name, _ in args.set]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        raise IGLearnError(f"--set {twice.replace('_', '-')} is given twice; give its values "
                           f"once, comma-separated ({twice}=V1,V2)")
    both = next((name for name in names if f"{CONFIG}.{name}" in vars(args)), None)
    if both is not None:
        option = "--" + both.replace("_", "-")
        raise IGLearnError(f"{option} is swept by --set {both.replace('_', '-')}, which gives "
                           f"its values; drop one of them")
    base = build_settings(args, sweep_defaults(), CONFIG)
    _check_out(base, args.out)
    with _removed_if_empty(args.out), _samples_named(base, dict(args.set)):
        print(reproduce_sweep(base, dict(args.set), args.out, _execution(args)))
    print(f"wrote {printable(Path(args.out))}/sweep.csv, sweep.md and config.json")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Register ``reproduce EXPERIMENT`` and ``sweep`` on the ``iglearn`` parser."""
    reproduce = commands.add_parser("reproduce", help="reproduce an experiment of the paper",
                                    description="Reproduce an experiment of the paper.")
    experiments = reproduce.add_subparsers(dest="experiment", required=True,
                                           metavar="EXPERIMENT")
    for experiment in EXPERIMENTS:
        experiments.add_parser(experiment.name, help=experiment.help,
                               description=experiment.description,
                               aliases=list(experiment.aliases),
                               build=lambda parser, experiment=experiment:
                               _experiment_options(experiment, parser))
    commands.add_parser(
        "sweep", help="batch fits over a grid of settings, one tidy table", build=_sweep_options,
        description="Fit the chosen methods with Table 1's settings at every combination of "
                    "--set values; every combination uses the same trial seeds.")


def _experiment_options(experiment: Experiment, parser: argparse.ArgumentParser) -> None:
    """The arguments of ``reproduce EXPERIMENT``."""
    defaults = experiment.defaults
    add_settings(parser, defaults, CONFIG, f"settings ({type(defaults).__name__})",
                 aliases={"families": "--family"})
    add_run_options(parser, f"results/{experiment.name}")
    parser.set_defaults(run=lambda args: _run(experiment, args), reads=(f"{CONFIG}.data_dir",))


def _sweep_options(sweep: argparse.ArgumentParser) -> None:
    """The arguments of ``sweep``."""
    from iglearn.experiments.configs import SWEEPABLE

    sweep.add_argument("--set", action="append", type=_grid_item, default=[],
                       metavar="NAME=V1,V2",
                       help=f"a setting and its values, one of {', '.join(SWEEPABLE)}; "
                            f"repeat for a grid (default: no grid, one point)")
    add_settings(sweep, sweep_defaults(), CONFIG, "settings at every point (Table1Config)")
    add_run_options(sweep, "results/sweep")
    sweep.set_defaults(run=_sweep, reads=(f"{CONFIG}.data_dir",))
