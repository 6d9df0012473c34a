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
# the boxes have a module of their own; the solver and its tests use them here
from ._envelope_boxes import Boxes as _Boxes
from ._envelope_boxes import box_bounds as _box_bounds  # noqa: F401 (the tests use it here)
from ._envelope_boxes import check_monotone as _check_monotone
from ._envelope_boxes import initial_slopes as _initial_slopes
from .local_search import polish

__all__ = ["envelope_oracle", "MAX_POINT_LATTICE", "DEFAULT_MAX_CUTS"]

#: Lattices (Nn + 1)(Np + 1) up to this size start as single points (exact
#: lattice bound from the first round); larger ones start as GRID x GRID boxes.
MAX_POINT_LATTICE = 1 << 15
GRID = 32
#: Boxes split per round at most (those of largest UB), each into SPLIT x
#: SPLIT (``_envelope_boxes``).
SPLIT_PER_ROUND = 256
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
    boxes = _Boxes(n_pos, n_neg, integral, search, MAX_POINT_LATTICE, GRID)
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
