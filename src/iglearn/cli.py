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


def _unsupervised(args: argparse.Namespace) -> int:
    import torch

    from iglearn.experiments.unsupervised import UnsupervisedConfig, reproduce

    torch.set_num_threads(args.threads)

    config = UnsupervisedConfig(trials=args.trials, samples=args.samples, seed=args.seed,
                                dataset=args.dataset, data_dir=args.data_dir,
                                clusters=args.clusters, method=args.method, rule=args.rule,
                                families=tuple(args.family or ("theorem3", "env12")))
    print(reproduce(config, args.out, show_progress=not args.quiet))
    print(f"wrote {args.out}/unsupervised.csv, unsupervised.md, unsupervised.png and "
          f"config.json")
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
    unsupervised = experiments.add_parser(
        "unsupervised", help="Section 6: unsupervised reward decoding vs IGL",
        description="Section 6 (Theorem 3): in every environment of two families whose "
                    "feedback looks the same under uniform play, compare a baseline that "
                    "decodes the reward by clustering feedback with IGL.")
    unsupervised.add_argument("--trials", type=_positive, default=1, help="trials (default 1)")
    unsupervised.add_argument("--samples", type=_positive, default=60000,
                              help="logged interactions per environment (default 60000)")
    unsupervised.add_argument("--clusters", type=_positive, default=None,
                              help="baseline clusters (default: the number of feedback "
                                   "classes of each family, 10 and 3)")
    unsupervised.add_argument("--method", choices=("gmm", "kmeans"), default="gmm",
                              help="baseline clustering (default gmm)")
    unsupervised.add_argument("--rule", choices=("smallest", "farthest"), default="smallest",
                              help="which cluster the baseline calls reward (default smallest)")
    unsupervised.add_argument("--threads", type=_positive, default=1,
                              help="torch threads (default 1: the models are small)")
    unsupervised.add_argument("--family", action="append", choices=("theorem3", "env12"),
                              help="run only this family (repeatable; default both)")
    _add_common(unsupervised, "results/unsupervised")
    unsupervised.set_defaults(run=_unsupervised)
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
