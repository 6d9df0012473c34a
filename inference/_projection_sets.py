"""Euclidean projections onto the three convex sets: the cube, the cube
with a foreground budget, and the marginal polytope (pairwise Frank-Wolfe)."""
from __future__ import annotations

import numpy as np

from ._projection_vertex import EXACT_LIMIT, VertexMaximiser
from ._projection_types import Projection, check_theta, check_weights


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
    theta_u = finite(theta_u, "theta_u")
    theta_p = finite(theta_p, "theta_p")
    return Projection(np.clip(theta_u, 0.0, 1.0), np.clip(theta_p, 0.0, 1.0))


def finite(x, name):
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
    theta_u = finite(theta_u, "theta_u")
    theta_p = finite(theta_p, "theta_p")
    a = check_weights(a, theta_u.size)
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
    the linear maximiser on the residual ``g = theta - m`` for the Frank-Wolfe
    vertex ``s``, takes the away vertex ``a`` = the active labelling with the
    lowest ``<g, phi>``, and moves weight from ``a`` to ``s`` with the exact
    line search of a quadratic (capped by the weight of ``a``). Pairwise FW
    converges linearly on polytopes (Lacoste-Julien & Jaggi 2015).

    Stopping: the certified Frank-Wolfe gap ``bound(g) - <g, m>``, where
    ``bound(g) >= max_y <g, phi(y)>`` comes from the maximiser, bounds
    ``f(m) - min_M f`` (convexity); the loop stops when it is ``<= tol``
    (status ``"converged"``), after ``max_iter`` iterations (``"max_iter"``),
    or when the maximiser returns no vertex better than the away vertex
    (``"stalled"``: rounding near the tolerance).

    Cost: each iteration is one graph cut while the residual is attractive;
    otherwise a cut-based relaxation, and a MILP (HiGHS) when its vertex no
    longer helps or the gap must be certified: even small grids with random
    attractive theta and a tight ``tol`` take hundreds of MILPs. The cube and
    budget projections are the ones to train
    with on superpixel-sized graphs; this one is exact, not fast.

    Non-attractive maximiser calls: even for ``theta_p >= 0`` the residual's
    pairwise part can be negative (e.g. one edge, ``theta = (1, 1, 0)``
    projects to ``(2/3, 2/3, 1/3)``), so the maximiser's rules for negative
    coefficients apply (:func:`linear_maximiser`): exact enumeration for
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
        With ``gap``, ``status``, ``iterations``, ``exact_maximiser``, and the
        active set in ``support`` / ``weights``.
    """
    theta_u, theta_p, edges = check_theta(theta_u, theta_p, edges)
    n = theta_u.size
    theta = np.concatenate([theta_u, theta_p])
    maximiser = VertexMaximiser(n, edges, exact_limit, strict)

    def parts(y):
        y = y.astype(np.float64)
        return np.concatenate([y, y[edges[:, 0]] * y[edges[:, 1]]])

    # Start at the best vertex for theta itself: already optimal when theta
    # lies in that vertex's normal cone.
    first = maximiser(theta_u, theta_p, certify=False)
    labels, verts, w = [first.labels], parts(first.labels)[None, :], np.ones(1)
    keys = {first.labels.tobytes(): 0}
    status, gap, it = "max_iter", np.inf, 0
    for it in range(max_iter + 1):
        m = w @ verts  # recomputed from the active set, so no drift accumulates
        g = theta - m
        answer = maximiser(g[:n], g[n:], certify=False)
        if not answer.exact and answer.value - float(g @ m) <= tol:
            # The cheap vertex no longer helps: solve the maximiser exactly,
            # which either finds a better vertex or certifies the gap.
            answer = maximiser(g[:n], g[n:])
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
        if slope <= 0.0:  # no descent pair: the maximiser's bound exceeds its vertex
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
    theta_u, theta_p, edges = check_theta(theta_u, theta_p, edges)
    if kind == "cube":
        return project_cube(theta_u, theta_p, **options)
    if kind == "budget":
        return project_budget(theta_u, theta_p, **options)
    if kind == "marginal":
        return project_marginal(theta_u, theta_p, edges, **options)
    raise ValueError(f"unknown projection set {kind!r}; expected one of {SETS}")
