"""The VOC challenge's segmentation measure over all 21 labels.

For every label c (background 0 and the 20 classes), pooled over the images
of a split,

    IoU_c = TP_c / (TP_c + FP_c + FN_c),

with void pixels (255 in the ground truth) ignored; the reported figure is
the mean of the IoUs. A label that neither the ground truth nor the
prediction holds has no IoU (0 / 0) and no say in the mean.
"""
from __future__ import annotations

import numpy as np

from segstruct.datasets.voc import VOC_CLASSES, VOID_LABEL

__all__ = ["ConfusionMatrix", "N_LABELS"]

#: Background and the 20 VOC classes.
N_LABELS = len(VOC_CLASSES)


class ConfusionMatrix:
    """Pixel counts ``counts[truth, predicted]`` over 21 labels, accumulated
    image by image."""

    def __init__(self):
        self.counts = np.zeros((N_LABELS, N_LABELS), dtype=np.int64)

    def add(self, predicted: np.ndarray, truth: np.ndarray) -> None:
        """Add one image.

        Parameters
        ----------
        predicted : (H, W) integer array of labels in 0..20.
        truth : (H, W) integer array of labels in 0..20 or 255 (void, ignored).

        Raises
        ------
        ValueError
            Different shapes, or a label out of range.
        """
        predicted, truth = np.asarray(predicted), np.asarray(truth)
        if predicted.shape != truth.shape:
            raise ValueError(f"prediction {predicted.shape} and ground truth {truth.shape} "
                             "differ in shape")
        keep = truth != VOID_LABEL
        p, t = predicted[keep].astype(np.int64), truth[keep].astype(np.int64)
        for name, v in (("predicted", p), ("ground-truth", t)):
            if v.size and (v.min() < 0 or v.max() >= N_LABELS):
                raise ValueError(f"a {name} label is outside 0..{N_LABELS - 1} (and 255 in "
                                 "the ground truth)")
        self.counts += np.bincount(t * N_LABELS + p,
                                   minlength=N_LABELS * N_LABELS).reshape(N_LABELS, N_LABELS)

    def iou(self) -> np.ndarray:
        """(21,) IoU per label in [0, 1]; nan where the label occurs nowhere."""
        tp = np.diag(self.counts).astype(np.float64)
        union = self.counts.sum(axis=0) + self.counts.sum(axis=1) - tp
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(union > 0, tp / np.maximum(union, 1), np.nan)

    def mean_iou(self, labels=None) -> float:
        """Mean IoU over ``labels`` (default all 21) where defined; nan if none is."""
        values = self.iou() if labels is None else self.iou()[list(labels)]
        values = values[~np.isnan(values)]
        return float(values.mean()) if values.size else float("nan")

    def to_dict(self) -> dict:
        """Per-label IoU % (None where undefined), the mean, and the counts."""
        iou = self.iou()
        return {"iou_percent": {name: None if np.isnan(v) else 100 * float(v)
                                for name, v in zip(VOC_CLASSES, iou)},
                "mean_iou_percent": None if np.isnan(self.mean_iou())
                else 100 * self.mean_iou(),
                "confusion": self.counts.tolist()}
