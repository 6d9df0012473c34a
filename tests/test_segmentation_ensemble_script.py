"""scripts/segmentation_ensemble.py: its IoU of an ensemble of one is that of
the model's own masks, and of a larger one that of ``predict``'s ensemble
(``SegmentationModel.predict(ensemble=K)``); Felzenszwalb models are refused."""
import json
from dataclasses import replace

import numpy as np
import pytest

from segstruct import SegmentationModel
from segstruct.cli import main
from segstruct.datasets import VOCDataset
from segstruct.ensemble import superpixel_variants
from segstruct.features.cache import ArrayCache

SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--slic-segments", "20", "-q", "-j", "1"]


@pytest.fixture(scope="module")
def slic_model(data_root, tmp_path_factory):
    base = tmp_path_factory.mktemp("ensemble")
    model = base / "car-bl1"
    assert main(["train", "--data", str(data_root), "--class", "car", "--C", "5",
                 "--cache", str(base / "cache"), "--out", str(model), *SMALL]) == 0
    return model, base / "cache"


def _iou(masks, data, ids, label) -> float:
    inter = union = 0
    for mask, image_id in zip(masks, ids):
        truth = data.read_mask(image_id)
        valid, obj = truth != 255, truth == label
        inter += np.sum((mask == 1) & obj & valid)
        union += np.sum(((mask == 1) | obj) & valid)
    return 100 * inter / union


def test_the_script_scores_the_masks_predict_makes(load_script, slic_model, data_root,
                                                   tmp_path):
    path, cache = slic_model
    script = load_script("segmentation_ensemble")
    out = tmp_path / "out"
    assert script.main(["--data", str(data_root), "--model", str(path), "--sizes", "1", "3",
                        "--cache", str(cache), "--out", str(out)]) == 0
    row, = json.loads((out / "results.json").read_text())["models"]
    assert row["n_segments"] == [20, 16, 25, 18, 22] and row["method"] == "bl1"
    model, data = SegmentationModel.load(path), VOCDataset(data_root)
    ids = data.ids("val")
    images = [data.image_path(i) for i in ids]
    store = ArrayCache(cache)
    assert row["iou"]["1"] == pytest.approx(_iou(model.predict(images, cache=store, ensemble=1),
                                                 data, ids, model.label))
    assert row["iou"]["3"] == pytest.approx(_iou(model.predict(images, cache=store, ensemble=3),
                                                 data, ids, model.label))
    assert list(row["iou_alone"]) == ["1", "0.8", "1.25", "0.9", "1.125"]
    assert row["iou_alone"]["1"] == row["iou"]["1"]
    fewer = replace(model, config=superpixel_variants(model.config, 2)[1])
    assert row["iou_alone"]["0.8"] == pytest.approx(_iou(fewer.predict(images, cache=store,
                                                                       ensemble=1),
                                                         data, ids, model.label))
    per_image = np.array(row["per_image_tp_fp_fn"]["3"])
    assert per_image.shape == (len(ids), 3)
    assert row["bootstrap"]["difference"] == pytest.approx(row["iou"]["3"] - row["iou"]["1"])
    table = (out / "table.md").read_text()
    assert "IoU % of 3" in table and "| car | bl1 | 5 |" in table


def test_felzenszwalb_models_are_refused(load_script, slic_model, data_root, tmp_path):
    path, cache = slic_model
    model = SegmentationModel.load(path)
    fz = replace(model, config=replace(model.config, superpixels=replace(
        model.config.superpixels, method="felzenszwalb")))
    fz.save(tmp_path / "fz")
    with pytest.raises(SystemExit, match="felzenszwalb"):
        load_script("segmentation_ensemble").main(["--data", str(data_root), "--model",
                                                   str(tmp_path / "fz"), "--out",
                                                   str(tmp_path / "out")])
