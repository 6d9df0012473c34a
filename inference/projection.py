"""Projection oracles and the Fenchel-Young (projection) loss of a binary pairwise MRF.

Following Blondel, Martins & Niculae (2019, "Learning with Fenchel-Young
losses" / "Structured prediction with projection oracles"), a labelling
``y in {0,1}^N`` of a graph with edges ``E`` (each pair ``i < j`` once, shape
(E, 2)) is encoded by its parts::

    phi(y) = ( y_i  for i in nodes ;  y_i y_j  for (i, j) in E ),   length N + E,

and a model outputs scores ``theta = (theta_u (N,), theta_p (E,))`` of the same
shape. The loss of ``theta`` for the target ``y`` on a closed convex set
``C`` that holds every ``phi(y)`` is::

    L_C(theta; y) = <theta, mu> - ||mu||^2 / 2 + ||phi(y)||^2 / 2 - <phi(y), theta>
                  = ||phi(y) - theta||^2 / 2 - ||mu - theta||^2 / 2,
    mu = proj_C(theta) = argmin_{m in C} ||m - theta||^2,    grad L = mu - phi(y).

Three sets, from the largest (cheapest) to the smallest (tightest):

- the unit cube ``[0,1]^(N+E)`` (:func:`project_cube`, clipping);
- the cube with a weighted foreground budget (:func:`project_budget`): the
  unary part in ``[0,1]^N`` with ``lower <= sum_i a_i mu_i <= upper``, the
  pairwise part in ``[0,1]^E`` (clipped independently; it is not tied to the
  unary part);
- the marginal polytope ``M = conv{phi(y)}`` (:func:`project_marginal`), by
  pairwise Frank-Wolfe whose linear oracle (:func:`linear_oracle`) is the
  graph cut of :mod:`.graphcut`.

A smaller set gives a smaller loss (Blondel et al. 2019, Prop. 2), and all
three are inside the cube, so ``L_M <= L_cube`` and ``L_budget <= L_cube``.

Only numpy, highspy (the MILP oracle) and sibling modules are used (the rule
of ``inference/``).
"""
from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np

from ._mrf import NotSubmodularError, check_labels, check_mrf
from .graphcut import min_cut
from .highs import lp_from_triplets, new_highs, run

__all__ = [
    "Projection",
    "OracleAnswer",
    "FenchelYoungLoss",
    "encode",
    "linear_oracle",
    "project_cube",
    "project_budget",
    "project_marginal",
    "project",
    "projection_loss",
    "round_labels",
    "decode_iou",
    "decode_parts",
]

#: Largest N for which a non-attractive linear oracle call enumerates all 2^N
#: labellings (exact); 2^12 labellings times E edges is about a millisecond.
EXACT_LIMIT = 12


# ---- results ---------------------------------------------------------------------

@dataclass
class Projection:
    """Euclidean projection ``mu = proj_C(theta)`` of MRF scores onto a convex set.

    Attributes
    ----------
    unary : ndarray of float64, shape (N,)
        ``mu_u``, in [0, 1].
    pairwise : ndarray of float64, shape (E,)
        ``mu_p``, in [0, 1].
    gap : float
        Certified bound on ``||mu - theta||^2/2 - min_{m in C} ||m - theta||^2/2``
        (0 for the closed-form projections). Since that objective is
        1-strongly convex, ``||mu - proj_C(theta)|| <= sqrt(2 gap)``.
    status : str
        ``"exact"`` (closed form), ``"converged"`` (Frank-Wolfe gap <= tol),
        ``"max_iter"`` (iteration cap reached first) or ``"stalled"`` (the
        oracle found no improving vertex while its bound left a gap above
        ``tol``, i.e. solver tolerances; ``gap`` is still a valid bound).
    iterations : int
        Frank-Wolfe iterations (0 for closed forms).
    exact_oracle : bool
        Whether every linear-oracle call was exact (graph cut on attractive
        coefficients, or enumeration).
    support : ndarray of uint8, shape (K, N), or None
        Marginal polytope only: labellings whose encodings, weighted by
        ``weights``, sum to ``mu``.
    weights : ndarray of float64, shape (K,), or None
        Convex-combination weights of ``support`` (positive, sum 1).
    """

    unary: np.ndarray
    pairwise: np.ndarray
    gap: float = 0.0
    status: str = "exact"
    iterations: int = 0
    exact_oracle: bool = True
    support: np.ndarray | None = None
    weights: np.ndarray | None = None


@dataclass
class OracleAnswer:
    """Answer of :func:`linear_oracle`: ``argmax_y <g, phi(y)>``.

    Attributes
    ----------
    labels : ndarray of uint8, shape (N,)
        The labelling found.
    value : float
        ``<g, phi(labels)>``.
    bound : float
        An upper bound on ``max_y <g, phi(y)>``; equal to ``value`` when exact.
    exact : bool
        Whether ``labels`` is a proven maximiser.
    """

    labels: np.ndarray
    value: float
    bound: float
    exact: bool


@dataclass
class FenchelYoungLoss:
    """Value and gradient of the projection loss ``L_C(theta; y)``.

    Attributes
    ----------
    value : float
    grad_unary : ndarray of float64, shape (N,)
        ``mu_u - y``.
    grad_pairwise : ndarray of float64, shape (E,)
        ``mu_p - (y_i y_j)_E``.
    projection : Projection
        ``mu = proj_C(theta)``. For the marginal polytope ``mu`` is approximate
        and the true loss lies in ``[value, value + projection.gap]``.
    """

    value: float
    grad_unary: np.ndarray
    grad_pairwise: np.ndarray
    projection: Projection


# ---- encoding and checks ---------------------------------------------------------

def encode(y, edges):
    """The parts ``phi(y)`` of one labelling.

    Parameters
    ----------
    y : array_like, shape (N,)
        Labels in {0, 1}.
    edges : array_like of int, shape (E, 2)

    Returns
    -------
    y_u : ndarray of float64, shape (N,)
        ``y_i``.
    y_p : ndarray of float64, shape (E,)
        ``y_i y_j`` for each edge.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must have shape (N,), got {y.shape}")
    n_edges = np.asarray(edges).reshape(-1, 2).shape[0]
    _, edges, _ = check_mrf(np.zeros(y.size), edges, np.zeros(n_edges))
    y = check_labels(y, y.size).astype(np.float64)
    return y, y[edges[:, 0]] * y[edges[:, 1]]


def _check_theta(theta_u, theta_p, edges):
    """Validated float64 ``theta_u`` (N,), ``theta_p`` (E,) and intp ``edges`` (E, 2)."""
    theta_u, edges, theta_p = check_mrf(theta_u, edges, theta_p)
    return theta_u, theta_p, edges


def _check_weights(a, n):
    """Node weights as float64 (N,), all finite and >= 0; None means 1."""
    a = np.ones(n) if a is None else np.asarray(a, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"node weights a must have shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("node weights a must be finite and >= 0")
    return a


# ---- linear oracle ---------------------------------------------------------------

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


class _Oracle:
    """``argmax_y <g, phi(y)>`` on a fixed graph; see :func:`linear_oracle`.

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
        h = run(h, "the linear oracle's MILP", options=options, retries=({"presolve": "on"},))
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


def linear_oracle(g_u, g_p, edges, exact_limit: int = EXACT_LIMIT,
                  strict: bool = False) -> OracleAnswer:
    """Linear maximisation oracle of the marginal polytope: ``argmax_y <g, phi(y)>``.

    Maximises ``sum_i g_u_i y_i + sum_E g_p_ij y_i y_j`` over ``y in {0,1}^N``.

    - every ``g_p >= 0`` (attractive): exact, one graph cut;
    - some ``g_p < 0``: the problem is a submodular maximisation (max-cut
      hard in general). With ``strict`` a :class:`NotSubmodularError` is
      raised; otherwise, for ``N <= exact_limit`` all 2^N labellings are
      enumerated, and beyond that two attractive relaxations are cut (see
      ``_Oracle._relaxed``) and polished by single flips; when their bound
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
    g_u, g_p, edges = _check_theta(g_u, g_p, edges)
    return _Oracle(g_u.size, edges, exact_limit, strict)(g_u, g_p)


# ---- projections -----------------------------------------------------------------

def project_cube(theta_u, theta_p) -> Projection:
    """Projection onto the unit cube ``[0,1]^(N+E)``: clipping.

    Parameters
    ----------
    theta_u : array_like of float, shape (N,)
    theta_p : array_like of float, shape (E,)

    Returns
    -------
    Projection
        Exact (``gap = 0``).
    """
    theta_u = _finite(theta_u, "theta_u")
    theta_p = _finite(theta_p, "theta_p")
    return Projection(np.clip(theta_u, 0.0, 1.0), np.clip(theta_p, 0.0, 1.0))


def _finite(x, name):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be a finite 1-d array, got shape {x.shape}")
    return x


def project_budget(theta_u, theta_p, upper: float, a=None, lower: float = 0.0) -> Projection:
    """Projection onto the cube with a weighted foreground budget.

    The set is

        C = { (m_u, m_p) in [0,1]^N x [0,1]^E : lower <= sum_i a_i m_u_i <= upper },

    so ``lower == upper`` makes the budget an equality. It holds ``phi(y)`` for
    every labelling whose weighted foreground ``sum_i a_i y_i`` lies in
    ``[lower, upper]`` (and only those among the labellings). The pairwise
    part is not coupled to the unary part, so it is clipped.

    The unary part solves ``min ||m - theta_u||^2/2`` on the box with one
    linear constraint. By the KKT conditions ``m(tau) = clip(theta_u - tau a,
    0, 1)`` for a multiplier ``tau``, and the weighted sum ``s(tau)`` is
    continuous, non-increasing and piecewise linear with breakpoints
    ``theta_i / a_i`` and ``(theta_i - 1) / a_i``. Bisection over the sorted
    breakpoints finds the piece where ``s`` crosses the active bound, and the
    crossing is solved exactly on that linear piece: O(N log N), no
    iterative tolerance.

    Parameters
    ----------
    theta_u : array_like of float, shape (N,)
    theta_p : array_like of float, shape (E,)
    upper : float
        Upper bound on ``sum_i a_i m_i`` (pixels in area mode, superpixels with
        unit weights).
    a : array_like of float, shape (N,), optional
        Node weights ``>= 0``; default 1.
    lower : float, default 0.0
        Lower bound; ``0 <= lower <= upper <= ...`` is not required, only that
        ``[lower, upper]`` meets ``[0, sum_i a_i]``.

    Returns
    -------
    Projection
        Exact (``gap = 0``).

    Raises
    ------
    ValueError
        Empty set (``lower > upper``, ``upper < 0`` or ``lower > sum a``), bad
        shapes or non-finite values.
    """
    theta_u = _finite(theta_u, "theta_u")
    theta_p = _finite(theta_p, "theta_p")
    a = _check_weights(a, theta_u.size)
    lower, upper = float(lower), float(upper)
    total = float(a.sum())
    if not (np.isfinite(lower) and np.isfinite(upper)) or lower > upper \
            or upper < 0 or lower > total:
        raise ValueError(f"the budget set is empty: need lower <= upper, upper >= 0 and "
                         f"lower <= sum(a) = {total:.6g}; got [{lower:.6g}, {upper:.6g}]")
    m = np.clip(theta_u, 0.0, 1.0)
    s = float(a @ m)
    if s > upper:
        m = _clip_to_sum(theta_u, a, upper)
    elif s < lower:
        m = _clip_to_sum(theta_u, a, lower)
    return Projection(m, np.clip(theta_p, 0.0, 1.0))


def _clip_to_sum(theta, a, target):
    """``clip(theta - tau a, 0, 1)`` with the ``tau`` that makes ``a . m = target``.

    ``target`` lies strictly between ``a . clip(theta, 0, 1)`` and the nearer
    extreme (0 or ``sum a``), so a crossing exists.
    """
    free = a > 0
    th, w = theta[free], a[free]
    # s(tau) over the free nodes; nodes with a_i = 0 do not count in the sum.
    def weighted_sum(tau):
        return float(w @ np.clip(th - tau * w, 0.0, 1.0))

    knots = np.unique(np.concatenate([th / w, (th - 1.0) / w]))
    # s(knots) is non-increasing: s(knots[0]) = sum a (all ones), s(knots[-1]) = 0.
    lo, hi = 0, knots.size - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if weighted_sum(knots[mid]) >= target:
            lo = mid
        else:
            hi = mid
    t0, t1 = knots[lo], knots[hi]
    s0, s1 = weighted_sum(t0), weighted_sum(t1)
    # Linear on [t0, t1]: interpolate exactly (flat piece: any point, take t0).
    tau = t0 if s0 == s1 else t0 + (s0 - target) * (t1 - t0) / (s0 - s1)
    m = np.clip(theta, 0.0, 1.0)
    m[free] = np.clip(th - tau * w, 0.0, 1.0)
    return m


def project_marginal(theta_u, theta_p, edges, tol: float = 1e-6, max_iter: int = 5000,
                     exact_limit: int = EXACT_LIMIT, strict: bool = False) -> Projection:
    """Projection onto the marginal polytope ``M = conv{phi(y)}`` by pairwise Frank-Wolfe.

    Minimises ``f(m) = ||m - theta||^2 / 2`` over ``M``, keeping ``m`` as a
    convex combination of labellings (the active set). Each iteration calls
    the linear oracle on the residual ``g = theta - m`` for the Frank-Wolfe
    vertex ``s``, takes the away vertex ``a`` = the active labelling with the
    lowest ``<g, phi>``, and moves weight from ``a`` to ``s`` with the exact
    line search of a quadratic (capped by the weight of ``a``). Pairwise FW
    converges linearly on polytopes (Lacoste-Julien & Jaggi 2015).

    Stopping: the certified Frank-Wolfe gap ``bound(g) - <g, m>``, where
    ``bound(g) >= max_y <g, phi(y)>`` comes from the oracle, bounds
    ``f(m) - min_M f`` (convexity); the loop stops when it is ``<= tol``
    (status ``"converged"``), after ``max_iter`` iterations (``"max_iter"``),
    or when the oracle returns no vertex better than the away vertex
    (``"stalled"``: rounding near the tolerance).

    Cost: each iteration is one graph cut while the residual is attractive;
    otherwise a cut-based relaxation, and a MILP (HiGHS) when its vertex no
    longer helps or the gap must be certified: even small grids with random
    attractive theta and a tight ``tol`` take hundreds of MILPs. The cube and
    budget projections are the ones to train
    with on superpixel-sized graphs; this one is exact, not fast.

    Non-attractive oracle calls: even for ``theta_p >= 0`` the residual's
    pairwise part can be negative (e.g. one edge, ``theta = (1, 1, 0)``
    projects to ``(2/3, 2/3, 1/3)``), so the oracle's rules for negative
    coefficients apply (:func:`linear_oracle`): exact enumeration for
    ``N <= exact_limit``, a certified relaxation bound beyond (the gap stays
    an upper bound on the suboptimality, but may not reach ``tol``), or
    :class:`NotSubmodularError` with ``strict``.

    Parameters
    ----------
    theta_u : array_like of float, shape (N,)
    theta_p : array_like of float, shape (E,)
    edges : array_like of int, shape (E, 2)
    tol : float, default 1e-6
        Absolute tolerance on the gap (units of ``||theta||^2``). The MILP's
        dual bound carries HiGHS's feasibility tolerances (1e-10 here), so a
        tolerance far below 1e-7 may end in ``"stalled"`` on large graphs.
    max_iter : int, default 5000
    exact_limit : int, default 12
    strict : bool, default False

    Returns
    -------
    Projection
        With ``gap``, ``status``, ``iterations``, ``exact_oracle``, and the
        active set in ``support`` / ``weights``.
    """
    theta_u, theta_p, edges = _check_theta(theta_u, theta_p, edges)
    n = theta_u.size
    theta = np.concatenate([theta_u, theta_p])
    oracle = _Oracle(n, edges, exact_limit, strict)

    def parts(y):
        y = y.astype(np.float64)
        return np.concatenate([y, y[edges[:, 0]] * y[edges[:, 1]]])

    # Start at the best vertex for theta itself: already optimal when theta
    # lies in that vertex's normal cone.
    first = oracle(theta_u, theta_p, certify=False)
    labels, verts, w = [first.labels], parts(first.labels)[None, :], np.ones(1)
    keys = {first.labels.tobytes(): 0}
    status, gap, it = "max_iter", np.inf, 0
    for it in range(max_iter + 1):
        m = w @ verts  # recomputed from the active set, so no drift accumulates
        g = theta - m
        answer = oracle(g[:n], g[n:], certify=False)
        if not answer.exact and answer.value - float(g @ m) <= tol:
            # The cheap vertex no longer helps: solve the oracle exactly,
            # which either finds a better vertex or certifies the gap.
            answer = oracle(g[:n], g[n:])
        exact = answer.exact
        gap = max(answer.bound - float(g @ m), 0.0)
        if gap <= tol:
            status = "converged"
            break
        if it == max_iter:
            break
        away = int(np.argmin(verts @ g))
        s = parts(answer.labels)
        d = s - verts[away]
        slope = float(g @ d)
        if slope <= 0.0:  # no descent pair: the oracle's bound exceeds its vertex
            status = "stalled"
            break
        step = min(slope / float(d @ d), w[away])
        k = keys.get(answer.labels.tobytes())
        if k is None:
            k = len(labels)
            keys[answer.labels.tobytes()] = k
            labels.append(answer.labels)
            verts = np.vstack([verts, s])
            w = np.append(w, 0.0)
        w[k] += step
        w[away] -= step
        if w[away] <= 1e-15 * np.max(w):  # a drop step: forget the vertex
            labels, verts, w, keys = _drop(labels, verts, w, away)
    m = w @ verts
    return Projection(m[:n], m[n:], float(gap), status, it, bool(exact),
                      np.array(labels, dtype=np.uint8).reshape(len(labels), n), w / w.sum())


def _drop(labels, verts, w, k):
    """The active set without vertex ``k``."""
    keep = np.arange(w.size) != k
    labels = [y for i, y in enumerate(labels) if i != k]
    return labels, verts[keep], w[keep], {y.tobytes(): i for i, y in enumerate(labels)}


SETS = ("cube", "budget", "marginal")


def project(theta_u, theta_p, edges, kind: str = "marginal", **options) -> Projection:
    """Projection onto one of the three sets by name.

    Parameters
    ----------
    theta_u : array_like of float, shape (N,)
    theta_p : array_like of float, shape (E,)
    edges : array_like of int, shape (E, 2)
        Used by ``"marginal"`` only (checked against ``theta_p`` always).
    kind : {"cube", "budget", "marginal"}
    **options
        Passed on: ``upper``, ``a``, ``lower`` for :func:`project_budget`;
        ``tol``, ``max_iter``, ``exact_limit``, ``strict`` for
        :func:`project_marginal`.

    Returns
    -------
    Projection
    """
    theta_u, theta_p, edges = _check_theta(theta_u, theta_p, edges)
    if kind == "cube":
        return project_cube(theta_u, theta_p, **options)
    if kind == "budget":
        return project_budget(theta_u, theta_p, **options)
    if kind == "marginal":
        return project_marginal(theta_u, theta_p, edges, **options)
    raise ValueError(f"unknown projection set {kind!r}; expected one of {SETS}")


# ---- the loss --------------------------------------------------------------------

def projection_loss(theta_u, theta_p, edges, y, kind: str = "marginal",
                    **options) -> FenchelYoungLoss:
    """Fenchel-Young projection loss ``L_C(theta; y)`` and its gradient ``mu - phi(y)``.

    ``L_C(theta; y) = <theta, mu> - ||mu||^2/2 + ||phi(y)||^2/2 - <phi(y), theta>``
    with ``mu = proj_C(theta)``. Properties (Blondel et al. 2019): convex and
    1-smooth in ``theta``; ``L >= 0`` whenever ``phi(y) in C``, with equality
    exactly when ``mu = phi(y)``, e.g. for ``theta = phi(y)`` or
    ``theta = s (2 phi(y) - 1)`` with ``s >= 1`` (that point lies in the
    cube's normal cone at the vertex ``phi(y)``, hence in the normal cone of
    every smaller set that has ``phi(y)`` as a vertex).

    Parameters
    ----------
    theta_u : array_like of float, shape (N,)
    theta_p : array_like of float, shape (E,)
    edges : array_like of int, shape (E, 2)
    y : array_like, shape (N,)
        Target labelling in {0, 1}.
    kind : {"cube", "budget", "marginal"}
    **options
        As in :func:`project`.

    Returns
    -------
    FenchelYoungLoss

    Raises
    ------
    ValueError
        For ``"budget"``, a target outside the budget (``phi(y)`` not in the
        set, so the loss could be negative).
    """
    theta_u, theta_p, edges = _check_theta(theta_u, theta_p, edges)
    y_u, y_p = encode(check_labels(y, theta_u.size), edges)
    if kind == "budget":
        a = _check_weights(options.get("a"), theta_u.size)
        fg = float(a @ y_u)
        if not options.get("lower", 0.0) <= fg <= options["upper"]:
            raise ValueError(f"the target's foreground {fg:.6g} is outside the budget "
                             f"[{options.get('lower', 0.0)}, {options['upper']}]")
    proj = project(theta_u, theta_p, edges, kind, **options)
    mu_u, mu_p = proj.unary, proj.pairwise
    # ||phi(y) - theta||^2/2 - ||mu - theta||^2/2, the same quantity as the
    # defining formula, written as a difference of squared distances.
    value = 0.5 * (np.sum((y_u - theta_u) ** 2) + np.sum((y_p - theta_p) ** 2)
                   - np.sum((mu_u - theta_u) ** 2) - np.sum((mu_p - theta_p) ** 2))
    return FenchelYoungLoss(float(value), mu_u - y_u, mu_p - y_p, proj)


# ---- decoding --------------------------------------------------------------------

def round_labels(mu_u, threshold: float = 0.5) -> np.ndarray:
    """``y_i = [mu_i >= threshold]``: the Hamming-calibrated decoding of ``mu``.

    Parameters
    ----------
    mu_u : array_like of float, shape (N,)
    threshold : float, default 0.5

    Returns
    -------
    ndarray of uint8, shape (N,)
    """
    return (_finite(mu_u, "mu_u") >= threshold).astype(np.uint8)


def decode_iou(mu_u, a=None) -> np.ndarray:
    """The top-k labelling of ``mu_u`` with the best expected-IoU estimate.

    Reading ``mu_i`` as the probability that node ``i`` is foreground, a
    labelling ``S`` has expected ``TP = sum_S a_i mu_i``, ``FP = sum_S a_i
    (1 - mu_i)`` and ``Np = sum_i a_i mu_i``. IoU is a ratio, not a sum over
    nodes, so the 0.5 threshold (right for Hamming) is not its best decision:
    for a small object it pays to take uncertain nodes, for a large one to
    drop them. Following Nowozin (2014, "Optimal decisions from probabilistic
    models: the intersection-over-union case"), the ratio of expectations
    ``TP / (Np + FP)`` is maximised over the N + 1 labellings that take the k
    most probable nodes (ties in ``mu`` keep index order); k = 0 scores 1
    when ``Np = 0`` (the empty prediction of an empty target is perfect, as in
    docs/design.md) and 0 otherwise.

    Parameters
    ----------
    mu_u : array_like of float, shape (N,)
        Unary part of a projection, in [0, 1].
    a : array_like of float, shape (N,), optional
        Node weights ``>= 0``; default 1.

    Returns
    -------
    ndarray of uint8, shape (N,)
    """
    mu = np.clip(_finite(mu_u, "mu_u"), 0.0, 1.0)
    a = _check_weights(a, mu.size)
    order = np.argsort(-mu, kind="stable")
    tp = np.concatenate([[0.0], np.cumsum(a[order] * mu[order])])
    fp = np.concatenate([[0.0], np.cumsum(a[order] * (1.0 - mu[order]))])
    n_pos = float(a @ mu)
    denom = n_pos + fp
    iou = np.where(denom > 0, tp / np.where(denom > 0, denom, 1.0), 1.0)
    y = np.zeros(mu.size, dtype=np.uint8)
    y[order[:int(np.argmax(iou))]] = 1
    return y


def decode_parts(mu_u, mu_p, edges, exact_limit: int = EXACT_LIMIT,
                 strict: bool = False) -> OracleAnswer:
    """``argmax_y <2 mu - 1, phi(y)>``: the decoding calibrated for errors on parts.

    ``||phi(y) - phi(t)||^2`` counts the nodes and edges that ``y`` gets wrong;
    its expectation when ``mu`` holds the parts' probabilities is
    ``<1 - 2 mu, phi(y)> + const``, so its minimiser maximises
    ``<2 mu - 1, phi(y)>`` (the plain MAP ``argmax <mu, phi(y)>`` would
    predict every node foreground, as ``mu >= 0``). It is exact by one cut
    when every ``mu_ij >= 1/2``; otherwise :func:`linear_oracle`'s rules apply.

    Parameters
    ----------
    mu_u : array_like of float, shape (N,)
    mu_p : array_like of float, shape (E,)
    edges : array_like of int, shape (E, 2)
    exact_limit, strict
        As in :func:`linear_oracle`.

    Returns
    -------
    OracleAnswer
    """
    mu_u, mu_p, edges = _check_theta(mu_u, mu_p, edges)
    return linear_oracle(2.0 * mu_u - 1.0, 2.0 * mu_p - 1.0, edges, exact_limit, strict)
