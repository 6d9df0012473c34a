"""Object boxes from segmentation masks, and box geometry.

The data sets hold class masks, not boxes, so the detector's positives are
the connected components of a class in a mask. Tiny components (a few stray
pixels, a far-away object) carry no appearance to learn from, and a box that
is mostly void (VOC's 255 band, CamVid's cyclists) holds an object nobody
labelled, so both are left out of training and are "difficult" in scoring.
"""
from __future__ import annotations

import numpy as np
from scipy import ndimage

VOID = 255


def boxes_from_mask(mask: np.ndarray, class_index: int, min_area: int = 100,
                    max_void_fraction: float = 0.5, return_ignored: bool = False):
    """One box per connected component of a class in a VOC mask.

    Parameters
    ----------
    mask : (H, W) uint8 array
        Class index per pixel, 255 = void.
    class_index : int
        The class whose components become boxes.
    min_area : int
        Components of fewer pixels are left out (pixels, 8-connected count).
    max_void_fraction : float in [0, 1]
        A component whose box has more than this share of void pixels is
        left out: the object is mostly unlabelled.
    return_ignored : bool
        Also return the boxes that were left out (VOC's "difficult" objects:
        a detection on one is neither a hit nor a false positive).

    Returns
    -------
    boxes : (K, 4) int64 array
        ``(x0, y0, x1, y1)`` in pixels, inclusive-exclusive (``x1 - x0`` is the
        width), in raster order of each component's first pixel.
    ignored : (J, 4) int64 array, only when ``return_ignored``.
    """
    mask = np.asarray(mask)
    if mask.ndim != 2:
        raise ValueError(f"expected an (H, W) mask, got shape {mask.shape}")
    # 8-connectivity: a thin diagonal limb (a leg, a pole) stays one object
    components, n = ndimage.label(mask == class_index, structure=np.ones((3, 3), bool))
    keep, ignored = [], []
    void = mask == VOID
    for k, sl in enumerate(ndimage.find_objects(components), start=1):
        if sl is None:
            continue
        box = (sl[1].start, sl[0].start, sl[1].stop, sl[0].stop)
        area = int(np.count_nonzero(components[sl] == k))
        void_share = float(void[sl].mean())
        if area < min_area or void_share > max_void_fraction:
            ignored.append(box)
        else:
            keep.append(box)
    keep_arr = np.asarray(keep, np.int64).reshape(-1, 4)
    if return_ignored:
        return keep_arr, np.asarray(ignored, np.int64).reshape(-1, 4)
    return keep_arr


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of every pair of boxes.

    Parameters
    ----------
    a : (N, 4) array, b : (M, 4) array
        Boxes ``(x0, y0, x1, y1)``, inclusive-exclusive pixel coordinates
        (floats allowed).

    Returns
    -------
    iou : (N, M) float64 array in [0, 1]; 0 where both boxes are empty.
    """
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    w = np.clip(np.minimum(a[:, None, 2], b[None, :, 2])
                - np.maximum(a[:, None, 0], b[None, :, 0]), 0, None)
    h = np.clip(np.minimum(a[:, None, 3], b[None, :, 3])
                - np.maximum(a[:, None, 1], b[None, :, 1]), 0, None)
    inter = w * h
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def non_maximum_suppression(boxes: np.ndarray, scores: np.ndarray,
                            overlap: float = 0.5, limit: int | None = None) -> np.ndarray:
    """Greedy non-maximum suppression.

    Parameters
    ----------
    boxes : (N, 4) array ``(x0, y0, x1, y1)``.
    scores : (N,) array; higher is better.
    overlap : float
        A box is dropped when its IoU with a kept, better-scoring box is
        above this.
    limit : int, optional
        Stop once this many boxes are kept: the first ``limit`` of the
        whole answer, at ``limit`` passes instead of one per kept box.

    Returns
    -------
    keep : (K,) int64 indices into ``boxes``, best score first. Ties are
        broken by index (a stable sort), so the result is deterministic.
    """
    order = np.argsort(-np.asarray(scores, np.float64), kind="stable")
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    # box_iou's numbers, one kept box against the rest: the coordinates as
    # columns and the areas made once (the same operations on each pair, so
    # the same IoU), instead of a box_iou call with its broadcasting per box
    x0, y0, x1, y1 = (np.ascontiguousarray(boxes[:, k]) for k in range(4))
    area = (x1 - x0) * (y1 - y0)
    keep: list[np.intp] = []
    while order.size and (limit is None or len(keep) < limit):
        i = order[0]
        keep.append(i)
        if order.size == 1:
            break
        rest = order[1:]
        w = np.minimum(x1[i], x1[rest]) - np.maximum(x0[i], x0[rest])
        h = np.minimum(y1[i], y1[rest]) - np.maximum(y0[i], y0[rest])
        inter = np.clip(w, 0, None) * np.clip(h, 0, None)
        union = area[i] + area[rest] - inter
        iou = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        order = rest[iou <= overlap]
    return np.asarray(keep, np.int64)
