"""PASCAL VOC average precision of detections.

VOC2010 and later: detections of all images are ranked by score; one is a
true positive when its IoU with a not-yet-matched ground-truth box is at
least 0.5 (each box is matched once, to its best-overlapping detection in
rank order), a false positive otherwise, and is left out of the ranking
when its best overlap is with an ignored ("difficult") box. AP is the area
under the precision-recall curve with precision made monotone (the
all-point interpolation).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from segstruct.features.topdown.boxes import box_iou


def match_detections(detections: Sequence[np.ndarray], truths: Sequence[np.ndarray],
                     ignored: Sequence[np.ndarray] | None = None, iou: float = 0.5):
    """Label every detection of a split as true or false positive.

    Parameters
    ----------
    detections : per image, (K_i, >=5) arrays ``[x0, y0, x1, y1, score, ...]``.
    truths : per image, (G_i, 4) ground-truth boxes.
    ignored : per image, (J_i, 4) boxes that count neither way, optional.
    iou : float, the overlap a hit needs.

    Returns
    -------
    scores : (M,) float64 scores of the detections that count.
    hits : (M,) bool, true positive or not (same order).
    n_truths : int, ground-truth boxes in total.
    """
    if ignored is None:
        ignored = [np.zeros((0, 4))] * len(truths)
    if not len(detections) == len(truths) == len(ignored):
        raise ValueError("detections, truths and ignored need one entry per image")
    all_scores, all_hits, n_truths = [], [], 0
    for dets, gt, ign in zip(detections, truths, ignored):
        width = np.asarray(dets).shape[-1] if np.size(dets) else 5
        dets = np.asarray(dets, np.float64).reshape(-1, width)
        gt = np.asarray(gt, np.float64).reshape(-1, 4)
        ign = np.asarray(ign, np.float64).reshape(-1, 4)
        n_truths += len(gt)
        order = np.argsort(-dets[:, 4], kind="stable")
        dets = dets[order]
        both = np.concatenate([gt, ign])
        overlaps = box_iou(dets[:, :4], both)
        taken = np.zeros(len(gt), bool)
        for k in range(len(dets)):
            if both.shape[0] == 0:
                all_scores.append(dets[k, 4])
                all_hits.append(False)
                continue
            j = int(np.argmax(overlaps[k]))
            if overlaps[k, j] >= iou and j >= len(gt):
                continue          # on an ignored object: neither hit nor miss
            hit = overlaps[k, j] >= iou and not taken[j]
            if hit:
                taken[j] = True
            all_scores.append(dets[k, 4])
            all_hits.append(bool(hit))
    return np.asarray(all_scores, np.float64), np.asarray(all_hits, bool), n_truths


def average_precision(detections: Sequence[np.ndarray], truths: Sequence[np.ndarray],
                      ignored: Sequence[np.ndarray] | None = None, iou: float = 0.5) -> float:
    """VOC (2010+) average precision of a split's detections.

    Parameters
    ----------
    As ``match_detections``.

    Returns
    -------
    float in [0, 1]; NaN when there is no ground-truth box.
    """
    scores, hits, n_truths = match_detections(detections, truths, ignored, iou)
    return precision_recall_ap(scores, hits, n_truths)


def precision_recall_ap(scores: np.ndarray, hits: np.ndarray, n_truths: int) -> float:
    """All-point interpolated AP of ranked hits.

    Parameters
    ----------
    scores : (M,) detection scores; hits : (M,) bool; n_truths : int.

    Returns
    -------
    float; NaN when ``n_truths`` is 0.
    """
    if n_truths == 0:
        return float("nan")
    order = np.argsort(-np.asarray(scores), kind="stable")
    hits = np.asarray(hits, bool)[order]
    tp = np.cumsum(hits)
    fp = np.cumsum(~hits)
    recall = np.concatenate([[0.0], tp / n_truths, [1.0]])
    precision = np.concatenate([[0.0], tp / np.maximum(tp + fp, 1), [0.0]])
    # monotone envelope from the right, then sum rectangles where recall moves
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    moved = np.flatnonzero(recall[1:] != recall[:-1])
    return float(np.sum((recall[moved + 1] - recall[moved]) * precision[moved + 1]))
