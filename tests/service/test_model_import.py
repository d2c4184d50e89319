"""PUT /v1/model under hostile archives: an archive small on the wire that would inflate to
hundreds of MiB is refused (422 naming its budget) before it is inflated, the server's peak
memory barely moving; every refusal names the upload and the member, never a temporary
folder."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from iglearn.models.archive import GZIP_MAGIC, MAX_ARCHIVE_BYTES, pack_model
from iglearn.models.io import METADATA, WEIGHTS
from iglearn.service.app import IMPORT_SIZE_FACTOR
from tests.models.test_archive import hostile

from .test_api import small_model


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    """A model folder of the services' problem (K = 3, 4-dim contexts, 3-dim feedback)."""
    folder = tmp_path_factory.mktemp("import") / "m"
    small_model(folder)
    return folder


def memory(pid: int, field: str) -> int:
    """A field of /proc/PID/status (VmRSS, VmHWM) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def test_archives_inflating_to_hundreds_of_mib_are_refused_without_memory(service,
                                                                          model_folder):
    meta, weights = ((model_folder / name).read_bytes() for name in (METADATA, WEIGHTS))
    bombs = [("the tensors model.json describes", hostile([(METADATA, meta), (WEIGHTS, 900)])),
             ("MAX_ARCHIVE_EXPANSION", hostile([(WEIGHTS, 900), (METADATA, meta)])),
             ("MAX_ARCHIVE_EXPANSION", hostile([(METADATA, 100), (WEIGHTS, weights)]))]
    pid = service.process.process.pid
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # the peak starts again from now
    before = memory(pid, "VmRSS")
    with service.http("admin") as admin:
        versions = admin.get("/v1/model").json()["versions"]
        for limit, data in bombs:
            assert len(data) < 2 << 20
            refused = admin.put("/v1/model", content=data)
            assert refused.status_code == 422, refused.text
            error = refused.json()
            assert limit in error["error"] and error["field"] == "body", error
            assert error["error"].startswith("the uploaded model (weights.safetensors)") or \
                error["error"].startswith("the uploaded model (model.json)"), error
        assert admin.get("/v1/model").json()["versions"] == versions  # nothing stored
    assert memory(pid, "VmHWM") - before < 64 << 20


def test_a_damaged_upload_is_named_as_the_upload_and_its_member(service, model_folder,
                                                                tmp_path):
    meta = json.loads((model_folder / METADATA).read_text())
    weights = (model_folder / WEIGHTS).read_bytes()
    cases = {
        "model.json): field 'context_dim'": dict(meta, context_dim=0),
        "model.json): the decoder record": dict(meta, decoder=dict(
            meta["decoder"], **{"class": "custom", "factory": "os:system"})),
        "model.json): not valid JSON": None,
    }
    with service.http("admin") as admin:
        for expected, changed in cases.items():
            text = b"{oops" if changed is None else json.dumps(changed).encode()
            refused = admin.put("/v1/model", content=hostile([(METADATA, text),
                                                              (WEIGHTS, weights)]))
            assert refused.status_code == 422
            error = refused.json()["error"]
            assert error.startswith("the uploaded model (") and expected in error, error
            assert "/tmp" not in error and "iglearn-model-" not in error, error
        shorter = pack_model(model_folder)[:-200]
        refused = admin.put("/v1/model", content=shorter)
        assert refused.status_code == 422 and "the uploaded model" in refused.json()["error"]


def deleted_files(pid: int) -> int:
    """How many files the process holds open that have no name any more (temporary ones)."""
    fds = Path(f"/proc/{pid}/fd")
    count = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):  # closed while listed
            count += os.readlink(fd).endswith("(deleted)")
    return count


def test_uploads_stream_through_a_temporary_file_never_held_whole(service):
    limit = 1_000_000 * IMPORT_SIZE_FACTOR  # the services' max_body_bytes is the default
    junk = GZIP_MAGIC + np.random.default_rng(0).bytes(limit - (1 << 20))  # no archive
    pid = service.process.process.pid
    held = deleted_files(pid)
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # the peak starts again from now
    before = memory(pid, "VmRSS")

    def chunks(total: int):  # no content-length: the server counts as it receives
        for start in range(0, total, 1 << 20):
            yield junk[:min(1 << 20, total - start)]

    with service.http("admin") as admin:
        versions = admin.get("/v1/model").json()["versions"]
        for body, status, says in (
                (junk, 422, "the uploaded model: not a gzip-compressed tar"),
                (b"PK" + junk[2:], 422, "does not start as gzip does"),  # at its first bytes
                (chunks(limit + 1), 413, f"larger than the limit of {limit} bytes")):
            refused = admin.put("/v1/model", content=body)
            assert refused.status_code == status, refused.text
            error = refused.json()
            assert says in error["error"] and error["field"] == "body", error
            if status == 413:
                assert "max_body_bytes" in error["error"]
                assert str(MAX_ARCHIVE_BYTES) in error["error"]
        assert admin.get("/v1/model").json()["versions"] == versions  # nothing stored
    assert memory(pid, "VmHWM") - before < 24 << 20  # the uploads: 63 and 64 MB
    assert deleted_files(pid) == held  # every temporary file closed, so gone


def test_a_model_fitted_by_the_command_line_is_packed_and_imported(service, model_folder,
                                                                   tmp_path, capsys):
    """`iglearn pack MODEL --out model.tar.gz` writes the archive PUT /v1/model imports (the
    way from `iglearn fit` into a running service); an archive made by hand of the folder's
    contents (`tar czf m.tar.gz -C MODEL .`) is refused with the way to make one."""
    import tarfile

    from iglearn.cli import main

    assert main(["pack", str(model_folder), "--out", str(tmp_path / "m.tar.gz")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["algorithm"] == "igl" and printed["bytes"] == (tmp_path / "m.tar.gz").stat(
        ).st_size
    with tarfile.open(tmp_path / "by-hand.tar.gz", "w:gz") as tar:
        tar.add(model_folder, arcname=".")
    with service.http("admin") as admin:
        before = len(admin.get("/v1/model").json()["versions"])
        refused = admin.put("/v1/model", content=(tmp_path / "by-hand.tar.gz").read_bytes())
        assert refused.status_code == 422 and refused.json()["field"] == "body"
        assert "holds '.', not exactly model.json and weights.safetensors; write the archive " \
               "of the model folder again: iglearn pack MODEL --out model.tar.gz" in \
               refused.json()["error"]
        imported = admin.put("/v1/model", content=(tmp_path / "m.tar.gz").read_bytes())
        assert imported.status_code == 201, imported.text
        assert len(admin.get("/v1/model").json()["versions"]) == before + 1
    for argv, says in [(["pack", str(tmp_path / "m.tar.gz"), "--out", str(tmp_path / "a.tgz")],
                        "is a model archive already"),
                       (["pack", str(model_folder), "--out", str(tmp_path / "m.zip")],
                        "a model archive's name ends with .tar.gz or .tgz")]:
        assert main(argv) == 2 and says in capsys.readouterr().err
