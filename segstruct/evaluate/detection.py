"""How good a class's object detector is: VOC average precision of its
detections against the boxes of a split's masks.

The ground-truth boxes are made as for training (one per connected
component of the class, ``segstruct.features.topdown.boxes``); components too
small or mostly void are "ignored" boxes, which count neither as hits nor as
misses, as VOC's "difficult" objects do.
"""
from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed
from segstruct.io.threads import thread_limits
from segstruct.io.progress import progress_bar

from segstruct.datasets.voc import VOCDataset, class_index
from segstruct.features.detection import ShapeDetector
from segstruct.features.scale import resize_image, resize_labels, working_shape
from segstruct.features.topdown.boxes import boxes_from_mask
from segstruct.features.topdown.evaluation import average_precision


def _detect_task(dataset_root, image_id, shape_detector, cls, long_side=None,
                 upsampling="linear"):
    """Detections, boxes and ignored boxes of one image, found at the working
    resolution (where the detector was trained) and given in the image's own
    pixels (box overlaps, and so the average precision, are the same)."""
    with thread_limits(1):
        import cv2
        cv2.setNumThreads(1)           # joblib already runs one process per core
        dataset = VOCDataset(dataset_root)
        params = shape_detector.params
        image = dataset.read_image(image_id)
        work = working_shape(image.shape, long_side)
        truths, ignored = boxes_from_mask(resize_labels(dataset.read_mask(image_id), work),
                                          cls, params.min_box_area, params.max_void_fraction,
                                          return_ignored=True)
        detections = shape_detector.detector.detect(resize_image(image, work, upsampling))
        if work == image.shape[:2]:
            return detections, truths, ignored
        # x0, y0, x1, y1 back to the image's pixels
        scale = np.array([image.shape[1] / work[1], image.shape[0] / work[0]] * 2)
        return tuple(np.concatenate([b[:, :4] * scale, b[:, 4:]], axis=1)
                     for b in (detections, truths, ignored))


def detector_report(dataset: VOCDataset, shape_detector: ShapeDetector, split: str,
                    n_jobs: int = 1, progress: bool = False,
                    long_side: int | None = None, upsampling: str = "linear") -> dict:
    """VOC average precision of a class's detector on a split.

    Parameters
    ----------
    dataset : VOCDataset
    shape_detector : ShapeDetector of the class (trained on another split).
    split : str, e.g. "val".
    n_jobs : worker processes (joblib convention).
    progress : show a progress bar.
    long_side : the working resolution the detector was trained at
        (``FeatureConfig.long_side``; None: images as given).
    upsampling : how smaller images are enlarged to it
        (``FeatureConfig.upsampling``).

    Returns
    -------
    dict with "class", "split", "average_precision" (in [0, 1]; None when
    the split has no box of the class), "n_images", "n_objects" (boxes that
    count), "n_ignored", "n_detections" (all, after non-maximum suppression)
    and "per_image": {image id: {"detections": (K, 6) [x0, y0, x1, y1, score,
    component], "truths": (G, 4), "ignored": (J, 4)}} (arrays; the JSON
    writer leaves them out).
    """
    cls = class_index(shape_detector.class_name)
    ids = dataset.ids(split)
    bar = progress_bar(len(ids), f"detections {shape_detector.class_name}", progress, "img")
    results = []
    try:
        runner = Parallel(n_jobs=n_jobs, return_as="generator")
        for out in runner(delayed(_detect_task)(dataset.root, i, shape_detector, cls,
                                                long_side, upsampling) for i in ids):
            results.append(out)
            bar.update()
    finally:
        bar.close()
    detections, truths, ignored = (list(x) for x in zip(*results)) if results else ([], [], [])
    n_objects = int(sum(len(t) for t in truths))
    ap = average_precision(detections, truths, ignored) if n_objects else None
    return {"class": shape_detector.class_name, "split": split,
            "average_precision": None if ap is None else float(ap),
            "n_images": len(ids), "n_objects": n_objects,
            "n_ignored": int(sum(len(j) for j in ignored)),
            "n_detections": int(sum(len(d) for d in detections)),
            "per_image": {i: {"detections": d, "truths": t, "ignored": j}
                          for i, d, t, j in zip(ids, detections, truths, ignored)}}


def detectors_report(dataset: VOCDataset, detectors, split: str, n_jobs: int = 1,
                     progress: bool = False, long_side: int | None = None,
                     upsampling: str = "linear") -> dict:
    """:func:`detector_report` of each of a class's detectors (the folds' of the
    cross-fitted block, or the one), and their mean average precision.

    Returns
    -------
    dict
        The first detector's report (its "per_image" for figures), with
        "average_precision" the mean over the detectors that have one (None
        when none has) and "detector_average_precision" the list of each's.
    """
    reports = [detector_report(dataset, sd, split, n_jobs=n_jobs, progress=progress,
                               long_side=long_side, upsampling=upsampling)
               for sd in detectors]
    aps = [r["average_precision"] for r in reports]
    known = [a for a in aps if a is not None]
    return {**reports[0], "average_precision": float(np.mean(known)) if known else None,
            "detector_average_precision": aps}


def best_images(report: dict, n: int) -> list[str]:
    """Up to ``n`` image ids with objects, those with the most confident detection first."""
    scored = [(-(float(v["detections"][0, 4]) if len(v["detections"]) else -np.inf), i)
              for i, v in report["per_image"].items() if len(v["truths"])]
    return [i for _, i in sorted(scored)[:n]]
