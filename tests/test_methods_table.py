"""scripts/methods_table.py: the README's table of every learner from the
folders its compare runs write."""
import json

import pytest


@pytest.fixture
def methods_table(load_script):
    return load_script("methods_table")


def record(class_name, method, iou, converged=True, collapse=None, version="0.1.0+gabc"):
    return {"class": class_name, "method": method, "code_version": version,
            "eval_score": {"voc_iou_percent": iou},
            "training": {"converged": converged, "n_iter": 40, "fit_seconds": 2.4},
            "diagnosis": {"collapse": collapse, "relative_gap": 0.25}}


def write(path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_cells_means_and_notes_say_what_each_run_did(tmp_path, methods_table):
    from segstruct.features.config import FeatureConfig
    d = tmp_path / "toy"
    write(d / "plan.json", {"classes": ["car", "dog"], "too_few_images": {"cat": 2},
                            "refused": {}, "min_images": 5})
    recs = [record("car", m, v) for m, v in
            zip(("bl1", "bl2", "proposed", "lovasz"), (30.0, 20.0, 25.0, 40.0))]
    recs += [record("car", "projection", 10.0, converged=False),
             record("dog", "bl1", 0.0, collapse="no foreground"),
             record("dog", "bl2", 5.0, version="0.1.0+gdef")]
    write(d / "results.json", {"settings": {"scope": "dataset", "C": 0.5, "loss": "iou",
                                            "tol": 0.001, "max_iter": 1000},
                               "features": FeatureConfig().to_dict(), "classes": ["car", "dog"],
                               "detector_warnings": {}, "results": recs})
    md, doc = methods_table.table(tmp_path, ["toy", "missing"])
    lines = md.splitlines()
    assert "| toy | car | 30.00 | 20.00 | 25.00 | 40.00 | 10.00* |" in lines
    assert "| toy | dog | 0.00⁰ | 5.00 | - | - | - |" in lines
    # means over the classes each method was run on
    assert "| **all** | **mean** | **15.00** | **12.50** | **25.00** | **40.00** | **10.00** |" \
        in lines
    assert "| | best in (classes) | 0 | 1 | 0 | 1 | 0 |" in lines
    assert "toy/car/projection: not converged" in md and "25 % above" in md
    assert "cat (2)" in md and "0.1.0+gabc, 0.1.0+gdef" in md
    row = {r["class"]: r for r in doc["rows"]}
    assert row["car"]["projection"]["converged"] is False
    assert row["dog"]["bl1"]["collapse"] == "no foreground" and row["dog"]["lovasz"] is None
    assert doc["mean_iou_percent"]["bl2"] == pytest.approx(12.5)


def test_table_only_reads_the_folders_and_writes_both_files(tmp_path, methods_table):
    write(tmp_path / "toy" / "plan.json", {"classes": ["car"], "min_images": 5})
    write(tmp_path / "toy" / "results.json", {
        "settings": {}, "features": {}, "classes": ["car"],
        "results": [record("car", "bl1", 12.5)]})
    assert methods_table.main(["--out", str(tmp_path), "--table-only"]) == 0
    assert "| toy | car | 12.50 | - | - | - | - |" in (tmp_path / "table.md").read_text()
    assert json.loads((tmp_path / "table.json").read_text())["rows"][0]["bl1"][
        "val_iou_percent"] == 12.5


def test_multiclass_table_gives_means_and_the_change_from_alone(tmp_path, methods_table):
    iou = {name: None for name in ("background", "car", "person")}
    write(tmp_path / "toy" / "multiclass.json", {
        "classes": ["car", "person"], "code_version": "0.1.0+gabc",
        "multiclass": {"bl1": {"mean_iou_percent": 40.0,
                               "iou_percent": {**iou, "car": 31.0, "person": 9.0}}},
        "alone_voc_iou_percent": {"bl1": {"car": 30.0, "person": 10.0}}})
    md = methods_table.multiclass_table(tmp_path, ["toy"])
    assert "| toy | car, person | 40.00 | - | - | - | - |" in md
    assert "| | combined − alone, per class (points) | -1.00 to +1.00 | - |" in md
    assert methods_table.multiclass_table(tmp_path, ["other"]) == ""


def test_cells_carry_compare_s_intervals_and_verdicts(tmp_path, methods_table):
    import numpy as np

    from segstruct.compare.store import table_intervals
    rng = np.random.default_rng(0)
    size = rng.integers(100, 400, 30)
    counts = {"bl1": np.stack([size // 2, size // 10, size - size // 2], 1),
              "proposed": np.stack([size - 5, size // 10, np.full(30, 5)], 1)}
    recs = []
    for m, c in counts.items():
        r = record("car", m, 100.0 * c[:, 0].sum() / c.sum())
        r["eval_score"]["per_image"] = c.tolist()
        r["eval_ids"] = [f"im{i}" for i in range(30)]
        recs.append(r)
    spans = table_intervals(recs, ["car"], ["bl1", "proposed"])
    write(tmp_path / "toy" / "plan.json", {"classes": ["car"], "min_images": 5})
    write(tmp_path / "toy" / "results.json", {
        "settings": {}, "features": {}, "classes": ["car"], "results": recs,
        "intervals": spans})
    md, doc = methods_table.table(tmp_path, ["toy"])
    low, high = spans["iou_percent"]["car"]["bl1"]
    assert f"| toy | car | {recs[0]['eval_score']['voc_iou_percent']:.2f} [{low:.1f}, " \
           f"{high:.1f}] |" in md
    # bl1 finds half of each object, proposed nearly all of it: clearly below
    assert spans["difference"]["car"]["bl1"]["verdict"] == "proposed better"
    assert "| | clearly above / below proposed (classes) | 0 / 1 |" in md
    assert doc["rows"][0]["bl1"]["minus_proposed"]["verdict"] == "proposed better"
