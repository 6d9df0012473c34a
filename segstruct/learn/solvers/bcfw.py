"""Block-coordinate Frank-Wolfe for the margin-rescaled structural SVM at the
per-image loss scope (Lacoste-Julien, Jaggi, Schmidt & Pletscher, ICML 2013,
Algorithm 4), with the bound w_p <= 0; the objective, notation and problem
are those of :mod:`segstruct.learn.solvers.first_order`.

BCFW with the constraint w_p <= 0
---------------------------------
Write the dual variables alpha_i as distributions over the labellings of
image i, and v(alpha) = (C/n) sum_{i,y} alpha_iy g_i(y) (the textbook's
A alpha), b . alpha = (C/n) sum_{i,y} alpha_iy L_i(y). The Lagrangian is
1/2 ||w||^2 - w . v + b . alpha, minimised over w in K (not over all of R^D)::

    min_{w in K} 1/2 ||w - v||^2 - 1/2 ||v||^2   at  w = Pi_K(v),

and since K is a closed convex cone, v = Pi_K(v) + Pi_{K polar}(v) with the
two parts orthogonal (Moreau), so the dual is

    D(alpha) = b . alpha - 1/2 ||Pi_K(v(alpha))||^2.

It is concave and smooth: grad_v 1/2 ||Pi_K v||^2 = Pi_K v, which is
1-Lipschitz (Pi_K is non-expansive), so BCFW's curvature constants are no
larger than without the bound and its O(1/k) guarantee carries over. The
gradient with respect to alpha_iy is (C/n) (L_i(y) - w . g_i(y)) at
w = Pi_K(v): the block linear oracle is loss-augmented inference at w, and
w has w_p <= 0, so the graph cut stays exact. The duality gap is

    gap = F(w) - D(alpha) = ||w||^2 + (C/n) sum_i H_i(w) - b . alpha,

which equals the Frank-Wolfe gap (C/n) sum_i H_i(w) - b . alpha + w . v
because w . v = ||Pi_K v||^2 (orthogonality). It bounds F(w) - F* when the
oracle is exact (with an approximate one it is only an estimate).

As in Algorithm 4, each block keeps its share v_i = (C/n) sum_y alpha_iy g_i(y)
and l_i = (C/n) sum_y alpha_iy L_i(y) (the paper's w_i, l_i); they start at the
vertex y = t_i (v_i = 0, l_i = 0). A step for block i moves (v_i, l_i) towards
(s, l_s) = (C/n) (g_i(y_i), L_i(y_i)) by gamma in [0, 1]; with d = s - v_i
and e = l_s - l_i the dual along the step is

    phi(gamma) = const + gamma e - 1/2 ||Pi_K(v + gamma d)||^2,
    phi'(gamma) = e - Pi_K(v + gamma d) . d.

phi is a concave piecewise quadratic: a unary coordinate always contributes
-1/2 (v_j + gamma d_j)^2, a pairwise one -1/2 min(v_j + gamma d_j, 0)^2, which
changes form only where v_j + gamma d_j crosses 0, at gamma_j = -v_j / d_j.
phi' is continuous, piecewise linear and non-increasing. The exact line
search (:func:`bcfw_line_search`) returns 0 when phi'(0) <= 0, 1 when
phi'(1) >= 0, and otherwise bisects over the sorted breakpoints in (0, 1)
for the segment where phi' changes sign; on it the set S of coordinates in
the quadratic part is fixed and

    gamma = (e - v_S . d_S) / ||d_S||^2,

which without pairwise breakpoints (or without the bound) is the textbook
step (lambda (w_i - w_s) . w - l_i + l_s) / (lambda ||w_i - w_s||^2).
"""
from __future__ import annotations

import time

import numpy as np

from segstruct.io.threads import thread_limits
from segstruct.learn.solvers._image_scope import (
    SAMPLING, ImageScopeProblem, IterateCallback, LearnerResult, TraceCallback, check_epochs,
    image_scope_problem)


# ----------------------------------------------------------------------
# block-coordinate Frank-Wolfe
def bcfw_line_search(v: np.ndarray, d: np.ndarray, e: float, nonpositive) -> float:
    """Exact line search of BCFW with the bound w_p <= 0.

    Maximises over gamma in [0, 1] the concave piecewise quadratic

        phi(gamma) = gamma e - 1/2 ||Pi_K(v + gamma d)||^2

    (see the module docstring). phi'(gamma) = e - Pi_K(v + gamma d) . d is
    non-increasing and linear between the points where a bounded coordinate
    v_j + gamma d_j crosses 0; the segment where it changes sign is found by
    bisection over those points, and the root solved for on it.

    Parameters
    ----------
    v : (D,) the dual's weights A alpha before the step (not projected).
    d : (D,) the step's direction s - v_i.
    e : float, the change of the linear term, l_s - l_i.
    nonpositive : (P,) int, the coordinates of K's bound.

    Returns
    -------
    float in [0, 1].
    """
    nonpositive = np.asarray(nonpositive, np.int64)

    def slope(gamma: float) -> float:
        z = v + gamma * d
        z[nonpositive] = np.minimum(z[nonpositive], 0.0)
        return e - float(z @ d)

    if slope(0.0) <= 0.0:
        return 0.0
    if slope(1.0) >= 0.0:
        return 1.0
    vp, dp = v[nonpositive], d[nonpositive]
    moving = dp != 0
    kinks = -vp[moving] / dp[moving]
    knots = np.unique(np.concatenate([[0.0], kinks[(kinks > 0) & (kinks < 1)], [1.0]]))
    lo, hi = 0, knots.size - 1              # slope(knots[lo]) > 0 >= slope(knots[hi])
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if slope(knots[mid]) > 0.0:
            lo = mid
        else:
            hi = mid
    a, b = knots[lo], knots[hi]
    # coordinates in the quadratic part of phi on (a, b): all unbounded ones,
    # and the bounded ones that are negative there
    quadratic = np.ones(v.size, bool)
    middle = v[nonpositive] + 0.5 * (a + b) * d[nonpositive]
    quadratic[nonpositive] = middle < 0.0
    ds = d[quadratic]
    curvature = float(ds @ ds)
    if curvature <= 0.0:          # cannot happen but for rounding: phi' fell on (a, b)
        return float(b)
    return float(np.clip((e - float(v[quadratic] @ ds)) / curvature, a, b))


def bcfw(X, Y, *, max_epochs: int = 1000, tol: float = 1e-3, seed: int = 0,
         sampling: str = "uniform", eval_every: int = 1,
         callback: IterateCallback | None = None, **settings) -> LearnerResult:
    """Block-coordinate Frank-Wolfe on the SSVM dual, with w_p <= 0.

    Algorithm 4 of Lacoste-Julien et al. (2013) with the primal-dual map
    w = Pi_K(v) and the piecewise-quadratic exact line search of
    :func:`bcfw_line_search` (module docstring). Stops when the duality gap
    is at most ``C tol``.

    Parameters
    ----------
    X, Y : training inputs and labels, as for ``StructuredSVM.fit``.
    max_epochs : int
        Epochs of n block steps each.
    tol : float
        In loss units, as ``StructuredSVM``'s: stop when F(w) - D(alpha),
        which bounds F(w) - F* for an exact oracle, is <= C tol.
    seed : int
        Seed of the block sampling; the same seed gives the same w.
    sampling : {"uniform", "permutation"}
        Blocks drawn uniformly with replacement (the paper's analysis) or
        a fresh random permutation each epoch.
    eval_every : int
        Compute the primal, dual and gap every this many epochs (n oracle
        calls each, counted as ``eval_calls``), and after the last.
    callback : ``callback(iteration, w)`` after every block step, optional.
    **settings : as for :func:`subgradient_descent`.

    Returns
    -------
    LearnerResult, with ``w`` = Pi_K(v) at the end and its ``gap`` and ``dual``.
    """
    check_epochs(max_epochs, eval_every)
    if sampling not in SAMPLING:
        raise ValueError(f"unknown sampling {sampling!r}; use one of {SAMPLING}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    with thread_limits(1, "blas"):
        return solve_bcfw(image_scope_problem(X, Y, settings), int(max_epochs), float(tol),
                          np.random.default_rng(seed), sampling, int(eval_every), callback)


def solve_bcfw(problem: ImageScopeProblem, max_epochs: int, tol: float,
               rng: np.random.Generator, sampling: str, eval_every: int,
               callback: IterateCallback | None,
               on_trace: TraceCallback | None = None) -> LearnerResult:
    """:func:`bcfw` on a set-up problem (``on_trace``: as :func:`solve_subgradient`).

    Parameters
    ----------
    problem : ImageScopeProblem, the examples, loss, oracle and C.
    max_epochs : int >= 1, passes over the images at most.
    tol : float > 0, stop when the duality gap is at most C tol.
    rng : numpy Generator, the order of the blocks.
    sampling : {"uniform", "permutation"}, how the blocks are drawn.
    eval_every : int >= 1, epochs between evaluations of the objective.
    callback : callable(iteration, w), optional, after every update.
    on_trace : callable(trace), optional, after every evaluation.

    Returns
    -------
    LearnerResult"""
    start = time.perf_counter()
    n, scale = problem.n, problem.svm_C / problem.n
    # each block starts at the vertex y = t_i: v_i = 0, l_i = 0
    v_blocks, l_blocks = np.zeros((n, problem.dim)), np.zeros(n)
    v, l_sum = np.zeros(problem.dim), 0.0
    w = problem.project(v)
    trace, k, evals = [], 0, 0
    primal = gap = dual = np.inf
    converged = False
    for epoch in range(1, max_epochs + 1):
        blocks = rng.permutation(n) if sampling == "permutation" else rng.integers(0, n, size=n)
        for i in blocks:
            g, loss = problem.constraint(i, w)
            d = scale * g - v_blocks[i]
            e = scale * loss - l_blocks[i]
            gamma = bcfw_line_search(v, d, e, problem.nonpositive)
            v_blocks[i] += gamma * d
            l_blocks[i] += gamma * e
            v += gamma * d
            l_sum += gamma * e
            w = problem.project(v)
            k += 1
            if callback is not None:
                callback(k, w)
        # rebuild the sums from the blocks so rounding does not drift
        v, l_sum = v_blocks.sum(axis=0), float(l_blocks.sum())
        w = problem.project(v)
        if epoch % eval_every == 0 or epoch == max_epochs:
            primal = problem.primal(w)
            evals += n
            dual = l_sum - 0.5 * float(w @ w)
            gap = primal - dual
            trace.append({"iteration": k, "epoch": epoch, "oracle_calls": k,
                          "eval_calls": evals, "primal": primal, "dual": dual, "gap": gap,
                          "seconds": time.perf_counter() - start})
            if on_trace is not None:
                on_trace(trace)
            if gap <= problem.svm_C * tol:
                converged = True
                break
    return LearnerResult(w=w, primal=primal, trace=trace, n_iter=k, converged=converged,
                         gap=gap, dual=dual, seconds=time.perf_counter() - start)
