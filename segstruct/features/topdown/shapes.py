"""Average object shapes under a detector's filters (the paper's Fig. 2).

The trained detector is run on the training images; at every detection that
scores above zero, the ground-truth foreground is cropped under the root
box and under each part box, resized to that filter's size in cells, and
averaged. The result says, for each filter, how likely each of its cells is
to be object when the filter fires: the shape a detection votes for.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from segstruct.features.topdown.boxes import VOID
from segstruct.features.topdown.detector import Detector


@dataclass
class AverageShapes:
    """Per component, the average foreground under the root and each part.

    Attributes
    ----------
    root : list over components of (h, w) float64 arrays in [0, 1], one
        value per root-filter cell.
    parts : list over components of (P, s, s) float64 arrays in [0, 1].
    counts : (n_components,) int64 detections averaged per component.
    """

    root: list
    parts: list
    counts: np.ndarray

    def to_arrays(self) -> dict:
        """Arrays for ``ArrayCache`` (``root{k}``, ``parts{k}``, ``counts``)."""
        out = {"counts": np.asarray(self.counts, np.int64)}
        for k, (r, p) in enumerate(zip(self.root, self.parts)):
            out[f"root{k}"], out[f"parts{k}"] = r, p
        return out

    @classmethod
    def from_arrays(cls, arrays: dict) -> "AverageShapes":
        n = len(arrays["counts"])
        return cls([np.asarray(arrays[f"root{k}"]) for k in range(n)],
                   [np.asarray(arrays[f"parts{k}"]) for k in range(n)],
                   np.asarray(arrays["counts"], np.int64))


def crop_resize(values: np.ndarray, box, size) -> np.ndarray:
    """Area-average ``values`` under a box onto a (rows, cols) grid.

    Parameters
    ----------
    values : (H, W) float array.
    box : (x0, y0, x1, y1) pixels, may extend past the image (outside
        counts as 0).
    size : (rows, cols) of the output.

    Returns
    -------
    (rows, cols) float64 array: the mean of ``values`` over each grid
    cell's share of the box.
    """
    rows, cols = size
    x0, y0, x1, y1 = (float(v) for v in box)
    # Sample the box at a fine grid (4 samples per output cell and at least
    # one per pixel), then average blocks: area averaging that also works
    # for boxes smaller than the grid or hanging off the image.
    fy = max(4, int(np.ceil((y1 - y0) / rows)))
    fx = max(4, int(np.ceil((x1 - x0) / cols)))
    sx = (x1 - x0) / (cols * fx)
    sy = (y1 - y0) / (rows * fy)
    m = np.array([[sx, 0, x0 + 0.5 * sx - 0.5], [0, sy, y0 + 0.5 * sy - 0.5]], np.float64)
    fine = cv2.warpAffine(np.asarray(values, np.float32), m, (cols * fx, rows * fy),
                          flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return fine.reshape(rows, fy, cols, fx).mean(axis=(1, 3)).astype(np.float64)


def average_shapes(detector: Detector, images: Sequence[np.ndarray],
                   masks: Sequence[np.ndarray], class_index: int,
                   min_score: float = 0.0, pyramids: dict | None = None) -> AverageShapes:
    """Average ground-truth foreground under each filter of confident detections.

    Parameters
    ----------
    detector : Detector
    images : sequence of (H, W, 3) uint8 training images.
    masks : sequence of (H, W) uint8 VOC masks, same order (255 = void).
    class_index : int, the foreground class.
    min_score : float, detections scoring above this are used (paper: 0).
    pyramids : dict, optional, ``detector.pyramid(images[k])`` by index k,
        for the images whose pyramids the caller has (``train_detector``
        leaves those of its last mining round).

    Returns
    -------
    AverageShapes. Void pixels count neither as object nor as background
    (each cell is a ratio of foreground to labelled area); a component
    without any detection gets zero shapes.
    """
    comps = detector.components
    fg_sum = [[np.zeros(c.root.shape[:2])] + [np.zeros(c.parts.shape[1:3])] * c.n_parts
              for c in comps]
    lab_sum = [[np.zeros_like(a) for a in row] for row in fg_sum]
    counts = np.zeros(len(comps), np.int64)
    pyramids = pyramids or {}
    for i, mask in enumerate(masks):
        mask = np.asarray(mask)
        # the root's whole box, as the features place the shape (not clipped)
        dets, parts = detector.detect(images[i], threshold=min_score, return_parts=True,
                                      clip=False, pyramid=pyramids.get(i))
        if len(dets) == 0:
            continue
        fg = (mask == class_index).astype(np.float32)
        labelled = (mask != VOID).astype(np.float32)
        for det, part_boxes in zip(dets, parts):
            k = int(det[5])
            counts[k] += 1
            boxes = [det[:4]] + list(part_boxes)
            for f, box in enumerate(boxes):
                size = fg_sum[k][f].shape
                fg_sum[k][f] = fg_sum[k][f] + crop_resize(fg, box, size)
                lab_sum[k][f] = lab_sum[k][f] + crop_resize(labelled, box, size)
    roots, part_shapes = [], []
    for k, c in enumerate(comps):
        mean = [np.divide(a, b, out=np.zeros_like(a), where=b > 1e-9)
                for a, b in zip(fg_sum[k], lab_sum[k])]
        roots.append(mean[0])
        part_shapes.append(np.asarray(mean[1:]).reshape(c.n_parts, *c.parts.shape[1:3]))
    return AverageShapes(roots, part_shapes, counts)
