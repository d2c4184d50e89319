"""The command line on sharded and streamed logs: convert --shard-rows, fit FOLDER, --stream."""

from __future__ import annotations

import json

import pytest

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

    # whether the data are the training log, where it cannot be told (a model fitted on a
    # stream keeps no row sketch; data read as a stream are not sketched), is null: it was
    # a definite false for the training log itself
    told = {}
    for model, data, stream in (("streamed", small / "log.npz", "off"),
                                ("memory", small / "log.npz", "on"),
                                ("memory", small / "log.npz", "off"),
                                ("memory", small / "test.npz", "off")):
        code, out, err = run(capsys, "evaluate", tmp_path / model, data, "--stream", stream)
        assert code == 0, err
        told[model, data.name, stream] = json.loads(out)["in_sample"]
    assert told == {("streamed", "log.npz", "off"): None, ("memory", "log.npz", "on"): None,
                    ("memory", "log.npz", "off"): True, ("memory", "test.npz", "off"): False}


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


def test_partitioned_folders_shards_named_as_files_and_killed_conversions(small, tmp_path,
                                                                        capsys):
    """A folder whose shards lie in subfolders (a partitioned layout, day=1/) is refused
    naming one (read as its top-level shards alone it dropped the rest); --shard-rows into a
    name iglearn reads as a file (.npz) is refused before anything is written; the next
    conversion into a folder removes the shards a killed one left in its hidden temporary."""
    import os
    import shutil
    import time

    assert run(capsys, "convert", small / "log.npz", tmp_path / "shards", "--shard-rows",
               300)[0] == 0
    hive = tmp_path / "hive"
    for day, shard in (("day=1", "part-00000.parquet"), ("day=2", "part-00001.parquet")):
        (hive / day).mkdir(parents=True)
        shutil.copy(tmp_path / "shards" / shard, hive / day / shard)
    shutil.copy(tmp_path / "shards" / "part-00002.parquet", hive / "part-00002.parquet")
    code, _, err = run(capsys, "fit", hive, "--out", tmp_path / "m", *FAST)
    assert code == 2 and "its subfolder 'day=1' holds .parquet files, which iglearn does not " \
                         "read" in err, err
    code, _, err = run(capsys, "convert", small / "log.npz", tmp_path / "again.npz",
                       "--shard-rows", 300)
    assert code == 2 and "--shard-rows writes a folder of Parquet shards" in err
    assert not (tmp_path / "again.npz").exists()
    killed = tmp_path / ".out.k2j3h4g5"  # as a convert killed midway leaves it
    killed.mkdir()
    shutil.copy(tmp_path / "shards" / "part-00000.parquet", killed / "part-00000.parquet")
    when = time.time() - 60
    for path in (killed / "part-00000.parquet", killed):
        os.utime(path, (when, when))
    code, _, err = run(capsys, "convert", small / "log.npz", tmp_path / "out", "--shard-rows",
                       300)
    assert code == 0, err
    assert not killed.exists() and "removed what interrupted runs left" in err


def test_a_memory_limit_the_command_accepts_bounds_its_peak(small, tmp_path, capsys):
    """`fit --stream on --memory-limit-gb L` at the least limit it accepts (it names the need
    when refusing a lower one) peaks within L: the imports of a fit (torch, pyarrow's
    datasets), made after the stream is sized, are counted in what the process holds (a limit
    of 0.27 GB was accepted and the fit peaked at 0.33 GiB)."""
    import re
    import subprocess
    import sys

    assert run(capsys, "convert", small / "log.npz", tmp_path / "shards", "--shard-rows",
               200)[0] == 0

    def fit(limit: float) -> subprocess.CompletedProcess:
        argv = ["fit", str(tmp_path / "shards"), "--out", str(tmp_path / f"m{limit}"),
                "--stream", "on", "--memory-limit-gb", str(limit), *FAST]
        # the peak of this process's own memory (VmHWM): ru_maxrss would also hold the
        # parent's, which a vfork'd child inherits across exec
        code = ("import sys\n"
                "from iglearn.cli import main\n"
                f"code = main({argv!r})\n"
                "hwm = [line for line in open('/proc/self/status') if line.startswith('VmHWM')]\n"
                "print('peak', hwm[0].split()[1], file=sys.stderr)\n"
                "sys.exit(code)")
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=300)

    refused = fit(0.05)
    assert refused.returncode == 2, refused.stderr
    need = float(re.search(r"needs ([\d.]+) GB at least", refused.stderr).group(1))
    done = fit(need + 0.01)
    assert done.returncode == 0, done.stderr
    peak = int(re.search(r"peak (\d+)", done.stderr).group(1)) * 1024  # KiB on Linux
    assert peak <= (need + 0.01) * 2**30, (peak / 2**30, need)


def test_evaluate_refuses_to_stream_a_file_of_contexts(small, tmp_path, capsys):
    for option in (("--stream", "on"), ("--reader", "ray")):
        code, out, err = run(capsys, "evaluate", small / "model", small / "test.npz", *option)
        asked = " ".join(option)
        assert code == 2 and out == "", err
        assert err.strip() == (f"iglearn: error: {asked}: {small / 'test.npz'} holds contexts "
                               f"only, which are read into memory, never streamed; drop {asked}")
    code, out, err = run(capsys, "evaluate", small / "model", small / "test.npz")
    assert code == 0 and json.loads(out)["accuracy"] > 0.5, err


def _wide_log(path, rows: int, **options) -> None:
    """A K = 5 log of ``rows`` interactions, 256-dimensional contexts and feedback, written to
    ``path`` (``options``: write_table's)."""
    import numpy as np

    from iglearn.data.formats import write_table
    from iglearn.data.logs import InteractionLog

    rng = np.random.default_rng(0)
    write_table(InteractionLog(context=rng.normal(size=(rows, 256)).astype(np.float32),
                               action=rng.integers(5, size=rows),
                               probability=np.full(rows, 0.2),
                               feedback=rng.normal(size=(rows, 256)).astype(np.float32),
                               n_actions=5), path, **options)


def _measured(*argv) -> tuple[int, str, str, int]:
    """(exit code, standard output, standard error, peak resident bytes) of ``iglearn ARGV``
    in a process of its own: its VmHWM, which ru_maxrss would mix with the parent's."""
    import re
    import subprocess
    import sys

    code = ("import sys\n"
            "from iglearn.cli import main\n"
            f"code = main({[str(a) for a in argv]!r})\n"
            "hwm = [line for line in open('/proc/self/status') if line.startswith('VmHWM')]\n"
            "print('peak', hwm[0].split()[1], file=sys.stderr)\n"
            "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    peak = int(re.search(r"peak (\d+)", done.stderr).group(1)) * 1024  # KiB on Linux
    return done.returncode, done.stdout, done.stderr, peak


@pytest.mark.slow  # a fit of 80,000 wide rows in a child process: about 25 s each
@pytest.mark.parametrize("suffix", ["npz", "parquet"])
def test_a_log_stream_auto_reads_into_memory_keeps_the_limit(tmp_path, suffix):
    """`fit --stream auto` reads a log into memory only when the whole fit stays below the
    limit: the fingerprint and sketches of model.json are hashed a block at a time (they
    copied the log three times over: 80,000 rows of 256 + 256 values, 0.15 GiB, peaked at
    0.89 GiB from .npz under a limit of 0.82), and reading Parquet gives Arrow's pool back."""
    limit = 0.82
    _wide_log(tmp_path / f"log.{suffix}", 80_000)
    code, out, err, peak = _measured("fit", tmp_path / f"log.{suffix}", "--out",
                                     tmp_path / "m", "--memory-limit-gb", limit,
                                     "--shuffle-rows", 8192, *FAST)
    assert code == 0, err
    assert peak <= limit * 2**30, (json.loads(out)["streamed"], peak / 2**30)



def test_the_need_a_refused_limit_states_is_a_limit_the_command_takes(small, tmp_path,
                                                                      capsys):
    """The need was printed rounded to the nearest hundredth, so 0.503 GB read "0.50", a
    limit then refused as well; it is rounded up."""
    import re

    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                         "--stream", "on", "--memory-limit-gb", 0.01, *FAST)
    assert code == 2 and "cannot be kept" in err, err
    need = re.search(r"needs (\d+\.\d+) GB at least", err).group(1)
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m",
                         "--stream", "on", "--memory-limit-gb", need, *FAST)
    assert code == 0 and json.loads(out)["streamed"] is True, err


@pytest.mark.parametrize(("options", "why"), [
    (("--stream", "off", "--shuffle-rows", "1000"), "--stream off reads the log into memory"),
    (("--algorithm", "igl-p", "--block-rows", "100"),
     "--algorithm igl-p fits a log in memory")])
def test_stream_buffer_sizes_a_fit_in_memory_never_reads_are_refused(small, tmp_path, capsys,
                                                                      options, why):
    """--shuffle-rows and --block-rows size a stream: with --stream off (or IGL-P, which
    fits in memory) they were ignored without a word; they are refused, naming why."""
    code, out, err = run(capsys, "fit", small / "log.npz", "--out", tmp_path / "m", *options,
                         *FAST)
    option = options[-2]
    assert code == 2 and err.strip() == (f"iglearn: error: {option}: {why}, where no stream "
                                         f"reads blocks or shuffles rows through a buffer; "
                                         f"drop {option}"), err
    assert not (tmp_path / "m").exists()


def test_a_bad_value_in_a_shard_is_named_by_its_file_and_its_row_there(small, tmp_path, capsys):
    """A NaN in the third shard was told as "shards: field 'probability' holds nan at row
    605": the folder and the row counted over every shard, not which file to open nor where.
    Read into memory or streamed, by fit and evaluate, it is now named by its shard."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    shards = tmp_path / "shards"
    assert run(capsys, "convert", small / "log.npz", shards, "--shard-rows", 300)[0] == 0
    assert run(capsys, "fit", small / "log.npz", "--out", tmp_path / "model", *FAST)[0] == 0
    part = shards / "part-00002.parquet"
    table = pq.read_table(part)
    probability = table.column("probability").to_numpy().copy()
    probability[5] = np.nan
    index = table.schema.get_field_index("probability")
    pq.write_table(table.set_column(index, "probability", pa.array(probability)), part)
    for argv in (("fit", shards, "--out", tmp_path / "m", *FAST),
                 ("fit", shards, "--out", tmp_path / "m", "--stream", "on", *FAST),
                 ("evaluate", tmp_path / "model", shards),
                 ("evaluate", tmp_path / "model", shards, "--stream", "on")):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and err.startswith(
            f"iglearn: error: {part}: field 'probability' holds nan at row 5, outside (0, 1]"
        ), (argv, err)
    assert not (tmp_path / "m").exists()


def test_a_streamed_fit_shows_the_progress_of_its_passes_over_the_log(small, tmp_path, capsys):
    """With --progress, a streamed fit showed nothing while it checked every row and took the
    log's statistics, two whole passes before its first step: minutes of silence on tens of
    millions of interactions. Each pass now shows its rows; without --progress (and off a
    terminal) nothing is shown."""
    shards = tmp_path / "shards"
    assert run(capsys, "convert", small / "log.npz", shards, "--shard-rows", 300)[0] == 0
    code, _, err = run(capsys, "fit", shards, "--out", tmp_path / "watched", "--stream", "on",
                       "--progress", *FAST)
    assert code == 0, err
    lines = err.splitlines()
    for first, last in ((f"checking {shards}: 0/800 (0 %), starting",
                         f"checking {shards}: 800/800 (100 %) done in"),
                        (f"statistics of {shards}: 0/800 (0 %), starting",
                         f"statistics of {shards}: 800/800 (100 %) done in")):
        assert first in lines and any(line.startswith(last) for line in lines), err
    assert lines.index(f"checking {shards}: 0/800 (0 %), starting") < lines.index(
        f"statistics of {shards}: 0/800 (0 %), starting")
    code, _, err = run(capsys, "fit", shards, "--out", tmp_path / "quiet", "--stream", "on",
                       *FAST)
    assert code == 0 and "checking" not in err and "statistics of" not in err, err
