"""Randomness flows from numpy Generators and seeded torch Generators, never global state."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

SeedLike = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(seed: SeedLike) -> np.random.Generator:
    """Return a numpy Generator for an int, a SeedSequence, a Generator (returned as is) or None."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def spawn_seeds(root: int, n: int) -> list[np.random.SeedSequence]:
    """Independent seed sequences for ``n`` trials derived from one root seed."""
    return np.random.SeedSequence(root).spawn(n)


def integer_seed(seed: np.random.SeedSequence) -> int:
    """A trial's integer seed (recorded in its rows), derived from its seed sequence."""
    return int(seed.generate_state(1)[0])


def torch_generator(rng: np.random.Generator) -> torch.Generator:
    """A torch Generator seeded from (and advancing) a numpy Generator."""
    import torch

    return torch.Generator().manual_seed(int(rng.integers(0, 2**63 - 1)))
