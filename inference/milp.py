"""Exact loss-augmented inference by a mixed-integer program (HiGHS).

The program::

    max  sum_{(j,k)} Delta(j, k) x_jk + sum_i (2 y_i - 1) u_i + sum_E p_ij d_ij
    s.t. y in {0,1}^N,  d_ij = [y_i != y_j] (four linear inequalities, exact
         for binary y whatever the sign of p_ij),
         x_jk in {0,1}, sum x_jk = 1,
         sum j x_jk = FP(y),  sum k x_jk = FN(y).

One binary per lattice point (FP, FN) = (j, k) carries the exact loss, so
this is exact for ANY loss of (FP, FN), with no approximation. It needs
integer node weights (superpixel counts, or small pixel areas) and a lattice
of moderate size: it is the reference for superpixel-sized graphs (and
``method="exact"`` for small problems), not a training-scale solver.
"""
from __future__ import annotations

import time

import highspy
import numpy as np

from ._mrf import InferenceResult, complex_loss_inputs, exact_result
from .highs import SolverError, lp_from_triplets, new_highs, run

MAX_LATTICE = 200_000


class MILPError(SolverError):
    """HiGHS did not prove a MILP optimal."""


def milp_oracle(u, edges, p, t, a, loss, max_lattice: int = MAX_LATTICE,
                time_limit: float = 600.0, points=None) -> InferenceResult:
    """Exact argmax_y Delta(FP, FN) + score(y) by one MILP.

    Parameters
    ----------
    u : (N,) unary potentials; edges : (E, 2); p : (E,) pairwise (any sign).
    t : (N,) targets in {0, 1}; a : (N,) non-negative integer weights, or None.
    loss : Loss or anything ``get_loss`` accepts.
    max_lattice : refuse when (Nn + 1)(Np + 1) exceeds this.
    time_limit : seconds HiGHS may take.
    points : (K, 2) array of integer (FP, FN) pairs, or None (all of
        [0, Nn] x [0, Np]): the counts the labelling may have. The envelope
        solver passes the few points its bounds could not rule out.

    Returns
    -------
    InferenceResult, exact: ``bound`` equals ``objective``.
    """
    start = time.perf_counter()
    loss, u, edges, p, t, a, n_pos, n_neg, _ = complex_loss_inputs(
        u, edges, p, t, a, loss, n_triangles=None, submodular=False)
    if np.any(a != np.round(a)) or np.any(a < 0):
        raise ValueError("the exact MILP needs non-negative integer node weights "
                         "(superpixel counts or pixel areas)")
    n_pos_i, n_neg_i = int(round(n_pos)), int(round(n_neg))
    if points is None:
        lattice = (n_neg_i + 1) * (n_pos_i + 1)
    else:
        points = np.unique(np.asarray(points, np.float64).reshape(-1, 2), axis=0)
        if np.any(points != np.round(points)) or np.any(points < 0) or np.any(
                points > [n_neg_i, n_pos_i]):
            raise ValueError("points must be integer (FP, FN) pairs in [0, Nn] x [0, Np]")
        lattice = len(points)
    if lattice > max_lattice:
        raise ValueError(f"the exact MILP would need {lattice} lattice variables "
                         f"(Nn={n_neg_i}, Np={n_pos_i}) > max_lattice={max_lattice}; "
                         "use the LP oracle, or count weights instead of areas")
    n, e = u.size, edges.shape[0]
    jj: np.ndarray
    kk: np.ndarray
    if points is None:
        jj, kk = np.meshgrid(np.arange(n_neg_i + 1), np.arange(n_pos_i + 1), indexing="ij")
        jj, kk = jj.ravel().astype(np.float64), kk.ravel().astype(np.float64)
    else:
        jj, kk = points[:, 0].copy(), points[:, 1].copy()
    deltas = np.asarray(loss(jj, kk, n_pos, n_neg), np.float64)
    # Columns: y (n), d (e), x (lattice).
    n_cols = n + e + lattice
    y_col, d_col, x_col = np.arange(n), n + np.arange(e), n + e + np.arange(lattice)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []

    def add_rows(r_cols, r_vals, lower, upper):
        base = len(lo)
        count = len(lower)
        for c, v in zip(r_cols, r_vals):
            rows.append(base + np.arange(count))
            cols.append(np.asarray(c))
            vals.append(np.broadcast_to(np.asarray(v, np.float64), (count,)))
        lo.extend(lower)
        hi.extend(upper)

    inf = highspy.kHighsInf
    if e:
        yi, yj = edges[:, 0], edges[:, 1]
        add_rows([d_col, yi, yj], [1.0, -1.0, 1.0], np.zeros(e), np.full(e, inf))   # d >= yi - yj
        add_rows([d_col, yi, yj], [1.0, 1.0, -1.0], np.zeros(e), np.full(e, inf))   # d >= yj - yi
        add_rows([d_col, yi, yj], [1.0, -1.0, -1.0], np.full(e, -inf), np.zeros(e))  # d <= yi + yj
        # d <= 2 - yi - yj
        add_rows([d_col, yi, yj], [1.0, 1.0, 1.0], np.full(e, -inf), np.full(e, 2.0))
    # sum x = 1; sum j x - FP(y) = 0; sum k x + sum a t y = Np
    rows.append(np.full(lattice, len(lo)))
    cols.append(x_col)
    vals.append(np.ones(lattice))
    lo.append(1.0)
    hi.append(1.0)
    rows.append(np.full(lattice + n, len(lo)))
    cols.append(np.concatenate([x_col, y_col]))
    vals.append(np.concatenate([jj, -(a * (1 - t))]))
    lo.append(0.0)
    hi.append(0.0)
    rows.append(np.full(lattice + n, len(lo)))
    cols.append(np.concatenate([x_col, y_col]))
    vals.append(np.concatenate([kk, a * t]))
    lo.append(n_pos)
    hi.append(n_pos)
    lp = lp_from_triplets(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals),
                          len(lo), n_cols, np.concatenate([2.0 * u, p, deltas]),
                          (np.zeros(n_cols), np.ones(n_cols)), (lo, hi),
                          offset=-float(u.sum()))
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n_cols
    options = {"time_limit": float(time_limit), "mip_rel_gap": 0.0, "mip_abs_gap": 1e-9}
    highs = new_highs(**options)
    highs.passModel(lp)
    try:
        # a time limit is not cured by other settings: one retry, presolve on
        highs = run(highs, "the MILP", options=options, retries=({"presolve": "on"},))
    except SolverError as err:
        raise MILPError(f"HiGHS did not prove the MILP optimal: {err}") from None
    y = (np.asarray(highs.getSolution().col_value[:n]) > 0.5).astype(np.uint8)
    res = exact_result(u, edges, p, y, t, a, loss, n_pos, n_neg)
    res.bound = res.objective
    res.info = {"method": "milp", "lattice": lattice,
                "milp_objective": highs.getInfo().objective_function_value,
                "seconds": time.perf_counter() - start}
    return res
