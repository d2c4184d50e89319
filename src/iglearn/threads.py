"""How many threads torch, and the native libraries loaded beside it, compute on.

A fit of a small or mid-sized log is a sequence of small products: on several threads they
mostly wait on each other, and on a machine with other work they are slower than on one.
Every fit therefore runs on ``threads`` torch threads (a setting of each learner, ``--threads``
on the command line; 1 by default) inside :func:`torch_threads`, which gives the caller's
thread count back afterwards. Large fits (tens of thousands of interactions and wide models)
gain from more.

The thread pools of the native libraries loaded beside torch are held to the same count inside
the block: the BLAS library numpy calls (the log's importance-weighted statistics are numpy
products), scipy's, and the OpenMP runtimes of scikit-learn (Section 6's clustering). Left to
themselves they start a thread per core, which on a 16-core machine tripled the CPU time of a
60,000-interaction fit and slowed its statistics.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from iglearn.errors import IGLearnError

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

__all__ = ["check_threads", "one_thread", "process_threads", "torch_threads"]


MAX_THREADS = 1024
"""Most torch threads a fit or a service process may ask for (torch refuses counts beyond
32 bits; no machine iglearn runs on gains from more)."""


def check_threads(threads: object) -> None:
    """Refuse a thread count that is not a whole number in [1, :data:`MAX_THREADS`], naming
    it."""
    if isinstance(threads, bool) or not isinstance(threads, int) \
            or not 1 <= threads <= MAX_THREADS:
        raise IGLearnError(f"threads must be a whole number in [1, {MAX_THREADS}], got "
                           f"{threads!r}")


def _native_pools() -> ThreadpoolController:
    """The thread pools (BLAS and OpenMP) of the libraries loaded in this process: looking
    costs some milliseconds, a limit through what was found some microseconds, so the look
    is kept while no module has been imported since (a new library, scipy's BLAS or
    scikit-learn's OpenMP, comes with one)."""
    return _pools(len(sys.modules))


@functools.lru_cache(maxsize=1)
def _pools(modules: int) -> ThreadpoolController:
    """The thread pools found when ``modules`` modules were loaded."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def torch_threads(threads: int, libraries: bool = True) -> Iterator[None]:
    """Run torch, and (``libraries``) the BLAS and OpenMP libraries loaded beside it, on
    ``threads`` threads inside the block; the caller's counts are restored after it, also
    when the block raises. A library loaded inside the block is held by the next block
    entered. Predictions, which call torch alone, leave the libraries (``libraries`` False:
    some microseconds less a call)."""
    import torch

    check_threads(threads)
    before = torch.get_num_threads()
    if threads != before:
        torch.set_num_threads(threads)
    try:
        with _native_pools().limit(limits=threads) if libraries else contextlib.nullcontext():
            yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def process_threads(threads: int) -> None:
    """Run torch, and the BLAS and OpenMP libraries loaded beside it, on ``threads`` threads
    for the rest of this process (the service's processes: each decision is a small product,
    and a re-fit runs beside the server)."""
    import torch

    check_threads(threads)
    torch.set_num_threads(threads)
    _native_pools().limit(limits=threads)


def one_thread() -> contextlib.AbstractContextManager[None]:
    """Run torch, and the BLAS and OpenMP libraries beside it, on one thread inside the block
    (identical floating-point results for any number of parallel jobs); the caller's counts
    are restored after it."""
    return torch_threads(1)
