"""The picture at the top of the README: Table 1 (batch mode, iglearn's trials beside the
paper's reported accuracy) and Figure 3 (online: E2G, online CB and uniform play) side by side,
drawn from the tidy CSVs that ``iglearn reproduce table1`` and ``iglearn reproduce figure3``
write. ``python -m iglearn.experiments.tour TABLE1_CSV FIGURE3_CSV OUT_PNG``."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from iglearn.experiments import figure3, table1
from iglearn.experiments.results import save_figure


def plot(table1_frame: pd.DataFrame, figure3_frame: pd.DataFrame, path: Path) -> None:
    """Table 1's panel and Figure 3's accuracy panel in one PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [1, 1.4]})
    table1.draw(axes[0], table1_frame)
    figure3.draw(axes[1], figure3_frame, "accuracy")
    trials = figure3_frame["trial"].nunique()
    axes[1].set_title(f"Figure 3: online on MNIST ({trials} trials; the paper: 16, "
                      f"E2G close to CB)")
    save_figure(fig, path, dpi=100)


def main(argv: list[str]) -> None:
    """``tour TABLE1_CSV FIGURE3_CSV OUT_PNG``."""
    if len(argv) != 3:
        raise SystemExit("usage: python -m iglearn.experiments.tour TABLE1_CSV FIGURE3_CSV "
                         "OUT_PNG")
    plot(pd.read_csv(argv[0]), pd.read_csv(argv[1]), Path(argv[2]))


if __name__ == "__main__":
    main(sys.argv[1:])
