"""scripts/decisions_table.py: the README's table of every method and
decision from the folders its compare runs write."""
import json

import pytest


@pytest.fixture
def decisions_table(load_script):
    return load_script("decisions_table")


def record(class_name, method, ious, converged=True, T=0.5):
    """A compare record whose decisions score val ``ious[d]`` and train ``ious[d] + 10``."""
    scores = {d: {"eval_score": {"voc_iou_percent": v},
                  "train_score": {"voc_iou_percent": v + 10}} for d, v in ious.items()}
    return {"class": class_name, "method": method, "code_version": "0.1.0+gabc",
            "eval_score": {"voc_iou_percent": ious["map"]},
            "train_score": {"voc_iou_percent": ious["map"] + 10},
            "training": {"converged": converged, "n_iter": 40, "fit_seconds": 2.4},
            "diagnosis": {"relative_gap": 0.25},
            "decisions": {"temperature": T, "scores": scores}}


def write(path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_cells_means_routes_and_notes(tmp_path, decisions_table):
    d = tmp_path / "toy"
    write(d / "plan.json", {"classes": ["car", "dog"], "min_images": 5})
    four = ("map", "marginal", "expected-iou", "expected-fbeta")
    recs = []
    for c, base in (("car", 30.0), ("dog", 10.0)):
        for k, m in enumerate(("bl1", "bl2", "proposed", "crf")):
            recs.append(record(c, m, {dd: base + k + j for j, dd in enumerate(four)},
                               converged=not (c == "dog" and m == "bl2")))
    write(d / "results.json", {"settings": {"C": "auto"}, "features": {},
                               "classes": ["car", "dog"], "results": recs})
    write(d / "perceptron" / "runs" / "car-hamming.json", {
        "eval_score": {"voc_iou_percent": 5.0}, "train_score": {"voc_iou_percent": 7.0},
        "training": {"converged": False, "n_iter": 100}})
    md, doc = decisions_table.table(tmp_path, ["toy"])
    lines = md.splitlines()
    # car: proposed map 32, crf expected-iou 33 + 2 = 35: the decision wins
    assert lines[2].startswith("| toy | car | 30.00 (40.0) | 31.00 (41.0) |")
    assert lines[2].endswith("| 5.00* (7.0) |")
    assert "| toy | dog | " in md and "11.00* (21.0)" in md and lines[3].endswith("| - |")
    assert "training better on 0, decision better on 2, tied on 0" in md
    assert "toy/dog/bl2: not converged" in md
    assert doc["mean_iou_percent"]["crf expected-iou"] == (pytest.approx(25.0),
                                                            pytest.approx(35.0))
    # the perceptron ran on one class of two: no mean
    assert "perceptron map" not in doc["mean_iou_percent"]
    assert doc["rows"][0]["temperature"]["bl1"] == 0.5
    assert doc["rows"][0]["perceptron map"]["epochs"] == 100


def test_table_only_writes_both_files(tmp_path, decisions_table):
    write(tmp_path / "toy" / "plan.json", {"classes": ["car"], "min_images": 5})
    write(tmp_path / "toy" / "results.json", {
        "settings": {}, "features": {}, "classes": ["car"],
        "results": [record("car", "crf", {"map": 12.5})]})
    assert decisions_table.main(["--out", str(tmp_path), "--table-only"]) == 0
    assert "12.50 (22.5)" in (tmp_path / "table.md").read_text()
    assert json.loads((tmp_path / "table.json").read_text())["rows"][0]["crf map"][
        "val_iou_percent"] == 12.5
