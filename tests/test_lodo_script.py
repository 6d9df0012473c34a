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
