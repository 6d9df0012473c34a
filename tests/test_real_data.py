"""Counts of the shared real data sets, read in place (skipped when absent)."""
import numpy as np
import pytest

from segstruct.datasets import VOCDataset
from segstruct.evaluate.inspection import inspect_dataset
from segstruct.features.cache import ArrayCache
from segstruct.features.extraction import FeatureExtractor

pytestmark = pytest.mark.shared_data


def test_camvid_class_presence_matches_its_source(camvid_root):
    # SOURCE.md: train 367 images (car 360, person 317), val 101 (101, 101)
    ds = VOCDataset(camvid_root)
    for split, expect in (("train", (367, 360, 317)), ("val", (101, 101, 101))):
        masks = [ds.read_mask(i) for i in ds.ids(split)]
        assert (len(masks), sum(bool((m == 7).any()) for m in masks),
                sum(bool((m == 15).any()) for m in masks)) == expect
        assert set(np.unique(np.concatenate([np.unique(m) for m in masks]))) <= {0, 7, 15, 255}


@pytest.mark.slow
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


@pytest.mark.slow
def test_bl1_gap_shrinks_monotonically_on_horse(horse_root, tmp_path):
    from segstruct.features.config import FeatureConfig
    from segstruct.learn.estimators.structured_svm import StructuredSVM
    config = FeatureConfig(n_words=50, codebook_descriptors=5000, codebook_images=20,
                           kmeans_iterations=5)
    ds = VOCDataset(horse_root)
    extractor = FeatureExtractor(ds, config, ArrayCache(tmp_path), n_jobs=2, progress=False)
    examples = extractor.examples("train", "horse", ids=ds.ids("train")[:40])
    svm = StructuredSVM(tol=1e-3).fit([e.graph for e in examples],
                                      [e.pixel_counts for e in examples])
    gaps = np.array([e["gap"] for e in svm.log_])
    assert svm.converged_
    assert np.all(np.diff(gaps) <= 1e-9)
    assert gaps[-1] <= svm.C * svm.tol + 1e-9
    assert svm.score([e.graph for e in examples], [e.pixel_counts for e in examples]) > 0.2
