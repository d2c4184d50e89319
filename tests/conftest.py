"""Shared fixtures: a synthetic MNIST, the real one when available, small logs."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from iglearn.data.mnist import MNIST, find_mnist
from iglearn.errors import DataNotFoundError
from iglearn.experiments.runner import one_thread


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` run only where torch sees a CUDA GPU."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_global_cache(tmp_path_factory, monkeypatch):
    """Tests never touch the user's cache unless they point at it themselves. Warnings that no
    other filter handles are shown (appended: a test's ``filterwarnings`` mark still rules)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    warnings.simplefilter("default", append=True)


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """Small models fit fastest on one thread, as every trial runner does (and a second
    thread spinning on a busy machine slows them many times over)."""
    with one_thread():
        yield


@pytest.fixture(scope="session")
def fake_mnist() -> MNIST:
    """Random 'digits' with MNIST's shapes: enough to test indexing and warping."""
    rng = np.random.default_rng(0)
    return MNIST(
        train_images=rng.integers(0, 256, (600, 28, 28), dtype=np.uint8),
        train_labels=np.arange(600) % 10,
        test_images=rng.integers(0, 256, (100, 28, 28), dtype=np.uint8),
        test_labels=np.arange(100) % 10,
    )


def real_mnist_dir() -> Path | None:
    """The folder of the real MNIST files when IGLEARN_DATA points at them."""
    if not os.environ.get("IGLEARN_DATA"):
        return None
    try:
        return find_mnist(allow_download=False)
    except DataNotFoundError:
        return None


requires_mnist = pytest.mark.skipif(real_mnist_dir() is None,
                                    reason="set IGLEARN_DATA to the MNIST folder")
