"""Intervals of a comparison: how far its numbers would move on another draw
of evaluation images, and what a difference between two methods says.

A table of VOC IoU per class and method pools each method's (TP, FP, FN)
over the images of a split. :func:`comparison_intervals` resamples those
images (:func:`segstruct.evaluate.bootstrap.resampled_iou`) and gives

- each cell its percentile interval;
- each method's difference from a reference method (the paper's
  ``proposed`` where it is compared) its paired interval: one draw of
  images serves every method of a class, so what the methods share on an
  image stays out of the noise;
- the mean over classes the same, each resample's mean taken over the
  classes; classes scored on the same images share their draw, others are
  resampled apart (within each class);
- a verdict per difference (:func:`verdict`).

Numbers in, numbers out: the counts come from the comparison's records
(``eval_score["per_image"]``) and the result is JSON-able.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np

from segstruct.evaluate.bootstrap import percentile_interval, pooled_iou, resampled_iou

__all__ = ["CONFIDENCE", "N_RESAMPLES", "REFERENCE", "comparison_intervals",
           "difference_summary", "verdict"]

#: Coverage of every interval a table shows.
CONFIDENCE = 0.95
#: Resamples per interval: the default of
#: :func:`segstruct.evaluate.bootstrap.paired_bootstrap`, so that the tables
#: and ``scripts/paired_iou.py`` give the same interval for the same counts.
N_RESAMPLES = 10000
#: The method every other one is measured against: the paper's.
REFERENCE = "proposed"


def verdict(difference: float, interval: Sequence[float], name: str, reference: str,
            spread: float = 0.0, identical: bool = False) -> str:
    """What a difference ``name - reference`` with its interval says.

    Parameters
    ----------
    difference : float
        Percentage points of IoU, ``name``'s minus ``reference``'s.
    interval : [low, high]
        Its percentile interval from the paired bootstrap.
    name, reference : str
        The two methods (or models), for the sentence.
    spread : float
        Points by which refits of one method at one C may move (fit-path
        spread): a difference inside it is not the methods'.
    identical : bool
        The two label every image alike.

    Returns
    -------
    str, one of "same masks", "no clear difference", "within the fit-path
    spread", "<name> better" or "<reference> better".
    """
    low, high = float(interval[0]), float(interval[1])
    if identical:
        return "same masks"
    if low <= 0.0 <= high:
        return "no clear difference"
    if abs(difference) < spread:
        return "within the fit-path spread"
    return f"{name} better" if difference > 0 else f"{reference} better"


def difference_summary(samples_a: np.ndarray, samples_b: np.ndarray, point_a: float,
                       point_b: float, name: str, reference: str, spread: float = 0.0,
                       identical: bool = False, confidence: float = CONFIDENCE) -> dict:
    """``name - reference`` from paired resamples: the difference, its interval
    and its verdict (a JSON-able dict)."""
    difference = float(point_a - point_b)
    interval = percentile_interval(np.asarray(samples_a) - np.asarray(samples_b), confidence)
    return {"difference": difference, "interval": interval,
            "verdict": verdict(difference, interval, name, reference, spread, identical)}


def _draw_seed(seed: int, ids: Sequence[str] | None, n: int) -> int:
    """The draw of a class's images: the same for every class scored on the
    same image list (so their mean keeps the pairing), apart otherwise."""
    key = "\n".join(ids) if ids is not None else f"{n} images"
    return (seed + int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)) % 2**32


def comparison_intervals(counts: Mapping[str, Mapping[str, object]],
                         ids: Mapping[str, Sequence[str]] | None = None,
                         reference: str = REFERENCE, spread: float = 0.0,
                         n_resamples: int = N_RESAMPLES, confidence: float = CONFIDENCE,
                         seed: int = 0) -> dict:
    """Bootstrap intervals of a comparison's table.

    Parameters
    ----------
    counts : {class: {method: (n_images, 3) array-like of int}}
        Each method's (TP, FP, FN) per evaluation image, in the same image
        order for every method of a class. A method without counts for a
        class is left out of that class (and of the mean).
    ids : {class: image ids} or None
        The images of each class's counts; classes with the same list share
        their resampling.
    reference : str
        The method the others are measured against; the first method of the
        first class when it is not compared.
    spread : float
        Fit-path spread in points (see :func:`verdict`).
    n_resamples, confidence, seed
        Of the bootstrap.

    Returns
    -------
    dict with ``reference``, ``confidence``, ``n_resamples``, ``seed``,
    ``spread_points``, ``iou_percent`` {class: {method: [low, high]}},
    ``mean_iou_percent`` {method: [low, high]}, ``difference`` {class:
    {method: {difference, interval, verdict}}} (every method but the
    reference) and ``mean_difference`` {method: ...}. The mean covers the
    classes where every method has counts.

    Raises
    ------
    ValueError
        Where the methods of a class were counted on different numbers of
        images.
    """
    methods = list(dict.fromkeys(m for per in counts.values() for m in per))
    if reference not in methods and methods:
        reference = methods[0]
    out: dict = {"reference": reference, "confidence": confidence,
                 "n_resamples": n_resamples, "seed": seed, "spread_points": spread,
                 "iou_percent": {}, "mean_iou_percent": {}, "difference": {},
                 "mean_difference": {}}
    samples: dict[str, dict[str, np.ndarray]] = {}
    points: dict[str, dict[str, float]] = {}
    stacks: dict[str, dict[str, np.ndarray]] = {}
    for class_name, per_method in counts.items():
        names = [m for m in methods if per_method.get(m) is not None]
        if not names:
            continue
        arrays = [np.asarray(per_method[m], np.float64).reshape(-1, 3) for m in names]
        sizes = {a.shape[0] for a in arrays}
        if len(sizes) > 1:
            raise ValueError(f"{class_name}: the methods were scored on different numbers "
                             f"of images ({sorted(sizes)}); pair them image by image")
        n = arrays[0].shape[0]
        class_ids = None if ids is None else ids.get(class_name)
        if class_ids is not None and len(class_ids) != n:
            raise ValueError(f"{class_name}: {len(class_ids)} image ids for {n} images")
        resampled = resampled_iou(np.stack(arrays, axis=1), n_resamples,
                                  _draw_seed(seed, class_ids, n))
        samples[class_name] = {m: resampled[:, j] for j, m in enumerate(names)}
        points[class_name] = {m: float(pooled_iou(a.sum(axis=0))) for m, a in zip(names, arrays)}
        stacks[class_name] = dict(zip(names, arrays))
        out["iou_percent"][class_name] = {
            m: percentile_interval(resampled[:, j], confidence) for j, m in enumerate(names)}
        if reference in names:
            out["difference"][class_name] = {
                m: difference_summary(samples[class_name][m], samples[class_name][reference],
                                      points[class_name][m], points[class_name][reference],
                                      m, reference, spread,
                                      bool(np.array_equal(stacks[class_name][m],
                                                          stacks[class_name][reference])),
                                      confidence)
                for m in names if m != reference}
    full = [c for c in samples if all(m in samples[c] for m in methods)]
    if full:
        mean_samples = {m: np.mean([samples[c][m] for c in full], axis=0) for m in methods}
        mean_points = {m: float(np.mean([points[c][m] for c in full])) for m in methods}
        out["mean_classes"] = full
        out["mean_iou_percent"] = {m: percentile_interval(mean_samples[m], confidence)
                                   for m in methods}
        out["mean_difference"] = {
            m: difference_summary(mean_samples[m], mean_samples[reference], mean_points[m],
                                  mean_points[reference], m, reference, spread,
                                  all(np.array_equal(stacks[c][m], stacks[c][reference])
                                      for c in full), confidence)
            for m in methods if m != reference}
    return out
