"""scripts/topdown_table.py: the README's with/without table from the folders
its runs write."""
import json

import pytest


@pytest.fixture
def topdown_table(load_script):
    return load_script("topdown_table")


def record(class_name, method, iou, converged=True, version="0.1.0+gabc"):
    return {"class": class_name, "method": method, "code_version": version,
            "eval_score": {"voc_iou_percent": iou},
            "training": {"converged": converged, "n_iter": 40}}


def results(records, features):
    return {"settings": {"scope": "dataset", "C": 0.5, "loss": "iou", "tol": 0.001,
                         "max_iter": 1000}, "features": features, "results": records}


def write(path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_cells_pair_without_and_with_and_name_what_was_not_run(tmp_path, topdown_table):
    d = tmp_path / "toy"
    write(d / "plan.json", {"classes": ["car", "dog"], "too_few_images": {"cat": 2},
                            "train_images": {"car": 9, "dog": 6, "cat": 2},
                            "no_detector": {"dog": "too few objects of class 12"},
                            "min_images": 5})
    write(d / "without" / "results.json", results(
        [record("car", "bl1", 10.0), record("car", "bl2", 20.0),
         record("car", "proposed", 30.0), record("dog", "bl1", 5.0)], {"top": "no"}))
    write(d / "with" / "results.json", results(
        [record("car", "bl1", 12.5), record("car", "bl2", 19.0, version="0.1.0+gdef"),
         record("car", "proposed", 31.0, converged=False)], {"top": "yes"}))
    write(d / "detector-car.json", {"average_precision": 0.4321})
    md, doc = topdown_table.table(tmp_path, ["toy", "absent"])
    assert "| toy | car | 9 | 43.2 | 10.00 → 12.50 | 20.00 → 19.00 | 30.00 → 31.00* |" in md
    assert "| toy | dog | 6 | – | 5.00 → – | – → – | – → – |" in md
    assert "bl1: higher with the block in 1 of 1 classes, lower in 0" in md
    assert "bl2: higher with the block in 0 of 1 classes, lower in 1" in md
    assert "toy/dog: no detector, so compared without the block only (too few objects" in md
    assert "toy: not compared, fewer than 5 training images: cat (2)" in md
    assert "Code 0.1.0+gabc, 0.1.0+gdef." in md
    car = doc["rows"][0]
    assert car["detector_ap_percent"] == pytest.approx(43.21)
    assert car["proposed"]["with"] == {"val_iou_percent": 31.0, "converged": False,
                                       "n_iter": 40, "code_version": "0.1.0+gabc"}
    assert doc["features"] == {"without": {"top": "no"}, "with": {"top": "yes"}}


def test_plan_follows_the_soaks_rule(tmp_path, topdown_table):
    from segstruct.datasets import make_synthetic_voc
    root = make_synthetic_voc(tmp_path / "voc", n_train=6, n_val=2)
    counts = topdown_table.plan(root, 1)["train_images"]
    p = topdown_table.plan(root, max(counts.values()))
    assert p["classes"] == [c for c, n in counts.items() if n == max(counts.values())]
    assert p["too_few_images"] == {c: n for c, n in counts.items() if n < max(counts.values())}
