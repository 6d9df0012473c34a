"""Line search of the 1-slack objective along a segment (OCAS's step).

Along ``w(t) = w_b + t d`` the structural SVM objective is

    f(t) = 1/2 ||w_b + t d||^2 + C H(t) = a/2 t^2 + b t + c0 + C H(t),

with ``a = ||d||^2``, ``b = w_b . d``, ``c0 = 1/2 ||w_b||^2``, and H the
(convex, piecewise linear) hinge. Every oracle call at a point t returns the
labelling whose margin is most violated there; its line ``l - g . w(t)`` is
a lower bound of H everywhere and exact at t. So the lines seen so far give a
lower model of f, minimised here exactly, and the search alternates between
minimising the model and evaluating f at the model's minimiser (Kelley's
method in one dimension, which ends quickly because f is one-dimensional).

Franc & Sonnenburg (OCAS, JMLR 2009) showed that this search between the
best point and the cutting-plane solution, with the next cut placed near the
best point, needs far fewer iterations than plain cutting planes; there the
hinge of a linear SVM allows an exact search, here the oracle provides the
lines.
"""
from __future__ import annotations

import numpy as np


def minimize_model(a: float, b: float, intercepts, slopes, C: float,
                   t_max: float = np.inf) -> tuple[float, float]:
    """Minimise ``a/2 t^2 + b t + C max_k (intercepts_k + slopes_k t)`` on [0, t_max].

    Parameters
    ----------
    a : float, >= 0, the curvature ``||d||^2``.
    b : float, the slope of the quadratic at 0.
    intercepts, slopes : (K,) float arrays, K >= 1, the lines of the hinge.
    C : float, > 0.
    t_max : float, the upper end of the interval (inf allowed when a > 0).

    Returns
    -------
    t : float, a minimiser in [0, t_max].
    value : float, the model's value there (without the constant c0).
    """
    c = np.asarray(intercepts, np.float64).reshape(-1)
    s = np.asarray(slopes, np.float64).reshape(-1)
    if c.size == 0 or c.size != s.size:
        raise ValueError("need one slope per intercept, and at least one line")
    if not np.isfinite(t_max) and a <= 0:
        raise ValueError("an unbounded interval needs a positive curvature")

    def model(t):
        return 0.5 * a * t * t + b * t + C * float(np.max(c + s * t))

    # The upper envelope of the lines changes its active line only where two
    # lines cross; between such points the model is one quadratic, minimised
    # in closed form and clipped to the piece.
    cross = []
    for i in range(c.size):
        ds = s[i] - s[i + 1:]
        ok = ds != 0
        cross.extend(((c[i + 1:][ok] - c[i]) / ds[ok]).tolist())
    points = sorted({0.0, *(x for x in cross if 0.0 < x < t_max)})
    if np.isfinite(t_max):
        points.append(float(t_max))
    best_t, best_v = 0.0, model(0.0)
    edges = points + ([] if np.isfinite(t_max) else [np.inf])
    for lo, hi in zip(edges[:-1], edges[1:]):
        mid = lo + 1.0 if not np.isfinite(hi) else 0.5 * (lo + hi)
        k = int(np.argmax(c + s * mid))        # the line active on this piece
        slope = b + C * s[k]
        t = -slope / a if a > 0 else (lo if slope > 0 else hi)
        for cand in (lo, min(max(t, lo), hi)):
            if np.isfinite(cand):
                v = model(cand)
                if v < best_v:
                    best_t, best_v = float(cand), v
    return best_t, best_v
