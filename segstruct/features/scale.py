"""The working resolution: one long side for every image.

Superpixel sizes (Felzenszwalb's minimum area), descriptor cells and the
detector's pyramid are all in pixels, so an image and its up-sampled copy
would get other superpixels and other features. Every image is therefore
resized to a working long side (``FeatureConfig.long_side``) before any of
them see it, and the superpixel map is brought back to the image's own
pixels, so that masks are painted and pixels counted where the user's image
has them. Plain numpy in, numpy out.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["AUTO_MAX_LONG_SIDE", "MIN_LONG_SIDE", "UPSAMPLINGS", "auto_long_side",
           "resize_image", "resize_labels", "upsampling_key", "working_key", "working_shape"]

#: The smallest working long side, pixels (a few SIFT cells).
MIN_LONG_SIDE = 16
#: The largest working long side "auto" gives, pixels: training photos of
#: many megapixels are brought down to it rather than every image up to
#: them (cost grows with the pixels; not a measured optimum of IoU).
AUTO_MAX_LONG_SIDE = 1024
#: How an image smaller than the working resolution is enlarged to it
#: (``FeatureConfig.upsampling``): linear interpolation, or Lanczos's
#: 8x8-pixel windowed sinc, which keeps more of the image's finest detail.
UPSAMPLINGS = ("linear", "lanczos")


def working_shape(shape, long_side: int | None) -> tuple[int, int]:
    """The (height, width) an image of ``shape`` is worked on.

    Parameters
    ----------
    shape : (H, W, ...) the image's shape in pixels.
    long_side : int or None
        The working long side in pixels; None works on images as given.

    Returns
    -------
    (h, w) : tuple of int, the aspect ratio kept (rounded to whole pixels,
        at least 1), ``max(h, w) == long_side``; ``(H, W)`` itself when
        ``long_side`` is None or already the image's long side.
    """
    h, w = int(shape[0]), int(shape[1])
    if long_side is None or max(h, w) == long_side:
        return h, w
    s = long_side / max(h, w)
    return max(1, int(round(h * s))), max(1, int(round(w * s)))


def resize_image(image: np.ndarray, shape, upsampling: str = "linear") -> np.ndarray:
    """An (H, W, C) uint8 image resized to ``shape`` = (h, w).

    Shrinking averages pixels over their area (no aliasing: a 12-megapixel
    photo's texture must not turn into noise); growing interpolates as
    ``upsampling`` says (one of :data:`UPSAMPLINGS`).
    """
    import cv2
    if upsampling not in UPSAMPLINGS:
        raise ValueError(f"unknown upsampling {upsampling!r}; use one of {UPSAMPLINGS}")
    grow = cv2.INTER_LANCZOS4 if upsampling == "lanczos" else cv2.INTER_LINEAR
    h, w = int(shape[0]), int(shape[1])
    if image.shape[:2] == (h, w):
        return image
    shrink = h * w < image.shape[0] * image.shape[1]
    out = cv2.resize(np.ascontiguousarray(image), (w, h),
                     interpolation=cv2.INTER_AREA if shrink else grow)
    return out.reshape((h, w) + image.shape[2:])


def resize_labels(labels: np.ndarray, shape) -> np.ndarray:
    """An (H, W) label map resized to ``shape`` = (h, w) by nearest pixel.

    Each output pixel takes the label of the input pixel its centre falls
    in, so no label is invented; growing keeps every label, shrinking can
    drop labels narrower than a pixel of the output.
    """
    h, w = int(shape[0]), int(shape[1])
    H, W = labels.shape[:2]
    if (H, W) == (h, w):
        return labels
    rows = np.minimum(((np.arange(h) + 0.5) * (H / h)).astype(np.int64), H - 1)
    cols = np.minimum(((np.arange(w) + 0.5) * (W / w)).astype(np.int64), W - 1)
    return labels[rows[:, None], cols[None, :]]


def auto_long_side(sizes: Iterable) -> int:
    """The working long side (pixels) that ``long_side="auto"`` gives a
    training split of images of the given (H, W) sizes: the largest long
    side among them, so that no training image loses pixels and the smaller
    ones are enlarged to the same scale; at most :data:`AUTO_MAX_LONG_SIDE`
    and at least :data:`MIN_LONG_SIDE`.

    Chosen over the median long side and over images as given on the shared
    data sets with images of many sizes (the horses, Penn-Fudan): the
    largest scored clearly better on val on both, the median a little worse
    than images as given (with Felzenszwalb's minimum superpixel area in
    pixels, small images got few, coarse superpixels).

    Raises
    ------
    ValueError
        For no sizes.
    """
    sides = [max(int(h), int(w)) for h, w in sizes]
    if not sides:
        raise ValueError("no image to take the working long side from")
    return min(AUTO_MAX_LONG_SIDE, max(MIN_LONG_SIDE, max(sides)))


def upsampling_key(upsampling: str) -> dict:
    """The part of a cache key (or record) that names the upsampling of
    images enlarged to the working resolution: empty for linear, what every
    entry made before the setting used, so that those entries are found
    again."""
    return {} if upsampling == "linear" else {"upsampling": upsampling}


def working_key(work, upsampling: str) -> dict:
    """The part of a cache key that says how an image was brought to the
    working resolution: its working (h, w) and :func:`upsampling_key`;
    empty for an image worked on at its own size (the entries made before
    the working resolution)."""
    if work is None:
        return {}
    return {"work": [int(v) for v in work], **upsampling_key(upsampling)}
