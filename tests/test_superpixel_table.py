"""scripts/superpixel_table.py: Felzenszwalb against SLIC per class, and the
choice that leaving one data set out makes, from the folders compare writes."""
import json

import pytest


@pytest.fixture
def superpixel_table(load_script):
    return load_script("superpixel_table")


SUPERPIXELS = {"felzenszwalb": {"method": "felzenszwalb", "scale": 200.0, "sigma": 0.01,
                                "min_size": 1330},
               "slic": {"method": "slic", "n_segments": 80, "compactness": 20.0},
               "slic-c40": {"method": "slic", "n_segments": 80, "compactness": 40.0}}


def record(class_name, method, val, converged=True):
    return {"class": class_name, "method": method, "code_version": "0.1.0+gabc",
            "eval_score": {"voc_iou_percent": val}, "train_score": {"voc_iou_percent": val + 10},
            "training": {"converged": converged, "n_iter": 40, "fit_seconds": 2.0},
            "C_selection": {"seconds": 3.0}}


def write_run(out, setting, dataset, vals: dict, classes=None):
    """OUT/<setting>/<dataset>: every method of each class at ``vals[class]``
    (bl2 one point above, proposed two)."""
    d = out / setting / dataset
    d.mkdir(parents=True)
    classes = classes or list(vals)
    (d / "plan.json").write_text(json.dumps({"classes": classes}))
    recs = [record(c, m, v + k) for c, v in vals.items()
            for k, m in enumerate(("bl1", "bl2", "proposed", "crf"))]
    (d / "results.json").write_text(json.dumps({
        "features": {"superpixels": SUPERPIXELS[setting]}, "classes": classes,
        "results": recs}))


def test_cells_and_the_leave_one_out_choice(tmp_path, superpixel_table):
    # slic wins on a, b and c by 3, 2 and 1 points and loses on d by 5
    for d, fz, sl in (("a", 10, 13), ("b", 20, 22), ("c", 30, 31), ("d", 40, 35)):
        write_run(tmp_path, "felzenszwalb", d, {"car": fz, "dog": fz + 4})
        write_run(tmp_path, "slic", d, {"car": sl, "dog": sl + 4})
    md, doc = superpixel_table.table(tmp_path, ["a", "b", "c", "d"])
    assert "| a | car | 10.00 (20.0) | 13.00 (23.0) | 11.00 (21.0) | 14.00 (24.0) |" in md
    lodo = {row["held_out"]: row for row in doc["lodo"]}
    # d held out: the others choose slic, which loses 5 there
    assert lodo["d"]["chosen"] == "slic" and lodo["d"]["gap"] == pytest.approx(5.0)
    # a held out: d's loss outweighs b's and c's gains, so felzenszwalb, 3 below on a
    assert lodo["a"]["chosen"] == "felzenszwalb" and lodo["a"]["gap"] == pytest.approx(3.0)
    # b held out likewise (3 + 1 - 5 < 0): the choice depends on what is held out
    assert lodo["b"]["chosen"] == "felzenszwalb"
    # the score: mean over classes and methods (10, 11, 12, 14, 15, 16 on a with fz)
    assert lodo["a"]["val"]["felzenszwalb"] == pytest.approx(13.0)
    assert lodo["a"]["train"]["slic"] == pytest.approx(26.0)
    assert "| d | slic | 43.00 (53.0) | 38.00 (48.0) | -5.00 |" in md
    # fit and cross-validation seconds of six fits
    assert "| a | 30 | 30 |" in md
    # the mean over the eight classes: bl1 felzenszwalb (10 14 20 24 30 34 40 44) / 8
    assert doc["mean_val_iou_percent"]["bl1 felzenszwalb"] == pytest.approx(27.0)
    # the crf is not one of the compared methods
    assert all(r["method"] != "crf" for r in doc["rows"])


def test_a_class_only_one_setting_ran_is_left_out(tmp_path, superpixel_table):
    write_run(tmp_path, "felzenszwalb", "a", {"car": 10, "dog": 50})
    write_run(tmp_path, "slic", "a", {"car": 12})
    _, doc = superpixel_table.table(tmp_path, ["a"])
    assert {r["class"] for r in doc["rows"]} == {"car", "dog"}
    assert doc["classes"] == {"a": ["car"]}
    assert doc["lodo"] == []          # nothing else to choose on


def test_table_only_finds_the_runs(tmp_path, superpixel_table):
    write_run(tmp_path, "felzenszwalb", "a", {"car": 10})
    write_run(tmp_path, "slic", "a", {"car": 12})
    assert superpixel_table.main(["--out", str(tmp_path), "--table-only"]) == 0
    md = (tmp_path / "table.md").read_text()
    assert "| a | car | 10.00 (20.0) | 12.00 (22.0) |" in md
    assert "Felzenszwalb, k 200, sigma 0.01" in md and "SLIC, 80 segments, compactness 20" in md


def test_a_third_setting_competes_only_where_it_ran_everywhere(tmp_path, superpixel_table):
    # slic-c40 ran on a, b and c only: no held-out set can be judged with it
    # (held out d: it has no score there; held out a: none on d to choose on)
    for d, fz, sl, c40 in (("a", 10, 13, 20), ("b", 20, 22, 30), ("c", 30, 31, 40),
                           ("d", 40, 35, None)):
        write_run(tmp_path, "felzenszwalb", d, {"car": fz})
        write_run(tmp_path, "slic", d, {"car": sl})
        if c40 is not None:
            write_run(tmp_path, "slic-c40", d, {"car": c40})
    md, doc = superpixel_table.table(tmp_path, ["a", "b", "c", "d"])
    assert all(set(row["on_others"]) == {"felzenszwalb", "slic"} for row in doc["lodo"])
    assert "| d | 15 | 15 | - |" in md          # its seconds on d: not run
    # no mean over the classes it has run so far
    assert doc["mean_val_iou_percent"]["bl1 slic-c40"] is None
    assert doc["mean_val_iou_percent"]["bl1 slic"] == pytest.approx(25.25)
    # run on d too, slightly worse there than slic, it wins everywhere else
    write_run(tmp_path, "slic-c40", "d", {"car": 34})
    _, doc = superpixel_table.table(tmp_path, ["a", "b", "c", "d"])
    lodo = {row["held_out"]: row for row in doc["lodo"]}
    assert {row["chosen"] for row in doc["lodo"]} == {"slic-c40"}
    # held out d: slic-c40 (34, 35 and 36 over the methods) is chosen, and
    # felzenszwalb is best there (40, 41, 42): 6 points lost
    assert lodo["d"]["gap"] == pytest.approx(6.0)
    assert lodo["d"]["val"]["slic"] == pytest.approx(36.0)
    assert lodo["a"]["gap"] == 0.0
