"""SegmentationModel: one object loads a saved model, labels images given as
files, PIL images or arrays (the masks `segstruct predict` writes), and
saves it again."""
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from segstruct import SegmentationModel
from segstruct.cli import main
from segstruct.datasets import ImageFiles, VOCDataset, make_synthetic_voc
from segstruct.features.cache import ArrayCache
from segstruct.io.persistence import ModelFileError

SMALL = ["--words", "16", "--codebook-descriptors", "2000", "--slic-segments", "30", "-q"]


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


@pytest.mark.parametrize("orientation", [6, 8])
def test_a_pil_image_is_turned_by_its_exif_orientation_as_its_path_is(trained, tmp_path,
                                                                        orientation):
    """A phone photo opened with PIL gives its path's mask: both are turned by
    the EXIF orientation; an image turned already (exif_transpose drops the
    tag) is not turned twice."""
    from PIL import ImageOps
    root, base, _ = trained
    model = SegmentationModel.load(base / "bu")
    dataset = VOCDataset(root)
    stored = np.array(Image.open(dataset.image_path(dataset.ids("val")[0])).convert("RGB"))
    assert stored.shape[0] != stored.shape[1]          # a quarter turn shows
    exif = Image.Exif()
    exif[0x0112] = orientation
    path = tmp_path / "phone.jpg"
    Image.fromarray(stored).save(path, format="JPEG", quality=95, exif=exif.tobytes())
    opened = Image.open(path)
    turned = ImageOps.exif_transpose(Image.open(path))
    assert turned.getexif().get(0x0112, 1) == 1
    from_path, from_pil, from_turned = model.predict([path, opened, turned],
                                                     cache=ArrayCache(enabled=False))
    shown = turned.size[::-1]                          # (H, W) as viewers show it
    assert from_path.shape == shown
    assert shown == stored.shape[1::-1]                  # a quarter turn either way
    np.testing.assert_array_equal(from_pil, from_path)
    np.testing.assert_array_equal(from_turned, from_path)
    # the caller's image is left as it was, tag included
    assert opened.getexif().get(0x0112) == orientation


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


def _agreement(model, dataset, cache, factors=(2, 4)) -> np.ndarray:
    """(images, factors): the share of pixels where the mask of each val
    image's up-sampled copy (bicubic) is the image's own mask, up-sampled."""
    out = []
    for image_id in dataset.ids("val"):
        image = Image.open(dataset.image_path(image_id))
        copies = [image.resize((image.width * f, image.height * f), Image.BICUBIC)
                  for f in factors]
        own, *larger = model.predict([image, *copies], cache=cache)
        for f, mask in zip(factors, larger):
            assert mask.shape == (image.height * f, image.width * f)
        out.append([np.mean(mask == np.kron(own, np.ones((f, f), np.uint8)))
                    for f, mask in zip(factors, larger)])
    return np.array(out)


@pytest.mark.parametrize("name", ["td", "bu"])
@pytest.mark.slow
def test_an_image_and_its_up_sampled_copies_get_the_same_mask(name, trained):
    """The working resolution: an image 2x and 4x larger (a photo at another
    size) is labelled as the image itself: 98 % of pixels on average over
    the val images, 95 % on each (Felzenszwalb's superpixels move with
    grey-level changes of one or two, which resampling makes)."""
    root, base, cache = trained
    model = SegmentationModel.load(base / name)
    dataset = VOCDataset(root)
    sides = sorted(max(dataset.image_size(i)) for i in dataset.ids("train"))
    assert model.config.long_side == sides[-1]
    agreement = _agreement(model, dataset, cache)
    assert agreement.mean(axis=0).min() >= 0.98 and agreement.min() >= 0.95, agreement


@pytest.mark.slow
def test_images_as_given_are_cut_otherwise_at_another_size(trained, tmp_path):
    """What the working resolution prevents: with ``--long-side none`` the
    superpixels are in the image's own pixels, its 4x copy is cut into
    several times as many, and the masks agree less (the test above can
    fail). Felzenszwalb's superpixels, whose sizes are in pixels (SLIC's
    count is the same at any size)."""
    felzenszwalb = [o for o in SMALL if o not in ("--slic-segments", "30")] + [
        "--superpixels", "felzenszwalb", "--fz-min-size", "400"]
    root, base, cache = trained
    dataset = VOCDataset(root)
    agreement = {}
    for long_side, more in (("none", True), ("auto", False)):
        assert main(["train", "--data", str(root), "--class", "car", "--no-top-down",
                     "--long-side", long_side, "--out", str(tmp_path / long_side),
                     "--cache", str(base / "cache"), *felzenszwalb]) == 0
        model = SegmentationModel.load(tmp_path / long_side)
        assert (model.config.long_side is None) == (long_side == "none")
        path = dataset.image_path(dataset.ids("val")[0])
        image = Image.open(path)
        image.resize((image.width * 4, image.height * 4), Image.BICUBIC).save(
            tmp_path / "big.png")
        small, big = (model.extractor(ImageFiles([f]), cache).graphs(ids=[f.stem])[0]
                      for f in (path, tmp_path / "big.png"))
        assert (big.n_nodes > 2 * small.n_nodes) == more, (long_side, small.n_nodes,
                                                            big.n_nodes)
        agreement[long_side] = _agreement(model, dataset, cache).mean()
    assert agreement["none"] < agreement["auto"] - 0.02, agreement
