"""Thread limits of the native libraries (BLAS, OpenMP) that a task can set
often and cheaply.

``threadpoolctl.threadpool_limits`` looks up every loaded native library
each time it is entered, and feature extraction and the learners enter it
once per image or per fit, so over a ``segstruct compare`` the look-ups add
up to a visible share of its CPU time. :func:`thread_limits` keeps one
``ThreadpoolController`` per process and looks the libraries up again only
when a module was imported since, which is when a new library can have
been loaded.
"""
from __future__ import annotations

import sys

from threadpoolctl import ThreadpoolController

__all__ = ["thread_limits"]

_controller: ThreadpoolController | None = None
_modules_seen = -1


def _current() -> ThreadpoolController:
    global _controller, _modules_seen
    if _controller is None or len(sys.modules) != _modules_seen:
        _controller = ThreadpoolController()
        _modules_seen = len(sys.modules)
    return _controller


def thread_limits(limits: int | None, user_api: str | None = None):
    """A context manager that caps the threads of the native libraries
    loaded in this process, as ``threadpoolctl.threadpool_limits(limits,
    user_api)`` does.

    Parameters
    ----------
    limits : int, threads at most (None: no change).
    user_api : "blas", "openmp" or None (both).
    """
    return _current().limit(limits=limits, user_api=user_api)
