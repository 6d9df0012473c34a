"""How far a triangulation's planes are from the loss on the integer lattice.

The error that matters is the one on the lattice ``{0..floor(Nn)} x
{0..floor(Np)}``, the (FP, FN) pairs a labelling with integer weights can
reach, each point compared with the plane of the triangle
:meth:`~.mesh.Triangulation.locate` gives it. It is computed exactly when the
lattice has at most :data:`EXACT_LATTICE_LIMIT` points, and estimated by
sampling otherwise (see :func:`approximation_error`).
"""
from __future__ import annotations

import numpy as np

from ..losses import Loss, get_loss
from .geometry import bbox_lattice_count, lattice_in_triangle, lattice_shape
from .mesh import Triangulation

__all__ = ["EXACT_LATTICE_LIMIT", "is_exact_lattice", "lattice_errors", "approximation_error"]

#: Largest lattice, in points, on which the error is computed exactly.
EXACT_LATTICE_LIMIT = 2_000_000

# Sampled error estimate (lattices above EXACT_LATTICE_LIMIT): size of the
# uniform sample; triangles whose bounding box holds at most _REPORT_CAP
# lattice points are enumerated, larger ones get a rounded barycentric grid of
# _REPORT_GRID_LEVELS; _EDGE_SAMPLES points per edge for the band along edges;
# windows of radius _REFINE_RADIUS around the _REFINE_TOP worst points.
_N_RANDOM = 100_000
_REPORT_CAP = 20_000
_REPORT_GRID_LEVELS = 48
_EDGE_SAMPLES = 128
_REFINE_TOP = 32
_REFINE_RADIUS = 6


def is_exact_lattice(n_pos: float, n_neg: float) -> bool:
    """Whether the lattice of (Np, Nn) is small enough to visit every point.

    That is, ``(floor(Nn) + 1) (floor(Np) + 1) <= EXACT_LATTICE_LIMIT``: the
    errors are then exact, and the construction tabulates the loss on it.
    """
    nx, ny = lattice_shape(n_pos, n_neg)
    return (nx + 1) * (ny + 1) <= EXACT_LATTICE_LIMIT


def lattice_errors(tri: Triangulation, loss: Loss, exact: bool, n_samples: int = _N_RANDOM,
                   seed: int = 0):
    """Errors of ``tri`` against ``loss``, overall and per triangle.

    Parameters
    ----------
    tri : Triangulation
    loss : Loss
    exact : bool
        True: every lattice point; False: the sampled estimate of
        :func:`approximation_error`.
    n_samples : int, default 100000
        Size of the uniform random sample (sampled estimate only).
    seed : int, default 0
        Seed of that sample.

    Returns
    -------
    max_error, mean_error : float
    per_triangle : ndarray of float64, shape (M,)
        The largest error found in each triangle (0 where none was looked at).
    worst_point : ndarray of float64, shape (M, 2)
        Where each triangle's error is largest, (FP, FN).
    """
    if exact:
        return _exact_error(tri, loss)
    return _sampled_error(tri, loss, n_samples, seed)


def _exact_error(tri: Triangulation, loss: Loss):
    """Exact (max, mean, per-triangle max) over every lattice point.

    Triangles are visited in index order and each claims its not yet claimed
    lattice points, which is the lowest-index rule of ``locate``.
    """
    nx, ny = lattice_shape(tri.n_pos, tri.n_neg)
    claimed = np.zeros((nx + 1) * (ny + 1), bool)
    per_tri = np.zeros(len(tri))
    worst_pt = np.zeros((len(tri), 2))
    total, count, worst = 0.0, 0, 0.0
    corners = tri.vertices[tri.triangles]
    for k in range(len(tri)):
        i, j = lattice_in_triangle(corners[k], nx, ny, tri.tolerance, tri.halfplanes(k))
        flat = i * (ny + 1) + j
        new = ~claimed[flat]
        i, j, flat = i[new], j[new], flat[new]
        claimed[flat] = True
        if i.size == 0:
            continue
        x, y = i.astype(np.float64), j.astype(np.float64)
        a, b, c = tri.planes[k]
        err = np.abs(loss(x, y, tri.n_pos, tri.n_neg) - (a * x + b * y + c))
        m = int(np.argmax(err))
        per_tri[k] = err[m]
        worst_pt[k] = (x[m], y[m])
        total += float(err.sum())
        count += err.size
        worst = max(worst, float(err[m]))
    if count != claimed.size or not claimed.all():     # pragma: no cover - a bug if it happens
        raise RuntimeError("triangulation does not cover the lattice")
    return worst, total / count, per_tri, worst_pt


def _sampled_error(tri: Triangulation, loss: Loss, n_samples: int, seed: int):
    """Estimated (max, mean, per-triangle max) over a huge lattice.

    The maximum is taken over lattice points only (so it is attained, and
    never above the true maximum): a seeded uniform random sample, the
    lattice points near every corner, in a band along every edge and on a
    barycentric grid inside every triangle (rounded to the lattice), and
    finally a local search in windows around the worst points found. The mean
    is the mean over the uniform random sample alone (unbiased).
    """
    nx, ny = lattice_shape(tri.n_pos, tri.n_neg)
    rng = np.random.default_rng(seed)
    rand = np.column_stack([rng.integers(0, nx + 1, n_samples),
                            rng.integers(0, ny + 1, n_samples)]).astype(np.float64)
    corners = tri.vertices[tri.triangles]
    extra = []
    # Around corners: the 6 x 6 lattice block about each vertex.
    off = np.arange(-2.0, 4.0)
    block = np.stack(np.meshgrid(off, off, indexing="ij"), -1).reshape(-1, 2)
    extra.append((np.floor(tri.vertices)[:, None, :] + block[None]).reshape(-1, 2))
    # Along edges: the lattice cell (4 points) around points spaced along each edge.
    t = np.linspace(0.0, 1.0, _EDGE_SAMPLES)[None, :, None]
    for r in range(3):
        a, b = corners[:, r], corners[:, (r + 1) % 3]
        fl = np.floor((a[:, None] + t * (b - a)[:, None]).reshape(-1, 2))
        extra += [fl, fl + (1.0, 0.0), fl + (0.0, 1.0), fl + (1.0, 1.0)]
    # Inside: all lattice points of small triangles, a rounded grid in big ones.
    L = _REPORT_GRID_LEVELS
    ii, jj = np.meshgrid(np.arange(L + 1), np.arange(L + 1), indexing="ij")
    sel = ii + jj <= L
    w = np.column_stack([ii[sel], jj[sel]]) / L
    for tri_index in range(len(tri)):     # not k: below, k holds each point's triangle
        p = corners[tri_index]
        if bbox_lattice_count(p, nx, ny) <= _REPORT_CAP:
            i, j = lattice_in_triangle(p, nx, ny, tri.tolerance, tri.halfplanes(tri_index))
            extra.append(np.column_stack([i, j]).astype(np.float64))
        else:
            extra.append(np.round(p[0] + w[:, :1] * (p[1] - p[0]) + w[:, 1:] * (p[2] - p[0])))

    def errors(q):
        q = q[(q[:, 0] >= 0) & (q[:, 0] <= nx) & (q[:, 1] >= 0) & (q[:, 1] <= ny)]
        k = tri.locate(q[:, 0], q[:, 1])
        pl = tri.planes[k]
        approx = pl[:, 0] * q[:, 0] + pl[:, 1] * q[:, 1] + pl[:, 2]
        return q, k, np.abs(loss(q[:, 0], q[:, 1], tri.n_pos, tri.n_neg) - approx)

    q, k, err = errors(rand)
    mean = float(err.mean()) if n_samples else float("nan")
    q2, k2, e2 = errors(np.concatenate(extra))
    q, k, err = np.concatenate([q, q2]), np.concatenate([k, k2]), np.concatenate([err, e2])
    # Local search: lattice windows around the worst points, twice.
    off = np.arange(-_REFINE_RADIUS, _REFINE_RADIUS + 1, dtype=np.float64)
    win = np.stack(np.meshgrid(off, off, indexing="ij"), -1).reshape(-1, 2)
    for _ in range(2):
        top = np.argpartition(err, -_REFINE_TOP)[-_REFINE_TOP:] if err.size > _REFINE_TOP \
            else np.arange(err.size)
        q2, k2, e2 = errors((q[top][:, None, :] + win[None]).reshape(-1, 2))
        q, k, err = np.concatenate([q, q2]), np.concatenate([k, k2]), np.concatenate([err, e2])
    per_tri = np.zeros(len(tri))
    np.maximum.at(per_tri, k, err)
    worst_pt = np.zeros((len(tri), 2))
    at_max = np.flatnonzero(err >= per_tri[k])
    worst_pt[k[at_max]] = q[at_max]
    return float(err.max()), mean, per_tri, worst_pt


def approximation_error(triangulation: Triangulation, loss, *, exact: bool | None = None,
                        n_samples: int = _N_RANDOM, seed: int = 0) -> tuple[float, float, bool]:
    """Error of a triangulation's planes against ``loss`` over the integer lattice.

    The lattice is ``{0..floor(Nn)} x {0..floor(Np)}``; each point is
    compared with the plane of the triangle :meth:`Triangulation.locate`
    gives it.

    Parameters
    ----------
    triangulation : Triangulation
    loss : str, Loss or callable
        Anything :func:`segstruct.inference.losses.get_loss` accepts.
    exact : bool or None, default None
        True: visit every lattice point (chunked by triangle). False: sampled
        estimate (see below). None: exact iff the lattice has at most
        :data:`EXACT_LATTICE_LIMIT` points.
    n_samples : int, default 100000
        Size of the uniform random sample of the sampled estimate.
    seed : int, default 0
        Seed of that sample.

    Returns
    -------
    max_error, mean_error : float
        Sampled estimate: ``max_error`` is the largest error over a seeded
        uniform sample plus the lattice points near every corner, in a band
        along every edge, on a grid inside every triangle and around the worst
        points found, so it is attained at a lattice point and is a lower
        bound on the true maximum; ``mean_error`` is the mean over the
        uniform sample.
    exact : bool
        Whether the values are exact.
    """
    loss = get_loss(loss)
    if exact is None:
        exact = is_exact_lattice(triangulation.n_pos, triangulation.n_neg)
    mx, mean, _, _ = lattice_errors(triangulation, loss, exact, int(n_samples), seed)
    return mx, mean, bool(exact)
