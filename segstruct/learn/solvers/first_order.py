"""Subgradient, stochastic subgradient and block-coordinate Frank-Wolfe learners
for the margin-rescaled structural SVM at the per-image (n-slack) loss scope.

The objective is exactly the one :class:`segstruct.learn.estimators.structured_svm.StructuredSVM`
minimises with ``scope="image"`` (either solver), so the optima are the same:

    F(w) = 1/2 ||w||^2 + (C / n) sum_{i=1..n} H_i(w),    subject to  w_p <= 0,
    H_i(w) = max_y  Delta(t_i, y) + w . Psi(x_i, y) - w . Psi(x_i, t_i)

The hinges are *averaged* over the n images (SVM-struct's C / n per slack;
the paper's Eq. 8 writes ||w||^2 + C xi, so its C = 1 is our C = 0.5), and
the pairwise block w_p is kept <= 0 so that loss-augmented inference stays
submodular (docs/design.md, "The model"). Since y = t_i is a candidate,
H_i >= 0; like the cutting-plane learner, an oracle answer whose hinge is
negative (an approximate oracle) is replaced by y = t_i.

Notation: g_i(y) = Psi(x_i, t_i) - Psi(x_i, y) (D,) and L_i(y) = Delta(t_i, y),
so H_i(w) = max_y L_i(y) - w . g_i(y), and the oracle's answer y_i gives the
subgradient -g_i(y_i) of H_i at w. K = {w : w_p <= 0}, Pi_K clips w_p at 0.

Learners
--------
:func:`subgradient_descent`
    Projected full subgradient descent: F is 1-strongly convex, so the
    lecture's step 1 / (lambda t) (lambda = 1 / C once F is divided by C)
    gives ``w <- Pi_K((1 - 1/t) w + (1/t) (C/n) sum_i g_i)``; the best
    iterate evaluated is kept (the iterates do not decrease F monotonically).
:func:`stochastic_subgradient`
    Projected SGD over images, one oracle call a step, with the step
    2 / (t + 1) and the t-weighted average of Lacoste-Julien, Schmidt & Bach
    (2012), whose expected error is O(1/t) (no log t); ``averaging="uniform"``
    gives the lecture's step 1 / t with the plain average.
:func:`segstruct.learn.solvers.bcfw.bcfw`
    Block-coordinate Frank-Wolfe on the dual (Lacoste-Julien, Jaggi, Schmidt
    & Pletscher, ICML 2013, Algorithm 4), with the bound w_p <= 0 (below),
    stopped by its duality gap.
:func:`structured_perceptron`
    The averaged structured perceptron (Collins 2002), the lectures'
    starting point: the stochastic subgradient step with no loss and no
    regulariser (so C does not matter), each step one MAP by graph cut.
    Not a minimiser of F: a baseline that needs only MAP.

Every learner here works on the problem the cutting-plane learner builds
(:class:`ImageScopeProblem`: the same targets, weights, loss and oracle), is
seeded and deterministic, and returns a :class:`LearnerResult` with a trace
of the objective against oracle calls and wall-clock time.
"""
from __future__ import annotations

import time

import numpy as np

from segstruct.io.threads import thread_limits
from segstruct.inference import maximize

from segstruct.learn.solvers._image_scope import (
    AVERAGING, SAMPLING, ImageScopeProblem, IterateCallback, LearnerResult, TraceCallback,
    check_epochs, image_scope_problem)
# BCFW lives in its own module; its names stay importable from here
from segstruct.learn.solvers.bcfw import bcfw, bcfw_line_search, solve_bcfw

__all__ = ["AVERAGING", "SAMPLING", "ImageScopeProblem", "LearnerResult", "IterateCallback",
           "TraceCallback", "subgradient_descent", "solve_subgradient",
           "stochastic_subgradient", "solve_sgd", "bcfw", "bcfw_line_search", "solve_bcfw",
           "structured_perceptron", "solve_perceptron"]

# ----------------------------------------------------------------------
# projected subgradient descent
def subgradient_descent(X, Y, *, max_epochs: int = 200, callback: IterateCallback | None = None,
                        **settings) -> LearnerResult:
    """Projected full subgradient descent on F, step 1 / t, keeping the best iterate.

    Parameters
    ----------
    X, Y : training inputs and labels, as for ``StructuredSVM.fit``.
    max_epochs : int
        Iterations; each is one pass (n oracle calls) that both evaluates
        F at the current iterate and gives its subgradient.
    callback : ``callback(iteration, w)`` after every update, optional.
    **settings : ``C``, ``loss``, ``kappa``, ``node_weights``, ``pairwise``,
        ``oracle``, as for :class:`StructuredSVM` (see
        :meth:`ImageScopeProblem.from_data`).

    Returns
    -------
    LearnerResult, with ``w`` the best iterate evaluated.
    """
    check_epochs(max_epochs)
    with thread_limits(1, "blas"):
        return solve_subgradient(image_scope_problem(X, Y, settings), int(max_epochs), callback)


def solve_subgradient(problem: ImageScopeProblem, max_epochs: int,
                      callback: IterateCallback | None,
                      on_trace: TraceCallback | None = None) -> LearnerResult:
    """:func:`subgradient_descent` on a set-up problem (``on_trace`` sees every
    trace entry as it is made: the estimator's per-epoch callbacks).

    Parameters
    ----------
    problem : ImageScopeProblem, the examples, loss, oracle and C.
    max_epochs : int >= 1, full subgradient steps at most.
    callback : callable(iteration, w), optional, after every update.
    on_trace : callable(trace), optional, after every evaluation.

    Returns
    -------
    LearnerResult"""
    start = time.perf_counter()
    w = np.zeros(problem.dim)
    best_w, best = w, np.inf
    trace, converged, updates = [], False, 0
    for t in range(1, max_epochs + 1):
        gs, _, hinges = problem.evaluate(w)
        primal = problem.primal(w, hinges)
        if primal < best:
            best_w, best = w, primal
        trace.append({"iteration": updates, "epoch": t, "oracle_calls": t * problem.n,
                      "eval_calls": 0, "primal": primal, "best_primal": best,
                      "seconds": time.perf_counter() - start})
        if on_trace is not None:
            on_trace(trace)
        if converged or t == max_epochs:
            break        # the last pass only evaluates
        # subgradient of F at w: w - C mean_i g_i; F is 1-strongly convex,
        # so the step is 1 / (mu t) with mu = 1
        new_w = problem.project(w - (w - problem.svm_C * gs.mean(axis=0)) / t)
        # Pi_K(w - s / t) = w means -s is in the normal cone of K at w: optimal
        converged = np.array_equal(new_w, w)
        w, updates = new_w, updates + 1
        if callback is not None:
            callback(updates, w)
    return LearnerResult(w=best_w, primal=best, trace=trace, n_iter=updates,
                         converged=converged, seconds=time.perf_counter() - start)


# ----------------------------------------------------------------------
# projected stochastic subgradient descent
def stochastic_subgradient(X, Y, *, max_epochs: int = 50, seed: int = 0,
                           averaging: str = "weighted", eval_every: int = 1,
                           callback: IterateCallback | None = None, **settings) -> LearnerResult:
    """Projected SGD over images with iterate averaging.

    Step t picks an image i uniformly at random, calls its oracle at the
    iterate w_t, and moves along the stochastic subgradient w_t - C g_i of
    F (F = mean_i of 1/2 ||w||^2 + C H_i(w), each 1-strongly convex):
    ``w_{t+1} = Pi_K(w_t - eta_t (w_t - C g_i))``.

    Parameters
    ----------
    X, Y : training inputs and labels, as for ``StructuredSVM.fit``.
    max_epochs : int
        Number of epochs of n steps each.
    seed : int
        Seed of the image sampling; the same seed gives the same w.
    averaging : {"weighted", "uniform", "none"}
        "weighted": eta_t = 2 / (t + 1) and the average of w_1..w_t with
        weights proportional to t (Lacoste-Julien, Schmidt & Bach 2012);
        "uniform": the lecture's eta_t = 1 / t with the plain average;
        "none": eta_t = 1 / t, the last iterate.
    eval_every : int
        Evaluate F at the returned point every this many epochs (n oracle
        calls each, counted as ``eval_calls``), and after the last.
    callback : ``callback(iteration, w)`` after every step (the iterate,
        not the average), optional.
    **settings : as for :func:`subgradient_descent`.

    Returns
    -------
    LearnerResult, with ``w`` the average (or last iterate for "none").
    """
    check_epochs(max_epochs, eval_every)
    if averaging not in AVERAGING:
        raise ValueError(f"unknown averaging {averaging!r}; use one of {AVERAGING}")
    with thread_limits(1, "blas"):
        return solve_sgd(image_scope_problem(X, Y, settings), int(max_epochs),
                         np.random.default_rng(seed), averaging, int(eval_every), callback)


def solve_sgd(problem: ImageScopeProblem, max_epochs: int, rng: np.random.Generator,
              averaging: str, eval_every: int, callback: IterateCallback | None,
              on_trace: TraceCallback | None = None) -> LearnerResult:
    """:func:`stochastic_subgradient` on a set-up problem (``on_trace``: as
    :func:`solve_subgradient`).

    Parameters
    ----------
    problem : ImageScopeProblem, the examples, loss, oracle and C.
    max_epochs : int >= 1, passes over the images at most.
    rng : numpy Generator, the order of the images.
    averaging : {"weighted", "uniform", "none"}, of the iterates returned.
    eval_every : int >= 1, epochs between evaluations of the objective.
    callback : callable(iteration, w), optional, after every update.
    on_trace : callable(trace), optional, after every evaluation.

    Returns
    -------
    LearnerResult"""
    start = time.perf_counter()
    n, C = problem.n, problem.svm_C
    w = np.zeros(problem.dim)
    w_avg = w.copy()
    trace, t, evals, primal = [], 0, 0, np.inf
    for epoch in range(1, max_epochs + 1):
        for i in rng.integers(0, n, size=n):
            t += 1
            # the average is over the points where subgradients are taken
            if averaging == "weighted":
                step, rho = 2.0 / (t + 1), 2.0 / (t + 1)
            else:
                step, rho = 1.0 / t, 1.0 / t
            w_avg += rho * (w - w_avg)
            g, _ = problem.constraint(i, w)
            w = problem.project(w - step * (w - C * g))
            if callback is not None:
                callback(t, w)
        if epoch % eval_every == 0 or epoch == max_epochs:
            point = w if averaging == "none" else w_avg
            primal = problem.primal(point)
            evals += n
            trace.append({"iteration": t, "epoch": epoch, "oracle_calls": t,
                          "eval_calls": evals, "primal": primal,
                          "seconds": time.perf_counter() - start})
            if on_trace is not None:
                on_trace(trace)
    point = w if averaging == "none" else w_avg
    # a convex combination of points of K is in K; clip rounding all the same
    return LearnerResult(w=problem.project(point), primal=primal, trace=trace, n_iter=t,
                         seconds=time.perf_counter() - start)


# ----------------------------------------------------------------------
# the averaged structured perceptron
def structured_perceptron(X, Y, *, max_epochs: int = 50, seed: int = 0,
                          callback: IterateCallback | None = None,
                          **settings) -> LearnerResult:
    """The averaged structured perceptron over images, with w_p <= 0.

    Step t picks the images in a seeded random order, labels image i by MAP
    (``argmax_y w . Psi(x_i, y)``, one graph cut; no loss) and, when that
    labelling differs from the target on a node that counts (a_i > 0),
    moves to ``Pi_K(w + Psi(x_i, t_i) - Psi(x_i, y))``. The average of the
    iterates is returned (Collins 2002: far more stable than the last one).
    It stops after an epoch without a mistake: the iterate then labels every
    training image right and would not change again.

    Parameters
    ----------
    X, Y : training inputs and labels, as for ``StructuredSVM.fit``.
    max_epochs : int, passes over the images at most.
    seed : int, of the image order.
    callback : ``callback(iteration, w)`` after every step, optional.
    **settings : as for :func:`subgradient_descent` (C, loss and oracle are
        not used: the perceptron has neither).

    Returns
    -------
    LearnerResult, with ``w`` the average and ``primal`` its perceptron
    risk ``mean_i max_y w . Psi(x_i, y) - w . Psi(x_i, t_i)`` (>= 0).
    """
    check_epochs(max_epochs)
    with thread_limits(1, "blas"):
        return solve_perceptron(image_scope_problem(X, Y, settings), int(max_epochs),
                                np.random.default_rng(seed), callback)


def _map_step(problem: ImageScopeProblem, i: int, w: np.ndarray) -> tuple[np.ndarray, bool, float]:
    """Image i's perceptron direction Psi(t) - Psi(MAP), whether the MAP is
    a mistake, and the perceptron risk max_y score(y) - score(t) >= 0."""
    x = problem.xs[i]
    u, p = problem.feature_map.potentials(x, w)
    y = maximize(u, x.edges, p)[0]
    g = problem.psi_true[i] - problem.feature_map.joint_feature(x, y)
    counted = problem.ws[i] > 0
    mistake = bool(np.any(y[counted] != problem.ts[i][counted]))
    return g, mistake, max(0.0, -float(g @ w))


def solve_perceptron(problem: ImageScopeProblem, max_epochs: int, rng: np.random.Generator,
                     callback: IterateCallback | None,
                     on_trace: TraceCallback | None = None) -> LearnerResult:
    """:func:`structured_perceptron` on a set-up problem (``on_trace``: as
    :func:`solve_subgradient`).

    Parameters
    ----------
    problem : ImageScopeProblem, the examples (its loss, oracle and C unused).
    max_epochs : int >= 1, passes over the images at most.
    rng : numpy Generator, the order of the images.
    callback : callable(iteration, w), optional, after every step.
    on_trace : callable(trace), optional, after every epoch.

    Returns
    -------
    LearnerResult (``converged``: an epoch without a mistake)."""
    start = time.perf_counter()
    n = problem.n
    w = np.zeros(problem.dim)
    total = np.zeros(problem.dim)        # sum of the iterates: the average's numerator
    trace, t, evals, primal, converged = [], 0, 0, np.inf, False
    for epoch in range(1, max_epochs + 1):
        mistakes = 0
        for i in rng.permutation(n):
            t += 1
            g, mistake, _ = _map_step(problem, i, w)
            if mistake:
                mistakes += 1
                w = problem.project(w + g)
            total += w
            if callback is not None:
                callback(t, w)
        average = total / t
        primal = float(np.mean([_map_step(problem, i, average)[2] for i in range(n)]))
        evals += n
        converged = mistakes == 0
        trace.append({"iteration": t, "epoch": epoch, "oracle_calls": t, "eval_calls": evals,
                      "primal": primal, "mistakes": mistakes,
                      "seconds": time.perf_counter() - start})
        if on_trace is not None:
            on_trace(trace)
        if converged:
            break
    return LearnerResult(w=problem.project(total / max(t, 1)), primal=primal, trace=trace,
                         n_iter=t, converged=converged, seconds=time.perf_counter() - start)
