"""The command line on sharded and streamed logs: convert --shard-rows, fit FOLDER, --stream."""

from __future__ import annotations

import json

from tests.cli.conftest import FAST, run


def test_convert_to_shards_then_fit_and_evaluate_the_folder(small, tmp_path, capsys):
    code, out, err = run(capsys, "convert", small / "log.npz", tmp_path / "shards",
                         "--shard-rows", 300)
    assert code == 0, err
    record = json.loads(out)
    assert record["rows"] == 800 and record["shards"] == 3
    assert sorted(p.name for p in (tmp_path / "shards").iterdir()) == [
        "part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]

    code, out, err = run(capsys, "fit", tmp_path / "shards", "--out", tmp_path / "memory",
                         *FAST)
    assert code == 0, err
    memory = json.loads(out)
    assert memory["samples"] == 800 and memory["streamed"] is False

    code, out, err = run(capsys, "fit", tmp_path / "shards", "--out", tmp_path / "streamed",
                         "--stream", "on", "--shuffle-rows", "200", *FAST)
    assert code == 0, err
    streamed = json.loads(out)
    assert streamed["streamed"] is True and streamed["samples"] == 800
    assert streamed["settings"] == memory["settings"]

    for model in ("memory", "streamed"):
        code, out, err = run(capsys, "evaluate", tmp_path / model, tmp_path / "shards",
                             "--stream", "on")
        assert code == 0, err
        assert json.loads(out)["value_ips"] > 0.5   # far above uniform play's 0.1


def test_shards_into_a_folder_that_holds_files_are_refused(small, tmp_path, capsys):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    code, _, err = run(capsys, "convert", small / "log.npz", tmp_path / "full",
                       "--shard-rows", 100)
    assert code == 2 and "not empty" in err and len(err.strip().splitlines()) == 1
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]
    code, _, err = run(capsys, "fit", tmp_path / "full", "--out", tmp_path / "m")
    assert code == 2 and "no .parquet shards" in err


def test_a_folder_with_empty_shards_fits_and_evaluates(small, tmp_path, capsys):
    import pyarrow.parquet as pq

    code, _, err = run(capsys, "convert", small / "log.npz", tmp_path / "shards",
                       "--shard-rows", 300)
    assert code == 0, err
    table = pq.read_table(tmp_path / "shards" / "part-00000.parquet")
    pq.write_table(table.slice(0, 0), tmp_path / "shards" / "part-00001a.parquet")
    pq.ParquetWriter(tmp_path / "shards" / "part-00003.parquet", table.schema).close()
    for stream in ("on", "off"):
        code, out, err = run(capsys, "fit", tmp_path / "shards", "--out", tmp_path / stream,
                             "--stream", stream, *FAST)
        assert code == 0, err
        assert json.loads(out)["samples"] == 800
        code, out, err = run(capsys, "evaluate", tmp_path / stream, tmp_path / "shards",
                             "--stream", "on")
        assert code == 0, err
    for name in ("part-00000.parquet", "part-00001.parquet", "part-00002.parquet"):
        pq.write_table(table.slice(0, 0), tmp_path / "shards" / name)
    code, _, err = run(capsys, "fit", tmp_path / "shards", "--out", tmp_path / "none",
                       "--stream", "on", *FAST)
    assert code == 2 and "empty" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "none").exists()
