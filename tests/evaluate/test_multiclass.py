"""The 21-label VOC measure against counting pixel by pixel."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from segstruct.datasets.voc import VOID_LABEL
from segstruct.evaluate.multiclass import N_LABELS, ConfusionMatrix


def counted_iou(pairs):
    """IoU per label by looping over every pixel of every image."""
    tp, fp, fn = np.zeros(N_LABELS), np.zeros(N_LABELS), np.zeros(N_LABELS)
    for pred, truth in pairs:
        for p, t in zip(np.ravel(pred), np.ravel(truth)):
            if t == VOID_LABEL:
                continue
            if p == t:
                tp[p] += 1
            else:
                fp[p] += 1
                fn[t] += 1
    union = tp + fp + fn
    return np.array([tp[c] / union[c] if union[c] else np.nan for c in range(N_LABELS)])


images = st.lists(st.tuples(
    st.lists(st.sampled_from([0, 1, 7, 15]), min_size=12, max_size=12),
    st.lists(st.sampled_from([0, 1, 7, 13, VOID_LABEL]), min_size=12, max_size=12)),
    min_size=1, max_size=4)


@settings(max_examples=100, deadline=None)
@given(images)
def test_iou_per_label_equals_pixel_counting(data):
    pairs = [(np.array(p).reshape(3, 4), np.array(t).reshape(3, 4)) for p, t in data]
    cm = ConfusionMatrix()
    for p, t in pairs:
        cm.add(p, t)
    np.testing.assert_allclose(cm.iou(), counted_iou(pairs), equal_nan=True)
    expected = counted_iou(pairs)
    expected = expected[~np.isnan(expected)]
    assert cm.mean_iou() == (pytest.approx(expected.mean()) if expected.size else
                             pytest.approx(np.nan, nan_ok=True))


def test_dict_names_labels_and_leaves_absent_ones_undefined():
    cm = ConfusionMatrix()
    cm.add(np.array([[0, 7], [7, 7]]), np.array([[0, 7], [0, VOID_LABEL]]))
    d = cm.to_dict()
    assert d["iou_percent"]["car"] == pytest.approx(50.0)          # 1 TP, 1 FP
    assert d["iou_percent"]["background"] == pytest.approx(50.0)   # 1 TP, 1 FN
    assert d["iou_percent"]["horse"] is None
    assert d["mean_iou_percent"] == pytest.approx(50.0)


def test_bad_inputs_are_refused():
    cm = ConfusionMatrix()
    with pytest.raises(ValueError, match="shape"):
        cm.add(np.zeros((2, 2), int), np.zeros((2, 3), int))
    with pytest.raises(ValueError, match="outside"):
        cm.add(np.full((2, 2), 21), np.zeros((2, 2), int))
