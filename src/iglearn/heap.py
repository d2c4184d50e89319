"""How the C allocator of iglearn's own processes keeps the memory a fit frees.

A fit allocates and frees tensors of a few megabytes at every step. glibc's ``malloc`` gives
the free top of its heap back to the system as soon as it exceeds the trim threshold (small
in a fresh process; raised only as the process's own frees teach it), and the next step takes
the pages back, each first touch a page fault. A process's first fit pays for it: a first
IGL-P fit of 2,000 digits interactions in a fresh process (one thread, this project's 2-core
machine) took some 124,000 page faults and 0.18 s of system time, 0.43 to 0.48 s wall,
where the second fit in that process took 0.21 s; with the pad below the first takes 4,000
faults and 0.21 to 0.26 s (``iglearn fit --algorithm igl-p`` of that log: 1.56 to 1.66 s wall
before, 1.32 to 1.36 s with it).

iglearn's command (``iglearn``, :func:`iglearn.cli.command`) and the service's learning worker
ask glibc to grow the heap by :data:`HEAP_PAD` beyond each request and to keep that much free
at its top, and to map on their own only allocations of :data:`MMAP_THRESHOLD` or more
(:func:`pad_heap`). A Python program that fits once per process can ask the same with
``MALLOC_TOP_PAD_=67108864 MALLOC_MMAP_THRESHOLD_=33554432`` in its environment; iglearn does
not change the allocator of a process it is imported into.
"""

from __future__ import annotations

import os

__all__ = ["HEAP_PAD", "MMAP_THRESHOLD", "pad_heap"]

HEAP_PAD = 64 * 2**20
"""Bytes (64 MiB) glibc's ``malloc`` adds to each growth of the heap and keeps free at its top
in iglearn's own processes (``M_TOP_PAD``): more than the tensors a step of a fit of a few
thousand interactions frees; a process may keep up to this much more resident than it uses."""

MMAP_THRESHOLD = 32 * 2**20
"""Bytes (32 MiB, glibc's own ceiling for its adaptive threshold) from which an allocation is
mapped on its own and given back when freed, in iglearn's own processes
(``M_MMAP_THRESHOLD``). Setting the pad turns glibc's adaptive threshold off, which would
leave it at 128 KiB: every tensor of more mapped, and faulted in, on its own."""

M_TOP_PAD, M_MMAP_THRESHOLD = -2, -3
"""glibc's ``mallopt`` parameter numbers of the top pad and of the mapping threshold
(``malloc.h``)."""


def glibc() -> bool:
    """Whether this process runs on glibc (whose ``mallopt`` :func:`pad_heap` calls)."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError, AttributeError):  # not a name this system knows
        return False


def pad_heap(pad: int = HEAP_PAD) -> bool:
    """Ask glibc's ``malloc`` to grow the heap by ``pad`` bytes beyond each request and to keep
    that much free at its top, for the rest of this process (see the module docstring).
    Returns whether it did: not off glibc, and not where the environment already sets the
    pad (``MALLOC_TOP_PAD_``, or ``glibc.malloc.top_pad`` in ``GLIBC_TUNABLES``): the
    user's choice stands."""
    if ("MALLOC_TOP_PAD_" in os.environ
            or "glibc.malloc.top_pad" in os.environ.get("GLIBC_TUNABLES", "")
            or not glibc()):
        return False
    import ctypes

    libc = ctypes.CDLL(None)
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and libc.mallopt(M_TOP_PAD, pad))
