import numpy as np
import pytest

from segstruct.evaluate.scoring import (VOCScore, iou, oracle_score, pixel_confusion,
                               superpixel_confusion)
from segstruct.features.superpixels import majority_targets, paint, pixel_counts


def test_pixel_confusion_hand_made():
    pred = np.array([[1, 1, 0], [0, 1, 0], [1, 0, 0]], bool)
    target = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1]], bool)
    void = np.array([[0, 0, 0], [0, 0, 0], [0, 0, 1]], bool)
    # TP: (0,0),(1,1),(2,0) = 3; FP: (0,1) = 1; FN: (1,0),(2,1) = 2 ((2,2) void)
    assert pixel_confusion(pred, target, void) == (3, 1, 2)
    assert pixel_confusion(pred, target) == (3, 1, 3)


def test_voc_score_accumulates_over_images():
    s = VOCScore().add(2, 1, 1).add(0, 0, 3).add(0, 0, 0)
    assert s.totals == (2, 1, 4)
    assert s.iou == pytest.approx(2 / 7)          # accumulated, not averaged
    assert s.precision == pytest.approx(2 / 3)
    assert s.recall == pytest.approx(2 / 6)
    assert s.f1 == pytest.approx(4 / 9)
    # per-image IoU 2/4 and 0/3; the empty image is skipped
    assert s.mean_image_iou == pytest.approx(0.25)
    d = s.to_dict()
    assert d["voc_iou_percent"] == pytest.approx(100 * 2 / 7) and d["n_images"] == 3
    assert np.isnan(iou(0, 0, 0))
    with pytest.raises(ValueError):
        s.add(-1, 0, 0)


def test_superpixel_confusion_equals_painted_pixels():
    rng = np.random.default_rng(0)
    for _ in range(50):
        labels = rng.integers(0, 6, (7, 9))
        n = labels.max() + 1
        target = rng.random((7, 9)) < 0.4
        void = rng.random((7, 9)) < 0.2
        y = rng.integers(0, 2, n)
        fg, bg = pixel_counts(labels, target, void, n)
        assert superpixel_confusion(y, fg, bg) == pixel_confusion(
            paint(labels, y).astype(bool), target, void)


def test_oracle_score_hand_made():
    class Ex:
        def __init__(self, fg, bg):
            self.fg, self.bg = np.array(fg), np.array(bg)
            self.targets = majority_targets(self.fg, self.bg)
    # sp with fg 3 / bg 1 -> labelled 1: TP 3, FP 1; sp with 1 / 4 -> 0: FN 1
    s = oracle_score([Ex([3, 1], [1, 4])])
    assert s.totals == (3, 1, 1) and s.iou == pytest.approx(3 / 5)
