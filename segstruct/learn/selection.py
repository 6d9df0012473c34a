"""Choosing C by k-fold cross-validation on the training split ("fair C").

The paper trains every method at one C (its C = 1, our 0.5). A method whose
loss or scope wants another C then loses for a reason that has nothing to
do with the method. ``--C auto`` gives each (method, class) the C that
cross-validation on the *training* split prefers, so no evaluation image is
ever seen:

1. :func:`make_folds` splits the training images into k folds, by image,
   seeded, with the images that show the class dealt out first so that
   they spread over the folds.
2. :func:`cross_validate_C` trains, for every fold, one warm-started
   estimator along the grid of C in increasing order on the other folds
   (cutting planes do not depend on C, so each fit starts from the
   previous one's), and scores it on the held-out fold.
3. The score of a C is the VOC IoU of TP, FP and FN pooled over every
   held-out image of every fold (:class:`segstruct.evaluate.scoring.VOCScore`); per
   fold IoU is recorded beside it. :func:`choose_C` takes the best pooled
   IoU, ties to the smaller C (the stronger regulariser).
4. The caller refits on the whole training split at that C; that model is
   the one saved (:func:`select_C` returns the C and the curve). A refit
   that scores IoU 0 on its own training split is refused and the next C
   by held-out IoU refitted (:func:`next_C_after_refit`;
   :func:`segstruct.workflow.refit_chosen_C` runs that loop).

Everything here is numbers in, numbers out: the curve is a JSON-able dict
that ``train`` stores in the model file, ``compare`` in results.json, and
:func:`segstruct.report.figures.cv_figure` draws.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import numpy as np
from segstruct.io.progress import progress_bar

from segstruct.cluster import on_cluster, parallel_map
from segstruct.datasets.folds import group_folds
from segstruct.datasets.folds import make_folds as deal_folds
from segstruct.evaluate.scoring import iou
from segstruct.io.text import fmt
from segstruct.learn._params import POSITIVE, check_param
from segstruct.learn.ssvm import label_counts

#: Default grid of C (superpixel units): 6 values from 0.01 to 3, about a factor
#: 3 apart: the grid of the leave-one-data-set-out runs (results/lodo), whose
#: best C on val lay in 0.01-3 on every class.
DEFAULT_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
#: Default number of folds.
DEFAULT_FOLDS = 3

__all__ = ["DEFAULT_GRID", "DEFAULT_FOLDS", "CrossValidationError", "check_grid",
           "check_folds", "check_cv_data", "image_strata", "make_folds", "cross_validate_C",
           "preference_order", "choose_C", "next_C_after_refit", "edge_warning", "select_C",
           "format_curve"]


class CrossValidationError(RuntimeError):
    """A fit of the cross-validation failed; the message names the fold and C."""


# --------------------------------------------------------------------------
# Checks


def check_grid(grid) -> tuple[float, ...]:
    """The grid of C as increasing floats, or a ValueError saying what is wrong.

    Parameters
    ----------
    grid : sequence of float, length >= 2
        Candidate values of C; each positive and finite, none twice.

    Returns
    -------
    tuple of float, sorted increasingly (the order warm starts walk it).
    """
    values = [float(c) for c in grid]
    for c in values:
        check_param("every C of the grid", c, [POSITIVE])
    if len(values) < 2:
        raise ValueError(f"the grid of C needs at least 2 values to choose from, got "
                         f"{len(values)}; give a fixed --C instead")
    if len(set(values)) < len(values):
        raise ValueError(f"a C is given twice in the grid {' '.join(f'{c:g}' for c in values)}")
    return tuple(sorted(values))


def check_folds(n_folds: int, n_images: int | None = None) -> int:
    """``n_folds`` if it is an integer >= 2 and at most ``n_images``, else ValueError.

    Parameters
    ----------
    n_folds : int, the folds asked for.
    n_images : int, optional, the training images to deal out.

    Returns
    -------
    int
    """
    if int(n_folds) != n_folds or n_folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {n_folds}")
    if n_images is not None and n_images < n_folds:
        raise ValueError(f"{n_images} training image(s) is fewer than the {n_folds} folds: "
                         "every fold needs at least one image; give fewer --folds or "
                         "a fixed --C")
    return int(n_folds)


def image_strata(Y) -> np.ndarray:
    """How much of the class each training image shows, for dealing out folds.

    Parameters
    ----------
    Y : sequence of label specs, (N_k,) targets or (N_k, 2) [fg, bg] pixel counts.

    Returns
    -------
    (n_images,) int array: 2 = the class is the majority of some superpixel
    (the image teaches it), 1 = it has class pixels only, 0 = none.
    """
    out = np.zeros(len(Y), np.int64)
    for k, y in enumerate(Y):
        fg, bg = label_counts(y)
        out[k] = 2 if np.any(fg > bg) else 1 if np.any(fg > 0) else 0
    return out


def check_cv_data(Y, n_folds: int) -> None:
    """Refuse training data that k-fold cross-validation cannot use.

    Every fold trains on the other folds, which must show the class in some
    superpixel (BL1's kappa and any learning need foreground): the class
    must teach in at least 2 images. Raises ValueError otherwise, or when
    there are fewer images than folds.

    Parameters
    ----------
    Y : sequence of n label specs, (N_k,) targets or (N_k, 2) [fg, bg] counts.
    n_folds : int, the folds asked for.
    """
    check_folds(n_folds, len(Y))
    teaching = int(np.count_nonzero(image_strata(Y) == 2))
    if teaching < 2:
        raise ValueError(
            f"the class is the majority of some superpixel in {teaching} of the {len(Y)} "
            "training images: cross-validation needs at least 2, so that every fold's "
            "training part shows it; give a fixed --C")


# --------------------------------------------------------------------------
# Folds


def make_folds(strata, n_folds: int, seed: int, groups=None) -> np.ndarray:
    """:func:`segstruct.datasets.folds.make_folds`, after :func:`check_folds`
    (whose messages name the command-line options); with ``groups`` (one
    label per image), :func:`segstruct.datasets.folds.group_folds`: each
    group's images in one fold.

    Parameters
    ----------
    strata : (n,) int array, :func:`image_strata` (dealt first: the higher).
    n_folds : int >= 2.
    seed : int.
    groups : (n,) labels, optional.

    Returns
    -------
    (n,) int64 array of fold indices in 0 .. n_folds - 1.
    """
    check_folds(n_folds, len(strata))
    if groups is not None:
        if len(groups) != len(strata):
            raise ValueError(f"{len(groups)} group labels for {len(strata)} images")
        return group_folds(groups, n_folds, seed)
    return deal_folds(strata, n_folds, seed)


# --------------------------------------------------------------------------
# The curve


def _percent(v: float):
    """IoU fraction as percent, None where it is undefined (JSON has no NaN)."""
    return None if math.isnan(v) else 100.0 * float(v)


def cross_validate_C(make_estimator: Callable, X: Sequence, Y: Sequence, grid,
                     folds: int = DEFAULT_FOLDS, seed: int = 0,
                     progress: bool = False, n_jobs: int = 1, groups=None) -> dict:
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
        convention); on a Dask cluster (:func:`segstruct.cluster.use_scheduler`)
        the folds go to its workers. The results do not depend on where the
        folds run.
    groups : (n,) labels, optional: images with one label (e.g. the frames
        of one video sequence) stay in one fold (:func:`make_folds`).

    Returns
    -------
    dict (JSON-able) with
        ``grid`` : list of the m values of C, increasing;
        ``folds``, ``seed``; ``fold_of_image`` : list of n fold indices;
        ``pooled_iou_percent`` : m values (None where undefined), the VOC
        IoU of TP, FP, FN summed over all held-out images of all folds;
        ``pooled_counts`` : m [TP, FP, FN];
        ``fold_iou_percent``, ``fold_counts`` : m x folds values / [TP, FP, FN];
        ``n_iter``, ``converged``, ``fit_seconds`` : m x folds, per fit;
        ``seconds`` : wall-clock time of the whole cross-validation.

    Raises
    ------
    ValueError
        A bad grid or fold count, or data the folds cannot use
        (:func:`check_cv_data`).
    CrossValidationError
        A fit failed; the message names the fold and C.
    """
    grid = check_grid(grid)
    check_cv_data(Y, folds)
    fold_of = make_folds(image_strata(Y), folds, seed, groups)
    start = time.perf_counter()
    # the folds are independent: each is one task (a worker process, or a
    # cluster's worker under segstruct.cluster.use_scheduler)
    tasks = []
    for k in range(folds):
        train, held = np.flatnonzero(fold_of != k), np.flatnonzero(fold_of == k)
        tasks.append((make_estimator, [X[i] for i in train.tolist()],
                      [Y[i] for i in train.tolist()], [X[i] for i in held.tolist()],
                      [Y[i] for i in held.tolist()], grid, k, folds))
    if n_jobs == 1 and not on_cluster():
        # in this process: a bar over every fit, not only over the folds
        with progress_bar(len(grid) * folds, "cross-validating C", progress, "fit") as bar:
            per_fold = [_fold_curve(*task, bar=bar) for task in tasks]
    else:
        # a fold is a worker's whole share: its fits run no workers of their own
        per_fold = parallel_map(_fold_curve, [(*task, None, True) for task in tasks], n_jobs,
                                progress, "cross-validating C", unit="fold")
    return {"grid": list(grid), "folds": int(folds), "seed": int(seed),
            "fold_of_image": fold_of.tolist(), **_pooled(per_fold),
            "seconds": time.perf_counter() - start}


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


def _fold_curve(make_estimator, X_train, Y_train, X_held, Y_held, grid, k, folds,
                bar=None, serial=False) -> dict:
    """One fold: a fit per C of ``grid`` (increasing, each warm-starting the
    next) and the held-out [TP, FP, FN] of each; arrays of length m.
    ``serial``: the fits' inference in this process (``n_jobs`` 1)."""
    m = len(grid)
    out = {"counts": np.zeros((m, 3), np.int64), "n_iter": np.zeros(m, np.int64),
           "converged": np.zeros(m, bool), "seconds": np.zeros(m)}
    est = _fold_estimator(make_estimator)
    if serial and "n_jobs" in est.get_params(deep=False):
        est.n_jobs = 1
    for j, c in enumerate(grid):
        if bar is not None:
            bar.set_postfix(fold=k + 1, C=f"{c:g}")
        est.C = c
        try:
            est.fit(X_train, Y_train)
        except (ValueError, RuntimeError) as err:
            start_from = f"warm-started from C {grid[j - 1]:g}" if j else "cold start"
            raise CrossValidationError(
                f"cross-validation of C failed on fold {k + 1} of {folds} at C {c:g} "
                f"(training on {len(X_train)} images, {start_from}): {err}") from err
        out["counts"][j] = est.voc_score(X_held, Y_held).totals
        out["n_iter"][j], out["converged"][j] = est.n_iter_, est.converged_
        out["seconds"][j] = est.fit_seconds_
        if bar is not None:
            bar.update()
    return out


def _fold_estimator(make_estimator):
    """A fresh estimator for one fold, warm-starting along the grid."""
    est = make_estimator()
    # cutting planes do not depend on C: along the grid every fit on this
    # fold's training part starts from the previous one's working set
    est.warm_start = True
    return est


def preference_order(curve: dict) -> list[float]:
    """The grid's C from the highest pooled held-out IoU to the lowest; ties
    go to the smaller C (the stronger regulariser).

    Parameters
    ----------
    curve : dict with ``grid`` (m values of C) and ``pooled_iou_percent``
        (m values; None or NaN counts as worse than any number).

    Returns
    -------
    list of m floats, a permutation of ``curve["grid"]``.
    """
    grid = [float(c) for c in curve["grid"]]
    scores = _scores(curve)
    if len(grid) != len(scores) or not grid:
        raise ValueError(f"a curve needs one score per C: {len(grid)} C, {len(scores)} scores")
    # the smaller C regularises more: prefer it when held-out data cannot tell
    return [c for _, c in sorted(zip(scores, grid), key=lambda p: (-p[0], p[1]))]


def _scores(curve: dict) -> list[float]:
    """The pooled held-out IoU of each C, -inf where undefined."""
    return [-math.inf if v is None or math.isnan(v) else float(v)
            for v in curve["pooled_iou_percent"]]


def choose_C(curve: dict) -> float:
    """The C with the highest pooled held-out IoU; ties go to the smaller C:
    the first of :func:`preference_order` (which takes the same ``curve``)."""
    return preference_order(curve)[0]


def next_C_after_refit(curve: dict, train_iou: float | None) -> float | None:
    """Refuse a refit that scores IoU 0 on its own training split, if another C may do better.

    The refit on the whole training split at the chosen C can label no
    pixel of the class where the folds' models, trained on two thirds of
    it at the same C, did (COCO's dining table, bl2 at C 0.01: 1.6 %
    pooled held-out IoU, then a refit with train IoU 0 and val IoU 0). A
    model that finds nothing on the very images it learnt from is worse
    than any C whose folds found something: the next C of
    :func:`preference_order` with a pooled held-out IoU above 0 is refitted
    instead.

    Parameters
    ----------
    curve : dict, of :func:`select_C`; updated in place when the refit is
        refused: its C is appended to ``curve["refused"]`` (a list of
        ``{"C", "train_iou_percent"}``), ``chosen_C`` becomes the next C and
        ``warning`` is that C's :func:`edge_warning`.
    train_iou : float or None
        VOC IoU in percent of the refit at ``curve["chosen_C"]`` on its own
        training split (None or NaN: undefined, which counts as 0).

    Returns
    -------
    float or None
        The C to refit at next; None when the refit stands (its training IoU
        is above 0, or no other C scored above 0 held out).
    """
    if train_iou is not None and not math.isnan(train_iou) and train_iou > 0:
        return None
    refused = [float(r["C"]) for r in curve.get("refused", [])] + [float(curve["chosen_C"])]
    score = dict(zip((float(c) for c in curve["grid"]), _scores(curve)))
    left = [c for c in preference_order(curve) if c not in refused and score[c] > 0]
    if not left:
        return None
    curve.setdefault("refused", []).append(
        {"C": float(curve["chosen_C"]),
         "train_iou_percent": None if train_iou is None or math.isnan(train_iou)
         else float(train_iou)})
    curve["chosen_C"] = left[0]
    curve["warning"] = edge_warning(curve)
    return left[0]


def select_C(make_estimator: Callable, X: Sequence, Y: Sequence, grid=DEFAULT_GRID,
             folds: int = DEFAULT_FOLDS, seed: int = 0,
             progress: bool = False, n_jobs: int = 1, groups=None) -> tuple[float, dict]:
    """:func:`cross_validate_C`, then :func:`choose_C`: the whole selection.

    Parameters
    ----------
    make_estimator, X, Y, grid, folds, seed, progress, n_jobs, groups :
        as :func:`cross_validate_C`'s; ``grid`` defaults to
        :data:`DEFAULT_GRID` and ``folds`` to :data:`DEFAULT_FOLDS`.

    Returns
    -------
    C : float, the chosen value (the caller refits on all of X, Y at it).
    curve : dict, the curve with ``chosen_C`` added.

    Examples
    --------
    >>> from segstruct.learn.methods import estimator_for
    >>> from segstruct.toy import chain_problem
    >>> X, Y = chain_problem()
    >>> C, curve = select_C(lambda: estimator_for("bl1"), X, Y, grid=(0.1, 1.0), folds=3)
    >>> C, [round(v, 1) for v in curve["pooled_iou_percent"]]
    (1.0, [70.4, 78.3])
    """
    curve = cross_validate_C(make_estimator, X, Y, grid, folds, seed, progress, n_jobs, groups)
    curve["chosen_C"] = choose_C(curve)
    curve["warning"] = edge_warning(curve)
    return curve["chosen_C"], curve


def edge_warning(curve: dict) -> str | None:
    """A warning when the chosen C is the best at an end of the grid.

    Held-out IoU still rising towards the end means that a C beyond it may be
    better (on the shared data bl1 chose the largest C of 0.05 0.5 5 and the
    IoU methods the smallest). None when the choice is inside the grid, or
    ties with its inner neighbour.

    Parameters
    ----------
    curve : dict, of :func:`select_C` (with ``chosen_C``).

    Returns
    -------
    str or None
    """
    pairs = sorted(zip((float(c) for c in curve["grid"]), _scores(curve)))
    grid, scores = [c for c, _ in pairs], [v for _, v in pairs]
    chosen = float(curve["chosen_C"])
    if chosen == grid[0] and scores[0] > scores[1]:
        end, beyond = "smallest", f"below {grid[0]:g}"
    elif chosen == grid[-1] and scores[-1] > scores[-2]:
        end, beyond = "largest", f"above {grid[-1]:g}"
    else:
        return None
    return (f"the chosen C {chosen:g} is the {end} of the grid and held-out IoU was still "
            f"rising towards it: a C {beyond} may be better; extend --C-grid")


def format_curve(curve: dict) -> list[str]:
    """The curve as lines of text: one row per C, ``*`` on the chosen one.

    Per-fold iterations carry ``+`` where the fit stopped at max_iter; a C
    whose refit :func:`next_C_after_refit` refused is marked ``x``.

    Parameters
    ----------
    curve : dict, of :func:`select_C`.

    Returns
    -------
    list of str, a header and one line per C (then the edge warning, if any).
    """
    k = curve["folds"]
    refused = {float(r["C"]) for r in curve.get("refused", [])}
    lines = [f"  {'C':>8}  {'pooled IoU %':>12}  {'per-fold IoU %':<{7 * k}}  "
             f"{'iterations':<{5 * k}}  {'seconds':>7}"]
    for j, c in enumerate(curve["grid"]):
        mark = "*" if c == curve.get("chosen_C") else "x" if c in refused else " "
        folds = " ".join(f"{fmt(v):>6}" for v in curve["fold_iou_percent"][j])
        its = " ".join(f"{n}{'' if ok else '+'}".rjust(4)
                       for n, ok in zip(curve["n_iter"][j], curve["converged"][j]))
        lines.append(f"{mark} {c:>8g}  {fmt(curve['pooled_iou_percent'][j]):>12}  "
                     f"{folds:<{7 * k}}  {its:<{5 * k}}  {sum(curve['fit_seconds'][j]):>7.1f}")
    for r in curve.get("refused", []):
        lines.append(f"  x: the refit at C {r['C']:g} scored IoU "
                     f"{fmt(r['train_iou_percent'])} % on its own training split: refused")
    if curve.get("warning"):
        lines.append(f"  warning: {curve['warning']}")
    return lines
