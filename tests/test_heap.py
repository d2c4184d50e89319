"""The heap pad of iglearn's own processes (:mod:`iglearn.heap`), in fresh processes."""

import subprocess
import sys
import textwrap

import pytest

from iglearn.heap import glibc, pad_heap

STEPS = """
import resource, torch
from iglearn.heap import pad_heap
padded = pad_heap()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def step():  # a fit's step: tensors of a few megabytes made, then all freed
    a, b, c = (torch.ones(600_000) for _ in range(3))
    del a, b, c
for _ in range(5):
    step()
before = faults()
for _ in range(100):
    step()
print(padded, faults() - before)
"""
STEP_PAGES = 3 * 600_000 * 4 // 4096
"""The pages one step's tensors cover."""


def _steps() -> tuple[bool, int]:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(STEPS)],
                          capture_output=True, text=True, check=True, timeout=120)
    padded, faults = done.stdout.split()
    return padded == "True", int(faults)


@pytest.mark.skipif(not glibc(), reason="the pad is glibc's malloc's")
def test_a_padded_heap_keeps_what_the_steps_free():
    """Once padded, a process's steps reuse the pages earlier steps freed: 100 steps fault
    in fewer pages than one step's tensors cover (a heap given back at every step, or every
    tensor mapped on its own, faults them all in at every step)."""
    padded, faults = _steps()
    assert padded
    assert faults < STEP_PAGES, faults


def test_the_environments_pad_stands(monkeypatch):
    """A pad the user set in the environment is left as it is (and nothing is called)."""
    monkeypatch.setenv("MALLOC_TOP_PAD_", "0")
    assert pad_heap() is False
    monkeypatch.delenv("MALLOC_TOP_PAD_")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.top_pad=0")
    assert pad_heap() is False
