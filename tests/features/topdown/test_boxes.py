import numpy as np
import pytest

from segstruct.features.topdown.boxes import box_iou, boxes_from_mask, non_maximum_suppression


def test_two_blobs_tiny_and_void_dominated_are_left_out():
    mask = np.zeros((60, 80), np.uint8)
    mask[5:20, 10:30] = 7           # 300 px
    mask[30:55, 40:50] = 7          # 250 px
    mask[2:4, 70:72] = 7            # 4 px: tiny
    mask[40:60, 60:80] = 255        # void band...
    mask[45:48, 65:68] = 7          # ...around a 9 px blob
    mask[5:20, 55:60] = 3           # another class
    boxes, ignored = boxes_from_mask(mask, 7, min_area=50, return_ignored=True)
    assert boxes.tolist() == [[10, 5, 30, 20], [40, 30, 50, 55]]
    assert sorted(map(tuple, ignored.tolist())) == [(65, 45, 68, 48), (70, 2, 72, 4)]
    assert boxes.dtype == np.int64


def test_void_fraction_rule_alone():
    mask = np.full((40, 40), 255, np.uint8)
    mask[10:30, 10:30] = 0
    mask[12:28, 15:17] = 7                         # 16x2 blob, box all labelled
    assert boxes_from_mask(mask, 7, min_area=10).tolist() == [[15, 12, 17, 28]]
    mask2 = np.full((40, 40), 255, np.uint8)
    mask2[12:28, 15:17] = 7                        # box is the blob: no void inside
    assert len(boxes_from_mask(mask2, 7, min_area=10)) == 1
    mask3 = np.full((40, 40), 255, np.uint8)
    mask3[10, 10:30] = 7                           # thin diagonal-free L shape ...
    mask3[10:30, 10] = 7                           # ... whose box is 90% void
    assert len(boxes_from_mask(mask3, 7, min_area=10, max_void_fraction=0.5)) == 0
    assert len(boxes_from_mask(mask3, 7, min_area=10, max_void_fraction=0.95)) == 1


def test_touching_the_border_and_diagonal_connectivity():
    mask = np.zeros((30, 30), np.uint8)
    mask[0:10, 0:10] = 1
    mask[10:30, 10:30] = 1          # touches the first only at a corner: 8-connected
    assert boxes_from_mask(mask, 1, min_area=1).tolist() == [[0, 0, 30, 30]]


def test_empty_and_bad_input():
    assert boxes_from_mask(np.zeros((5, 5), np.uint8), 1).shape == (0, 4)
    with pytest.raises(ValueError):
        boxes_from_mask(np.zeros((5, 5, 3), np.uint8), 1)


def test_iou_and_nms():
    a = np.array([[0, 0, 10, 10]])
    b = np.array([[5, 0, 15, 10], [20, 20, 30, 30], [0, 0, 10, 10]])
    np.testing.assert_allclose(box_iou(a, b), [[50 / 150, 0, 1]])
    keep = non_maximum_suppression(np.concatenate([a, b]), np.array([0.9, 0.8, 0.7, 0.95]), 0.5)
    assert keep.tolist() == [3, 1, 2]   # box 3 (same as 0) wins; 0 suppressed


def greedy_nms_by_box_iou(boxes, scores, overlap, limit=None):
    """The plain greedy suppression, one box_iou call per kept box."""
    order = np.argsort(-np.asarray(scores, np.float64), kind="stable")
    keep = []
    while order.size and (limit is None or len(keep) < limit):
        keep.append(order[0])
        iou = box_iou(boxes[order[:1]], boxes[order[1:]])[0]
        order = order[1:][iou <= overlap]
    return np.asarray(keep, np.int64)


@pytest.mark.parametrize("seed", range(30))
def test_nms_keeps_what_box_iou_would(seed):
    """Suppression on columns gives box_iou's decisions exactly: ties of
    scores, boxes equal to each other, empty boxes and IoUs at the
    threshold included."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    xy = rng.integers(0, 40, (n, 2)).astype(float)
    size = rng.integers(0, 25, (n, 2)).astype(float) * rng.choice([1.0, 0.37], (n, 1))
    boxes = np.concatenate([xy, xy + size], axis=1)
    boxes[rng.random(n) < 0.1] = boxes[0]             # duplicates of one box
    scores = rng.integers(0, 10, n).astype(float)     # many ties
    for overlap in (0.0, 0.3, 0.5, 1.0):
        for limit in (None, 1, 7):
            np.testing.assert_array_equal(
                non_maximum_suppression(boxes, scores, overlap, limit),
                greedy_nms_by_box_iou(boxes, scores, overlap, limit))
