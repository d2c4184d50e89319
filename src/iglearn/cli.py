"""The ``iglearn`` command line.

Every user error prints one line on stderr (``iglearn: error: ...``) and exits with code 2;
``--verbose`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import sys
import traceback
import warnings
from collections.abc import Sequence

from iglearn.errors import IGLearnError


def _table1(args: argparse.Namespace) -> int:
    from iglearn.experiments.table1 import Table1Config, reproduce

    config = Table1Config(trials=args.trials, samples=args.samples, seed=args.seed,
                          dataset=args.dataset, data_dir=args.data_dir, policy=args.policy,
                          decoder=args.decoder)
    print(reproduce(config, args.out, show_progress=not args.quiet))
    print(f"wrote {args.out}/table1.csv, table1.md, table1.png and config.json")
    return 0


def _figure3(args: argparse.Namespace) -> int:
    from iglearn.experiments.figure3 import Figure3Config, reproduce

    config = Figure3Config(trials=args.trials, rounds=args.rounds, warmup=args.warmup,
                           schedule=args.schedule, eta=args.eta, iota=args.iota,
                           update_every=args.update_every, eval_every=args.eval_every,
                           exploit=args.exploit, seed=args.seed, dataset=args.dataset,
                           data_dir=args.data_dir)
    print(reproduce(config, args.out, show_progress=not args.quiet))
    print(f"wrote {args.out}/figure3.csv, figure3.md, figure3.png and config.json")
    return 0


def _positive(text: str) -> int:
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
    table1.add_argument("--trials", type=_positive, default=16, help="trials (default 16)")
    table1.add_argument("--samples", type=_positive, default=60000,
                        help="logged interactions per trial (default 60000)")
    table1.add_argument("--policy", choices=("linear", "mlp"), default="linear",
                        help="policy class of all three learners (default linear)")
    table1.add_argument("--decoder", choices=("linear", "mlp"), default="linear",
                        help="IGL reward decoder class (default linear)")
    _add_common(table1, "results/table1")
    table1.set_defaults(run=_table1)
    figure3 = experiments.add_parser(
        "figure3", help="Figure 3: E2G and online CB on MNIST",
        description="Figure 3: each trial plays E2G (feedback vectors only), epoch-greedy CB "
                    "(true reward) with the same schedule, and uniform play; it records the "
                    "running average reward and the greedy policy's test accuracy.")
    figure3.add_argument("--trials", type=_positive, default=16, help="trials (default 16)")
    figure3.add_argument("--rounds", type=_positive, default=10000,
                         help="rounds of Algorithm 1 per trial (default 10000)")
    figure3.add_argument("--warmup", type=_positive, default=4000,
                         help="exploration rounds of the paper schedule (default 4000)")
    figure3.add_argument("--schedule", choices=("paper", "theory", "data-driven"),
                         default="paper", help="warm-up: fixed (paper), T0 = 2K^2 iota/eta^2 "
                                               "(theory), or the indicator test (data-driven)")
    figure3.add_argument("--eta", type=float, default=0.7,
                         help="Assumption 2's eta for the theory schedule (default 0.7)")
    figure3.add_argument("--iota", type=float, default=100.0,
                         help="complexity term of n_i = floor(sqrt(i/(K iota))) (default 100)")
    figure3.add_argument("--update-every", type=_positive, default=100,
                         help="rounds between re-fits (default 100)")
    figure3.add_argument("--eval-every", type=_positive, default=500,
                         help="rounds between checkpoints, a multiple of --update-every "
                              "(default 500)")
    figure3.add_argument("--exploit", choices=("greedy", "softmax"), default="greedy",
                         help="exploitation plays the argmax (default) or samples pi_i")
    _add_common(figure3, "results/figure3")
    figure3.set_defaults(run=_figure3)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"iglearn: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``iglearn`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.verbose:
        warnings.showwarning = _show_warning
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
