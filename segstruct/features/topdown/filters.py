"""A star-model component as one weight vector, and the filters' shapes:
what detector training optimises over (``training.py``)."""
from __future__ import annotations

import numpy as np

from segstruct.features.topdown.detector import DEFORMATION_DIM, Component, DetectorParams
from segstruct.features.topdown.hog import correlate


# --------------------------------------------------------------------------
# Model layout: a component <-> one weight vector


def pack(comp: Component, params: DetectorParams) -> np.ndarray:
    """A component's weights as one vector [root, parts, deformation, bias]."""
    return np.concatenate([comp.root.ravel(), comp.parts.ravel(), comp.deformation.ravel(),
                           [comp.bias / params.bias_feature]]).astype(np.float64)


def unpack(w: np.ndarray, like: Component, params: DetectorParams) -> Component:
    """Inverse of ``pack`` (shapes and anchors from ``like``)."""
    sizes = [like.root.size, like.parts.size, like.deformation.size]
    root, parts, deform, bias = np.split(np.asarray(w, np.float64), np.cumsum(sizes))
    return Component(root.reshape(like.root.shape).astype(np.float32),
                     parts.reshape(like.parts.shape).astype(np.float32),
                     like.anchors.copy(), deform.reshape(like.deformation.shape),
                     float(bias[0]) * params.bias_feature)


def lower_bounds(comp: Component, params: DetectorParams) -> np.ndarray:
    """Per-weight lower bounds: quadratic deformation costs stay positive."""
    lo = np.full(pack(comp, params).size, -np.inf)
    start = comp.root.size + comp.parts.size
    for i in range(comp.n_parts):
        lo[start + DEFORMATION_DIM * i + 1] = params.min_deformation
        lo[start + DEFORMATION_DIM * i + 3] = params.min_deformation
    return lo


def placement_features(comp: Component, params: DetectorParams, feats: np.ndarray,
                       part_map, ls, r: int, q: int) -> np.ndarray:
    """The feature vector of a root at cell (r, q) with its chosen parts.

    ``pack(comp) @ placement_features(...)`` equals ``ls.score[r, q]``
    (``ls`` the component's ``LevelScores`` on these maps).

    Returns
    -------
    (D,) float32 array, the layout of ``pack``.
    """
    h, w = comp.root.shape[:2]
    pieces = [feats[r:r + h, q:q + w].ravel()]
    deform = np.zeros((comp.n_parts, DEFORMATION_DIM), np.float32)
    s = comp.parts.shape[1] if comp.n_parts else 0
    for i in range(comp.n_parts):
        pr, pc = int(ls.part_rows[i, r, q]), int(ls.part_cols[i, r, q])
        pieces.append(part_map[pr:pr + s, pc:pc + s].ravel())
        dy, dx = pr - (2 * r + comp.anchors[i, 0]), pc - (2 * q + comp.anchors[i, 1])
        deform[i] = (-dx, -dx * dx, -dy, -dy * dy)
    pieces += [deform.ravel(), np.array([params.bias_feature], np.float32)]
    return np.concatenate(pieces).astype(np.float32)


# --------------------------------------------------------------------------
# Initialisation


def root_size(boxes: np.ndarray, params: DetectorParams) -> tuple:
    """(rows, cols) of a root filter for boxes (K, 4): the median aspect, and
    the 20th percentile area at the finest root scale, within bounds."""
    h = (boxes[:, 3] - boxes[:, 1]).astype(np.float64)
    w = (boxes[:, 2] - boxes[:, 0]).astype(np.float64)
    aspect = float(np.median(h / w))
    area = np.percentile(h * w, 20) * (params.root_scale / params.cell) ** 2
    area = float(np.clip(area, params.min_root_area, params.max_root_area))
    rows = max(params.min_root_side, int(round(np.sqrt(area * aspect))))
    cols = max(params.min_root_side, int(round(np.sqrt(area / aspect))))
    return rows, cols


def init_parts(root: np.ndarray, params: DetectorParams):
    """DPM's part initialisation from a trained root filter.

    The root is doubled in resolution; each part (square, sized so that the
    parts cover ``part_area_fraction`` of the doubled root) takes the window
    of highest positive-weight energy, which is then zeroed so the next part
    goes elsewhere.

    Returns
    -------
    parts : (P, s, s, 32) float32, anchors : (P, 2) int64,
    deformation : (P, 4) float64 (DPM's initial cost, 0.1 dx^2 + 0.1 dy^2).
    """
    n = params.n_parts
    big = np.repeat(np.repeat(root, 2, axis=0), 2, axis=1)
    rows, cols = big.shape[:2]
    side = int(round(np.sqrt(params.part_area_fraction * rows * cols / n)))
    side = max(2, min(side, rows, cols))
    energy = np.sum(np.maximum(big, 0) ** 2, axis=2)
    parts, anchors = [], []
    for _ in range(n):
        window = correlate(energy[:, :, None], np.ones((1, side, side, 1)))[:, :, 0]
        r, c = np.unravel_index(int(np.argmax(window)), window.shape)
        parts.append(big[r:r + side, c:c + side].copy())
        anchors.append((r, c))
        energy[r:r + side, c:c + side] = 0.0
    deformation = np.tile([0.0, 0.1, 0.0, 0.1], (n, 1))
    return (np.asarray(parts, np.float32), np.asarray(anchors, np.int64), deformation)
