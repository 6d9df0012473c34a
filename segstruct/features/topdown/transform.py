"""Bounded distance transforms: the best displaced part response under a quadratic cost.

A part of a root at cell ``p`` scores ``max_d P(2p + v + d) - c . (dx, dx^2, dy, dy^2)``
over displacements ``|dx|, |dy| <= radius`` (``detector.py``). The cost is
separable, so the max is taken one axis at a time: first along x, then along y
over the x results.

- ``bounded_distance_transform`` takes it at every cell of the part map: the
  reference, simple to check against brute force.
- ``placed_distance_transform`` takes it only at the cells roots read (every
  other row and column from each part's anchor, clamped to the map). The same
  floats, the same tie rule and the same displacements, for about three
  eighths of the arithmetic: the x pass skips every other column, the y pass
  three cells in four. On whole detectors this pays on large images only: on
  small ones the correlations dominate the time.
"""
from __future__ import annotations

import numpy as np

__all__ = ["bounded_distance_transform", "placed_cells", "placed_distance_transform"]


def _displacements(radius: int) -> list:
    """Displacements in the order they are tried: 0, -1, +1, -2, +2, ... (ties
    go to the first tried, so the answer is deterministic)."""
    return [0] + [s * k for k in range(1, radius + 1) for s in (-1, 1)]


def _maximise(window, lin: np.ndarray, quad: np.ndarray, radius: int):
    """Best of ``window(d) - (lin d + quad d^2)`` over the displacements, and its d.

    ``window(d)`` gives the (P, ...) float32 candidates at displacement d
    (-inf where they fall off the map); ``lin``, ``quad`` are (P,) cost
    weights. Displacement 0 costs nothing, so it starts the best; a later
    candidate replaces it only when strictly greater (the tie rule). In
    place on preallocated arrays; the displacements fit in int8.
    """
    best = np.array(window(0), np.float32)
    arg = np.zeros(best.shape, np.int8)
    cand = np.empty(best.shape, np.float32)
    better = np.empty(best.shape, bool)
    spread = (slice(None),) + (None,) * (best.ndim - 1)
    for d in _displacements(radius)[1:]:
        cost = (lin * d + quad * d * d).astype(np.float32)[spread]
        np.subtract(window(d), cost, out=cand)
        np.greater(cand, best, out=better)
        np.maximum(best, cand, out=best)
        arg[better] = d
    return best, arg


def bounded_distance_transform(response: np.ndarray, deformation: np.ndarray,
                               radius: int):
    """Best displaced response under a quadratic cost, in a square window.

    ``out[k, y, x] = max_{|dy|, |dx| <= radius} response[k, y + dy, x + dx]
    - (c_k0 dx + c_k1 dx^2 + c_k2 dy + c_k3 dy^2)``; positions outside
    ``response`` count as -inf. All parts are done at once (one numpy call
    per displacement, not per part and displacement).

    Parameters
    ----------
    response : (P, H, W) float array (one map per part).
    deformation : (P, 4) cost weights ``c``.
    radius : int >= 0.

    Returns
    -------
    best : (P, H, W) float32
    dy, dx : (P, H, W) int64, the maximising displacement. Ties go to the
        smaller displacement (the candidates are tried 0, -1, +1, -2, ...),
        so the answer is deterministic.
    """
    response = np.asarray(response, np.float32)
    c = np.asarray(deformation, np.float64).reshape(-1, 4)

    def one_axis(values, lin, quad, axis):
        # values (P, H, W); displacement along ``axis`` (1 or 2), read from a
        # copy padded with -inf: np.pad, np.where or moved axes cost more per
        # transform than the arithmetic itself on part maps of this size.
        n = values.shape[axis]
        shape = list(values.shape)
        shape[axis] += 2 * radius
        padded = np.full(shape, -np.inf, np.float32)
        inner = [slice(None)] * 3
        inner[axis] = slice(radius, radius + n)
        padded[tuple(inner)] = values

        def window(d):
            inner[axis] = slice(radius + d, radius + d + n)
            return padded[tuple(inner)]
        return _maximise(window, lin, quad, radius)

    along_x, arg_x = one_axis(response, c[:, 0], c[:, 1], axis=2)
    best, arg_y = one_axis(along_x, c[:, 2], c[:, 3], axis=1)
    rows = np.clip(np.arange(response.shape[1])[None, :, None] + arg_y, 0, response.shape[1] - 1)
    dx = np.take_along_axis(arg_x, rows, axis=1)
    return best, arg_y.astype(np.int64), dx.astype(np.int64)


def _strided_pass(values: np.ndarray, lin: np.ndarray, quad: np.ndarray, radius: int,
                  starts: list, n: int):
    """The transform along the last axis, only at columns ``min(2 j + a_k, W - 1)``.

    Parameters
    ----------
    values : (P, H, W) float32.
    lin, quad : (P,) cost weights of d and d^2.
    radius : int >= 0.
    starts : P ints ``a_k >= 0``, map k's first column.
    n : int, columns wanted per map (j = 0 .. n - 1).

    Returns
    -------
    best : (P, H, n) float32, arg : (P, H, n) int8, as ``bounded_distance_transform``
        gives them at those columns.
    """
    p, h, w = values.shape
    if n == 0:
        return np.empty((p, h, 0), np.float32), np.empty((p, h, 0), np.int8)
    # Map k's column c goes to index R + c - a_k of a scratch row, so that
    # wanted column j sits at index R + 2 j for every map and displacement d
    # is one strided slice. The first m_k wanted columns lie inside the map;
    # the rest are all the last column, W - 1. When some are, that column
    # gets a slot of its own, ``last``, placed far enough right (past every
    # map's inner columns and their windows) that no window overlaps another.
    inside = [min(n, max(0, (w - a + 1) // 2)) for a in starts]
    clamped = min(inside) < n
    last = n + radius if clamped else n - 1
    width = last + 1
    scratch = np.full((p, h, 2 * (last + radius) + 1), -np.inf, np.float32)
    for k, (a, m) in enumerate(zip(starts, inside)):
        if m:
            lo, hi = max(0, a - radius), min(w, 2 * (m - 1) + a + radius + 1)
            scratch[k, :, radius + lo - a:radius + hi - a] = values[k, :, lo:hi]
        if m < n:
            lo = max(0, w - 1 - radius)
            base = radius + 2 * last - (w - 1)
            scratch[k, :, base + lo:base + w] = values[k, :, lo:w]

    def window(d):
        return scratch[:, :, radius + d:radius + d + 2 * width - 1:2]
    best, arg = _maximise(window, lin, quad, radius)
    if not clamped:
        return best, arg
    wanted = np.arange(n)[None, :]
    pick = np.where(wanted < np.asarray(inside)[:, None], wanted, last)[:, None, :]
    return np.take_along_axis(best, pick, axis=2), np.take_along_axis(arg, pick, axis=2)


def placed_cells(anchors: np.ndarray, shape: tuple, map_shape: tuple):
    """The part-map cells that roots read, clamped to the map, and which are on it.

    A root at cell (r, q) places part k at ``(2 r + a_k0, 2 q + a_k1)`` (the
    part map has twice the root map's resolution); where that falls past the
    map's last row or column, the root reads the last one instead (and the
    detector scores the part -inf there).

    Parameters
    ----------
    anchors : (P, 2) int, each part's (row, col) anchor ``a_k``, >= 0.
    shape : (Ho, Wo), the root cells.
    map_shape : (H, W), the part map's cells.

    Returns
    -------
    rows, cols : (P, Ho, Wo) int64, the clamped cells.
    inside : (P, Ho, Wo) bool, where the unclamped cell is on the map.
    """
    anchors = np.asarray(anchors, np.int64).reshape(-1, 2)
    ho, wo = shape
    h, w = map_shape
    rows = 2 * np.arange(ho)[None, :, None] + anchors[:, 0, None, None]
    cols = 2 * np.arange(wo)[None, None, :] + anchors[:, 1, None, None]
    rows, cols = np.broadcast_arrays(rows, cols)
    inside = (rows < h) & (cols < w)
    return np.minimum(rows, h - 1), np.minimum(cols, w - 1), inside


def placed_distance_transform(response: np.ndarray, deformation: np.ndarray, radius: int,
                              anchors: np.ndarray, shape: tuple):
    """``bounded_distance_transform`` read only where roots place the parts.

    A root at cell (r, q) reads part k at cell ``(min(2 r + a_k0, H - 1),
    min(2 q + a_k1, W - 1))`` (``placed_cells``); this gives the transform at
    exactly those cells, bit for bit, without the cells no root reads.

    Parameters
    ----------
    response : (P, H, W) float array (one map per part).
    deformation : (P, 4) cost weights ``c``.
    radius : int >= 0.
    anchors : (P, 2) int, each part's (row, col) anchor ``a_k``, >= 0.
    shape : (Ho, Wo), the root cells.

    Returns
    -------
    best : (P, Ho, Wo) float32
    dy, dx : (P, Ho, Wo) int64, the maximising displacement (ties as
        ``bounded_distance_transform``).
    """
    response = np.asarray(response, np.float32)
    c = np.asarray(deformation, np.float64).reshape(-1, 4)
    anchors = np.asarray(anchors, np.int64).reshape(-1, 2)
    ho, wo = shape
    h = response.shape[1]
    along_x, arg_x = _strided_pass(response, c[:, 0], c[:, 1], radius,
                                   [int(a) for a in anchors[:, 1]], wo)
    best, arg_y = _strided_pass(along_x.transpose(0, 2, 1), c[:, 2], c[:, 3], radius,
                                [int(a) for a in anchors[:, 0]], ho)
    best, arg_y = best.transpose(0, 2, 1), arg_y.transpose(0, 2, 1)
    placed_rows = placed_cells(anchors, shape, response.shape[1:])[0]
    rows = np.clip(placed_rows + arg_y, 0, h - 1)
    dx = np.take_along_axis(arg_x, rows, axis=1)
    return np.ascontiguousarray(best), arg_y.astype(np.int64), dx.astype(np.int64)
