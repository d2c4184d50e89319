"""The four MNIST IDX files: parsing, finding and verified download.

Resolution order for the files: an explicit folder, the ``IGLEARN_DATA`` environment
variable, the user cache (``$XDG_CACHE_HOME/iglearn/mnist`` or ``~/.cache/iglearn/mnist``),
then a download from the canonical mirrors, verified by SHA256 and stored in the cache.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import shutil
import struct
import tempfile
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from numpy.typing import DTypeLike

from iglearn.errors import DataNotFoundError, IGLearnError
from iglearn.files import input_file

ENV_VAR = "IGLEARN_DATA"

FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}

SHA256 = {
    "train-images-idx3-ubyte.gz":
        "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "train-labels-idx1-ubyte.gz":
        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "t10k-images-idx3-ubyte.gz":
        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz":
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}

MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)

_IDX_TYPES: dict[int, DTypeLike] = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4",
                                    0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | Path) -> np.ndarray:
    """Parse an IDX file (gzip-compressed or plain) into a numpy array."""
    path = Path(path)
    input_file(path, "IDX file")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise IGLearnError(f"{path}: cannot read the IDX file ({e}); download it again") from e
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise IGLearnError(f"{path}: not an IDX file (bad magic number); download it again")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise IGLearnError(f"{path}: truncated IDX header; download it again")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    dtype = np.dtype(_IDX_TYPES[data[2]])
    expected = math.prod(shape) * dtype.itemsize
    if len(data) - header != expected:
        raise IGLearnError(
            f"{path}: IDX body has {len(data) - header} bytes, header promises {expected}; "
            f"the file is truncated or corrupt, download it again"
        )
    return np.frombuffer(data, dtype, offset=header).reshape(shape)


def cache_dir() -> Path:
    """The user cache folder for MNIST."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "iglearn" / "mnist"


def sha256(path: Path) -> str:
    """SHA256 hex digest of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in FILES.values())


DIGITS_INSTEAD = ("or use scikit-learn's bundled digits instead: the environment 'digits' "
                  "(iglearn simulate digits), --dataset digits where a command has it")
"""The alternative every message about missing MNIST offers: a task that needs no download."""


def download(folder: Path, mirrors: tuple[str, ...] = MIRRORS, timeout: float = 30.0) -> Path:
    """Download the four files into ``folder``, each verified by SHA256 before it is kept; a
    folder this made is removed again when nothing could be downloaded into it."""
    made = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return _download(folder, mirrors, timeout)
    except DataNotFoundError:
        if made and not any(folder.iterdir()):
            folder.rmdir()
        raise


def _download(folder: Path, mirrors: tuple[str, ...], timeout: float) -> Path:
    for name in FILES.values():
        target = folder / name
        if target.is_file() and sha256(target) == SHA256[name]:
            continue
        errors = []
        for mirror in mirrors:
            with tempfile.NamedTemporaryFile(dir=folder, delete=False, suffix=".part") as tmp:
                part = Path(tmp.name)
            try:
                with urllib.request.urlopen(mirror + name, timeout=timeout) as response, \
                        open(part, "wb") as out:
                    shutil.copyfileobj(response, out)
                if sha256(part) != SHA256[name]:
                    errors.append(f"{mirror}: checksum mismatch")
                    continue
                part.replace(target)
                break
            except OSError as e:
                errors.append(f"{mirror}: {e}")
            finally:
                part.unlink(missing_ok=True)
        else:
            raise DataNotFoundError(
                f"could not download {name} ({'; '.join(errors)}); put the four MNIST .gz "
                f"files in a folder and pass --data-dir DIR or set {ENV_VAR}=DIR, "
                f"{DIGITS_INSTEAD}"
            )
    return folder


def find_mnist(data_dir: str | Path | None = None, allow_download: bool = True) -> Path:
    """The folder holding the four MNIST files, found in the documented order."""
    if data_dir is not None:
        folder = Path(data_dir).expanduser()
        if not _complete(folder):
            missing = [n for n in FILES.values() if not (folder / n).is_file()]
            raise DataNotFoundError(
                f"--data-dir {folder}: missing {', '.join(missing)}; the folder must hold the "
                f"four MNIST .gz files ({DIGITS_INSTEAD})"
            )
        return folder
    env = os.environ.get(ENV_VAR)
    if env:
        folder = Path(env).expanduser()
        if _complete(folder):
            return folder
        mnist = folder / "mnist"
        if _complete(mnist):
            return mnist
        raise DataNotFoundError(
            f"{ENV_VAR}={env}: the four MNIST .gz files are neither there nor in its 'mnist' "
            f"subfolder; fix the variable or unset it"
        )
    cache = cache_dir()
    if _complete(cache):
        return cache
    if allow_download:
        return download(cache)
    raise DataNotFoundError(
        f"MNIST not found: pass --data-dir DIR, set {ENV_VAR}=DIR, or put the four .gz files "
        f"in {cache}; {DIGITS_INSTEAD}"
    )


@dataclass(frozen=True)
class MNIST:
    """MNIST as arrays: images are uint8 (n, 28, 28), labels int64 (n,)."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


@lru_cache(maxsize=2)
def _load(folder: str, verify: bool) -> MNIST:
    path = Path(folder)
    if verify:
        for name in FILES.values():
            if sha256(path / name) != SHA256[name]:
                raise IGLearnError(
                    f"{path / name}: SHA256 does not match the published MNIST file; "
                    f"replace it with an original copy"
                )
    arrays = {key: read_idx(path / name) for key, name in FILES.items()}
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise IGLearnError(f"{path}: MNIST {split} images and labels do not match")
        arrays[f"{split}_labels"] = labels.astype(np.int64)
    return MNIST(**arrays)


def load_mnist(data_dir: str | Path | None = None, verify: bool = True) -> MNIST:
    """Load MNIST, finding the files as :func:`find_mnist` does; checksums verified once."""
    return _load(str(find_mnist(data_dir).resolve()), verify)
