import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from segstruct.features.cache import ArrayCache
from segstruct.features.topdown import (Detector, DetectorParams, average_precision,
                                        average_shapes, boxes_from_mask, train_detector)
from segstruct.features.topdown.detector import bounded_distance_transform
from segstruct.features.topdown.training import pack, placement_features

CLASS = 15   # as in conftest.py


def split_ap(detector, images, masks):
    dets = [detector.detect(im) for im in images]
    truths = [boxes_from_mask(m, CLASS) for m in masks]
    return average_precision(dets, truths)


def test_finds_synthetic_objects_on_held_out_images(trained, synthetic_data):
    det, roots = trained
    test_images, test_masks = synthetic_data[2:]
    assert split_ap(det, test_images, test_masks) >= 0.9
    assert split_ap(roots, test_images, test_masks) >= 0.8
    d = det.detect(test_images[0])
    assert d.shape[1] == 6 and np.all(np.diff(d[:, 4]) <= 0)
    assert set(np.unique(d[:, 5])) <= {0.0, 1.0}
    # the two components got the two aspect ratios (tall h/w > wide h/w)
    (h0, w0), (h1, w1) = (c.root.shape[:2] for c in det.components)
    assert h0 / w0 < 1 < h1 / w1
    assert all(c.n_parts == 4 for c in det.components)


@pytest.mark.slow
def test_training_is_deterministic(trained, synthetic_data, monkeypatch):
    """The same detector again; the pyramids it leaves are its own of the
    last round's images, and the shapes made from them are those made
    without them."""
    images, masks = synthetic_data[:2]
    kept: dict = {}
    again = train_detector(images, masks, CLASS, trained[0].params, pyramids=kept)
    a, _ = trained[0].to_arrays()
    b, _ = again.to_arrays()
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    # mining_images 15 of 24: the last round scanned 15 of them
    assert len(kept) == trained[0].params.mining_images < len(images)
    for i, pyramid in kept.items():
        fresh = again.pyramid(images[i])
        assert len(pyramid.levels) == len(fresh.levels)
        for x, y in zip(pyramid.levels, fresh.levels):
            np.testing.assert_array_equal(x, y)
    plain = average_shapes(again, images, masks, CLASS)
    made = []
    pyramid = Detector.pyramid
    monkeypatch.setattr(Detector, "pyramid",
                        lambda self, *a, **k: made.append(1) or pyramid(self, *a, **k))
    reused = average_shapes(again, images, masks, CLASS, pyramids=kept)
    assert len(made) == len(images) - len(kept)
    for x, y in zip(plain.to_arrays().values(), reused.to_arrays().values()):
        np.testing.assert_array_equal(x, y)


def test_round_trip_through_arrays_and_the_cache(trained, synthetic_data, tmp_path):
    det = trained[0]
    arrays, settings_ = det.to_arrays()
    cache = ArrayCache(tmp_path)
    key = {"detector": det.params.key()}
    cache.save("detector", key, arrays)
    back = Detector.from_arrays(cache.load("detector", key), json.loads(json.dumps(settings_)))
    for image in synthetic_data[2][:3]:
        np.testing.assert_array_equal(det.detect(image), back.detect(image))


def test_score_is_the_dot_product_of_weights_and_placement_features(trained, synthetic_data):
    det = trained[0]
    pyr = det.pyramid(synthetic_data[2][0])
    level = det.root_levels(pyr)[2]
    part_map = det.part_level(pyr, level)
    for k, ls in enumerate(det.score_level(pyr, level, part_map)):
        w = pack(det.components[k], det.params)
        for r, q in [(0, 0), (ls.score.shape[0] // 2, ls.score.shape[1] // 2)]:
            x = placement_features(det.components[k], det.params, pyr.levels[level], part_map,
                                   ls, r, q)
            assert np.isclose(w @ x, ls.score[r, q], rtol=1e-4, atol=1e-3)


def test_params_key_names_every_setting():
    from segstruct.features.topdown import DetectorParams
    a, b = DetectorParams(), DetectorParams(n_parts=0)
    assert a.key() != b.key() and json.loads(a.key())["n_parts"] == 6


@pytest.mark.parametrize("name, value", [
    ("n_components", 0), ("n_parts", -1), ("cell", 2.5), ("interval", True),
    ("min_root_side", 0), ("max_root_area", 29), ("max_displacement", -1),
    ("mining_images", 0), ("max_detections", 0), ("seed", 1.5), ("seed", -1), ("flip", 1),
    ("min_root_area", 0), ("min_box_area", -1), ("negatives_per_image", 0),
    ("negative_cache", 0), ("max_positives", 0), ("mining_rounds", -1),
    ("max_scale", 0.0), ("C", -1.0), ("C", float("nan")), ("bias_feature", float("inf")),
    ("min_deformation", -0.1), ("hard_margin", -1.0), ("part_area_fraction", 0.0),
    ("part_area_fraction", 1.5), ("max_void_fraction", -0.1), ("positive_iou", 0.0),
    ("negative_iou", 1.0), ("nms_overlap", 1.01), ("nms_overlap", "0.5")])
def test_params_refuse_every_bad_setting_by_name(name, value):
    from segstruct.features.topdown import DetectorParams
    with pytest.raises(ValueError, match=f"DetectorParams.{name}|max_root_area"):
        DetectorParams(**{name: value})


def test_params_accept_the_edges_of_their_ranges():
    from segstruct.features.topdown import DetectorParams
    DetectorParams(n_parts=0, mining_rounds=0, min_deformation=0.0, hard_margin=0,
                   max_void_fraction=1.0, positive_iou=1.0, negative_iou=0.0, nms_overlap=1,
                   part_area_fraction=1, min_root_area=48, seed=np.int64(3), flip=np.bool_(False))


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 7), st.integers(1, 7), st.integers(0, 3), st.integers(0, 10 ** 6))
def test_bounded_distance_transform_matches_brute_force(h, w, radius, seed):
    rng = np.random.default_rng(seed)
    resp = rng.normal(size=(2, h, w)).astype(np.float32)
    cost = np.abs(rng.normal(size=(2, 4))) * [1, 1, 1, 1] * rng.choice([-1, 1], (2, 4)) * [1, 0, 1, 0] \
        + np.abs(rng.normal(size=(2, 4))) * [0, 1, 0, 1]
    best, dy, dx = bounded_distance_transform(resp, cost, radius)
    for k in range(2):
        for y in range(h):
            for x in range(w):
                vals = [(resp[k, y + a, x + b] - (cost[k, 0] * b + cost[k, 1] * b * b
                                                   + cost[k, 2] * a + cost[k, 3] * a * a))
                        for a in range(-radius, radius + 1) for b in range(-radius, radius + 1)
                        if 0 <= y + a < h and 0 <= x + b < w]
                assert np.isclose(best[k, y, x], max(vals), atol=1e-5)
                a, b = dy[k, y, x], dx[k, y, x]
                got = resp[k, y + a, x + b] - (cost[k, 0] * b + cost[k, 1] * b * b
                                               + cost[k, 2] * a + cost[k, 3] * a * a)
                assert np.isclose(got, best[k, y, x], atol=1e-5)


@pytest.mark.parametrize("radius", [1, 3])
def test_distance_transform_ties_go_to_the_smallest_displacement(radius):
    """With no cost and equal responses everywhere inside, every candidate
    ties: displacement 0 wins; with one better value each side of a cell
    at the same distance, the negative one (tried first) wins."""
    flat = np.ones((1, 9, 9), np.float32)
    best, dy, dx = bounded_distance_transform(flat, np.zeros((1, 4)), radius)
    assert (dy == 0).all() and (dx == 0).all() and (best == 1).all()
    resp = np.zeros((1, 9, 9), np.float32)
    resp[0, 4, 4 - radius] = resp[0, 4, 4 + radius] = 5.0
    best, dy, dx = bounded_distance_transform(resp, np.zeros((1, 4)), radius)
    assert best[0, 4, 4] == 5.0 and dx[0, 4, 4] == -radius and dy[0, 4, 4] == 0
    assert dx.dtype == dy.dtype == np.int64


def test_training_with_the_process_memo_shared_is_the_same_and_makes_fewer_maps(
        synthetic_data, monkeypatch):
    """Two detectors trained on overlapping images inside ``sharing`` are
    the detectors trained without it, and the second makes HOG maps only
    for its positives' crops and the images the first did not see."""
    import segstruct.features.topdown.hog as hog
    from segstruct.io.process_memo import release, sharing
    images, masks = synthetic_data[:2]
    params = DetectorParams(n_parts=2, mining_images=8, mining_rounds=1, seed=5)
    made = []
    real = hog.hog_map
    monkeypatch.setattr(hog, "hog_map",
                        lambda image, cell=8: made.append(cell) or real(image, cell))
    plain = [train_detector(images[a:b], masks[a:b], CLASS, params) for a, b in ((0, 8), (2, 10))]
    plain_maps = len(made)
    release()
    try:
        with sharing():
            made.clear()
            shared = [train_detector(images[a:b], masks[a:b], CLASS, params)
                      for a, b in ((0, 8), (2, 10))]
        assert len(made) < 0.8 * plain_maps
    finally:
        release()
    for x, y in zip(plain, shared):
        a, _ = x.to_arrays()
        b, _ = y.to_arrays()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


def test_random_windows_of_roots_are_those_of_the_scored_maps(trained, synthetic_data,
                                                               monkeypatch):
    """The first round's random windows (roots without parts) skip scoring:
    the same windows, so the same features, as with every level scored."""
    import segstruct.features.topdown.training as training
    from segstruct.features.topdown.training import negative_features
    roots = trained[1]
    images, masks = synthetic_data[:2]
    boxes = boxes_from_mask(masks[0], CLASS)
    quick = negative_features(roots, images[0], boxes, np.random.default_rng(4), random=True)
    monkeypatch.setattr(training, "_unscored",
                        lambda feats, comp: roots.score_maps(feats, None)[
                            [c is comp for c in roots.components].index(True)])
    scored = negative_features(roots, images[0], boxes, np.random.default_rng(4), random=True)
    assert len(quick) == len(scored) == len(roots.components)
    for a, b in zip(quick, scored):
        assert a.shape[0] > 0
        np.testing.assert_array_equal(a, b)
