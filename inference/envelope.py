"""Exact loss-augmented inference for complex losses: branch and bound over
(FP, FN) with graph-cut planes (the proposed method's default solver).

Write ``x(y) = (FP(y), FN(y))`` for the weighted counts of a labelling and
``s(y)`` for its score. With every ``p_ij <= 0`` one graph cut with slopes
``sigma = (sigma_fp, sigma_fn)`` returns the exact value

    G(sigma) = max_y  s(y) + sigma . x(y),

so each cut gives a plane that bounds the score of EVERY labelling by its
counts alone: ``s(y) <= G(sigma) - sigma . x(y)``. For a box ``C`` of the
(FP, FN) rectangle and the planes ``j`` cut so far, every labelling whose
counts lie in ``C`` has true objective at most

    UB(C) = max_C Delta + min_j max_{x in C} (G_j - sigma_j . x),

where ``max_C Delta`` is Delta at the box's upper corner (the loss must be
non-decreasing in FP and FN, as Hamming, IoU and F-beta are). The solver runs
branch and bound over boxes:

- boxes whose UB cannot beat the best labelling found (the incumbent) are
  dropped; the others are halved until they are single lattice points
  (integer node weights) or tiny;
- at the surviving point ``x*`` of largest UB one more cut is made, with the
  slopes that solve ``min_sigma max_m s_m + sigma . (x_m - x*)`` over the
  labellings ``m`` known so far (Kelley's cutting-plane step on the dual of
  "best score with counts x*"; a tiny LP). Either the cut finds a labelling
  above the known upper hull at ``x*``, or the plane it adds proves the hull
  exact there and the point is "stuck": no plane can lower its bound, because
  no labelling with those counts is a vertex of the score envelope;
- every labelling a cut returns is scored with the TRUE objective
  ``Delta + score``, and greedy single flips polish the incumbent.

It ends when no box survives (the incumbent is certified optimal: bound =
objective), when only stuck points survive (on graphs small enough, an MILP
restricted to those few (FP, FN) points settles them exactly; otherwise the
bound is the largest surviving UB), or when the cut budget is spent.

Unlike the triangle LPs (``lp.py``, ``decomposition.py``) nothing here
approximates the loss: the bound uses Delta itself, so a certified result is
the exact maximiser of the true objective.
"""
from __future__ import annotations

import time

import maxflow
import numpy as np

from ._mrf import InferenceResult, complex_loss_inputs, count_weights, exact_result, raw_score
from .local_search import polish

__all__ = ["envelope_oracle", "MAX_POINT_LATTICE", "DEFAULT_MAX_CUTS"]

#: Lattices (Nn + 1)(Np + 1) up to this size start as single points (exact
#: lattice bound from the first round); larger ones start as GRID x GRID boxes.
MAX_POINT_LATTICE = 1 << 15
GRID = 32
#: Boxes split per round at most (those of largest UB), and into SPLIT x SPLIT.
SPLIT_PER_ROUND = 256
SPLIT = 4
#: Delta's secant slopes on an INITIAL_GRID x INITIAL_GRID grid start the planes.
INITIAL_GRID = 2
#: Rounds of splitting without a cut before the top box is probed with one.
PROBE_EVERY = 3
#: Cuts per call at most (None: no limit). Superpixel graphs certify in far
#: fewer; data-set scope and pixel grids stop here and report their gap.
DEFAULT_MAX_CUTS = 120
#: Graphs with at most this many nodes settle stuck points by a restricted MILP.
MAX_MILP_NODES = 400
#: Greedy flips per polish, at most.
MAX_FLIPS = 200
#: Larger graphs are not polished. A flip step scans every node, so on a pixel
#: grid a full polish costs as much as many cuts, and there and at the
#: data-set scope the cuts certify in as few or fewer cuts without it.
MAX_POLISH_NODES = 20000
#: Best labellings returned in info["labellings"] (seeds of the next call).
MAX_SEEDS = 8


class _Cutter:
    """Graph cuts of ``s(y) + sigma_fp FP + sigma_fn FN`` on one persistent graph.

    The n-links are built once; each cut only adds the change of every node's
    terminal capacity and re-runs the max-flow from the previous residual
    graph (Boykov-Kolmogorov supports this), which on a pixel grid is several
    times cheaper per cut than building a fresh graph.
    """

    def __init__(self, u, edges, p, fp_w, tp_w):
        n = u.size
        self.base, self.fp_w, self.tp_w = 2.0 * u, fp_w, tp_w
        self.graph = maxflow.Graph[float](max(n, 1), max(len(edges), 1))
        self.nodes = self.graph.add_nodes(n)
        if len(edges):
            cap = -p
            self.graph.add_edges(self.nodes[edges[:, 0]], self.nodes[edges[:, 1]], cap, cap)
        self.w = np.zeros(n)          # terminal capacity difference now in the graph
        self.n_cuts = 0

    def __call__(self, s_fp: float, s_fn: float) -> np.ndarray:
        self.n_cuts += 1
        if not self.w.size:
            return np.zeros(0, np.uint8)
        # Sink side = label 1 (see graphcut.min_cut): node i pays max(w_i, 0)
        # as label 0 and max(-w_i, 0) as label 1; add the difference only.
        w = self.base + s_fp * self.fp_w - s_fn * self.tp_w
        d = w - self.w
        self.graph.add_grid_tedges(self.nodes, np.maximum(-d, 0.0), np.maximum(d, 0.0))
        self.w = w
        self.graph.maxflow()
        return self.graph.get_grid_segments(self.nodes).astype(np.uint8)


def _inverse3(columns):
    """The inverse of the 3x3 matrix with these columns, as three rows of
    Python floats, or None when it is singular (to rounding)."""
    (a, d, g), (b, e, h), (c, f, i) = columns
    co_a, co_b, co_c = e * i - f * h, f * g - d * i, d * h - e * g
    det = a * co_a + b * co_b + c * co_c
    size = ((abs(a) + abs(b) + abs(c)) * (abs(d) + abs(e) + abs(f))
            * (abs(g) + abs(h) + abs(i)))
    if abs(det) <= 1e-15 * size:
        return None
    r = 1.0 / det
    return ((co_a * r, (c * h - b * i) * r, (b * f - c * e) * r),
            (co_b * r, (a * i - c * g) * r, (c * d - a * f) * r),
            (co_c * r, (b * g - a * h) * r, (a * e - b * d) * r))


class Hull:
    """The known labellings' upper hull at a point, and its slopes there.

    For points ``x_m`` (their counts) with heights ``s_m`` (their scores) and
    a point ``x*`` this solves the three-variable LP

        min_{g, sigma}  g - sigma . x*   s.t.  g - sigma . x_m >= s_m  (all m),
                                              -B <= sigma_k <= B,

    whose value is the upper concave envelope of the points at ``x*`` (when
    ``x*`` lies in their convex hull and B is large enough) and whose
    ``sigma`` are the slopes of the envelope's facet there. No general
    solver is needed: its dual

        max_lam  sum_m lam_m s_m - B || sum_m lam_m x_m - x* ||_1,
        lam >= 0, sum_m lam_m = 1,

    has three rows (the sum, and the two coordinates, with slack variables
    for the distance), so a basis is at most three points: the triangle of
    known labellings whose lifted plane lies above ``x*``, or fewer points
    and the distance terms when ``x*`` is outside their hull. The simplex
    method on these three rows walks from triangle to triangle, swapping one
    corner per step, until no point lies above the current triangle's plane:
    then that plane is the hull's facet at ``x*`` (``sigma`` its slopes, read
    off the basis as the dual values of the three rows). Every step is a
    3x3 solve; there is no process-wide solver state.

    Parameters
    ----------
    bound : B, the largest |slope|.
    """

    #: Pivots at most per query; Dantzig's rule, then Bland's after
    #: ``BLAND_AFTER`` (which cannot cycle on degenerate triangles).
    MAX_PIVOTS = 500
    BLAND_AFTER = 50
    #: Smallest pivot, relative to the entering column's largest entry: with
    #: 1e-12 a pivot of rounding noise let three collinear points into the
    #: basis (a singular 3x3 system on the penn-fudan data at C 0.3).
    PIVOT_TOL = 1e-9

    def __init__(self, bound: float):
        self.bound = float(bound)
        # Columns 0-3: the distance slacks e+_fp, e-_fp, e+_fn, e-_fn
        # (row k: sum lam x_mk - e+_k + e-_k = x*_k), cost -B; then the points.
        # Kept in arrays that grow by doubling: a query reads them whole, and
        # rebuilding them from lists on every query cost more than its pivots.
        # The same columns as Python lists (the pivots' 3x3 algebra reads
        # them) and each column's tolerance of an improving reduced cost are
        # kept as the points come, not remade by every query.
        self._a = np.zeros((3, 64))
        self._c = np.zeros(64)
        self._improves = np.zeros(64)
        self._a[1, :2] = (-1.0, 1.0)
        self._a[2, 2:4] = (-1.0, 1.0)
        self._c[:4] = -self.bound
        self._columns = self._a[:, :4].T.tolist()
        self._costs = self._c[:4].tolist()
        self._n = 4
        self._improves[:4] = self._tolerance(self._a[:, :4], self._c[:4])

    def _tolerance(self, columns, costs):
        """Scale of the terms of a reduced cost (columns (3, k), costs (k,)),
        for relative tolerances."""
        return 1e-11 * (np.abs(costs) + np.abs(columns).sum(axis=0) * max(1.0, self.bound))

    def add(self, x, s) -> None:
        """A known labelling: counts ``x`` = (FP, FN) and score ``s``."""
        if self._n == self._c.size:
            self._a = np.concatenate([self._a, np.zeros_like(self._a)], axis=1)
            self._c = np.concatenate([self._c, np.zeros_like(self._c)])
            self._improves = np.concatenate([self._improves, np.zeros_like(self._improves)])
        n = self._n
        self._a[:, n] = (1.0, float(x[0]), float(x[1]))
        self._c[n] = float(s)
        self._improves[n:n + 1] = self._tolerance(self._a[:, n:n + 1], self._c[n:n + 1])
        self._columns.append(self._a[:, n].tolist())
        self._costs.append(float(s))
        self._n += 1

    @property
    def n_points(self) -> int:
        return self._n - 4

    def slopes(self, point) -> tuple[float, float, float]:
        """(hull value at ``point``, sigma_fp, sigma_fn).

        Raises
        ------
        ValueError when no point is known yet.
        """
        if self.n_points == 0:
            raise ValueError("the hull of no point is undefined")
        a = self._a[:, :self._n]                         # (3, 4 + m)
        c = self._c[:self._n]
        b = (1.0, float(point[0]), float(point[1]))
        # The 3x3 algebra of a pivot runs on Python floats: as numpy calls on
        # 3-vectors, their per-call overhead was most of the proposed
        # method's training time (a query walks about ten pivots).
        columns, costs = self._columns, self._costs
        # Start: the best single point, the distance slacks taking up the rest.
        dist = np.abs(a[1, 4:] - b[1]) + np.abs(a[2, 4:] - b[2])
        m = 4 + int(np.argmax(c[4:] - self.bound * dist))
        basis = [m, 0 if columns[m][1] >= b[1] else 1, 2 if columns[m][2] >= b[2] else 3]
        improves = self._improves[:self._n]
        zero = 1e-9 * (1.0 + max(abs(b[1]), abs(b[2]), 1.0))
        b0, b1, b2 = b
        for step in range(self.MAX_PIVOTS):
            inverse = _inverse3([columns[j] for j in basis])
            if inverse is None:
                # Rounding let three collinear points into the basis (seen on
                # real data with x* on their line, at tiny potentials): the
                # walk cannot go on from a singular basis; the LP can.
                break
            (i00, i01, i02), (i10, i11, i12), (i20, i21, i22) = inverse
            c0, c1, c2 = costs[basis[0]], costs[basis[1]], costs[basis[2]]
            # the basis' dual values: c_B times the inverse
            pi = [c0 * i00 + c1 * i10 + c2 * i20, c0 * i01 + c1 * i11 + c2 * i21,
                  c0 * i02 + c1 * i12 + c2 * i22]
            reduced = c - np.dot(pi, a)
            reduced[basis] = 0.0
            improving = reduced > improves
            # Dantzig's rule: the largest improving reduced cost (the first
            # of ties); Bland's: the first improving column
            j = int(np.argmax(np.where(improving, reduced, -np.inf)) if step < self.BLAND_AFTER
                    else np.argmax(improving))
            if not improving[j]:
                return pi[0] * b0 + pi[1] * b1 + pi[2] * b2, -pi[1], -pi[2]
            e0, e1, e2 = columns[j]
            direction = [i00 * e0 + i01 * e1 + i02 * e2, i10 * e0 + i11 * e1 + i12 * e2,
                         i20 * e0 + i21 * e1 + i22 * e2]
            x_b = [i00 * b0 + i01 * b1 + i02 * b2, i10 * b0 + i11 * b1 + i12 * b2,
                   i20 * b0 + i21 * b1 + i22 * b2]
            # a pivot within rounding of 0 would make the next basis singular
            floor = self.PIVOT_TOL * max(abs(direction[0]), abs(direction[1]), abs(direction[2]))
            # Basic values within rounding of 0 count as 0: at a degenerate
            # vertex (x* on a known point) noise of 1e-17 against exact zeros
            # broke the ratio ties, and with them Bland's rule, which then cycled.
            ratios = {r: (x_b[r] if x_b[r] > zero else 0.0) / direction[r]
                      for r in range(3) if direction[r] > floor}
            if not ratios:           # cannot happen: the dual is bounded
                raise RuntimeError("hull: unbounded pivot (rounding)")
            # among tied rows, the one whose column has the smallest index (Bland)
            low = min(ratios.values()) * (1 + 1e-12) + 1e-300
            leave = min((r for r, v in ratios.items() if v <= low), key=lambda r: basis[r])
            basis[leave] = j
        return self._slopes_by_lp(a[:, 4:], c[4:], np.array(b))

    def _slopes_by_lp(self, points, heights, b) -> tuple[float, float, float]:
        """The primal LP by a general solver: the fallback should the walk
        not settle within ``MAX_PIVOTS`` or reach a singular basis."""
        from scipy.optimize import linprog
        m = heights.size
        res = linprog([1.0, -b[1], -b[2]], A_ub=np.c_[-np.ones(m), points[1:].T],
                      b_ub=-heights, method="highs",
                      bounds=[(None, None), (-self.bound, self.bound), (-self.bound, self.bound)])
        if res.status != 0:
            raise RuntimeError(f"hull: no optimal triangle after {self.MAX_PIVOTS} pivots, "
                               f"and the LP failed too: {res.message}")
        return float(res.fun), float(res.x[1]), float(res.x[2])


class _Search:
    """The labellings and planes of one call (the boxes are in ``_Boxes``)."""

    def __init__(self, u, edges, p, t, a, loss, n_pos, n_neg):
        self.u, self.edges, self.p, self.t, self.a = u, edges, p, t, a
        self.loss, self.n_pos, self.n_neg = loss, n_pos, n_neg
        self.fp_w, self.tp_w = count_weights(t, a)
        self.cut = _Cutter(u, edges, p, self.fp_w, self.tp_w)
        # scores are sums of N + E terms: rounding makes differences below about
        # eps * sum |terms| meaningless, so tolerances scale with that sum too
        self.scale = max(1.0, float(np.abs(u).sum() + np.abs(p).sum()))
        w_min = float(np.min(a[a > 0], initial=1.0))
        # slopes this steep make every weighted node follow the count term
        self.hull = Hull(4.0 * (self.scale + 1.0) / w_min + 1.0)
        self.labels, self.x, self.s, self.f = [], [], [], []
        self._index = {}
        self.sigma = np.zeros((0, 2))
        self.g = np.zeros(0)
        self.best = -1

    @classmethod
    def started(cls, u, edges, p, t, a, loss, n_pos, n_neg, seed_labellings, polish):
        """A search that knows the targets, the seeds (those of the graph's
        size) and the cuts at Delta's secant slopes (then polished)."""
        search = cls(u, edges, p, t, a, loss, n_pos, n_neg)
        search.add_labelling(t.astype(np.uint8))
        for y in seed_labellings:
            if np.shape(y) == u.shape:
                search.add_labelling(np.asarray(y, np.uint8))
        for s_fp, s_fn in _initial_slopes(loss, n_pos, n_neg, INITIAL_GRID):
            search.cut_at(s_fp, s_fn)
        if polish:
            search.polish_best()
        return search

    # -- labellings and planes
    def add_labelling(self, y) -> int:
        key = y.tobytes()
        k = self._index.get(key)
        if k is not None:
            return k
        k = self._index[key] = len(self.labels)
        fp = float(self.fp_w @ y)
        fn = self.n_pos - float(self.tp_w @ y)
        s = float(raw_score(self.u, self.edges, self.p, y))
        f = self.loss.value(fp, fn, self.n_pos, self.n_neg) + s
        self.labels.append(y)
        self.x.append((fp, fn))
        self.s.append(s)
        self.f.append(f)
        self.hull.add((fp, fn), s)
        if self.best < 0 or f > self.f[self.best]:
            self.best = k
        return k

    def cut_at(self, s_fp, s_fn):
        """One cut: its labelling's index and the plane's (sigma, G)."""
        k = self.add_labelling(self.cut(s_fp, s_fn))
        fp, fn = self.x[k]
        g = self.s[k] + s_fp * fp + s_fn * fn
        self.sigma = np.vstack([self.sigma, [s_fp, s_fn]])
        self.g = np.append(self.g, g)
        return k, (s_fp, s_fn, g)

    @property
    def incumbent(self) -> float:
        return self.f[self.best]

    def polish_best(self) -> bool:
        """Greedy flips from the incumbent; True if that found a better labelling."""
        if self.u.size > MAX_POLISH_NODES:
            return False
        y, n = polish(self.u, self.edges, self.p, self.t, self.a, self.loss,
                      self.labels[self.best], max_steps=MAX_FLIPS)
        before = self.best
        if n:
            self.add_labelling(y)
        return self.best != before


def _box_bounds(lo, hi, sigma, g, chunk=4096):
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


def _check_monotone(loss, n_pos, n_neg):
    """Refuse a loss that decreases in FP or FN (the box bound needs monotony)."""
    fp = np.linspace(0.0, n_neg, 17)
    fn = np.linspace(0.0, n_pos, 17)
    values = np.asarray(loss(fp[:, None], fn[None, :], n_pos, n_neg), np.float64)
    tol = 1e-9 * max(1.0, float(np.abs(values).max(initial=0.0)))
    if np.any(np.diff(values, axis=0) < -tol) or np.any(np.diff(values, axis=1) < -tol):
        raise ValueError(f"the envelope inference needs a loss that does not decrease as FP or "
                         f"FN grows; {loss!r} does. Use the decomposition or lp solver")


def _initial_slopes(loss, n_pos, n_neg, n_grid=3):
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


class _Boxes:
    """Boxes [lo, hi] of the (FP, FN) rectangle with their score bound.

    A box is one row of ``rows``: lo (FP, FN), hi (FP, FN), ``b`` (the
    planes' bound on the score inside), ``dmax`` (Delta at hi) and ``ub =
    dmax + b``; ``point`` and ``stuck`` are flags per box. One array of rows
    rather than one array per quantity: the search drops boxes in nearly
    every round (about 1,700 boxes at the data-set scope), and that is one
    indexing of the rows instead of five.
    """

    _LO, _HI, _B, _DMAX, _UB = slice(0, 2), slice(2, 4), 4, 5, 6

    def __init__(self, n_pos, n_neg, integral: bool, search: _Search):
        self.integral = integral
        self.search = search
        self.dmax_of = lambda hi: np.asarray(
            search.loss(hi[:, 0], hi[:, 1], n_pos, n_neg), np.float64)
        if integral:
            nn, np_ = int(round(n_neg)), int(round(n_pos))
            if (nn + 1) * (np_ + 1) <= MAX_POINT_LATTICE:
                fp, fn = np.meshgrid(np.arange(nn + 1.0), np.arange(np_ + 1.0), indexing="ij")
                lo = np.stack([fp.ravel(), fn.ravel()], 1)
                hi = lo.copy()
            else:
                lo, hi = self._grid(nn, np_, integral=True)
        else:
            lo, hi = self._grid(n_neg, n_pos, integral=False)
        # tiny boxes count as points on a continuous rectangle
        self.min_size = np.array([max(n_neg, 1.0), max(n_pos, 1.0)]) * 1e-4
        self._set(lo, hi, _box_bounds(lo, hi, search.sigma, search.g))

    @staticmethod
    def _grid(n_neg, n_pos, integral):
        def bounds(total):
            if integral:
                # integer intervals [b_i, b_{i+1} - 1] covering 0 .. total
                b = np.unique(np.floor(np.linspace(0.0, total + 1.0, GRID + 1)))
                return b[:-1], b[1:] - 1.0
            b = np.linspace(0.0, total, GRID + 1)
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
        new = self._rows(new_lo, new_hi, _box_bounds(new_lo, new_hi, self.search.sigma,
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


def envelope_oracle(u, edges, p, t, a, loss, max_cuts: int | None = DEFAULT_MAX_CUTS,
                    exact_fallback: bool = True, seed_labellings=(), polish: bool = True,
                    tol: float = 1e-9) -> InferenceResult:
    """Most violated constraint ``argmax_y Delta(FP, FN) + score(y)`` of a
    complex loss, by branch and bound over (FP, FN) with graph-cut planes.

    Parameters
    ----------
    u : (N,) float unary potentials; edges : (E, 2) int; p : (E,) float, all <= 0.
    t : (N,) targets in {0, 1}; a : (N,) node weights >= 0, or None (1).
    loss : Loss (or a name): any Delta(FP, FN, Np, Nn) non-decreasing in FP and FN.
    max_cuts : graph cuts per call at most (None: no limit); on reaching it
        the result is the best labelling found and ``bound`` says how far from
        optimal it can be.
    exact_fallback : settle points the planes cannot decide by an MILP
        restricted to them (integer weights, at most ``MAX_MILP_NODES`` nodes).
    seed_labellings : labellings to score first (e.g. the previous call's).
    polish : greedy single flips from the best labelling (after the first
        cuts, and again when only stuck points are left), on graphs of at
        most ``MAX_POLISH_NODES`` nodes. Never needed for correctness, but a
        better incumbent prunes more.
    tol : relative tolerance of "cannot beat the incumbent", relative to the
        larger of ``|incumbent|`` and ``sum |u| + sum |p|`` (rounding in the scores).

    Returns
    -------
    InferenceResult
        The best labelling by its TRUE objective; ``bound`` >= the optimum
        (== objective when certified); ``info`` has "certified", "graph_cuts",
        "boxes_left", "stuck_points", "milp" and timings.

    Raises
    ------
    ValueError
        Bad inputs, or a loss that decreases in FP or FN.
    NotSubmodularError
        Some ``p_ij > 0``.
    """
    start = time.perf_counter()
    loss, u, edges, p, t, a, n_pos, n_neg, _ = complex_loss_inputs(
        u, edges, p, t, a, loss, n_triangles=None)
    _check_monotone(loss, n_pos, n_neg)
    search = _Search.started(u, edges, p, t, a, loss, n_pos, n_neg, seed_labellings, polish)
    scale = search.scale
    integral = bool(np.all(a == np.round(a)))
    boxes = _Boxes(n_pos, n_neg, integral, search)
    status, milp_used, rounds, since_cut = "budget", False, 0, 0
    while True:
        rounds += 1
        f_best = search.incumbent
        threshold = f_best + tol * max(scale, abs(f_best))
        alive = boxes.ub > threshold
        if not alive.all():
            boxes.keep(alive)
        if not len(boxes):
            status = "certified"
            break
        points = boxes.point
        if boxes.stuck.any():
            open_ = ~boxes.stuck
            if not open_.any():
                # only stuck points left: a polish may still lift the incumbent
                if polish and search.polish_best():
                    continue
                status = "stuck"
                break
            ub = np.where(open_, boxes.ub, -np.inf)
            can_split = ~points & open_
        else:
            ub, can_split = boxes.ub, ~points
        k = int(np.argmax(ub))
        if points[k] or since_cut >= PROBE_EVERY:
            if max_cuts is not None and search.cut.n_cuts >= max_cuts:
                break
            since_cut = 0
            if points[k]:
                x_star = boxes.hi[k] if integral else (boxes.lo[k] + boxes.hi[k]) / 2.0
            else:
                x_star = boxes.probe(k)
            hull_value, s_fp, s_fn = search.hull.slopes(x_star)
            _, (s_fp, s_fn, g) = search.cut_at(s_fp, s_fn)
            boxes.add_plane(s_fp, s_fn, g)
            plane_at = g - s_fp * x_star[0] - s_fn * x_star[1]
            if points[k] and plane_at <= hull_value + tol * max(scale, abs(hull_value)):
                # the envelope at x* is known exactly and still beats the incumbent
                boxes.stuck[k] = True
            continue
        since_cut += 1
        splittable = np.flatnonzero(can_split)
        if len(splittable) > SPLIT_PER_ROUND:
            top = np.argpartition(-ub[splittable], SPLIT_PER_ROUND - 1)[:SPLIT_PER_ROUND]
            splittable = splittable[top]
        boxes.split(splittable, threshold=threshold)
    stuck_points = int(boxes.stuck.sum()) if len(boxes) else 0
    if (status == "stuck" and exact_fallback and integral and u.size <= MAX_MILP_NODES):
        from .milp import milp_oracle
        # the incumbent's own counts keep the restricted MILP feasible
        allowed = np.vstack([boxes.hi, [search.x[search.best]]])
        search.add_labelling(milp_oracle(u, edges, p, t, a, loss, points=allowed).labels)
        milp_used, status = True, "certified"
    best = search.best
    res = exact_result(u, edges, p, search.labels[best], t, a, loss, n_pos, n_neg)
    if status == "certified":
        res.bound = res.objective
    else:
        res.bound = float(max(res.objective, boxes.ub.max()))
    order = np.argsort(-np.asarray(search.f), kind="stable")[:MAX_SEEDS]
    res.info = {"method": "envelope", "certified": status == "certified", "status": status,
                "graph_cuts": search.cut.n_cuts, "n_labellings": len(search.labels),
                "rounds": rounds, "boxes_left": len(boxes),
                "stuck_points": stuck_points, "milp": milp_used,
                "labellings": [search.labels[i] for i in order],
                "seconds": time.perf_counter() - start}
    return res
