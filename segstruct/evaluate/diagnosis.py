"""What a user must know about a trained model besides its score.

A model that labels every training superpixel background (or foreground)
scores 0 IoU and says nothing by itself; a run stopped at ``max_iter`` looks
like any other. :func:`diagnose` names both, with the likely cause, for
``train``, ``compare`` and their result files.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def foreground_share(predictions, label_specs) -> float:
    """Share of the non-void training pixels (or superpixels) labelled foreground.

    Parameters
    ----------
    predictions : sequence of (N_k,) labellings in {0, 1}.
    label_specs : matching (N_k, 2) [fg, bg] pixel counts, or (N_k,) targets
        (each superpixel then weighs 1).
    """
    predicted = total = 0.0
    for y, spec in zip(predictions, label_specs):
        spec = np.asarray(spec)
        size = spec.sum(axis=1) if spec.ndim == 2 else np.ones(spec.shape[0])
        predicted += float(size @ np.asarray(y, np.float64))
        total += float(size.sum())
    return predicted / total if total else 0.0


def diagnose(estimator, X, Y, predictions=None) -> dict:
    """Collapse and convergence of a fitted ``StructuredSVM`` on its training set.

    ``predictions``: ``estimator.predict(X)``, when the caller has it already.

    Returns
    -------
    dict with
        ``foreground_share`` : float in [0, 1], on the training set;
        ``collapse`` : None, "no foreground" or "all foreground";
        ``converged`` : bool; ``gap`` : primal - dual; ``relative_gap`` : gap / primal;
        ``target_gap`` : C * tol, the gap the cutting planes certify at convergence;
        ``warnings`` : list of sentences, empty when all is well.
    """
    if predictions is None:
        predictions = estimator.predict(X)
    share = foreground_share(predictions, Y)
    collapse = "no foreground" if share == 0 else "all foreground" if share == 1 else None
    gap, primal = float(estimator.gap_), float(estimator.primal_)
    report: dict[str, Any] = {
        "foreground_share": share, "collapse": collapse,
        "converged": bool(estimator.converged_), "gap": gap,
        "relative_gap": gap / primal if primal > 0 else 0.0,
        "target_gap": float(_svm_C(estimator) * estimator.tol), "warnings": []}
    if not estimator.converged_:
        # only a learner that keeps a checkpoint can continue
        resumable = getattr(estimator, "resumable", False)
        # a solver may also stop early, when it makes no more progress
        at_max_iter = estimator.n_iter_ >= estimator.max_iter
        stop = (f"stopped at max_iter {estimator.max_iter}" if at_max_iter else
                f"the solver stopped making progress after {estimator.n_iter_} iterations")
        advice = ("raise max_iter" + (" (train --resume continues the run)" if resumable
                                      else "")
                  if at_max_iter else "a larger tol or another C may converge")
        if getattr(estimator, "solver", None) == "perceptron":
            mistakes = (estimator.log_[-1].get("mistakes") if getattr(estimator, "log_", None)
                        else None)
            advice = (f"{mistakes} training image(s) still mislabelled in the last epoch; "
                      "on data that no weights separate more epochs will not end that")
        report["warnings"].append(
            f"not converged: {stop} with objective "
            f"{primal:.6g} and lower bound {estimator.dual_:.6g}, a gap of {gap:.3g} "
            f"({100 * report['relative_gap']:.3g} % of the objective; "
            f"{_criterion(estimator)}); {advice}")
    if collapse:
        report["warnings"].append(f"the model predicts {collapse} on its own training set "
                                  f"(IoU 0 there): {_cause(estimator, collapse)}")
    return report


def _criterion(estimator) -> str:
    """What convergence means for the estimator's solver."""
    solver = getattr(estimator, "solver", None)
    if solver == "bcfw":
        return (f"convergence means a duality gap below C tol = "
                f"{_svm_C(estimator) * estimator.tol:g}")
    if solver == "sgd":
        return "SGD has no stopping test and certifies no gap: the lower bound 0 is trivial"
    if solver == "perceptron":
        return ("the perceptron converges when an epoch makes no mistake on the training "
                "images (they are separated); it minimises no regularised objective")
    if solver == "lbfgs":
        return (f"convergence means an objective within C tol = "
                f"{_svm_C(estimator) * estimator.tol:g} of its minimum, certified by the "
                "gradient")
    if solver == "subgradient":
        return ("subgradient descent stops early only when a step leaves the weights in "
                "place, and certifies no gap: the lower bound 0 is trivial")
    return f"convergence means a largest violation below tol {estimator.tol:g}"


def _svm_C(estimator) -> float:
    """The C of the objective the estimator solved (its gaps are in those units)."""
    return float(getattr(estimator, "svm_C_", estimator.C))


def _cause(estimator, collapse) -> str:
    if not np.any(estimator.w_):
        return ("its weights are all 0: no weights the learner evaluated had a lower "
                "objective than w = 0; a larger C, or more iterations, may let it move")
    if not estimator.converged_:
        return "training stopped before convergence; raise max_iter first"
    side = "foreground" if collapse == "no foreground" else "background"
    return (f"at C = {estimator.C:g} predicting {side} nowhere costs less than the "
            "weights it would take; try a larger C")


#: A training IoU at least this many points above the validation IoU is
#: called over-fitting, whatever their ratio: on the shared data at the
#: defaults the models that hold (horses, Penn-Fudan, CamVid) stay near or
#: below it, and a gap this wide is what a user reading a table should not
#: miss (docs/training.md, "Over-fitting").
OVERFIT_POINTS = 10.0


def generalisation(train_iou: float | None, val_iou: float | None,
                   settings: dict | None = None) -> str | None:
    """A warning when a model fits its training images far better than new ones.

    Parameters
    ----------
    train_iou, val_iou : VOC IoU in percent on the training and validation
        splits (None: undefined, no warning).
    settings : optional dict naming what the advice may mention:
        ``top_down`` (bool, the block is on), ``top_down_folds`` (int),
        ``C`` (float, the model's) and ``C_auto`` (bool, C was chosen by
        cross-validation).

    Returns
    -------
    str or None
        The warning, with the C to try first, or None when the training
        IoU is less than ``OVERFIT_POINTS`` points above the validation IoU.
    """
    if train_iou is None or val_iou is None:
        return None
    gap = train_iou - val_iou
    if gap < OVERFIT_POINTS:
        return None
    settings = settings or {}
    C = settings.get("C")
    if settings.get("C_auto") and C is not None:
        # cross-validation on the training split cannot see a shift between
        # the training images and new ones (CamVid's val sequence wanted a C
        # one to two orders of magnitude below the one it chose)
        tries = [f"a C below the cross-validated {C:g} (--C {C / 10:g}): the training "
                 "split's folds may not show how new images differ"]
    elif C is not None:
        tries = [f"a C below {C:g} (--C {C / 10:g}), or --C auto, which chooses one on "
                 "held-out folds of the training split"]
    else:
        tries = ["a smaller --C (--C auto chooses it on held-out folds of the training split)"]
    if settings.get("top_down"):
        if settings.get("top_down_folds", 1) < 2:
            tries.append("cross-fitted detectors (--top-down-folds 3), so that the learner "
                         "sees the detector's scores on images it was not fitted to")
        else:
            tries.append("--no-top-down, if the detector is weak on new images")
    tries.append("more training images")
    return (f"training IoU {train_iou:.1f} % is {gap:.1f} points above validation IoU "
            f"{val_iou:.1f} % (the warning's threshold: {OVERFIT_POINTS:g} points): the model "
            f"fits its training images far better than new ones (over-fitting); try "
            f"{'; or '.join(tries)}")

