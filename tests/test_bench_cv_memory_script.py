"""scripts/bench_cv_memory.py: the sampler counts the memory of a command's
worker processes, not only its own."""
import os
import sys
from pathlib import Path

import pytest

# a child process that holds about 200 MiB for a second while its parent holds little
CHILD = ("import subprocess, sys; subprocess.run([sys.executable, '-c', "
         "'import time; b = bytearray(200 * 2**20); b[::4096] = b\"x\" * len(b[::4096]); "
         "time.sleep(1.5)'], check=True)")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_the_peak_counts_the_workers_memory(load_script):
    bench = load_script("bench_cv_memory")
    row = bench.tree_peak([sys.executable, "-c", CHILD], dict(os.environ), None)
    assert row["peak_workers_mib"] >= 190, row
    assert row["peak_tree_mib"] >= row["peak_workers_mib"] + 5, row


def test_a_failed_command_stops_with_its_error(load_script):
    bench = load_script("bench_cv_memory")
    with pytest.raises(SystemExit, match="went wrong"):
        bench.tree_peak([sys.executable, "-c", "raise SystemExit('went wrong')"],
                        dict(os.environ), None)
