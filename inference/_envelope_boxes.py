"""The boxes of the (FP, FN) rectangle that :mod:`.envelope` branches over:
each box's bound from the graph-cut planes, splitting and dropping boxes,
and the checks and secant slopes of the loss that start the planes."""
from __future__ import annotations

import numpy as np

#: Boxes are split into SPLIT x SPLIT children.
SPLIT = 4


def box_bounds(lo, hi, sigma, g, chunk=4096):
    """(C,): min over the planes ``G_j - sigma_j . x`` of each box's plane
    maximum (a corner: the box's low end where a slope is positive, its high
    end elsewhere); inf without planes.

    The planes are taken in groups of one sign pattern (at most four), so
    that each group reads its corner's coordinates as whole columns instead
    of choosing them per box and plane; the numbers are the same.
    """
    out = np.full(lo.shape[0], np.inf)
    if not g.size:
        return out
    s_fp, s_fn = sigma[:, 0], sigma[:, 1]
    pos_fp, pos_fn = s_fp > 0, s_fn > 0
    groups = []
    for plus_fp in (True, False):
        for plus_fn in (True, False):
            j = np.flatnonzero((pos_fp == plus_fp) & (pos_fn == plus_fn))
            if j.size:      # corner: lo (ends[0]) where the slope is positive
                groups.append((0 if plus_fp else 1, 0 if plus_fn else 1, g[j], s_fp[j],
                               s_fn[j]))
    ends = (lo, hi)
    for start in range(0, lo.shape[0], chunk):
        sl = slice(start, start + chunk)
        for end_fp, end_fn, g_j, a_j, b_j in groups:
            value = g_j - np.multiply.outer(ends[end_fp][sl, 0], a_j)
            value -= np.multiply.outer(ends[end_fn][sl, 1], b_j)
            np.minimum(out[sl], value.min(axis=1), out=out[sl])
    return out


def check_monotone(loss, n_pos, n_neg):
    """Refuse a loss that decreases in FP or FN (the box bound needs monotony)."""
    fp = np.linspace(0.0, n_neg, 17)
    fn = np.linspace(0.0, n_pos, 17)
    values = np.asarray(loss(fp[:, None], fn[None, :], n_pos, n_neg), np.float64)
    tol = 1e-9 * max(1.0, float(np.abs(values).max(initial=0.0)))
    if np.any(np.diff(values, axis=0) < -tol) or np.any(np.diff(values, axis=1) < -tol):
        raise ValueError(f"the envelope inference needs a loss that does not decrease as FP or "
                         f"FN grows; {loss!r} does. Use the decomposition or lp solver")


def initial_slopes(loss, n_pos, n_neg, n_grid=3):
    """Secant slopes of Delta on a coarse triangulated grid, and slope 0 (MAP)."""
    fp = np.linspace(0.0, n_neg, n_grid + 1)
    fn = np.linspace(0.0, n_pos, n_grid + 1)
    d = np.asarray(loss(fp[:, None], fn[None, :], n_pos, n_neg), np.float64)
    dfp = max(n_neg / n_grid, 1e-12)
    dfn = max(n_pos / n_grid, 1e-12)
    out = [(0.0, 0.0)]
    for i in range(n_grid):
        for j in range(n_grid):
            # the two triangles of cell (i, j): lower-left and upper-right corners
            out.append(((d[i + 1, j] - d[i, j]) / dfp, (d[i, j + 1] - d[i, j]) / dfn))
            out.append(((d[i + 1, j + 1] - d[i, j + 1]) / dfp,
                        (d[i + 1, j + 1] - d[i + 1, j]) / dfn))
    return list(dict.fromkeys((round(a, 12), round(b, 12)) for a, b in out))


class Boxes:
    """Boxes [lo, hi] of the (FP, FN) rectangle with their score bound.

    A box is one row of ``rows``: lo (FP, FN), hi (FP, FN), ``b`` (the
    planes' bound on the score inside), ``dmax`` (Delta at hi) and ``ub =
    dmax + b``; ``point`` and ``stuck`` are flags per box. One array of rows
    rather than one array per quantity: the search drops boxes in nearly
    every round (about 1,700 boxes at the data-set scope), and that is one
    indexing of the rows instead of five.

    ``search`` is the call's labellings and planes (``envelope._Search``). On
    an integral rectangle of at most ``point_lattice`` points the boxes start
    as single points, else as ``grid`` x ``grid`` boxes (the caller passes
    its module's settings, read at each call).
    """

    _LO, _HI, _B, _DMAX, _UB = slice(0, 2), slice(2, 4), 4, 5, 6

    def __init__(self, n_pos, n_neg, integral: bool, search, point_lattice: int, grid: int):
        self.integral = integral
        self.search = search
        self.dmax_of = lambda hi: np.asarray(
            search.loss(hi[:, 0], hi[:, 1], n_pos, n_neg), np.float64)
        if integral:
            nn, np_ = int(round(n_neg)), int(round(n_pos))
            if (nn + 1) * (np_ + 1) <= point_lattice:
                fp, fn = np.meshgrid(np.arange(nn + 1.0), np.arange(np_ + 1.0), indexing="ij")
                lo = np.stack([fp.ravel(), fn.ravel()], 1)
                hi = lo.copy()
            else:
                lo, hi = self._grid(nn, np_, grid, integral=True)
        else:
            lo, hi = self._grid(n_neg, n_pos, grid, integral=False)
        # tiny boxes count as points on a continuous rectangle
        self.min_size = np.array([max(n_neg, 1.0), max(n_pos, 1.0)]) * 1e-4
        self._set(lo, hi, box_bounds(lo, hi, search.sigma, search.g))

    @staticmethod
    def _grid(n_neg, n_pos, grid, integral):
        def bounds(total):
            if integral:
                # integer intervals [b_i, b_{i+1} - 1] covering 0 .. total
                b = np.unique(np.floor(np.linspace(0.0, total + 1.0, grid + 1)))
                return b[:-1], b[1:] - 1.0
            b = np.linspace(0.0, total, grid + 1)
            return b[:-1], b[1:]
        fl, fh = bounds(n_neg)
        nl, nh = bounds(n_pos)
        lo = np.stack(np.meshgrid(fl, nl, indexing="ij"), -1).reshape(-1, 2)
        hi = np.stack(np.meshgrid(fh, nh, indexing="ij"), -1).reshape(-1, 2)
        return lo, hi

    def _rows(self, lo, hi, b, dmax=None):
        """The rows of boxes [lo, hi] with plane bound b (and Delta at hi)."""
        rows = np.empty((len(lo), 7))
        rows[:, self._LO], rows[:, self._HI], rows[:, self._B] = lo, hi, b
        rows[:, self._DMAX] = self.dmax_of(hi) if dmax is None else dmax
        rows[:, self._UB] = rows[:, self._DMAX] + rows[:, self._B]
        return rows

    def _point_like(self, lo, hi) -> np.ndarray:
        size = hi - lo
        if self.integral:
            return np.all(size == 0, axis=1)
        return np.all(size <= self.min_size, axis=1)

    def _set(self, lo, hi, b):
        self.rows = self._rows(lo, hi, b)
        self.point = self._point_like(lo, hi)
        self.stuck = np.zeros(len(lo), bool)

    def __len__(self) -> int:
        return len(self.rows)

    lo = property(lambda self: self.rows[:, self._LO])
    hi = property(lambda self: self.rows[:, self._HI])
    b = property(lambda self: self.rows[:, self._B])
    ub = property(lambda self: self.rows[:, self._UB])

    def add_plane(self, s_fp, s_fn, g):
        """Lower every box's bound by one more plane."""
        rows = self.rows
        fp = rows[:, 0] if s_fp > 0 else rows[:, 2]
        fn = rows[:, 1] if s_fn > 0 else rows[:, 3]
        plane = g - fp * s_fp
        plane -= fn * s_fn
        np.minimum(rows[:, self._B], plane, out=rows[:, self._B])
        np.add(rows[:, self._DMAX], rows[:, self._B], out=rows[:, self._UB])

    def keep(self, mask):
        self.rows, self.point, self.stuck = self.rows[mask], self.point[mask], self.stuck[mask]

    def split(self, which, parts: int = SPLIT, threshold: float = -np.inf):
        """Cut the boxes ``which`` (indices) into up to ``parts`` x ``parts``
        children (fewer along a side of fewer lattice points), which go after
        the other boxes.

        Children whose upper bound cannot exceed ``threshold`` are left out:
        a child's plane bound is at most its parent's (each plane's maximum
        over a smaller box, rounding included, since every operation is
        monotone), so ``dmax + b`` of the parent's ``b`` bounds the child's
        ``ub`` and the child's planes need not be evaluated. With the
        incumbent's threshold the search would drop them next round anyway.
        """
        lo, hi = self.rows[which, self._LO], self.rows[which, self._HI]
        k = np.arange(parts, dtype=float)[:, None]

        def pieces(axis):
            """(parts, boxes) lower and upper ends of the pieces along ``axis``."""
            a, b = lo[:, axis], hi[:, axis]
            if self.integral:
                # integer pieces [a + floor(k n / parts), a + floor((k+1) n / parts) - 1]
                n = b - a + 1.0
                return a + np.floor(k * n / parts), a + np.floor((k + 1) * n / parts) - 1.0
            # the last piece ends at b itself: a + (b - a) can round past it
            # (the threshold's pruning needs children inside their parent)
            upper = a + (b - a) * (k + 1) / parts
            upper[-1] = b
            return a + (b - a) * k / parts, upper

        # child (i, j), i along FP and j along FN, of every box: block i * parts + j
        (fp_lo, fp_hi), (fn_lo, fn_hi) = pieces(0), pieces(1)
        new_lo = np.stack([np.repeat(fp_lo, parts, axis=0), np.tile(fn_lo, (parts, 1))],
                          axis=-1).reshape(-1, 2)
        new_hi = np.stack([np.repeat(fp_hi, parts, axis=0), np.tile(fn_hi, (parts, 1))],
                          axis=-1).reshape(-1, 2)
        dmax = self.dmax_of(new_hi)
        parent_b = np.tile(self.rows[which, self._B], parts * parts)
        # empty integer pieces, and children that cannot beat the threshold
        ok = np.all(new_hi >= new_lo, axis=1) & (dmax + parent_b > threshold)
        new_lo, new_hi = new_lo[ok], new_hi[ok]
        keep = np.ones(len(self.rows), bool)
        keep[which] = False
        new = self._rows(new_lo, new_hi, box_bounds(new_lo, new_hi, self.search.sigma,
                                                     self.search.g), dmax[ok])
        self.rows = np.concatenate([self.rows[keep], new])
        self.point = np.concatenate([self.point[keep], self._point_like(new_lo, new_hi)])
        self.stuck = np.concatenate([self.stuck[keep], np.zeros(len(new_lo), bool)])

    def probe(self, k) -> np.ndarray:
        """The corner or centre of box k where Delta + the plane bound is largest."""
        lo, hi = self.lo[k], self.hi[k]
        pts = np.array([lo, hi, [lo[0], hi[1]], [hi[0], lo[1]], (lo + hi) / 2.0])
        if self.integral:
            pts = np.floor(pts)
        s = self.search
        bound = (s.g[None, :] - pts @ s.sigma.T).min(axis=1) if s.g.size else np.zeros(5)
        value = self.dmax_of(pts) + bound
        return pts[int(np.argmax(value))]
