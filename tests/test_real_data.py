"""Counts of the shared real data sets, read in place (skipped when absent)."""
import numpy as np
import pytest

from segstruct.datasets import VOCDataset
from segstruct.cache import ArrayCache
from segstruct.extraction import FeatureExtractor
from segstruct.inspection import inspect_dataset

pytestmark = pytest.mark.shared_data


def test_camvid_class_presence_matches_its_source(camvid_root):
    # SOURCE.md: train 367 images (car 360, person 317), val 101 (101, 101)
    ds = VOCDataset(camvid_root)
    for split, expect in (("train", (367, 360, 317)), ("val", (101, 101, 101))):
        masks = [ds.read_labels(i) for i in ds.ids(split)]
        assert (len(masks), sum(bool((m == 7).any()) for m in masks),
                sum(bool((m == 15).any()) for m in masks)) == expect
        assert set(np.unique(np.concatenate([np.unique(m) for m in masks]))) <= {0, 7, 15, 255}


def test_inspect_horse_val(horse_root, tmp_path):
    extractor = FeatureExtractor(VOCDataset(horse_root), cache=ArrayCache(tmp_path),
                                 n_jobs=2, progress=False)
    report = inspect_dataset(extractor, ["val"], ["horse"])
    s = report["splits"]["val"]["horse"]
    assert report["problems"] == []
    assert s["images"] == 164 and s["images_with_class"] == 164
    assert s["void_pixel_share"] == 0
    assert s["foreground_pixel_share"] == pytest.approx(0.227, abs=0.005)  # SOURCE.md: 22.7 %
    assert 50 < s["oracle_voc_iou_percent"] < 100
