"""compare with the top-down block: every detector before any training, a
class too small for a detector skipped (with the reason) or stopping the run,
and records tied to the detector they were trained with."""
import json
from dataclasses import replace

import numpy as np
import pytest

from segstruct import compare as compare_module
from segstruct.compare import Comparison
from segstruct.datasets import VOCDataset
from segstruct.features import descriptors as F
from segstruct.features.cache import ArrayCache
from segstruct.features.detection import ShapeDetector
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.superpixels import SuperpixelParams
from segstruct.features.topdown.detector import Detector, DetectorParams
from segstruct.features.topdown.training import TooFewObjects
from segstruct.learn.methods import TrainingSettings

# cheap detector settings (roots only, one short mining round) on small features
FAST = DetectorParams(n_parts=0, mining_rounds=1, mining_images=4, max_positives=40, seed=1)
CONFIG = F.FeatureConfig(n_words=16, codebook_descriptors=2000, codebook_images=6,
                         kmeans_iterations=5, superpixels=SuperpixelParams(method="felzenszwalb", min_size=400),
                         detector=FAST, top_down_folds=1)
SETTINGS = TrainingSettings(max_iter=30)
TOO_FEW = "too few objects of class 15 to train a detector: 1 positive boxes"


# the generated data set of the data_root fixture (tests/conftest.py)
DATA_SIZE = (8, 3)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return ArrayCache(tmp_path_factory.mktemp("cache"))


def _comparison(data_root, cache, out, monkeypatch, person_detector=True, **kw):
    """car and person with bl1; without ``person_detector`` the person class
    has too few objects for a detector."""
    extractor = FeatureExtractor(VOCDataset(data_root), CONFIG, cache, progress=False)
    if not person_detector:
        real = extractor.shape_detector

        def shape_detector(class_name):
            if class_name == "person":
                raise TooFewObjects(TOO_FEW)
            return real(class_name)
        monkeypatch.setattr(extractor, "shape_detector", shape_detector)
    said = []
    comparison = Comparison(extractor, ["car", "person"], ["bl1"], SETTINGS, out,
                            progress=False, say=said.append, **kw)
    return comparison, said


@pytest.mark.slow
def test_a_class_too_small_for_a_detector_is_skipped_with_the_reason(
        data_root, cache, tmp_path, monkeypatch):
    comparison, said = _comparison(data_root, cache, tmp_path / "out", monkeypatch,
                                   person_detector=False, skip_few_objects=True)
    results = comparison.run(figures=False)
    assert results["classes"] == ["car"] and list(results["table"]["iou_percent"]) == ["car"]
    assert results["skipped"] == {"person": TOO_FEW}
    assert [r["class"] for r in results["results"]] == ["car"]
    assert any(line.startswith("skipping person: too few objects") for line in said)
    assert f"Not compared, person: {TOO_FEW}" in (tmp_path / "out" / "table.md").read_text()


def test_a_class_too_small_for_a_detector_stops_the_run_before_training(
        data_root, cache, tmp_path, monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("trained a pair before every detector was there")
    monkeypatch.setattr("segstruct.workflow.train_model", no_training)
    comparison, _ = _comparison(data_root, cache, tmp_path / "out", monkeypatch,
                                person_detector=False)
    with pytest.raises(TooFewObjects, match="too few objects of class 15"):
        comparison.run(figures=False)


def test_records_name_their_detector_and_another_detector_is_refused(
        data_root, cache, tmp_path, monkeypatch):
    out = tmp_path / "out"
    comparison, _ = _comparison(data_root, cache, out, monkeypatch)
    comparison.run(figures=False)
    for class_name in ("car", "person"):
        record = json.loads(comparison.record_path(class_name, "bl1").read_text())
        assert record["detector"] == comparison.extractor.shape_detector(class_name).digest
    # the same settings and data, but the car detector is another one (as after
    # a change to detector training): the records are not this run's
    again, _ = _comparison(data_root, cache, out, monkeypatch)
    sd = again.extractor.shape_detector("car")
    other = ShapeDetector("car", Detector(sd.params, [replace(c, bias=c.bias + 1.0)
                                                     for c in sd.detector.components]),
                          sd.shapes)
    again.extractor._detectors["car"] = other
    with pytest.raises(ValueError, match="its car detector differs"):
        again.run(figures=False)


def test_records_made_without_the_block_are_refused_with_the_fix_and_before_detectors(
        data_root, cache, tmp_path, monkeypatch):
    out = tmp_path / "out"
    bottom_up = replace(CONFIG, detector=None)
    extractor = FeatureExtractor(VOCDataset(data_root), bottom_up, cache, progress=False)
    Comparison(extractor, ["car"], ["bl1"], SETTINGS, out, progress=False,
               say=lambda line: None).run(figures=False)
    again, _ = _comparison(data_root, cache, out, monkeypatch)

    def no_detector(class_name):
        raise AssertionError("a detector was trained before the records were checked")
    monkeypatch.setattr(again.extractor, "shape_detector", no_detector)
    with pytest.raises(ValueError, match="made without the top-down block, which is now on "
                                         "by default: add --no-top-down"):
        again.run(figures=False)


@pytest.mark.parametrize("classes, skip", [([], True), (["--classes", "car"], False)])
def test_compare_command_skips_only_when_comparing_every_class(data_root, tmp_path,
                                                               monkeypatch, classes, skip):
    from segstruct import cli
    seen = {}

    class Recorder:
        def __init__(self, extractor, classes, methods, settings, out_dir, **kwargs):
            seen.update(kwargs, classes=classes)
            self.out_dir = out_dir

        def run(self, **kwargs):
            self.out_dir.mkdir(parents=True)
            (self.out_dir / "table.md").write_text("table")
    monkeypatch.setattr(compare_module, "Comparison", Recorder)
    assert cli.main(["compare", "--data", str(data_root), "--out", str(tmp_path / "o"),
                     "-q", *classes]) == 0
    assert seen["skip_few_objects"] is skip
    assert seen["classes"] == (["car"] if classes else compare_module.classes_in(
        VOCDataset(data_root), "train"))


def test_a_detector_with_empty_shapes_is_named_in_the_table(data_root, cache, tmp_path,
                                                             monkeypatch):
    from segstruct.features.topdown.shapes import AverageShapes
    comparison, said = _comparison(data_root, cache, tmp_path / "out", monkeypatch)
    real = comparison.extractor.shape_detector

    def blind(class_name):
        sd = real(class_name)
        if class_name != "person":
            return sd
        zero = AverageShapes([np.zeros_like(r) for r in sd.shapes.root],
                             [np.zeros_like(q) for q in sd.shapes.parts],
                             np.zeros_like(sd.shapes.counts))
        return ShapeDetector("person", sd.detector, zero)
    monkeypatch.setattr(comparison.extractor, "shape_detector", blind)
    results = comparison.run(figures=False)
    car = real("car").shapes       # a detector trained on 8 images may well be blind too
    car_blind = not any(shape.any() for shape in [*car.root, *car.parts])
    assert set(results["detector_warnings"]) == {"person"} | ({"car"} if car_blind else set())
    assert "its average shapes are all zero" in results["detector_warnings"]["person"]
    assert "Warning, person detector: its average shapes are all zero" in \
        (tmp_path / "out" / "table.md").read_text()
    assert any(line.startswith("warning: person:") for line in said)
