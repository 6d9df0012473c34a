from dataclasses import replace

import numpy as np
import pytest

from segstruct.features.topdown import (Detector, average_shapes, boxes_from_mask,
                                        n_topdown_features, topdown_features)
from segstruct.features.topdown.shapes import crop_resize

CLASS = 15   # as in conftest.py


@pytest.fixture(scope="module")
def shapes(trained, synthetic_data):
    images, masks = synthetic_data[:2]
    return average_shapes(trained[0], images, masks, CLASS)


def true_ellipse(h, w, sub=8):
    """Share of each of h x w cells inside the inscribed ellipse."""
    yy, xx = (np.mgrid[:h * sub, :w * sub] + 0.5) / sub
    inside = ((yy - h / 2) / (h / 2)) ** 2 + ((xx - w / 2) / (w / 2)) ** 2 <= 1
    return inside.reshape(h, sub, w, sub).mean(axis=(1, 3))


class BoxDetector:
    """A stand-in detector whose detections are the ground-truth boxes."""

    def __init__(self, trained, masks):
        self.components = trained.components
        self.masks = masks
        self.calls = 0

    def detect(self, image, threshold=0.0, return_parts=False, clip=True, pyramid=None):
        boxes = boxes_from_mask(self.masks[self.calls], CLASS)
        self.calls += 1
        # component by aspect (tall -> the component whose root is tall)
        tall = [int(c.root.shape[0] > c.root.shape[1]) for c in self.components]
        comp = [tall.index(int(b[3] - b[1] > b[2] - b[0])) for b in boxes]
        dets = np.column_stack([boxes, np.ones(len(boxes)), comp]).astype(float)
        n = self.components[0].n_parts
        parts = np.repeat(dets[:, None, :4], n, axis=1)
        return dets, parts


def test_shapes_under_exact_boxes_are_the_ellipse(trained, synthetic_data):
    images, masks = synthetic_data[:2]
    shapes = average_shapes(BoxDetector(trained[0], masks), images, masks, CLASS)
    for root in shapes.root:
        assert np.corrcoef(root.ravel(), true_ellipse(*root.shape).ravel())[0, 1] > 0.95


class CutBoxDetector(BoxDetector):
    """Ground-truth boxes of objects cut by the image's left border: the whole
    object's box (hanging off the image) unless ``clip``."""

    def __init__(self, trained, full_masks, cuts):
        super().__init__(trained, full_masks)
        self.cuts = cuts

    def detect(self, image, threshold=0.0, return_parts=False, clip=True, pyramid=None):
        cut = self.cuts[self.calls]
        dets, parts = super().detect(image, threshold, return_parts)
        dets[:, [0, 2]] -= cut
        parts[..., [0, 2]] -= cut
        if clip:
            dets[:, :4] = np.clip(dets[:, :4], 0, [image.shape[1], image.shape[0]] * 2)
        return dets, parts


def test_shapes_of_objects_cut_by_the_border_are_the_ellipse(trained, synthetic_data):
    # Every object loses up to half its width to the image's left border.
    # The features place a root's shape over its whole box, also where it
    # hangs off the image; so the shapes must be cropped under that whole
    # box (the part off the image is unlabelled), not under the clipped box,
    # which would stretch the visible half over the whole root.
    images, masks = synthetic_data[:2]
    cuts = [int((b[0] + b[2]) / 2) if b[0] < 10 else int(b[0] + (b[2] - b[0]) * 0.4)
            for b in (boxes_from_mask(m, CLASS)[:, :4].min(axis=0) for m in masks)]
    cut_images = [np.ascontiguousarray(im[:, c:]) for im, c in zip(images, cuts)]
    cut_masks = [np.ascontiguousarray(m[:, c:]) for m, c in zip(masks, cuts)]
    shapes = average_shapes(CutBoxDetector(trained[0], masks, cuts), cut_images, cut_masks,
                            CLASS)
    for root in shapes.root:
        assert np.corrcoef(root.ravel(), true_ellipse(*root.shape).ravel())[0, 1] > 0.95


def test_unclipped_detections_keep_the_whole_root_box(trained, synthetic_data):
    det = trained[0]
    hanging = 0
    for image in synthetic_data[2][:4]:
        image = np.ascontiguousarray(image[:, 30:])     # objects may now hang off the left
        clipped = det.detect(image, threshold=-0.5)
        whole = det.detect(image, threshold=-0.5, clip=False)
        np.testing.assert_array_equal(whole[:, 4:], clipped[:, 4:])
        np.testing.assert_allclose(
            clipped[:, :4], np.clip(whole[:, :4], 0, [image.shape[1], image.shape[0]] * 2))
        for box, comp in zip(whole, whole[:, 5].astype(int)):
            rows, cols = det.components[comp].root.shape[:2]
            assert (box[2] - box[0]) * rows == pytest.approx((box[3] - box[1]) * cols)
        hanging += int((whole[:, 0] < 0).sum())
    assert hanging > 0          # else this test would check nothing off the image


def test_average_root_shape_of_detections_is_an_ellipse(shapes):
    # The detector's boxes sit a little off the objects (8 px cells, five
    # scales an octave), which blurs the average: it correlates with the
    # ellipse inscribed in the root less than exact boxes do.
    assert np.all(shapes.counts > 0)
    for root in shapes.root:
        corr = np.corrcoef(root.ravel(), true_ellipse(*root.shape).ravel())[0, 1]
        assert corr > 0.7
        h, w = root.shape
        assert root[h // 2, w // 2] > 0.9
        assert max(root[0, 0], root[0, -1], root[-1, 0], root[-1, -1]) < 0.35
        assert 0 <= root.min() and root.max() <= 1
    for parts in shapes.parts:
        assert parts.shape[0] == 4 and np.all((parts >= 0) & (parts <= 1))


def test_crop_resize_averages_areas():
    values = np.zeros((20, 20))
    values[:, 10:] = 1
    out = crop_resize(values, (0, 0, 20, 20), (2, 4))
    np.testing.assert_allclose(out, [[0, 0, 1, 1], [0, 0, 1, 1]], atol=1e-6)
    # half the box hangs off the image: outside counts as 0
    np.testing.assert_allclose(crop_resize(np.ones((10, 10)), (5, 0, 15, 10), (1, 2)),
                               [[1, 0]], atol=1e-6)


def superpixel_grid(shape, size=16):
    yy, xx = np.mgrid[:shape[0], :shape[1]]
    cols = -(-shape[1] // size)
    return ((yy // size) * cols + xx // size).astype(np.int32)


def test_features_are_zero_where_no_detection_fires(trained, shapes):
    det = trained[0]
    # background only (the training images' noise): nothing scores above 0
    background = np.clip(np.random.default_rng(7).normal(90, 20, (120, 160, 3)), 0, 255)
    background = background.astype(np.uint8)
    assert len(det.detect(background, threshold=0.0)) == 0
    sp = superpixel_grid(background.shape)
    f = topdown_features(det, shapes, background, sp)
    assert f.shape == (sp.max() + 1, n_topdown_features(det)) == (sp.max() + 1, 2 * (1 + 4))
    assert np.all(f == 0)


def test_features_are_zero_when_every_score_is_negative(trained, shapes, synthetic_data):
    det = trained[0]
    sunk = Detector(det.params, [replace(c, bias=c.bias - 1e3) for c in det.components])
    image = synthetic_data[2][0]
    assert np.all(topdown_features(sunk, shapes, image, superpixel_grid(image.shape)) == 0)


def test_features_grow_with_confidence_and_sit_on_the_object(trained, shapes, synthetic_data):
    det = trained[0]
    image, mask = synthetic_data[2][0], synthetic_data[3][0]
    sp = superpixel_grid(image.shape)
    base = topdown_features(det, shapes, image, sp)
    raised = topdown_features(Detector(det.params, [replace(c, bias=c.bias + 1.0)
                                                    for c in det.components]), shapes, image, sp)
    assert np.all(raised >= base - 1e-6) and raised.sum() > base.sum()
    assert np.all(base >= 0) and base.dtype == np.float64
    # superpixels mostly on the object get more than those off it
    n = sp.max() + 1
    on = np.bincount(sp.ravel(), (mask == CLASS).ravel(), n) / np.bincount(sp.ravel(), None, n)
    total = base.sum(axis=1)
    assert total[on > 0.8].mean() > 3 * total[on < 0.05].mean()


def test_features_reject_mismatched_superpixels(trained, shapes):
    with pytest.raises(ValueError):
        topdown_features(trained[0], shapes, np.zeros((32, 32, 3), np.uint8),
                         np.zeros((16, 16), np.int32))


def test_features_of_one_image_share_its_hog_maps(trained, shapes, synthetic_data, monkeypatch):
    """Detectors scoring one image (the cross-fitted ones of a val image)
    share its HOG maps through one memo, and get the blocks they get alone."""
    import segstruct.features.topdown.hog as hog
    det = trained[0]
    image = synthetic_data[2][1]
    sp = superpixel_grid(image.shape)
    other = Detector(det.params, [replace(c, bias=c.bias + 0.5) for c in det.components])
    alone = [topdown_features(d, shapes, image, sp) for d in (det, other)]
    made = []
    real = hog.hog_map
    monkeypatch.setattr(hog, "hog_map", lambda im, cell=8: made.append(cell) or real(im, cell))
    memo: dict = {}
    first = topdown_features(det, shapes, image, sp, memo)
    n_first = len(made)
    second = topdown_features(other, shapes, image, sp, memo)
    assert n_first > 0 and len(made) == n_first
    np.testing.assert_array_equal(first, alone[0])
    np.testing.assert_array_equal(second, alone[1])
