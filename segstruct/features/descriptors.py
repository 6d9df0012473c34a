"""Unary and pairwise superpixel features (plain numpy in, numpy out).

Unary features phi_u (one row per superpixel) are blocks that can each be
switched off (see ``FeatureConfig``):

* ``sift``: bag of visual words of dense opponent-colour SIFT (6 px grid),
  quantised with a k-means codebook learnt on training images only,
  L1-normalised per superpixel;
* ``colour``: Lab mean and standard deviation (scaled to about [0, 1]);
* ``position``: centroid, bounding-box extent, relative area, fill ratio;
* ``bias``: a constant 1;
* ``top_down`` (when ``FeatureConfig.detector`` is set): per root and part
  filter of the class's object detector, the mean over the superpixel of its
  shape votes (``segstruct.features.topdown``; the only class-specific block,
  appended by ``segstruct.features.extraction``).

Pairwise features phi_p (Eq. 27 of the paper) are
``P_ij * exp(-tau1 dL^2, -tau2 da^2, -tau2 db^2)``, non-negative.
"""
from __future__ import annotations

import cv2
import numpy as np
from scipy import sparse

# FeatureConfig and the block widths live in config.py; imported from here too
from segstruct.features.config import (COLOUR_DIM, OPPONENT_DIM, POSITION_DIM,  # noqa: F401
                                       SIFT_DIM, SIFT_NORMS, TOP_DOWN_DETECTORS,
                                       FeatureConfig)
from segstruct.features.superpixels import superpixel_means


# --------------------------------------------------------------------------
# Dense opponent-colour SIFT


def opponent_channels(image: np.ndarray) -> np.ndarray:
    """Opponent colour space (van de Sande et al.), rescaled to uint8.

    O1 = (R - G) / sqrt 2, O2 = (R + G - 2B) / sqrt 6, O3 = (R + G + B) / sqrt 3,
    each mapped linearly from its full range onto 0..255 so SIFT sees all
    three with the same dynamic range.

    Parameters
    ----------
    image : (H, W, 3) uint8 RGB.

    Returns
    -------
    (3, H, W) uint8 array, channels O1, O2, O3.
    """
    rgb = np.asarray(image, dtype=np.float32)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    o1 = (r - g + 255.0) / 2.0                 # range [-255, 255]
    o2 = (r + g - 2.0 * b + 510.0) / 4.0       # range [-510, 510]
    o3 = (r + g + b) / 3.0                     # range [0, 765]
    out = np.stack([o1, o2, o3])
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def grid_points(shape: tuple[int, int], step: int) -> np.ndarray:
    """Centres of a dense grid, ``step`` pixels apart, offset by step // 2.

    Returns
    -------
    (K, 2) float32 array of (x, y) pixel coordinates, row-major order.
    """
    h, w = shape[:2]
    ys, xs = np.mgrid[step // 2:h:step, step // 2:w:step]
    return np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)


def dense_opponent_sift(image: np.ndarray, step: int = 6,
                        size: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """SIFT descriptors of the three opponent channels on a dense grid.

    Parameters
    ----------
    image : (H, W, 3) uint8 RGB.
    step : grid spacing in pixels.
    size : OpenCV keypoint size (see ``FeatureConfig.keypoint_size``).

    Returns
    -------
    points : (K, 2) float32, (x, y) of each descriptor.
    descriptors : (K, 384) float32, the O1, O2, O3 SIFT vectors side by side
        (OpenCV's scale: each 128-d part has norm about 512).
    """
    points = grid_points(image.shape, step)
    if points.shape[0] == 0:
        return points, np.zeros((0, OPPONENT_DIM), np.float32)
    # Upright descriptors (angle 0): orientation invariance would throw away
    # the "which way is up" cue that helps tell sky from road.
    keypoints = [cv2.KeyPoint(float(x), float(y), float(size), 0.0) for x, y in points]
    sift = cv2.SIFT.create()
    parts = []
    for channel in opponent_channels(image):
        kept, desc = sift.compute(channel, keypoints)
        if desc is None or len(kept) != len(keypoints):
            # OpenCV may drop keypoints it cannot describe; match by position.
            desc = _align_descriptors(points, kept, desc)
        parts.append(desc)
    return points, np.concatenate(parts, axis=1).astype(np.float32)


def _align_descriptors(points, kept, desc):
    out = np.zeros((points.shape[0], SIFT_DIM), np.float32)
    if desc is None:
        return out
    index = {(round(p[0], 1), round(p[1], 1)): k for k, p in enumerate(points)}
    for kp, d in zip(kept, desc):
        k = index.get((round(kp.pt[0], 1), round(kp.pt[1], 1)))
        if k is not None:
            out[k] = d
    return out


# --------------------------------------------------------------------------
# Codebook


def _squared_distances_argmin(x: np.ndarray, centres: np.ndarray,
                              chunk: int = 8192) -> np.ndarray:
    """Index of the nearest centre for each row of x (chunked matmul)."""
    c_norm = np.einsum("ij,ij->i", centres, centres)
    out = np.empty(x.shape[0], np.int64)
    for start in range(0, x.shape[0], chunk):
        block = x[start:start + chunk]
        # ||x - c||^2 = ||x||^2 - 2 x.c + ||c||^2; ||x||^2 is the same for all c.
        out[start:start + chunk] = np.argmin(c_norm[None, :] - 2.0 * block @ centres.T, axis=1)
    return out


def learn_codebook(descriptors: np.ndarray, n_words: int, seed: int = 0,
                   iterations: int = 20, on_iteration=None) -> np.ndarray:
    """k-means codebook of visual words (Lloyd's algorithm).

    Initial centres are a seeded random sample of distinct descriptors; an
    empty cluster is re-seeded with the descriptor farthest from its centre,
    so every word is used.

    Parameters
    ----------
    descriptors : (M, D) float array, M >= n_words.
    n_words : number of words k.
    seed : random seed.
    iterations : number of Lloyd iterations.
    on_iteration : callable(), optional; called after each iteration (progress).

    Returns
    -------
    (n_words, D) float32 array of centres.
    """
    x = np.asarray(descriptors, dtype=np.float32)
    unique = np.unique(x, axis=0)
    if unique.shape[0] < n_words:
        raise ValueError(
            f"cannot learn {n_words} words from {unique.shape[0]} distinct descriptors; "
            f"lower n_words or use more training images")
    rng = np.random.default_rng(seed)
    centres = unique[rng.choice(unique.shape[0], n_words, replace=False)].copy()
    for _ in range(iterations):
        assign = _squared_distances_argmin(x, centres)
        # Cluster sums as a sparse one-hot product: np.add.at took most of the
        # k-means run time (cProfile on a full-size descriptor sample).
        onehot = sparse.csr_matrix((np.ones(x.shape[0]), (assign, np.arange(x.shape[0]))),
                                   shape=(n_words, x.shape[0]))
        sums = np.asarray(onehot @ x.astype(np.float64))
        sizes = np.bincount(assign, minlength=n_words)
        empty = np.flatnonzero(sizes == 0)
        moved = sums / np.maximum(sizes, 1)[:, None]
        centres = np.where(sizes[:, None] > 0, moved, centres).astype(np.float32)
        if empty.size:
            d = np.einsum("ij,ij->i", x - centres[assign], x - centres[assign])
            far = np.argsort(-d, kind="stable")[:empty.size]
            centres[empty] = x[far]
        if on_iteration is not None:
            on_iteration()
    return centres


def quantize(descriptors: np.ndarray, codebook: np.ndarray) -> np.ndarray:
    """Nearest visual word of each descriptor.

    Returns
    -------
    (K,) int64 word indices in 0 .. n_words-1.
    """
    return _squared_distances_argmin(np.asarray(descriptors, np.float32),
                                     np.asarray(codebook, np.float32))


def bag_of_words(segments: np.ndarray, points: np.ndarray, words: np.ndarray,
                 n_superpixels: int, n_words: int) -> np.ndarray:
    """L1-normalised histogram of visual words per superpixel.

    Parameters
    ----------
    segments : (H, W) int superpixel map.
    points : (K, 2) (x, y) descriptor positions (pixel coordinates).
    words : (K,) word index of each descriptor.
    n_superpixels, n_words : output shape.

    Returns
    -------
    (N, n_words) float64; a superpixel with no grid point gets a zero row.
    """
    xy = np.rint(points).astype(np.int64)
    sp = segments[xy[:, 1], xy[:, 0]].astype(np.int64)
    hist = np.bincount(sp * n_words + words, minlength=n_superpixels * n_words) \
        .reshape(n_superpixels, n_words).astype(np.float64)
    total = hist.sum(axis=1, keepdims=True)
    return np.divide(hist, total, out=np.zeros_like(hist), where=total > 0)


# --------------------------------------------------------------------------
# Colour, position and pairwise features


def rgb_to_lab(image: np.ndarray) -> np.ndarray:
    """CIE Lab of an RGB image: L in [0, 100], a and b in about [-128, 127].

    Returns
    -------
    (H, W, 3) float32.
    """
    return cv2.cvtColor(np.asarray(image, np.float32) / 255.0, cv2.COLOR_RGB2Lab)


def colour_features(lab: np.ndarray, segments: np.ndarray, n: int) -> np.ndarray:
    """Lab mean and standard deviation per superpixel, scaled to about [0, 1].

    Returns
    -------
    (N, 6) float64: L, a, b means then L, a, b standard deviations; L is
    divided by 100 and a, b by 128 (means shifted by +128 first).
    """
    mean = superpixel_means(lab, segments, n)
    sq = superpixel_means(lab.astype(np.float64) ** 2, segments, n)
    std = np.sqrt(np.maximum(sq - mean ** 2, 0.0))
    scale = np.array([100.0, 128.0, 128.0])
    shift = np.array([0.0, 128.0, 128.0])
    return np.concatenate([(mean + shift) / (scale + shift), std / scale], axis=1)


def position_features(segments: np.ndarray, n: int) -> np.ndarray:
    """Position and shape per superpixel, in image-relative units.

    Returns
    -------
    (N, 6) float64: centroid x / W, centroid y / H, bounding-box width / W,
    bounding-box height / H, area / (H W), area / bounding-box area.
    """
    h, w = segments.shape
    ys, xs = np.indices(segments.shape)
    flat = segments.ravel()
    area = np.bincount(flat, minlength=n).astype(np.float64)
    safe = np.maximum(area, 1.0)
    cx = np.bincount(flat, weights=xs.ravel(), minlength=n) / safe
    cy = np.bincount(flat, weights=ys.ravel(), minlength=n) / safe
    x0 = np.full(n, w, np.int64)
    x1 = np.full(n, -1, np.int64)
    y0 = np.full(n, h, np.int64)
    y1 = np.full(n, -1, np.int64)
    np.minimum.at(x0, flat, xs.ravel())
    np.maximum.at(x1, flat, xs.ravel())
    np.minimum.at(y0, flat, ys.ravel())
    np.maximum.at(y1, flat, ys.ravel())
    bw = np.maximum(x1 - x0 + 1, 1).astype(np.float64)
    bh = np.maximum(y1 - y0 + 1, 1).astype(np.float64)
    return np.stack([(cx + 0.5) / w, (cy + 0.5) / h, bw / w, bh / h,
                     area / (h * w), area / (bw * bh)], axis=1)


def pairwise_features(lab_mean: np.ndarray, edges: np.ndarray, boundary: np.ndarray,
                      tau1: float = 2e-2, tau2: float = 5e-3) -> np.ndarray:
    """Contrast-sensitive pairwise features of Eq. 27.

    Parameters
    ----------
    lab_mean : (N, 3) mean L, a, b per superpixel (native Lab units).
    edges : (E, 2) int, adjacent pairs.
    boundary : (E,) shared boundary length P_ij in pixels (>= 0).
    tau1, tau2 : contrast scales for L and for a, b.

    Returns
    -------
    (E, 3) float64, all entries >= 0:
    ``P_ij * [exp(-tau1 dL^2), exp(-tau2 da^2), exp(-tau2 db^2)]``.
    """
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    diff = lab_mean[edges[:, 0]] - lab_mean[edges[:, 1]]
    tau = np.array([tau1, tau2, tau2])
    return np.asarray(boundary, np.float64)[:, None] * np.exp(-tau * diff ** 2)


def dense_words(image: np.ndarray, config: FeatureConfig,
                codebook: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The visual word of every dense descriptor of an image: what the
    bag-of-words block pools, whatever the superpixels.

    Parameters
    ----------
    image : (H, W, 3) uint8 RGB.
    config : FeatureConfig (its grid step and keypoint size).
    codebook : (n_words, 384) float32.

    Returns
    -------
    points : (K, 2) float32 keypoint (x, y), pixels; words : (K,) int64 word
    indices in 0 .. n_words - 1 (``dense_opponent_sift``, ``quantize``).
    """
    if codebook is None or codebook.shape != (config.n_words, OPPONENT_DIM):
        raise ValueError(
            f"SIFT features need a ({config.n_words}, {OPPONENT_DIM}) codebook")
    points, desc = dense_opponent_sift(image, config.grid_step, config.keypoint_size)
    return points, quantize(desc, codebook)


def unary_features(image: np.ndarray, segments: np.ndarray, config: FeatureConfig,
                   codebook: np.ndarray | None = None,
                   lab: np.ndarray | None = None, words=None) -> np.ndarray:
    """All switched-on unary blocks, side by side (``config.unary_blocks()``).

    Parameters
    ----------
    image : (H, W, 3) uint8 RGB.
    segments : (H, W) int superpixel map, values 0 .. N-1.
    config : FeatureConfig.
    codebook : (n_words, 384) float32, required when ``config.sift``.
    lab : (H, W, 3) Lab image, optional (computed when missing).
    words : ``dense_words(image, config, codebook)``, optional (computed
        when missing): several superpixelisations of one image share them.

    Returns
    -------
    (N, D) float64: the class-independent blocks, D = ``config.n_unary``
    less the top-down block's width (that block is per class: see
    ``segstruct.features.extraction``).
    """
    n = int(segments.max()) + 1
    blocks = []
    if config.sift:
        points, indices = dense_words(image, config, codebook) if words is None else words
        blocks.append(bag_of_words(segments, points, indices, n, config.n_words))
    if config.colour:
        lab = rgb_to_lab(image) if lab is None else lab
        blocks.append(colour_features(lab, segments, n))
    if config.position:
        blocks.append(position_features(segments, n))
    if config.bias:
        blocks.append(np.ones((n, 1)))
    return normalise_words(np.concatenate(blocks, axis=1), config)


def normalise_words(unary: np.ndarray, config: FeatureConfig) -> np.ndarray:
    """The bag-of-words columns of ``unary`` as ``config.sift_norm`` asks.

    Parameters
    ----------
    unary : (N, D) float64, the class-independent blocks with L1-normalised
        words (the first ``n_words`` columns when ``config.sift``).
    config : FeatureConfig

    Returns
    -------
    (N, D) float64: ``unary`` itself for "l1" (or without the SIFT block),
    else a copy whose word columns are square-rooted ("sqrt").
    """
    if not config.sift or config.sift_norm == "l1":
        return unary
    out = np.array(unary, np.float64)
    out[:, :config.n_words] = np.sqrt(out[:, :config.n_words])
    return out
