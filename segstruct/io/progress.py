"""Progress on long work: a bar on a terminal, a line now and then in a log.

A tqdm bar redrawn into a file writes every update (117 KB for one
comparison), and no bar at all leaves a log silent for minutes (5.5 of a
default ``train`` with stderr redirected). So :func:`progress_bar` gives a
tqdm bar when stderr is a terminal and otherwise a :class:`LogLines`: one
plain line when the work starts, one every ``LOG_INTERVAL`` seconds, and one
when it ends.
"""
from __future__ import annotations

import sys
import time
from typing import Any

from tqdm.auto import tqdm

__all__ = ["LOG_INTERVAL", "LogLines", "progress_bar"]

#: Seconds between two lines of :class:`LogLines`.
LOG_INTERVAL = 30.0


def progress_bar(total: int | None, desc: str, enabled: bool = True, unit: str = "it",
                 initial: int = 0, stream=None, interval: float = LOG_INTERVAL) -> Any:
    """A progress reporter with tqdm's ``update`` / ``set_postfix`` / ``close``.

    Parameters
    ----------
    total : int or None, the units of work.
    desc : str, what the work is.
    enabled : bool, False for one that shows nothing.
    unit : str, the unit's name.
    initial : int, units already done (a resumed run).
    stream : file, default ``sys.stderr``.
    interval : float, seconds between the lines of :class:`LogLines`.

    Returns
    -------
    tqdm bar (``stream`` is a terminal, or ``enabled`` False: a disabled bar)
    or :class:`LogLines`.
    """
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if not enabled or (isatty is not None and isatty()):
        return tqdm(total=total, desc=desc, unit=unit, initial=initial, leave=False,
                    disable=not enabled, file=stream)
    return LogLines(total, desc, unit, initial, stream, interval)


class LogLines:
    """Progress as plain lines, for a log file: ``desc: n/total unit (p %),
    s elapsed[, postfix]`` at the start, every ``interval`` seconds of
    updates, and at the end.

    Parameters
    ----------
    total : int or None; desc, unit : str; initial : int; stream : file;
    interval : float >= 0, seconds.
    """

    def __init__(self, total: int | None, desc: str, unit: str = "it", initial: int = 0,
                 stream=None, interval: float = LOG_INTERVAL):
        self.total, self.desc, self.unit, self.n = total, desc, unit, initial
        self.stream = sys.stderr if stream is None else stream
        self.interval = interval
        self.postfix: dict = {}
        self._start = self._last = time.perf_counter()
        self._closed = False
        self._say("started")

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.perf_counter()
        if now - self._last >= self.interval:
            self._last = now
            self._say()

    def set_postfix(self, **values) -> None:
        self.postfix = values

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._say("done")

    def __enter__(self) -> "LogLines":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _say(self, state: str = "") -> None:
        done = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        share = f" ({100.0 * self.n / self.total:.0f} %)" if self.total else ""
        extra = "".join(f", {k} {v}" for k, v in self.postfix.items())
        when = f"{time.perf_counter() - self._start:.0f} s"
        text = f"{self.desc}: {done} {self.unit}{share}, {when}{extra}"
        print(f"{text} ({state})" if state else text, file=self.stream, flush=True)
