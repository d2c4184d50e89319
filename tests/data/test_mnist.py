import gzip
import struct

import numpy as np
import pytest

from iglearn.data import mnist
from iglearn.errors import DataNotFoundError, IGLearnError


def write_idx(path, array: np.ndarray, compress: bool = True) -> None:
    codes = {np.dtype(np.uint8): 0x08, np.dtype(">i4"): 0x0C}
    header = bytes([0, 0, codes[array.dtype], array.ndim]) + struct.pack(
        f">{array.ndim}I", *array.shape)
    data = header + array.tobytes()
    if compress:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)


def test_read_idx_round_trips_generated_files(tmp_path):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    write_idx(tmp_path / "a.gz", images)
    np.testing.assert_array_equal(mnist.read_idx(tmp_path / "a.gz"), images)
    ints = np.array([1, -2, 300], dtype=">i4")
    write_idx(tmp_path / "b.idx", ints, compress=False)
    np.testing.assert_array_equal(mnist.read_idx(tmp_path / "b.idx"), ints)


def test_read_idx_rejects_bad_magic_and_truncation(tmp_path):
    (tmp_path / "bad.idx").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(IGLearnError, match="bad magic"):
        mnist.read_idx(tmp_path / "bad.idx")
    write_idx(tmp_path / "full.idx", np.zeros((4, 5), np.uint8), compress=False)
    data = (tmp_path / "full.idx").read_bytes()
    (tmp_path / "short.idx").write_bytes(data[:-3])
    with pytest.raises(IGLearnError, match="truncated"):
        mnist.read_idx(tmp_path / "short.idx")
    (tmp_path / "broken.gz").write_bytes(b"\x1f\x8b not gzip")
    with pytest.raises(IGLearnError, match="cannot read"):
        mnist.read_idx(tmp_path / "broken.gz")


def fake_files(folder, n_train=20, n_test=10):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    write_idx(folder / mnist.FILES["train_images"],
              rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8))
    write_idx(folder / mnist.FILES["train_labels"], (np.arange(n_train) % 10).astype(np.uint8))
    write_idx(folder / mnist.FILES["test_images"],
              rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8))
    write_idx(folder / mnist.FILES["test_labels"], (np.arange(n_test) % 10).astype(np.uint8))
    return {name: mnist.sha256(folder / name) for name in mnist.FILES.values()}


def test_resolution_order(tmp_path, monkeypatch):
    explicit, env, cache = tmp_path / "explicit", tmp_path / "env", tmp_path / "cache"
    for folder in (explicit, env):
        fake_files(folder)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    fake_files(cache / "iglearn" / "mnist")
    monkeypatch.setenv(mnist.ENV_VAR, str(env))
    assert mnist.find_mnist(explicit) == explicit
    assert mnist.find_mnist() == env
    monkeypatch.delenv(mnist.ENV_VAR)
    assert mnist.find_mnist() == cache / "iglearn" / "mnist"


def test_missing_files_give_actionable_errors(tmp_path, monkeypatch):
    with pytest.raises(DataNotFoundError, match="--data-dir .*missing"):
        mnist.find_mnist(tmp_path)
    monkeypatch.setenv(mnist.ENV_VAR, str(tmp_path))
    with pytest.raises(DataNotFoundError, match="IGLEARN_DATA"):
        mnist.find_mnist()
    monkeypatch.delenv(mnist.ENV_VAR)
    with pytest.raises(DataNotFoundError, match=r"the environment 'digits' \(iglearn simulate "
                                                r"digits\), --dataset digits where a command"):
        mnist.find_mnist(allow_download=False)


def test_download_verifies_checksums(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    sums = fake_files(mirror)
    monkeypatch.setattr(mnist, "SHA256", sums)
    target = mnist.download(tmp_path / "cache", mirrors=(mirror.as_uri() + "/",))
    assert sorted(p.name for p in target.iterdir()) == sorted(mnist.FILES.values())
    loaded = mnist._load(str(target), True)
    assert loaded.train_images.shape == (20, 28, 28) and loaded.test_labels.dtype == np.int64

    wrong = dict(sums, **{mnist.FILES["test_labels"]: "0" * 64})
    monkeypatch.setattr(mnist, "SHA256", wrong)
    with pytest.raises(DataNotFoundError, match="checksum mismatch"):
        mnist.download(tmp_path / "other", mirrors=(mirror.as_uri() + "/",))
    assert not (tmp_path / "other" / mnist.FILES["test_labels"]).exists()
    # offline, nothing downloaded: the cache folder the download made is not left behind
    with pytest.raises(DataNotFoundError, match="could not download"):
        mnist.download(tmp_path / "offline" / "mnist", mirrors=((tmp_path / "none").as_uri()
                                                                + "/",))
    assert (tmp_path / "offline").is_dir() and not (tmp_path / "offline" / "mnist").exists()
    assert not list((tmp_path / "other").glob("*.part"))


def test_load_rejects_files_with_wrong_checksums(tmp_path):
    fake_files(tmp_path)
    with pytest.raises(IGLearnError, match="SHA256 does not match"):
        mnist.load_mnist(tmp_path)
