"""segstruct.io.stopping: signals become Stopped, writes finish first, workers end.

The whole command's behaviour (a real run signalled, its workers looked for
in /proc) is tested in tests/test_signals.py.
"""
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from segstruct.io import stopping
from segstruct.io.files import atomic_write_bytes
from segstruct.io.stopping import (POLL_SECONDS, Stopped, deferred_stop, stop_on_signals,
                                   stop_workers, watch_parent)


def signal_self(signum, wait: float = 2.0) -> None:
    """Send ``signum`` to this process and give Python time to run its handler."""
    os.kill(os.getpid(), signum)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_raises_stopped_with_the_shells_status(signum, status):
    before = signal.getsignal(signum)
    with stop_on_signals():
        with pytest.raises(Stopped) as caught:
            signal_self(signum)
        assert stopping.stopping()
    assert isinstance(caught.value, KeyboardInterrupt)    # cleaned up like Ctrl-C
    assert caught.value.signum == signum
    assert caught.value.exit_status == status
    assert caught.value.name == signal.Signals(signum).name
    assert signal.getsignal(signum) == before             # restored
    assert not stopping.stopping()


def test_a_second_signal_does_not_cut_the_cleanup_short():
    with stop_on_signals():
        with pytest.raises(Stopped):
            signal_self(signal.SIGTERM)
        try:                                              # ignored: no exception
            signal_self(signal.SIGTERM, wait=0.2)
            signal_self(signal.SIGINT, wait=0.2)
        except Stopped:       # a KeyboardInterrupt escaping would end the whole session
            pytest.fail("a second signal raised while the first one's cleanup ran")


def test_a_signal_inside_deferred_stop_stops_at_its_end():
    reached = []
    with stop_on_signals():
        with pytest.raises(Stopped) as caught:
            with deferred_stop():
                with deferred_stop():                     # nested: the outer end raises
                    signal_self(signal.SIGTERM, wait=0.2)
                reached.append("inner end")
            reached.append("after")
    assert reached == ["inner end"]
    assert caught.value.signum == signal.SIGTERM


def test_a_signal_during_an_atomic_write_lets_the_file_finish(tmp_path):
    path = tmp_path / "model.json"

    def write(f):
        f.write(b"first half, ")
        signal_self(signal.SIGTERM, wait=0.2)
        f.write(b"second half")
    with stop_on_signals():
        with pytest.raises(Stopped):
            atomic_write_bytes(path, write)
    assert path.read_bytes() == b"first half, second half"
    assert [p.name for p in tmp_path.iterdir()] == ["model.json"]   # no temporary file


def test_outside_stop_on_signals_writes_are_not_deferred(tmp_path):
    """Without the handlers a write stops as Ctrl-C stops it, and leaves no
    temporary file."""
    def write(f):
        f.write(b"half")
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(tmp_path / "x.json", write)
    assert list(tmp_path.iterdir()) == []


def _sleep():
    time.sleep(60)


def test_stop_workers_ends_the_loky_pool_and_other_children():
    from joblib import Parallel, delayed
    pids = set(Parallel(n_jobs=2)(delayed(os.getpid)() for _ in range(8)))
    child = multiprocessing.get_context("spawn").Process(target=_sleep, daemon=True)
    child.start()
    assert len(multiprocessing.active_children()) >= 2   # the pool's workers and child
    stop_workers(grace=5.0)
    assert not child.is_alive()
    assert multiprocessing.active_children() == []
    for pid in pids - {os.getpid()}:
        assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads /proc (Linux)")
def test_a_worker_exits_when_its_parent_is_killed():
    # the parent starts a worker that watches it, says the worker's pid, and waits
    worker = ("import os, time; from segstruct.io.stopping import watch_parent; "
              "watch_parent(os.getppid()); print(os.getpid(), flush=True); time.sleep(60)")
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys; "
         f"subprocess.Popen([sys.executable, '-c', {worker!r}]).wait()"],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        pid = int(parent.stdout.readline())
        assert _alive(pid)
        parent.kill()                                    # SIGKILL: nothing can catch it
        parent.wait()
        deadline = time.monotonic() + 10 * POLL_SECONDS
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid)
    finally:
        if _session_alive(parent.pid):                   # a failed test leaves nothing
            os.killpg(parent.pid, signal.SIGKILL)


def _session_alive(sid: int) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _alive(int(entry.name)):
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[3]) == sid:
                    return True
            except OSError:
                pass
    return False


def test_watch_parent_watches_only_a_parent():
    """In the process that mapped (a task run in place) or on a process whose
    parent is another (a Dask worker's), nothing is watched."""
    def watchers():
        return [t for t in threading.enumerate() if t.name == "segstruct-watch-parent"]
    before = len(watchers())
    watch_parent(os.getpid())
    watch_parent(next(pid for pid in (1, 2, 3) if pid != os.getppid()))
    assert len(watchers()) == before
