"""Paired bootstrap of a VOC IoU difference, and scripts/paired_iou.py."""
import itertools
import json
from collections import Counter

import numpy as np
import pytest

from segstruct.evaluate.bootstrap import (bootstrap_differences, paired_bootstrap,
                                         percentile_interval, resampled_iou)
from segstruct.evaluate.scoring import VOCScore



def exact_distribution(a, b):
    """Every one of the n^n equally likely draws of n images, enumerated."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    n = len(a)
    dist = Counter()
    for draw in itertools.product(range(n), repeat=n):
        ta, tb = a[list(draw)].sum(0), b[list(draw)].sum(0)
        diff = 100 * (ta[0] / ta.sum() - tb[0] / tb.sum())
        dist[round(diff, 6)] += 1 / n ** n
    return dist


def test_resampled_differences_follow_the_exact_paired_distribution():
    # Model B is better on image 0, worse on image 2: an unpaired or
    # unweighted resampling gives other values and other frequencies.
    a = [(50, 10, 5), (5, 20, 30), (30, 2, 1), (0, 7, 12)]
    b = [(54, 2, 1), (3, 30, 32), (12, 4, 19), (0, 1, 12)]
    exact = exact_distribution(a, b)
    diffs = bootstrap_differences(a, b, n_resamples=60000, seed=3)
    seen = Counter(np.round(diffs, 6).tolist())
    assert set(seen) <= set(exact)
    worst = max(abs(seen[v] / diffs.size - p) for v, p in exact.items())
    assert worst < 0.01
    mean = sum(v * p for v, p in exact.items())
    assert diffs.mean() == pytest.approx(mean, abs=0.15)


def test_summary_matches_the_pooled_measure_and_the_resamples():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 500, size=(30, 3))
    b = np.clip(a + rng.integers(-40, 40, size=(30, 3)), 0, None)
    out = paired_bootstrap(a, b, n_resamples=4000, confidence=0.9, seed=5)
    va, vb = VOCScore(), VOCScore()
    for row_a, row_b in zip(a, b):
        va.add(*row_a)
        vb.add(*row_b)
    assert out["iou_a"] == pytest.approx(100 * va.iou)
    assert out["iou_b"] == pytest.approx(100 * vb.iou)
    assert out["difference"] == pytest.approx(100 * (va.iou - vb.iou))
    diffs = bootstrap_differences(a, b, n_resamples=4000, seed=5)
    assert out["interval"] == pytest.approx(list(np.quantile(diffs, [0.05, 0.95])))
    assert out["share_a_better"] == pytest.approx(np.mean(diffs > 0))
    assert out["share_b_better"] == pytest.approx(np.mean(diffs < 0))
    assert out["n_images"] == 30 and out["n_resamples"] == 4000 and out["seed"] == 5


def test_a_model_against_itself_has_no_spread():
    a = [(10, 3, 4), (0, 0, 2), (7, 9, 1)]
    out = paired_bootstrap(a, a, n_resamples=500)
    assert out["difference"] == 0 and out["interval"] == [0.0, 0.0]
    assert out["share_a_better"] == 0 and out["share_b_better"] == 0


def test_a_consistent_winner_on_similar_images_is_certain():
    # A beats B by the same margin on images that look alike: every
    # resample must keep the order, however the images are drawn.
    a = [(100 + k, 10, 10) for k in range(20)]
    b = [(100 + k, 20, 20) for k in range(20)]
    out = paired_bootstrap(a, b, n_resamples=2000)
    assert out["share_a_better"] == 1.0 and out["interval"][0] > 0


@pytest.mark.parametrize("a, b, match", [
    ([(1, 2, 3)], [(1, 2, 3), (1, 1, 1)], "different numbers of images"),
    ([(1, 2)], [(1, 2)], "shape"),
    ([(1, -2, 3)], [(1, 2, 3)], "non-negative"),
    (np.zeros((0, 3)), np.zeros((0, 3)), "no images"),
])
def test_bad_counts_are_refused(a, b, match):
    with pytest.raises(ValueError, match=match):
        paired_bootstrap(a, b)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap([(1, 1, 1)], [(1, 1, 1)], confidence=1.0)
    with pytest.raises(ValueError, match="n_resamples"):
        paired_bootstrap([(1, 1, 1)], [(1, 1, 1)], n_resamples=0)


# --------------------------------------------------------------------------
# the script


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("paired_iou")


def report(path, counts, method="bl1", ids=None, **overrides):
    ids = ids or [f"img{k}" for k in range(len(counts))]
    doc = {"dataset": "voc", "data_root": "/data/voc", "split": "val", "class": "car",
           "method": method, "model": f"{method}.json", "estimator": {"C": 1.0},
           "model_code_version": "0.1.0", "score": {"voc_iou_percent": 1.0},
           "per_image": [{"image_id": i, "tp": tp, "fp": fp, "fn": fn}
                         for i, (tp, fp, fn) in zip(ids, counts)], **overrides}
    path.write_text(json.dumps(doc))
    return path


def test_script_writes_the_bootstrap_of_two_reports(script, tmp_path, capsys):
    a = [(40, 5, 6), (3, 9, 2), (0, 4, 7)]
    b = [(30, 2, 16), (4, 1, 1), (0, 0, 7)]
    ra = report(tmp_path / "a.json", a, "proposed")
    rb = report(tmp_path / "b.json", b, "bl1")
    out = tmp_path / "p" / "paired.json"
    assert script.main([str(ra), str(rb), "--resamples", "300", "--seed", "2",
                        "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["bootstrap"] == paired_bootstrap(a, b, 300, 0.95, 2)
    assert doc["a"]["method"] == "proposed" and doc["b"]["method"] == "bl1"
    assert doc["class"] == "car" and doc["split"] == "val" and "code_version" in doc
    assert "A - B" in capsys.readouterr().out


@pytest.mark.parametrize("change, match", [
    ({"class": "person"}, "differ in class"),
    ({"split": "train"}, "differ in split"),
    ({"ids": ["img0", "img1", "other"]}, "not scored on the same images"),
    ({"ids": ["img1", "img0", "img2"]}, "other order"),
])
def test_script_refuses_reports_that_are_not_paired(script, tmp_path, capsys, change, match):
    counts = [(1, 2, 3), (4, 5, 6), (7, 8, 9)]
    ra = report(tmp_path / "a.json", counts)
    rb = report(tmp_path / "b.json", counts, **change)
    assert script.main([str(ra), str(rb)]) == 2
    assert match in capsys.readouterr().err


def test_script_refuses_a_report_without_per_image_counts(script, tmp_path, capsys):
    ra = report(tmp_path / "a.json", [(1, 2, 3)])
    rb = tmp_path / "b.json"
    rb.write_text(json.dumps({"dataset": "voc", "score": {}}))
    assert script.main([str(ra), str(rb)]) == 2
    assert "per-image" in capsys.readouterr().err
    report(rb, [(1, 2, 3)])
    doc = json.loads(rb.read_text())
    del doc["per_image"][0]["fp"]
    rb.write_text(json.dumps(doc))
    assert script.main([str(ra), str(rb)]) == 2
    assert "lacks" in capsys.readouterr().err
    rb.write_text("{not json")
    assert script.main([str(ra), str(rb)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_resampled_iou_follows_the_exact_distribution_of_each_model():
    # two models on three images, every n^n draw enumerated: each model's
    # resampled IoU has the exact distribution, and the draws are shared
    a = [(50, 10, 5), (5, 20, 30), (30, 2, 1)]
    b = [(54, 2, 1), (3, 30, 32), (12, 4, 19)]
    counts = np.stack([a, b], axis=1)                   # (images, models, 3)
    ious = resampled_iou(counts, n_resamples=40000, seed=1)
    assert ious.shape == (40000, 2)
    for k, model in enumerate((a, b)):
        exact = Counter()
        for draw in itertools.product(range(3), repeat=3):
            t = np.asarray(model, float)[list(draw)].sum(0)
            exact[round(100 * t[0] / t.sum(), 6)] += 1 / 27
        seen = Counter(np.round(ious[:, k], 6).tolist())
        assert set(seen) <= set(exact)
        assert max(abs(seen[v] / 40000 - p) for v, p in exact.items()) < 0.01
    # the same draws as the paired differences of the same seed
    diffs = bootstrap_differences(a, b, n_resamples=40000, seed=1)
    assert ious[:, 0] - ious[:, 1] == pytest.approx(diffs)


def test_resampled_iou_keeps_any_axes_and_refuses_bad_counts():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 100, size=(7, 2, 3, 3))    # images, classes, methods, counts
    ious = resampled_iou(counts, n_resamples=50, seed=0)
    assert ious.shape == (50, 2, 3)
    same = resampled_iou(np.repeat(counts[:1], 7, axis=0), n_resamples=20)
    pooled = counts[0]
    assert same == pytest.approx(np.broadcast_to(100 * pooled[..., 0] / pooled.sum(-1),
                                                 (20, 2, 3)))
    with pytest.raises(ValueError, match="shape"):
        resampled_iou(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="no images"):
        resampled_iou(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        resampled_iou([[1, -1, 0]])


def test_percentile_interval_is_the_central_share_of_each_column():
    samples = np.stack([np.arange(101.0), -np.arange(101.0)], axis=1)
    low, high = percentile_interval(samples, 0.9)
    assert low == pytest.approx([5.0, -95.0]) and high == pytest.approx([95.0, -5.0])
    with pytest.raises(ValueError, match="confidence"):
        percentile_interval(samples, 1.0)
