"""SIGTERM and SIGINT stop a command with every worker process it started, and
a killed command's workers end too; the run then goes on from what it kept.

Each test starts ``segstruct compare`` (-j 2) as its own session, waits for
its cross-validation of C (the folds run on worker processes), signals the
command's main process only, and looks in /proc for any process of that
session left behind.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from segstruct.io.stopping import POLL_SECONDS

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(),
                                reason="reads the process table in /proc (Linux)")

# enough training images for the folds to take a while
DATA_SIZE = (12, 3)
SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "--no-figures"]
# seconds a stopped run may take to end, and its workers after it
ENDING = 30.0
LINGER = 10 * POLL_SECONDS


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One feature cache for the module's runs (features are computed once)."""
    return tmp_path_factory.mktemp("sig-cache")


def command(data_root, out):
    return [sys.executable, "-m", "segstruct", "compare", "--data", str(data_root),
            "--classes", "car", "--methods", "proposed", "--max-iter", "200",
            "--out", str(out), "-j", "2", "--progress", *SMALL]


def environment(cache):
    return {**os.environ, "SEGSTRUCT_CACHE": str(cache), "PYTHONUNBUFFERED": "1"}


def session_processes(sid: int) -> dict[int, str]:
    """pid -> command line of every live process of session ``sid``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:                       # ended meanwhile
            continue
        # the fields after the command name (which may hold spaces) in parentheses
        fields = stat.rsplit(")", 1)[1].split()
        state, session = fields[0], int(fields[3])
        if session == sid and state != "Z":
            found[int(entry.name)] = cmdline
    return found


def left_after(sid: int, seconds: float) -> dict[int, str]:
    """The processes of session ``sid`` still there ``seconds`` from now (or
    none, as soon as there are none)."""
    deadline = time.monotonic() + seconds
    while True:
        left = session_processes(sid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


class Run:
    """``segstruct compare`` in a session of its own, its output read as it comes."""

    def __init__(self, args, env):
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env, start_new_session=True)
        self.lines: list[str] = []
        self.folds_started = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            if "cross-validating C:" in line:
                self.folds_started.set()
        self.folds_started.set()             # the end of the output: stop waiting

    def in_cross_validation(self):
        """Wait until the folds run on the workers; the workers' pids."""
        assert self.folds_started.wait(300), "".join(self.lines)
        assert self.proc.poll() is None, "the run ended before its cross-validation:\n" + \
            "".join(self.lines)
        # the progress line comes first, then the pool starts its 2 workers
        deadline = time.monotonic() + 60
        while True:
            workers = {pid for pid, cmd in session_processes(self.proc.pid).items()
                       if "loky" in cmd and "resource_tracker" not in cmd}
            if len(workers) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert len(workers) == 2, session_processes(self.proc.pid)
        return workers

    def ended(self):
        """The exit status and the whole output."""
        try:
            status = self.proc.wait(ENDING)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.reader.join(10)
        return status, "".join(self.lines)


def stop(data_root, cache, out, signum):
    """Start a run, signal its main process in the cross-validation; (exit
    status, output, the processes of its session left after it)."""
    run = Run(command(data_root, out), environment(cache))
    try:
        run.in_cross_validation()
        time.sleep(0.5)                       # the folds are computing
        os.kill(run.proc.pid, signum)
        status, output = run.ended()
        return status, output, left_after(run.proc.pid, LINGER)
    finally:
        if session_processes(run.proc.pid):   # a failed test leaves nothing running
            os.killpg(run.proc.pid, signal.SIGKILL)


@pytest.mark.slow
def test_sigterm_stops_the_workers_and_the_run_resumes(data_root, cache, tmp_path):
    out = tmp_path / "out"
    status, output, left = stop(data_root, cache, out, signal.SIGTERM)
    assert status == 128 + signal.SIGTERM == 143, output
    assert not left, f"left running after SIGTERM: {left}"
    last = output.strip().splitlines()[-1]
    assert last.startswith("segstruct compare: stopped by SIGTERM; finished pairs and "
                           "checkpoints are kept"), output
    assert "run the same command again" in last
    assert "stopped)" in output                # the folds' progress does not say done
    assert not list(out.rglob("*.tmp")), "a file was left half-written"
    # the same command again finishes the run
    done = subprocess.run(command(data_root, out), env=environment(cache),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads((out / "runs" / "car-proposed.json").read_text())
    assert record["eval_score"]["voc_iou_percent"] > 0
    assert "| car |" in (out / "table.md").read_text()


def test_sigint_stops_the_workers(data_root, cache, tmp_path):
    status, output, left = stop(data_root, cache, tmp_path / "out", signal.SIGINT)
    assert status == 128 + signal.SIGINT == 130, output
    assert not left, f"left running after SIGINT: {left}"
    assert "segstruct compare: stopped by SIGINT;" in output.strip().splitlines()[-1]


def test_workers_of_a_killed_run_end(data_root, cache, tmp_path):
    """SIGKILL cannot be caught: the workers notice their parent is gone."""
    status, output, left = stop(data_root, cache, tmp_path / "out", signal.SIGKILL)
    assert status == -signal.SIGKILL, output
    assert not left, f"left running after SIGKILL of the main process: {left}"
