"""How much of a VOC IoU difference between two models is evaluation noise.

Two models scored on the same images give per-image (TP, FP, FN) counts.
The VOC measure pools them over the split, so an image with a large object
weighs more than one with a small object, and a split of a hundred images
can move the measure by a point or more depending on which images it holds.
The paired bootstrap answers "would the order of the two models survive
another draw of evaluation images like these": it resamples images with
replacement, the same images for both models (the pairing keeps what the
two models share on an image out of the noise), and recomputes the
difference of the pooled measures each time.
"""
from __future__ import annotations

import numpy as np


def _as_counts(per_image, name: str) -> np.ndarray:
    counts = np.asarray(per_image, np.float64)
    if counts.ndim != 2 or counts.shape[1] != 3:
        raise ValueError(f"{name}: per-image counts must have shape (n_images, 3) "
                         f"for (TP, FP, FN), got {counts.shape}")
    if counts.size and (not np.all(np.isfinite(counts)) or counts.min() < 0):
        raise ValueError(f"{name}: per-image counts must be finite and non-negative")
    return counts


def pooled_iou(totals) -> np.ndarray:
    """The VOC IoU of pooled counts.

    Parameters
    ----------
    totals : (..., 3) array-like
        (TP, FP, FN) pixel counts, summed over the images of a split.

    Returns
    -------
    (...) float64 array
        IoU in percent; 0 where nothing is counted (a resample without any
        class pixel or prediction scores 0).
    """
    totals = np.asarray(totals, np.float64)
    denom = totals.sum(axis=-1)
    return 100.0 * np.divide(totals[..., 0], denom, out=np.zeros_like(denom),
                             where=denom > 0)


def bootstrap_differences(per_image_a, per_image_b, n_resamples: int = 10000,
                          seed: int = 0) -> np.ndarray:
    """VOC IoU of model A minus that of model B on paired bootstrap resamples.

    Parameters
    ----------
    per_image_a, per_image_b : (n_images, 3) array-like of int
        (TP, FP, FN) pixel counts of each image, in the same image order for
        both models.
    n_resamples : int
        Resamples drawn, each ``n_images`` images with replacement.
    seed : int
        Seed of the NumPy generator that draws them.

    Returns
    -------
    (n_resamples,) float64 array of differences, in percentage points.
    """
    a = _as_counts(per_image_a, "model A")
    b = _as_counts(per_image_b, "model B")
    if a.shape != b.shape:
        raise ValueError(f"the two models are scored on different numbers of images "
                         f"({a.shape[0]} and {b.shape[0]}); pair them image by image")
    ious = resampled_iou(np.stack([a, b], axis=1), n_resamples, seed)
    return ious[:, 0] - ious[:, 1]


def resampled_iou(per_image, n_resamples: int = 10000, seed: int = 0) -> np.ndarray:
    """Pooled VOC IoU of image bootstrap resamples, for several models at once.

    Every resample draws the images with replacement once, and the same draw
    serves every model and class of ``per_image``, so differences between
    them (and means over classes) keep their pairing.

    Parameters
    ----------
    per_image : (n_images, ..., 3) array-like of int
        (TP, FP, FN) pixel counts of each image for each model (any number of
        axes between the images and the counts, e.g. classes x methods).
    n_resamples, seed : int
        As in :func:`bootstrap_differences`.

    Returns
    -------
    (n_resamples, ...) float64 array
        IoU in percent of each resample and model; 0 where a resample counts
        nothing for a model.
    """
    counts = np.asarray(per_image, np.float64)
    if counts.ndim < 2 or counts.shape[-1] != 3:
        raise ValueError(f"per-image counts must have shape (n_images, ..., 3) for "
                         f"(TP, FP, FN), got {counts.shape}")
    if counts.size and (not np.all(np.isfinite(counts)) or counts.min() < 0):
        raise ValueError("per-image counts must be finite and non-negative")
    n = counts.shape[0]
    if n == 0:
        raise ValueError("no images to resample")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    # How often each image is drawn in each resample: a (R, n) multinomial
    # draw is the same distribution as n draws with replacement, and the
    # pooled counts of every resample are then one matrix product.
    times = rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples).astype(np.float64)
    pooled = np.tensordot(times, counts, axes=([1], [0]))      # (R, ..., 3)
    return pooled_iou(pooled)


def percentile_interval(samples, confidence: float = 0.95) -> list[float]:
    """[low, high]: the central ``confidence`` percentile interval of ``samples``
    along their first axis (one interval per entry of the other axes)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(np.asarray(samples, np.float64), [tail, 1.0 - tail], axis=0)
    return [low.tolist(), high.tolist()]


def paired_bootstrap(per_image_a, per_image_b, n_resamples: int = 10000,
                     confidence: float = 0.95, seed: int = 0) -> dict:
    """Summary of the paired bootstrap of a VOC IoU difference (A minus B).

    Parameters
    ----------
    per_image_a, per_image_b, n_resamples, seed
        As in :func:`bootstrap_differences`.
    confidence : float in (0, 1)
        Coverage of the percentile interval.

    Returns
    -------
    dict with ``iou_a``, ``iou_b`` and ``difference`` (percent, on the
    given images), ``interval`` ([low, high] percentile interval of the
    resampled differences), ``share_a_better`` and ``share_b_better``
    (fractions of resamples where one model scores strictly higher),
    ``n_images``, ``n_resamples``, ``confidence`` and ``seed``.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    differences = bootstrap_differences(per_image_a, per_image_b, n_resamples, seed)
    a = _as_counts(per_image_a, "model A")
    b = _as_counts(per_image_b, "model B")
    iou_a = float(pooled_iou(a.sum(axis=0)))
    iou_b = float(pooled_iou(b.sum(axis=0)))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(differences, [tail, 1.0 - tail])
    return {
        "iou_a": iou_a, "iou_b": iou_b, "difference": iou_a - iou_b,
        "interval": [float(low), float(high)],
        "share_a_better": float(np.mean(differences > 0)),
        "share_b_better": float(np.mean(differences < 0)),
        "n_images": int(a.shape[0]), "n_resamples": int(n_resamples),
        "confidence": float(confidence), "seed": int(seed),
    }
