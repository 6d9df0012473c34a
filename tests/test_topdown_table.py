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
    from segstruct.features.config import FeatureConfig
    from segstruct.features.topdown.detector import DetectorParams
    bottom_up = FeatureConfig().to_dict()
    top_down = FeatureConfig(detector=DetectorParams()).to_dict()
    d = tmp_path / "toy"
    write(d / "plan.json", {"classes": ["car", "dog", "bus"], "too_few_images": {"cat": 2},
                            "refused": {"cow": "no cow object is larger than a superpixel"},
                            "train_images": {"car": 9, "dog": 6, "bus": 5, "cat": 2, "cow": 7},
                            "no_detector": {"dog": "too few objects of class 12"},
                            "min_images": 5})
    write(d / "without" / "results.json", results(
        [record("car", "bl1", 10.0), record("car", "bl2", 20.0),
         record("car", "proposed", 30.0), record("dog", "bl1", 5.0),
         record("bus", "bl1", None)], bottom_up))
    write(d / "with" / "results.json", results(
        [record("car", "bl1", 12.5), record("car", "bl2", 19.0, version="0.1.0+gdef"),
         record("car", "proposed", 31.0, converged=False), record("bus", "bl1", 3.0)],
        top_down) | {"detector_warnings": {"bus": "its average shapes are all zero"}})
    write(d / "detector-car.json", {"average_precision": 0.4321})
    write(d / "detector-bus.json", {"average_precision": None})     # no bus in val
    md, doc = topdown_table.table(tmp_path, ["toy", "absent"])
    assert "| toy | car | 9 | 43.2 | 10.00 → 12.50 | 20.00 → 19.00 | 30.00 → 31.00* |" in md
    assert "| toy | dog | 6 | - | 5.00 → - | - → - | - → - |" in md
    assert "| toy | bus | 5 | - | - → 3.00 | - → - | - → - |" in md
    # bus's undefined IoU has no say in the summary
    assert "bl1: higher with the block in 1 of 1 classes, lower in 0, by more than one " \
           "point in 1 and 0" in md
    assert "bl2: higher with the block in 0 of 1 classes, lower in 1, by more than one " \
           "point in 0 and 0" in md
    assert "toy/dog: no detector, so compared without the block only (too few objects" in md
    assert "toy/cow: not compared, the library refuses to train on it: no cow object" in md
    assert "toy: not compared, fewer than 5 training images: cat (2)" in md
    assert "Code 0.1.0+gabc, 0.1.0+gdef." in md
    assert "toy: the detectors of bus have all-zero average shapes" in md
    without, with_ = md.split("Features, without: ")[1].split("; with: ")
    assert "top_down" not in without and "top_down (14)" in with_
    car = doc["rows"][0]
    assert car["detector_ap_percent"] == pytest.approx(43.21)
    assert car["proposed"]["with"] == {"val_iou_percent": 31.0, "converged": False,
                                       "n_iter": 40, "code_version": "0.1.0+gabc"}
    assert doc["features"] == {"without": bottom_up, "with": top_down}


def test_plan_follows_the_soaks_rule(tmp_path, topdown_table):
    import numpy as np

    from segstruct.datasets import VOC_CLASSES, VOCDataset, make_synthetic_voc
    root = make_synthetic_voc(tmp_path / "voc", n_train=6, n_val=2)
    dataset = VOCDataset(root)
    # the counts, read here from the masks directly
    counts = {}
    for image_id in dataset.ids("train"):
        for value in np.unique(dataset.read_mask(image_id)):
            if 0 < value < len(VOC_CLASSES):
                counts[VOC_CLASSES[value]] = counts.get(VOC_CLASSES[value], 0) + 1
    assert topdown_table.plan(root, 1)["train_images"] == counts
    most = max(counts.values())
    p = topdown_table.plan(root, most)
    assert p["classes"] == [c for c, n in counts.items() if n == most] and not p["refused"]
    assert p["too_few_images"] == {c: n for c, n in counts.items() if n < most}
    # a class the library refuses (no superpixel is mostly car) is listed, not compared
    p = topdown_table.plan(make_synthetic_voc(tmp_path / "tiny", n_train=6, n_val=2,
                                              area_range=(0.001, 0.002)), 1)
    assert p["refused"] and not set(p["refused"]) & set(p["classes"])


def test_a_command_runs_in_its_own_process_and_its_stderr_is_kept(topdown_table, capsys):
    rc, err = topdown_table.segstruct("compare", "--classes", "unicorn")
    assert rc == 2 and "unicorn" in err               # a usage error, kept for the reason
    captured = capsys.readouterr()
    assert captured.out.startswith("$ segstruct compare --classes unicorn")
    assert "unicorn" in captured.err                  # and shown as it came


def test_a_change_carries_its_paired_interval(tmp_path, topdown_table):
    from segstruct.evaluate.bootstrap import paired_bootstrap
    from segstruct.features.config import FeatureConfig
    counts = [[[50, 5, 50], [20, 0, 80], [70, 10, 30]], [[60, 5, 40], [30, 0, 70], [80, 10, 20]]]
    recs = []
    for per_image in counts:
        r = record("car", "bl1", 0.0)
        r["eval_score"]["per_image"], r["eval_ids"] = per_image, ["a", "b", "c"]
        recs.append([r])
    d = tmp_path / "toy"
    write(d / "plan.json", {"classes": ["car"], "too_few_images": {}, "train_images": {"car": 9},
                            "no_detector": {}, "min_images": 5})
    write(d / "without" / "results.json", results(recs[0], FeatureConfig().to_dict()))
    write(d / "with" / "results.json", results(recs[1], FeatureConfig().to_dict()))
    md, doc = topdown_table.table(tmp_path, ["toy"])
    expected = paired_bootstrap(counts[1], counts[0])
    got = doc["rows"][0]["bl1"]["with_minus_without"]
    assert got["difference"] == pytest.approx(expected["difference"])
    assert got["interval"] == pytest.approx(expected["interval"])
    low, high = expected["interval"]
    assert f"({expected['difference']:+.1f} [{low:+.1f}, {high:+.1f}])" in md
