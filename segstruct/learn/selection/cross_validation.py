"""Cross-validation of C: folds of the training images and the held-out curve.

The running half of :mod:`segstruct.learn.selection` (which chooses from
the curve, and re-exports every name here): :func:`cross_validate_C` /
:func:`cross_validate_many`, which fit one warm-started estimator per fold
along the grid (extended past its ends while the curve rises there:
:mod:`segstruct.learn.selection.extension`) and pool the held-out counts.
The checks of the grid, the fold count and the data, and the folds dealt by
image (or by group), are :mod:`segstruct.learn.selection.checks`'s,
importable from here too. Numbers in, numbers out.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from segstruct.io.progress import progress_bar

from segstruct.cluster import on_cluster, parallel_map, workers_for
from segstruct.evaluate.scoring import iou
from segstruct.learn.estimators.structured_svm import StructuredSVM
# the checks and the folds: their names stay importable from here
from segstruct.learn.selection.checks import (check_cv_data, check_fold_tol, check_folds,
                                              check_grid, image_strata, make_folds)
from segstruct.learn.selection.extension import (check_extend, insert_C, new_extension,
                                                 next_extension_C)

__all__ = ["DEFAULT_GRID", "DEFAULT_FOLDS", "CrossValidationError", "check_grid",
           "check_folds", "check_cv_data", "image_strata", "make_folds", "cross_validate_C",
           "cross_validate_many", "DEFAULT_FOLD_TOL", "check_fold_tol"]

#: Default grid of C (superpixel units): 6 values from 0.01 to 3, about a factor
#: 3 apart: the grid of the leave-one-data-set-out runs (docs/history/studies-2026-12.md), whose
#: best C on val lay in 0.01-3 on every class.
DEFAULT_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
#: Default number of folds.
DEFAULT_FOLDS = 3
#: Default loosest stopping tolerance of the folds' fits (1-slack cutting
#: planes, C in superpixel units): a fit at C stops at this times C, between
#: the estimator's own tolerance (``TrainingSettings.tol``, which the refit
#: keeps) and this (:func:`_fold_tol_at`). The folds only rank the values of C, and the
#: large C, whose fits take the most iterations, need no tight gap. Compared
#: with 1e-3 for every C on the generated data set of ``segstruct compare``
#: and on the six classes of the four shared data sets, where the rule's form
#: was chosen (docs/training.md, "Choosing C").
DEFAULT_FOLD_TOL = 1e-2
#: What a fold's worker process holds: about this many bytes of its own
#: (numpy, SciPy, HiGHS, OpenCV) plus FOLD_BYTES_FACTOR times the bytes of
#: its graphs' features (the fit's union and potentials of them, the task as
#: received). Both are a line fitted to the workers' peaks on the shared data
#: sets that ``scripts/bench_cv_memory.py`` records (bl1, 2 workers), rounded
#: up.
WORKER_BASE_BYTES = 256 * 2 ** 20
FOLD_BYTES_FACTOR = 3.0


class CrossValidationError(RuntimeError):
    """A fit of the cross-validation failed; the message names the fold and C."""



# --------------------------------------------------------------------------
# The curve


def _percent(v: float):
    """IoU fraction as percent, None where it is undefined (JSON has no NaN)."""
    return None if math.isnan(v) else 100.0 * float(v)


def cross_validate_C(make_estimator: Callable, X: Sequence, Y: Sequence, grid,
                     folds: int = DEFAULT_FOLDS, seed: int = 0,
                     progress: bool = False, n_jobs: int = 1, groups=None,
                     fold_tol: float | None = DEFAULT_FOLD_TOL, extend: int = 0) -> dict:
    """Held-out VOC IoU of every C of ``grid``, pooled over ``folds`` folds.

    Parameters
    ----------
    make_estimator : callable () -> StructuredSVM
        A fresh, unfitted estimator with the method's settings. One is made
        per fold; its ``warm_start`` is switched on and its ``C`` set before
        each fit. The folds' fits get no callbacks: they write no log nor
        checkpoint (those belong to the final model) and show no bar of
        their own.
    X : sequence of n inputs (graphs with ``unary``, ``edges``, ``pairwise``).
    Y : sequence of n label specs, (N_k,) targets or (N_k, 2) [fg, bg] counts
        (pixel counts make the score the pixel-level VOC measure).
    grid : sequence of positive C (sorted here; walked in increasing order).
    folds : int >= 2, at most n.
    seed : int, seeds :func:`make_folds`.
    progress : bool, show a bar over the fits (over the folds when they run
        on workers).
    n_jobs : int, the folds on this many local worker processes (joblib
        convention; -1, every core, gives no more workers than fit in the
        memory available, each holding one fold:
        :func:`segstruct.cluster.workers_for`, with a RuntimeWarning when
        that is fewer); on a Dask cluster
        (:func:`segstruct.cluster.use_scheduler`) the folds go to its
        workers. The results do not depend on where the folds run.
    groups : (n,) labels, optional: images with one label (e.g. the frames
        of one video sequence) stay in one fold (:func:`make_folds`).
    fold_tol : float or None, default :data:`DEFAULT_FOLD_TOL`
        The folds' fits of a 1-slack cutting-plane ``StructuredSVM`` with C
        in superpixel units stop at ``fold_tol`` times C, between the
        estimator's own ``tol`` and ``fold_tol`` (None: at the estimator's
        own): a fold only ranks the values of C. Other learners keep their
        own ``tol``.
    extend : int >= 0, default 0
        While the best pooled IoU is at an end of the grid and rises towards
        it, fit the next C past that end (the grid's own step), warm-started
        from each fold's last fit, at most ``extend`` steps each way
        (:mod:`segstruct.learn.selection.extension`); 0: the grid only.

    Returns
    -------
    dict (JSON-able) with
        ``grid`` : list of the m values of C, increasing;
        ``folds``, ``seed``; ``fold_tol`` : the argument (None or float);
        ``fold_of_image`` : list of n fold indices;
        ``pooled_iou_percent`` : m values (None where undefined), the VOC
        IoU of TP, FP, FN summed over all held-out images of all folds;
        ``pooled_counts`` : m [TP, FP, FN];
        ``fold_iou_percent``, ``fold_counts`` : m x folds values / [TP, FP, FN];
        ``n_iter``, ``converged``, ``fit_seconds`` : m x folds, per fit;
        ``seconds`` : wall-clock time of the whole cross-validation;
        ``problems`` : 1 (:func:`cross_validate_many` runs several at once);
        with ``extend`` > 0, ``extended`` : how far the grid went past its
        ends (:func:`segstruct.learn.selection.extension.new_extension`),
        the extra C being in ``grid`` and every per-C list.

    Raises
    ------
    ValueError
        A bad grid or fold count, or data the folds cannot use
        (:func:`check_cv_data`).
    CrossValidationError
        A fit failed; the message names the fold and C.
    """
    return cross_validate_many([(make_estimator, X, Y, groups)], grid, folds, seed,
                               progress, n_jobs, fold_tol=fold_tol, extend=extend)[0]


def cross_validate_many(problems: Sequence[tuple], grid, folds: int = DEFAULT_FOLDS,
                        seed: int = 0, progress: bool = False, n_jobs: int = 1,
                        on_curve: Callable[[int, dict], None] | None = None,
                        costs: Sequence[float] | None = None,
                        fold_tol: float | None = DEFAULT_FOLD_TOL,
                        extend: int = 0) -> list[dict]:
    """:func:`cross_validate_C` of several problems at once (e.g. every
    (class, method) pair of a comparison).

    Every (problem, fold) is one task, so that the workers stay busy where
    one problem's folds would leave some idle or wait on one another (3
    folds on 16 cores, or on 2: two rounds, the second half empty).

    Parameters
    ----------
    problems : sequence of (make_estimator, X, Y, groups) tuples, each as
        :func:`cross_validate_C`'s arguments of those names (``groups`` may be
        None).
    grid, folds, seed, progress, n_jobs, fold_tol, extend : as
        :func:`cross_validate_C`'s, for every problem (a problem's extension
        fits run in rounds of one C, all problems' folds of a round at once).
    on_curve : callable (index, curve), optional; called with each problem's
        index in ``problems`` and its curve as soon as its folds are done
        (and its grid extended)
        (e.g. to save it, so that an interruption loses only the problems
        still running): in order of ``problems``, or of the dealing below.
    costs : sequence of float, optional, one per problem: an estimate of its
        fits' time, in any unit. On workers the costliest problems' folds are
        dealt first, so that no long fold starts last while the other workers
        idle (longest first); the curves do not depend on the order.

    Returns
    -------
    list of dict, each problem's curve as :func:`cross_validate_C` returns it;
    its ``seconds`` is the wall-clock time from the start of this call until
    the curve was complete, and ``problems`` the number of problems
    cross-validated together (its folds' own fit times are ``fit_seconds``).

    Raises
    ------
    as :func:`cross_validate_C`, before any fit.
    """
    grid = check_grid(grid)
    fold_tol = check_fold_tol(fold_tol)
    extend = check_extend(extend)
    fold_of = []
    for _, _, Y, groups in problems:
        check_cv_data(Y, folds)
        fold_of.append(make_folds(image_strata(Y), folds, seed, groups))
    on_workers = n_jobs != 1 or on_cluster()
    order = _dealing_order(len(problems), costs)
    if not on_workers:       # one fit after another: the order changes nothing
        order = sorted(order)
    tasks = []
    for p in order:          # a problem's folds one after another
        make_estimator, X, Y, _ = problems[p]
        X = [_FoldGraph.of(x) for x in X]
        for k in range(folds):
            train = np.flatnonzero(fold_of[p] != k).tolist()
            held = np.flatnonzero(fold_of[p] == k).tolist()
            tasks.append((make_estimator, [X[i] for i in train], [Y[i] for i in train],
                          [X[i] for i in held], [Y[i] for i in held], grid, k, folds,
                          fold_tol, extend > 0))
    start = time.perf_counter()
    per_fold: list[dict] = []
    curves: list[dict | None] = [None] * len(problems)
    # the problems whose grid is to be extended: each fold's estimator
    rising: dict[int, list] = {}

    def done(task: int, result: dict) -> None:       # results come in task order
        per_fold.append(result)
        if len(per_fold) == folds:
            p = order[task // folds]
            states = [f.pop("state", None) for f in per_fold]
            curve = {"grid": list(grid), "folds": int(folds), "seed": int(seed),
                     "fold_tol": fold_tol, "fold_of_image": fold_of[p].tolist(),
                     **_pooled(per_fold),
                     "seconds": time.perf_counter() - start, "problems": len(problems)}
            if extend:
                curve["extended"] = new_extension(grid, extend)
                if next_extension_C(curve) is not None:
                    rising[p] = states
            curves[p] = curve
            per_fold.clear()
            if on_curve is not None and p not in rising:
                on_curve(p, curve)

    if not on_workers:
        # in this process: a bar over every fit, not only over the folds
        with progress_bar(len(grid) * len(tasks), "cross-validating C", progress,
                          "fit") as bar:
            for k, task in enumerate(tasks):
                done(k, _fold_curve(*task, bar=bar))
    else:
        if not on_cluster():
            # every busy worker holds one fold: with many cores, memory can bound them first
            n_jobs, note = workers_for(n_jobs, _worker_bytes(problems), len(tasks))
            if note:
                warnings.warn(f"cross-validation of C: {note}", RuntimeWarning, stacklevel=2)
        # a fold is a worker's whole share: its fits run no workers of their own
        parallel_map(_fold_curve, [(*task, None, True) for task in tasks], n_jobs,
                     progress, "cross-validating C", unit="fold", on_result=done)
    # the fold's data of each (problem, fold): its task without the estimator
    fold_data = {(order[i // folds], i % folds): task[1:5] for i, task in enumerate(tasks)}
    done_curves: list[dict] = curves      # type: ignore[assignment]  # every one is set
    _extend(done_curves, rising, fold_data, folds, fold_tol, on_workers, n_jobs, progress,
            on_curve, start)
    return done_curves


def _extend(curves: list[dict], rising: dict[int, list], fold_data: dict, folds: int,
            fold_tol: float | None, on_workers: bool, n_jobs: int, progress: bool,
            on_curve: Callable[[int, dict], None] | None, start: float) -> None:
    """Extend the grid of the ``rising`` problems' curves (index -> each
    fold's :class:`_FoldState`) in rounds, one C past an end for every
    problem still rising each round, each fold warm-started from its state;
    ``on_curve`` gets each curve once its extension has ended."""
    while rising:
        steps: dict[int, tuple[str, float]] = {}
        for p in list(rising):
            step = next_extension_C(curves[p])
            if step is not None:
                steps[p] = step
                continue
            del rising[p]
            curves[p]["seconds"] = time.perf_counter() - start
            if on_curve is not None:
                on_curve(p, curves[p])
        tasks = [(state, *fold_data[p, k], (steps[p][1],), k, folds, fold_tol, True)
                 for p, states in rising.items() for k, state in enumerate(states)]
        if not tasks:
            return
        results = (parallel_map(_fold_curve, [(*t, None, True) for t in tasks], n_jobs,
                                progress, "extending the grid of C", unit="fold")
                   if on_workers else [_fold_curve(*t) for t in tasks])
        for n, p in enumerate(list(rising)):
            rows = results[n * folds:(n + 1) * folds]
            rising[p] = [r.pop("state") for r in rows]
            direction, C = steps[p]
            insert_C(curves[p], C, {key: value[0] for key, value in _pooled(rows).items()},
                     direction)


def _worker_bytes(problems: Sequence[tuple]) -> float:
    """The memory of a fold's worker for the largest problem's folds (each
    fold's task holds every image of its problem: the training part and the
    held-out one)."""
    def features(x) -> int:
        return sum(int(np.asarray(getattr(x, name, None)).nbytes)
                   for name in ("unary", "edges", "pairwise"))
    largest = max((sum(features(x) for x in X) + sum(np.asarray(y).nbytes for y in Y)
                   for _, X, Y, _ in problems), default=0)
    return WORKER_BASE_BYTES + FOLD_BYTES_FACTOR * largest


@dataclass(frozen=True, eq=False)    # compared and hashed by identity, as objects are
class _FoldGraph:
    """What a fold's fits read of a graph: a fold is pickled whole to its
    worker, and a ``SuperpixelGraph`` also holds its superpixel map, which
    no fit reads and which can be more than half of the bytes (as on CamVid's
    training graphs), sent with every fold.
    ``image_id`` names the image in the learners' messages."""

    unary: np.ndarray
    edges: np.ndarray
    pairwise: np.ndarray
    image_id: str = "no id"

    @classmethod
    def of(cls, x):
        """``x`` as a ``_FoldGraph``; ``x`` itself when it is no graph."""
        missing = [n for n in ("unary", "edges", "pairwise") if not hasattr(x, n)]
        if missing:      # the learner's own check names the graph and what it lacks
            return x
        return cls(x.unary, x.edges, x.pairwise, str(getattr(x, "image_id", "no id")))


def _dealing_order(n: int, costs: Sequence[float] | None) -> list[int]:
    """The problems' indices, costliest first (ties in the given order);
    ``range(n)`` without costs."""
    if costs is None:
        return list(range(n))
    if len(costs) != n:
        raise ValueError(f"{len(costs)} costs for {n} problems")
    return sorted(range(n), key=lambda p: -float(costs[p]))


def _pooled(per_fold: list[dict]) -> dict:
    """The folds' fits as the curve's per-C lists (m values, or m x folds)."""
    # (folds, m, ...) -> (m, folds, ...)
    counts = np.stack([f["counts"] for f in per_fold], axis=1)
    pooled = counts.sum(axis=1)
    return {
        "pooled_iou_percent": [_percent(iou(*row)) for row in pooled],
        "pooled_counts": pooled.tolist(),
        "fold_iou_percent": [[_percent(iou(*c)) for c in row] for row in counts],
        "fold_counts": counts.tolist(),
        **{key: np.stack([f[name] for f in per_fold], axis=1).tolist()
           for key, name in (("n_iter", "n_iter"), ("converged", "converged"),
                             ("fit_seconds", "seconds"))}}


@dataclass
class _FoldState:
    """A fold's estimator after its last fit, and its own ``tol`` (see
    :func:`_fold_estimator`): what a fit at a C past the grid's end
    warm-starts from."""

    estimator: object
    own_tol: float | None


def _fold_curve(make_estimator, X_train, Y_train, X_held, Y_held, grid, k, folds,
                fold_tol=None, keep=False, bar=None, serial=False) -> dict:
    """One fold: a fit per C of ``grid`` (increasing, each warm-starting the
    next) and the held-out [TP, FP, FN] of each; arrays of length m.
    ``make_estimator`` may be a :class:`_FoldState` (the first fit then
    warm-starts from it); ``keep``: the result's ``state`` is the
    :class:`_FoldState` after the last fit; ``fold_tol``: as
    :func:`cross_validate_C`'s; ``serial``: the fits' inference in this
    process (``n_jobs`` 1)."""
    m = len(grid)
    out: dict[str, Any] = {"counts": np.zeros((m, 3), np.int64),
                           "n_iter": np.zeros(m, np.int64), "converged": np.zeros(m, bool),
                           "seconds": np.zeros(m)}
    est, own = _fold_estimator(make_estimator, fold_tol)
    if serial and "n_jobs" in est.get_params(deep=False):
        est.n_jobs = 1
    for j, c in enumerate(grid):
        if bar is not None:
            bar.set_postfix(fold=k + 1, C=f"{c:g}")
        est.C = c
        if own is not None:
            est.tol = _fold_tol_at(c, fold_tol, own)
        try:
            with warnings.catch_warnings():
                # at a loosened tolerance w = 0 says nothing of the optimum
                if own is not None and est.tol > own:
                    warnings.filterwarnings("ignore", message="the optimum at C=",
                                            category=RuntimeWarning)
                est.fit(X_train, Y_train)
        except (ValueError, RuntimeError) as err:
            start_from = (f"warm-started from C {grid[j - 1]:g}" if j else
                          "warm-started" if isinstance(make_estimator, _FoldState)
                          else "cold start")
            raise CrossValidationError(
                f"cross-validation of C failed on fold {k + 1} of {folds} at C {c:g} "
                f"(training on {len(X_train)} images, {start_from}): {err}") from err
        out["counts"][j] = est.voc_score(X_held, Y_held).totals
        out["n_iter"][j], out["converged"][j] = est.n_iter_, est.converged_
        out["seconds"][j] = est.fit_seconds_
        if bar is not None:
            bar.update()
    if keep:
        out["state"] = _FoldState(est, own)
    return out


def _fold_estimator(make_estimator, fold_tol=None):
    """A fresh estimator for one fold, warm-starting along the grid; and its
    own ``tol`` where its fits' tolerance is to be loosened towards
    ``fold_tol`` (:func:`_fold_tol_at`), else None: only for the learner it
    was chosen for, 1-slack cutting planes with C in superpixel units. A
    :class:`_FoldState` gives its estimator and tolerance back as they were."""
    if isinstance(make_estimator, _FoldState):
        return make_estimator.estimator, make_estimator.own_tol
    est = make_estimator()
    # cutting planes do not depend on C: along the grid every fit on this
    # fold's training part starts from the previous one's working set
    est.warm_start = True
    if (fold_tol is not None and isinstance(est, StructuredSVM)
            and est.solver == "oneslack" and est.C_units == "superpixel"
            and fold_tol > est.tol):
        return est, float(est.tol)
    return est, None


def _fold_tol_at(C: float, fold_tol: float, own: float) -> float:
    """The tolerance of a fold's fit at ``C`` (superpixel units): ``fold_tol``
    times C, between the estimator's own and ``fold_tol``.

    The objective is 1-strongly convex in w, so a gap of C tol bounds
    ||w - w*|| by sqrt(2 C tol), while ||w*|| shrinks with C: at a small C
    a loose gap leaves the weights, and so the labels, unsettled: with
    ``fold_tol`` for every C, bl2's and proposed's folds at the smallest C
    on COCO person found no object at all, where a tighter gap found some.
    The large C, whose fits take the most iterations, get the loose one."""
    return min(fold_tol, max(own, fold_tol * C))
