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

With ``extend`` K > 0, step 2 goes on past an end of the grid while the
best pooled IoU is at that end and rises towards it, by the grid's own
step, at most K steps each way (:mod:`segstruct.learn.selection.extension`).

Everything here is numbers in, numbers out: the curve is a JSON-able dict
that ``train`` stores in the model file, ``compare`` in results.json, and
:func:`segstruct.report.figures.cv_figure` draws.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from segstruct.io.text import fmt
# the running half (folds, checks, the curve); its names stay importable from here
from segstruct.learn.selection.cross_validation import (
    DEFAULT_FOLD_TOL, DEFAULT_FOLDS, DEFAULT_GRID, CrossValidationError, check_cv_data,
    check_fold_tol, check_folds, check_grid, cross_validate_C, cross_validate_many,
    image_strata, make_folds)
from segstruct.learn.selection.extension import (C_LIMITS, DEFAULT_C_EXTEND, asked_grid,
                                                 check_extend, extension_text, rising_edge)

__all__ = ["DEFAULT_GRID", "DEFAULT_FOLDS", "DEFAULT_FOLD_TOL", "DEFAULT_C_EXTEND",
           "C_LIMITS", "check_extend", "CrossValidationError",
           "check_grid", "check_folds", "check_fold_tol", "check_cv_data", "image_strata",
           "make_folds", "cross_validate_C",
           "cross_validate_many", "preference_order", "choose_C", "with_choice",
           "next_C_after_refit", "edge_warning", "select_C",
           "format_curve"]


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
    it at the same C, did (COCO's dining table, bl2 at a small C: folds
    that found some of the class, then a refit with train IoU 0 and val
    IoU 0). A
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
             progress: bool = False, n_jobs: int = 1, groups=None,
             fold_tol: float | None = DEFAULT_FOLD_TOL,
             extend: int = 0) -> tuple[float, dict]:
    """:func:`cross_validate_C`, then :func:`choose_C`: the whole selection.

    Parameters
    ----------
    make_estimator, X, Y, grid, folds, seed, progress, n_jobs, groups, fold_tol, extend :
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
    curve = with_choice(cross_validate_C(make_estimator, X, Y, grid, folds, seed, progress,
                                         n_jobs, groups, fold_tol, extend))
    return curve["chosen_C"], curve


def with_choice(curve: dict) -> dict:
    """``curve`` (of :func:`cross_validate_C`) with ``chosen_C``
    (:func:`choose_C`) and ``warning`` (:func:`edge_warning`) set; returned."""
    curve["chosen_C"] = choose_C(curve)
    curve["warning"] = edge_warning(curve)
    return curve


def edge_warning(curve: dict) -> str | None:
    """A warning when the chosen C is the best at an end of the grid.

    Held-out IoU still rising towards the end means that a C beyond it may be
    better (on the shared data bl1 chose the largest C of 0.05 0.5 5 and the
    IoU methods the smallest). None when the choice is inside the grid, or
    ties with its inner neighbour. Where the grid was extended past that
    end until its bound (``curve["extended"]["bound_reached"]``), the
    warning says so and how to raise the bound.

    Parameters
    ----------
    curve : dict, of :func:`select_C` (with ``chosen_C``).

    Returns
    -------
    str or None
    """
    direction = rising_edge(curve)
    if direction is None:
        return None
    grid = sorted(float(c) for c in curve["grid"])
    chosen = float(curve["chosen_C"])
    end, beyond = (("smallest", f"below {grid[0]:g}") if direction == "below"
                   else ("largest", f"above {grid[-1]:g}"))
    ext = curve.get("extended")
    if ext and ext["bound_reached"]:
        steps = ext[direction]
        return (f"the chosen C {chosen:g} is the {end} of the grid extended {steps} "
                f"step{'' if steps == 1 else 's'} past --C-grid, its bound (--C-extend "
                f"{ext['bound']}, C in {C_LIMITS[0]:g}-{C_LIMITS[1]:g}), and held-out IoU "
                f"was still rising towards it: a C {beyond} may be better; raise "
                "--C-extend")
    return (f"the chosen C {chosen:g} is the {end} of the grid and held-out IoU was still "
            f"rising towards it: a C {beyond} may be better; extend --C-grid")


def format_curve(curve: dict) -> list[str]:
    """The curve as lines of text: one row per C, ``*`` on the chosen one.

    Per-fold iterations carry ``+`` where the fit stopped at max_iter; a C
    whose refit :func:`next_C_after_refit` refused is marked ``x``; a C
    past the grid asked for (the grid's extension) carries ``>``, and a
    line says how far the grid was extended.

    Parameters
    ----------
    curve : dict, of :func:`select_C`.

    Returns
    -------
    list of str, a header and one line per C (then the extension and the edge
    warning, if any).
    """
    k = curve["folds"]
    refused = {float(r["C"]) for r in curve.get("refused", [])}
    asked = set(asked_grid(curve))
    lines = [f"  {'C':>8}  {'pooled IoU %':>12}  {'per-fold IoU %':<{7 * k}}  "
             f"{'iterations':<{5 * k}}  {'seconds':>7}"]
    for j, c in enumerate(curve["grid"]):
        mark = "*" if c == curve.get("chosen_C") else "x" if c in refused else " "
        folds = " ".join(f"{fmt(v):>6}" for v in curve["fold_iou_percent"][j])
        its = " ".join(f"{n}{'' if ok else '+'}".rjust(4)
                       for n, ok in zip(curve["n_iter"][j], curve["converged"][j]))
        extra = " " if float(c) in asked else ">"
        lines.append(f"{mark}{extra}{c:>8g}  {fmt(curve['pooled_iou_percent'][j]):>12}  "
                     f"{folds:<{7 * k}}  {its:<{5 * k}}  {sum(curve['fit_seconds'][j]):>7.1f}")
    for r in curve.get("refused", []):
        lines.append(f"  x: the refit at C {r['C']:g} scored IoU "
                     f"{fmt(r['train_iou_percent'])} % on its own training split: refused")
    extended = extension_text(curve)
    if extended:
        lines.append(f"  >: {extended}")
    if curve.get("warning"):
        lines.append(f"  warning: {curve['warning']}")
    return lines
