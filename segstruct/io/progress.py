"""Progress on long work: a bar on a terminal, a line now and then in a log.

A tqdm bar redrawn into a file writes every update (a log bloated by
carriage returns), and no bar at all leaves a log silent through a long
stage of ``train`` with stderr redirected. So :func:`progress_bar` gives a
tqdm bar when stderr is a terminal and otherwise a :class:`LogLines`: one
plain line when the work starts, one every ``LOG_INTERVAL`` seconds, and one
when it ends, each with the date and time, and with an estimate of the time
left where the total is the work's own size.
"""
from __future__ import annotations

import sys
import time
from typing import Any

from tqdm.auto import tqdm

from segstruct.io.stopping import stopping

__all__ = ["LOG_INTERVAL", "LogLines", "note", "progress_bar"]

#: Seconds between two lines of :class:`LogLines`.
LOG_INTERVAL = 30.0


def progress_bar(total: int | None, desc: str, enabled: bool = True, unit: str = "it",
                 initial: int = 0, stream=None, interval: float = LOG_INTERVAL,
                 eta: bool = True) -> Any:
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
    eta : bool, default True
        :class:`LogLines` estimates the time left from the rate so far;
        False where ``total`` only bounds the work (a training's
        ``max_iter``), which would make the estimate meaningless.

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
    return LogLines(total, desc, unit, initial, stream, interval, eta)


class LogLines:
    """Progress as plain lines, for a log file: ``YYYY-MM-DD HH:MM:SS desc:
    n/total unit (p %), s elapsed[, ETA t][, postfix]`` at the start, every
    ``interval`` seconds of updates, and at the end.

    Parameters
    ----------
    total : int or None; desc, unit : str; initial : int; stream : file;
    interval : float >= 0, seconds; eta : bool, estimate the time left (from
    the units done since the start and ``total``).
    """

    def __init__(self, total: int | None, desc: str, unit: str = "it", initial: int = 0,
                 stream=None, interval: float = LOG_INTERVAL, eta: bool = True):
        self.total, self.desc, self.unit, self.n = total, desc, unit, initial
        self.stream = sys.stderr if stream is None else stream
        self.interval = interval
        self.eta = eta
        self._initial = initial
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
            # closed on the way out of work a signal stopped: not done
            self._say("stopped" if stopping() else "done")

    def __enter__(self) -> "LogLines":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _say(self, state: str = "") -> None:
        done = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        share = f" ({100.0 * self.n / self.total:.0f} %)" if self.total else ""
        extra = "".join(f", {k} {v}" for k, v in self.postfix.items())
        elapsed = time.perf_counter() - self._start
        when = f"{elapsed:.0f} s"
        progressed = self.n - self._initial
        if self.eta and not state and self.total and 0 < progressed and self.n < self.total:
            when += f", ETA {_duration(elapsed / progressed * (self.total - self.n))}"
        text = f"{_stamp()} {self.desc}: {done} {self.unit}{share}, {when}{extra}"
        _line(f"{text} ({state})" if state else text, self.stream)


def note(text: str, stream=None) -> None:
    """One line of news about long work: above the bars on a terminal
    (tqdm's ``write``), dated like :class:`LogLines` in a log."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        tqdm.write(text, file=stream)
    else:
        _line(f"{_stamp()} {text}", stream)


def _line(text: str, stream) -> None:
    """One line in one write: worker processes share the stream, and
    ``print``'s separate write of the newline let two notes run together."""
    stream.write(text + "\n")
    stream.flush()


def _stamp() -> str:
    """The local date and time of a line."""
    return time.strftime("%Y-%m-%d %H:%M:%S")


def _duration(seconds: float) -> str:
    """``42 s``, ``7 min`` or ``2.5 h``: a time left, as precise as an estimate."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
