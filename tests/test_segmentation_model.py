"""SegmentationModel: one object loads a saved model, labels images given as
files, PIL images or arrays (the masks `segstruct predict` writes), and
saves it again."""
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from segstruct import SegmentationModel
from segstruct.cli import main
from segstruct.datasets import VOCDataset, make_synthetic_voc
from segstruct.features.cache import ArrayCache
from segstruct.io.persistence import ModelFileError

SMALL = ["--words", "16", "--codebook-descriptors", "2000", "--fz-min-size", "400", "-q"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A generated data set, and a bl1 car model with the top-down block,
    cross-fitted on 2 folds (cheap detectors) and one without it."""
    from segstruct.cli import settings as cli
    from segstruct.features.topdown.detector import DetectorParams
    base = tmp_path_factory.mktemp("segmodel")
    root = make_synthetic_voc(base / "voc", n_train=6, n_val=3)
    cache = ["--cache", str(base / "cache")]
    real = cli.DetectorParams
    cli.DetectorParams = lambda seed: DetectorParams(
        n_parts=0, mining_rounds=1, mining_images=4, max_positives=40, seed=seed)
    try:
        assert main(["train", "--data", str(root), "--class", "car", "--top-down-folds", "2",
                     "--out", str(base / "td"), *cache, *SMALL]) == 0
    finally:
        cli.DetectorParams = real
    assert main(["train", "--data", str(root), "--class", "car", "--no-top-down",
                 "--out", str(base / "bu"), *cache, *SMALL]) == 0
    return root, base, ArrayCache(base / "cache")


@pytest.mark.parametrize("name", ["td", "bu"])
def test_predict_gives_the_masks_that_the_command_line_writes(name, trained, tmp_path):
    root, base, cache = trained
    model = SegmentationModel.load(base / name)
    assert model.class_name == "car" and model.method == "bl1" and model.label == 7
    assert (model.detectors is None) == (name == "bu")
    if name == "td":
        assert len(model.detectors) == 2           # the folds' detectors
    dataset = VOCDataset(root)
    ids = dataset.ids("val")
    files = [dataset.image_path(i) for i in ids]
    masks = model.predict(files, cache=cache)
    assert main(["predict", "--model", str(base / name), "--images", *map(str, files),
                 "--out", str(tmp_path / "out"), "--cache", str(base / "cache"), "-q"]) == 0
    for image_id, mask in zip(ids, masks):
        written = np.array(Image.open(tmp_path / "out" / f"{image_id}.png"))
        assert mask.dtype == np.uint8 and mask.shape == written.shape
        np.testing.assert_array_equal(mask * model.label, written)
    assert any(mask.any() for mask in masks) or not model.estimator.w_.any()


def test_arrays_and_pil_images_give_the_files_masks(trained):
    root, base, cache = trained
    model = SegmentationModel.load(base / "bu")
    dataset = VOCDataset(root)
    image_id = dataset.ids("val")[0]
    path = dataset.image_path(image_id)
    from_file, = model.predict([path], cache=cache)
    # a JPEG's pixels, as an array and a PIL image (decoded once: the same pixels)
    pixels = np.array(Image.open(path).convert("RGB"))
    from_array, from_pil, from_str = model.predict(
        [pixels, Image.fromarray(pixels), str(path)], cache=ArrayCache(enabled=False))
    np.testing.assert_array_equal(from_array, from_file)
    np.testing.assert_array_equal(from_pil, from_file)
    np.testing.assert_array_equal(from_str, from_file)


def test_save_and_load_keep_the_model(trained, tmp_path):
    _, base, cache = trained
    model = SegmentationModel.load(base / "td")
    json_path = model.save(tmp_path / "copy")
    assert json_path == tmp_path / "copy.json" and model.path == tmp_path / "copy"
    again = SegmentationModel.load(tmp_path / "copy.json")
    np.testing.assert_array_equal(again.estimator.w_, model.estimator.w_)
    assert again.config == model.config and again.doc["class"] == "car"
    assert again.doc["train_score"] == model.doc["train_score"]
    assert [d.digest for d in again.detectors] == [d.digest for d in model.detectors]
    with pytest.raises(ModelFileError, match="not found"):
        SegmentationModel.load(tmp_path / "nothing")


def test_a_model_file_of_an_older_version_loads():
    data = Path(__file__).resolve().parent / "data"
    model = SegmentationModel.load(data / "model_7b38227")
    assert model.detectors is None and model.codebook is None
    assert (model.estimator.C, model.estimator.C_units) == (4.0, "paper")
