"""Stopping on SIGTERM or SIGINT: the worker processes end with this process.

A job scheduler, ``timeout`` or ``kill`` ends a command with SIGTERM, whose
default action ends this process at once and leaves its worker processes
computing (with parent 1). The command line therefore runs inside
:func:`stop_on_signals`, which turns SIGTERM, like SIGINT (Ctrl-C), into an
exception, :class:`Stopped`: the work unwinds (each file being written
finishes or is removed, see :func:`deferred_stop`), then the command calls
:func:`stop_workers`, which ends every worker process this process started,
and exits with the conventional status (128 + the signal's number: 130 for
SIGINT, 143 for SIGTERM).

SIGKILL cannot be caught. A worker therefore watches its parent
(:func:`watch_parent`, started by the first task it runs): once the parent
is gone, the worker exits too, within :data:`POLL_SECONDS`.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

__all__ = ["Stopped", "stop_on_signals", "stopping", "deferred_stop", "stop_workers",
           "watch_parent", "POLL_SECONDS", "SIGNALS"]

#: The signals :func:`stop_on_signals` turns into :class:`Stopped`.
SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: Seconds between a worker's looks at its parent (:func:`watch_parent`).
POLL_SECONDS = 1.0

#: Seconds :func:`stop_workers` gives a worker to exit after SIGTERM before
#: SIGKILL.
GRACE_SECONDS = 2.0

# the first signal being handled (None: none), and the one that arrived
# inside deferred_stop() (raised when it ends)
_stopping: int | None = None
_pending: int | None = None
_deferring = 0
# the parent watch_parent() watches in this process (None: none)
_watched: int | None = None


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGINT arrived while :func:`stop_on_signals` was active.

    A ``KeyboardInterrupt``, so that whatever cleans up after Ctrl-C (joblib
    stops its workers, ``finally`` blocks run) does the same for SIGTERM.

    Parameters
    ----------
    signum : int, the signal's number.
    """

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def name(self) -> str:
        """The signal's name ("SIGTERM")."""
        return signal.Signals(self.signum).name

    @property
    def exit_status(self) -> int:
        """The shell's status for a process ended by the signal (128 + its number)."""
        return 128 + self.signum


def _handle(signum, frame) -> None:
    """Raise :class:`Stopped` in the main thread, once; later while inside
    :func:`deferred_stop`."""
    global _stopping, _pending
    if _stopping is not None:
        return           # a second signal: the first one's cleanup goes on
    if _deferring:
        _pending = signum
        return
    _stopping = signum
    raise Stopped(signum)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`Stopped` inside the context.

    The first signal raises; more signals are ignored until the context
    ends (so that the cleanup the first one started is not cut short), and
    the handlers in place before are restored at the end. Outside the main
    thread (where Python runs signal handlers) the context does nothing.
    """
    global _stopping, _pending
    if not _in_main_thread():
        yield
        return
    before = {s: signal.signal(s, _handle) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        _stopping = _pending = None


def stopping() -> bool:
    """Whether a signal is stopping the work (:class:`Stopped` was raised
    and :func:`stop_on_signals` has not ended yet)."""
    return _stopping is not None


@contextmanager
def deferred_stop() -> Iterator[None]:
    """Let the code inside finish before a SIGTERM or SIGINT stops the work.

    Wraps writes that must happen whole (a file and its rename, or files
    that belong together): a signal that arrives inside raises
    :class:`Stopped` when the outermost such context ends. Only the main
    thread defers (signals are handled there); elsewhere it does nothing.
    """
    global _deferring, _pending, _stopping
    if not _in_main_thread():
        yield
        return
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    if not _deferring and _pending is not None and _stopping is None:
        _stopping, _pending = _pending, None
        raise Stopped(_stopping)


def _stop_loky_pool() -> None:
    """Shut joblib's loky pool down, its workers killed (with their own children)."""
    if "joblib.externals.loky" not in sys.modules:
        return
    from joblib.externals.loky import get_reusable_executor
    # reuse=True: the pool that exists, whatever its settings
    get_reusable_executor(reuse=True).shutdown(wait=True, kill_workers=True)


def stop_workers(grace: float = GRACE_SECONDS) -> None:
    """End every worker process this process started, now.

    joblib's loky pool, where it has workers, is shut down with its workers
    killed (with their own children); then every other child process that
    ``multiprocessing`` knows of gets SIGTERM and, ``grace`` seconds later,
    SIGKILL.
    """
    if multiprocessing.active_children():
        # only where workers run: asking loky for its pool makes one
        _stop_loky_pool()
    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    deadline = time.monotonic() + grace
    for child in children:
        child.join(max(0.0, deadline - time.monotonic()))
        if child.is_alive():
            child.kill()
            child.join(1.0)


def _exit_when_orphaned(parent: int) -> None:
    """The watch of :func:`watch_parent`: exit once ``parent`` is not the parent."""
    while os.getppid() == parent:
        time.sleep(POLL_SECONDS)
    # no cleanup: the parent that would collect the results is gone
    os._exit(128 + signal.SIGTERM)


def watch_parent(parent: int) -> None:
    """Exit this process once process ``parent`` has ended (even by SIGKILL).

    Called by a task on a worker with the pid of the process that submitted
    it; starts, once per process, a daemon thread that checks every
    :data:`POLL_SECONDS` that ``parent`` is still this process's parent
    (an orphan is adopted by another). Does nothing where ``parent`` is not
    the parent: in ``parent`` itself (a task run in place) or on a Dask
    worker (whose parent is its nanny).

    Parameters
    ----------
    parent : int, the pid of the process whose workers this one serves.
    """
    global _watched
    if _watched == parent or os.getppid() != parent:
        return
    _watched = parent
    threading.Thread(target=_exit_when_orphaned, args=(parent,), name="segstruct-watch-parent",
                     daemon=True).start()
