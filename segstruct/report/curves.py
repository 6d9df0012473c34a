"""Curves of training: objectives, gap and violations per iteration of each
learner, and the cross-validation of C."""
from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from segstruct.report.drawing import add_caption

__all__ = ["cv_figure", "training_figure"]


def _series(log, key) -> tuple[np.ndarray, np.ndarray]:
    """(iterations, values) of one log key; NaN where an entry lacks it."""
    its = np.array([e.get("iteration", i + 1) for i, e in enumerate(log)], np.float64)
    vals = np.array([e[key] if e.get(key) is not None else np.nan for e in log], np.float64)
    return its, vals


def _positive(values: np.ndarray) -> np.ndarray:
    """NaN where a value cannot go on a log scale (matplotlib then skips it)."""
    return np.where(values > 0, values, np.nan)


#: Relative distances to the final objective below this are rounding noise
#: (a sum over thousands of terms in double precision), not progress: they
#: are left out rather than stretching the log axis down to 1e-16.
_RELATIVE_FLOOR = 1e-10


def _final_objective(primal: np.ndarray, best: np.ndarray) -> float:
    """F*: the objective of the weights a run returned (its last best primal)."""
    finite = best[np.isfinite(best)]
    if len(finite):
        return float(finite[-1])
    finite = primal[np.isfinite(primal)]       # a log without best_primal
    return float(finite.min()) if len(finite) else math.nan


def _scope_of(scopes, name) -> str | None:
    """A method's loss scope: ``scopes`` is None, one scope or a dict."""
    if scopes is None or isinstance(scopes, str):
        return scopes
    return scopes.get(name)


def training_figure(logs, caption: str = "", scopes=None) -> Figure:
    """Cutting-plane training curves of one or more methods.

    Panels: (a) each method's primal (solid) and dual (dashed) objective F
    as its relative distance to its own final objective F* (the objective
    of the weights it returned), ``|F - F*| / F*``, log scale. The methods'
    objectives differ by orders of magnitude (a Hamming loss counts
    superpixels, an IoU loss lies in [0, 1]), so on one absolute axis the
    small ones were flat lines; relative to F* every method spans the axis
    (the dual starts near 1, both go down to the tolerance), and F* itself
    is given in the legend. (b) gap ``best_primal - dual``, log scale.
    (c) at the per-image scope, the number of examples whose margin is
    violated; when every log is at the data-set scope (where the training
    set is one example and that count is always 0 or 1), the number of
    constraints in the working set instead. (d) the largest violation beyond
    the slack, log scale. Values that are missing, or not positive on a log
    panel, are left out of the curve, not drawn as 0.

    Parameters
    ----------
    logs : dict of str -> list of dict
        Method name -> :attr:`segstruct.learn.estimators.structured_svm.StructuredSVM.log_` (or the
        ``MODEL.log.json`` file read back): entries with keys
        ``"iteration"``, ``"primal"``, ``"best_primal"``, ``"dual"``,
        ``"gap"``, ``"n_violated"``, ``"n_constraints"``, ... (any may be
        missing).
    caption : str, default ""
        Footer naming data, class, methods, parameters and code version.
    scopes : {"dataset", "image"} or dict of str -> str, optional
        The loss scope of every method (the estimator's ``scope``), or one
        per method name. A method without one counts as per image.

    Returns
    -------
    matplotlib.figure.Figure
        Four axes holding 2, 1, 1 and 1 line per method; in (c), at mixed
        scopes, only the per-image methods.
    """
    fig = Figure(figsize=(16.0, 3.8), layout="constrained")
    ax_obj, ax_gap, ax_vio, ax_max = fig.subplots(1, 4)
    colours = [f"C{i % 10}" for i in range(len(logs))]
    per_image = [n for n in logs if _scope_of(scopes, n) != "dataset"]
    # At the data-set scope the violated-example count is 0 or 1; the working
    # set's size shows how many cuts the QP needed (and the pruning).
    count_key = "n_violated" if per_image else "n_constraints"
    most, objective_handles = 1.0, []
    for (name, log), colour in zip(logs.items(), colours):
        log = list(log)
        its, primal = _series(log, "primal")
        _, dual = _series(log, "dual")
        _, best = _series(log, "best_primal")
        _, gap = _series(log, "gap")
        gap = np.where(np.isnan(gap), best - dual, gap)      # older logs
        _, count = _series(log, count_key)
        _, violation = _series(log, "max_violation")
        final = _final_objective(primal, best)
        # F* = 0 (or none) has no scale: the absolute distance then
        scale = final if final > 0 else 1.0
        for values, style in ((primal, "-"), (dual, "--")):
            relative = np.abs(values - final) / scale
            ax_obj.plot(its, np.where(relative > _RELATIVE_FLOOR, relative, np.nan),
                        color=colour, linestyle=style, label=name if style == "-" else None)
        objective_handles.append(Line2D([], [], color=colour, label=f"{name}: F* = {final:.4g}"
                                        + ("" if final > 0 else " (absolute distance)")))
        ax_gap.plot(its, _positive(gap), color=colour, label=name)
        if count_key == "n_constraints" or name in per_image:
            ax_vio.plot(its, count, color=colour, label=name, marker=".", markersize=3)
            if np.any(count >= 0):
                most = max(most, float(np.nanmax(count)))
        ax_max.plot(its, _positive(violation), color=colour, label=name)
    ax_obj.set_yscale("log")
    ax_gap.set_yscale("log")
    ax_max.set_yscale("log")
    ax_vio.set_ylim(0, 1.1 * most)       # counts: from 0, room above
    ax_vio.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax_obj.set_title("(a) objective F: primal (solid), dual (dashed)", fontsize=10)
    ax_obj.set_ylabel("|F - F*| / F*, F* = final objective of each method (log)",
                      fontsize=8)
    ax_gap.set_title("(b) gap = best primal - dual", fontsize=10)
    if count_key == "n_constraints":
        ax_vio.set_title("(c) constraints in the working set", fontsize=10)
    else:
        mixed = len(per_image) < len(logs)
        ax_vio.set_title("(c) examples with a violated margin"
                         + (" (per-image scope only)" if mixed else ""), fontsize=10)
    ax_max.set_title("(d) largest violation beyond the slack", fontsize=10)
    for ax in (ax_obj, ax_gap, ax_vio, ax_max):
        ax.set_xlabel("cutting-plane iteration")
        ax.grid(True, which="major", alpha=0.3)
    if logs:
        # Proxy handles: they explain the line styles and give each F*
        # without adding lines to the axes.
        styles = [Line2D([], [], color="0.3", label="primal"),
                  Line2D([], [], color="0.3", linestyle="--", label="dual")]
        ax_obj.legend(handles=styles + objective_handles, fontsize=7, loc="best")
        ax_gap.legend(fontsize=8, loc="upper right")
    add_caption(fig, caption)
    return fig


def _values(seq) -> np.ndarray:
    """Floats with NaN for None (an IoU that is undefined is not drawn)."""
    return np.array([np.nan if v is None else v for v in seq], np.float64)


def cv_figure(curves, caption: str = "") -> Figure:
    """Held-out VOC IoU against C, one line per method (``--C auto``).

    Each method's pooled IoU (TP, FP, FN summed over every held-out image
    of every fold) is a line with markers over C on a log axis; its per-fold
    IoUs are faint dots at the same C, and its chosen C is a large star on
    the line, named in the legend; a C whose refit was refused (the curve's
    ``refused``, :func:`segstruct.learn.selection.next_C_after_refit`) is a
    black cross. A C past the grid asked for (the curve's ``extended``,
    :mod:`segstruct.learn.selection.extension`) is drawn on the line like
    the others, over a grey band that marks the C beyond the asked grid.

    Parameters
    ----------
    curves : dict of str -> dict
        Method name -> curve of :func:`segstruct.learn.selection.cross_validate_C`
        with ``chosen_C`` (keys ``"grid"`` (m,), ``"pooled_iou_percent"`` (m,),
        ``"fold_iou_percent"`` (m, k), ``"chosen_C"``, ``"folds"``); None
        marks an undefined IoU.
    caption : str, default ""
        Footer naming data, class, methods, parameters and code version.

    Returns
    -------
    matplotlib.figure.Figure
        One axes with one pooled line per method (plus per-fold dots and a
        star per method).
    """
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.add_subplot()
    folds = sorted({int(c["folds"]) for c in curves.values()})
    for k, (name, curve) in enumerate(curves.items()):
        colour = f"C{k % 10}"
        grid = np.asarray(curve["grid"], np.float64)
        pooled = _values(curve["pooled_iou_percent"])
        per_fold = np.array([_values(row) for row in curve["fold_iou_percent"]])
        chosen = float(curve["chosen_C"])
        ax.plot(grid, pooled, color=colour, marker="o", label=f"{name} (C = {chosen:g})")
        if per_fold.size:
            ax.plot(np.repeat(grid, per_fold.shape[1]), per_fold.ravel(), linestyle="none",
                    marker=".", color=colour, alpha=0.35)
        ax.plot([chosen], pooled[np.flatnonzero(grid == chosen)], linestyle="none",
                marker="*", markersize=16, color=colour, markeredgecolor="black")
        # a C whose refit found nothing on its own training split (refused)
        for refused in curve.get("refused", []):
            ax.plot([refused["C"]], pooled[np.flatnonzero(grid == refused["C"])],
                    linestyle="none", marker="X", markersize=11, color="black")
    ax.set_xscale("log")
    extended = _extension_bands(ax, curves)
    grid_values = sorted({float(c) for curve in curves.values() for c in curve["grid"]})
    if grid_values:          # the values tried, not just decades
        ax.set_xticks(grid_values, [f"{c:g}" for c in grid_values])
        ax.minorticks_off()
    ax.set_xlabel("C, in 1/2 ||w||^2 + C xi (log scale)")
    ax.set_ylabel("held-out VOC IoU %")
    refusals = any(curve.get("refused") for curve in curves.values())
    ax.set_title(f"{'/'.join(map(str, folds))}-fold cross-validation of C: pooled (line), "
                 f"per fold (dots), chosen (star){', refit refused (X)' if refusals else ''}"
                 f"{', past the grid asked (grey)' if extended else ''}",
                 fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    if curves:
        ax.legend(fontsize=8, loc="best")
    add_caption(fig, caption)
    return fig


def _extension_bands(ax, curves) -> bool:
    """Grey bands over the C that a curve's extension added past the grid
    it was asked for (below its smallest C, above its largest); whether
    there were any."""
    from segstruct.learn.selection.extension import asked_grid
    drawn = False
    for curve in curves.values():
        ext = curve.get("extended")
        if not ext or not (ext["below"] or ext["above"]):
            continue
        asked, grid = asked_grid(curve), [float(c) for c in curve["grid"]]
        if ext["below"]:
            ax.axvspan(min(grid) / 1.5, min(asked), color="0.85", zorder=0)
        if ext["above"]:
            ax.axvspan(max(asked), max(grid) * 1.5, color="0.85", zorder=0)
        drawn = True
    return drawn
