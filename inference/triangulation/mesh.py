"""The loss-surface mesh: planes on triangles partitioning the (FP, FN) rectangle.

:class:`Triangulation` is what :func:`~.build.triangulate` returns and the
triangle solvers read: the triangles, their planes, and the queries
"which triangle holds this point" (:meth:`Triangulation.locate`) and "what
is the approximation there" (:meth:`Triangulation.evaluate`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import REL_TOL, halfplanes_of, in_triangle

__all__ = ["Triangulation"]


@dataclass
class Triangulation:
    """Planes on M triangles partitioning the (FP, FN) rectangle (paper Eq. 13).

    Attributes
    ----------
    n_pos, n_neg : float
        Np and Nn; the domain is ``[0, Nn] x [0, Np]`` in (FP, FN).
    vertices : ndarray of float64, shape (V, 2)
        Corner coordinates (FP, FN); not necessarily integers. When Np or Nn
        is 0 the triangles cover the padded rectangle
        ``[0, max(Nn, 1)] x [0, max(Np, 1)]`` (package docstring,
        "Degenerate domains").
    triangles : ndarray of int64, shape (M, 3)
        Vertex indices of each triangle, counter-clockwise.
    planes : ndarray of float64, shape (M, 3)
        ``(alpha, beta, gamma)``: on triangle k the loss is approximated by
        ``alpha FP + beta FN + gamma``, the plane through the true loss at the
        triangle's corners.
    loss_name : str
        Which loss was approximated.
    max_error, mean_error : float
        Maximum and mean of ``|Delta - approximation|`` over the integer
        lattice ``{0..floor(Nn)} x {0..floor(Np)}``, each point taking the
        plane of the triangle :meth:`locate` gives it.
    error_exact : bool
        True if the errors were computed on every lattice point; False if
        estimated by sampling (lattices above
        :data:`~.error.EXACT_LATTICE_LIMIT` points): then ``max_error`` is
        attained at a lattice point, hence a lower bound on the true maximum,
        and ``mean_error`` is the mean over a uniform random sample.
    """

    n_pos: float
    n_neg: float
    vertices: np.ndarray
    triangles: np.ndarray
    planes: np.ndarray
    loss_name: str
    max_error: float
    mean_error: float
    error_exact: bool

    def __post_init__(self):
        self.vertices = np.asarray(self.vertices, np.float64)
        self.triangles = np.asarray(self.triangles, np.int64)
        self.planes = np.asarray(self.planes, np.float64)
        corners = self.vertices[self.triangles]                      # (M, 3, 2)
        self._halfplanes = np.stack([halfplanes_of(p) for p in corners]) \
            if len(corners) else np.empty((0, 3, 3))
        self._bbox = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1) \
            if len(corners) else np.empty((0, 4))
        width = max(self.n_neg, self.vertices[:, 0].max(initial=0.0))
        height = max(self.n_pos, self.vertices[:, 1].max(initial=0.0))
        self._tol = REL_TOL * max(width, height, 1e-300)

    def __len__(self) -> int:
        """Number of triangles M."""
        return int(self.triangles.shape[0])

    @property
    def tolerance(self) -> float:
        """Absolute tolerance of the closed-triangle tests (1e-9 x domain size)."""
        return self._tol

    def halfplanes(self, k: int) -> np.ndarray:
        """The three half-planes whose intersection is the closed triangle k.

        Parameters
        ----------
        k : int
            Triangle index, ``0 <= k < M``.

        Returns
        -------
        ndarray of float64, shape (3, 3)
            Rows ``(a, b, c)`` with ``|(a, b)| = 1``: (FP, FN) lies in the
            closed triangle iff ``a FP + b FN <= c`` for all three rows. Row r
            is the edge from corner r to corner r + 1 (mod 3).
        """
        return self._halfplanes[k].copy()

    def locate(self, fp, fn) -> np.ndarray:
        """Index of the triangle holding each (FP, FN) point.

        A point on a shared edge or corner belongs to the LOWEST-index
        triangle whose closed set contains it (to :attr:`tolerance`), so every
        point of the rectangle is in exactly one triangle.

        Parameters
        ----------
        fp, fn : array_like of float
            Coordinates, broadcast against each other.

        Returns
        -------
        ndarray of int64, broadcast shape
            Triangle index, or -1 outside ``[0, Nn] x [0, Np]`` (to tolerance).
        """
        fp, fn = np.broadcast_arrays(np.asarray(fp, np.float64), np.asarray(fn, np.float64))
        shape = fp.shape
        x, y = fp.ravel(), fn.ravel()
        tol = self._tol
        out = np.full(x.shape, -1, np.int64)
        in_rect = ((x >= -tol) & (x <= self.n_neg + tol)
                   & (y >= -tol) & (y <= self.n_pos + tol))
        # Points sorted by FP: each triangle looks only at the slice of its
        # FP range, and claims the points no lower-index triangle took.
        todo = np.flatnonzero(in_rect)
        todo = todo[np.argsort(x[todo], kind="stable")]
        xs = x[todo]
        for k in range(len(self)):
            b = self._bbox[k]
            lo = np.searchsorted(xs, b[0] - tol, side="left")
            hi = np.searchsorted(xs, b[2] + tol, side="right")
            if hi <= lo:
                continue
            idx = todo[lo:hi]
            idx = idx[out[idx] < 0]
            py = y[idx]
            cand = (py >= b[1] - tol) & (py <= b[3] + tol)
            idx = idx[cand]
            hit = in_triangle(self._halfplanes[k], x[idx], y[idx], tol)
            out[idx[hit]] = k
        return out.reshape(shape)

    def evaluate(self, fp, fn) -> np.ndarray:
        """The piecewise-linear approximation at (FP, FN).

        Parameters
        ----------
        fp, fn : array_like of float
            Coordinates, broadcast against each other.

        Returns
        -------
        ndarray of float64, broadcast shape
            ``alpha_k FP + beta_k FN + gamma_k`` with ``k = locate(FP, FN)``;
            NaN outside the rectangle.
        """
        fp, fn = np.broadcast_arrays(np.asarray(fp, np.float64), np.asarray(fn, np.float64))
        k = self.locate(fp, fn)
        pl = self.planes[np.maximum(k, 0)]
        val = pl[..., 0] * fp + pl[..., 1] * fn + pl[..., 2]
        return np.where(k >= 0, val, np.nan)
