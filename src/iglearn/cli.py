"""The ``iglearn`` command line.

Every user error prints one line on stderr (``iglearn: error: ...``) and exits with code 2;
``--verbose`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from iglearn.errors import IGLearnError
from iglearn.progress import one_line_warnings


def _execution(args: argparse.Namespace):
    from iglearn.experiments.runner import Execution

    return Execution(backend=args.backend, jobs=args.jobs, ray_address=args.ray_address,
                     fresh=args.fresh, show_progress=not args.quiet, stack=args.stack)


def _table1(args: argparse.Namespace) -> int:
    from iglearn.experiments.table1 import Table1Config, reproduce

    config = Table1Config(trials=args.trials, samples=args.samples, seed=args.seed,
                          dataset=args.dataset, data_dir=args.data_dir, policy=args.policy,
                          decoder=args.decoder)
    print(reproduce(config, args.out, _execution(args)))
    print(f"wrote {args.out}/table1.csv, table1.md, table1.png and config.json")
    return 0


def _sample_complexity(args: argparse.Namespace) -> int:
    from iglearn.experiments.sample_complexity import (
        DEFAULT_SAMPLES,
        SampleComplexityConfig,
        reproduce,
    )

    config = SampleComplexityConfig(samples=args.samples or DEFAULT_SAMPLES,
                                    trials=args.trials, seed=args.seed,
                                    dataset=args.dataset, data_dir=args.data_dir,
                                    policy=args.policy)
    print(reproduce(config, args.out, _execution(args)))
    print(f"wrote {args.out}/sample_complexity.csv, .md, .png and config.json")
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from iglearn.experiments.sweep import parse_grid, reproduce_sweep
    from iglearn.experiments.table1 import Table1Config

    grid = parse_grid(args.set)
    base = Table1Config(trials=args.trials, samples=args.samples, seed=args.seed,
                        dataset=args.dataset, data_dir=args.data_dir,
                        methods=tuple(args.methods.split(",")))
    print(reproduce_sweep(base, grid, args.out, _execution(args)))
    print(f"wrote {args.out}/sweep.csv, sweep.md and config.json")
    return 0


def _methods(text: str) -> str:
    methods = text.split(",")
    unknown = [m for m in methods if m not in ("SUP", "CB", "IGL")]
    if unknown or not methods:
        raise argparse.ArgumentTypeError(f"unknown method {unknown[0]!r}; use SUP, CB, IGL")
    return text


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(v) for v in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers like 1000,5000; "
                                         f"got {text}")
    return sizes


def _unsupervised(args: argparse.Namespace) -> int:
    from iglearn.experiments.unsupervised import UnsupervisedConfig, reproduce

    config = UnsupervisedConfig(trials=args.trials, samples=args.samples, seed=args.seed,
                                dataset=args.dataset, data_dir=args.data_dir,
                                clusters=args.clusters, method=args.method, rule=args.rule,
                                families=tuple(args.family or ("theorem3", "env12")))
    print(reproduce(config, args.out, _execution(args)))
    print(f"wrote {args.out}/unsupervised.csv, unsupervised.md, unsupervised.png and "
          f"config.json")
    return 0


def _figure3(args: argparse.Namespace) -> int:
    from iglearn.experiments.figure3 import Figure3Config, reproduce

    config = Figure3Config(trials=args.trials, rounds=args.rounds, warmup=args.warmup,
                           schedule=args.schedule, eta=args.eta, iota=args.iota,
                           update_every=args.update_every, eval_every=args.eval_every,
                           exploit=args.exploit, seed=args.seed, dataset=args.dataset,
                           data_dir=args.data_dir)
    print(reproduce(config, args.out, _execution(args)))
    print(f"wrote {args.out}/figure3.csv, figure3.md, figure3.png and config.json")
    return 0


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _add_common(parser: argparse.ArgumentParser, out: str) -> None:
    parser.add_argument("--out", default=out, metavar="DIR", help="output folder")
    parser.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    parser.add_argument("--data-dir", default=None, metavar="DIR",
                        help="folder with the four MNIST .gz files (else $IGLEARN_DATA, "
                             "the user cache, or a verified download)")
    parser.add_argument("--dataset", choices=("mnist", "digits"), default="mnist",
                        help="mnist (the paper's) or digits (scikit-learn's, always offline)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--backend", choices=("local", "ray"), default="local",
                        help="local: a process pool on this machine (default); ray: a Ray "
                             "cluster (--ray-address) or a local Ray instance")
    parser.add_argument("--jobs", type=positive_int, default=None,
                        help="worker processes (default: every core)")
    parser.add_argument("--stack", type=positive_int, default=4,
                        help="batch fits each worker runs side by side as one computation "
                             "(default 4); results do not depend on it")
    parser.add_argument("--ray-address", default=None, metavar="ADDRESS",
                        help="Ray cluster to join with --backend ray")
    parser.add_argument("--fresh", action="store_true",
                        help="start over instead of resuming the trials recorded in --out")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``iglearn`` command."""
    parser = argparse.ArgumentParser(
        prog="iglearn", description="Interaction-Grounded Learning: learn from feedback "
                                    "vectors without an explicit reward.")
    parser.add_argument("--verbose", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    reproduce = commands.add_parser("reproduce", help="reproduce an experiment of the paper")
    experiments = reproduce.add_subparsers(dest="experiment", required=True,
                                           metavar="EXPERIMENT")
    table1 = experiments.add_parser(
        "table1", help="Table 1: SUP, CB and IGL in batch mode on MNIST",
        description="Table 1: each trial logs fresh uniform interactions and fits SUP, CB "
                    "and IGL; accuracy is the argmax policy's on the test images.")
    table1.add_argument("--trials", type=positive_int, default=16, help="trials (default 16)")
    table1.add_argument("--samples", type=positive_int, default=60000,
                        help="logged interactions per trial (default 60000)")
    table1.add_argument("--policy", choices=("linear", "mlp"), default="linear",
                        help="policy class of all three learners (default linear)")
    table1.add_argument("--decoder", choices=("linear", "mlp"), default="linear",
                        help="IGL reward decoder class (default linear)")
    _add_common(table1, "results/table1")
    table1.set_defaults(run=_table1)

    complexity = experiments.add_parser(
        "sample-complexity", help="SUP, CB and IGL accuracy against the number of samples",
        description="Accuracy of SUP, CB and IGL against the number of logged samples: "
                    "how much data grounding costs.")
    complexity.add_argument("--samples", type=_sizes, default=None,
                            help="comma-separated log sizes (default 1000,...,60000)")
    complexity.add_argument("--trials", type=positive_int, default=4,
                            help="trials per size (default 4)")
    complexity.add_argument("--policy", choices=("linear", "mlp"), default="linear")
    _add_common(complexity, "results/sample-complexity")
    complexity.set_defaults(run=_sample_complexity)

    sweep = commands.add_parser(
        "sweep", help="batch fits over a grid of settings, one tidy table",
        description="Fit the chosen methods for every combination of --set values; every "
                    "combination uses the same trial seeds.")
    sweep.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2",
                       help="a setting and its values: lr, decoder_temperature, samples, "
                            "policy, decoder (repeat for a grid)")
    sweep.add_argument("--methods", type=_methods, default="IGL",
                       help="comma-separated: SUP, CB, IGL (default IGL)")
    sweep.add_argument("--trials", type=positive_int, default=2, help="trials per point")
    sweep.add_argument("--samples", type=positive_int, default=60000,
                       help="logged interactions (unless swept)")
    _add_common(sweep, "results/sweep")
    sweep.set_defaults(run=_sweep)

    from iglearn.cli_logs import add_commands

    add_commands(commands)
    unsupervised = experiments.add_parser(
        "unsupervised", help="Section 6: unsupervised reward decoding vs IGL",
        description="Section 6 (Theorem 3): in every environment of two families whose "
                    "feedback looks the same under uniform play, compare a baseline that "
                    "decodes the reward by clustering feedback with IGL.")
    unsupervised.add_argument("--trials", type=positive_int, default=1, help="trials (default 1)")
    unsupervised.add_argument("--samples", type=positive_int, default=60000,
                              help="logged interactions per environment (default 60000)")
    unsupervised.add_argument("--clusters", type=positive_int, default=None,
                              help="baseline clusters (default: the number of feedback "
                                   "classes of each family, 10 and 3)")
    unsupervised.add_argument("--method", choices=("gmm", "kmeans"), default="gmm",
                              help="baseline clustering (default gmm)")
    unsupervised.add_argument("--rule", choices=("smallest", "farthest"), default="smallest",
                              help="which cluster the baseline calls reward (default smallest)")
    unsupervised.add_argument("--family", action="append", choices=("theorem3", "env12"),
                              help="run only this family (repeatable; default both)")
    _add_common(unsupervised, "results/unsupervised")
    unsupervised.set_defaults(run=_unsupervised)
    figure3 = experiments.add_parser(
        "figure3", help="Figure 3: E2G and online CB on MNIST",
        description="Figure 3: each trial plays E2G (feedback vectors only), epoch-greedy CB "
                    "(true reward) with the same schedule, and uniform play; it records the "
                    "running average reward and the greedy policy's test accuracy.")
    figure3.add_argument("--trials", type=positive_int, default=16, help="trials (default 16)")
    figure3.add_argument("--rounds", type=positive_int, default=10000,
                         help="rounds of Algorithm 1 per trial (default 10000)")
    figure3.add_argument("--warmup", type=positive_int, default=4000,
                         help="exploration rounds of the paper schedule (default 4000)")
    figure3.add_argument("--schedule", choices=("paper", "theory", "data-driven"),
                         default="paper", help="warm-up: fixed (paper), T0 = 2K^2 iota/eta^2 "
                                               "(theory), or the indicator test (data-driven)")
    figure3.add_argument("--eta", type=float, default=0.7,
                         help="Assumption 2's eta for the theory schedule (default 0.7)")
    figure3.add_argument("--iota", type=float, default=100.0,
                         help="complexity term of n_i = floor(sqrt(i/(K iota))) (default 100)")
    figure3.add_argument("--update-every", type=positive_int, default=100,
                         help="rounds between re-fits (default 100)")
    figure3.add_argument("--eval-every", type=positive_int, default=500,
                         help="rounds between checkpoints, a multiple of --update-every "
                              "(default 500)")
    figure3.add_argument("--exploit", choices=("greedy", "softmax"), default="greedy",
                         help="exploitation plays the argmax (default) or samples pi_i")
    _add_common(figure3, "results/figure3")
    figure3.set_defaults(run=_figure3)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``iglearn`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.verbose:
        one_line_warnings()
    try:
        return args.run(args)
    except IGLearnError as e:
        if args.verbose:
            traceback.print_exc()
        print(f"iglearn: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("iglearn: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
