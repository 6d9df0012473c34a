"""Figures of images: segmentations side by side (the paper's Figs. 4-5) and
a detector's detections with its average shapes."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from segstruct.io.text import MISSING
from segstruct.report.drawing import (BOUNDARY_COLOUR, CELL_INCHES, OUTLINE_INNER,
                                      OUTLINE_OUTER, TINT_COLOURS, VOID_COLOUR, VOID_LABEL,
                                      add_caption, as_binary, bare_axes, contrasting_colour,
                                      image_iou, overlay)

__all__ = ["detector_figure", "qualitative_figure"]


def _legend_handles(tints, segments: bool, void: bool) -> tuple[list, dict]:
    """Legend entries of :func:`qualitative_figure`, for what its cells draw:
    (handle, label) pairs, and the handler map that draws a tuple handle."""
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.patches import Patch
    from matplotlib.patheffects import Stroke, Normal

    def rgb(c):
        return tuple(v / 255 for v in c)

    # the tints in use, as one entry: "red or cyan" reads as one idea
    tint = tuple(Patch(facecolor=rgb(c), edgecolor="none", alpha=0.7) for c in tints)
    label = "foreground tint: true (ground truth) or predicted (methods)"
    if len(tints) > 1:
        label += "; cyan where red would not show"
    # (handle, label): a handle is an artist or a tuple of them
    handles: list[tuple[Any, str]] = [(tint, label)]
    # white line with a black edge, as the cells draw it
    two_tone = Line2D([], [], color=rgb(OUTLINE_INNER), linewidth=2.0, path_effects=[
        Stroke(linewidth=4.5, foreground=rgb(OUTLINE_OUTER)), Normal()])
    handles.append((two_tone, "foreground outline (white inside, black outside)"))
    if segments:
        handles.append((Line2D([], [], color=rgb(BOUNDARY_COLOUR), linewidth=2.0),
                        "superpixel boundaries"))
    if void:
        handles.append((Patch(facecolor=rgb(VOID_COLOUR), edgecolor="none"),
                        "void (grey, not scored)"))
    return handles, {tuple: HandlerTuple(ndivide=None, pad=0.0)}


def qualitative_figure(panels, methods, caption: str) -> Figure:
    """Segmentations of several methods side by side (the paper's Figs. 4-5).

    One row per image; columns: input | ground truth | one per method. Ground
    truth and predictions are drawn with :func:`overlay`: foreground tinted
    and outlined (white inside black), void grey, superpixel boundaries
    yellow. The tint of a row is :func:`contrasting_colour` of the pixels
    tinted anywhere in the row (red, or cyan on reddish objects), so that
    its cells compare at a glance. Each method cell is titled
    ``"<method>  IoU xx.x%"`` with :func:`image_iou` (``"-"`` when
    undefined). A legend above the grid, in a row of its own so that it
    covers no cell, names what the cells draw.

    Parameters
    ----------
    panels : list of dict
        One per row, with keys
        ``"image_id"`` (str, the row label),
        ``"image"`` (ndarray of uint8, shape (H, W, 3)),
        ``"truth"`` (ndarray of uint8, shape (H, W): 0/1, 255 = void),
        ``"segments"`` (ndarray of int, shape (H, W); optional: no boundaries
        when absent or None) and
        ``"predictions"`` (dict: method name -> ndarray of 0/1, shape (H, W)).
        Rows may have different image sizes.
    methods : sequence of str
        Method columns, in this order; each must be in every panel's predictions.
    caption : str
        Footer naming data, class, methods, parameters and code version.

    Returns
    -------
    matplotlib.figure.Figure
        With ``len(panels) * (2 + len(methods))`` image axes, row by row,
        then one axes (no frame) holding the legend.

    Raises
    ------
    ValueError
        No panels, a missing key or prediction, or bad shapes/values.
    """
    panels, methods = list(panels), list(methods)
    if not panels:
        raise ValueError("qualitative_figure needs at least one panel")
    n_cols = 2 + len(methods)
    for row in panels:
        missing = {"image_id", "image", "truth", "predictions"} - set(row)
        if missing:
            raise ValueError(f"panel {row.get('image_id', '?')!r} lacks {sorted(missing)}")
        absent = [m for m in methods if m not in row["predictions"]]
        if absent:
            raise ValueError(f"panel {row['image_id']!r} has no prediction for {absent}")
    # Each row as tall as its image at the common cell width, so images of
    # different shapes fill their cells (clamped: a panorama stays legible).
    ratios = [min(max(np.shape(row["image"])[0] / max(np.shape(row["image"])[1], 1), 0.4), 2.0)
              for row in panels]
    # The legend's row: one line of entries on a wide grid, two on a narrow one.
    legend_lines = 2 if n_cols >= 4 else 4
    legend_ratio = 0.11 * legend_lines + 0.05
    fig = Figure(figsize=(CELL_INCHES * n_cols, CELL_INCHES * (sum(ratios) + legend_ratio) + 0.6),
                 layout="constrained")
    grid = fig.add_gridspec(1 + len(panels), n_cols, height_ratios=[legend_ratio] + ratios)
    tints, any_segments, any_void = [], False, False
    for r, row in enumerate(panels):
        image, truth = np.asarray(row["image"]), np.asarray(row["truth"])
        segments = row.get("segments")
        void = truth == VOID_LABEL
        if truth.shape != image.shape[:2]:
            raise ValueError(f"panel {row['image_id']!r}: truth {truth.shape} "
                             f"does not match image {image.shape}")
        # Validates the truth values before drawing it.
        image_iou(truth, np.zeros(truth.shape, bool))
        preds = [as_binary(row["predictions"][m], truth.shape, f"prediction of {m}")
                 for m in methods]
        tinted = (truth == 1) | np.any(np.stack(preds), axis=0) if preds else truth == 1
        tint = contrasting_colour(image, tinted & ~void)
        if tint not in tints:
            tints.append(tint)
        any_segments |= segments is not None
        any_void |= bool(void.any())
        cells = [(image, "input"),
                 (overlay(image, truth == 1, segments, colour=tint, void=void), "ground truth")]
        for m, pred in zip(methods, preds):
            iou = image_iou(truth, pred)
            score = MISSING if iou is None else f"{100 * iou:.1f}%"
            cells.append((overlay(image, pred, segments, colour=tint, void=void),
                          f"{m}  IoU {score}"))
        for c, (picture, title) in enumerate(cells):
            ax = fig.add_subplot(grid[1 + r, c])
            ax.imshow(picture, interpolation="antialiased")
            bare_axes(ax)
            if c >= 2 or r == 0:        # column names once; scores on every row
                ax.set_title(title, fontsize=9)
            if c == 0:
                ax.set_ylabel(str(row["image_id"]), fontsize=9)
    handles, handler_map = _legend_handles(sorted(tints, key=TINT_COLOURS.index),
                                           any_segments, any_void)
    legend_ax = fig.add_subplot(grid[0, :])
    legend_ax.set_axis_off()
    legend_ax.legend([h for h, _ in handles], [label for _, label in handles],
                     handler_map=handler_map, loc="center", frameon=False, fontsize=8,
                     ncols=math.ceil(len(handles) / legend_lines), handlelength=2.5)
    add_caption(fig, caption)
    return fig


_COMPONENT_COLOURS = ("#ff3b30", "#34c7ff", "#ffd60a", "#30d158")


def detector_figure(panels, shapes, caption: str, max_boxes: int = 3) -> Figure:
    """A detector's best detections on some images, and its average shapes.

    Top row: each image with its ground-truth boxes (white, dashed) and its
    ``max_boxes`` highest-scoring detections above score 0 (coloured by
    component, labelled with the score). Below, one row per component: the
    average foreground under the root filter and under each part filter
    (black 0, white 1).

    Parameters
    ----------
    panels : list of dict with "image_id" (str), "image" ((H, W, 3) uint8),
        "detections" ((K, 6) [x0, y0, x1, y1, score, component], best first)
        and "truths" ((G, 4) boxes, pixels).
    shapes : AverageShapes (``.root[c]`` (h, w), ``.parts[c]`` (P, s, s)).
    caption : str, footer naming data, class, split, settings and code version.
    max_boxes : int, detections drawn per image.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.patches import Rectangle

    panels = list(panels)
    n_comp = len(shapes.root)
    n_cols = max(len(panels), max((1 + len(p) for p in shapes.parts), default=1), 1)
    fig = Figure(figsize=(CELL_INCHES * n_cols, CELL_INCHES * (1 + 0.6 * n_comp) + 0.6),
                 layout="constrained")
    grid = fig.add_gridspec(1 + n_comp, n_cols, height_ratios=[1] + [0.6] * n_comp)
    for c, row in enumerate(panels):
        ax = fig.add_subplot(grid[0, c])
        ax.imshow(row["image"], interpolation="antialiased")
        for x0, y0, x1, y1 in np.asarray(row["truths"]).reshape(-1, 4):
            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec="white",
                                   ls="--", lw=1.2))
        dets = np.asarray(row["detections"]).reshape(-1, 6)
        for x0, y0, x1, y1, score, comp in dets[dets[:, 4] > 0][:max_boxes]:
            colour = _COMPONENT_COLOURS[int(comp) % len(_COMPONENT_COLOURS)]
            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec=colour, lw=1.8))
            ax.text(x0, y0, f"{score:.2f}", color="black", fontsize=7, va="bottom",
                    bbox={"fc": colour, "ec": "none", "pad": 1})
        bare_axes(ax)
        ax.set_title(str(row["image_id"]), fontsize=8)
    for k in range(n_comp):
        cells = [(shapes.root[k], f"component {k + 1}: root ({int(shapes.counts[k])} "
                                  "detections)")]
        cells += [(part, f"part {i + 1}") for i, part in enumerate(shapes.parts[k])]
        for c, (shape, title) in enumerate(cells):
            ax = fig.add_subplot(grid[1 + k, c])
            ax.imshow(shape, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
            bare_axes(ax)
            ax.set_title(title, fontsize=7)
    add_caption(fig, caption)
    return fig
