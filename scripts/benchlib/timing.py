"""One timed call, and the JSON-able part of its result's info."""
from __future__ import annotations

import gc
import time

import numpy as np


def timed(fn):
    """(seconds, result) of ``fn()``, with the garbage collector off meanwhile
    (a collection inside a millisecond call would dominate its time)."""
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    finally:
        if gc_was_on:
            gc.enable()


def scalars(info) -> dict:
    """The JSON-able scalar entries of an InferenceResult's info (graph cuts, ...)."""
    if not isinstance(info, dict):
        return {}
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in info.items()
            if isinstance(v, (str, bool, int, float, np.integer, np.floating))}
