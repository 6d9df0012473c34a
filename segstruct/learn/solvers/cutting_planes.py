"""The cutting-plane loop of :class:`~segstruct.learn.estimators.structured_svm.StructuredSVM`
(n-slack and 1-slack), with the 1-slack stabilised step (OCAS: Franc &
Sonnenburg, JMLR 2009): it keeps the best point evaluated, searches the
objective on the line from it to the working-set QP's solution, and takes
the next cut near the best point rather than at the QP's solution.

Plain cutting planes jump far from the optimum while the working set is
small: at the data-set scope the constraint vectors sum over thousands of
superpixels while the loss stays in [0, 1], so the first QP solutions
overshoot by orders of magnitude (the objective at the second iteration
far above the optimum), and bl2 and proposed ran out of iterations with
large gaps on real data. Every point evaluated adds its cut to the working
set.

Private to ``segstruct.learn``: the estimator sets the run up
(:class:`~segstruct.learn._problem.LossAugmentedRun`, whose ``estimator`` gives
the solver, ``tol``, ``max_iter`` and ``inactive_limit``) and keeps what the
loop leaves in its state.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from segstruct.inference.losses import Loss, counts, totals
from segstruct.learn._problem import LossAugmentedRun
from segstruct.learn.callbacks import TrainingState
from segstruct.learn.solvers.linesearch import minimize_model
from segstruct.learn.solvers.workers import InferencePool, split_union

# OCAS's cut placement (Franc & Sonnenburg 2009): a tenth of the way from
# the best point towards the QP's solution. The line search evaluates the
# objective at most LINE_SEARCH_CALLS more times: on weizmann_horse_voc
# bl2, more calls saved few iterations and cost many more evaluations, and
# none at all took the most iterations (plain cutting planes stopped far
# from the optimum). Every evaluation's cut joins the working set (one cut
# an iteration took more iterations).
CUT_SHIFT = 0.1
LINE_SEARCH_CALLS = 1


@dataclass
class Point:
    """An evaluation of the objective at weights ``w``.

    ``g`` (D,) and ``loss`` are the mean constraint vector and mean loss of
    the labellings the oracle returned (the 1-slack cut there: the hinge is
    at least ``loss - g . w'`` at every w', with equality at w); ``hinge``
    (n,) the examples' hinges at w, ``primal`` the objective; ``gs`` (n, D)
    and ``losses`` (n,) the per-example cuts (n-slack).
    """

    w: np.ndarray
    g: np.ndarray
    loss: float
    hinge: np.ndarray | None
    primal: float
    gs: np.ndarray | None = None
    losses: np.ndarray | None = None


def cutting_planes(run: LossAugmentedRun, state: TrainingState,
                   pool: InferencePool | None = None):
    """The cutting-plane loop; yields ``state`` after every iteration.

    ``pool`` (default: ``run.oracle`` in this process) calls the oracle
    on the examples.

    It updates ``state`` (and ``run.qp``, ``run.oracle``) in place, and
    reads and writes nothing else: a caller keeps or shows what it
    needs between iterations. It ends when training converged or at
    ``max_iter``.
    """
    # its solver, tol, max_iter and inactive_limit (a StructuredSVM, whose module imports
    # this one)
    est: Any = run.estimator
    feature_map, loss, oracle, qp = run.feature_map, run.loss, run.oracle, run.qp
    # StructuredSVM._training_run sets both
    assert oracle is not None and qp is not None
    xs, ts, ws, psi_true = run.xs, run.ts, run.ws, run.psi_true
    n, dim, nonpositive, C = len(xs), run.dim, run.nonpositive, run.svm_C
    log = state.log
    w, xi, dual, converged = state.w, state.xi, state.dual, state.converged
    # The best point evaluated: weights, objective and its cut (mean g, mean loss).
    best = Point(state.best_w, state.best_g, state.best_l, None, state.best_primal)
    calls = {"n": 0, "seconds": 0.0}
    qp_solved = state.qp_solved
    pool = pool if pool is not None else InferencePool(oracle)

    def evaluate(w) -> Point:
        """The oracle on every example at w: the objective there and its cut."""
        nonlocal best
        t0 = time.perf_counter()
        gs, losses = np.empty((n, dim)), np.empty(n)
        problems = []
        for x, t, a in zip(xs, ts, ws):
            u, p = feature_map.potentials(x, w)
            problems.append((u, x.edges, p, t, a))
        labels, values = infer(pool, problems, loss, run.union_parts)
        for i, x in enumerate(xs):
            gs[i] = psi_true[i] - feature_map.joint_feature(x, labels[i])
            losses[i] = values[i]
        hinge = losses - gs @ w                          # H_i(w)
        # The training labelling is always a candidate (loss 0, margin 0): an
        # approximate oracle's answer that is worse is replaced by it, so every
        # hinge is >= 0 and each cut is exact at w.
        worse = hinge < 0
        gs[worse], losses[worse], hinge[worse] = 0.0, 0.0, 0.0
        point = Point(w, gs.mean(axis=0), float(losses.mean()), hinge,
                       0.5 * w @ w + C * float(hinge.mean()), gs, losses)
        if point.primal < best.primal:
            # keep the weights whose objective is known: when training stops
            # at max_iter, the last QP solution may never have been evaluated
            best = point
        calls["n"] += 1
        calls["seconds"] += time.perf_counter() - t0
        seen.append(point)
        return point

    elapsed = run.seconds
    for iteration in range(state.iteration + 1, est.max_iter + 1):
        if converged:
            break
        calls["n"], calls["seconds"] = 0, 0.0
        seen: list[Point] = []
        dual_before = dual
        at = evaluate(w)
        # evaluate's points have all three
        assert at.hinge is not None and at.gs is not None and at.losses is not None
        entry: dict[str, Any] = {"iteration": iteration, "primal": at.primal}
        if est.solver == "oneslack":
            violation = np.array([at.hinge.mean() - xi[0]])
            step = 1.0
            if qp.n_constraints:
                step = line_search(best, at, evaluate, dual, nonpositive, C, est.tol)
            # Either certifies the best point within C tol of the optimum:
            # the gap to the QP's bound, or (the plain cutting-plane test,
            # which needs no QP precision below C tol) no violation
            # beyond tol at the solution of a QP solved to its tolerance
            # (an unsolved QP's "solution" proves nothing).
            converged = bool(best.primal - dual <= C * est.tol
                             or (violation[0] <= est.tol and qp_solved))
            cuts: list[tuple[np.ndarray, float, int | np.integer]] = []
            if not converged:
                # OCAS: cut near the best point, not at the QP's solution,
                # whose model of the hinge is poorest where it jumped to.
                w_cut = best.w + CUT_SHIFT * (w - best.w)
                if not np.array_equal(w_cut, w):
                    evaluate(w_cut)
                # nearby points often get the same labelling: one cut each
                unique = {(q.g.tobytes(), q.loss): q for q in seen}
                cuts = [(q.g, q.loss, 0) for q in unique.values()]
            entry["step"] = float(step)
        else:
            violation = at.hinge - xi
            violated = np.flatnonzero(violation > est.tol)
            cuts = [(at.gs[i], at.losses[i], i) for i in violated]
            converged = not cuts
        for cut in cuts:
            qp.add(*cut)
        entry.update({
            "best_primal": best.primal, "dual_before": dual_before,
            "max_violation": float(violation.max()),
            # examples whose margin is violated at w, and cuts added
            "n_violated": int(np.count_nonzero(at.hinge > est.tol)),
            "n_added": len(cuts), "oracle_calls": calls["n"],
            "oracle_seconds": calls["seconds"]})
        if converged:
            entry.update({"dual": dual, "gap": best.primal - dual,
                          "n_constraints": qp.n_constraints, "qp_seconds": 0.0,
                          "seconds": elapsed()})
        else:
            sol = qp.solve()
            w, xi, dual = sol.w, sol.xi, sol.dual
            qp_solved = qp.converged(sol)
            removed = qp.prune(est.inactive_limit)
            entry.update({"dual": dual, "gap": best.primal - dual,
                          "n_constraints": qp.n_constraints, "pruned": removed,
                          "qp_gap": sol.primal - sol.dual, "qp_route": qp.last_route,
                          "qp_seconds": sol.seconds, "seconds": elapsed()})
        log.append(entry)
        state.iteration, state.w, state.xi, state.dual = iteration, w, xi, dual
        state.best_w, state.best_g = best.w, best.g
        state.best_l, state.best_primal = best.loss, best.primal
        state.converged, state.qp_solved = converged, qp_solved
        state.seconds = elapsed()
        yield state

def infer(pool: InferencePool, problems: list, loss: Loss,
          union_parts: tuple[list[int], list[int]] | None):
    """Labellings and losses of the oracle on ``problems`` (through ``pool``).

    With ``union_parts`` and workers, the single data-set problem is
    solved as one smaller union per worker: exact for its loss linear in
    (FP, FN).
    """
    if union_parts is None or pool.n_workers == 1:
        results = pool(problems, loss)
        return [r.labels for r in results], [r.loss for r in results]
    (u, edges, p, t, a), = problems
    parts = pool(split_union(u, edges, p, t, a, *union_parts, pool.n_workers), loss)
    labels = np.concatenate([r.labels for r in parts]).astype(np.uint8)
    fp, fn = counts(labels, t, a)
    n_pos, n_neg = totals(t, a)
    return [labels], [float(loss(fp, fn, n_pos, n_neg))]

def line_search(best: Point, at: Point, evaluate, dual: float, nonpositive, C: float,
                tol: float) -> float:
    """Search the objective on ``best.w + t (at.w - best.w)``, t >= 0.

    Both ends are evaluated already; each further call of ``evaluate``
    (which keeps the best point it sees) adds a line to the 1-D model of
    the hinge (``segstruct.learn.solvers.linesearch``). The search stops when the best
    value found is within a tenth of the remaining gap (best objective
    minus ``dual``, the QP's lower bound) or of C tol of the model's
    minimum, which bounds the objective on the whole ray.

    Steps beyond 1 are allowed up to where a weight in ``nonpositive``
    (the pairwise block, kept <= 0 so graph cuts stay exact) would turn
    positive; both ends satisfy that bound, so every step in [0, 1] does.

    Returns the step t of the best point on the ray (0 = no move).
    """
    w0 = best.w
    d = at.w - w0
    a = float(d @ d)
    if a == 0.0:
        return 0.0
    rising = nonpositive[d[nonpositive] > 0]
    t_max = max(1.0, float(np.min(-w0[rising] / d[rising]))) if rising.size else np.inf
    b, c0 = float(w0 @ d), 0.5 * float(w0 @ w0)
    points = {0.0: best, 1.0: at}
    for _ in range(LINE_SEARCH_CALLS):
        cs = [p.loss - p.g @ w0 for p in points.values()]
        ss = [-(p.g @ d) for p in points.values()]
        t, model = minimize_model(a, b, cs, ss, C, t_max)
        lower = c0 + model
        t_best = min(points, key=lambda k: points[k].primal)
        enough = 0.1 * max(best.primal - dual, C * tol)
        if t in points or points[t_best].primal - lower <= enough:
            break
        w_t = w0 + t * d
        # at t_max rounding can leave +1e-18 where the bound is 0
        w_t[nonpositive] = np.minimum(w_t[nonpositive], 0.0)
        points[t] = evaluate(w_t)
    return min(points, key=lambda k: points[k].primal)
