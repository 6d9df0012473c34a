"""scripts/lodo.py: the held-out sets scored on a test split beside val."""
import pytest


@pytest.fixture
def lodo(load_script):
    return load_script("lodo")


def fit(lodo, dataset, cls, method, td, C, val, test=None):
    r = {"dataset": dataset, "class": cls, "method": method, "top_down": td, "sift_norm": "l1",
         "scope": "dataset", "C": C, "val_iou": val, "train_iou": val + 10,
         "code_version": "0.1.0+gabc", "machine": "2 cores"}
    if test is not None:
        r.update(test_split="test", test_iou=test)
    return r


def test_the_default_and_the_best_are_scored_on_the_test_split(lodo):
    grid = lodo.GRID
    # the default (folds) at the C chosen by cross-validation (0.3 for car, 1 for
    # person); on val the plain block at C 0.01 is best, on test the folds at 1
    tests, grid_fits = [], []
    for cls, cv_C in (("car", 0.3), ("person", 1.0)):
        for td in ("plain", "folds"):
            for C in grid:
                val = 40.0 if (td, C) == ("plain", 0.01) else (20.0 if C == cv_C else 10.0)
                test = 30.0 if (td, C) == ("folds", 1.0) else (
                    24.0 if td == "folds" and C == cv_C else 5.0)
                if (cls, td, C) == ("car", "folds", 3.0):
                    test = 35.0      # car's own best, not the best for both classes
                tests.append(fit(lodo, "cam", cls, "bl1", td, C, val, test))
                grid_fits.append(fit(lodo, "cam", cls, "bl1", td, C, val + 1e-9))
    cvs = [{"dataset": "cam", "class": "car", "method": "bl1", "top_down": "folds",
            "sift_norm": "l1", "scope": "dataset", "chosen_C": 0.3},
           {"dataset": "cam", "class": "person", "method": "bl1", "top_down": "folds",
            "sift_norm": "l1", "scope": "dataset", "chosen_C": 1.0}]
    library = {"bl1": {"rows": [{"held_out": "cam", "gap": 20.0},
                                {"held_out": "other", "gap": 1.0}], "mean_gap": 10.5}}
    lines = lodo.test_split_lines(tests, grid_fits, cvs, library, ("bl1",))
    row = next(line for line in lines if line.startswith("| bl1 | cam |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # default: val 20 on both classes, test 30 on person (C 1) and 24 on car (C 0.3)
    assert cells[2] == "20.00 (30.0)" and cells[3] == "27.00 (car 0.3, person 1)"
    assert cells[4].startswith("top-down plain/words l1, C 0.01: 40.00") and cells[5] == "20.00"
    # one (setting, C) for both classes: folds at 1 gives 30 on both (each
    # class's own best would give 32.5); folds at 3 gives 35 (car) and 5
    # (person), folds at 0.3 24 and 5; plain 5 everywhere
    assert cells[6].startswith("top-down folds/words l1, C 1: 30.00")
    assert cells[7] == "3.00"
    # the mean gap takes the test split's gap for cam and the val gap elsewhere
    summary = next(line for line in lines if line.startswith("- bl1"))
    assert "mean gap of the library's default 2.00 with cam scored on test" in summary
    assert "10.50 on val" in summary
    assert "These fits: code 0.1.0+gabc, 2 cores." in lines
    assert "moved by 1e-09 points (median), by at most 1 in 24 of 24, by 1e-09 at most" \
        in lines[2]


def test_no_section_without_test_records(lodo):
    assert lodo.test_split_lines([], [], [{"x": 1}], {}, ("bl1",)) == []


def test_fits_are_scored_as_predict_labels(lodo, data_root, tmp_path, monkeypatch):
    """``run --ensemble K``: each fit's val IoU of the masks predict makes
    (segstruct.ensemble.averaged_labels), on the image's pixels; with one
    run, that is the graph cut's own score."""
    from types import SimpleNamespace

    import numpy as np

    from segstruct.datasets import VOCDataset, class_index
    from segstruct.ensemble import averaged_labels, superpixel_variants
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.learn.methods import estimator_for
    monkeypatch.setenv("SEGSTRUCT_CACHE", str(tmp_path / "cache"))
    setting = ("off", "l1", "dataset")
    record, = lodo.walk_task(data_root, "car", "bl1", setting, [1.0], features="defaults",
                             ensemble=3)
    assert record["ensemble"] == 3 and "test_iou_ensemble" not in record
    est = estimator_for("bl1", C=1.0)
    est.fit(*lodo._examples(data_root, "off", "l1", "car", "train", features="defaults"))
    Xv, Yv = lodo._examples(data_root, "off", "l1", "car", "val", features="defaults")
    assert record["val_iou"] == 100 * est.score(Xv, Yv)
    alone = lodo.ensemble_scorer(data_root, "off", "l1", "car", "val", "defaults", 1)
    assert alone(est) == pytest.approx(100 * est.score(Xv, Yv), abs=1e-9)
    # the reference: predict's labels of the ensemble of 3, counted here
    dataset = VOCDataset(data_root)
    config = lodo.feature_config("off", "l1", "defaults")
    extractors = [FeatureExtractor(dataset, c, progress=False)
                  for c in superpixel_variants(config, 3)]
    ids = dataset.ids("val")
    model = SimpleNamespace(estimator=est, label=class_index("car"), config=config,
                            class_name="car")
    inter = union = 0
    for labels, image_id in zip(averaged_labels([model], extractors, ids), ids):
        truth = dataset.read_mask(image_id)
        mine, obj, valid = labels == model.label, truth == model.label, truth != 255
        inter += np.sum(mine & obj & valid)
        union += np.sum((mine | obj) & valid)
    assert record["val_iou_ensemble"] == pytest.approx(100 * inter / union, abs=1e-9)
    assert record["val_iou_ensemble"] != pytest.approx(record["val_iou"])


def test_the_default_and_the_best_are_scored_both_ways(lodo):
    """ensemble_lines: the default (folds at cross-validation's C) and the
    best (setting, C) by graph cut and by ensemble, each its own best, one
    for both classes."""
    fits = []
    for cls, cv_C in (("car", 0.3), ("person", 1.0)):
        for td in ("plain", "folds"):
            for C in lodo.GRID:
                r = fit(lodo, "cam", cls, "bl1", td, C,
                        val=40.0 if (td, C) == ("plain", 0.01) else (
                            20.0 if td == "folds" and C == cv_C else 10.0))
                r.update(ensemble=5, val_iou_ensemble=(
                    36.0 if (td, C) == ("folds", 3.0) else
                    30.0 if td == "folds" and C == cv_C else r["val_iou"] - 5))
                if (cls, td, C) == ("car", "plain", 1.0):
                    r["val_iou_ensemble"] = 60.0   # car's own best, not one for both
                fits.append(r)
    cvs = [{"dataset": "cam", "class": c, "method": "bl1", "top_down": "folds",
            "sift_norm": "l1", "scope": "dataset", "chosen_C": C}
           for c, C in (("car", 0.3), ("person", 1.0))]
    lines = lodo.ensemble_lines(fits, cvs, ("bl1",))
    row, = [x for x in lines if x.startswith("| bl1 | cam |")]
    cells = [x.strip() for x in row.split("|")[1:-1]]
    assert cells[2] == "20.00 (30.0)" and cells[3] == "30.00 (car 0.3, person 1)"
    assert cells[4] == "top-down plain/words l1, C 0.01: 40.00" and cells[5] == "20.00"
    # by ensemble: folds at C 3 for both (36), not plain at 0.01 (35) nor car's own
    # plain C 1 (a mean of 32.5)
    assert cells[6] == "top-down folds/words l1, C 3: 36.00" and cells[7] == "6.00"
    assert ("- bl1: mean gap over 1 held-out set(s) 6.00 scored as predict labels, 20.00 "
            "by graph cut") in lines
    assert lodo.ensemble_lines([r for r in fits if r["top_down"] == "x"], cvs, ("bl1",)) == []


def test_a_smaller_bound_is_replayed_from_a_curve_extended_further(load_script, tmp_path):
    import json
    import sys
    load_script("lodo")
    ext = sys.modules["lodolib.extension"]
    from segstruct.learn.selection import DEFAULT_GRID, cross_validate_C, with_choice
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent / "learn"))
    from test_grid_extension import Peaked, _toy
    X, Y = _toy()

    def curve(peak, bound):
        return with_choice(cross_validate_C(lambda: Peaked(peak, []), X, Y, DEFAULT_GRID,
                                            folds=3, extend=bound))
    far = curve(0.001, 5)          # turns after 3 steps below
    assert ext.steps_needed(far) == 3
    for bound in (0, 1, 2, 3):
        made, replayed = curve(0.001, bound), ext.truncated(far, bound)
        if bound == 0:
            made = {**made, "extended": {"below": 0, "above": 0}}
        assert replayed["grid"] == made["grid"] and replayed["chosen_C"] == made["chosen_C"]
        assert replayed["pooled_iou_percent"] == made["pooled_iou_percent"]
        # stopped still rising at bounds 0-2, not at 3
        assert replayed["extended"]["bound_reached"] == (bound < 3)
    assert ext.steps_needed(curve(0.001, 2)) == 3          # more than its bound
    # the table: one data set whose curves need 3 steps, one that needs none; the
    # bound chosen leaving one out is the other's need
    out = tmp_path / "lodo"
    out.mkdir()
    runs, cvs = [], []
    for d, peak in (("low", 0.001), ("mid", 0.1)):
        c = curve(peak, 5)
        for C in DEFAULT_GRID:
            runs.append({"dataset": d, "class": "a", "method": "bl1", "top_down": "folds",
                         "sift_norm": "l1", "scope": "dataset", "C": C, "train_iou": 50.0,
                         "val_iou": 40.0 - abs(C - peak)})
        refits = [{"C": C, "in_grid": C in DEFAULT_GRID, "train_iou": 50.0, "val_iou": 45.0,
                   "val_counts": [[5, 1, 1], [4, 2, 0]]} for C in (0.0003, 0.001, 0.003, 0.01)]
        cvs.append({"dataset": d, "class": "a", "method": "bl1", "top_down": "folds",
                    "sift_norm": "l1", "scope": "dataset", "curve": c, "seconds": 1.0,
                    "extended_fits": refits if d == "low" else []})
    (out / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    ext.cv_extend_file(out, 0.01, 5).write_text("".join(json.dumps(r) + "\n" for r in cvs))
    lines, doc = ext.c_grid_table(out, 0.01, 5)
    assert doc["steps_needed"] == {"low": 3, "mid": 0}
    assert doc["lodo"]["low"]["bl1"]["K"] == 0 and doc["lodo"]["mid"]["bl1"]["K"] == 3
    low = next(p for p in doc["pairs"] if p["dataset"] == "low")
    assert low["grid_only"]["C"] == 0.01 and low["grid_only"]["rising_end"]
    assert low["extended"]["C"] == 0.001 and not low["extended"]["rising_end"]
    # held out, "low" gets the bound 0 its partner needed: still rising at the edge
    assert "| low | 0 (3) |" in "\n".join(lines)
