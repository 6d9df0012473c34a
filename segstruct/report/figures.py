"""Figures as PNG files: segmentations, loss surfaces and training curves.

Only matplotlib's object-oriented API is used (:class:`~matplotlib.figure.Figure`
rendered by the Agg canvas), never ``matplotlib.pyplot``: no window opens, no
global figure state is kept, and the functions are safe in worker processes
and on machines without a display.

- :func:`overlay` paints a foreground mask, void pixels and superpixel
  boundaries onto an image (numpy in, numpy out).
- :func:`qualitative_figure`: one row per image, columns input | ground truth
  | one per method, each method titled with its per-image IoU (the paper's
  Figs. 4-5).
- :func:`loss_surface_figure`: the exact loss surface Delta(FP, FN) beside
  its piecewise-linear approximations on M triangles (the paper's Fig. 1).
- :func:`training_figure`: objectives (relative to each method's final
  one), gap, violated examples or working-set size, and largest violation
  per cutting-plane iteration, from :attr:`StructuredSVM.log_`.
- :func:`cv_figure`: pooled held-out IoU against C (log axis) of the
  cross-validation of ``--C auto``, one line per method, the chosen C marked.
- :func:`save_figure` writes a figure as a PNG, atomically.

Every figure takes a ``caption``, printed small under it, which should name
the data, class, methods, parameters and code version, so that a PNG found
later says how it was made.
"""
from __future__ import annotations

import io
import math
import textwrap
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator
from skimage.segmentation import find_boundaries

from segstruct.inference.losses import get_loss
from segstruct.inference.triangulation import N_TRIANGLES, triangulate
from segstruct.io.files import atomic_write_bytes

__all__ = [
    "overlay",
    "contrasting_colour",
    "outline_width",
    "image_iou",
    "qualitative_figure",
    "loss_surface_figure",
    "training_figure",
    "cv_figure",
    "save_figure",
    "BOUNDARY_COLOUR",
    "VOID_COLOUR",
    "TINT_COLOURS",
    "OUTLINE_INNER",
    "OUTLINE_OUTER",
]

#: RGB of superpixel boundaries drawn by :func:`overlay`.
BOUNDARY_COLOUR = (255, 255, 0)
#: RGB blended onto void pixels (label 255) by :func:`overlay`.
VOID_COLOUR = (128, 128, 128)
VOID_LABEL = 255
#: Foreground tints :func:`contrasting_colour` picks from: red, and its
#: complement cyan for the foregrounds that red would hide (red, orange,
#: brown objects).
TINT_COLOURS = ((230, 40, 40), (0, 190, 255))
#: RGB of the two-tone foreground outline of :func:`overlay`: a light line
#: inside the mask beside a dark line outside it.
OUTLINE_INNER, OUTLINE_OUTER = (255, 255, 255), (0, 0, 0)

#: Inches per image cell of :func:`qualitative_figure`.
CELL_INCHES = 2.2
_CAPTION_SIZE = 7          # points


# --------------------------------------------------------------------------
# Masks on images
# --------------------------------------------------------------------------

def _as_binary(mask, shape, what: str) -> np.ndarray:
    """``mask`` as a bool array of ``shape``, refusing values other than 0/1."""
    mask = np.asarray(mask)
    if mask.shape != shape:
        raise ValueError(f"{what} has shape {mask.shape}, expected {shape}")
    if mask.dtype != bool:
        if not np.isin(mask, (0, 1)).all():
            # most likely a label map with 255 = void passed as a mask
            raise ValueError(f"{what} must hold only 0/1 (or bool); "
                             f"found values {np.unique(mask)[:8].tolist()}")
        mask = mask.astype(bool)
    return mask


def _dilate(mask: np.ndarray, width: int) -> np.ndarray:
    """``mask`` grown by ``width`` pixels in the 8 directions (a square
    structuring element), outside the image counting as not set."""
    out = mask.copy()
    for axis in (0, 1):              # a square dilation is separable
        grown = out.copy()
        n = out.shape[axis]
        for shift in range(1, width + 1):
            if shift >= n:
                break
            lo, hi = [slice(None)] * 2, [slice(None)] * 2
            lo[axis], hi[axis] = slice(0, n - shift), slice(shift, n)
            grown[tuple(lo)] |= out[tuple(hi)]
            grown[tuple(hi)] |= out[tuple(lo)]
        out = grown
    return out


def outline_width(shape) -> int:
    """Pixels of each tone of :func:`overlay`'s outline for an image of ``shape``.

    About 1/160 of the longer side (3 px on a 500 x 375 VOC image): a figure
    cell of :func:`qualitative_figure` is about 220 px wide at 100 dpi, so
    an image is shrunk about 2.3 times and each tone keeps at least one
    pixel of the cell; a line of one image pixel would be averaged away.
    """
    return max(1, int(round(max(shape[:2]) / 160)))


def contrasting_colour(image, region=None) -> tuple:
    """The tint of :data:`TINT_COLOURS` that stands out most on ``region``.

    The candidate farthest (Euclidean RGB distance) from the mean colour of
    the region's pixels: red, unless the region is reddish (a red car, a
    chestnut horse), where red would vanish and its complement cyan is
    picked instead. Deterministic, and one colour for a whole region, so
    that cells sharing the region (a row of :func:`qualitative_figure`) share
    the tint.

    Parameters
    ----------
    image : ndarray of uint8, shape (H, W, 3)
    region : ndarray of bool, shape (H, W), optional
        The pixels to be tinted; the whole image when None or empty.

    Returns
    -------
    tuple of 3 int
        One of :data:`TINT_COLOURS`.
    """
    pixels = np.asarray(image, np.float64).reshape(-1, 3)
    if region is not None:
        region = np.asarray(region, bool).ravel()
        if region.any():
            pixels = pixels[region]
    mean = pixels.mean(axis=0) if len(pixels) else np.full(3, 127.5)
    distances = [np.linalg.norm(mean - np.asarray(c, np.float64)) for c in TINT_COLOURS]
    return TINT_COLOURS[int(np.argmax(distances))]


def overlay(image, mask, segments=None, colour=None, alpha=0.5, void=None,
            outline=True) -> np.ndarray:
    """Paint a foreground mask, void pixels and superpixel boundaries on an image.

    Foreground pixels become ``(1 - alpha) image + alpha colour``, void pixels
    ``(1 - alpha) image + alpha VOID_COLOUR`` (void wins over foreground: it is
    ignored by every score), and boundary pixels are set to
    :data:`BOUNDARY_COLOUR`, on top of both. Last, the shown foreground (mask
    minus void) is outlined with two lines of :func:`outline_width` pixels:
    :data:`OUTLINE_INNER` (white) on its side of the boundary and
    :data:`OUTLINE_OUTER` (black) on the other side. Other pixels keep their
    value.

    Why both: a tint alone vanishes on an object of its own colour (a red
    car under a red tint). A white line beside a black one contrasts with
    any image, whatever its colour or brightness (one of the two tones
    always does, and their edge always does), so the extent of the
    foreground is readable everywhere; and the default tint is chosen by
    :func:`contrasting_colour` to differ from the colour it covers. The
    outline goes over the superpixel boundaries, which a predicted mask's
    boundary always follows (predictions are painted superpixels).

    Parameters
    ----------
    image : ndarray of uint8, shape (H, W, 3)
        RGB image.
    mask : ndarray of bool or 0/1 integers, shape (H, W)
        Foreground.
    segments : ndarray of int, shape (H, W), optional
        Superpixel map; the pixels on both sides of every change of label
        are drawn as boundary (two pixels wide, so the line survives the
        downsampling of a figure cell).
    colour : sequence of 3 int in 0..255, optional
        RGB of the foreground tint; default
        ``contrasting_colour(image, mask)``.
    alpha : float in [0, 1], default 0.5
        Opacity of the foreground and void colours.
    void : ndarray of bool or 0/1 integers, shape (H, W), optional
        Pixels to show grey (VOC void).
    outline : bool, default True
        Draw the two-tone outline of the foreground.

    Returns
    -------
    ndarray of uint8, shape (H, W, 3)
        A new image (rounded to the nearest integer).

    Raises
    ------
    ValueError
        Wrong shapes or dtypes, mask values other than 0/1, alpha outside
        [0, 1] or a colour that is not three values in 0..255.
    """
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"image must have shape (H, W, 3), got {image.shape}")
    if image.dtype != np.uint8:
        raise ValueError(f"image must be uint8 RGB, got dtype {image.dtype}")
    hw = image.shape[:2]
    mask = _as_binary(mask, hw, "mask")
    alpha = float(alpha)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if void is not None:
        void = _as_binary(void, hw, "void")
    if colour is None:
        colour = contrasting_colour(image, mask if void is None else mask & ~void)
    rgb = np.asarray(colour, dtype=np.float64)
    if rgb.shape != (3,) or not ((rgb >= 0) & (rgb <= 255)).all():
        raise ValueError(f"colour must be 3 values in 0..255, got {colour!r}")

    out = image.astype(np.float64)
    out[mask] = (1.0 - alpha) * out[mask] + alpha * rgb
    if void is not None:
        out[void] = (1.0 - alpha) * image[void] + alpha * np.asarray(VOID_COLOUR, np.float64)
    out = np.clip(np.rint(out), 0, 255).astype(np.uint8)
    if segments is not None:
        segments = np.asarray(segments)
        if segments.shape != hw:
            raise ValueError(f"segments has shape {segments.shape}, expected {hw}")
        if not np.issubdtype(segments.dtype, np.integer):
            raise ValueError(f"segments must be an integer label map, got dtype {segments.dtype}")
        # "thick" marks both sides; "inner" would skip the side of label 0,
        # which is an ordinary superpixel here, not background.
        out[find_boundaries(segments, mode="thick")] = BOUNDARY_COLOUR
    if outline:
        shown = mask if void is None else mask & ~void
        width = outline_width(hw)
        # the image's border is not a boundary of the foreground
        out[shown & _dilate(~shown, width)] = OUTLINE_INNER
        out[~shown & _dilate(shown, width)] = OUTLINE_OUTER
    return out


def image_iou(truth, pred) -> float | None:
    """Intersection over union of one image's prediction, void excluded.

    Parameters
    ----------
    truth : ndarray of uint8, shape (H, W)
        0 (background), 1 (foreground) or 255 (void, ignored).
    pred : ndarray of bool or 0/1 integers, shape (H, W)
        Predicted foreground.

    Returns
    -------
    float in [0, 1] or None
        ``TP / (TP + FP + FN)`` over the non-void pixels; None when that union
        is empty (no foreground in truth nor prediction), where IoU is undefined.

    Raises
    ------
    ValueError
        Shape mismatch, or values outside {0, 1, 255} / {0, 1}.
    """
    truth = np.asarray(truth)
    if truth.ndim != 2:
        raise ValueError(f"truth must have shape (H, W), got {truth.shape}")
    if not np.isin(truth, (0, 1, VOID_LABEL)).all():
        raise ValueError("truth must hold only 0, 1 and 255 (void)")
    pred = _as_binary(pred, truth.shape, "prediction")
    fg, bg = truth == 1, truth == 0
    tp = np.count_nonzero(fg & pred)
    union = tp + np.count_nonzero(bg & pred) + np.count_nonzero(fg & ~pred)
    return None if union == 0 else tp / union


# --------------------------------------------------------------------------
# Layout helpers
# --------------------------------------------------------------------------

def _add_caption(fig: Figure, caption: str) -> None:
    """Caption as a small footer, wrapped to the figure width.

    ``supxlabel`` rather than ``fig.text``: constrained layout reserves room
    for it, so it never overlaps the axes.
    """
    if not caption:
        return
    width_chars = max(40, int(fig.get_figwidth() * 72 / (0.52 * _CAPTION_SIZE)))
    text = "\n".join(textwrap.fill(line, width_chars) if line else ""
                     for line in caption.splitlines())
    fig.supxlabel(text, x=0.0, ha="left", fontsize=_CAPTION_SIZE, color="0.25",
                  multialignment="left")


def _bare(ax) -> None:
    """An image axes without ticks or frame (but keeping its y label)."""
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)


# --------------------------------------------------------------------------
# Qualitative results
# --------------------------------------------------------------------------

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
    handles = [(tint, label)]
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
        preds = [_as_binary(row["predictions"][m], truth.shape, f"prediction of {m}")
                 for m in methods]
        tinted = (truth == 1) | np.logical_or.reduce(preds, axis=0) if preds else truth == 1
        tint = contrasting_colour(image, tinted & ~void)
        if tint not in tints:
            tints.append(tint)
        any_segments |= segments is not None
        any_void |= bool(void.any())
        cells = [(image, "input"),
                 (overlay(image, truth == 1, segments, colour=tint, void=void), "ground truth")]
        for m, pred in zip(methods, preds):
            iou = image_iou(truth, pred)
            score = "-" if iou is None else f"{100 * iou:.1f}%"
            cells.append((overlay(image, pred, segments, colour=tint, void=void),
                          f"{m}  IoU {score}"))
        for c, (picture, title) in enumerate(cells):
            ax = fig.add_subplot(grid[1 + r, c])
            ax.imshow(picture, interpolation="antialiased")
            _bare(ax)
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
    _add_caption(fig, caption)
    return fig


# --------------------------------------------------------------------------
# Object detector: detections and average shapes (the paper's Fig. 2)
# --------------------------------------------------------------------------

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
        _bare(ax)
        ax.set_title(str(row["image_id"]), fontsize=8)
    for k in range(n_comp):
        cells = [(shapes.root[k], f"component {k + 1}: root ({int(shapes.counts[k])} "
                                  "detections)")]
        cells += [(part, f"part {i + 1}") for i, part in enumerate(shapes.parts[k])]
        for c, (shape, title) in enumerate(cells):
            ax = fig.add_subplot(grid[1 + k, c])
            ax.imshow(shape, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
            _bare(ax)
            ax.set_title(title, fontsize=7)
    _add_caption(fig, caption)
    return fig


# --------------------------------------------------------------------------
# Loss surface and its triangulations
# --------------------------------------------------------------------------

def loss_surface_figure(loss, n_pos, n_neg, n_triangles=(N_TRIANGLES, 15),
                        caption: str = "") -> tuple[Figure, list]:
    """Exact loss surface beside its piecewise-linear approximations (Fig. 1).

    Panel 1 shows ``Delta(FP, FN)`` over ``[0, Nn] x [0, Np]`` as colour; one
    more panel per M shows the approximation of
    :func:`segstruct.inference.triangulation.triangulate` with M triangles, in the same
    colour scale, with the triangle edges drawn over it and titled with its
    maximum and mean error over the integer (FP, FN) lattice.

    Parameters
    ----------
    loss : str, Loss or callable
        Anything :func:`segstruct.inference.losses.get_loss` accepts; pass
        ``get_loss("fbeta", beta=b)`` for a parametrised loss.
    n_pos, n_neg : float
        Np and Nn (the FN and FP ranges), >= 0.
    n_triangles : int or sequence of int, default (40, 15)
        One approximation panel per value (the paper shows 40 and 15).
    caption : str, default ""
        Footer naming the loss, Np, Nn, M and the code version.

    Returns
    -------
    fig : matplotlib.figure.Figure
        ``1 + len(n_triangles)`` image axes (and a shared colour bar).
    triangulations : list of Triangulation
        The meshes drawn, in panel order; their ``max_error`` and
        ``mean_error`` are the values in the titles.
    """
    loss = get_loss(loss)
    if isinstance(n_triangles, (int, np.integer)):
        n_triangles = (n_triangles,)
    tris = [triangulate(loss, n_pos, n_neg, n_triangles=int(m)) for m in n_triangles]
    name = tris[0].loss_name if tris else getattr(loss, "name", "loss")

    # A grid fine enough to look continuous; the same grid for every panel.
    # Padded domains (Np or Nn = 0) extend to the triangles' corners.
    x_max = max([float(n_neg)] + [float(t.vertices[:, 0].max()) for t in tris]) or 1.0
    y_max = max([float(n_pos)] + [float(t.vertices[:, 1].max()) for t in tris]) or 1.0
    fp, fn = np.meshgrid(np.linspace(0.0, x_max, 301), np.linspace(0.0, y_max, 201))
    inside = (fp <= n_neg) & (fn <= n_pos)
    exact = np.where(inside, loss(np.minimum(fp, n_neg), np.minimum(fn, n_pos),
                                  n_pos, n_neg), np.nan)
    surfaces = [exact] + [t.evaluate(fp, fn) for t in tris]
    vmin, vmax = float(np.nanmin(exact)), float(np.nanmax(exact))
    if vmax <= vmin:            # a flat loss still needs a colour range
        vmax = vmin + 1.0

    fig = Figure(figsize=(3.4 * len(surfaces) + 0.8, 3.3), layout="constrained")
    axes = fig.subplots(1, len(surfaces), squeeze=False)[0]
    extent = (0.0, x_max, 0.0, y_max)
    for k, (ax, z) in enumerate(zip(axes, surfaces)):
        im = ax.imshow(z, origin="lower", extent=extent, aspect="auto", cmap="viridis",
                       vmin=vmin, vmax=vmax, interpolation="nearest")
        ax.set_xlabel("FP (false positives)")
        # counts: integer ticks, as on the lattice the labellings reach
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        if k == 0:
            ax.set_ylabel("FN (false negatives)")
            ax.set_title(f"exact loss: {name}\n$N_p$ = {n_pos:g}, $N_n$ = {n_neg:g}",
                         fontsize=10)
            continue
        tri = tris[k - 1]
        ax.triplot(tri.vertices[:, 0], tri.vertices[:, 1], tri.triangles,
                   color="white", linewidth=0.7, alpha=0.9)
        ax.set_xlim(0.0, x_max)
        ax.set_ylim(0.0, y_max)
        # "~" marks errors estimated by sampling (huge lattices only)
        approx = "" if tri.error_exact else "~"
        ax.set_title(f"M = {len(tri)} triangles\nmax error {approx}{tri.max_error:.3g}, "
                     f"mean {approx}{tri.mean_error:.3g}", fontsize=10)
    fig.colorbar(im, ax=list(axes), label=r"$\Delta$(FP, FN)", shrink=0.9)
    _add_caption(fig, caption)
    return fig, tris


# --------------------------------------------------------------------------
# Training curves
# --------------------------------------------------------------------------

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
        Method name -> :attr:`segstruct.learn.ssvm.StructuredSVM.log_` (or the
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
    _add_caption(fig, caption)
    return fig


# --------------------------------------------------------------------------
# Cross-validation of C
# --------------------------------------------------------------------------

def _values(seq) -> np.ndarray:
    """Floats with NaN for None (an IoU that is undefined is not drawn)."""
    return np.array([np.nan if v is None else v for v in seq], np.float64)


def cv_figure(curves, caption: str = "") -> Figure:
    """Held-out VOC IoU against C, one line per method (``--C auto``).

    Each method's pooled IoU (TP, FP, FN summed over every held-out image
    of every fold) is a line with markers over C on a log axis; its per-fold
    IoUs are faint dots at the same C, and its chosen C is a large star on
    the line, named in the legend.

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
    ax.set_xscale("log")
    grid_values = sorted({float(c) for curve in curves.values() for c in curve["grid"]})
    if grid_values:          # the values tried, not just decades
        ax.set_xticks(grid_values, [f"{c:g}" for c in grid_values])
        ax.minorticks_off()
    ax.set_xlabel("C, in 1/2 ||w||^2 + C xi (log scale)")
    ax.set_ylabel("held-out VOC IoU %")
    ax.set_title(f"{'/'.join(map(str, folds))}-fold cross-validation of C: pooled (line), "
                 "per fold (dots), chosen (star)", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    if curves:
        ax.legend(fontsize=8, loc="best")
    _add_caption(fig, caption)
    return fig


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def save_figure(fig: Figure, path, dpi: float = 100) -> Path:
    """Render ``fig`` to PNG with the Agg canvas and write it atomically.

    The PNG is rendered into memory first and then written through
    :func:`segstruct.io.files.atomic_write_bytes`, so a reader never sees half a
    file and a failed render leaves any old file in place.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or Path
        Destination; missing parent directories are created.
    dpi : float, default 100
        Pixels per inch.

    Returns
    -------
    Path
    """
    path = Path(path)
    FigureCanvasAgg(fig)        # attach an Agg canvas: no GUI backend involved
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    data = buf.getvalue()
    atomic_write_bytes(path, lambda f: f.write(data))
    return path
