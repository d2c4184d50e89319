"""Infinite MNIST: an endless, deterministic stream of deformed MNIST digits.

After Loosli, Canu & Bottou (2007): sample ``i`` is a pure function of ``i``. With MNIST's
10000 test and 60000 training images:

- ``0 <= i < 10000``: the MNIST test image ``i``, unaltered (the only test indices).
- ``10000 <= i < 70000``: the MNIST training image ``i - 10000``, unaltered.
- ``i >= 70000``: training image ``(i - 10000) % 60000`` warped by a deformation drawn from a
  counter-based hash of ``i``: a smooth random elastic displacement field, a small affine
  map (rotation, scale, shear) and a translation of up to one pixel in each direction.

Training indices never reach the test range, so train and test never mix. The warp is a true
bilinear resampling (``torch.nn.functional.grid_sample``) vectorised over samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from iglearn.data.mnist import MNIST

SIDE = 28
_GRID = 4  # control points per side of the elastic field
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: a bijective, well-mixed hash of uint64 values."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK64
    x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK64
    x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK64
    return x ^ (x >> np.uint64(31))


def hash_uniform(index: np.ndarray, count: int, key: int = 0) -> np.ndarray:
    """(n, count) uniforms in [-1, 1) that depend only on (index, column, key)."""
    index = np.asarray(index, dtype=np.uint64)
    column = np.arange(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        seed = _splitmix64(index * np.uint64(0x2545F4914F6CDD1D) + np.uint64(key))
        bits = _splitmix64(seed[:, None] ^ (column[None, :] * np.uint64(0xD6E8FEB86659FD93)))
    return (bits >> np.uint64(11)).astype(np.float64) * (2.0 / 2**53) - 1.0


def _warp_basis() -> torch.Tensor:
    """(3 + _GRID**2, 784) basis: row, column and 1 (for the affine map and translation),
    then smooth Gaussian bumps around a _GRID x _GRID lattice of control points, normalised
    to sum to one at every pixel (so an elastic field is bounded by its coefficients)."""
    pixels = np.arange(SIDE)[:, None]
    centres = np.linspace(0, SIDE - 1, _GRID)[None, :]
    width = (SIDE - 1) / (_GRID - 1)
    bump = np.exp(-0.5 * ((pixels - centres) / width) ** 2)
    bump /= bump.sum(1, keepdims=True)
    elastic = np.einsum("ia,jb->abij", bump, bump).reshape(_GRID * _GRID, SIDE * SIDE)
    coords = np.arange(SIDE) - (SIDE - 1) / 2
    rows, cols = np.meshgrid(coords, coords, indexing="ij")
    affine = np.stack((rows.ravel(), cols.ravel(), np.ones(SIDE * SIDE)))
    return torch.from_numpy(np.concatenate((affine, elastic)).astype(np.float32))


@dataclass(frozen=True)
class Deformation:
    """Strength of the random deformations (pixels, radians, relative scale)."""

    elastic: float = 1.5
    rotation: float = 0.15
    scale: float = 0.1
    shear: float = 0.15
    translation: int = 1


class InfiniteMNIST:
    """Deterministic deformed MNIST digits indexed by a non-negative integer.

    Args:
        mnist: the MNIST arrays (see :func:`iglearn.data.mnist.load_mnist`).
        deformation: strength of the deformations applied to indices >= 70000.
        chunk: images warped per vectorised block (bounds memory).
    """

    def __init__(self, mnist: MNIST, deformation: Deformation | None = None, chunk: int = 16384):
        self.mnist = mnist
        self.deformation = deformation or Deformation()
        self.chunk = chunk
        self._train = torch.from_numpy(mnist.train_images.astype(np.float32) / 255.0)
        self._test = torch.from_numpy(mnist.test_images.astype(np.float32) / 255.0)
        # Scaled from pixels about the centre to grid_sample's [-1, 1] (align_corners=False),
        # and interleaved so that one matmul yields the (x, y) pair of every pixel.
        basis = _warp_basis() * (2.0 / SIDE)
        self._warp_basis = torch.kron(basis, torch.eye(2))  # (19 * 2, 784 * 2)
        self._by_digit = [np.flatnonzero(mnist.train_labels == d) for d in range(10)]
        self.n_test = len(mnist.test_images)
        """Indices below this are test images."""
        self.n_train = len(mnist.train_images)
        self.first_deformed = self.n_test + self.n_train
        """Indices from here on are deformed training images."""

    # ---- index arithmetic -------------------------------------------------------------
    def base_index(self, index: np.ndarray) -> np.ndarray:
        """The MNIST training image a training index (>= n_test) shows or deforms."""
        return (np.asarray(index, dtype=np.int64) - self.n_test) % self.n_train

    def labels(self, index: np.ndarray) -> np.ndarray:
        """Digit labels of the samples at ``index``."""
        index = np.asarray(index, dtype=np.int64)
        test = index < self.n_test
        out = np.empty(index.shape, dtype=np.int64)
        out[test] = self.mnist.test_labels[index[test]]
        out[~test] = self.mnist.train_labels[self.base_index(index[~test])]
        return out

    def sample_train_index(self, n: int, rng: np.random.Generator,
                           digit: int | None = None, include_originals: bool = True) -> np.ndarray:
        """``n`` random training indices (never test ones), optionally all of one ``digit``."""
        pool = np.arange(self.n_train) if digit is None else self._by_digit[digit]
        base = pool[rng.integers(0, len(pool), n)]
        low = 0 if include_originals else 1
        copy = rng.integers(low, 2**40, n, dtype=np.int64)
        return self.n_test + copy * self.n_train + base

    # ---- images -----------------------------------------------------------------------
    def images(self, index: np.ndarray) -> np.ndarray:
        """(n, 784) float32 images in [0, 1] for the samples at ``index``."""
        index = np.asarray(index, dtype=np.int64)
        if index.ndim != 1 or (index.size and index.min() < 0):
            raise ValueError("index must be a 1-d array of non-negative integers")
        out = torch.empty((index.size, SIDE, SIDE), dtype=torch.float32)
        test = index < self.n_test
        out[torch.from_numpy(test)] = self._test[torch.from_numpy(index[test])]
        original = (index >= self.n_test) & (index < self.first_deformed)
        out[torch.from_numpy(original)] = self._train[
            torch.from_numpy(self.base_index(index[original]))]
        deformed = np.flatnonzero(index >= self.first_deformed)
        for start in range(0, deformed.size, self.chunk):
            rows = deformed[start:start + self.chunk]
            out[torch.from_numpy(rows)] = self._warp(index[rows])
        return out.reshape(index.size, SIDE * SIDE).numpy()

    def _warp(self, index: np.ndarray) -> torch.Tensor:
        # Every source coordinate is linear in per-sample coefficients, so the whole
        # deformation (affine + elastic + translation) is one matmul with a fixed basis.
        d = self.deformation
        n_control = _GRID * _GRID
        u = torch.from_numpy(hash_uniform(index, 2 * n_control + 6).astype(np.float32))
        elastic = d.elastic * u[:, 2 * n_control, None].abs() * u[:, : 2 * n_control]
        angle = u[:, -5] * d.rotation
        scale = 1 + u[:, -4] * d.scale
        shear = u[:, -3] * d.shear
        shift = torch.round(u[:, -2:] * (d.translation + 0.499))
        cos, sin = scale * torch.cos(angle), scale * torch.sin(angle)
        row = torch.stack((cos, -sin, -shift[:, 0]), dim=1)
        col = torch.stack((sin + shear * scale, cos, -shift[:, 1]), dim=1)
        # grid_sample wants (x = column, y = row) per pixel, so the column coefficients go first.
        coeff = torch.stack((torch.cat((col, elastic[:, n_control:]), 1),
                             torch.cat((row, elastic[:, :n_control]), 1)), dim=2)
        grid = coeff.reshape(len(index), -1) @ self._warp_basis  # (n, 784 * 2), (x, y) pairs
        grid = grid.view(-1, SIDE, SIDE, 2)
        base = self._train[torch.from_numpy(self.base_index(index))][:, None]
        warped = F.grid_sample(base, grid, mode="bilinear", padding_mode="zeros",
                               align_corners=False)
        return warped[:, 0].clamp_(0.0, 1.0)
