"""Geometry of triangles in the (FP, FN) plane and of the integer lattice.

Shared by the mesh type (:mod:`.mesh`), its construction (:mod:`.split_tree`)
and the error measurement (:mod:`.error`), so that all three agree on what
"inside a triangle" means: the closed-triangle test :func:`in_triangle` on
the half-planes of :func:`halfplanes_of`, to a tolerance of :data:`REL_TOL`
times the domain size.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "REL_TOL",
    "halfplanes_of",
    "in_triangle",
    "signed_area",
    "min_height",
    "plane_slopes",
    "fit_plane",
    "lattice_shape",
    "lattice_in_triangle",
    "bbox_lattice_count",
]

#: Relative tolerance of the closed-triangle test (times the domain size).
REL_TOL = 1e-9


def halfplanes_of(p) -> np.ndarray:
    """(3, 3) rows (a, b, c) of the counter-clockwise triangle with corners ``p`` (3, 2)."""
    # Plain floats: this runs for every candidate triangle, where numpy's
    # per-call overhead on 3 x 2 arrays would dominate.
    (x0, y0), (x1, y1), (x2, y2) = ((float(q[0]), float(q[1])) for q in p)
    rows = []
    for ax, ay, bx, by in ((x0, y0, x1, y1), (x1, y1, x2, y2), (x2, y2, x0, y0)):
        a, b = by - ay, ax - bx                  # outward normal of a CCW triangle
        n = math.hypot(a, b)
        a, b = a / n, b / n
        rows.append((a, b, a * ax + b * ay))
    return np.array(rows)


def in_triangle(h: np.ndarray, x: np.ndarray, y: np.ndarray, tol: float) -> np.ndarray:
    """Closed-triangle test ``a x + b y <= c + tol`` for all three rows of ``h``."""
    return ((h[0, 0] * x + h[0, 1] * y <= h[0, 2] + tol)
            & (h[1, 0] * x + h[1, 1] * y <= h[1, 2] + tol)
            & (h[2, 0] * x + h[2, 1] * y <= h[2, 2] + tol))


def signed_area(p: np.ndarray) -> float:
    """Area of the triangle ``p`` (3, 2), positive when counter-clockwise."""
    return 0.5 * float((p[1, 0] - p[0, 0]) * (p[2, 1] - p[0, 1])
                       - (p[2, 0] - p[0, 0]) * (p[1, 1] - p[0, 1]))


def min_height(p0, p1, p2) -> float:
    """Smallest height of the triangle (twice its area over its longest edge)."""
    twice_area = abs((p1[0] - p0[0]) * (p2[1] - p0[1]) - (p2[0] - p0[0]) * (p1[1] - p0[1]))
    longest = max(math.hypot(p1[0] - p0[0], p1[1] - p0[1]),
                  math.hypot(p2[0] - p1[0], p2[1] - p1[1]),
                  math.hypot(p0[0] - p2[0], p0[1] - p2[1]))
    return twice_area / longest if longest > 0 else 0.0


def plane_slopes(d1, d2, g1, g2):
    """Slopes of the planes through the origin, ``(d1, g1)`` and ``(d2, g2)``.

    Parameters
    ----------
    d1, d2 : ndarray of float, shape (..., 2)
        Two corners of a triangle relative to its third (planes are solved
        about a corner, for accuracy).
    g1, g2 : ndarray of float, shape (...)
        Their heights relative to the third corner's.

    Returns
    -------
    alpha, beta : ndarray of float, shape (...)
        The planes' slopes along FP and FN.
    """
    det = d1[..., 0] * d2[..., 1] - d1[..., 1] * d2[..., 0]
    alpha = (g1 * d2[..., 1] - g2 * d1[..., 1]) / det
    beta = (d1[..., 0] * g2 - d2[..., 0] * g1) / det
    return alpha, beta


def fit_plane(p: np.ndarray, z: np.ndarray) -> np.ndarray:
    """(alpha, beta, gamma) of the plane through ``(p[i], z[i])``, i = 0..2."""
    d = p[1:] - p[0]
    dz = z[1:] - z[0]
    alpha, beta = plane_slopes(d[0], d[1], dz[0], dz[1])
    return np.array([alpha, beta, z[0] - alpha * p[0, 0] - beta * p[0, 1]])


def lattice_shape(n_pos: float, n_neg: float) -> tuple[int, int]:
    """(floor(Nn), floor(Np)): the largest FP and FN of the integer lattice."""
    return int(math.floor(n_neg)), int(math.floor(n_pos))


def lattice_in_triangle(p: np.ndarray, nx: int, ny: int, tol: float,
                        h: np.ndarray | None = None):
    """Integer points of ``{0..nx} x {0..ny}`` in the closed triangle ``p`` (3, 2).

    Scan-line rasterisation with a margin, followed by the exact
    :func:`in_triangle` test, so the answer agrees with
    :meth:`~.mesh.Triangulation.locate`.

    Parameters
    ----------
    p : ndarray of float64, shape (3, 2)
        The corners, counter-clockwise.
    nx, ny : int
        The lattice's largest FP and FN (:func:`lattice_shape`).
    tol : float
        Absolute tolerance of the closed-triangle test.
    h : ndarray of float64, shape (3, 3), optional
        ``halfplanes_of(p)``, when the caller has it already.

    Returns
    -------
    i, j : ndarray of int64, shape (n,)
    """
    if h is None:
        h = halfplanes_of(p)
    slack = 2.0 * tol
    x0 = max(0, math.ceil(p[:, 0].min() - slack))
    x1 = min(nx, math.floor(p[:, 0].max() + slack))
    if x1 < x0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    cols = np.arange(x0, x1 + 1, dtype=np.int64)
    xf = cols.astype(np.float64)
    lo = np.full(cols.shape, p[:, 1].min() - slack)
    hi = np.full(cols.shape, p[:, 1].max() + slack)
    for a, b, c in h:
        rhs = c + slack - a * xf
        if b > 0:
            hi = np.minimum(hi, rhs / b)
        elif b < 0:
            lo = np.maximum(lo, rhs / b)
        else:
            hi = np.where(rhs >= 0, hi, -np.inf)
    jlo = np.maximum(np.ceil(lo), 0).astype(np.int64)
    jhi = np.minimum(np.floor(hi), ny).astype(np.int64)
    n = np.maximum(jhi - jlo + 1, 0)
    total = int(n.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    i = np.repeat(cols, n)
    start = np.repeat(np.cumsum(n) - n, n)
    j = np.repeat(jlo, n) + (np.arange(total, dtype=np.int64) - start)
    keep = in_triangle(h, i.astype(np.float64), j.astype(np.float64), tol)
    return i[keep], j[keep]


def bbox_lattice_count(p: np.ndarray, nx: int, ny: int) -> int:
    """Number of lattice points in the bounding box of ``p`` (an upper bound)."""
    w = min(nx, math.floor(p[:, 0].max())) - max(0, math.ceil(p[:, 0].min())) + 1
    hgt = min(ny, math.floor(p[:, 1].max())) - max(0, math.ceil(p[:, 1].min())) + 1
    return max(w, 0) * max(hgt, 0)
