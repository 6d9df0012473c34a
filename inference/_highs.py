"""Shared set-up of the HiGHS-based oracles (LP per triangle, MILP, decomposition)."""
from __future__ import annotations

import highspy
import numpy as np

from segstruct.losses import get_loss, totals

from .graphcut import check_mrf


def lp_from_triplets(row, col, val, n_rows, n_cols, cost, col_bounds, row_bounds,
                     offset=0.0, maximize=True) -> highspy.HighsLp:
    """A HiGHS LP from (row, col, value) triplets, stored column-wise.

    Parameters
    ----------
    row, col, val : (K,) arrays of the constraint matrix's entries.
    n_rows, n_cols : its shape.
    cost : (n_cols,) objective; offset : constant added to it.
    col_bounds, row_bounds : pairs (lower, upper) of arrays.
    """
    row, col, val = (np.asarray(v) for v in (row, col, val))
    keep = val != 0
    row, col, val = row[keep], col[keep], val[keep]
    order = np.lexsort((row, col))
    row, col, val = row[order], col[order], val[order]
    lp = highspy.HighsLp()
    lp.num_col_ = int(n_cols)
    lp.num_row_ = int(n_rows)
    lp.col_cost_ = np.asarray(cost, np.float64)
    lp.col_lower_, lp.col_upper_ = (np.asarray(b, np.float64) for b in col_bounds)
    lp.row_lower_, lp.row_upper_ = (np.asarray(b, np.float64) for b in row_bounds)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.searchsorted(col, np.arange(n_cols + 1)).astype(np.int32)
    lp.a_matrix_.index_ = row.astype(np.int32)
    lp.a_matrix_.value_ = val.astype(np.float64)
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    lp.offset_ = float(offset)
    return lp


def complex_loss_inputs(u, edges, p, t, a, loss, triangulation=None, n_triangles=40,
                        submodular=True):
    """Validated arrays, the loss, totals and a matching triangulation.

    Returns
    -------
    loss, u, edges, p, t (float64), a (float64), n_pos, n_neg, triangulation
    (None when ``n_triangles`` is None and none was given).
    """
    from segstruct.triangulation import triangulate

    loss = get_loss(loss)
    u, edges, p = check_mrf(u, edges, p, submodular=submodular)
    t = np.asarray(t, np.float64)
    a = np.ones(u.size) if a is None else np.asarray(a, np.float64)
    n_pos, n_neg = totals(t, a)
    if triangulation is None and n_triangles is not None:
        triangulation = triangulate(loss, n_pos, n_neg, n_triangles=n_triangles)
    elif triangulation is not None and not (np.isclose(triangulation.n_pos, n_pos)
                                            and np.isclose(triangulation.n_neg, n_neg)):
        raise ValueError(f"triangulation is for Np={triangulation.n_pos}, Nn="
                         f"{triangulation.n_neg}, but the targets give Np={n_pos}, Nn={n_neg}")
    return loss, u, edges, p, t, a, n_pos, n_neg, triangulation
