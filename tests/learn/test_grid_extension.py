"""--C auto's grid extended past its edge while held-out IoU still rises there."""
import json
import math

import numpy as np
import pytest

from segstruct.learn.methods import TrainingSettings, c_text, estimator_for
from segstruct.learn.selection import (DEFAULT_C_EXTEND, DEFAULT_GRID, check_extend,
                                       cross_validate_C, cross_validate_many, edge_warning,
                                       format_curve, select_C, with_choice)
from segstruct.learn.selection.extension import (C_LIMITS, rising_edge, step_beyond)
from segstruct.toy import chain_problem


class Peaked:
    """A stand-in learner whose held-out IoU peaks at C = ``peak`` (falling
    by 10 points a decade either side), recording every C it is fitted at
    and whether the fit warm-started (it had been fitted before)."""

    def __init__(self, peak, calls):
        self.peak, self.calls = peak, calls
        self.C, self.tol, self.warm_start = 1.0, 1e-3, False
        self.fitted = False

    def get_params(self, deep=False):
        return {"C": self.C}

    def fit(self, X, Y):
        self.calls.append((self.C, self.fitted))
        self.fitted = True
        self.n_iter_, self.converged_, self.fit_seconds_ = 1, True, 0.0
        return self

    def voc_score(self, X, Y):
        tp = max(0, int(round(100 - 10 * abs(math.log10(self.C / self.peak)))))
        return type("Score", (), {"totals": np.array([tp * len(X), 10, 10])})()


def peaked(peak, extend, grid=DEFAULT_GRID, n_jobs=1):
    """The curve of :class:`Peaked` (peak at ``peak``) on 6 images, 3 folds,
    and the (C, warm) of each fit."""
    calls = []
    X, Y = _toy()
    curve = with_choice(cross_validate_C(lambda: Peaked(peak, calls), X, Y, grid, folds=3,
                                         extend=extend, n_jobs=n_jobs))
    return curve, calls


def _toy():
    X, Y = chain_problem()
    return X[:6], Y[:6]


# --------------------------------------------------------------------------
# the rule


def test_the_step_is_the_grids_own():
    # the default grid goes on along 1, 3, 10, 30, ... (a factor of about sqrt(10))
    assert step_beyond(DEFAULT_GRID, "above") == 10
    assert step_beyond([*DEFAULT_GRID, 10], "above") == 30
    assert step_beyond(DEFAULT_GRID, "below") == 0.003
    assert step_beyond([0.003, *DEFAULT_GRID], "below") == 0.001
    # any other grid by the ratio of its end values, any order
    assert step_beyond([5, 0.05, 0.5], "above") == 50
    assert step_beyond([0.05, 0.5, 5], "below") == 0.005
    assert step_beyond([1, 2, 8], "above") == 32 and step_beyond([1, 2, 8], "below") == 0.5
    assert step_beyond([0.1, 1], "above") == 10


def test_a_rising_edge_is_an_end_chosen_above_its_neighbour():
    def edge(scores, grid=(0.1, 1, 10)):
        return rising_edge({"grid": list(grid), "pooled_iou_percent": scores})
    assert edge([50, 40, 30]) == "below" and edge([30, 40, 50]) == "above"
    assert edge([30, 50, 40]) is None                 # inside
    assert edge([50, 50, 10]) is None                 # a plateau at the end: no trend
    assert edge([None, 40, 50]) == "above" and edge([30, 40, 50], (10, 1, 0.1)) == "below"
    # the chosen C decides (a refused refit moves it)
    assert rising_edge({"grid": [0.1, 1, 10], "pooled_iou_percent": [30, 40, 50],
                        "chosen_C": 1}) is None


def test_the_bound_is_checked():
    assert check_extend(0) == 0 and check_extend(3) == 3
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="--C-extend.*whole number"):
            check_extend(bad)


# --------------------------------------------------------------------------
# the extension


def test_no_extension_where_the_best_C_is_inside_the_grid():
    curve, calls = peaked(0.1, extend=3)
    plain, _ = peaked(0.1, extend=0)
    assert curve["grid"] == list(DEFAULT_GRID) and curve["chosen_C"] == 0.1
    assert curve["extended"] == {"below": 0, "above": 0, "bound": 3, "bound_reached": False,
                                 "grid_asked": list(DEFAULT_GRID)}
    assert len(calls) == 3 * len(DEFAULT_GRID)
    # the same curve as the grid alone, which records nothing of an extension
    assert "extended" not in plain
    assert {k: v for k, v in curve.items() if k not in ("extended", "seconds")} == \
        {k: v for k, v in plain.items() if k != "seconds"}
    assert curve["warning"] is None and not any(">" in line for line in format_curve(curve))


def test_extension_goes_on_until_the_curve_turns_and_fits_only_the_new_C():
    # the peak at 0.001: 0.003 rises, 0.001 rises, 0.0003 turns
    curve, calls = peaked(0.001, extend=5)
    plain, _ = peaked(0.001, extend=0)
    assert curve["grid"] == [0.0003, 0.001, 0.003, *DEFAULT_GRID]
    assert curve["chosen_C"] == 0.001 and curve["warning"] is None
    assert curve["extended"]["below"] == 3 and curve["extended"]["above"] == 0
    assert not curve["extended"]["bound_reached"]
    # the grid's part of the curve is the grid's curve; no C fitted twice
    assert curve["pooled_iou_percent"][3:] == plain["pooled_iou_percent"]
    assert len(calls) == 3 * (len(DEFAULT_GRID) + 3)
    assert sorted({c for c, _ in calls}) == curve["grid"]
    # every fit past the grid warm-starts from the fold's earlier fits
    assert all(warm for c, warm in calls if c < DEFAULT_GRID[0])
    for key in ("pooled_counts", "fold_iou_percent", "fold_counts", "n_iter", "converged",
                "fit_seconds"):
        assert len(curve[key]) == len(curve["grid"]), key
    lines = format_curve(curve)
    assert sum(line.startswith("*>") or line.startswith(" >") for line in lines) == 3
    assert "extended 3 steps below its smallest C 0.01 (to 0.0003)" in lines[-1]
    # and upwards, as far
    up, _ = peaked(30, extend=5)
    assert up["grid"] == [*DEFAULT_GRID, 10, 30, 100] and up["chosen_C"] == 30
    assert up["extended"]["above"] == 3 and up["warning"] is None


def test_extension_stops_at_its_bound_and_then_says_how_to_raise_it():
    curve, calls = peaked(0.001, extend=1)
    assert curve["grid"] == [0.003, *DEFAULT_GRID] and curve["chosen_C"] == 0.003
    assert curve["extended"]["below"] == 1 and curve["extended"]["bound_reached"]
    assert len(calls) == 3 * (len(DEFAULT_GRID) + 1)
    assert "raise --C-extend" in curve["warning"] and "extend --C-grid" not in curve["warning"]
    assert "extended 1 step past --C-grid" in curve["warning"]
    assert format_curve(curve)[-1] == f"  warning: {curve['warning']}"
    assert "bound 1 step a side, reached" in format_curve(curve)[-2]
    # the absolute limits bound it too
    low, _ = peaked(1e-9, extend=50)
    assert min(low["grid"]) >= C_LIMITS[0] and low["extended"]["bound_reached"]
    # without extension: the warning of the grid alone
    plain, _ = peaked(0.001, extend=0)
    assert "extend --C-grid" in plain["warning"]


@pytest.fixture
def by_value():
    """This module's classes pickled by value: a worker process started by an
    earlier test may not find this test module on its path."""
    import importlib
    import sys
    module = sys.modules[__name__]
    # loky pickles with the cloudpickle package (newer joblib) or joblib's own copy
    picklers = []
    for name in ("cloudpickle", "joblib.externals.cloudpickle"):
        try:
            picklers.append(importlib.import_module(name))
        except ImportError:
            continue
    for pickler in picklers:
        pickler.register_pickle_by_value(module)
    yield
    for pickler in picklers:
        pickler.unregister_pickle_by_value(module)


def test_extension_on_workers_equals_extension_here(by_value):
    here, _ = peaked(0.001, extend=3)
    pooled = cross_validate_many([(lambda: Peaked(0.001, []), *_toy(), None)] * 2,
                                 DEFAULT_GRID, folds=3, n_jobs=2, extend=3)
    for curve in pooled:
        for key in ("grid", "pooled_iou_percent", "fold_counts", "extended"):
            assert curve[key] == here[key], key


def test_extended_fits_on_workers_warm_start_from_their_own_state():
    # bl2's oracle is a function, whose repr differs between processes: each
    # extension fit goes back to a worker and must still find its fold's state
    import functools
    from segstruct.workflow import fresh_estimator
    X, Y = chain_problem()
    make = functools.partial(fresh_estimator, TrainingSettings(), "bl2", 0.05, 1)
    here, pooled = (cross_validate_many([(make, X, Y, None)], (0.05, 1.0), folds=2,
                                        n_jobs=jobs, extend=2)[0] for jobs in (1, 2))
    assert here["grid"] == pooled["grid"] == [0.05, 1.0, 20.0, 400.0]
    assert here["n_iter"] == pooled["n_iter"] and here["fold_counts"] == pooled["fold_counts"]


def test_each_curve_is_given_once_its_grid_is_extended():
    seen = []
    X, Y = _toy()
    problems = [(lambda: Peaked(0.001, []), X, Y, None), (lambda: Peaked(0.1, []), X, Y, None)]
    cross_validate_many(problems, DEFAULT_GRID, folds=3, extend=3,
                        on_curve=lambda p, curve: seen.append((p, len(curve["grid"]))))
    assert sorted(seen) == [(0, len(DEFAULT_GRID) + 3), (1, len(DEFAULT_GRID))]


def test_an_extended_fit_is_the_fit_a_grid_with_that_C_makes():
    # chain problems: bl1's held-out IoU still rises at C 1 of the grid 0.1 1
    make = lambda: estimator_for("bl1")                             # noqa: E731
    X, Y = chain_problem()
    C, curve = select_C(make, X, Y, grid=(0.1, 1.0), folds=3, extend=1)
    assert curve["grid"] == [0.1, 1.0, 10.0] and curve["extended"]["above"] == 1
    # warm-started from the fold's fit at C 1, as the walk along the longer grid is
    walked = cross_validate_C(make, X, Y, (0.1, 1.0, 10.0), folds=3)
    for key in ("pooled_counts", "fold_counts", "n_iter", "converged"):
        assert curve[key] == walked[key], key


# --------------------------------------------------------------------------
# the record


def test_the_bound_is_recorded_with_auto_only_and_not_at_0():
    auto = TrainingSettings().to_dict()
    assert TrainingSettings().C_extend == DEFAULT_C_EXTEND > 0
    assert auto["C_extend"] == DEFAULT_C_EXTEND
    assert f"extended up to {DEFAULT_C_EXTEND} steps past an end" in c_text(auto)
    # 0 is the grid alone: recorded as before the option existed
    off = TrainingSettings(C_extend=0).to_dict()
    assert "C_extend" not in off and {**off, "C_extend": DEFAULT_C_EXTEND} == auto
    assert "extended" not in c_text(off)
    assert "C_extend" not in TrainingSettings(C=1.0, C_extend=5).to_dict()
    with pytest.raises(ValueError, match="--C-extend"):
        TrainingSettings(C_extend=-2).to_dict()


def test_a_saved_curve_is_reused_only_under_its_bound(tmp_path):
    from segstruct.workflow import curve_path, resumable_curve
    out = tmp_path / "m"
    curve, _ = peaked(0.001, extend=3)
    curve["identity"] = "run"
    curve_path(out).write_text(json.dumps(curve))
    # the grid asked for, not the extended one, names it
    assert resumable_curve(out, DEFAULT_GRID, 3, "run", extend=3)["grid"] == curve["grid"]
    assert resumable_curve(out, curve["grid"], 3, "run", extend=3) is None
    assert resumable_curve(out, DEFAULT_GRID, 3, "run", extend=2) is None
    assert resumable_curve(out, DEFAULT_GRID, 3, "run", extend=0) is None
    plain, _ = peaked(0.001, extend=0)
    curve_path(out).write_text(json.dumps({**plain, "identity": "run"}))
    assert resumable_curve(out, DEFAULT_GRID, 3, "run", extend=0) is not None
    assert resumable_curve(out, DEFAULT_GRID, 3, "run", extend=3) is None


def test_the_cv_figure_draws_the_extended_C(tmp_path):
    from segstruct.report.curves import cv_figure
    curve, _ = peaked(0.001, extend=3)
    fig = cv_figure({"bl1": curve})
    ax = fig.axes[0]
    assert np.allclose(ax.lines[0].get_xdata(), curve["grid"])
    assert "past the grid asked (grey)" in ax.get_title()
    assert len(ax.patches) == 1                     # the band below the grid
    plain, _ = peaked(0.001, extend=0)
    assert "grey" not in cv_figure({"bl1": plain}).axes[0].get_title()


def test_edge_warning_of_a_curve_without_extension_is_unchanged():
    curve = {"grid": [0.05, 0.5, 5], "pooled_iou_percent": [51, 48, 47], "chosen_C": 0.05}
    assert edge_warning(curve) == (
        "the chosen C 0.05 is the smallest of the grid and held-out IoU was still rising "
        "towards it: a C below 0.05 may be better; extend --C-grid")


# --------------------------------------------------------------------------
# the commands

SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]


def _without_extension(curve):
    """The curve's part at the grid asked for, as ``--C-extend 0`` makes it."""
    keep = [j for j, c in enumerate(curve["grid"]) if c in curve["extended"]["grid_asked"]]
    per_c = ("grid", "pooled_iou_percent", "pooled_counts", "fold_iou_percent", "fold_counts",
             "n_iter", "converged")
    return {k: [curve[k][j] for j in keep] for k in per_c}


def test_compare_extends_its_grid_instead_of_warning(data_root, tmp_path_factory, capsys):
    from segstruct.cli import main
    tmp = tmp_path_factory.mktemp("cmp")
    common = ["compare", "--data", str(data_root), "--classes", "car", "--methods", "bl1",
              "bl2", "--no-figures", "--cache", str(tmp / "cache"), *SMALL]
    said, results = {}, {}
    for extend in ("0", None):
        out = tmp / f"out-{extend}"
        assert main(common + ["--out", str(out)]
                    + (["--C-extend", extend] if extend else [])) == 0
        said[extend] = capsys.readouterr()
        results[extend] = json.loads((out / "results.json").read_text())
    # the grid alone: some curve still rises at an edge of this small data set
    assert "extend --C-grid" in said["0"].out + said["0"].err
    assert "C_extend" not in results["0"]["settings"]
    # the default extends it instead, and says so
    text = said[None].out + said[None].err
    assert "extend --C-grid" not in text and "the grid was extended" in text
    assert results[None]["settings"]["C_extend"] == DEFAULT_C_EXTEND
    for plain, extended in zip(results["0"]["results"], results[None]["results"]):
        a, b = plain["C_selection"], extended["C_selection"]
        assert "extended" not in a and b["extended"]["grid_asked"] == list(DEFAULT_GRID)
        # --C-extend 0 is the grid's curve, which the extended one starts from
        assert _without_extension(b) == {k: a[k] for k in _without_extension(b)}
    assert any(r["C_selection"]["extended"]["below"] + r["C_selection"]["extended"]["above"]
               for r in results[None]["results"])
