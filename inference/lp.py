"""Loss-augmented inference by one LP relaxation per loss-surface triangle
(the proposed method of Ranjbar, Mori & Wang, Sec. 4; Eq. 22-26).

For triangle k with plane alpha_k FP + beta_k FN + gamma_k, HiGHS solves

    max  alpha_k FP + beta_k FN + gamma_k + sum_i (2 y_i - 1) u_i
         + sum_{ij} p_ij (eta01_ij + eta10_ij)
    s.t. eta10 + eta11 = y_i,  eta01 + eta11 = y_j,  eta00 + eta01 + eta10 + eta11 = 1,
         FP = sum_i a_i (1 - t_i) y_i,   FN = Np - sum_i a_i t_i y_i,
         (FP, FN) in triangle k (three half-planes),  y in [0, 1], eta >= 0.

One HiGHS model is built per graph; between triangles only the costs of the
FP and FN columns and the three triangle rows change, and HiGHS restarts
from the previous basis, because rebuilding the model per triangle
dominated the oracle's time (docs/history/design-2026-12.md,
"Measurements behind the design").

Each LP solution is rounded into candidates (threshold at 0.5; the LP's
integral part kept and the rest labelled by a graph cut under the triangle's
plane; the graph cut under the plane alone), every candidate is scored with
the TRUE objective Delta(FP, FN) + score(y), and the best is returned. The
LP values bound the piecewise-linear objective from above, so
``max_k LP_k + triangulation.max_error`` bounds the true optimum (exactly
when the triangulation's error is exact).
"""
from __future__ import annotations

import time

import highspy
import numpy as np

from ._mrf import InferenceResult, complex_loss_inputs, exact_result
from .graphcut import min_cut
from .highs import INFEASIBLE, OPTIMAL, SolverError, lp_from_triplets, new_highs, run
from .triangulation import N_TRIANGLES

RULES = ("best", "paper")


class LPError(SolverError):
    """HiGHS did not solve a triangle's LP to optimality."""


class TriangleLP:
    """The LP of Eq. 22-26 for one graph, re-used across triangles.

    Parameters
    ----------
    u : (N,) unary potentials; edges : (E, 2); p : (E,) pairwise potentials.
    t : (N,) targets in {0, 1}; a : (N,) node weights >= 0.
    """

    def __init__(self, u, edges, p, t, a):
        self.u, self.edges, self.p = u, edges, p
        self.t = np.asarray(t, np.float64)
        self.a = np.asarray(a, np.float64)
        n, e = u.size, edges.shape[0]
        self.n, self.e = n, e
        self.n_pos, self.n_neg = float(self.a @ self.t), float(self.a @ (1 - self.t))
        # Columns: y (n), eta00, eta01, eta10, eta11 (e each), FP, FN.
        self.col_fp = n + 4 * e
        self.col_fn = self.col_fp + 1
        n_cols = self.col_fn + 1
        # Rows: FP def, FN def, 3 per edge (marginals, normalisation), 3 triangle rows.
        rows, cols, vals = [], [], []

        def put(r, c, v):
            rows.append(np.broadcast_to(r, np.shape(c)).ravel())
            cols.append(np.ravel(c))
            vals.append(np.broadcast_to(v, np.shape(c)).ravel().astype(np.float64))

        idx = np.arange(n)
        put(0, idx, -(self.a * (1 - self.t)))              # FP - sum a(1-t) y = 0
        put(0, self.col_fp, 1.0)
        put(1, idx, self.a * self.t)                       # FN + sum a t y = Np
        put(1, self.col_fn, 1.0)
        k = np.arange(e)
        eta = [n + m * e + k for m in range(4)]            # 00, 01, 10, 11
        r_i, r_j, r_s = 2 + k, 2 + e + k, 2 + 2 * e + k
        put(r_i, eta[2], 1.0)                              # eta10 + eta11 - y_i = 0
        put(r_i, eta[3], 1.0)
        put(r_i, edges[:, 0], -1.0)
        put(r_j, eta[1], 1.0)                              # eta01 + eta11 - y_j = 0
        put(r_j, eta[3], 1.0)
        put(r_j, edges[:, 1], -1.0)
        for m in range(4):                                 # sum eta = 1
            put(r_s, eta[m], 1.0)
        self.tri_rows = 2 + 3 * e + np.arange(3)
        for r in self.tri_rows:                            # placeholders, set per triangle
            put(r, [self.col_fp, self.col_fn], 1.0)
        n_rows = int(self.tri_rows[-1]) + 1
        lower_rows = np.zeros(n_rows)
        lower_rows[1] = self.n_pos
        lower_rows[r_s] = 1.0
        upper_rows = lower_rows.copy()
        lower_rows[self.tri_rows] = -highspy.kHighsInf
        upper_rows[self.tri_rows] = highspy.kHighsInf
        cost = np.zeros(n_cols)
        cost[:n] = 2.0 * u
        cost[eta[1]] = p
        cost[eta[2]] = p
        upper = np.full(n_cols, highspy.kHighsInf)
        upper[:n] = 1.0
        upper[self.col_fp] = max(self.n_neg, 0.0)
        upper[self.col_fn] = max(self.n_pos, 0.0)
        lp = lp_from_triplets(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals),
                              n_rows, n_cols, cost, (np.zeros(n_cols), upper),
                              (lower_rows, upper_rows), offset=-float(u.sum()))
        self.highs = new_highs(presolve="off")
        self.highs.passModel(lp)

    def solve(self, plane, halfplanes, label="") -> tuple[float, np.ndarray | None]:
        """LP optimum and y for one triangle.

        Parameters
        ----------
        plane : (alpha, beta, gamma) of the triangle.
        halfplanes : (3, 3) rows (a, b, c) with a FP + b FN <= c.

        Returns
        -------
        value : the LP optimum (plane + score objective), -inf when infeasible.
        y : (N,) fractional labelling, None when infeasible.
        """
        alpha, beta, gamma = (float(v) for v in plane)
        h = self.highs
        h.changeColsCost(2, np.array([self.col_fp, self.col_fn], np.int32),
                         np.array([alpha, beta]))
        for r, (ca, cb, cc) in zip(self.tri_rows, halfplanes):
            h.changeCoeff(int(r), self.col_fp, float(ca))
            h.changeCoeff(int(r), self.col_fn, float(cb))
            # A little slack so a lattice point on an edge is never cut off by rounding.
            h.changeRowBounds(int(r), -highspy.kHighsInf,
                              float(cc) + 1e-9 * max(1.0, abs(cc), self.n_pos + self.n_neg))
        try:
            h = run(h, f"the LP of triangle {label}", accept=(OPTIMAL, INFEASIBLE),
                    options={"presolve": "off"})
        except SolverError as err:
            raise LPError(str(err)) from None
        if h.getModelStatus() != OPTIMAL:
            return -np.inf, None
        y = np.clip(np.asarray(h.getSolution().col_value[:self.n]), 0.0, 1.0)
        return h.getInfo().objective_function_value + gamma, y


def _plane_cut(u, edges, p, t, a, alpha, beta, fixed=None):
    """Graph cut of score + alpha FP + beta FN, optionally with nodes fixed."""
    linear = alpha * a * (1.0 - t) - beta * a * t
    if fixed is not None:
        # A reward larger than everything else keeps a fixed node's label.
        big = 4.0 * (np.abs(u).sum() + np.abs(p).sum() + np.abs(linear).sum()) + 1.0
        ones, zeros = fixed == 1, fixed == 0
        linear = linear + big * ones - big * zeros
    return min_cut(u, edges, p, linear)


def lp_oracle(u, edges, p, t, a, loss, triangulation=None, n_triangles=N_TRIANGLES,
              rule="best") -> InferenceResult:
    """Most violated constraint of a complex loss by per-triangle LPs.

    Parameters
    ----------
    u, edges, p : the MRF (p <= 0).
    t : (N,) targets; a : (N,) weights or None (1).
    loss : Loss (any function of FP, FN).
    triangulation : Triangulation of ``loss`` over [0, Nn] x [0, Np], or
        None to build one with ``n_triangles`` triangles.
    rule : "best" returns the candidate with the highest TRUE objective over
        all triangles and roundings; "paper" returns the 0.5-threshold
        rounding of the triangle with the largest LP value (the paper's rule).

    Returns
    -------
    InferenceResult with ``bound`` = max LP value + the triangulation's max
    error (an upper bound of the true optimum) and ``info`` holding the LP
    values per triangle, the best triangle and timings.
    """
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; use one of {RULES}")
    start = time.perf_counter()
    loss, u, edges, p, t, a, n_pos, n_neg, triangulation = complex_loss_inputs(
        u, edges, p, t, a, loss, triangulation, n_triangles)
    lp = TriangleLP(u, edges, p, t, a)
    values = np.full(len(triangulation), -np.inf)
    best, best_k, paper = None, -1, None
    seen = {}                  # distinct candidates by their bytes: (objective, labels)
    for k in range(len(triangulation)):
        alpha, beta, _ = triangulation.planes[k]
        value, y_frac = lp.solve(triangulation.planes[k], triangulation.halfplanes(k), label=str(k))
        values[k] = value
        if y_frac is None:
            continue           # no labelling's (FP, FN) lies in this triangle
        integral = np.where(y_frac >= 1 - 1e-6, 1, np.where(y_frac <= 1e-6, 0, -1))
        candidates = [(y_frac >= 0.5).astype(np.uint8),
                      _plane_cut(u, edges, p, t, a, alpha, beta)]
        if np.any(integral < 0):
            candidates.append(_plane_cut(u, edges, p, t, a, alpha, beta, fixed=integral))
        for y in candidates:
            res = exact_result(u, edges, p, y, t, a, loss, n_pos, n_neg)
            seen[res.labels.tobytes()] = (res.objective, res.labels)
            if best is None or res.objective > best.objective + 1e-12:
                best, best_k = res, k
        if paper is None or value > values[paper[0]]:
            paper = (k, candidates[0])
    if best is None:
        # impossible in exact arithmetic: the targets' own (FP, FN) = (0, 0) lies in
        # some triangle, so at least one LP is feasible
        raise LPError(f"HiGHS found the LP of every one of the {len(triangulation)} "
                      "triangles infeasible (status Infeasible)")
    if rule == "paper":
        assert paper is not None    # set in the same iteration as best
        best_k = paper[0]
        best = exact_result(u, edges, p, paper[1], t, a, loss, n_pos, n_neg)
    best.bound = float(values.max()) + float(triangulation.max_error)
    best.info = {"method": "lp", "rule": rule, "triangle": int(best_k),
                 "lp_values": values.tolist(), "n_triangles": len(triangulation),
                 "triangulation_max_error": float(triangulation.max_error),
                 # the best distinct candidates, best first (local search starts)
                 "labellings": [y for _, y in sorted(seen.values(), key=lambda c: -c[0])[:8]],
                 "seconds": time.perf_counter() - start}
    return best
