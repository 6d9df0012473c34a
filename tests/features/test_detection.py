"""The top-down block inside feature extraction: the class's detector trained
on the training split and cached, its columns appended to the unary
features, model files that carry it, and settings that leave the features
without it exactly as before."""
import json
from dataclasses import replace

import numpy as np
import pytest

from segstruct.datasets import VOCDataset
from segstruct.features import descriptors as F
from segstruct.features import detection
from segstruct.features.cache import ArrayCache, key_digest
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.scale import resize_image
from segstruct.features.superpixels import SuperpixelParams
from segstruct.features.topdown.detector import DetectorParams
from segstruct.features.topdown.features import topdown_features

# Cheap detector settings: roots only, one short mining round (seconds, not minutes).
FAST = DetectorParams(n_parts=0, mining_rounds=1, mining_images=4, max_positives=40, seed=1)
BOTTOM_UP = F.FeatureConfig(n_words=16, codebook_descriptors=2000, codebook_images=6,
                            kmeans_iterations=5, superpixels=SuperpixelParams(method="felzenszwalb", min_size=400))
# one detector for every image (no cross-fitting; tests/features/test_cross_fitting.py)
TOP_DOWN = F.FeatureConfig(**{**BOTTOM_UP.__dict__, "detector": FAST, "top_down_folds": 1})


# the generated data set of the data_root fixture (tests/conftest.py)
DATA_SIZE = (8, 3)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def _extractor(root, cache_dir, config=TOP_DOWN, **kw):
    return FeatureExtractor(VOCDataset(root), config, ArrayCache(cache_dir), progress=False,
                            **kw)


def test_settings_without_a_detector_are_recorded_as_before():
    assert "detector" not in BOTTOM_UP.to_dict()
    # the working resolution is recorded; without one, as before the setting
    assert BOTTOM_UP.to_dict()["long_side"] == "auto"
    as_given = replace(BOTTOM_UP, long_side=None)
    assert as_given.to_dict() == BOTTOM_UP.bottom_up_dict() == as_given.bottom_up_dict()
    assert TOP_DOWN.bottom_up_dict() == as_given.to_dict()    # the same bottom-up cache
    assert TOP_DOWN.to_dict()["detector"] == FAST.to_dict()
    again = F.FeatureConfig.from_dict(json.loads(json.dumps(TOP_DOWN.to_dict())))
    assert again == TOP_DOWN
    assert TOP_DOWN.n_unary == BOTTOM_UP.n_unary + FAST.n_filters
    assert TOP_DOWN.unary_blocks()[-1] == ("top_down", 2)      # 2 components, no parts


@pytest.fixture(scope="module")
def firing(data_root, cache_dir):
    """The trained car detector with its biases raised so that it fires on
    every image (a detector trained on eight images fires on none of the
    val split), and the average shapes of its detections on the train split."""
    from segstruct.features.topdown.detector import Detector
    from segstruct.features.topdown.shapes import average_shapes
    sd = _extractor(data_root, cache_dir).shape_detector("car")
    boosted = Detector(sd.params, [replace(c, bias=c.bias + 3.0)
                                   for c in sd.detector.components])
    dataset = VOCDataset(data_root)
    ids = dataset.ids("train")
    shapes = average_shapes(boosted, [dataset.read_image(i) for i in ids],
                            [dataset.read_mask(i) for i in ids], 7)     # 7: car
    return detection.ShapeDetector("car", boosted, shapes)


def test_top_down_columns_are_appended_to_the_class_examples(data_root, cache_dir, firing):
    plain = _extractor(data_root, cache_dir, BOTTOM_UP).examples("val", "car")
    extractor = _extractor(data_root, cache_dir, detectors={"car": firing})
    with_td = extractor.examples("val", "car")
    sd = extractor.shape_detector("car")
    assert sd is firing
    dataset = VOCDataset(data_root)
    blocks = [ex.graph.unary[:, BOTTOM_UP.n_unary:] for ex in with_td]
    assert all((block > 0).any() for block in blocks)
    for a, b in zip(plain, with_td):
        assert b.graph.unary.shape == (a.graph.n_nodes, TOP_DOWN.n_unary)
        np.testing.assert_array_equal(b.graph.unary[:, :BOTTOM_UP.n_unary], a.graph.unary)
        np.testing.assert_array_equal(b.graph.pairwise, a.graph.pairwise)
        # the appended block is the detector's feature of that image, computed directly
        segments = b.graph.working_segments        # the working resolution's
        direct = topdown_features(sd.detector, sd.shapes, resize_image(
            dataset.read_image(b.graph.image_id), segments.shape), segments)
        np.testing.assert_allclose(b.graph.unary[:, BOTTOM_UP.n_unary:], direct)
    with pytest.raises(ValueError, match="per class"):
        extractor.graphs("val")


@pytest.mark.slow
def test_detector_is_trained_once_and_retrained_when_its_settings_change(
        data_root, tmp_path, monkeypatch):
    calls = []
    real = detection.train_detector

    def counting(*args, **kwargs):
        calls.append(args[3])
        return real(*args, **kwargs)
    monkeypatch.setattr(detection, "train_detector", counting)
    dataset, cache = VOCDataset(data_root), ArrayCache(tmp_path)
    first = detection.train_shape_detector(dataset, "car", "train", FAST, cache)
    again = detection.train_shape_detector(dataset, "car", "train", FAST, cache)
    assert len(calls) == 1 and again.digest == first.digest
    other = DetectorParams(**{**FAST.to_dict(), "C": 0.1})
    detection.train_shape_detector(dataset, "car", "train", other, cache)
    detection.train_shape_detector(dataset, "person", "train", FAST, cache)
    assert calls == [FAST, other, FAST]


def test_shape_detector_round_trip(data_root, cache_dir):
    sd = _extractor(data_root, cache_dir).shape_detector("car")
    arrays, settings = sd.to_arrays()
    back = detection.ShapeDetector.from_arrays(arrays, json.loads(json.dumps(settings)))
    assert back.digest == sd.digest and back.class_name == "car"
    image = VOCDataset(data_root).read_image(VOCDataset(data_root).ids("val")[0])
    np.testing.assert_array_equal(back.detector.detect(image), sd.detector.detect(image))


@pytest.mark.slow
def test_model_file_carries_the_detector(data_root, cache_dir, tmp_path, firing, monkeypatch):
    from segstruct.io.persistence import (ModelFileError, load_model, load_shape_detector,
                                          save_model)
    from segstruct.learn.methods import estimator_for
    extractor = _extractor(data_root, cache_dir)
    train = extractor.examples("train", "car")
    svm = estimator_for("bl1", max_iter=20).fit([e.graph for e in train],
                                                [e.pixel_counts for e in train])
    sd = firing
    with pytest.raises(ValueError, match="needs the detector"):
        save_model(tmp_path / "m", svm, extractor.config, extractor.codebook()[0],
                   {"class": "car"})
    # the settings as given hold long_side "auto", not the pixels the features had
    with pytest.raises(ValueError, match="long_side is 'auto'"):
        save_model(tmp_path / "m", svm, TOP_DOWN, extractor.codebook()[0], {"class": "car"},
                   shape_detectors=sd)
    save_model(tmp_path / "m", svm, extractor.config, extractor.codebook()[0],
               {"class": "car"}, shape_detectors=sd)
    loaded, config, codebook, doc = load_model(tmp_path / "m")
    assert config == extractor.config == replace(TOP_DOWN, long_side=config.long_side)
    sides = sorted(max(VOCDataset(data_root).image_size(i))
                   for i in VOCDataset(data_root).ids("train"))
    assert config.long_side == sides[-1]           # the split's largest
    back, = load_shape_detector(tmp_path / "m")
    assert back.digest == sd.digest
    # a new extractor given the model's detector makes the same features without
    # training; given none, it refuses rather than train another
    def no_training(*args, **kwargs):
        raise AssertionError("a detector was trained")
    monkeypatch.setattr(detection, "train_detector", no_training)
    fresh = FeatureExtractor(VOCDataset(data_root), config, ArrayCache(tmp_path / "c2"),
                             progress=False, codebook=codebook, detectors={"car": back})
    val = fresh.examples("val", "car")
    ref = _extractor(data_root, cache_dir, detectors={"car": firing}).examples("val", "car")
    assert all(ex.graph.unary[:, BOTTOM_UP.n_unary:].any() for ex in val)
    without = FeatureExtractor(VOCDataset(data_root), config, ArrayCache(tmp_path / "c3"),
                               progress=False, codebook=codebook)
    with pytest.raises(ValueError, match="its car detector was not given"):
        without.examples("val", "car")
    # a model without SIFT has no codebook to tell it by: from_model says it
    no_sift = F.FeatureConfig(**{**config.__dict__, "sift": False})
    model_features = FeatureExtractor(VOCDataset(data_root), no_sift,
                                      ArrayCache(tmp_path / "c4"), progress=False,
                                      from_model=True)
    with pytest.raises(ValueError, match="its car detector was not given"):
        model_features.examples("val", "car")
    with pytest.raises(ValueError, match="its codebook was not given"):
        FeatureExtractor(VOCDataset(data_root), config, ArrayCache(tmp_path / "c5"),
                         progress=False, from_model=True).codebook()
    for a, b in zip(val, ref):
        np.testing.assert_allclose(a.graph.unary, b.graph.unary)
    np.testing.assert_array_equal(np.concatenate(loaded.predict([e.graph for e in val])),
                                  np.concatenate(svm.predict([e.graph for e in ref])))
    # a document that claims a top-down block without its detector is refused
    doc_path = tmp_path / "m.json"
    doc = json.loads(doc_path.read_text())
    del doc["top_down"]
    doc_path.write_text(json.dumps(doc))
    with pytest.raises(ModelFileError, match="holds no detector"):
        load_model(tmp_path / "m")


def test_detector_given_with_other_settings_is_refused(data_root, cache_dir):
    sd = _extractor(data_root, cache_dir).shape_detector("car")
    other = F.FeatureConfig(**{**BOTTOM_UP.__dict__,
                               "detector": DetectorParams(**{**FAST.to_dict(), "seed": 9})})
    with pytest.raises(ValueError, match="detector's settings differ"):
        FeatureExtractor(VOCDataset(data_root), other, progress=False, detectors={"car": sd})


def test_top_down_cache_entries_are_per_detector_and_per_segmentation(
        data_root, cache_dir, firing):
    quiet = _extractor(data_root, cache_dir).examples("val", "car")     # fires nowhere
    loud = _extractor(data_root, cache_dir, detectors={"car": firing}).examples("val", "car")
    n = BOTTOM_UP.n_unary
    assert all(not ex.graph.unary[:, n:].any() for ex in quiet)
    assert all(ex.graph.unary[:, n:].any() for ex in loud)
    ex = loud[0].graph
    key = detection.top_down_key("img", ex.segments, firing.digest)
    assert key_digest(key) != key_digest(detection.top_down_key("img", ex.segments, "other"))
    moved = ex.segments.copy()
    moved[0, 0] = moved.max()          # another segmentation of the same image
    assert key_digest(key) != key_digest(detection.top_down_key("img", moved, firing.digest))
    # the same superpixels on an image enlarged otherwise: another block
    assert key == detection.top_down_key("img", ex.segments, firing.digest, "linear")
    assert key_digest(key) != key_digest(
        detection.top_down_key("img", ex.segments, firing.digest, "lanczos"))


def test_too_few_objects_is_a_clear_error():
    from segstruct.features.topdown.training import TooFewObjects, train_detector
    image = np.full((80, 100, 3), 90, np.uint8)
    mask = np.zeros((80, 100), np.uint8)
    mask[10:60, 20:55] = 7               # one car: mirrored, two boxes of one shape
    with pytest.raises(TooFewObjects, match=r"too few objects of class 7.*\[0, 2\] per comp"):
        train_detector([image], [mask], 7, FAST)
