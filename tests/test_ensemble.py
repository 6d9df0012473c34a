"""Labels averaged over several superpixelisations (segstruct.ensemble,
``predict --ensemble``): the rule against an element-by-element reference,
the varied settings, and the command line, the Python API and a
from-scratch average agreeing on real models."""
import json
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from segstruct import SegmentationModel
from segstruct.cli import main
from segstruct.datasets import VOCDataset, class_index
from segstruct.ensemble import (DEFAULT_MEMBERS, FACTORS, add_painted_scores, combine_scores,
                                default_members, superpixel_variants)
from segstruct.features.cache import ArrayCache
from segstruct.features.config import FeatureConfig
from segstruct.features.superpixels import SuperpixelParams, paint

SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--slic-segments", "20", "-q", "-j", "1"]


@pytest.fixture(scope="module")
def slic_models(data_root, tmp_path_factory):
    """bl1 models of car and person on SLIC superpixels (20 segments), and
    their cache."""
    base = tmp_path_factory.mktemp("ensemble")
    for name in ("car", "person"):
        assert main(["train", "--data", str(data_root), "--class", name, "--C", "5",
                     "--cache", str(base / "cache"), "--out", str(base / name), *SMALL]) == 0
    return base / "car", base / "person", base / "cache"


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6),
       st.lists(st.integers(-2, 2), min_size=24, max_size=24))
def test_the_largest_positive_score_wins_element_by_element(m, n, values):
    scores = np.resize(np.array(values, float), m * n).reshape(m, n)
    labels = [7, 15, 3, 9][:m]
    out = combine_scores(scores, labels)
    assert out.dtype == np.uint8 and out.shape == (n,)
    for j in range(n):
        column = list(scores[:, j])
        best = column.index(max(column))            # the first of equal scores
        assert out[j] == (labels[best] if column[best] > 0 else 0)


def test_combining_refuses_a_label_per_model_missing():
    with pytest.raises(ValueError, match="2 models' scores but 1 labels"):
        combine_scores(np.zeros((2, 3)), [1])


def test_painted_scores_add_up_per_model_and_pixel():
    segments = np.array([[0, 0, 1], [2, 1, 1]])

    def model(values):
        estimator = SimpleNamespace(decision_function=lambda graphs: [np.array(values)])
        return SimpleNamespace(estimator=estimator)

    graph = SimpleNamespace(working_segments=segments)
    a, b = model([1.0, -2.0, 0.5]), model([-1.0, 3.0, 0.0])
    total = add_painted_scores(None, [a, b], [graph, graph])
    np.testing.assert_array_equal(total, [paint(segments, [1.0, -2.0, 0.5]),
                                          paint(segments, [-1.0, 3.0, 0.0])])
    other = SimpleNamespace(working_segments=np.array([[1, 0, 0], [0, 0, 1]]))
    assert add_painted_scores(total, [a, b], [other, other]) is total
    assert total[0].tolist() == [[-1.0, 2.0, -1.0], [1.5, -1.0, -4.0]]
    assert total.dtype == np.float32
    # members at another working resolution cannot be summed
    with pytest.raises(ValueError, match="share the working resolution"):
        add_painted_scores(total, [a, b], [SimpleNamespace(working_segments=segments.T)] * 2)


def test_the_variants_scale_slic_s_segment_count_only():
    config = FeatureConfig(superpixels=SuperpixelParams(n_segments=80))
    variants = superpixel_variants(config, len(FACTORS))
    assert variants[0] is config
    assert [v.superpixels.n_segments for v in variants] == [80, 64, 100, 72, 90]
    assert all(replace(v, superpixels=config.superpixels) == config for v in variants)
    assert [v.superpixels.n_segments for v in superpixel_variants(config, 2, (1, 0.01))] \
        == [80, 2]
    for size in (0, len(FACTORS) + 1, True, 2.0):
        with pytest.raises(ValueError, match="1 to 5 members"):
            superpixel_variants(config, size)
    fz = FeatureConfig(superpixels=SuperpixelParams(method="felzenszwalb"))
    assert superpixel_variants(fz, 1) == [fz]
    with pytest.raises(ValueError, match="felzenszwalb"):
        superpixel_variants(fz, 2)
    with pytest.raises(ValueError, match="> 0"):
        superpixel_variants(config, 1, (1, -1))


def test_slic_models_label_with_every_run_unless_told_otherwise():
    """The default ensemble: all five members for SLIC superpixels, the model's
    own graph cut for Felzenszwalb's (no one count to vary)."""
    slic = FeatureConfig(superpixels=SuperpixelParams(n_segments=80))
    fz = FeatureConfig(superpixels=SuperpixelParams(method="felzenszwalb"))
    assert (DEFAULT_MEMBERS, default_members(slic), default_members(fz)) == (5, 5, 1)
    assert superpixel_variants(slic) == superpixel_variants(slic, 5)
    assert superpixel_variants(fz) == [fz]


def _averaged(models, paths, cache, size):
    """Per image, the class index per pixel from scratch: each variant's
    max-marginals painted, averaged, the largest positive mean's class."""
    from segstruct.datasets import ImageFiles
    source = ImageFiles(paths)
    ids = source.ids()
    totals: list = [0.0] * len(ids)
    for config in superpixel_variants(models[0].config, size):
        graphs = replace(models[0], config=config).extractor(source, cache).graphs(ids=ids)
        per_model = [m.estimator.decision_function(graphs) for m in models]
        for k, g in enumerate(graphs):
            assert g.segments.shape == np.array(Image.open(paths[k])).shape[:2]
            totals[k] = totals[k] + np.array([paint(g.segments, d[k]) for d in per_model])
    labels = np.array([0] + [m.label for m in models])
    # background first: it wins where no mean is > 0
    return [labels[np.argmax(np.concatenate([np.zeros((1, *t.shape[1:])), t / size]), axis=0)]
            for t in totals]


def test_command_line_and_python_api_label_as_the_mean_says(slic_models, data_root, tmp_path):
    car_path, person_path, cache_dir = slic_models
    cache = ArrayCache(cache_dir)
    car, person = SegmentationModel.load(car_path), SegmentationModel.load(person_path)
    data = VOCDataset(data_root)
    paths = [data.image_path(i) for i in data.ids("val")]
    # the variants cut images otherwise: an ensemble is not the model run thrice
    nodes = [replace(car, config=c).extractor(data, cache).graphs(ids=data.ids("val"))[0].n_nodes
             for c in superpixel_variants(car.config, 3)]
    assert len(set(nodes)) == 3, nodes
    expected = _averaged([car], paths, cache, 3)
    masks = car.predict(paths, cache=cache, ensemble=3)
    for mask, want in zip(masks, expected):
        assert mask.dtype == np.uint8
        np.testing.assert_array_equal(mask, want == car.label)
    # by default, the ensemble of every run
    for mask, want in zip(car.predict(paths, cache=cache), _averaged([car], paths, cache, 5)):
        np.testing.assert_array_equal(mask, want == car.label)
    # the command line, with two class models
    out = tmp_path / "out"
    assert main(["predict", "--model", str(car_path), str(person_path), "--data",
                 str(data_root), "--out", str(out), "--ensemble", "3", "--cache",
                 str(cache_dir), "-q"]) == 0
    expected = _averaged([car, person], paths, cache, 3)
    for image_id, want in zip(data.ids("val"), expected):
        np.testing.assert_array_equal(np.array(Image.open(out / f"{image_id}.png")), want)
    assert {int(v) for w in expected for v in np.unique(w)} <= {0, class_index("car"),
                                                                class_index("person")}
    index = json.loads((out / "index.json").read_text())
    assert index["ensemble"] == {"members": 3, "slic_segments": [20, 16, 25]}
    assert "SLIC segments 20, 16, 25" in index["combination"]


def test_images_of_other_sizes_get_the_labels_of_their_own_pixels(slic_models, data_root,
                                                                  tmp_path):
    """Labels decided at the working resolution and then resized are those
    of scores painted on the image's own pixels (the reference), for images
    larger and smaller than the working size, with and without an ensemble."""
    car_path, _, cache_dir = slic_models
    cache = ArrayCache(cache_dir)
    car = SegmentationModel.load(car_path)
    data = VOCDataset(data_root)
    paths = []
    for k, image_id in enumerate(data.ids("val")[:4]):
        image = Image.open(data.image_path(image_id))
        factor = (1.7, 0.6)[k % 2]
        paths.append(tmp_path / f"{image_id}.png")
        image.resize((round(image.width * factor), round(image.height * factor)),
                     Image.BICUBIC).save(paths[-1])
    for mask, want in zip(car.predict(paths, cache=cache, ensemble=3),
                          _averaged([car], paths, cache, 3)):
        np.testing.assert_array_equal(mask, want == car.label)
    from segstruct.datasets import ImageFiles
    source = ImageFiles(paths)
    graphs = car.extractor(source, cache).graphs(ids=source.ids())
    assert all(g.image_shape is not None for g in graphs)
    for mask, g, y in zip(car.predict(paths, cache=cache, ensemble=1), graphs,
                          car.estimator.predict(graphs)):
        np.testing.assert_array_equal(mask, paint(g.segments, y))


def test_evaluate_scores_the_ensemble_s_masks(slic_models, data_root, tmp_path, capsys):
    car_path, person_path, cache_dir = slic_models
    cache = ["--cache", str(cache_dir), "-q"]
    data = VOCDataset(data_root)
    ids = data.ids("val")
    car = SegmentationModel.load(car_path)
    masks = car.predict([data.image_path(i) for i in ids], cache=ArrayCache(cache_dir),
                        ensemble=3)
    assert main(["evaluate", "--model", str(car_path), "--data", str(data_root), "--ensemble",
                 "3", "--json", str(tmp_path / "e.json"), *cache]) == 0
    record = json.loads((tmp_path / "e.json").read_text())
    assert record["ensemble"] == {"members": 3, "slic_segments": [20, 16, 25]}
    for entry, image_id, mask in zip(record["per_image"], ids, masks):
        truth = data.read_mask(image_id)
        valid, obj = truth != 255, truth == car.label
        assert entry["image_id"] == image_id
        assert (entry["tp"], entry["fp"], entry["fn"]) == (
            np.sum((mask == 1) & obj), np.sum((mask == 1) & ~obj & valid),
            np.sum((mask == 0) & obj))
    assert "ensemble of 3" in capsys.readouterr().out
    # the model's graph cut with --ensemble 1: its superpixels' counts, as train scores them
    assert main(["evaluate", "--model", str(car_path), "--data", str(data_root), "--json",
                 str(tmp_path / "one.json"), "--ensemble", "1", *cache]) == 0
    one = json.loads((tmp_path / "one.json").read_text())
    assert one["ensemble"] == {"members": 1, "slic_segments": None}
    examples = car.extractor(data, ArrayCache(cache_dir)).examples("val", "car")
    assert one["score"] == car.estimator.voc_score(
        [ex.graph for ex in examples], [ex.pixel_counts for ex in examples]).to_dict()
    # by default, the ensemble of every run, as predict labels
    assert main(["evaluate", "--model", str(car_path), "--data", str(data_root), "--json",
                 str(tmp_path / "default.json"), *cache]) == 0
    assert json.loads((tmp_path / "default.json").read_text())["ensemble"] == {
        "members": 5, "slic_segments": [20, 16, 25, 18, 22]}


def test_multiclass_evaluate_scores_predict_s_ensemble_masks(slic_models, data_root, tmp_path,
                                                             capsys):
    """evaluate --multiclass scores the PNGs predict writes, ensemble and all,
    and each class model alone as evaluate does."""
    from segstruct.evaluate.multiclass import ConfusionMatrix
    car_path, person_path, cache_dir = slic_models
    cache = ["--cache", str(cache_dir), "-q"]
    data = VOCDataset(data_root)
    assert main(["predict", "--model", str(car_path), str(person_path), "--data",
                 str(data_root), "--ensemble", "2", "--out", str(tmp_path / "masks"),
                 *cache]) == 0
    assert "an ensemble of 2 members" in capsys.readouterr().out
    want = ConfusionMatrix()
    for image_id in data.ids("val"):
        want.add(np.array(Image.open(tmp_path / "masks" / f"{image_id}.png")),
                 data.read_mask(image_id))
    assert main(["evaluate", "--model", str(car_path), str(person_path), "--multiclass",
                 "--data", str(data_root), "--ensemble", "2", "--json",
                 str(tmp_path / "m.json"), *cache]) == 0
    record = json.loads((tmp_path / "m.json").read_text())
    assert record["ensemble"] == {"members": 2, "slic_segments": [20, 16]}
    assert record["multiclass"] == json.loads(json.dumps(want.to_dict()))
    assert main(["evaluate", "--model", str(car_path), "--data", str(data_root), "--ensemble",
                 "2", "--json", str(tmp_path / "car.json"), *cache]) == 0
    car = json.loads((tmp_path / "car.json").read_text())
    assert record["alone"]["car"] == car["score"]


def test_visualize_draws_the_masks_predict_writes(slic_models, data_root, tmp_path,
                                                  monkeypatch):
    """visualize draws each model's ensemble masks (predict's) by default,
    and its graph cut with --ensemble 1; the caption says which."""
    import segstruct.report.figures as figures
    car_path, _, cache_dir = slic_models
    car = SegmentationModel.load(car_path)
    data = VOCDataset(data_root)
    ids = data.ids("val")
    drawn = []
    real = figures.qualitative_figure
    monkeypatch.setattr(figures, "qualitative_figure",
                        lambda panels, names, caption: drawn.append((panels, caption)) or
                        real(panels, names, caption))
    for runs, want in ((None, car.predict([data.image_path(i) for i in ids],
                                          cache=ArrayCache(cache_dir))),
                       ("1", car.predict([data.image_path(i) for i in ids],
                                         cache=ArrayCache(cache_dir), ensemble=1))):
        more = [] if runs is None else ["--ensemble", runs]
        assert main(["visualize", "--data", str(data_root), "--model", str(car_path),
                     "--images", *ids, "--out", str(tmp_path / f"{runs}.png"), "--cache",
                     str(cache_dir), "-q", *more]) == 0
        panels, caption = drawn[-1]
        assert ("ensemble of 5" if runs is None else "graph cut") in caption
        for panel, mask in zip(panels, want):
            np.testing.assert_array_equal(panel["predictions"]["bl1"], mask)
    # the two differ somewhere, or the test could not tell them apart
    assert any(not np.array_equal(a["predictions"]["bl1"], b["predictions"]["bl1"])
               for a, b in zip(drawn[0][0], drawn[1][0]))


def test_decisions_from_marginals_label_with_one_run(data_root, tmp_path, capsys):
    """A decision other than map reads one graph's marginals: by default it
    labels with the model's own superpixels (no ensemble), and an ensemble
    asked for is refused."""
    model = tmp_path / "crf"
    assert main(["train", "--data", str(data_root), "--class", "car", "--method", "crf",
                 "--C", "1", "--cache", str(tmp_path / "cache"), "--out", str(model),
                 *SMALL]) == 0
    common = ["predict", "--model", str(model), "--data", str(data_root), "--split", "val",
              "--decision", "marginal", "--cache", str(tmp_path / "cache"), "-q"]
    assert main([*common, "--out", str(tmp_path / "out")]) == 0
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert index["ensemble"] == {"members": 1, "slic_segments": None}
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main([*common, "--ensemble", "2", "--out", str(tmp_path / "two")])
    assert exit_.value.code == 2 and "--decision map" in capsys.readouterr().err
