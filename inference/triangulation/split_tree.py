"""The construction's working state: a binary tree of triangle splits.

:func:`~.build.triangulate` builds its meshes with :class:`SplitTree`:

1. Cut the rectangle into 2 triangles along a diagonal.
2. Refine worst-first (:meth:`SplitTree.refine`): take the triangle with the
   largest approximation error and split it in two by a segment from one
   corner to a point of the opposite edge. The candidate points are the
   midpoints of the three edges and, on each edge, the point where the line
   from the opposite corner through the triangle's worst point meets it; the
   candidate whose two children have the smallest maximum error wins (or the
   smallest total error: the ``rule``). Only that triangle is split, so the
   mesh may have hanging vertices: harmless, since every triangle has its
   own plane, and the triangles always partition the rectangle exactly.
3. Improve: move the cut points of the tree (:func:`.improve.move_splits`,
   where the gain is measured).

Every plane passes through the TRUE loss at its triangle's three corners.
The construction measures each triangle on all its lattice points when it
holds few, else on a barycentric grid of points inside it, so it runs in the
same time on any domain size. On a degenerate domain (Np = 0 or Nn = 0) the
tree covers the padded rectangle and the loss is evaluated at points clipped
back into the real one (package docstring, "Degenerate domains").
"""
from __future__ import annotations

import heapq
import math

import numpy as np

from ..losses import CallableLoss, Loss
from .error import is_exact_lattice
from .geometry import (REL_TOL, fit_plane, halfplanes_of, in_triangle, lattice_shape,
                       min_height, plane_slopes, signed_area)
from .mesh import Triangulation

__all__ = ["MAX_TRIANGLES", "SplitTree", "loss_table"]

#: Target mode gives up (RuntimeError) beyond this many triangles.
MAX_TRIANGLES = 20_000

# A triangle's error is measured on all its lattice points when its bounding
# box holds at most _CONSTRUCTION_CAP of them, otherwise on a barycentric grid
# with _GRID_LEVELS + 1 points a side (plus the lattice points next to its
# corners).
_CONSTRUCTION_CAP = 4096
_GRID_LEVELS = 20


def loss_table(loss: Loss, n_pos: float, n_neg: float) -> np.ndarray | None:
    """The loss on every lattice point, or None on a lattice too big for it.

    Returns
    -------
    ndarray of float64, shape (floor(Nn) + 1, floor(Np) + 1), or None
        None when the lattice is above
        :data:`~.error.EXACT_LATTICE_LIMIT` points.
    """
    if not is_exact_lattice(n_pos, n_neg):
        return None
    nx, ny = lattice_shape(n_pos, n_neg)
    i, j = np.meshgrid(np.arange(nx + 1.0), np.arange(ny + 1.0), indexing="ij")
    return loss(i, j, n_pos, n_neg)


def _loss_label(loss: Loss) -> str:
    """The loss's name with its parameters, for :attr:`Triangulation.loss_name`."""
    if isinstance(loss, CallableLoss):
        return loss.label
    params = loss.params
    if not params:
        return loss.name
    return f"{loss.name}(" + ", ".join(f"{k}={v!r}" for k, v in params.items()) + ")"


class SplitTree:
    """A binary tree of triangle splits over the rectangle, refined worst-first.

    Each node is a triangle; an internal node is cut in two by the segment
    from one corner to a point of the opposite edge, so the leaves always
    partition the rectangle exactly, whatever the split positions. The
    leaves, in their order, are the triangles of the result. The nodes
    (``corner``, ``zc``, ``kids``, ``parent``) and the leaves' statistics
    (``leaves``, ``stats``) are public: :func:`.improve.move_splits` moves
    the cut points in place.

    Parameters
    ----------
    loss : Loss
    n_pos, n_neg : float
    diagonal : {0, 1}
        Starting cut of the rectangle: 0 from (0, 0) to (Nn, Np), 1 from
        (Nn, 0) to (0, Np).
    rule : {"max", "sum"}
        How a split is chosen among the candidates: smallest maximum error of
        the two children (then smallest total error), or smallest total error.
    table : ndarray, shape (floor(Nn) + 1, floor(Np) + 1), optional
        The loss on the lattice (:func:`loss_table`), shared between trees.
    """

    def __init__(self, loss: Loss, n_pos: float, n_neg: float, diagonal: int = 0,
                 rule: str = "max", table: np.ndarray | None = None):
        self.loss, self.n_pos, self.n_neg, self.rule = loss, n_pos, n_neg, rule
        self.width = n_neg if n_neg > 0 else 1.0
        self.height = n_pos if n_pos > 0 else 1.0
        self.nx, self.ny = lattice_shape(n_pos, n_neg)
        self.tol = REL_TOL * max(self.width, self.height)
        self.min_height = 1e-6 * max(self.width, self.height)
        # Loss table on small lattices: every lattice point evaluated once.
        self.table = table if table is not None else loss_table(loss, n_pos, n_neg)
        if self.table is not None:
            self.grid_x, self.grid_y = np.meshgrid(np.arange(self.nx + 1.0),
                                                   np.arange(self.ny + 1.0), indexing="ij")
        L = _GRID_LEVELS
        ii, jj = np.meshgrid(np.arange(L + 1), np.arange(L + 1), indexing="ij")
        sel = ii + jj <= L
        self.grid_w = np.column_stack([ii[sel], jj[sel]]) / L
        off = np.arange(-1.0, 3.0)
        self.block = np.stack(np.meshgrid(off, off, indexing="ij"), -1).reshape(-1, 2)

        # Nodes: corners (3, 2), loss at the corners (3,), split
        # (r, f, child1, child2) or None, parent (-1 for the two roots).
        self.corner: list[np.ndarray] = []
        self.zc: list[np.ndarray] = []
        self.kids: list[tuple | None] = []
        self.parent: list[int] = []
        # Leaves: node ids in triangle order, and their error statistics
        # (max error, sum of errors, worst point (2,)).
        self.leaves: list[int] = []
        self.stats: list[tuple[float, float, np.ndarray]] = []
        w, h = self.width, self.height
        c = np.array([(0.0, 0.0), (w, 0.0), (w, h), (0.0, h)])
        start = [c[[0, 1, 2]], c[[0, 2, 3]]] if diagonal == 0 else [c[[0, 1, 3]], c[[1, 2, 3]]]
        for p in start:
            k = self._node(p, -1)
            self.leaves.append(k)
        # Errors below this are rounding: they tie (see split and _push).
        scale = np.abs(self.table).max() if self.table is not None else np.abs(self.zc[0]).max()
        self.grain = 1e-12 * (1.0 + float(scale))
        for k in self.leaves:
            self.stats.append(self.measure(self.corner[k], self.zc[k]))
        self.heap: list = []
        self.version: list[int] = []

    # -- values ----------------------------------------------------------
    def loss_at(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The loss at points clipped into [0, Nn] x [0, Np] (degenerate domains)."""
        return self.loss(np.clip(x, 0.0, self.n_neg), np.clip(y, 0.0, self.n_pos),
                         self.n_pos, self.n_neg)

    def _node(self, p: np.ndarray, parent: int, zc: np.ndarray | None = None) -> int:
        self.corner.append(p)
        self.zc.append(self.loss_at(p[:, 0], p[:, 1]) if zc is None else zc)
        self.kids.append(None)
        self.parent.append(parent)
        return len(self.corner) - 1

    @staticmethod
    def child_corners(p: np.ndarray, r: int, f: float):
        a, b, c = p[r], p[(r + 1) % 3], p[(r + 2) % 3]
        m = a + f * (b - a)
        return np.array([a, m, c]), np.array([m, b, c])

    # -- error of one triangle --------------------------------------------
    def points(self, p: np.ndarray):
        """Evaluation points of the closed triangle ``p`` (3, 2) and the loss there.

        Returns ``x, y, z, complete``: all its lattice points (complete =
        True) when its bounding box holds at most _CONSTRUCTION_CAP of them;
        otherwise a barycentric grid plus the lattice points next to its
        corners.
        """
        s = 2.0 * self.tol
        xs, ys = p[:, 0].tolist(), p[:, 1].tolist()
        i0, i1 = max(0, math.ceil(min(xs) - s)), min(self.nx, math.floor(max(xs) + s))
        j0, j1 = max(0, math.ceil(min(ys) - s)), min(self.ny, math.floor(max(ys) + s))
        if i1 < i0 or j1 < j0:
            return np.empty(0), np.empty(0), np.empty(0), True
        h = halfplanes_of(p)
        if (i1 - i0 + 1) * (j1 - j0 + 1) <= _CONSTRUCTION_CAP:
            if self.table is not None:
                x = self.grid_x[i0:i1 + 1, j0:j1 + 1]
                y = self.grid_y[i0:i1 + 1, j0:j1 + 1]
                z = self.table[i0:i1 + 1, j0:j1 + 1]
            else:
                x, y = np.meshgrid(np.arange(i0, i1 + 1.0), np.arange(j0, j1 + 1.0), indexing="ij")
                z = None
            m = in_triangle(h, x, y, self.tol)
            x, y = x[m], y[m]
            return x, y, (z[m] if z is not None else self.loss_at(x, y)), True
        w = self.grid_w
        g = p[0] + w[:, :1] * (p[1] - p[0]) + w[:, 1:] * (p[2] - p[0])
        near = (np.floor(p)[:, None, :] + self.block[None]).reshape(-1, 2)
        near = near[(near[:, 0] >= 0) & (near[:, 0] <= self.nx)
                    & (near[:, 1] >= 0) & (near[:, 1] <= self.ny)]
        near = near[in_triangle(h, near[:, 0], near[:, 1], self.tol)]
        q = np.concatenate([g, near])
        return q[:, 0], q[:, 1], self.loss_at(q[:, 0], q[:, 1]), False

    def measure(self, p: np.ndarray, zc: np.ndarray):
        """(max error, sum of errors, worst point) of the plane of triangle ``p``."""
        x, y, z, _ = self.points(p)
        if x.size == 0:
            return (0.0, 0.0, p.mean(axis=0))
        pl = fit_plane(p, zc)
        err = np.abs(z - (pl[0] * x + pl[1] * y + pl[2]))
        m = int(np.argmax(err))
        return (float(err[m]), float(err.sum()), np.array([x[m], y[m]]))

    def area(self, i: int) -> float:
        return signed_area(self.corner[self.leaves[i]])

    # -- splitting ---------------------------------------------------------
    def candidates(self, p: np.ndarray, worst: np.ndarray) -> list[tuple[int, float]]:
        """(edge r, fraction f) splits worth trying: the new vertex is
        ``p[r] + f (p[r+1] - p[r])``, joined to the opposite corner.

        Splits leaving a child thinner than ``min_height`` are not offered:
        such slivers hold no lattice point off their edges, and would make
        the closed-triangle tolerance matter.
        """
        out = []
        for r in range(3):
            a, b, c = p[r], p[(r + 1) % 3], p[(r + 2) % 3]
            e = b - a
            fs = [0.5]
            # Where the line from corner c through the worst point meets edge a-b.
            d = worst - c
            den = d[0] * e[1] - d[1] * e[0]
            if abs(den) > 1e-300:
                s = ((a[0] - c[0]) * e[1] - (a[1] - c[1]) * e[0]) / den
                f = ((a[0] - c[0]) * d[1] - (a[1] - c[1]) * d[0]) / den
                if s > 0 and 0.02 < f < 0.98 and abs(f - 0.5) > 1e-3:
                    fs.append(float(f))
            for f in fs:
                m = a + f * e
                if min(min_height(a, m, c), min_height(m, b, c)) >= self.min_height:
                    out.append((r, f))
        return out

    def split(self, i: int) -> bool:
        """Split leaf i in two (the best candidate); False if too small.

        All candidates are scored at once on the parent's points: a point
        belongs to the child on its side of the dividing segment (to both on
        the segment), and is compared with that child's plane.
        """
        k = self.leaves[i]
        p, z_corner = self.corner[k], self.zc[k]
        cands = self.candidates(p, self.stats[i][2])
        if not cands:
            return False
        x, y, z, complete = self.points(p)
        r = np.array([rf[0] for rf in cands])
        f = np.array([rf[1] for rf in cands])
        pa, pb, pc = p[r], p[(r + 1) % 3], p[(r + 2) % 3]               # (C, 2) each
        za, zb, zc = z_corner[r], z_corner[(r + 1) % 3], z_corner[(r + 2) % 3]
        pm = pa + f[:, None] * (pb - pa)
        zm = self.loss_at(pm[:, 0], pm[:, 1])
        length = np.hypot(*(pb - pa).T) * (f == 0.5)      # midpoints only, for ties
        if x.size:
            errs = []
            for (q1, z1), (q2, z2) in (((pa, za), (pm, zm)), ((pm, zm), (pb, zb))):
                # Plane through (q1, z1), (q2, z2), (pc, zc), relative to pc.
                alpha, beta = plane_slopes(q1 - pc, q2 - pc, z1 - zc, z2 - zc)
                approx = (zc[:, None] + alpha[:, None] * (x[None] - pc[:, :1])
                          + beta[:, None] * (y[None] - pc[:, 1:]))
                errs.append(np.abs(z[None] - approx))
            # Signed distance to the dividing line c-m, positive on a's side.
            u = pm - pc
            norm = np.hypot(u[:, 0], u[:, 1])
            side = np.sign(u[:, 0] * (pa[:, 1] - pc[:, 1]) - u[:, 1] * (pa[:, 0] - pc[:, 0]))
            dist = side[:, None] * (u[:, :1] * (y[None] - pc[:, 1:])
                                    - u[:, 1:] * (x[None] - pc[:, :1])) / norm[:, None]
            e1 = np.where(dist >= -self.tol, errs[0], -1.0)       # -1: not in the child
            e2 = np.where(dist <= self.tol, errs[1], -1.0)
            max12 = np.maximum(e1.max(axis=1), e2.max(axis=1))
            sum12 = np.maximum(e1, 0.0).sum(axis=1) + np.maximum(e2, 0.0).sum(axis=1)
            # Errors equal up to rounding tie (a plane is fitted exactly
            # everywhere, say), and ties go to the longest edge's midpoint.
            max12 = np.round(max12 / self.grain)
            sum12 = np.round(sum12 / (self.grain * x.size))
            if self.rule == "max":
                best = int(np.lexsort((-length, sum12, max12))[0])
            else:
                best = int(np.lexsort((-length, max12, sum12))[0])
        else:
            best = int(np.argmax(length))
        rr, ff = int(r[best]), float(f[best])
        p1, p2 = self.child_corners(p, rr, ff)
        k1 = self._node(p1, k, np.array([za[best], zm[best], zc[best]]))
        k2 = self._node(p2, k, np.array([zm[best], zb[best], zc[best]]))
        self.kids[k] = (rr, ff, k1, k2)
        if complete and x.size:
            # The parent's points are all its lattice points: the children's
            # statistics follow without measuring again.
            s1 = self._stats_from(e1[best], x, y, p1)
            s2 = self._stats_from(e2[best], x, y, p2)
        else:
            s1, s2 = self.measure(p1, self.zc[k1]), self.measure(p2, self.zc[k2])
        self.leaves[i], self.stats[i] = k1, s1
        self.leaves.append(k2)
        self.stats.append(s2)
        return True

    @staticmethod
    def _stats_from(err, x, y, p):
        """Stats from errors with -1 marking points outside the triangle."""
        m = int(np.argmax(err))
        if err[m] < 0:
            return (0.0, 0.0, p.mean(axis=0))
        return (float(err[m]), float(err[err >= 0].sum()), np.array([x[m], y[m]]))

    # -- worst-first refinement ---------------------------------------------
    def _push(self, i: int):
        """(Re-)queue leaf i; older heap entries of i go stale."""
        if i == len(self.version):
            self.version.append(0)
        else:
            self.version[i] += 1
        err = round(self.stats[i][0] / self.grain) * self.grain
        heapq.heappush(self.heap, (-err, -self.area(i), i, self.version[i]))

    def refine(self, n_triangles: int | None, target: float | None):
        """Split the worst leaf until there are M, or the error is <= target.

        Ties (e.g. a loss that is a plane, all errors 0) go to the largest
        triangle, so the triangles stay well shaped.
        """
        for i in range(len(self.version), len(self.leaves)):
            self._push(i)
        while self.heap:
            if n_triangles is not None and len(self.leaves) >= n_triangles:
                break
            neg_err, _, i, ver = self.heap[0]
            if ver != self.version[i]:
                heapq.heappop(self.heap)
                continue
            if target is not None and -neg_err + 0.5 * self.grain <= target:
                break             # every error (rounded to grain in the queue) <= target
            if target is not None and len(self.leaves) >= MAX_TRIANGLES:
                raise RuntimeError(
                    f"max_error={target} not reached with {MAX_TRIANGLES} triangles")
            heapq.heappop(self.heap)
            if not self.split(i):
                continue          # too small to split: leave it out of the queue
            self._push(i)
            self._push(len(self.leaves) - 1)

    def raise_errors(self, per_tri: np.ndarray, worst_pt: np.ndarray, target: float) -> bool:
        """Target mode: give the leaves whose reported error is above target
        (and above their stored one) that error; True if any was queued."""
        queued = False
        for i, e in enumerate(per_tri):
            if e > target:
                if e > self.stats[i][0]:
                    self.stats[i] = (float(e), self.stats[i][1], np.asarray(worst_pt[i], float))
                self._push(i)
                queued = True
        return queued

    def reset_queue(self):
        """Forget the refinement queue after the leaves' errors changed (the
        cut points moved): :meth:`refine` rebuilds it when next called."""
        self.heap.clear()
        self.version.clear()

    # -- comparing meshes ------------------------------------------------------
    def quality(self):
        """Errors sorted decreasingly, then their total: smaller is better."""
        return (sorted((s[0] for s in self.stats), reverse=True), sum(s[1] for s in self.stats))

    # -- output ---------------------------------------------------------------
    def flat(self):
        """(vertices (V, 2), corner values (V,), triangles (M, 3)) of the leaves."""
        index: dict[tuple[float, float], int] = {}
        verts, tris = [], []
        for k in self.leaves:
            t = []
            for q in self.corner[k]:
                key = (float(q[0]), float(q[1]))
                if key not in index:
                    index[key] = len(verts)
                    verts.append(key)
                t.append(index[key])
            tris.append(t)
        vals = np.empty(len(verts))
        for k, t in zip(self.leaves, tris):
            vals[t] = self.zc[k]
        return np.array(verts, np.float64), vals, np.array(tris, np.int64)

    def result(self) -> Triangulation:
        """The leaves as a Triangulation (errors not yet filled in)."""
        verts, vals, tris = self.flat()
        planes = np.stack([fit_plane(verts[t], vals[t]) for t in tris])
        return Triangulation(n_pos=self.n_pos, n_neg=self.n_neg, vertices=verts,
                             triangles=tris, planes=planes, loss_name=_loss_label(self.loss),
                             max_error=float("nan"), mean_error=float("nan"),
                             error_exact=False)
