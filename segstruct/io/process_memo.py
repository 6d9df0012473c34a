"""Arrays that one process keeps from one task to the next (a memo).

Some work repeats across the tasks of one job: the cross-fitted detectors of
a class, and those of the other classes, scan the same training images, and
an image's HOG maps depend on the image alone. A task that opts in (inside
:func:`sharing`) may keep such arrays here, and later tasks on the same
process (a worker of :func:`segstruct.cluster.parallel_map`, or this process
with one job) find them. The memo holds at most :data:`MAX_BYTES`; once full
it keeps what it has and takes no more, because the tasks scan their images
in turn, and a memo that dropped the oldest would drop each one just before
it is needed again.

Every task that :func:`segstruct.cluster.parallel_map` runs without
``keep_memo`` empties it first (:func:`release`), so the workers of other
work (cross-validation folds, whose memory is counted) do not carry it.
"""
from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

import numpy as np

__all__ = ["MAX_BYTES", "ProcessMemo", "MEMO", "sharing", "release"]

#: Bytes the memo holds at most. loky replaces a worker whose memory grew past
#: its leak threshold (``_MAX_MEMORY_LEAK_SIZE``, 3e8 bytes) after its first
#: task, so the memo stays well below that; the default ``segstruct compare``
#: fills it only in part.
MAX_BYTES = 192 << 20


class ProcessMemo:
    """Read-only arrays by key, at most ``max_bytes`` in all, filled only
    while :attr:`active`.

    A Dask worker runs several tasks at once in threads: the counts change
    under a lock. The arrays are never changed, so a task that reads one
    while another empties the memo still holds a correct array.

    Parameters
    ----------
    max_bytes : int
    """

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = int(max_bytes)
        self.nbytes = 0
        self.active = 0           # depth of ``sharing`` blocks
        self._items: dict[Hashable, np.ndarray] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> np.ndarray | None:
        """The array kept under ``key``, or None (also while not active)."""
        return self._items.get(key) if self.active else None

    def put(self, key: Hashable, value: np.ndarray) -> bool:
        """Keep ``value`` (made read-only) under ``key``; False when not
        active or when it does not fit."""
        with self._lock:
            if not self.active or key in self._items:
                return False
            if self.nbytes + value.nbytes > self.max_bytes:
                return False
            value.setflags(write=False)
            self._items[key] = value
            self.nbytes += value.nbytes
            return True

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.nbytes = 0

    def enter(self) -> None:
        with self._lock:
            self.active += 1

    def leave(self) -> None:
        with self._lock:
            self.active -= 1


#: This process's memo.
MEMO = ProcessMemo()


@contextmanager
def sharing() -> Iterator[ProcessMemo]:
    """Let the code inside read and fill this process's memo."""
    MEMO.enter()
    try:
        yield MEMO
    finally:
        MEMO.leave()


def release() -> None:
    """Empty this process's memo (its arrays are freed once no one holds them)."""
    MEMO.clear()
