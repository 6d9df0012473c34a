"""Cross-fitted top-down features: each training image's block comes from a
detector that never saw it, every other image's from the mean of the folds'
detectors, and a model carries those detectors."""
import numpy as np
import pytest

from segstruct.datasets import VOCDataset, class_index
from segstruct.features import descriptors as F
from segstruct.features import detection
from segstruct.features.cache import ArrayCache
from segstruct.features.scale import resize_image
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.superpixels import SuperpixelParams
from segstruct.features.topdown.detector import DetectorParams
from segstruct.features.topdown.features import topdown_features
from segstruct.features.topdown.training import TooFewObjects

# Cheap detector settings: roots only, one short mining round.
FAST = DetectorParams(n_parts=0, mining_rounds=1, mining_images=4, max_positives=40, seed=1)
K = 2
CONFIG = F.FeatureConfig(n_words=16, codebook_descriptors=2000, codebook_images=6,
                         kmeans_iterations=5, superpixels=SuperpixelParams(method="felzenszwalb", min_size=400),
                         detector=FAST, top_down_folds=K)


# the generated data set of the data_root fixture (tests/conftest.py)
DATA_SIZE = (10, 3)


@pytest.fixture(scope="module")
def trained(data_root, tmp_path_factory):
    """The extractor, the images each detector was trained on, and the features.

    Detectors trained on five images fire nowhere; their biases are raised
    so that they fire (and their average shapes and blocks are not zero)."""
    from dataclasses import replace

    from segstruct.features.topdown.detector import Detector
    seen = []
    real = detection.train_detector

    def recording(images, masks, class_index, params=None, on_stage=None, pyramids=None):
        seen.append(list(images.ids))
        # the raised biases change no pyramid: the shapes may take them
        detector = real(images, masks, class_index, params, on_stage, pyramids)
        return Detector(detector.params, [replace(c, bias=c.bias + 3.0)
                                          for c in detector.components])
    detection.train_detector = recording
    try:
        extractor = FeatureExtractor(VOCDataset(data_root), CONFIG,
                                     ArrayCache(tmp_path_factory.mktemp("cache")),
                                     progress=False)
        train = extractor.examples("train", "car")
        val = extractor.examples("val", "car")
    finally:
        detection.train_detector = real
    return extractor, seen, train, val


def _block(sd, dataset, graph):
    # the block is computed at the working resolution
    segments = graph.working_segments
    image = resize_image(dataset.read_image(graph.image_id), segments.shape)
    return topdown_features(sd.detector, sd.shapes, image, segments)


def test_folds_cover_the_training_split_and_each_holds_the_class(trained):
    extractor, _, _, _ = trained
    dataset = extractor.dataset
    fold_of, detectors = extractor.fold_detectors("car")
    assert sorted(fold_of) == sorted(dataset.ids("train")) and len(detectors) == K
    assert set(fold_of.values()) == set(range(K))
    car = class_index("car")
    for f in range(K):
        assert any(np.any(dataset.read_mask(i) == car) for i, g in fold_of.items() if g == f)
    # deterministic: the same folds from a fresh call
    assert detection.detector_folds(dataset, "car", "train", K, FAST.seed) == fold_of


def test_each_detector_is_trained_without_its_fold_and_no_whole_split_one(trained):
    extractor, seen, _, _ = trained
    fold_of, _ = extractor.fold_detectors("car")
    expected = [sorted(i for i, g in fold_of.items() if g != f) for f in range(K)]
    assert sorted(sorted(ids) for ids in seen) == sorted(expected)
    # the features needed no detector trained on the whole split
    assert all(len(ids) < len(fold_of) for ids in seen)


def test_training_images_get_their_folds_block_and_others_the_mean(trained):
    extractor, _, train, val = trained
    dataset, width = extractor.dataset, FAST.n_filters
    fold_of, detectors = extractor.fold_detectors("car")
    fired = 0
    for ex in train:
        own = _block(detectors[fold_of[ex.graph.image_id]], dataset, ex.graph)
        np.testing.assert_allclose(ex.graph.unary[:, -width:], own)
        fired += int(own.any())
    for ex in val:
        mean = np.mean([_block(sd, dataset, ex.graph) for sd in detectors], axis=0)
        np.testing.assert_allclose(ex.graph.unary[:, -width:], mean)
        fired += int(mean.any())
    assert fired, "no detector fired: the comparison above proves nothing"
    assert extractor.block_detectors("car") == detectors


def test_a_model_carries_the_folds_detectors(trained, tmp_path):
    from segstruct.io.persistence import load_model, load_shape_detectors, save_model
    from segstruct.learn.methods import estimator_for
    extractor, _, train, val = trained
    svm = estimator_for("bl1", max_iter=20).fit([e.graph for e in train],
                                                [e.pixel_counts for e in train])
    save_model(tmp_path / "m", svm, extractor.config, extractor.codebook()[0], {"class": "car"},
               shape_detectors=extractor.block_detectors("car"))
    back = load_shape_detectors(tmp_path / "m")
    assert [sd.digest for sd in back] == [sd.digest for sd in extractor.block_detectors("car")]
    _, config, codebook, _ = load_model(tmp_path / "m")
    fresh = FeatureExtractor(extractor.dataset, config, ArrayCache(tmp_path / "c"),
                             progress=False, codebook=codebook, detectors={"car": back})
    for a, b in zip(fresh.examples("val", "car"), val):
        np.testing.assert_allclose(a.graph.unary, b.graph.unary)
    # the model's features of a training image are a new image's: the mean block
    first = fresh.examples("train", "car", ids=[train[0].graph.image_id])[0]
    mean = np.mean([_block(sd, extractor.dataset, first.graph) for sd in back], axis=0)
    np.testing.assert_allclose(first.graph.unary[:, -FAST.n_filters:], mean)


def test_fewer_class_images_than_folds_are_refused_with_the_options(data_root):
    with pytest.raises(TooFewObjects, match="--top-down-folds"):
        detection.detector_folds(VOCDataset(data_root), "car", "train", 50, 0)


def test_settings_record_the_folds_and_old_files_mean_one_detector():
    assert CONFIG.to_dict()["top_down_folds"] == K
    assert "top_down_folds" not in F.FeatureConfig().to_dict()       # no block, no folds
    old = {**CONFIG.to_dict()}
    del old["top_down_folds"]
    assert F.FeatureConfig.from_dict(old).top_down_folds == 1
    with pytest.raises(ValueError, match="top_down_folds"):
        F.FeatureConfig(detector=FAST, top_down_folds=0)


def test_the_whole_splits_detector_can_label_the_other_images(trained, tmp_path):
    from dataclasses import replace
    extractor, _, train, folds_val = trained
    whole = FeatureExtractor(extractor.dataset, replace(CONFIG, top_down_detector="whole"),
                             extractor.cache, progress=False)
    sd = whole.shape_detector("car")
    assert whole.block_detectors("car") == [sd]
    val = whole.examples("val", "car")
    for ex in val:
        np.testing.assert_allclose(ex.graph.unary[:, -FAST.n_filters:],
                                   _block(sd, extractor.dataset, ex.graph))
    assert any(not np.allclose(a.graph.unary, b.graph.unary) for a, b in zip(val, folds_val))
    # the training images still get their folds' blocks
    again = whole.examples("train", "car")
    for a, b in zip(again, train):
        np.testing.assert_allclose(a.graph.unary, b.graph.unary)


def test_the_codebook_learnt_beside_the_detectors_is_the_usual_one(data_root, tmp_path):
    """``train_detectors(with_codebook=True)`` learns the codebook as one task
    among the detectors' (on one core, descriptors one image after another)
    and caches it: the same words as ``codebook()`` learns alone, and the
    same detectors."""
    beside = FeatureExtractor(VOCDataset(data_root), CONFIG, ArrayCache(tmp_path / "a"),
                              n_jobs=2, progress=False)
    assert beside.train_detectors(["car"], with_codebook=True) == {}
    learnt = list((tmp_path / "a" / "codebook").rglob("*.npz"))
    assert len(learnt) == 1                      # cached by train_detectors itself
    alone = FeatureExtractor(VOCDataset(data_root), CONFIG, ArrayCache(tmp_path / "b"),
                             progress=False)
    words, digest = alone.codebook()
    np.testing.assert_array_equal(beside.codebook()[0], words)
    assert beside.codebook()[1] == digest
    alone.train_detectors(["car"])
    for a, b in zip(beside.fold_detectors("car")[1], alone.fold_detectors("car")[1]):
        (a_arrays, a_settings), (b_arrays, b_settings) = a.to_arrays(), b.to_arrays()
        assert a_settings == b_settings and sorted(a_arrays) == sorted(b_arrays)
        for name in a_arrays:
            # equal bit for bit with current numpy. With numpy 1.23 a sum can
            # move by about 1e-14 from one training to the next (its SIMD order
            # depends on where the arrays lie in memory), and L-BFGS-B, stopping
            # at a relative objective change of 1e-6, may then stop a step apart:
            # weights near 0 moved by 7e-8 of themselves on CI. So the detectors
            # must agree to within the solver's tolerance of each array's scale.
            scale = float(np.abs(b_arrays[name]).max(initial=0.0))
            np.testing.assert_allclose(a_arrays[name], b_arrays[name], rtol=0,
                                       atol=1e-6 * scale, err_msg=name)
    # cached: a later run learns nothing and reads the same words
    again = FeatureExtractor(VOCDataset(data_root), CONFIG, ArrayCache(tmp_path / "a"),
                             progress=False)
    assert again.train_detectors(["car"], with_codebook=True) == {}
    assert again.codebook()[1] == digest


def test_training_blocks_shared_through_the_process_memo_are_the_same(trained):
    """The training images' blocks made with the HOG maps of the process
    memo (as the extractor makes them) equal those made without it."""
    from segstruct.features.per_image import top_down_task
    from segstruct.io.process_memo import release
    extractor, _, train, _ = trained
    fold_of, detectors = extractor.fold_detectors("car")
    release()
    try:
        for ex in train[:4]:
            g = ex.graph
            chosen = [detectors[fold_of[g.image_id]]]
            shared = top_down_task(extractor.dataset, g.image_id, g.working_segments, chosen,
                                   None, False, share_memo=True)
            again = top_down_task(extractor.dataset, g.image_id, g.working_segments,
                                  detectors, None, False, share_memo=True)
            plain = top_down_task(extractor.dataset, g.image_id, g.working_segments, chosen,
                                  None, False)
            np.testing.assert_array_equal(shared, plain)
            np.testing.assert_array_equal(
                again, np.mean([top_down_task(extractor.dataset, g.image_id,
                                              g.working_segments, [sd], None, False)
                                for sd in detectors], axis=0))
    finally:
        release()


def test_variant_graphs_are_those_of_one_extractor_per_setting(trained, tmp_path,
                                                               monkeypatch):
    """An ensemble's runs made together (``variant_graphs``) equal, bit for
    bit, the graphs of one extractor per superpixel setting, write the same
    cache entries, and make each image's dense words and each detector's
    masks once, not once per run."""
    import copy
    from dataclasses import replace

    from segstruct.features.topdown.detector import Detector
    extractor, _, _, _ = trained
    dataset = extractor.dataset
    ids = dataset.ids("train")[:3] + dataset.ids("val")[:3]   # cross-fitted and not
    settings = [CONFIG.superpixels, SuperpixelParams(method="felzenszwalb", min_size=250),
                SuperpixelParams(method="slic", n_segments=30)]
    words, maps = [], []
    real_words, real_maps = F.dense_words, Detector.confidence_maps
    monkeypatch.setattr(F, "dense_words", lambda *a: words.append(1) or real_words(*a))
    monkeypatch.setattr(Detector, "confidence_maps",
                        lambda self, *a, **k: maps.append(1) or real_maps(self, *a, **k))
    from segstruct.features import per_image
    digests, real_digest = [], per_image.image_digest
    monkeypatch.setattr(per_image, "image_digest", lambda p: digests.append(p) or real_digest(p))
    together = copy.copy(extractor)
    together.cache = ArrayCache(tmp_path / "together")
    made = together.variant_graphs(ids, settings, "car")
    # each image's file hashed once for its graphs and once for its blocks
    assert len(digests) == 2 * len(ids)
    # a training image: its fold's detector; a val image: the mean of the K folds'
    assert (len(words), len(maps)) == (len(ids), 3 + 3 * K)
    words.clear()
    for run, sp in enumerate(settings):
        alone = copy.copy(extractor)
        alone._config = replace(CONFIG, superpixels=sp)
        alone.cache = ArrayCache(tmp_path / "alone")
        for k, graph in enumerate(alone.graphs(ids=ids, class_name="car")):
            other = made[k][run]
            assert other.image_id == graph.image_id
            np.testing.assert_array_equal(other.segments, graph.segments)
            np.testing.assert_array_equal(other.unary, graph.unary)
            np.testing.assert_array_equal(other.pairwise, graph.pairwise)
    assert len(words) == len(ids) * len(settings)          # the separate runs: each its own
    assert len({g.n_nodes for g in made[0]}) == len(settings)

    def entries(root):
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.npz"))
    assert entries(tmp_path / "together") == entries(tmp_path / "alone")
    with pytest.raises(ValueError, match="per class"):
        together.variant_graphs(ids, settings)
