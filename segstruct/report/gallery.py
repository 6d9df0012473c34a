"""A class's gallery for ``report.html``: each evaluation image with its
ground truth and every method's mask side by side, as small PNGs, with the
per-image IoU under each, sorted by where the methods disagree most.

The rows are made from the panels of
:func:`segstruct.compare.figures.qualitative_panels` (the images, truths,
superpixels and masks that the qualitative figures draw), shrunk to
thumbnails before they are drawn with :func:`~segstruct.report.drawing.overlay`,
so that a page of every evaluation image stays small.

How much the methods disagree on an image is the spread of their per-image
IoU (the largest minus the smallest, in points); an image where a method's
IoU is undefined (no foreground in truth nor in its mask: nothing to find
and nothing claimed) counts that method at 100 %, as it is right there.
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from segstruct.evaluate.scoring import iou
from segstruct.report.drawing import VOID_LABEL, contrasting_colour, overlay

__all__ = ["DISAGREEMENT_POINTS", "THUMBNAIL_SIDE", "GalleryRow", "gallery_row", "iou_percent",
           "png_bytes", "sorted_rows", "spread", "thumbnail_shape"]

#: Longest side of a gallery picture, pixels: a row of input, truth and six
#: methods then fits a common screen's width.
THUMBNAIL_SIDE = 200
#: An image counts as a disagreement when its per-image IoU spread across the
#: methods reaches this many points (the table prints tenths; a smaller spread
#: is a few pixels on a superpixel's edge).
DISAGREEMENT_POINTS = 1.0
#: Colours of a gallery PNG: a palette PNG is a fraction of an RGB one's size
#: and the tints, outlines and photos stay readable.
PNG_COLOURS = 128


@dataclass
class GalleryRow:
    """One evaluation image of a class's gallery.

    Attributes
    ----------
    image_id : str
    cells : list of (title, PNG bytes): the input, the ground truth, then
        one per method in the comparison's order.
    iou : dict, method -> the image's IoU in percent, None where undefined.
    spread : float, points between the methods' largest and smallest IoU
        (:func:`spread`).
    """

    image_id: str
    cells: list[tuple[str, bytes]] = field(default_factory=list)
    iou: dict[str, float | None] = field(default_factory=dict)
    spread: float = 0.0

    @property
    def disagree(self) -> bool:
        """Whether the methods disagree on this image (:data:`DISAGREEMENT_POINTS`)."""
        return self.spread >= DISAGREEMENT_POINTS


def iou_percent(counts) -> float | None:
    """IoU in percent of one image's (TP, FP, FN); None when undefined."""
    value = iou(*(float(c) for c in counts))
    return None if np.isnan(value) else 100.0 * value


def spread(ious: dict) -> float:
    """Points between the largest and smallest per-image IoU of ``ious``
    (method -> percent or None; None counts as 100: see the module's
    docstring); 0 for fewer than two methods."""
    values = [100.0 if v is None else float(v) for v in ious.values()]
    return max(values) - min(values) if len(values) > 1 else 0.0


def thumbnail_shape(shape, side: int = THUMBNAIL_SIDE) -> tuple[int, int]:
    """(h, w) of an image of ``shape`` shrunk to a longest side of ``side``
    pixels (never enlarged)."""
    h, w = shape[:2]
    scale = min(1.0, side / max(h, w, 1))
    return max(1, int(round(h * scale))), max(1, int(round(w * scale)))


def _nearest(array: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """A label array (masks, truth, superpixels) resized by nearest neighbour:
    no label is invented between two."""
    rows = (np.arange(shape[0]) * array.shape[0]) // shape[0]
    cols = (np.arange(shape[1]) * array.shape[1]) // shape[1]
    return np.asarray(array)[rows][:, cols]


def png_bytes(picture: np.ndarray) -> bytes:
    """An (H, W, 3) uint8 picture as palette PNG bytes (:data:`PNG_COLOURS`)."""
    out = io.BytesIO()
    Image.fromarray(np.asarray(picture, np.uint8)).quantize(PNG_COLOURS).save(
        out, format="PNG", optimize=True)
    return out.getvalue()


def gallery_row(panel: dict, methods, counts: dict | None = None,
                side: int = THUMBNAIL_SIDE) -> GalleryRow:
    """One image's gallery row, its pictures drawn as thumbnails.

    Parameters
    ----------
    panel : dict of :func:`segstruct.compare.figures.qualitative_panels`:
        "image_id", "image" ((H, W, 3) uint8), "truth" ((H, W) uint8 0/1,
        255 void), "segments" ((H, W) int or None), "predictions" (method ->
        (H, W) 0/1) and optionally "counts" (method -> (TP, FP, FN)).
    methods : the methods' columns, in order; each in the panel's predictions.
    counts : method -> the image's (TP, FP, FN) to score it by (a record's
        per-image counts); default the panel's "counts", else counted here
        from the full-size masks.
    side : longest side of the thumbnails, pixels.

    Returns
    -------
    GalleryRow
    """
    methods = list(methods)
    image, truth = np.asarray(panel["image"]), np.asarray(panel["truth"])
    counts = {**panel.get("counts", {}), **(counts or {})}
    ious = {}
    for m in methods:
        if m not in counts:
            pred = np.asarray(panel["predictions"][m]).astype(bool)
            # void pixels (255) are neither 0 nor 1: left out, as the VOC measure does
            counts[m] = (np.count_nonzero(pred & (truth == 1)),
                         np.count_nonzero(pred & (truth == 0)),
                         np.count_nonzero(~pred & (truth == 1)))
        ious[m] = iou_percent(counts[m])
    shape = thumbnail_shape(image.shape, side)
    small = np.asarray(Image.fromarray(image.astype(np.uint8)).resize(
        shape[::-1], Image.Resampling.BILINEAR)) if shape != image.shape[:2] else image
    small_truth = _nearest(truth, shape)
    segments = panel.get("segments")
    small_segments = None if segments is None else _nearest(segments, shape)
    masks = {m: _nearest(np.asarray(panel["predictions"][m]).astype(bool), shape)
             for m in methods}
    void = small_truth == VOID_LABEL
    # one tint for the row, as qualitative_figure picks it, so its cells compare
    tinted = (small_truth == 1) | np.any(np.stack(list(masks.values())), axis=0) \
        if masks else small_truth == 1
    tint = contrasting_colour(small, tinted & ~void)
    cells = [("input", png_bytes(small)),
             ("ground truth", png_bytes(overlay(small, small_truth == 1, small_segments,
                                                colour=tint, void=void)))]
    cells += [(m, png_bytes(overlay(small, masks[m], small_segments, colour=tint, void=void)))
              for m in methods]
    return GalleryRow(str(panel["image_id"]), cells, ious, spread(ious))


def sorted_rows(rows) -> list[GalleryRow]:
    """Rows by disagreement, largest spread first (image id breaks ties)."""
    return sorted(rows, key=lambda r: (-r.spread, r.image_id))
