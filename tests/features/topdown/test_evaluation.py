import numpy as np
import pytest

from segstruct.features.topdown.evaluation import average_precision, precision_recall_ap

GT = [np.array([[0, 0, 10, 10]]), np.array([[20, 20, 40, 40], [50, 50, 60, 60]])]


def det(*rows):
    return np.array(rows, np.float64).reshape(-1, 6)


def test_perfect_detections_score_one():
    dets = [det([0, 0, 10, 10, 0.9, 0]), det([20, 20, 40, 40, 0.8, 0], [50, 50, 60, 60, 0.7, 1])]
    assert average_precision(dets, GT) == pytest.approx(1.0)


def test_false_positive_ranked_first():
    # ranking: FP, TP, TP, TP -> precision at the recall steps 1/3, 2/3, 1:
    # 1/2, 2/3, 3/4; the monotone envelope lifts all three to 3/4, so
    # AP = 3/4 (without the envelope it would be 23/36)
    dets = [det([0, 0, 10, 10, 0.5, 0], [100, 100, 120, 120, 0.99, 0]),
            det([20, 20, 40, 40, 0.4, 0], [50, 50, 60, 60, 0.3, 0])]
    assert average_precision(dets, GT) == pytest.approx(3 / 4)


def test_missed_object_and_duplicate():
    # two hits of three objects, and a duplicate of the first (a FP ranked last)
    dets = [det([0, 0, 10, 10, 0.9, 0], [1, 0, 10, 10, 0.1, 0]), det([20, 20, 40, 40, 0.8, 0])]
    assert average_precision(dets, GT) == pytest.approx(2 / 3)
    # a FP between the hits: precision 1, 1/2, 2/3 at recall 1/3, 1/3, 2/3
    # -> AP = (1/3)(1) + (1/3)(2/3) = 5/9
    dets = [det([0, 0, 10, 10, 0.9, 0], [100, 100, 110, 110, 0.85, 0]),
            det([20, 20, 40, 40, 0.8, 0])]
    assert average_precision(dets, GT) == pytest.approx(5 / 9)


def test_monotone_envelope():
    # TP, FP, TP over 2 objects: precision 1, 1/2, 2/3; interpolated 1 then 2/3
    assert precision_recall_ap(np.array([3, 2, 1]), np.array([True, False, True]), 2) \
        == pytest.approx(0.5 + 0.5 * 2 / 3)


def test_ignored_boxes_count_neither_way():
    ignored = [np.array([[100, 100, 120, 120]]), np.zeros((0, 4))]
    dets = [det([0, 0, 10, 10, 0.5, 0], [100, 100, 120, 120, 0.99, 0]),
            det([20, 20, 40, 40, 0.4, 0], [50, 50, 60, 60, 0.3, 0])]
    assert average_precision(dets, GT, ignored) == pytest.approx(1.0)


def test_no_ground_truth_is_nan_and_no_detection_is_zero():
    assert np.isnan(average_precision([det()], [np.zeros((0, 4))]))
    assert average_precision([det(), det()], GT) == 0.0
