"""Model archives: their members, and the folders unpacked from them, have the mode of a new
file, whatever the modes in the folder packed; hostile archives and files are refused within
byte budgets, in bounded memory, in one line naming the archive given and the member."""

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from iglearn import BatchIGL, IGLearnError
from iglearn.envs import digits_environment
from iglearn.learners.registry import load_model
from iglearn.learners.training import Optimisation
from iglearn.models import io as io_module
from iglearn.models.archive import extract_archive, pack_model, read_model, unpack_model
from iglearn.models.io import METADATA, WEIGHTS


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A model folder whose weights are readable by their owner only."""
    folder = tmp_path_factory.mktemp("model") / "m"
    fast = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = BatchIGL(optimisation=fast, max_restarts=0, seed=0)
        learner.fit(digits_environment().log(500, seed=1))
    learner.save(folder)
    os.chmod(folder / WEIGHTS, 0o600)
    return folder


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_archive_members_and_extracted_files_get_the_mode_of_a_new_file(tmp_path, model,
                                                                        mask):
    old = os.umask(mask)
    try:
        data = pack_model(model)
        archive = tmp_path / "m.tar.gz"
        archive.write_bytes(data)
        extract_archive(archive, tmp_path / "out")
    finally:
        os.umask(old)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = {m.name: m.mode for m in tar.getmembers()}
    assert members == {METADATA: 0o666 & ~mask, WEIGHTS: 0o666 & ~mask}
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "out").iterdir()}
    assert modes == {METADATA: 0o666 & ~mask, WEIGHTS: 0o666 & ~mask}


def test_a_folder_of_symbolic_links_packs_the_files_they_name(tmp_path, model):
    """A model folder whose files are symbolic links (put together with ``ln -s``, or a store
    that links to its cache) packs their contents: its archive was one of links, which pack
    wrote without a word and load, predict and the service refused ("model.json is not a
    regular file")."""
    linked = tmp_path / "linked"
    linked.mkdir()
    for name in (METADATA, WEIGHTS):
        (linked / name).symlink_to(model / name)
    archive = tmp_path / "m.tar.gz"
    archive.write_bytes(pack_model(linked))
    with tarfile.open(archive, mode="r:gz") as tar:
        assert all(member.isfile() for member in tar.getmembers())
    extract_archive(archive, tmp_path / "out")
    for name in (METADATA, WEIGHTS):
        assert (tmp_path / "out" / name).read_bytes() == (model / name).read_bytes()


# -- hostile archives: byte budgets before inflating, memory bounded -------------------------

ZERO_MIB = gzip.compress(bytes(1 << 20))
"""One gzip member inflating to 1 MiB of zeros (about 1 KiB): copies of it make archives that
are small on disk and huge unpacked (a gzip stream may hold several members)."""


def tar_header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mode = size, 0o644
    return info.tobuf(tarfile.USTAR_FORMAT)


def hostile(members: list[tuple[str, bytes | int]], trailing: bytes = b"") -> bytes:
    """A gzip-compressed tar archive of ``members``, each given as its bytes or as a number
    of MiB of zeros; ``trailing``: bytes after its end, never read."""
    parts = []
    for name, data in members:
        if isinstance(data, int):
            parts += [gzip.compress(tar_header(name, data << 20)), ZERO_MIB * data]
        else:
            parts.append(gzip.compress(tar_header(name, len(data)) + data
                                       + bytes(-len(data) % 512)))
    return b"".join(parts) + gzip.compress(bytes(1024)) + trailing


def json_bomb(mib: int) -> bytes:
    """A model.json of ``mib`` MiB and a bit of ``{},`` (Python spends about 45 bytes of
    memory per byte of it), compressed as copies of one gzip member."""
    chunk = gzip.compress(b"{}," * (1 << 20))  # 3 MiB
    size = 1 + 3 * (mib // 3 << 20) + 3
    parts = [gzip.compress(tar_header(METADATA, size) + b"["), chunk * (mib // 3),
             gzip.compress(b"{}]" + bytes(-size % 512))]
    return b"".join(parts)


@pytest.fixture(scope="module")
def hostile_files(model, tmp_path_factory):
    """Model archives and files that would cost hundreds of MiB to GiBs if read or inflated
    whole, each small on disk (zeros compressed, or sparse files), with the message part that
    must name its budget."""
    root = tmp_path_factory.mktemp("hostile")
    meta, weights = ((model / name).read_bytes() for name in (METADATA, WEIGHTS))
    cases = {
        "meta-first-900MiB.tar.gz": (hostile([(METADATA, meta), (WEIGHTS, 900)]),
                                     "the tensors model.json describes"),
        "weights-first-900MiB.tar.gz": (hostile([(WEIGHTS, 900), (METADATA, meta)]),
                                        "MAX_ARCHIVE_EXPANSION"),
        "weights-over-1GiB.tar.gz": (hostile([(WEIGHTS, 2048), (METADATA, meta)]),
                                     "MAX_ARCHIVE_BYTES"),
        # declared within the budget of a larger archive, refused while it inflates
        "inflating-40MiB.tar.gz": (hostile([(WEIGHTS, 40), (METADATA, meta)],
                                           trailing=os.urandom(3 << 20)),
                                   "inflates more than 16 times"),
        "json-63MiB.tar.gz": (json_bomb(63) + hostile([(WEIGHTS, weights)]),
                              "MAX_ARCHIVE_EXPANSION"),
    }
    for name, (data, _) in cases.items():
        (root / name).write_bytes(data)
    with open(root / "weights-over-1GiB.tar.gz", "r+b") as f:
        f.truncate(200 << 20)  # zeros after its end (sparse): room to expand 16 times 200 MiB
    # sparse files: gigabytes long, nothing on disk
    for name, size, head in (("three-GiB.tar.gz", 3 << 30, b""),
                             ("not-gzip-900MiB.tar.gz", 900 << 20, b"PK\x03\x04"),
                             ("gzip-magic-900MiB.tar.gz", 900 << 20, b"\x1f\x8b\x08\x00")):
        with open(root / name, "wb") as f:
            f.write(head)
            f.truncate(size)
    messages = {name: why for name, (_, why) in cases.items()}
    messages |= {"three-GiB.tar.gz": "MAX_ARCHIVE_BYTES",
                 "not-gzip-900MiB.tar.gz": "does not start as gzip does",
                 "gzip-magic-900MiB.tar.gz": "not a gzip-compressed tar archive"}
    # a model folder whose weights file holds one tensor of 600 MiB (sparse) named as the
    # policy's, for a model of a few KiB
    folder = root / "big-weights"
    folder.mkdir()
    (folder / METADATA).write_bytes(meta)
    header = json.dumps({"policy.net.weight": {"dtype": "F32", "shape": [150 << 20],
                                               "data_offsets": [0, 600 << 20]}}).encode()
    with open(folder / WEIGHTS, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
        f.truncate(8 + len(header) + (600 << 20))
    messages["big-weights"] = "the tensors model.json describes take"
    # model.json of many small objects: refused before parsing (it would cost 45 times its
    # size), in a folder and in an archive where random keys keep it within the expansion
    folder = root / "json-objects"
    folder.mkdir()
    (folder / METADATA).write_bytes(b"[" + b"{}," * (2 << 20) + b"{}]")
    (folder / WEIGHTS).write_bytes(weights)
    keys = np.random.default_rng(0).integers(97, 123, size=(400_000, 2), dtype=np.uint8)
    objects = b",".join(b'{"%s":0}' % bytes(key) for key in keys)
    (root / "json-objects.tar.gz").write_bytes(hostile([(METADATA, b"[" + objects + b"]"),
                                                        (WEIGHTS, weights)]))
    messages |= {"json-objects": "MAX_MODEL_JSON_CONTAINERS",
                 "json-objects.tar.gz": "MAX_MODEL_JSON_CONTAINERS"}
    return root, messages


def test_hostile_archives_are_small_on_disk(hostile_files):
    root, messages = hostile_files
    for name in messages:
        blocks = sum(p.stat().st_blocks for p in (root / name).rglob("*")) \
            if (root / name).is_dir() else (root / name).stat().st_blocks
        assert blocks * 512 < 8 << 20, name


@pytest.mark.slow  # a child process that imports torch
def test_hostile_archives_are_refused_in_bounded_memory_and_time(hostile_files, model):
    """Each is refused in one line naming its budget, in a child process whose peak resident
    memory stays within 64 MiB of what loading a real model archive took."""
    root, messages = hostile_files
    script = f"""
import json, resource, sys, time
from iglearn.errors import IGLearnError
from iglearn.models.archive import read_model
from pathlib import Path
root = Path({str(root)!r})
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
read_model(root / "real.tar.gz")
base, results = peak(), {{}}
for name in {sorted(messages)!r}:
    start = time.process_time()
    try:
        read_model(root / name)
        results[name] = ["loaded", 0]
    except IGLearnError as e:
        results[name] = [str(e), time.process_time() - start]
print(json.dumps({{"base": base, "peak": peak(), "results": results}}))
"""
    (root / "real.tar.gz").write_bytes(pack_model(model))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=True)
    report = json.loads(done.stdout)
    for name, (message, seconds) in report["results"].items():
        assert "\n" not in message and messages[name] in message, (name, message)
        assert message.startswith(str(root / name)), message  # the path given, no other
        assert seconds < 2, (name, seconds)
    assert report["peak"] - report["base"] < 64 << 20, report


# -- messages name the archive given and the member, never a temporary folder ----------------

def damaged_archives(model: Path) -> dict[str, tuple[bytes, str]]:
    """Archives damaged in different ways: their bytes and the member the message names."""
    meta, weights = ((model / name).read_bytes() for name in (METADATA, WEIGHTS))
    record = json.loads(meta)
    cases = {}
    edits = {"field": lambda m: m.__setitem__("n_actions", -3),
             "factory": lambda m: m["decoder"].update(factory="os:system"),
             "schema": lambda m: m.__setitem__("feature_schema", {"context": [1]}),
             "standardiser": lambda m: m.__setitem__("standardiser", {"x": 1}),
             "settings": lambda m: m["settings"]["optimisation"].__setitem__("lr", "a")}
    for name, edit in edits.items():
        changed = json.loads(meta)
        edit(changed)
        cases[name] = (hostile([(METADATA, json.dumps(changed).encode()), (WEIGHTS, weights)]),
                       METADATA)
    cases["not-json"] = (hostile([(METADATA, b"{nope"), (WEIGHTS, weights)]), METADATA)
    tensors = load_file(str(model / WEIGHTS))
    tensors["policy.extra"] = torch.zeros(1)
    cases["stray-tensor"] = (hostile([(METADATA, meta), (WEIGHTS, save(tensors))]), WEIGHTS)
    cases["weights-bytes"] = (hostile([(METADATA, meta), (WEIGHTS, b"\0" * 64)]), WEIGHTS)
    bigger = dict(record, n_actions=record["n_actions"] + 1)
    bigger["policy"] = dict(record["policy"], output_dim=record["n_actions"] + 1)
    cases["shapes"] = (hostile([(METADATA, json.dumps(bigger).encode()), (WEIGHTS, weights)]),
                       WEIGHTS)
    return cases


def save(tensors: dict) -> bytes:
    from safetensors.torch import save as to_bytes

    return to_bytes(tensors)


def test_every_load_error_of_an_archive_names_it_and_the_member(model, tmp_path, capsys):
    from tests.cli.conftest import run

    out = tmp_path / "out"
    for kind, (data, member) in damaged_archives(model).items():
        archive = tmp_path / f"{kind}.tar.gz"
        archive.write_bytes(data)
        for load, args in ((read_model, (archive,)), (extract_archive, (archive, out))):
            with pytest.raises(IGLearnError) as refused:
                load(*args)
            message = str(refused.value)
            assert message.startswith(f"{archive} ({member})"), (kind, message)
            assert "iglearn-model-" not in message and ".out." not in message, message
        code, _, err = run(capsys, "load", archive, "--out", out)
        assert code == 2 and err.strip().endswith(message.split(": ", 1)[1]), (kind, err)
        assert f"{archive} ({member})" in err and ".out." not in err
        assert not out.exists() and not list(tmp_path.glob(".out.*"))


def test_members_other_than_the_two_regular_files_are_refused(model, tmp_path):
    """Links, devices, folders, sparse files, paths leading elsewhere, a member twice: each
    refused in one line, nothing written outside the folder unpacked into."""
    meta, weights = ((model / name).read_bytes() for name in (METADATA, WEIGHTS))

    def archive(*members: tarfile.TarInfo, pax: dict | None = None,
                fmt: int = tarfile.PAX_FORMAT) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt) as tar:
            tar.addfile(info(METADATA, len(meta)), io.BytesIO(meta))
            for member in members:
                data = weights if member.isfile() else None
                if pax is not None:
                    member.pax_headers = pax
                tar.addfile(member, io.BytesIO(data) if data is not None else None)
        return buffer.getvalue()

    def info(name: str, size: int = 0, kind: bytes = tarfile.REGTYPE, **fields) -> tarfile.TarInfo:
        member = tarfile.TarInfo(name)
        member.size, member.type = size, kind
        for key, value in fields.items():
            setattr(member, key, value)
        return member

    cases = {
        "symlink": archive(info(WEIGHTS, kind=tarfile.SYMTYPE, linkname="/etc/passwd")),
        "hard link": archive(info(WEIGHTS, kind=tarfile.LNKTYPE, linkname=METADATA)),
        "device": archive(info(WEIGHTS, kind=tarfile.CHRTYPE, devmajor=1, devminor=3)),
        "fifo": archive(info(WEIGHTS, kind=tarfile.FIFOTYPE)),
        "folder": archive(info(WEIGHTS, kind=tarfile.DIRTYPE)),
        "traversal": archive(info("../" + WEIGHTS, len(weights))),
        "absolute": archive(info(str(tmp_path / "escaped"), len(weights))),
        "twice": archive(info(METADATA, len(weights))),
        "pax path": archive(info(WEIGHTS, len(weights)), pax={"path": "../escaped"}),
        "pax sparse": archive(info(WEIGHTS, len(weights)),
                              pax={"GNU.sparse.major": "1", "GNU.sparse.minor": "0"}),
        "gnu long name": archive(info("x" * 120 + WEIGHTS, len(weights)),
                                 fmt=tarfile.GNU_FORMAT),
        "gnu sparse": archive(info(WEIGHTS, len(weights), kind=tarfile.GNUTYPE_SPARSE),
                              fmt=tarfile.GNU_FORMAT),
    }
    for case, data in cases.items():
        folder = tmp_path / case.replace(" ", "-")
        folder.mkdir()
        with pytest.raises(IGLearnError) as refused:
            unpack_model(data, folder, "upload")
        assert "\n" not in str(refused.value) and str(refused.value).startswith("upload"), case
        assert {p.name for p in folder.iterdir()} <= {METADATA}, case
        assert not (tmp_path / "escaped").exists() and not (tmp_path / WEIGHTS).exists()



def test_brackets_inside_names_are_not_counted_as_objects(model, tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / WEIGHTS).write_bytes((model / WEIGHTS).read_bytes())
    metadata = json.loads((model / METADATA).read_text())
    names = [f"x{i}" + "[{" * 1000 for i in range(metadata["context_dim"])]
    metadata["feature_schema"] = {"context": names, "feedback": []}
    (folder / METADATA).write_text(json.dumps(metadata))
    text = (folder / METADATA).read_text()
    assert text.count("[") + text.count("{") > io_module.MAX_MODEL_JSON_CONTAINERS
    assert load_model(folder).schema_.context == tuple(names)


def test_unpacking_into_a_folder_that_cannot_be_written_names_the_folder(model, tmp_path):
    """A missing destination folder is no fault of the archive: the message names the path
    that could not be written and the fix, not 'not a gzip-compressed tar archive'."""
    data = pack_model(model)
    with pytest.raises(IGLearnError, match=r"could not write the unpacked model \(No such "
                                           r"file or directory\); unpack it into an existing"):
        unpack_model(data, tmp_path / "missing")
    assert not (tmp_path / "missing").exists()
    unpack_model(data, tmp_path)  # the same archive into a folder that exists
    assert (tmp_path / METADATA).is_file()
