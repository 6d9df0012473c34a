"""Exact finishing of a small convex QP by a primal active-set method.

    min 1/2 z' H z + c' z   s.t.  z >= 0,   sum_{j in group g} z_j <= cap_g

(H symmetric positive semidefinite; each variable in at most one group). This
is the dual of the working-set QP. HiGHS's QP solver gets near the optimum but
not onto it when constraint vectors are badly scaled (a small relative gap
remains, and without regularisation it can fail), so its answer is the start
and this method finishes it (Nocedal & Wright, Numerical Optimization, 16.5),
with least-squares solves so a singular H is fine.
"""
from __future__ import annotations

import numpy as np


def refine(h, c, groups, caps, z0, max_iter=None, tol=1e-12):
    """Active-set iterations from a feasible start.

    Parameters
    ----------
    h : (n, n) PSD matrix; c : (n,) vector.
    groups : (n,) int, group of each variable, or -1 for none.
    caps : (n_groups,) positive caps.
    z0 : (n,) start; it is first made feasible (clipped and scaled).
    max_iter : iteration cap (default 10 n + 100).
    tol : relative tolerance of the step test (the multiplier test uses 1000 tol).

    Returns
    -------
    z : (n,) feasible point, never worse than the feasible start.
    optimal : bool, whether the KKT conditions held at the end.
    """
    n = c.size
    groups = np.asarray(groups)
    in_group = groups >= 0
    z = np.maximum(np.asarray(z0, np.float64), 0.0)
    sums = np.bincount(groups[in_group], weights=z[in_group], minlength=caps.size)
    shrink = np.minimum(1.0, caps / np.maximum(sums, 1e-300))
    z[in_group] *= shrink[groups[in_group]]
    # Steps are judged against the size of z; multipliers against the size
    # of the gradient's terms (max |H| can be 1e8 while H z and c are O(1)).
    step_eps = tol * max(1.0, np.abs(z).max(initial=0.0))
    # Working set: bounds z_j = 0 held, groups held at their cap.
    at_bound = z <= 0.0
    sums = np.bincount(groups[in_group], weights=z[in_group], minlength=caps.size)
    tight = sums >= caps * (1 - 1e-12)
    max_iter = max_iter or 10 * n + 100
    for _ in range(max_iter):
        grad = h @ z + c
        free = np.flatnonzero(~at_bound)
        rows = np.flatnonzero(tight)
        # Equality-constrained step on the free variables.
        a = (groups[free][None, :] == rows[:, None]).astype(np.float64)
        m = free.size + rows.size
        kkt = np.zeros((m, m))
        kkt[:free.size, :free.size] = h[np.ix_(free, free)]
        kkt[:free.size, free.size:] = a.T
        kkt[free.size:, :free.size] = a
        rhs = np.concatenate([-grad[free], np.zeros(rows.size)])
        sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0] if m else np.zeros(0)
        step = np.zeros(n)
        step[free] = sol[:free.size]
        if np.linalg.norm(kkt @ sol - rhs) > 1e-9 * max(1.0, np.linalg.norm(rhs)):
            # Inconsistent system: a zero-curvature descent direction exists;
            # take the part of -grad in the null space of [H_FF; A].
            basis = np.linalg.svd(np.vstack([h[np.ix_(free, free)], a]))[2]
            rank = np.linalg.matrix_rank(np.vstack([h[np.ix_(free, free)], a]))
            null = basis[rank:]
            direction = -(null.T @ (null @ grad[free]))
            step = np.zeros(n)
            step[free] = direction / max(np.abs(direction).max(), 1e-300) * max(1.0, z.max())
        if np.abs(step).max(initial=0.0) <= step_eps:
            eps = 1e3 * tol * max(1.0, np.abs(c).max(initial=0.0), np.abs(h @ z).max(initial=0.0))
            # Multipliers: lambda_g for held groups, nu_j for held bounds.
            lam = np.zeros(caps.size)
            lam[rows] = sol[free.size:]
            nu = grad + np.where(in_group, lam[np.maximum(groups, 0)], 0.0)
            candidates = [(nu[j], "bound", j) for j in np.flatnonzero(at_bound)]
            candidates += [(lam[g], "group", g) for g in rows]
            worst = min(candidates, default=(0.0, None, None))
            if worst[0] >= -eps:
                return z, True
            if worst[1] == "bound":
                at_bound[worst[2]] = False
            else:
                tight[worst[2]] = False
            continue
        # Ratio test against bounds and caps not in the working set.
        t, block = 1.0, None
        dec = np.flatnonzero((~at_bound) & (step < 0))
        if dec.size:
            ratios = -z[dec] / step[dec]
            k = int(np.argmin(ratios))
            if ratios[k] < t:
                t, block = ratios[k], ("bound", dec[k])
        gstep = np.bincount(groups[in_group], weights=step[in_group], minlength=caps.size)
        sums = np.bincount(groups[in_group], weights=z[in_group], minlength=caps.size)
        for g in np.flatnonzero((~tight) & (gstep > 0)):
            r = (caps[g] - sums[g]) / gstep[g]
            if r < t:
                t, block = r, ("group", g)
        z = np.maximum(z + max(t, 0.0) * step, 0.0)
        if block is not None:
            if block[0] == "bound":
                at_bound[block[1]] = True
                z[block[1]] = 0.0
            else:
                tight[block[1]] = True
    return z, False
