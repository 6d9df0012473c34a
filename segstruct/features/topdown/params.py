"""The settings of the star-model object detector (:class:`DetectorParams`):
its shape, its training and its use as the top-down block."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class DetectorParams:
    """Every setting of a detector and its training.

    Parameters
    ----------
    n_components : int, aspect-ratio clusters (2: split at the median).
    n_parts : int, part filters per component (0: root filters only).
    cell : int, HOG cell side in pixels.
    interval : int, pyramid levels per octave.
    max_scale : float
        Magnification of the finest pyramid level. With parts, roots start
        one octave below (parts need the level at twice their scale), so 2
        lets a root see objects at the image's own resolution.
    min_root_area, max_root_area : int, bounds on a root filter's area
        in cells; within them it is sized from the component's 20th
        percentile box area at the finest root scale (as DPM does). DPM's
        floor is about 47 cells; below about 30 (camvid's small cars got
        3 x 4 roots with 12) the roots are weak and parts of 3 x 3 cells
        only fit noise (raising the floor to 30 clearly raised the val AP on
        a camvid subset).
    min_root_side : int, a root filter is at least this many cells a side.
    part_area_fraction : float, the parts together cover this share of the
        root's area (DPM: 0.8).
    max_displacement : int, parts move at most this many part cells.
    min_box_area, max_void_fraction : which mask components become
        positives (``boxes.boxes_from_mask``).
    C : float, the SVM's loss weight.
    bias_feature : float, the constant feature; large = bias barely
        regularised.
    min_deformation : float, lower bound on quadratic deformation weights.
    positive_iou : float, a positive's latent root placement overlaps its box
        at least this much.
    negative_iou : float, a negative window overlaps no object box more.
    mining_rounds : int, hard-negative rounds per stage (roots, then parts).
    mining_images : int, training images scanned per mining round.
    negatives_per_image : int, hardest windows kept per image and component.
        The star model has ~5x the root's weights: with 20 a window the
        parts overfit their few negatives (camvid car's val AP collapsed),
        with 80 they help (its val AP rose above the root filters').
    negative_cache : int, cap on the negatives kept per component.
    max_positives : int, cap on the positive boxes per component.
    flip : bool, add mirror images of the positives.
    hard_margin : float, windows scoring above ``-hard_margin`` are hard.
    nms_overlap : float, IoU above which detections suppress each other.
    max_detections : int, detections kept per image (best first).
    seed : int, seeds every random choice.
    """

    n_components: int = 2
    n_parts: int = 6
    cell: int = 8
    interval: int = 5
    max_scale: float = 2.0
    min_root_area: int = 30
    max_root_area: int = 48
    min_root_side: int = 3
    part_area_fraction: float = 0.8
    max_displacement: int = 3
    min_box_area: int = 100
    max_void_fraction: float = 0.5
    C: float = 0.01
    bias_feature: float = 10.0
    min_deformation: float = 0.01
    positive_iou: float = 0.6
    negative_iou: float = 0.3
    mining_rounds: int = 1
    mining_images: int = 30
    negatives_per_image: int = 80
    negative_cache: int = 6000
    max_positives: int = 400
    flip: bool = True
    hard_margin: float = 1.0
    nms_overlap: float = 0.5
    max_detections: int = 100
    seed: int = 0

    def __post_init__(self):
        # every setting, by name: a bad one fails here, not minutes into training
        ints = {"n_components": 1, "n_parts": 0, "cell": 2, "interval": 1, "min_root_area": 1,
                "max_root_area": 1, "min_root_side": 1, "max_displacement": 0,
                "min_box_area": 0, "mining_rounds": 0, "mining_images": 1,
                "negatives_per_image": 1, "negative_cache": 1, "max_positives": 1,
                "max_detections": 1, "seed": 0}
        for name, least in ints.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or value < least:
                raise ValueError(f"DetectorParams.{name} must be an integer >= {least}, "
                                 f"got {value!r}")
        if not isinstance(self.flip, (bool, np.bool_)):
            raise ValueError(f"DetectorParams.flip must be True or False, got {self.flip!r}")
        if self.max_root_area < self.min_root_area:
            raise ValueError(f"DetectorParams.max_root_area ({self.max_root_area}) is below "
                             f"min_root_area ({self.min_root_area})")
        # (name, low, high, low inclusive, high inclusive)
        ranges = [("max_scale", 0, np.inf, False, False), ("C", 0, np.inf, False, False),
                  ("bias_feature", 0, np.inf, False, False),
                  ("min_deformation", 0, np.inf, True, False),
                  ("hard_margin", 0, np.inf, True, False),
                  ("part_area_fraction", 0, 1, False, True),
                  ("max_void_fraction", 0, 1, True, True), ("positive_iou", 0, 1, False, True),
                  ("negative_iou", 0, 1, True, False), ("nms_overlap", 0, 1, False, True)]
        for name, lo, hi, lo_in, hi_in in ranges:
            value = getattr(self, name)
            ok = (isinstance(value, (int, float, np.integer, np.floating))
                  and not isinstance(value, bool) and bool(np.isfinite(value))
                  and (lo <= value if lo_in else lo < value)
                  and (value <= hi if hi_in else value < hi))
            if not ok:
                interval = f"{'[' if lo_in else '('}{lo:g}, {hi:g}{']' if hi_in else ')'}"
                raise ValueError(f"DetectorParams.{name} must be in {interval}, got {value!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    def key(self) -> str:
        """Canonical JSON of every setting (for cache keys)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def n_filters(self) -> int:
        """Root and part filters in all: the top-down block's width."""
        return self.n_components * (1 + self.n_parts)

    @property
    def root_scale(self) -> float:
        """Magnification of the finest level a root is placed on."""
        return self.max_scale / 2.0 if self.n_parts else self.max_scale
