"""The command's exit: its code, every exit handler run, the output flushed, running threads
waited for."""

import subprocess
import sys
import textwrap

import numpy as np


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)


def test_exit_runs_the_exit_handlers_and_flushes_the_output():
    done = run("""
        import atexit, sys
        from iglearn.cli import exit_process
        atexit.register(lambda: print("handler ran", file=sys.stderr))
        sys.stdout.write("unflushed output")
        exit_process(3)
        print("never reached")
    """)
    assert done.returncode == 3
    assert done.stdout == "unflushed output"
    assert done.stderr == "handler ran\n"


def test_exit_waits_for_a_running_thread(tmp_path):
    out = tmp_path / "written"
    done = run(f"""
        import threading, time
        from iglearn.cli import exit_process
        def late():
            time.sleep(0.5)
            open({str(out)!r}, "w").write("done")
        threading.Thread(target=late).start()
        exit_process(0)
    """)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "done"


def write_log(path) -> None:
    """A small raw log of 300 interactions (K = 3), written to ``path``."""
    from iglearn.data.formats import write_table
    from iglearn.data.logs import InteractionLog

    rng = np.random.default_rng(0)
    n = 300
    log = InteractionLog(context=rng.normal(35, 0.05, (n, 4)), action=rng.integers(0, 3, n),
                         probability=np.full(n, 1 / 3), feedback=rng.normal(0, 1, (n, 2)),
                         n_actions=3)
    write_table(log, path)


def test_the_command_exits_with_its_code_and_its_whole_output(tmp_path):
    write_log(tmp_path / "log.npz")
    command = [sys.executable, "-m", "iglearn", "fit", str(tmp_path / "log.npz"), "--out",
               str(tmp_path / "model")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("}")  # the whole summary
    assert (tmp_path / "model" / "model.json").is_file()
    missing = subprocess.run([*command[:4], str(tmp_path / "missing.npz"), *command[5:]],
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2
    assert missing.stderr.startswith("iglearn: error:")


def test_the_command_collects_garbage_in_larger_steps():
    done = run("""
        import atexit, gc, sys
        from iglearn.cli import COMMAND_GC_THRESHOLD, command
        atexit.register(lambda: print(gc.get_threshold()[0] == COMMAND_GC_THRESHOLD))
        sys.argv = ["iglearn", "--version"]
        command()
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [done.stdout.splitlines()[0], "True"]
    assert done.stdout.startswith("iglearn ")


def test_the_command_pads_the_heap():
    """The command asks for the heap pad (iglearn.heap) before it runs."""
    done = run("""
        import atexit, sys
        import iglearn.cli as cli
        asked = []
        cli.pad_heap = lambda: asked.append(True) or True
        atexit.register(lambda: print(asked == [True]))
        sys.argv = ["iglearn", "--version"]
        cli.command()
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "True"


def test_a_reader_that_goes_away_or_a_full_stdout_is_not_blamed_on_the_inputs(tmp_path):
    """`iglearn fit LOG | head -c 1` ends quietly with code 0, its model written; a full
    standard output (/dev/full) is one line naming standard output, code 2; a closed one
    (`>&-`) loses the summary, as asked, and no traceback."""
    import os

    write_log(tmp_path / "log.npz")

    def fit(out: str, **how) -> tuple[int, str]:
        command = [sys.executable, "-m", "iglearn", "fit", str(tmp_path / "log.npz"),
                   "--out", str(tmp_path / out), "--max-steps", "20"]
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, **how)
        if how.get("stdout") == subprocess.PIPE:
            assert process.stdout is not None
            process.stdout.read(1)  # then the reader goes away
            process.stdout.close()
        _, err = process.communicate(timeout=300)
        return process.returncode, err

    code, err = fit("piped", stdout=subprocess.PIPE)
    # the fit's own identifiability warnings, if any, and nothing else
    assert all(line.startswith("iglearn: warning: ") for line in err.splitlines())
    assert code == 0 and (tmp_path / "piped" / "model.json").is_file()
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            code, err = fit("full", stdout=full)
        told = [line for line in err.splitlines() if not line.startswith("iglearn: warning: ")]
        assert code == 2 and told == ["iglearn: error: standard output: no space left on the "
                                      "device; free some space or write elsewhere"]
    code, err = fit("closed", stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert code == 0 and "Traceback" not in err and (tmp_path / "closed" / "model.json").is_file()


def test_a_reader_of_standard_error_that_goes_away_loses_the_messages_not_the_work(tmp_path):
    """`iglearn fit LOG 2>&1 | head -1`: a warning that standard error can no longer take
    (K = 2 always warns) is lost, and the fit goes on to write its model, code 0; the
    warning's failed write was taken for an error reading the inputs ("LOG: Broken pipe;
    check the path"), the fit stopped with no model and code 1. An error is still the
    command's code 2."""
    from iglearn.data.formats import write_table
    from iglearn.data.logs import InteractionLog

    rng = np.random.default_rng(0)
    n = 200
    write_table(InteractionLog(context=rng.normal(0, 1, (n, 2)), action=rng.integers(0, 2, n),
                               probability=np.full(n, 0.5), feedback=rng.normal(0, 1, (n, 2)),
                               n_actions=2), tmp_path / "log.npz")

    def gone(*argv) -> int:
        process = subprocess.Popen([sys.executable, "-m", "iglearn", *map(str, argv)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert process.stderr is not None
        process.stderr.close()  # the reader goes away before anything is said
        return process.wait(timeout=300)

    assert gone("fit", tmp_path / "log.npz", "--out", tmp_path / "model", "--max-steps",
                "20") == 0
    assert (tmp_path / "model" / "model.json").is_file()
    assert gone("evaluate", tmp_path / "model", tmp_path / "missing.npz") == 2
