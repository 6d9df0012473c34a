"""The top-down superpixel feature (the paper's Fig. 3).

For each filter (each component's root and parts) and each pyramid level,
the positive part of the confidence map, ``max(score, 0)``, is convolved
with the filter's average shape: every confident placement votes for its
shape, in proportion to its score (the "potential mask"). The potential
masks are resampled to the image, the maximum over levels is taken, and the
result is averaged inside each superpixel. The positive part (rather than a
logistic of the score) keeps the feature exactly zero where nothing fires,
so a blank image or a background region adds nothing. The mean (rather
than the sum the paper's "accumulate" could mean) keeps a large superpixel
from outweighing a small one with the same evidence.
"""
from __future__ import annotations

import cv2
import numpy as np
from scipy.signal import convolve

from segstruct.features.superpixels import superpixel_means
from segstruct.features.topdown.detector import ConfidenceMaps, Detector
from segstruct.features.topdown.shapes import AverageShapes


def n_topdown_features(detector: Detector) -> int:
    """Columns of ``topdown_features``: components x (1 root + parts)."""
    return sum(1 + c.n_parts for c in detector.components)


def potential_mask(confidence: np.ndarray, shape: np.ndarray, transform: tuple,
                   image_shape: tuple) -> np.ndarray:
    """One filter's votes at one level, resampled to the image.

    Parameters
    ----------
    confidence : (Hc, Wc) map of scores (``ConfidenceMaps`` root or part map);
        only the positive part votes.
    shape : (h, w) average shape of the filter, one value per filter cell.
    transform : (step, row offset, col offset): map cell (r, q) starts at
        image pixel ((q - col offset) * step, (r - row offset) * step).
    image_shape : (H, W).

    Returns
    -------
    (H, W) float32, >= 0; all zero when no placement scores above 0.
    """
    H, W = image_shape
    conf = np.maximum(np.nan_to_num(confidence, neginf=0.0), 0.0)
    if not conf.any():
        return np.zeros((H, W), np.float32)
    # A placement at cell p covers cells p .. p + shape - 1, so its votes are
    # the full convolution of the map with the shape, on the same cell grid.
    votes = convolve(conf.astype(np.float64), np.asarray(shape, np.float64), mode="full",
                     method="direct")   # exact zeros where nothing votes (FFT leaves 1e-17)
    step, off_r, off_c = transform
    # image pixel centre x + 0.5 sits at cell coordinate (x + 0.5) / step + off;
    # OpenCV samples cell centres at integer coordinates, hence the - 0.5.
    m = np.array([[1 / step, 0, 0.5 / step + off_c - 0.5],
                  [0, 1 / step, 0.5 / step + off_r - 0.5]], np.float64)
    return cv2.warpAffine(votes.astype(np.float32), m, (W, H),
                          flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def filter_masks(maps: ConfidenceMaps, shapes: AverageShapes) -> list:
    """Max over levels of each filter's potential masks.

    Returns
    -------
    list of (H, W) float32 arrays, component by component, root first then
    parts (the column order of ``topdown_features``).
    """
    out = []
    for k, (roots, parts) in enumerate(zip(maps.root, maps.parts)):
        n_parts = shapes.parts[k].shape[0]
        best = [np.zeros(maps.image_shape, np.float32) for _ in range(1 + n_parts)]
        for level, root_map in enumerate(roots):
            best[0] = np.maximum(best[0], potential_mask(
                root_map, shapes.root[k], maps.transform(level, False), maps.image_shape))
            for i in range(n_parts):
                best[1 + i] = np.maximum(best[1 + i], potential_mask(
                    parts[level][i], shapes.parts[k][i], maps.transform(level, True),
                    maps.image_shape))
        out.extend(best)
    return out


def topdown_features(detector: Detector, shapes: AverageShapes, image: np.ndarray,
                     superpixels: np.ndarray, memo=None) -> np.ndarray:
    """Top-down features of an image's superpixels.

    Parameters
    ----------
    detector : Detector, trained for the class.
    shapes : AverageShapes of that detector (``average_shapes``).
    image : (H, W, 3) uint8 RGB.
    superpixels : (H, W) int32 labels 0 .. N-1.
    memo : dict or ``hog.SharedMaps``, optional, the image's HOG maps shared
        between detectors (``Detector.pyramid``): give one per image to every
        call on it.

    Returns
    -------
    (N, n_components * (1 + n_parts)) float64, >= 0: per superpixel, the
    mean over its pixels of each filter's potential mask (columns component
    by component, root then parts). In units of detection score times shape
    probability.
    """
    superpixels = np.asarray(superpixels)
    if superpixels.shape != image.shape[:2]:
        raise ValueError(f"superpixels {superpixels.shape} and image {image.shape[:2]} differ")
    return pooled_masks(filter_masks(detector.confidence_maps(image, memo=memo), shapes),
                        superpixels)


def pooled_masks(masks: list, superpixels: np.ndarray) -> np.ndarray:
    """``topdown_features`` from an image's ``filter_masks``: several
    superpixelisations of one image pool the same masks.

    Parameters
    ----------
    masks : list of F (H, W) float32 arrays.
    superpixels : (H, W) int labels 0 .. N-1.

    Returns
    -------
    (N, F) float64, the mean of each mask over each superpixel's pixels.
    """
    superpixels = np.asarray(superpixels)
    n = int(superpixels.max()) + 1 if superpixels.size else 0
    if not masks:
        return np.zeros((n, 0))
    return superpixel_means(np.stack(masks, axis=-1), superpixels, n)
