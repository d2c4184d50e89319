"""Randomness flows from numpy Generators and seeded torch Generators, never global state."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iglearn.hints import INTEGER_LIMIT, whole_number

if TYPE_CHECKING:
    import torch

SeedLike = int | np.random.Generator | np.random.SeedSequence | None


def check_seed(seed: object) -> None:
    """Refuse a seed numpy cannot take (a negative or fractional number, text, ...) or a model
    cannot record (2**63 or more: :data:`~iglearn.hints.INTEGER_LIMIT`), naming it: a seed
    is a whole number in [0, 2**63), a numpy SeedSequence or Generator, or None."""
    if seed is None or isinstance(seed, np.random.Generator | np.random.SeedSequence):
        return
    whole = whole_number(seed)
    if whole is not None and 0 <= whole < INTEGER_LIMIT:
        return
    from iglearn.errors import IGLearnError
    raise IGLearnError(f"seed must be a whole number in [0, 2**63), a numpy SeedSequence or "
                       f"Generator, or None; got {seed!r}")


def as_generator(seed: SeedLike) -> np.random.Generator:
    """Return a numpy Generator for an int, a SeedSequence, a Generator (returned as is) or
    None; any other seed is refused (:func:`check_seed`)."""
    if isinstance(seed, np.random.Generator):
        return seed
    check_seed(seed)
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
