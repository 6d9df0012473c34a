"""scripts/bench_cv_memory.py: the sampler counts the memory of a command's
worker processes, not only its own."""
import argparse
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


def test_the_command_is_train_or_compare(load_script):
    bench = load_script("bench_cv_memory")
    args = argparse.Namespace(
        data=Path("D"), class_name="car", method="bl2", compare=None, C=None, n_jobs=2,
        cache=None)
    train = bench.command_line(args, Path("o"))
    assert train[2:5] == ["segstruct", "train", "--class"] and "--C" not in train
    assert train[train.index("--method") + 1] == "bl2"
    assert train[train.index("--out") + 1] == str(Path("o") / "model")
    args.compare, args.C = ["bl1", "proposed"], "1"
    compare = bench.command_line(args, Path("o"))
    assert compare[3] == "compare" and compare[compare.index("--C") + 1] == "1"
    i = compare.index("--methods")
    assert compare[i + 1:i + 3] == ["bl1", "proposed"] and compare[i + 3] == "--out"
