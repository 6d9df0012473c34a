"""Drawing helpers of the figures: masks painted on images (numpy in, numpy
out), captions, and PNG files written atomically.

Only matplotlib's object-oriented API is used (:class:`~matplotlib.figure.Figure`
rendered by the Agg canvas), never ``matplotlib.pyplot``: no window opens, no
global figure state is kept, and the functions are safe in worker processes
and on machines without a display.
"""
from __future__ import annotations

import io
import textwrap
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from skimage.segmentation import find_boundaries

from segstruct.io.files import atomic_write_bytes

__all__ = ["BOUNDARY_COLOUR", "CELL_INCHES", "OUTLINE_INNER", "OUTLINE_OUTER", "TINT_COLOURS",
           "VOID_COLOUR", "VOID_LABEL", "add_caption", "as_binary", "bare_axes",
           "contrasting_colour", "image_iou", "outline_width", "overlay", "save_figure"]


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


CAPTION_POINTS = 7          # points


def as_binary(mask, shape, what: str) -> np.ndarray:
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
    mask = as_binary(mask, hw, "mask")
    alpha = float(alpha)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if void is not None:
        void = as_binary(void, hw, "void")
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
    pred = as_binary(pred, truth.shape, "prediction")
    fg, bg = truth == 1, truth == 0
    tp = np.count_nonzero(fg & pred)
    union = tp + np.count_nonzero(bg & pred) + np.count_nonzero(fg & ~pred)
    return None if union == 0 else float(tp) / float(union)


def add_caption(fig: Figure, caption: str) -> None:
    """Caption as a small footer, wrapped to the figure width.

    ``supxlabel`` rather than ``fig.text``: constrained layout reserves room
    for it, so it never overlaps the axes.
    """
    if not caption:
        return
    width_chars = max(40, int(fig.get_figwidth() * 72 / (0.52 * CAPTION_POINTS)))
    text = "\n".join(textwrap.fill(line, width_chars) if line else ""
                     for line in caption.splitlines())
    fig.supxlabel(text, x=0.0, ha="left", fontsize=CAPTION_POINTS, color="0.25",
                  multialignment="left")


def bare_axes(ax) -> None:
    """An image axes without ticks or frame (but keeping its y label)."""
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)


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
