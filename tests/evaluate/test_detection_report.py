"""The detector's VOC average precision over a split, and its figure."""
import numpy as np
import pytest

from segstruct.datasets import VOCDataset, class_index
from segstruct.evaluate.detection import best_images, detector_report
from segstruct.features.detection import ShapeDetector
from segstruct.features.scale import resize_image, resize_labels, working_shape
from segstruct.features.topdown.boxes import boxes_from_mask
from segstruct.features.topdown.detector import DetectorParams
from segstruct.features.topdown.shapes import AverageShapes


# the generated data set of the data_root fixture (tests/conftest.py)
DATA_SIZE = (4, 6)


class Oracle:
    """A stand-in detector that returns each image's true boxes (score 1),
    shifted by ``shift`` pixels, plus ``extra`` false boxes scored 2."""

    def __init__(self, dataset, shift=0, extra=0, long_side=None):
        self.params = DetectorParams()
        self.dataset, self.shift, self.extra = dataset, shift, extra
        self.truths = {}
        for i in dataset.ids("val"):
            image = dataset.read_image(i)
            work = working_shape(image.shape, long_side)
            self.truths[resize_image(image, work).tobytes()] = boxes_from_mask(
                resize_labels(dataset.read_mask(i), work), class_index("car"),
                self.params.min_box_area, self.params.max_void_fraction)

    def detect(self, image):
        boxes = self.truths[image.tobytes()] + self.shift
        out = [np.c_[boxes, np.ones(len(boxes)), np.zeros(len(boxes))]]
        out += [np.array([[0, 0, 3, 3, 2.0, 1]])] * self.extra
        return np.concatenate(out)[np.argsort(-np.concatenate(out)[:, 4], kind="stable")]


def _shapes():
    return AverageShapes([np.zeros((3, 3))] * 2, [np.zeros((0, 2, 2))] * 2, np.zeros(2, int))


def test_perfect_detections_give_ap_one_and_false_ones_lower_it(data_root):
    dataset = VOCDataset(data_root)
    perfect = detector_report(dataset, ShapeDetector("car", Oracle(dataset), _shapes()), "val")
    assert perfect["n_objects"] > 0 and perfect["average_precision"] == pytest.approx(1.0)
    # one false positive ranked above all of an image's true ones, in every image
    noisy = detector_report(dataset, ShapeDetector("car", Oracle(dataset, extra=1), _shapes()),
                            "val")
    assert 0 < noisy["average_precision"] < 1
    # boxes moved far off their objects match nothing
    off = detector_report(dataset, ShapeDetector("car", Oracle(dataset, shift=500), _shapes()),
                          "val")
    assert off["average_precision"] == 0.0
    assert best_images(perfect, 2) and len(best_images(perfect, 2)) <= 2


def test_detections_at_the_working_resolution_come_back_in_image_pixels(data_root):
    """A detector trained at a working resolution sees the images at it; its
    boxes and the true ones are reported in each image's own pixels."""
    dataset = VOCDataset(data_root)
    long_side = 150                        # about half the generated images' size
    oracle = ShapeDetector("car", Oracle(dataset, long_side=long_side), _shapes())
    report = detector_report(dataset, oracle, "val", long_side=long_side)
    assert report["average_precision"] == pytest.approx(1.0)
    as_given = detector_report(dataset, ShapeDetector("car", Oracle(dataset), _shapes()), "val")
    compared = 0
    for i, entry in report["per_image"].items():
        native = as_given["per_image"][i]["truths"]
        if len(entry["truths"]) == len(native) and len(native):
            # the working boxes, scaled back, lie within two working pixels
            step = max(dataset.image_size(i)) / long_side
            assert np.abs(entry["truths"] - native).max() <= 2 * step + 1
            compared += 1
    assert compared >= 1
    # without the long side, the oracle's working images are not the images given
    with pytest.raises(KeyError):
        detector_report(dataset, oracle, "val")


def test_detector_figure_draws_images_and_shapes(data_root):
    from segstruct.report.figures import detector_figure
    dataset = VOCDataset(data_root)
    report = detector_report(dataset, ShapeDetector("car", Oracle(dataset), _shapes()), "val")
    ids = best_images(report, 3)
    panels = [{"image_id": i, "image": dataset.read_image(i), **report["per_image"][i]}
              for i in ids]
    shapes = AverageShapes([np.ones((4, 3)), np.zeros((3, 5))],
                           [np.ones((2, 2, 2)), np.zeros((2, 2, 2))], np.array([3, 0]))
    fig = detector_figure(panels, shapes, "caption")
    images = [ax for ax in fig.axes if ax.images]
    assert len(images) == len(ids) + 2 * 3          # images, then 2 x (root + 2 parts)
    drawn = sum(len(ax.patches) for ax in fig.axes[:len(ids)])
    expected = sum(len(report["per_image"][i]["truths"]) +
                   min(3, len(report["per_image"][i]["detections"])) for i in ids)
    assert drawn == expected
