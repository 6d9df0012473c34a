"""The comparison's intervals and verdicts, against the paired bootstrap
they are made of, and the tables that show them."""
import numpy as np
import pytest

from segstruct.evaluate.bootstrap import (bootstrap_differences, percentile_interval, pooled_iou,
                                          resampled_iou)
from segstruct.evaluate.intervals import _draw_seed, comparison_intervals, verdict


def _counts(rng, n, quality):
    """(n, 3) per-image counts of a model that finds ``quality`` of each object."""
    size = rng.integers(50, 500, n)
    tp = (size * quality).astype(int)
    return np.stack([tp, rng.integers(0, 40, n), size - tp], axis=1)


@pytest.fixture
def table():
    rng = np.random.default_rng(3)
    ids = [f"im{i}" for i in range(40)]
    counts = {c: {"bl1": _counts(rng, 40, 0.5), "proposed": _counts(rng, 40, 0.9),
                  "bl2": None} for c in ("car", "horse")}
    counts["car"]["bl2"] = counts["car"]["proposed"].copy()
    counts["horse"]["bl2"] = counts["horse"]["proposed"] + [[0, 1, 0]] * 40
    return counts, {"car": ids, "horse": ids}


def test_differences_are_the_paired_bootstrap_of_the_same_draw(table):
    counts, ids = table
    out = comparison_intervals(counts, ids, n_resamples=500, seed=7)
    assert out["reference"] == "proposed"
    for c in ("car", "horse"):
        seed = _draw_seed(7, ids[c], 40)
        expected = percentile_interval(bootstrap_differences(
            counts[c]["bl1"], counts[c]["proposed"], 500, seed))
        assert out["difference"][c]["bl1"]["interval"] == pytest.approx(expected)
        alone = resampled_iou(np.asarray(counts[c]["bl1"])[:, None], 500, seed)[:, 0]
        assert out["iou_percent"][c]["bl1"] == pytest.approx(percentile_interval(alone))
    # a model that finds half of each object against one that finds 90 %
    assert out["difference"]["car"]["bl1"]["verdict"] == "proposed better"
    assert out["difference"]["car"]["bl1"]["interval"][1] < 0
    assert out["difference"]["car"]["bl2"]["verdict"] == "same masks"
    # one more false positive pixel an image: a difference no draw hides, far
    # smaller than refits move
    horse = comparison_intervals(counts, ids, n_resamples=500, spread=0.5)
    assert horse["difference"]["horse"]["bl2"]["interval"][1] < 0
    assert horse["difference"]["horse"]["bl2"]["verdict"] == "within the fit-path spread"


def test_the_mean_row_shares_the_draw_of_classes_on_the_same_images(table):
    counts, ids = table
    same = {c: {m: counts["car"][m] for m in counts["car"]} for c in ("car", "horse")}
    out = comparison_intervals(same, ids, n_resamples=300)
    # two copies of one class: the mean moves with it, resample by resample
    assert out["mean_iou_percent"]["bl1"] == pytest.approx(out["iou_percent"]["car"]["bl1"])
    apart = comparison_intervals(same, {"car": ids["car"], "horse": ids["car"][::-1]},
                                 n_resamples=300)
    # drawn apart, the two halves average out: a narrower interval
    width = np.diff(apart["mean_iou_percent"]["bl1"])[0]
    assert width < np.diff(out["mean_iou_percent"]["bl1"])[0]
    assert out["mean_classes"] == ["car", "horse"]


def test_a_method_missing_from_a_class_leaves_the_mean(table):
    counts, ids = table
    counts["horse"]["bl2"] = None
    out = comparison_intervals(counts, ids, n_resamples=200)
    assert "bl2" not in out["iou_percent"]["horse"] and "bl2" in out["iou_percent"]["car"]
    assert out["mean_classes"] == ["car"]            # horse lacks bl2
    counts["horse"]["bl1"] = counts["horse"]["bl1"][:10]
    with pytest.raises(ValueError, match="different numbers of images"):
        comparison_intervals(counts, None, n_resamples=200)


def test_without_the_paper_s_method_the_first_is_the_reference(table):
    counts, ids = table
    out = comparison_intervals({c: {"bl1": counts[c]["bl1"], "bl2": counts[c]["bl2"]}
                                for c in counts}, ids, n_resamples=200)
    assert out["reference"] == "bl1" and set(out["difference"]["car"]) == {"bl2"}


@pytest.mark.parametrize("difference, interval, spread, expected", [
    (0.8, [-0.3, 1.9], 0.0, "no clear difference"),
    (0.3, [0.1, 0.5], 0.5, "within the fit-path spread"),
    (2.0, [0.5, 3.5], 0.5, "a better"),
    (-2.0, [-3.5, -0.5], 0.5, "b better"),
])
def test_verdict(difference, interval, spread, expected):
    assert verdict(difference, interval, "a", "b", spread) == expected


def _results(counts, ids, with_intervals=True):
    from segstruct.compare.store import score_table
    methods = ["bl1", "bl2", "proposed"]
    records = [{"class": c, "method": m, "eval_ids": ids[c],
                "eval_score": {"voc_iou_percent": float(pooled_iou(np.sum(counts[c][m], 0))),
                               "per_image": np.asarray(counts[c][m]).tolist()},
                "train_score": {"voc_iou_percent": 90.0}}
               for c in counts for m in methods]
    results = {"classes": list(counts), "methods": methods, "eval_split": "val",
               "table": score_table(records, list(counts), methods)}
    if with_intervals:
        from segstruct.compare.store import table_intervals
        results["intervals"] = table_intervals(records, list(counts), methods)
    return results


def test_every_table_shows_the_same_intervals(table):
    import csv

    from segstruct.report.intervals import interval_rows, table_html
    from segstruct.report.tables import table_csv
    counts, ids = table
    results = _results(counts, ids)
    rows = list(csv.reader(table_csv({**results, "settings": {}}).splitlines()))
    header = rows[0]
    car = dict(zip(header, rows[1]))
    spans = results["intervals"]["iou_percent"]["car"]["bl1"]
    assert [float(car["bl1 low"]), float(car["bl1 high"])] == pytest.approx(spans, abs=1e-4)
    assert car["bl1 - proposed verdict"] == "proposed better"
    assert car["bl2 - proposed verdict"] == "same masks"
    html = table_html(results)
    assert html.count("<tr") == 1 + 3             # the header, two classes, the mean
    assert f"[{spans[0]:.1f}, {spans[1]:.1f}]" in html and "proposed better" in html
    names = [name for name, _, _ in interval_rows(results)]
    assert names == ["car", "horse", "mean"]
    # results made before the counts were kept: the cells, no intervals
    old = _results(counts, ids, with_intervals=False)
    assert "before each image&#x27;s counts were kept" in table_html(old)
    assert all(c.interval is None for _, cells, _ in interval_rows(old) for c in cells)


def test_a_bound_near_zero_keeps_its_sign():
    from segstruct.report.intervals import difference_text
    assert difference_text(6.2, [0.01, 12.8]) == "+6.2 [+0.01, +12.8]"
    assert difference_text(-0.8, [-1.94, 0.0]) == "-0.8 [-1.9, +0.0]"
