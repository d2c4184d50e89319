"""iglearn.processes: a child that called end_with_parent ends within ~a second of its
parent's SIGKILL, whatever it is doing: starting, holding the interpreter in one long C call,
or (without the kernel's help) busy in Python; a Ray address is checked before Ray is asked
to connect to it."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from iglearn.errors import IGLearnError
from iglearn.processes import RAY_CONNECT_SECONDS, check_reachable, ray_endpoint
from tests.process_table import HAS_PROC, alive, wait_gone

pytestmark = pytest.mark.skipif(not HAS_PROC, reason="reads the process table in /proc")

PARENT = textwrap.dedent("""
    import multiprocessing, os, sys, time
    from pathlib import Path

    def child(parent, mode, ready):
        import iglearn.processes as processes
        if mode == "watch":  # the portable fallback alone
            processes.parent_death_signal = lambda sig=0: False
        processes.end_with_parent(parent)
        Path(ready).write_text(str(os.getpid()))
        if mode == "gil":  # one C call that never lets another thread run
            sum(range(10 ** 15))
        x = 0
        while True:
            x += 1

    if __name__ == "__main__":
        mode, ready = sys.argv[1], sys.argv[2]
        process = multiprocessing.get_context("spawn").Process(
            target=child, args=(os.getpid(), mode, ready))
        process.start()
        print(process.pid, flush=True)
        time.sleep(600)
""")


def start(tmp_path: Path, mode: str) -> tuple[subprocess.Popen, int, Path]:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    ready = tmp_path / f"ready-{mode}"
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen([sys.executable, str(script), mode, str(ready)],
                              stdout=subprocess.PIPE, text=True, env=env)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.stdout.close()
    return parent, child, ready


@pytest.mark.parametrize("mode", ["gil", "watch"])
def test_a_busy_child_ends_within_a_second_of_its_parents_sigkill(tmp_path, mode):
    parent, child, ready = start(tmp_path, mode)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ready.exists(), "the child never started"
        time.sleep(0.3)  # busy for a moment
        assert alive(child)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert wait_gone([child], 2.0) == [], f"the {mode} child outlived its parent"


def test_a_child_whose_parent_died_while_it_started_ends_on_starting(tmp_path):
    parent, child, ready = start(tmp_path, "gil")
    parent.send_signal(signal.SIGKILL)  # before the child could ask for anything
    parent.wait()
    assert wait_gone([child], 30) == [], "the orphaned child went on"
    assert not ready.exists(), "the orphaned child started its work"


def test_a_measured_child_reports_its_peak_memory_cpu_and_output_however_it_ends():
    from iglearn.processes import run_measured

    code = textwrap.dedent("""
        import os, sys, time
        block = bytearray(200 * 2**20)  # 200 MiB, touched
        for i in range(0, len(block), 4096):
            block[i] = 1
        start = time.process_time()
        while time.process_time() - start < 0.3:
            pass
        print("out"); print("err", file=sys.stderr)
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(3)  # no teardown, no exit handler
    """)
    done = run_measured([sys.executable, "-c", code])
    assert done.returncode == 3
    assert (done.stdout, done.stderr) == ("out\n", "err\n")
    assert done.peak_rss_kib > 200 * 1024
    assert done.cpu_seconds >= 0.3
    assert done.wall_seconds >= done.cpu_seconds * 0.5


@pytest.mark.parametrize("address, endpoint", [
    ("auto", None), ("local", None), ("ray://head.example:10001", ("head.example", 10001)),
    ("ray://[::1]:10001", ("::1", 10001)),
])
def test_a_ray_address_names_the_host_and_port_it_connects_to(address, endpoint):
    assert ray_endpoint(address) == endpoint


@pytest.mark.parametrize("address", ["head", "head:", ":6379", "head:port", "head:0",
                                     "head:70000", "ray://head"])
def test_a_value_that_is_not_a_ray_address_is_refused_naming_the_option(address):
    with pytest.raises(IGLearnError, match=rf"^--ray-address {re.escape(address)}: not a Ray "
                                           rf"address; give the head node's host:port"):
        ray_endpoint(address)


def test_an_address_nothing_listens_at_is_refused_at_once_and_one_that_answers_passes():
    with socket.socket() as listener:  # a port of this machine, open, then closed
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        check_reachable(f"ray://127.0.0.1:{port}")
    start = time.monotonic()
    with pytest.raises(IGLearnError, match=rf"^--ray-address ray://127.0.0.1:{port}: cannot "
                                           rf"reach a Ray cluster there \(.+ at 127.0.0.1:"
                                           rf"{port}\); check the address"):
        check_reachable(f"ray://127.0.0.1:{port}")
    assert time.monotonic() - start < RAY_CONNECT_SECONDS


def test_ray_address_auto_with_no_cluster_on_this_machine_says_so(tmp_path):
    pytest.importorskip("ray")
    # Ray's auto also finds any Ray running on this machine by its processes: another test's
    # local Ray (tests run in parallel) is a cluster here, and the premise does not hold
    code = textwrap.dedent("""
        from ray._private.services import find_gcs_addresses
        from iglearn.errors import IGLearnError
        from iglearn.processes import connect_ray
        if find_gcs_addresses():
            print("RUNNING")
        else:
            try:
                connect_ray("auto")
                print("RUNNING")  # one started meanwhile
            except IGLearnError as e:
                print(e)
    """)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_TMPDIR"] = str(tmp_path)  # where Ray looks for this machine's cluster: none
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    if done.stdout.strip() == "RUNNING":
        pytest.skip("a Ray instance runs on this machine (another test's)")
    assert done.stdout.strip() == ("--ray-address auto: no Ray cluster runs on this machine; "
                                   "start one (ray start --head) or leave --ray-address out "
                                   "for a local Ray"), done.stderr
