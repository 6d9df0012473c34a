"""The linear maximiser of the marginal polytope, ``argmax_y <g, phi(y)>``: one
graph cut on attractive scores, else enumeration or a local search."""
from __future__ import annotations

import highspy
import numpy as np

from ._mrf import NotSubmodularError
from ._projection_types import OracleAnswer, check_theta
from .graphcut import min_cut
from .highs import lp_from_triplets, new_highs, run


#: Largest N for which a non-attractive linear maximiser call enumerates all 2^N
#: labellings (exact); 2^12 labellings times E edges is about a millisecond.
EXACT_LIMIT = 12


def _attractive_cut(g_u, g_p, edges):
    """Exact ``argmax_y sum g_u y + sum g_p y_i y_j`` for ``g_p >= 0`` (one min cut).

    ``y_i y_j = (y_i + y_j - [y_i != y_j]) / 2``: a coefficient ``g_e >= 0`` on
    the product becomes ``g_e / 2`` on each endpoint and a disagreement cost
    ``-g_e / 2 <= 0``, which is the submodular form :func:`.graphcut.min_cut` solves.
    """
    n = g_u.size
    linear = g_u + 0.5 * (np.bincount(edges[:, 0], g_p, minlength=n)
                          + np.bincount(edges[:, 1], g_p, minlength=n))
    return min_cut(np.zeros(n), edges, -0.5 * g_p, linear)


def _value(g_u, g_p, edges, y):
    y = y.astype(np.float64)
    return float(g_u @ y + g_p @ (y[edges[:, 0]] * y[edges[:, 1]]))


class VertexMaximiser:
    """``argmax_y <g, phi(y)>`` on a fixed graph; see :func:`linear_maximiser`.

    Keeps the table of all labellings between calls, so Frank-Wolfe builds it
    once.
    """

    def __init__(self, n, edges, exact_limit=EXACT_LIMIT, strict=False):
        self.n, self.edges = n, edges
        self.exact_limit, self.strict = exact_limit, strict
        self._table = None

    def __call__(self, g_u, g_p, certify=True) -> OracleAnswer:
        """``certify=False`` lets a non-attractive call on a large graph return
        the cheap relaxation answer (a good vertex, a loose bound) instead of
        solving the MILP; Frank-Wolfe asks for it while that vertex still helps."""
        edges = self.edges
        if np.all(g_p >= 0):
            y = _attractive_cut(g_u, g_p, edges)
            value = _value(g_u, g_p, edges, y)
            return OracleAnswer(y, value, value, True)
        if self.strict:
            neg = g_p < 0
            raise NotSubmodularError(
                f"{int(neg.sum())} of {g_p.size} pairwise coefficients are negative "
                f"(min {g_p.min():.6g}): argmax_y <g, phi(y)> is then not a graph cut. "
                "Use strict=False for enumeration (small N) or the MILP.")
        if self.n <= self.exact_limit:
            return self._enumerate(g_u, g_p)
        answer = self._relaxed(g_u, g_p)
        if answer.exact or not certify:
            return answer
        return self._milp(g_u, g_p, answer)

    def _enumerate(self, g_u, g_p):
        if self._table is None:
            labels = (np.arange(2 ** self.n)[:, None] >> np.arange(self.n)) & 1
            labels = labels.astype(np.uint8)
            parts = labels[:, self.edges[:, 0]] * labels[:, self.edges[:, 1]]
            self._table = labels, labels.astype(np.float64), parts.astype(np.float64)
        labels, y_u, y_p = self._table
        values = y_u @ g_u + y_p @ g_p
        k = int(np.argmax(values))
        return OracleAnswer(labels[k].copy(), float(values[k]), float(values[k]), True)

    def _relaxed(self, g_u, g_p):
        # For g_e < 0, g_e y_i y_j <= lam * g_e (y_i + y_j - 1) on {0,1}^2 for
        # any lam in [0, 1] (y_i y_j >= 0 and >= y_i + y_j - 1). Replacing the
        # negative products this way leaves an attractive problem whose exact
        # maximum (one cut) bounds the true one from above. lam = 0 (drop the
        # edge) and lam = 1 (make it linear) are tried; the better labelling
        # by its true value is the vertex, the lower maximum the bound.
        edges, neg = self.edges, g_p < 0
        best, bound = None, np.inf
        for lam in (0.0, 1.0):
            shift = lam * g_p[neg]
            lin = (g_u + np.bincount(edges[neg, 0], shift, minlength=self.n)
                   + np.bincount(edges[neg, 1], shift, minlength=self.n))
            kept = np.where(neg, 0.0, g_p)
            y = _attractive_cut(lin, kept, edges)
            bound = min(bound, _value(lin, kept, edges, y) - float(shift.sum()))
            value = _value(g_u, g_p, edges, y)
            if best is None or value > best[1]:
                best = (y, value)
        y, value = _local_search(g_u, g_p, edges, best[0])
        # The relaxation is exact on the labelling it returns only when equal.
        return OracleAnswer(y, value, max(bound, value), bound <= value)

    def _milp(self, g_u, g_p, start):
        """Exact maximum by a MILP (HiGHS): binary y, one column z_e per edge.

        ``z_e <= y_i, z_e <= y_j`` for ``g_e > 0`` and ``z_e >= y_i + y_j - 1``
        for ``g_e < 0`` (with ``0 <= z_e <= 1``) make ``z_e = y_i y_j`` at the
        optimum for binary ``y``. The bound is HiGHS's dual bound.
        """
        n, edges = self.n, self.edges
        e = np.arange(edges.shape[0])
        pos, neg = e[g_p > 0], e[g_p < 0]
        z = n + e
        # rows: z - y_i <= 0 and z - y_j <= 0 (pos); y_i + y_j - z <= 1 (neg)
        row = np.concatenate([np.repeat(np.arange(pos.size), 2),
                              np.repeat(pos.size + np.arange(pos.size), 2),
                              np.repeat(2 * pos.size + np.arange(neg.size), 3)])
        col = np.concatenate([np.stack([z[pos], edges[pos, 0]], 1).ravel(),
                              np.stack([z[pos], edges[pos, 1]], 1).ravel(),
                              np.stack([edges[neg, 0], edges[neg, 1], z[neg]], 1).ravel()])
        val = np.concatenate([np.tile([1.0, -1.0], 2 * pos.size),
                              np.tile([1.0, 1.0, -1.0], neg.size)])
        n_rows = 2 * pos.size + neg.size
        upper = np.concatenate([np.zeros(2 * pos.size), np.ones(neg.size)])
        n_cols = n + e.size
        lp = lp_from_triplets(row, col, val, n_rows, n_cols, np.concatenate([g_u, g_p]),
                              (np.zeros(n_cols), np.ones(n_cols)),
                              (np.full(n_rows, -highspy.kHighsInf), upper))
        lp.integrality_ = ([highspy.HighsVarType.kInteger] * n
                           + [highspy.HighsVarType.kContinuous] * e.size)
        # tight feasibility tolerances: the dual bound certifies the FW gap
        options = {"mip_rel_gap": 0.0, "mip_abs_gap": 1e-12, "mip_feasibility_tolerance": 1e-10,
                   "primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
        h = new_highs(**options)
        h.passModel(lp)
        h = run(h, "the linear maximiser's MILP", options=options, retries=({"presolve": "on"},))
        y = (np.asarray(h.getSolution().col_value[:n]) > 0.5).astype(np.uint8)
        value = _value(g_u, g_p, edges, y)
        if value < start.value:  # keep the heuristic's labelling if HiGHS's is worse
            y, value = start.labels, start.value
        bound = max(float(h.getInfo().mip_dual_bound), value)
        return OracleAnswer(y, value, bound, True)


def _local_search(g_u, g_p, edges, y, max_sweeps=100):
    """Greedy single-node flips from ``y`` while one raises ``<g, phi(y)>``.

    Flipping node i changes the value by ``(1 - 2 y_i) (g_u_i + sum_{j~i} g_ij y_j)``.
    """
    n = g_u.size
    y = y.copy()
    for _ in range(max_sweeps * max(n, 1)):
        yf = y.astype(np.float64)
        field = g_u + (np.bincount(edges[:, 0], g_p * yf[edges[:, 1]], minlength=n)
                       + np.bincount(edges[:, 1], g_p * yf[edges[:, 0]], minlength=n))
        gain = (1.0 - 2.0 * yf) * field
        i = int(np.argmax(gain))
        if gain[i] <= 1e-12:
            break
        y[i] ^= 1
    return y, _value(g_u, g_p, edges, y)


def linear_maximiser(g_u, g_p, edges, exact_limit: int = EXACT_LIMIT,
                  strict: bool = False) -> OracleAnswer:
    """The linear maximiser of the marginal polytope: ``argmax_y <g, phi(y)>``.

    Maximises ``sum_i g_u_i y_i + sum_E g_p_ij y_i y_j`` over ``y in {0,1}^N``.

    - every ``g_p >= 0`` (attractive): exact, one graph cut;
    - some ``g_p < 0``: the problem is a submodular maximisation (max-cut
      hard in general). With ``strict`` a :class:`NotSubmodularError` is
      raised; otherwise, for ``N <= exact_limit`` all 2^N labellings are
      enumerated, and beyond that two attractive relaxations are cut (see
      ``VertexMaximiser._relaxed``) and polished by single flips; when their bound
      does not meet their best labelling, a MILP (HiGHS, exact up to its
      1e-10 tolerances) decides. Every answer is then exact.

    Parameters
    ----------
    g_u : array_like of float, shape (N,)
    g_p : array_like of float, shape (E,)
    edges : array_like of int, shape (E, 2)
    exact_limit : int, default 12
    strict : bool, default False

    Returns
    -------
    OracleAnswer
    """
    g_u, g_p, edges = check_theta(g_u, g_p, edges)
    return VertexMaximiser(g_u.size, edges, exact_limit, strict)(g_u, g_p)
