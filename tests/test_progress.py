"""Progress on a standard error that is no terminal: plain lines a file or a CI log can be
read in, not a bar redrawn with carriage returns and erased at the end."""

from __future__ import annotations

import subprocess
import sys

from iglearn.progress import ProgressLines


def test_a_reproduction_into_a_file_tells_its_progress_in_plain_lines(tmp_path):
    err = tmp_path / "err.txt"
    with open(err, "wb") as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "iglearn", "reproduce", "table1", "--dataset", "digits",
             "--samples", "300", "--trials", "4", "--stack", "1", "--jobs", "1", "--methods",
             "SUP", "--out", str(tmp_path / "out")],
            stdout=subprocess.DEVNULL, stderr=stderr, timeout=300)
    text = err.read_text()
    assert done.returncode == 0, text
    assert "\r" not in text and "\x1b" not in text
    lines = [line for line in text.splitlines() if line.startswith("Table 1 trials: ")]
    assert lines[0] == "Table 1 trials: 0/4 (0 %), starting", text
    assert [line.split(",")[0] for line in lines[1:-1]] == [
        "Table 1 trials: 1/4 (25 %)", "Table 1 trials: 2/4 (50 %)", "Table 1 trials: 3/4 (75 %)"]
    assert lines[-1].startswith("Table 1 trials: 4/4 (100 %) done in "), text


def test_progress_lines_tell_each_tenth_the_figures_and_where_they_stopped(capsys):
    bar = ProgressLines(20, "fit", enabled=True)
    for _ in range(5):
        bar.update(1)
        bar.set_postfix(stage="policy", indicator="0.250")
    bar.close()
    bar.close()  # told once
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "fit: 0/20 (0 %), starting"
    assert [line.split(",")[0] for line in lines[1:-1]] == ["fit: 2/20 (10 %)",
                                                            "fit: 4/20 (20 %)"]
    assert lines[1].endswith(", stage=policy, indicator=0.250")
    assert lines[-1].startswith("fit: 5/20 (25 %) stopped after ")
    quiet = ProgressLines(3, "quiet", enabled=False)
    for _ in range(3):
        quiet.update(1)
    quiet.close()
    assert quiet.n == 3 and capsys.readouterr().err == ""
