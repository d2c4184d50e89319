"""The one categorical sampler: every action iglearn draws from a distribution comes from here."""

from __future__ import annotations

import numpy as np


def sample_actions(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row of ``probabilities`` (n, K), drawn by inverse transform sampling
    with one uniform draw per row from ``rng``; rows need not be normalised exactly.

    Returns:
        the actions, int64 of shape (n,).
    """
    probabilities = np.asarray(probabilities, dtype=np.float64)
    cumulative = probabilities.cumsum(1)
    draws = rng.random(len(probabilities))[:, None] * cumulative[:, -1:]
    return np.minimum((draws >= cumulative).sum(1), probabilities.shape[1] - 1).astype(np.int64)
