"""Fingerprints of input files and folders: what tells ``evaluate`` that its data are the
log a model was fitted on."""

import shutil

import pytest

from iglearn.files import fingerprint, removed_if_failed, same_content


def test_a_folder_is_known_by_its_files_names_and_bytes(tmp_path):
    folder = tmp_path / "shards"
    (folder / "part").mkdir(parents=True)
    (folder / "a.parquet").write_bytes(b"first shard")
    (folder / "part" / "b.parquet").write_bytes(b"second")
    known = fingerprint(folder)
    assert known["bytes"] == len(b"first shard") + len(b"second")
    shutil.copytree(folder, tmp_path / "copy")
    assert same_content(tmp_path / "copy", known) is True
    (tmp_path / "copy" / "a.parquet").write_bytes(b"first SHARD")   # same size, other bytes
    assert same_content(tmp_path / "copy", known) is False
    (tmp_path / "copy" / "a.parquet").write_bytes(b"first shard")
    (tmp_path / "copy" / "part" / "b.parquet").rename(tmp_path / "copy" / "part" / "c.parquet")
    assert same_content(tmp_path / "copy", known) is False


def test_a_file_is_known_by_its_bytes_and_a_damaged_fingerprint_by_none(tmp_path):
    (tmp_path / "log.csv").write_text("context_0,action\n1,0\n")
    known = fingerprint(tmp_path / "log.csv")
    (tmp_path / "other.csv").write_text("context_0,action\n1,0\n")
    assert same_content(tmp_path / "other.csv", known) is True
    (tmp_path / "other.csv").write_text("context_0,action\n1,1\n")
    assert same_content(tmp_path / "other.csv", known) is False
    for damaged in (None, "abc", {"bytes": "20", "sha256": known["sha256"]},
                    {"bytes": known["bytes"]}, {**known, "extra": 1}):
        assert same_content(tmp_path / "log.csv", damaged) is None


def test_removed_if_failed_removes_only_what_the_failed_block_created(tmp_path):
    mine = tmp_path / "mine.txt"
    mine.write_text("kept")
    made = [tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c.toml", mine]
    for finish in ("fail", "keep-then-fail", "succeed"):
        try:
            with removed_if_failed(made) as keep:
                made[1].mkdir(parents=True)
                made[2].write_text("new")
                mine.write_text("changed")
                if finish == "keep-then-fail":
                    keep()
                if finish != "succeed":
                    raise RuntimeError(finish)
        except RuntimeError:
            pass
        left = sorted(p.name for p in tmp_path.rglob("*"))
        if finish == "fail":  # the new folders and file go, the existing file stays
            assert left == ["mine.txt"] and mine.read_text() == "changed"
        else:
            assert left == ["a", "b", "c.toml", "mine.txt"]
            shutil.rmtree(made[0])
    with pytest.raises(RuntimeError), removed_if_failed([tmp_path / "d"]):
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "theirs").write_text("not in the list")
        raise RuntimeError
    assert (tmp_path / "d" / "theirs").exists()  # a folder that is not empty stays
