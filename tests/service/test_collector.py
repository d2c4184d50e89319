"""A serving process collects garbage in Python's small steps, its start-up objects frozen."""

import subprocess
import sys
import textwrap


def test_settling_freezes_the_start_up_objects_and_restores_small_steps():
    code = textwrap.dedent("""
        import gc
        gc.set_threshold(200_000, 10, 10)  # as the command line leaves it
        import torch
        from iglearn.service.app import SERVICE_GC_THRESHOLDS, settle_collector
        settle_collector()
        print(gc.get_threshold() == SERVICE_GC_THRESHOLDS, gc.get_freeze_count() > 100_000)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
