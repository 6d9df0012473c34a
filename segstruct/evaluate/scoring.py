"""The VOC segmentation measure and its relatives.

The VOC measure for a class accumulates TP, FP and FN over every image of a
split at pixel level, ignoring void pixels, and reports
IoU = TP / (TP + FP + FN) in percent (the paper's Table 1). Precision,
recall, F1 and the mean of per-image IoU are reported beside it, each under
its own name: they are not the VOC measure.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def pixel_confusion(pred: np.ndarray, target: np.ndarray,
                    void: np.ndarray | None = None) -> tuple[int, int, int]:
    """TP, FP, FN pixel counts of one binary prediction.

    Parameters
    ----------
    pred, target : (H, W) bool arrays (1 = the class).
    void : (H, W) bool array or None; these pixels are ignored.

    Returns
    -------
    tp, fp, fn : int
    """
    pred = np.asarray(pred, bool)
    target = np.asarray(target, bool)
    if pred.shape != target.shape:
        raise ValueError(f"prediction shape {pred.shape} != target shape {target.shape}")
    valid = np.ones(pred.shape, bool) if void is None else ~np.asarray(void, bool)
    if valid.shape != pred.shape:
        raise ValueError(f"void shape {valid.shape} != prediction shape {pred.shape}")
    tp = int(np.count_nonzero(pred & target & valid))
    fp = int(np.count_nonzero(pred & ~target & valid))
    fn = int(np.count_nonzero(~pred & target & valid))
    return tp, fp, fn


def superpixel_confusion(y: np.ndarray, fg: np.ndarray, bg: np.ndarray) -> tuple[int, int, int]:
    """Pixel-level TP, FP, FN of a superpixel labelling painted back to pixels.

    Exactly ``pixel_confusion(paint(segments, y), target, void)``, computed
    from per-superpixel counts of non-void foreground and background pixels.

    Parameters
    ----------
    y : (N,) labelling in {0, 1}.
    fg, bg : (N,) int, non-void foreground / background pixels per superpixel.

    Returns
    -------
    tp, fp, fn : int
    """
    y = np.asarray(y).astype(bool)
    fg = np.asarray(fg, np.int64)
    bg = np.asarray(bg, np.int64)
    if not (y.shape == fg.shape == bg.shape):
        raise ValueError(f"shapes differ: y {y.shape}, fg {fg.shape}, bg {bg.shape}")
    return int(fg[y].sum()), int(bg[y].sum()), int(fg[~y].sum())


def iou(tp: float, fp: float, fn: float) -> float:
    """TP / (TP + FP + FN); NaN when all three are 0 (the class is absent and
    never predicted: nothing to measure)."""
    denom = tp + fp + fn
    return float(tp) / denom if denom > 0 else float("nan")


@dataclass
class VOCScore:
    """Accumulates per-image TP, FP, FN into the VOC measure for one class.

    Attributes
    ----------
    per_image : list of (tp, fp, fn) tuples, one per added image.
    """

    per_image: list = field(default_factory=list)

    def add(self, tp: int, fp: int, fn: int) -> "VOCScore":
        if min(tp, fp, fn) < 0:
            raise ValueError(f"negative counts: tp={tp}, fp={fp}, fn={fn}")
        self.per_image.append((int(tp), int(fp), int(fn)))
        return self

    @property
    def totals(self) -> tuple[int, int, int]:
        if not self.per_image:
            return 0, 0, 0
        tp, fp, fn = np.sum(np.array(self.per_image, np.int64), axis=0)
        return int(tp), int(fp), int(fn)

    @property
    def iou(self) -> float:
        """The VOC measure: IoU of the accumulated counts (fraction, 0..1)."""
        return iou(*self.totals)

    @property
    def precision(self) -> float:
        tp, fp, _ = self.totals
        return tp / (tp + fp) if tp + fp else float("nan")

    @property
    def recall(self) -> float:
        tp, _, fn = self.totals
        return tp / (tp + fn) if tp + fn else float("nan")

    @property
    def f1(self) -> float:
        tp, fp, fn = self.totals
        return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else float("nan")

    @property
    def mean_image_iou(self) -> float:
        """Mean of per-image IoU over images where it is defined (an image
        with no class pixel and no prediction is skipped). Not the VOC measure."""
        values = [iou(*c) for c in self.per_image if sum(c) > 0]
        return float(np.mean(values)) if values else float("nan")

    def to_dict(self) -> dict:
        """Every measure, in percent, with the raw counts."""
        tp, fp, fn = self.totals

        def pct(v):
            return None if np.isnan(v) else 100.0 * v
        return {
            "voc_iou_percent": pct(self.iou),
            "precision_percent": pct(self.precision),
            "recall_percent": pct(self.recall),
            "f1_percent": pct(self.f1),
            "mean_image_iou_percent": pct(self.mean_image_iou),
            "tp": tp, "fp": fp, "fn": fn,
            "n_images": len(self.per_image),
        }


def score_superpixel_labellings(labellings, examples) -> VOCScore:
    """VOC measure of superpixel labellings of a list of ``Example``.

    Parameters
    ----------
    labellings : sequence of (N_k,) arrays in {0, 1}, one per example.
    examples : sequence of objects with ``fg`` and ``bg`` (N_k,) arrays.
    """
    score = VOCScore()
    if len(labellings) != len(examples):
        raise ValueError(f"{len(labellings)} labellings for {len(examples)} examples")
    for y, ex in zip(labellings, examples):
        score.add(*superpixel_confusion(y, ex.fg, ex.bg))
    return score


def oracle_score(examples) -> VOCScore:
    """The ceiling of any superpixel model: each superpixel gets its own
    majority target, painted back and scored at pixel level."""
    return score_superpixel_labellings([ex.targets for ex in examples], examples)
