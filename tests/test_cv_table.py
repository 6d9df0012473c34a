"""scripts/cv_table.py: the README's cross-validation table from compare records."""
import json

import pytest


@pytest.fixture
def cv_table(load_script):
    return load_script("cv_table")


def record(method, C, pooled, converged, val, version="0.1.0+gabc"):
    return {"dataset": "toy", "class": "car", "method": method, "C": C,
            "code_version": version,
            "C_selection": {"grid": [0.05, 0.5, 5.0], "pooled_iou_percent": pooled,
                            "converged": converged},
            "training": {"converged": True, "n_iter": 12},
            "eval_score": {"voc_iou_percent": val}}


def test_rows_curve_convergence_and_the_paper_C(tmp_path, cv_table):
    runs = tmp_path / "toy-Cauto" / "runs"
    runs.mkdir(parents=True)
    (runs / "car-bl1.json").write_text(json.dumps(
        record("bl1", 5.0, [10.0, None, 30.5], [[True, True, True]] * 3, 31.25)))
    (runs / "car-bl2.json").write_text(json.dumps(
        record("bl2", 0.05, [40.0, 39.0, 38.0], [[True, False, True]] * 3, 41.0)))
    soak = tmp_path / "soak.json"
    soak.write_text(json.dumps({"code_version": "0.1.0+gabc", "runs": [
        {"dataset": "toy", "class": "car", "run": "bl1", "crashed": False,
         "val_iou_percent": 28.125, "code_version": "0.1.0+gabc"},
        {"dataset": "toy", "class": "car", "run": "bl2", "crashed": False,
         "val_iou_percent": 99.0, "code_version": "0.1.0+gold"}]}))
    lines = cv_table.table([tmp_path / "toy-Cauto"], soak).splitlines()
    assert "C = 0.05 0.5 5" in lines[0]
    assert lines[2] == ("| toy | car | bl1 | 5 | 10.0 / - / 30.5 | yes / yes (12) | 31.25 | "
                        "28.12 |")
    # a fold fit that did not converge is flagged; a soak run of other code is not used
    assert lines[3] == "| toy | car | bl2 | 0.05 | 40.0 / 39.0 / 38.0 | NO / yes (12) | 41.00 |  |"
    assert lines[-1] == "Code 0.1.0+gabc."
