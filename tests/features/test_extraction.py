import shutil

import numpy as np
from PIL import Image

from segstruct.datasets import VOCDataset
from segstruct.features import descriptors as F
from segstruct.features.cache import ArrayCache
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.superpixels import SuperpixelParams, adjacency, pixel_counts

SMALL = F.FeatureConfig(n_words=16, codebook_descriptors=2000, codebook_images=6,
                        kmeans_iterations=5, superpixels=SuperpixelParams(method="felzenszwalb", min_size=400))


def _extractor(root, cache_dir, config=SMALL, n_jobs=1):
    return FeatureExtractor(VOCDataset(root), config, ArrayCache(cache_dir),
                            n_jobs=n_jobs, progress=False)


def test_graph_shapes_and_invariants(data_root, tmp_path):
    graphs = _extractor(data_root, tmp_path).graphs("train")
    assert [g.image_id for g in graphs] == VOCDataset(data_root).ids("train")
    for g in graphs:
        assert g.unary.shape == (g.n_nodes, SMALL.n_unary)
        assert g.pairwise.shape == (len(g.edges), 3) and np.all(g.pairwise >= 0)
        # the graph is the working resolution's superpixels', painted on the image's pixels
        edges, boundary = adjacency(g.working_segments)
        assert np.array_equal(edges, g.edges) and np.array_equal(boundary, g.boundary)
        assert g.segments.shape == VOCDataset(data_root).image_size(g.image_id)
        assert set(np.unique(g.segments)) <= set(range(g.n_nodes))
        assert np.all(np.isfinite(g.unary))


def test_cache_is_used_and_invalidated(data_root, tmp_path, monkeypatch):
    first = _extractor(data_root, tmp_path).graphs("val")
    calls = []
    real = F.unary_features
    monkeypatch.setattr(F, "unary_features", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = _extractor(data_root, tmp_path).graphs("val")
    assert calls == []                       # served from the cache
    for a, b in zip(first, again):
        assert np.array_equal(a.unary, b.unary) and np.array_equal(a.pairwise, b.pairwise)
    # a changed parameter never returns stale features
    changed = _extractor(data_root, tmp_path, F.FeatureConfig(
        **{**SMALL.__dict__, "tau1": 0.5})).graphs("val")
    assert len(calls) == len(first)
    assert not np.allclose(changed[0].pairwise, first[0].pairwise)
    no_sift = _extractor(data_root, tmp_path, F.FeatureConfig(
        **{**SMALL.__dict__, "sift": False})).graphs("val")
    assert no_sift[0].unary.shape[1] == SMALL.n_unary - SMALL.n_words


def test_changed_image_bytes_are_recomputed(data_root, tmp_path, monkeypatch):
    root = tmp_path / "copy"
    shutil.copytree(data_root, root)
    ds = VOCDataset(root)
    _extractor(root, tmp_path / "c").graphs("val")
    victim = ds.ids("val")[0]
    img = ds.read_image(victim)
    Image.fromarray(255 - img).save(ds.image_path(victim), quality=95)
    calls = []
    real = F.unary_features
    monkeypatch.setattr(F, "unary_features", lambda *a, **k: calls.append(1) or real(*a, **k))
    _extractor(root, tmp_path / "c").graphs("val")
    assert len(calls) == 1


def test_codebook_learnt_on_training_split_only(data_root, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(data_root, root)
    ds = VOCDataset(root)
    _, before = _extractor(root, tmp_path / "c").codebook()
    # changing a validation image leaves the codebook alone...
    val_id = ds.ids("val")[0]
    Image.fromarray(255 - ds.read_image(val_id)).save(ds.image_path(val_id), quality=95)
    _, after_val = _extractor(root, tmp_path / "c").codebook()
    assert after_val == before
    # ...changing a training image makes a new one
    train_id = ds.ids("train")[0]
    Image.fromarray(255 - ds.read_image(train_id)).save(ds.image_path(train_id), quality=95)
    _, after_train = _extractor(root, tmp_path / "c").codebook()
    assert after_train != before


def test_parallel_equals_serial(data_root, tmp_path):
    serial = _extractor(data_root, tmp_path / "a", n_jobs=1).graphs("train")
    parallel = _extractor(data_root, tmp_path / "b", n_jobs=2).graphs("train")
    for a, b in zip(serial, parallel):
        assert np.array_equal(a.segments, b.segments)
        assert np.array_equal(a.unary, b.unary)          # bit-identical
        assert np.array_equal(a.pairwise, b.pairwise)


def test_examples_counts_match_masks(data_root, tmp_path):
    ds = VOCDataset(data_root)
    examples = _extractor(data_root, tmp_path).examples("train", "car")
    for ex in examples:
        raw = ds.read_mask(ex.graph.image_id)
        fg, bg = pixel_counts(ex.graph.segments, raw == 7, raw == 255)
        assert np.array_equal(ex.fg, fg) and np.array_equal(ex.bg, bg)
        assert np.array_equal(ex.node_weights("area"), fg + bg)
        assert np.array_equal(ex.node_weights("count"), (fg + bg > 0).astype(float))
    assert sum(ex.targets.sum() for ex in examples) > 0


def _one_size(root, out):
    """A copy of the data set with every image and mask cropped to one size."""
    shutil.copytree(root, out)
    ds = VOCDataset(out)
    ids = ds.ids("train") + ds.ids("val")
    h = min(ds.image_size(i)[0] for i in ids)
    w = min(ds.image_size(i)[1] for i in ids)
    for i in ids:
        for path in (ds.image_path(i), ds.mask_path(i)):
            with Image.open(path) as im:
                im.load()
                cropped = im.crop((0, 0, w, h))
            cropped.save(path)
    return out, (h, w)


def test_images_of_the_working_size_keep_their_features_and_cache(data_root, tmp_path,
                                                                   monkeypatch):
    """A data set of one image size (CamVid) is worked on as it is: the
    working resolution changes neither its features nor its cache entries."""
    from dataclasses import replace
    root, (h, w) = _one_size(data_root, tmp_path / "one")
    as_given = _extractor(root, tmp_path / "cache", replace(SMALL, long_side=None))
    before = as_given.examples("train", "car") + as_given.examples("val", "car")
    calls = []
    real = F.unary_features
    monkeypatch.setattr(F, "unary_features", lambda *a, **k: calls.append(1) or real(*a, **k))
    working = _extractor(root, tmp_path / "cache")
    assert working.config.long_side == max(h, w)
    after = working.examples("train", "car") + working.examples("val", "car")
    assert calls == []                       # every entry was the one made as given
    for a, b in zip(before, after):
        assert b.graph.image_shape is None
        np.testing.assert_array_equal(a.graph.segments, b.graph.segments)
        np.testing.assert_array_equal(a.graph.unary, b.graph.unary)
        np.testing.assert_array_equal(a.pixel_counts, b.pixel_counts)
    # another working size computes anew, and counts pixels on the image's own
    smaller = _extractor(root, tmp_path / "cache", replace(SMALL, long_side=max(h, w) // 2))
    halved = smaller.examples("val", "car")
    assert calls and all(e.graph.image_shape == (h, w) for e in halved)
    for a, b in zip(before[-len(halved):], halved):
        assert a.graph.image_id == b.graph.image_id and b.graph.segments.shape == (h, w)
        assert b.pixel_counts.sum() == a.pixel_counts.sum()
        assert b.graph.n_nodes < a.graph.n_nodes


def test_images_enlarged_by_lanczos_get_its_superpixels_and_their_own_cache(
        data_root, tmp_path, monkeypatch):
    """With a working size above every image's, each is enlarged by the
    setting's upsampling before the superpixels and features see it, and
    the linear entries of the cache are not reused for Lanczos."""
    from dataclasses import replace

    from segstruct.features.scale import resize_image, working_shape
    from segstruct.features.superpixels import segment
    ds = VOCDataset(data_root)
    side = 2 * max(max(ds.image_size(i)) for i in ds.ids("val"))
    linear = _extractor(data_root, tmp_path / "cache",
                        replace(SMALL, long_side=side)).graphs("val")
    calls = []
    real = F.unary_features
    monkeypatch.setattr(F, "unary_features", lambda *a, **k: calls.append(1) or real(*a, **k))
    config = replace(SMALL, long_side=side, upsampling="lanczos")
    lanczos = _extractor(data_root, tmp_path / "cache", config).graphs("val")
    assert len(calls) == len(lanczos)                     # none taken from the cache
    differ = 0
    for a, b in zip(linear, lanczos):
        image = ds.read_image(b.image_id)
        work = working_shape(image.shape, side)
        expected = segment(resize_image(image, work, "lanczos"), SMALL.superpixels)
        np.testing.assert_array_equal(b.working_segments, expected)
        differ += not np.array_equal(a.unary, b.unary)
    assert differ == len(lanczos)
