"""Table 1's summary, Markdown and plot: the paper's MNIST figures only beside an MNIST run."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from iglearn.experiments import table1
from iglearn.experiments.results import tidy_frame, tidy_rows


@pytest.fixture
def frame() -> pd.DataFrame:
    """Two trials of each method with made-up accuracies and seconds."""
    rows = []
    for trial in range(2):
        for i, method in enumerate(table1.PAPER):
            rows += tidy_rows("table1", method, trial, 10 + trial, 500,
                              {"accuracy": 0.5 + 0.1 * i + 0.01 * trial, "seconds": 1.0})
    return tidy_frame(rows)


def paper_figures() -> list[str]:
    return [table1.percent(mean, std) for mean, std in table1.PAPER.values()]


def test_a_digits_run_shows_no_paper_figures_and_says_why(frame):
    config = table1.Table1Config(dataset="digits", trials=2, samples=500)
    text = table1.markdown(table1.summary(frame, "digits"), config)
    assert "paper accuracy" not in text
    assert not any(figure in text for figure in paper_figures())
    assert "digits" in text.splitlines()[0]
    assert "on MNIST, not digits" in text and "not comparable" in text
    header, rule = text.splitlines()[2:4]
    assert header.count("|") == rule.count("|")


def test_an_mnist_run_shows_the_paper_figures_beside_its_own(frame):
    """Beside the paper's figures, a run of fewer samples says they are not comparable, one of
    fewer trials that its spread is rougher; the paper's setting says neither."""
    config = table1.Table1Config(trials=2, samples=500)
    text = table1.markdown(table1.summary(frame, "mnist"), config)
    assert "paper accuracy (%)" in text
    assert all(figure in text for figure in paper_figures())
    header, rule = text.splitlines()[2:4]
    assert header.count("|") == rule.count("|")
    assert "fitted 500 samples, not the paper's 60000: its figures are not comparable" in text
    few = table1.markdown(table1.summary(frame, "mnist"), table1.Table1Config(trials=2))
    assert "not comparable" not in few and "2 trials: its mean and spread are rougher" in few
    paper = table1.markdown(table1.summary(frame, "mnist"), table1.Table1Config())
    assert "not comparable" not in paper and "rougher" not in paper


@pytest.mark.parametrize("dataset, name, paper", [("digits", "digits", False),
                                                   ("mnist", "MNIST", True)])
def test_the_plot_names_the_dataset_and_shows_the_paper_only_on_mnist(frame, dataset, name,
                                                                      paper):
    fig, ax = plt.subplots()
    try:
        table1.draw(ax, frame, dataset)
        title = ax.get_title()
        labels = ax.get_legend_handles_labels()[1]
    finally:
        plt.close(fig)
    assert f"on {name} " in title and ("MNIST" in title) == paper
    assert ("paper" in labels) == paper and "iglearn" in labels
