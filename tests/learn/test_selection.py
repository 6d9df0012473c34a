"""--C auto: folds, the choice of C, the pooled score, warm starts, the commands."""
import functools
import warnings
import json
from pathlib import Path
from dataclasses import asdict

import numpy as np
import pytest

from segstruct.cli import main
from segstruct.evaluate.scoring import VOCScore, superpixel_confusion
from segstruct.inference import maximize
from segstruct.learn.methods import estimator_for
from segstruct.learn.selection import (DEFAULT_C_EXTEND, DEFAULT_FOLDS, DEFAULT_GRID,
                                 check_cv_data, check_folds,
                                 check_grid, choose_C, cross_validate_C, cross_validate_many,
                                 edge_warning,
                                 format_curve, image_strata, make_folds, next_C_after_refit,
                                 preference_order, select_C)
from segstruct.learn.estimators.structured_svm import DEFAULT_C, StructuredSVM
from segstruct.learn.selection.extension import new_extension
from segstruct.feature_map import Graph, MRFModel

# the top-down block (on by default) costs a detector per class; these tests are
# about other things (the top-down ones switch it on)
SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]
PNG = b"\x89PNG\r\n\x1a\n"


def chain_problem(seed, n_images=12, n=20, fg=0.3, noise=0.5, forced=6):
    """Chains of ``n`` superpixels whose first feature is the label plus noise.

    Labels are (N, 2) [fg, bg] pixel counts whose majority is the target,
    so scores are pixel-level as in the commands; the first ``forced``
    images show the class for sure.
    """
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for k in range(n_images):
        t = (rng.random(n) < fg).astype(int)
        if k < forced:
            t[0] = 1
        u = rng.normal(size=(n, 4))
        u[:, 0] = (2 * t - 1) * 0.5 + noise * rng.normal(size=n)
        u[:, -1] = 1.0
        edges = np.array([(i, i + 1) for i in range(n - 1)], np.int64)
        X.append(Graph(u, edges, rng.uniform(0, 1, (n - 1, 3))))
        fg_px = np.where(t, rng.integers(20, 60, n), rng.integers(0, 10, n))
        bg_px = np.where(t, rng.integers(0, 10, n), rng.integers(20, 60, n))
        Y.append(np.stack([fg_px, bg_px], axis=1))
    return X, Y


# --------------------------------------------------------------------------
# folds


def test_folds_partition_the_images_deterministically():
    strata = np.array([2] * 7 + [1] * 3 + [0] * 10)
    folds = make_folds(strata, 3, seed=0)
    members = [set(np.flatnonzero(folds == k)) for k in range(3)]
    assert set().union(*members) == set(range(20))            # covering
    assert sum(len(m) for m in members) == 20                 # disjoint
    assert sorted(len(m) for m in members) == [6, 7, 7]       # balanced
    # the images showing the class are dealt out first: every fold has some
    assert all(len(m & set(range(7))) >= 2 for m in members)
    assert np.array_equal(folds, make_folds(strata, 3, seed=0))
    assert not np.array_equal(folds, make_folds(strata, 3, seed=1))


def test_folds_refuse_too_few_images_and_too_few_folds():
    with pytest.raises(ValueError, match="2 training image.*fewer than the 3 folds"):
        make_folds([2, 0], 3, seed=0)
    with pytest.raises(ValueError, match="at least 2 folds"):
        check_folds(1)
    # a class that teaches in one image cannot reach every fold's training part
    _, Y = chain_problem(0, n_images=6, forced=0, fg=0.0)
    Y[0][0] = [50, 1]
    Y[1][:, 0] = 0                 # no class pixel at all
    assert image_strata(Y).tolist() == [2, 0, 1, 1, 1, 1]
    with pytest.raises(ValueError, match="in 1 of the 6 training images"):
        check_cv_data(Y, 3)


def test_grid_checks():
    assert check_grid([5, 0.5, 50]) == (0.5, 5.0, 50.0)       # walked increasing
    for grid, words in (([0, 1], "finite number > 0"), ([-1, 2], "finite number > 0"),
                        ([1, float("inf")], "finite"), ([1], "at least 2"),
                        ([1, 1], "twice")):
        with pytest.raises(ValueError, match=words):
            check_grid(grid)
    # the grid of results/lodo: 0.01 to 3, each value about 3 times the last
    assert DEFAULT_GRID == check_grid(DEFAULT_GRID)
    assert DEFAULT_GRID[0] == 0.01 and DEFAULT_GRID[-1] == 3
    assert np.all((np.diff(np.log(DEFAULT_GRID)) > np.log(2.9))
                  & (np.diff(np.log(DEFAULT_GRID)) < np.log(3.4)))


# --------------------------------------------------------------------------
# choice and score


def test_choose_C_is_the_argmax_with_ties_to_the_smaller_C():
    assert choose_C({"grid": [0.1, 1, 10, 100], "pooled_iou_percent": [40, 55, 55, 30]}) == 1
    assert choose_C({"grid": [0.1, 1, 10], "pooled_iou_percent": [40, 41, 55]}) == 10
    # the order of the grid does not matter; undefined scores never win
    assert choose_C({"grid": [10, 1, 0.1], "pooled_iou_percent": [50, 50, 10]}) == 1
    assert choose_C({"grid": [0.1, 1, 10], "pooled_iou_percent": [None, 20, None]}) == 1
    assert choose_C({"grid": [0.1, 1], "pooled_iou_percent": [float("nan"), 0.0]}) == 1


def test_a_choice_at_an_end_of_the_grid_is_warned_about():
    def warning(grid, scores):
        curve = {"grid": grid, "pooled_iou_percent": scores}
        curve["chosen_C"] = choose_C(curve)
        return edge_warning(curve)
    assert "smallest" in warning([0.05, 0.5, 5], [51, 48, 47])
    assert "below 0.05" in warning([5, 0.5, 0.05], [47, 48, 51])     # any order
    assert "above 5" in warning([0.05, 0.5, 5], [19, 46, 50])
    assert warning([0.05, 0.5, 5], [40, 55, 50]) is None              # inside
    assert warning([0.05, 0.5, 5], [50, 50, 10]) is None              # a plateau: no trend
    assert warning([0.05, 0.5], [None, 3.0]) is not None
    lines = format_curve({"grid": [0.05, 0.5], "folds": 1, "chosen_C": 0.5,
                          "pooled_iou_percent": [1.0, 2.0], "fold_iou_percent": [[1.0], [2.0]],
                          "n_iter": [[3], [4]], "converged": [[True], [True]],
                          "fit_seconds": [[0.1], [0.1]], "warning": "extend it"})
    assert lines[-1] == "  warning: extend it"


def test_preference_order_ranks_by_pooled_iou_with_ties_to_the_smaller_C():
    curve = {"grid": [0.1, 1, 10, 100], "pooled_iou_percent": [40, 55, None, 55]}
    assert preference_order(curve) == [1, 100, 0.1, 10]
    assert preference_order({"grid": [3, 0.3], "pooled_iou_percent": [float("nan"), 0]}) \
        == [0.3, 3]


def _curve(scores, chosen=None):
    grid = [0.01, 0.03, 0.1, 0.3, 1, 3][:len(scores)]
    curve = {"grid": grid, "pooled_iou_percent": list(scores), "folds": 1,
             "fold_iou_percent": [[v] for v in scores], "n_iter": [[5]] * len(scores),
             "converged": [[True]] * len(scores), "fit_seconds": [[0.1]] * len(scores)}
    curve["chosen_C"] = choose_C(curve) if chosen is None else chosen
    curve["warning"] = edge_warning(curve)
    return curve


def test_a_refit_that_finds_something_stands():
    curve = _curve([1.6, 1.2, 0.9])
    before = json.dumps(curve)
    assert next_C_after_refit(curve, 0.4) is None
    assert json.dumps(curve) == before            # nothing recorded


def test_a_refit_with_train_iou_0_gives_way_to_the_next_C_by_held_out_iou():
    # COCO dining table, bl2: C 0.01 best held out (1.6 %), its refit labels nothing
    curve = _curve([1.6, 1.2, 0.0, 1.4, None])
    assert curve["chosen_C"] == 0.01 and "smallest" in curve["warning"]
    assert next_C_after_refit(curve, 0.0) == 0.3          # 1.4 %: the next best
    assert curve["chosen_C"] == 0.3 and curve["warning"] is None
    assert curve["refused"] == [{"C": 0.01, "train_iou_percent": 0.0}]
    # undefined counts as 0; a C refused before, or with nothing held out, never comes back
    assert next_C_after_refit(curve, float("nan")) == 0.03
    assert curve["refused"][-1] == {"C": 0.3, "train_iou_percent": None}
    assert next_C_after_refit(curve, None) is None        # 0.1 and 1 scored 0 / nothing
    assert curve["chosen_C"] == 0.03 and len(curve["refused"]) == 2
    lines = format_curve(curve)
    marks = {float(line.split()[1]): line[0] for line in lines[1:7] if line[0] in "x*"}
    assert marks == {0.01: "x", 0.3: "x", 0.03: "*"}
    assert any("refit at C 0.01 scored IoU 0.00 % on its own training split: refused" in line
               for line in lines)


def test_pooled_iou_is_the_voc_score_of_the_held_out_predictions():
    X, Y = chain_problem(3)
    # by the features' identity: the folds' fits get the graphs' arrays, not their objects
    index = {id(x.unary): i for i, x in enumerate(X)}
    fits = []

    class Recording(StructuredSVM):
        def fit(self, X_train, Y_train):
            super().fit(X_train, Y_train)
            fits.append((self.C, {index[id(x.unary)] for x in X_train}, self.w_.copy()))
            return self

    grid = [0.05, 1.0, 20.0]
    curve = cross_validate_C(lambda: Recording(loss="adjusted_hamming"),
                             X, Y, grid, folds=3, seed=4)
    fold_of = np.array(curve["fold_of_image"])
    assert len(fits) == 9 and sorted({c for c, _, _ in fits}) == grid
    model = MRFModel()
    for j, c in enumerate(grid):
        pooled = VOCScore()
        for _, trained_on, w in (f for f in fits if f[0] == c):
            held = sorted(set(range(len(X))) - trained_on)
            assert len(set(fold_of[held])) == 1        # one fold held out, all of it
            fold = VOCScore()
            for i in held:                             # predictions rebuilt from w
                u, p = model.potentials(X[i], w)
                counts = superpixel_confusion(maximize(u, X[i].edges, p)[0],
                                              Y[i][:, 0], Y[i][:, 1])
                pooled.add(*counts)
                fold.add(*counts)
            k = int(fold_of[held[0]])
            assert curve["fold_counts"][j][k] == list(fold.totals)
        assert len(pooled.per_image) == len(X)         # every image held out once per C
        assert curve["pooled_counts"][j] == list(pooled.totals)
        assert curve["pooled_iou_percent"][j] == pytest.approx(100 * pooled.iou, abs=1e-12)
    assert curve["pooled_iou_percent"][0] != curve["pooled_iou_percent"][-1]  # C matters


def _without_times(curve: dict) -> dict:
    return {k: v for k, v in curve.items() if k not in ("seconds", "fit_seconds", "problems")}


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_several_problems_cross_validated_together_give_each_its_own_curve(n_jobs):
    # two problems (different data, folds and methods) as one pool of fold
    # tasks: each curve equals that problem's own cross-validation
    problems = [(functools.partial(estimator_for, "bl1"), *chain_problem(5), None),
                (functools.partial(estimator_for, "bl2"), *chain_problem(6, n_images=9),
                 None)]
    grid = [0.05, 1.0]
    seen = []
    together = cross_validate_many(problems, grid, folds=3, seed=2, n_jobs=n_jobs,
                                   on_curve=lambda k, curve: seen.append((k, curve)))
    assert [k for k, _ in seen] == [0, 1] and [c for _, c in seen] == together
    for (make, X, Y, _), curve in zip(problems, together):
        alone = cross_validate_C(make, X, Y, grid, folds=3, seed=2)
        assert _without_times(curve) == _without_times(alone)
        assert curve["problems"] == 2 and alone["problems"] == 1
        assert np.shape(curve["fit_seconds"]) == (2, 3)
    assert together[0]["fold_of_image"] != together[1]["fold_of_image"]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_costliest_problems_folds_are_dealt_first_on_workers(n_jobs, monkeypatch):
    # longest first keeps the workers busy to the end; the curves and the
    # index given to on_curve do not depend on the order
    from segstruct.learn.selection import cross_validation
    problems = [(functools.partial(estimator_for, "bl1"), *chain_problem(5), None),
                (functools.partial(estimator_for, "bl2"), *chain_problem(6, n_images=9),
                 None)]
    dealt, real_map = [], cross_validation.parallel_map

    def recording(func, arg_lists, *args, **kwargs):
        dealt.extend(a[0] for a in arg_lists)
        return real_map(func, arg_lists, *args, **kwargs)
    monkeypatch.setattr(cross_validation, "parallel_map", recording)
    seen = []
    ordered = cross_validate_many(problems, [0.05, 1.0], folds=3, seed=2, n_jobs=n_jobs,
                                  on_curve=lambda k, curve: seen.append((k, curve)),
                                  costs=[1.0, 5.0])
    plain = cross_validate_many(problems, [0.05, 1.0], folds=3, seed=2, n_jobs=n_jobs)
    assert [_without_times(c) for c in ordered] == [_without_times(c) for c in plain]
    if n_jobs == 1:          # one fit after another: the problems' own order
        assert not dealt and [k for k, _ in seen] == [0, 1]
    else:
        assert dealt[:6] == [problems[1][0]] * 3 + [problems[0][0]] * 3
        assert [k for k, _ in seen] == [1, 0]
    assert dict(seen) == dict(enumerate(ordered))
    with pytest.raises(ValueError, match="1 costs for 2 problems"):
        cross_validate_many(problems, [0.05, 1.0], folds=3, costs=[1.0])


def test_several_problems_are_checked_before_any_fit():
    X, Y = chain_problem(5)
    fits = []

    def make():
        fits.append(1)
        return estimator_for("bl1")
    with pytest.raises(ValueError, match="fewer than the 3 folds"):
        cross_validate_many([(make, X, Y, None), (make, X[:2], Y[:2], None)], [0.1, 1.0],
                            folds=3)
    assert not fits


@pytest.mark.parametrize("method", ["bl1", "bl2"])
def test_warm_started_path_reaches_the_cold_objectives(method):
    X, Y = chain_problem(0)
    tol = 1e-3
    warm = estimator_for(method, warm_start=True, tol=tol)
    warm_iters = cold_iters = 0
    for c in (0.01, 0.1, 1.0, 10.0):
        warm.C = c
        warm.fit(X, Y)
        cold = estimator_for(method, C=c, tol=tol).fit(X, Y)
        assert warm.converged_ and cold.converged_
        # both are within C tol above the optimum (exact oracles)
        assert abs(warm.primal_ - cold.primal_) <= c * tol + 1e-9, c
        warm_iters += warm.n_iter_
        cold_iters += cold.n_iter_
    assert warm_iters < cold_iters       # the cuts were reused


def test_auto_picks_a_larger_C_where_a_tiny_one_predicts_no_foreground():
    # per-image scope, rare foreground: BL1 at C = 1e-3 labels nothing foreground
    X, Y = chain_problem(1, fg=0.1)
    make = lambda: estimator_for("bl1", scope="image")  # noqa: E731
    tiny = estimator_for("bl1", scope="image", C=1e-3).fit(X, Y)
    assert not any(y.any() for y in tiny.predict(X))
    C, curve = select_C(make, X, Y, [1e-3, 1e-2, 1.0, 10.0], folds=3, seed=0)
    tp, fp, fn = curve["pooled_counts"][0]
    assert tp == 0 and fp == 0 and fn > 0 and curve["pooled_iou_percent"][0] == 0.0
    assert C >= 1.0 and curve["chosen_C"] == C
    assert curve["pooled_iou_percent"][curve["grid"].index(C)] > 20


def test_fold_fits_get_no_callbacks():
    # no log, checkpoint nor bar of their own: those belong to the final model
    X, Y = chain_problem(0, n_images=6)
    given = []

    class Recording(StructuredSVM):
        def fit(self, X_train, Y_train, callbacks=None):
            given.append(callbacks)
            return super().fit(X_train, Y_train, callbacks)

    cross_validate_C(Recording, X, Y, [0.1, 1], folds=2)
    assert len(given) == 4 and all(c is None for c in given)


def test_fold_fits_stop_at_a_tolerance_growing_with_C_up_to_the_fold_tolerance():
    X, Y = chain_problem(0, n_images=9)
    seen = []

    class Recording(StructuredSVM):
        def fit(self, X_train, Y_train, callbacks=None):
            seen.append(self.tol)
            return super().fit(X_train, Y_train, callbacks)

    def make(tol, **params):
        return lambda: Recording(tol=tol, **params)

    grid = [0.01, 0.1, 1.0, 3.0]
    curve = select_C(make(1e-3), X, Y, grid, folds=3, fold_tol=0.05)[1]
    # fold_tol x C, between the estimator's own and fold_tol; per fold
    assert seen == pytest.approx([1e-3, 0.005, 0.05, 0.05] * 3) and curve["fold_tol"] == 0.05
    seen.clear()
    # a looser tol of the estimator's own stays; None keeps it whatever it is
    select_C(make(0.2), X, Y, grid, folds=3, fold_tol=0.05)
    assert seen == [0.2] * 12
    seen.clear()
    curve = select_C(make(1e-3), X, Y, grid, folds=3, fold_tol=None)[1]
    assert seen == [1e-3] * 12 and curve["fold_tol"] is None
    seen.clear()
    from segstruct.learn.selection import DEFAULT_FOLD_TOL
    select_C(make(1e-3), X, Y, grid, folds=3)
    assert seen[-1] == DEFAULT_FOLD_TOL and seen[0] == 1e-3
    seen.clear()
    # not measured, kept: n-slack's tol (a violation per example) and the
    # paper's units of C
    select_C(make(1e-3, solver="nslack"), X, Y, grid, folds=3, fold_tol=0.05)
    select_C(make(1e-3, C_units="paper"), X, Y, grid, folds=3, fold_tol=0.05)
    assert seen == [1e-3] * 24
    with pytest.raises(ValueError, match="the folds' tolerance"):
        select_C(make(1e-3), X, Y, grid, folds=3, fold_tol=0.0)


def test_a_loosened_fold_fit_at_w_0_does_not_warn_a_tight_one_does():
    import warnings
    X, Y = chain_problem(0, n_images=9)

    class Warns(StructuredSVM):
        def fit(self, X_train, Y_train, callbacks=None):
            super().fit(X_train, Y_train, callbacks)
            warnings.warn(f"the optimum at C={self.C:g} is w = 0", RuntimeWarning, stacklevel=2)
            return self

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        select_C(lambda: Warns(tol=1e-3), X, Y, [0.01, 1.0], folds=3, fold_tol=0.05)
    # C 0.01 at the estimator's own tol (0.05 x 0.01 is tighter): shown; C 1 at 0.05: not
    assert [str(w.message) for w in caught] == ["the optimum at C=0.01 is w = 0"] * 3


def test_looser_fold_fits_take_fewer_iterations():
    X, Y = chain_problem(2, n_images=12, noise=1.0)
    make = lambda: estimator_for("bl1", tol=1e-4)  # noqa: E731
    grid = [0.01, 0.1, 1.0, 10.0]
    tight = select_C(make, X, Y, grid, folds=3, fold_tol=None)[1]
    loose = select_C(make, X, Y, grid, folds=3, fold_tol=0.05)[1]
    # the first C of each fold starts cold on the same path and stops earlier
    assert all(a <= b for a, b in zip(loose["n_iter"][0], tight["n_iter"][0]))
    assert np.sum(loose["n_iter"]) < np.sum(tight["n_iter"])


def test_a_failed_fit_names_its_fold_and_C():
    X, Y = chain_problem(0, n_images=6)

    class FailsAtLargeC(StructuredSVM):
        def fit(self, X_train, Y_train):
            if self.C > 1:
                raise ValueError("solver broke")
            return super().fit(X_train, Y_train)

    from segstruct.learn.selection import CrossValidationError
    with pytest.raises(CrossValidationError,
                       match=r"fold 1 of 2 at C 10 \(training on 3 images, warm-started from "
                             r"C 0.1\): solver broke"):
        cross_validate_C(lambda: FailsAtLargeC(), X, Y, [0.1, 10], folds=2)


def test_cv_figure_draws_one_pooled_line_per_method():
    from segstruct.report.figures import cv_figure
    curve = {"grid": [0.1, 1, 10], "folds": 2, "chosen_C": 1,
             "pooled_iou_percent": [10, 30, None], "fold_iou_percent": [[5, 15], [20, 40],
                                                                        [None, 1]]}
    fig = cv_figure({"bl1": curve, "bl2": {**curve, "chosen_C": 0.1}}, caption="c")
    ax = fig.axes[0]
    pooled = [line for line in ax.lines if line.get_marker() == "o"]
    stars = [line for line in ax.lines if line.get_marker() == "*"]
    assert len(pooled) == 2 and ax.get_xscale() == "log"
    assert [float(s.get_xdata()[0]) for s in stars] == [1.0, 0.1]
    assert [float(s.get_ydata()[0]) for s in stars] == [30.0, 10.0]
    assert not [line for line in ax.lines if line.get_marker() == "X"]
    # a refused refit is a cross at its C on its method's pooled line
    fig = cv_figure({"bl2": {**curve, "refused": [{"C": 0.1, "train_iou_percent": 0.0}]}})
    crosses = [line for line in fig.axes[0].lines if line.get_marker() == "X"]
    assert [(float(x.get_xdata()[0]), float(x.get_ydata()[0])) for x in crosses] == [(0.1, 10.0)]
    assert "refit refused" in fig.axes[0].get_title()


def test_settings_of_a_fixed_C_are_recorded_as_before():
    from segstruct.learn.methods import TrainingSettings
    before = ["loss", "beta", "scope", "C", "C_units", "node_weights", "n_triangles",
              "inference", "polish", "solver", "tol", "max_iter"]
    fixed = TrainingSettings(C=DEFAULT_C)
    assert list(fixed.to_dict()) == before
    assert fixed.to_dict() == {k: asdict(fixed)[k] for k in before}
    # C is cross-validated by default
    assert TrainingSettings() == TrainingSettings(C="auto")
    auto = TrainingSettings(C="auto").to_dict()
    assert auto["C"] == "auto" and auto["C_grid"] == list(DEFAULT_GRID)
    assert auto["folds"] == DEFAULT_FOLDS
    from segstruct.learn.methods import c_text
    from segstruct.learn.selection import DEFAULT_FOLD_TOL
    assert auto["cv_tol"] == DEFAULT_FOLD_TOL
    assert c_text(auto).endswith(f", folds to tol {DEFAULT_FOLD_TOL:g} x C in 1e-05-0.01, "
                                 f"extended up to {DEFAULT_C_EXTEND} steps past an end)")
    # a record made before the folds had a tolerance of their own, or the grid
    # an extension: what it was made with
    old = {k: v for k, v in auto.items() if k != "C_extend"}
    assert c_text({**old, "cv_tol": None}) == "C auto (3-fold CV over 6 values 0.01-3)"
    # the projection set too is recorded only when it is not the default
    assert TrainingSettings(projection_set="budget").to_dict()["projection_set"] == "budget"


# --------------------------------------------------------------------------
# the commands


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return ["--cache", str(tmp_path_factory.mktemp("cache"))]


@pytest.mark.slow
def test_train_auto_records_the_curve_and_refits_at_the_chosen_C(data_root, cache,
                                                                 tmp_path, capsys):
    from segstruct.datasets import VOCDataset
    from segstruct.features.cache import ArrayCache
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.io.persistence import load_model
    model = tmp_path / "car"
    assert main(["train", "--data", str(data_root), "--class", "car", "--C", "auto",
                 "--out", str(model), *cache, *SMALL]) == 0
    printed = capsys.readouterr().out
    svm, config, codebook, doc = load_model(model)
    curve = doc["C_selection"]
    # the grid asked for, and any C past its ends that the extension added
    assert curve["extended"]["grid_asked"] == list(DEFAULT_GRID)
    assert set(DEFAULT_GRID) <= set(curve["grid"]) and curve["grid"] == sorted(curve["grid"])
    assert curve["folds"] == 3 and curve["seed"] == 0
    assert sorted(set(curve["fold_of_image"])) == [0, 1, 2] and len(curve["fold_of_image"]) == 6
    for key in ("pooled_iou_percent", "fold_iou_percent", "n_iter", "converged", "fit_seconds"):
        assert len(curve[key]) == len(curve["grid"]), key
    assert curve["chosen_C"] == choose_C(curve) == doc["estimator"]["C"]
    assert f"C chosen by 3-fold cross-validation on voc/train (bl1, car): " \
           f"{curve['chosen_C']:g}" in printed
    png = tmp_path / "car.cv.png"
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 1000
    # the saved model is a plain fit on the whole training split at the chosen C
    ex = FeatureExtractor(VOCDataset(data_root), config, ArrayCache(cache[1]),
                          progress=False, codebook=codebook).examples("train", "car")
    from segstruct.learn.methods import REFIT_TOL
    ref = estimator_for("bl1", C=curve["chosen_C"], tol=REFIT_TOL).fit(
        [e.graph for e in ex], [e.pixel_counts for e in ex])
    assert np.array_equal(svm.w_, ref.w_)


def test_train_with_a_fixed_C_writes_no_curve(data_root, cache, tmp_path):
    from segstruct.io.persistence import load_model
    model = tmp_path / "fixed"
    assert main(["train", "--data", str(data_root), "--class", "car", "--out", str(model),
                 "--C", f"{DEFAULT_C:g}", *cache, *SMALL]) == 0
    doc = load_model(model)[3]
    assert "C_selection" not in doc and doc["estimator"]["C"] == DEFAULT_C
    assert doc["estimator"]["C_units"] == "superpixel"
    assert not (tmp_path / "fixed.cv.png").exists()


@pytest.mark.slow
def test_compare_auto_records_curves_and_draws_them(data_root, cache, tmp_path, monkeypatch,
                                                    capsys):
    out = tmp_path / "cmp"
    # bl1 and hamming: two methods, and no loss-surface figure to wait for
    common = ["compare", "--data", str(data_root), "--classes", "car", "--methods", "bl1",
              "hamming", "--seed", "3", "--figure-images", "1", "--out", str(out), *cache,
              *SMALL]
    args = common + ["--C", "auto", "--C-grid", "20", "0.05", "1", "--folds", "2"]
    assert main(args) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["C"] == "auto"
    assert results["settings"]["C_grid"] == [0.05, 1.0, 20.0]
    assert results["settings"]["folds"] == 2
    for r in results["results"]:
        curve = r["C_selection"]
        assert curve["extended"]["grid_asked"] == [0.05, 1.0, 20.0] and curve["folds"] == 2
        assert {0.05, 1.0, 20.0} <= set(curve["grid"])
        assert curve["seed"] == 3 and len(curve["fold_iou_percent"][0]) == 2
        assert r["C"] == curve["chosen_C"] == choose_C(curve)
        assert r["identity"]["settings"]["C"] == "auto"
        model = json.loads((out / r["model"]).read_text())
        assert model["estimator"]["C"] == r["C"] and model["C_selection"] == curve
    png = out / "figures" / "cv-car.png"
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 1000
    md = (out / "table.md").read_text()
    assert "C chosen by 2-fold cross-validation on train" in md
    assert ("C auto (2-fold CV over 3 values 0.05-20, folds to tol 0.01 x C in 1e-05-0.01, "
            f"extended up to {DEFAULT_C_EXTEND} steps past an end)") in md
    assert results["settings"]["cv_tol"] == 0.01
    assert all(r["C_selection"]["fold_tol"] == 0.01 for r in results["results"])
    # the same command resumes without training; a fixed C is another experiment
    capsys.readouterr()

    def no_training(self, X, Y, callbacks=None):
        raise AssertionError("a finished pair was trained again")
    monkeypatch.setattr("segstruct.learn.estimators.structured_svm.StructuredSVM.fit", no_training)
    assert main(args + ["--no-figures"]) == 0
    assert main(common + ["--C", "1", "--no-figures"]) == 2
    assert "settings differ" in capsys.readouterr().err


def test_compare_cross_validates_its_pairs_together_and_keeps_their_curves(
        data_root, cache, tmp_path, monkeypatch):
    import segstruct.compare.choosing as choosing
    import segstruct.compare.comparison as comparison
    from segstruct.workflow import curve_path
    out = tmp_path / "cmp"
    args = ["compare", "--data", str(data_root), "--classes", "car", "--methods", "bl1",
            "hamming", "--C", "auto", "--C-grid", "0.05", "1", "--folds", "2",
            "--no-figures", "--out", str(out), *cache, *SMALL]
    pooled, costs, real_pool = [], [], choosing.cross_validate_many

    def counting(problems, *args, **kwargs):
        pooled.append(len(problems))
        costs.append(kwargs["costs"])
        return real_pool(problems, *args, **kwargs)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(choosing, "cross_validate_many", counting)
    # both pairs in one cross-validation; interrupted as the pairs' refits start
    # on the workers, with both curves saved (no checkpoint yet)
    monkeypatch.setattr(comparison, "parallel_map", interrupted)
    assert main(args + ["-j", "2"]) == 130
    assert pooled == [2]
    # the longest first: bl1 and hamming cost alike (the class's superpixels)
    assert costs[0][0] == costs[0][1] > 0
    saved = {p.name: json.loads(p.read_text()) for p in out.rglob("*.cv.json")}
    assert len(saved) == 2 and not list(out.rglob("*.ckpt.npz"))
    # run again: the saved curves, no cross-validation
    monkeypatch.undo()
    monkeypatch.setattr(choosing, "cross_validate_many", counting)
    assert main(args + ["-j", "2"]) == 0
    assert pooled == [2]
    results = json.loads((out / "results.json").read_text())["results"]
    for record in results:
        curve = saved[Path(record["model"]).name.removesuffix(".json") + ".cv.json"]
        assert record["C_selection"] == curve and record["C"] == curve["chosen_C"]
        assert curve["problems"] == 2
    assert not list(out.rglob("*.cv.json"))
    # a pair's curve gone between the cross-validation and its refit: that
    # pair alone is cross-validated again, by the same path, to the same curve
    (out / "runs" / "car-bl1.json").unlink()
    real_train = comparison.Comparison._train_and_score

    def curve_gone(self, class_name, method):
        curve_path(self.model_path(class_name, method)).unlink()
        return real_train(self, class_name, method)
    monkeypatch.setattr(comparison.Comparison, "_train_and_score", curve_gone)
    assert main(args + ["-j", "1"]) == 0
    assert pooled == [2, 1, 1]
    again = json.loads((out / "runs" / "car-bl1.json").read_text())["C_selection"]
    assert _without_times(again) == _without_times(saved["car-bl1.cv.json"])


def test_compare_with_pairs_on_workers_equals_one_pair_at_a_time(data_root, cache, tmp_path,
                                                                 capsys):
    from segstruct.io.persistence import load_model
    args = ["compare", "--data", str(data_root), "--classes", "car", "--methods", "bl1",
            "bl2", "--C", "auto", "--C-grid", "0.05", "1", "--folds", "2", "--no-figures",
            *cache, *SMALL]
    records, said = {}, {}
    for jobs in ("1", "2"):
        assert main(args + ["--out", str(tmp_path / jobs), "-j", jobs]) == 0
        said[jobs] = capsys.readouterr().out
        records[jobs] = json.loads((tmp_path / jobs / "results.json").read_text())["results"]
    assert "pair(s) on worker processes" in said["2"]
    assert "pair(s) on worker processes" not in said["1"]
    for serial, pooled in zip(records["1"], records["2"]):
        assert serial["method"] == pooled["method"] and serial["C"] == pooled["C"]
        assert (_without_times(serial["C_selection"]) == _without_times(pooled["C_selection"]))
        for score in ("train_score", "eval_score"):
            assert serial[score] == pooled[score]
        w1 = load_model(tmp_path / "1" / serial["model"])[0].w_
        assert np.array_equal(w1, load_model(tmp_path / "2" / pooled["model"])[0].w_)
    for jobs in ("1", "2"):       # each pair's curve and result are said, in order
        for method in ("bl1", "bl2"):
            assert f"({method}, car): " in said[jobs] and f"{method} car: val VOC IoU" in said[jobs]


def test_a_saved_curve_stands_alone_only_with_this_runs_identity(tmp_path):
    from segstruct.io.persistence import checkpoint_path
    from segstruct.workflow import curve_path, resumable_curve
    out = tmp_path / "m"
    grid = [0.1, 1.0]
    curve = {"grid": grid, "folds": 2, "chosen_C": 1.0}
    curve_path(out).write_text(json.dumps({**curve, "identity": "this"}))
    assert resumable_curve(out, grid, 2, "this")["chosen_C"] == 1.0      # no checkpoint needed
    assert resumable_curve(out, grid, 2, "other") is None                # another run's
    assert resumable_curve(out, grid, 3, "this") is None                 # other folds
    assert resumable_curve(out, [0.1, 3.0], 2, "this") is None           # other grid
    assert resumable_curve(out, grid, 2, "this", fold_tol=0.01) is None  # made before it
    curve_path(out).write_text(json.dumps({**curve, "identity": "this", "fold_tol": 0.01}))
    assert resumable_curve(out, grid, 2, "this", fold_tol=0.01)["chosen_C"] == 1.0
    assert resumable_curve(out, grid, 2, "this", fold_tol=0.1) is None   # another tolerance
    curve_path(out).write_text(json.dumps({**curve, "identity": "this"}))
    assert resumable_curve(out, grid, 2) is None          # no identity asked: needs a checkpoint
    checkpoint_path(out).write_bytes(b"")
    assert resumable_curve(out, grid, 2)["chosen_C"] == 1.0
    assert resumable_curve(out, grid, 2, "other") is None
    curve_path(out).write_text(json.dumps(curve))          # a curve of train, without identity
    assert resumable_curve(out, grid, 2, "this")["chosen_C"] == 1.0      # the checkpoint's
    checkpoint_path(out).unlink()
    assert resumable_curve(out, grid, 2, "this") is None


def _refit_learns_nothing_at(C_bad, grid, monkeypatch):
    """--C auto where cross-validation prefers ``C_bad`` (then the next C of
    ``grid``) and the fit at ``C_bad`` converges to w = 0, which labels no
    pixel: the refit collapse of COCO's dining table, made certain."""
    import segstruct.learn.selection.choice as selection
    real_fit = StructuredSVM.fit

    def fit(self, X, Y, callbacks=None):
        real_fit(self, X, Y, callbacks)
        if self.C == C_bad:
            self.w_ = np.zeros_like(self.w_)
            self.converged_ = True
        return self

    def curve(make_estimator, X, Y, grid, folds=3, seed=0, *args, **kwargs):
        m = len(grid)
        scores = [30.0 if c == C_bad else 20.0 - j for j, c in enumerate(grid)]
        # as cross_validate_C's (progress, n_jobs, groups, fold_tol, extend)
        fold_tol = args[3] if len(args) > 3 else kwargs.get("fold_tol")
        extend = args[4] if len(args) > 4 else kwargs.get("extend", 0)
        extended = {"extended": new_extension(grid, extend)} if extend else {}
        return {"grid": list(grid), "folds": folds, "seed": seed, "fold_tol": fold_tol,
                **extended,
                "fold_of_image": [k % folds for k in range(len(X))],
                "pooled_iou_percent": scores, "pooled_counts": [[1, 1, 1]] * m,
                "fold_iou_percent": [[v] * folds for v in scores],
                "fold_counts": [[[1, 1, 1]] * folds] * m, "n_iter": [[3] * folds] * m,
                "converged": [[True] * folds] * m, "fit_seconds": [[0.1] * folds] * m,
                "seconds": 0.1}

    def curves(problems, grid, folds=3, seed=0, *args, on_curve=None, **kwargs):
        out = [curve(p[0], p[1], p[2], grid, folds, seed, fold_tol=kwargs.get("fold_tol"))
               for p in problems]
        for k, c in enumerate(out):
            if on_curve is not None:
                on_curve(k, c)
        return out
    monkeypatch.setattr(StructuredSVM, "fit", fit)
    monkeypatch.setattr(selection, "cross_validate_C", curve)
    # compare cross-validates its pairs together
    monkeypatch.setattr("segstruct.compare.choosing.cross_validate_many", curves)


def test_train_refuses_a_refit_that_labels_nothing_and_resumes_the_next_C(
        data_root, cache, tmp_path, monkeypatch, capsys):
    from segstruct.io.persistence import load_model
    _refit_learns_nothing_at(0.05, [0.05, 1.0, 20.0], monkeypatch)
    base = ["train", "--data", str(data_root), "--class", "car", "--C", "auto", "--C-grid",
            "0.05", "1", "20", "--tol", "1e-5", "--out", str(tmp_path / "m"), *cache, *SMALL]
    # the refit at 1 (the next best) is interrupted by --max-iter
    assert main(base + ["--max-iter", "3"]) == 0
    captured = capsys.readouterr()
    assert ("the refit at C 0.05 finds nothing of the class on its own training split "
            "(IoU 0.00 %): refused; refitting at C 1") in captured.err
    saved = json.loads((tmp_path / "m.cv.json").read_text())
    assert saved["chosen_C"] == 1.0 and saved["refused"] == [{"C": 0.05,
                                                             "train_iou_percent": 0.0}]
    assert (tmp_path / "m.ckpt.npz").exists()
    # resumed at C 1, without cross-validating or refitting at 0.05 again
    assert main(base + ["--resume", "--max-iter", "500"]) == 0
    captured = capsys.readouterr()
    assert "resuming the refit at C 1," in captured.out and "refused" not in captured.err
    svm, _, _, doc = load_model(tmp_path / "m")
    assert svm.C == 1.0 and doc["C_selection"]["chosen_C"] == 1.0
    assert doc["C_selection"]["refused"] == saved["refused"]
    assert doc["train_score"]["voc_iou_percent"] > 0
    assert not (tmp_path / "m.cv.json").exists() and not (tmp_path / "m.ckpt.npz").exists()
    assert (tmp_path / "m.cv.png").read_bytes()[:8] == PNG
    # the same weights as one uninterrupted fit at C 1
    assert main(["train", "--data", str(data_root), "--class", "car", "--C", "1", "--tol",
                 "1e-5", "--out", str(tmp_path / "ref"), *cache, *SMALL]) == 0
    assert np.array_equal(svm.w_, load_model(tmp_path / "ref")[0].w_)


def test_compare_refuses_a_refit_that_labels_nothing(data_root, cache, tmp_path, monkeypatch,
                                                     capsys):
    _refit_learns_nothing_at(0.05, [0.05, 1.0, 20.0], monkeypatch)
    out = tmp_path / "cmp"
    assert main(["compare", "--data", str(data_root), "--classes", "car", "--methods", "bl1",
                 "--C", "auto", "--C-grid", "0.05", "1", "20", "--folds", "2", "--no-figures",
                 "--out", str(out), *cache, *SMALL]) == 0
    record = json.loads((out / "results.json").read_text())["results"][0]
    assert record["C"] == record["C_selection"]["chosen_C"] == 1.0
    assert record["C_selection"]["refused"] == [{"C": 0.05, "train_iou_percent": 0.0}]
    assert record["train_score"]["voc_iou_percent"] > 0
    model = json.loads((out / record["model"]).read_text())
    assert model["estimator"]["C"] == 1.0 and model["C_selection"] == record["C_selection"]
    assert not list(out.rglob("*.cv.json")) and not list(out.rglob("*.ckpt.npz"))


@pytest.mark.parametrize("extra, words", [
    (["--C", "big"], "--C must be a positive number or 'auto', got 'big'"),
    (["--C", "auto", "--folds", "1"], "needs at least 2 folds, got 1"),
    (["--C", "auto", "--C-grid", "0", "1"], "every C of the grid must be a finite number > 0"),
    (["--C", "auto", "--C-grid", "-1", "1"], "every C of the grid must be a finite number > 0"),
    (["--C", "1", "--C-grid", "0.1", "1"], "--C-grid applies only to --C auto (C is 1)"),
    (["--C", "2", "--folds", "3"], "--folds applies only to --C auto (C is 2)"),
    (["--C", "2", "--cv-tol", "0.1"], "--cv-tol applies only to --C auto (C is 2)"),
    (["--C", "auto", "--cv-tol", "0"],
     "the folds' tolerance (--cv-tol) must be a finite number > 0"),
    (["--C", "auto", "--folds", "7"], "has 6 training images, fewer than the 7 folds"),
    (["--C", "2", "--C-extend", "3"], "--C-extend applies only to --C auto (C is 2)"),
    (["--C", "auto", "--C-extend", "-1"], "(--C-extend) must be a whole number of steps >= 0"),
])
@pytest.mark.parametrize("command", ["train", "compare"])
def test_bad_C_options_are_refused_before_anything_is_written(command, extra, words,
                                                              data_root, cache, tmp_path,
                                                              capsys):
    out = tmp_path / "out"
    target = ["--class", "car"] if command == "train" else ["--classes", "car"]
    with pytest.raises(SystemExit) as exc:
        main([command, "--data", str(data_root), *target, "--out", str(out), *cache, *SMALL,
              *extra])
    assert exc.value.code == 2
    assert words in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_C_that_is_not_positive_is_refused(data_root, cache, tmp_path, capsys):
    # exit status 2 without the usage text, as before --C auto existed
    for command, target in (("train", "--class"), ("compare", "--classes")):
        assert main([command, "--data", str(data_root), target, "car", "--C", "0",
                     "--out", str(tmp_path / "o"), *cache, *SMALL]) == 2
        assert "--C must be a finite number > 0 or one of 'auto', got 0.0" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_group_folds_keep_each_group_in_one_fold():
    from segstruct.datasets.folds import group_folds
    groups = ["a"] * 5 + ["b"] * 3 + ["c"] * 3 + ["d"] * 2 + ["e"]
    folds = group_folds(groups, 3, seed=0)
    assert np.array_equal(folds, group_folds(groups, 3, seed=0))       # deterministic
    for g in set(groups):
        assert len({int(f) for f, h in zip(folds, groups) if h == g}) == 1
    assert sorted(set(folds.tolist())) == [0, 1, 2]
    # largest group first, each to the emptiest fold: sizes 5 / 5 / 4 here
    assert sorted(np.bincount(folds).tolist()) == [4, 5, 5]
    with pytest.raises(ValueError, match="2 group"):
        group_folds(["a", "a", "b"], 3, seed=0)


def test_cross_validation_with_groups_holds_out_whole_groups():
    from segstruct.toy import chain_problem
    X, Y = chain_problem(n_graphs=9)
    groups = ["s1"] * 3 + ["s2"] * 3 + ["s3"] * 3
    C, curve = select_C(lambda: estimator_for("bl1"), X, Y, grid=(0.1, 1.0), folds=3,
                        groups=groups)
    assert curve["fold_of_image"][:3] == [curve["fold_of_image"][0]] * 3
    assert len(set(curve["fold_of_image"])) == 3
    assert [len(set(curve["fold_of_image"][k:k + 3])) for k in (0, 3, 6)] == [1, 1, 1]
    with pytest.raises(ValueError, match="group labels for"):
        select_C(lambda: estimator_for("bl1"), X, Y, grid=(0.1, 1.0), folds=3, groups=groups[:4])


def _as_superpixel_graphs(X, side=400):
    """The chain problem's graphs as ``SuperpixelGraph``s, each with a
    superpixel map of side x side int32 (640 KB) beside its small features."""
    from segstruct.features.per_image import SuperpixelGraph
    out = []
    for k, x in enumerate(X):
        segments = np.repeat(np.arange(x.unary.shape[0], dtype=np.int32),
                             -(-side * side // x.unary.shape[0]))[:side * side]
        out.append(SuperpixelGraph(f"img{k}", segments.reshape(side, side), x.edges,
                                   np.ones(len(x.edges)), x.unary, x.pairwise))
    return out


def test_fold_tasks_send_the_features_without_the_superpixel_maps(monkeypatch):
    # a fold is pickled whole to its worker: the superpixel maps, which no fit
    # reads, stay behind, and the curve is the one of the full graphs in process
    import pickle
    from segstruct.learn.selection import cross_validation
    X, Y = chain_problem(3, n_images=9)
    graphs = _as_superpixel_graphs(X)
    sizes, real_map = [], cross_validation.parallel_map

    def pickling(func, arg_lists, *args, **kwargs):
        sizes.extend(len(pickle.dumps(a)) for a in arg_lists)
        return real_map(func, arg_lists, *args, **kwargs)
    monkeypatch.setattr(cross_validation, "parallel_map", pickling)
    make = functools.partial(estimator_for, "bl1")
    on_workers = cross_validate_C(make, graphs, Y, [0.1, 1.0], folds=3, n_jobs=2)
    in_process = cross_validate_C(make, graphs, Y, [0.1, 1.0], folds=3, n_jobs=1)
    assert _without_times(on_workers) == _without_times(in_process)
    plain = cross_validate_C(make, X, Y, [0.1, 1.0], folds=3, n_jobs=1)
    assert _without_times(in_process) == _without_times(plain)
    one_map = graphs[0].working_segments.nbytes
    assert len(sizes) == 3 and max(sizes) < one_map, (sizes, one_map)


def test_a_fold_fit_on_bad_features_names_the_image():
    X, Y = chain_problem(3, n_images=6)
    graphs = _as_superpixel_graphs(X, side=20)
    graphs[4].unary = graphs[4].unary.copy()
    graphs[4].unary[2, 1] = np.nan
    from segstruct.learn.selection import CrossValidationError
    with pytest.raises(CrossValidationError, match=r"\(img4\) has non-finite unary"):
        cross_validate_C(functools.partial(estimator_for, "bl1"), graphs, Y, [0.1, 1.0], folds=2)


def test_folds_on_every_core_are_bounded_by_the_memory(monkeypatch):
    # each busy worker holds one fold: where their memory would not fit,
    # fewer workers (here one: this process) with a warning, the same curve
    from segstruct import cluster
    from segstruct.learn.selection import cross_validation
    X, Y = chain_problem(3, n_images=9)
    make = functools.partial(estimator_for, "bl1")
    given, real_map = [], cross_validation.parallel_map

    def recording(func, arg_lists, n_jobs, *args, **kwargs):
        given.append(n_jobs)
        return real_map(func, arg_lists, 1, *args, **kwargs)
    monkeypatch.setattr(cross_validation, "parallel_map", recording)
    monkeypatch.setattr(cluster, "cpu_count", lambda: 8)
    fold_worker = cross_validation._worker_bytes([(make, X, Y, None)])
    assert fold_worker > cross_validation.WORKER_BASE_BYTES
    monkeypatch.setattr(cluster, "available_memory", lambda: 2.5 * fold_worker)
    with pytest.warns(RuntimeWarning, match="cross-validation of C: 2 worker processes "
                                            "instead of 3"):
        bounded = cross_validate_C(make, X, Y, [0.1, 1.0], folds=3, n_jobs=-1)
    monkeypatch.setattr(cluster, "available_memory", lambda: 100 * fold_worker)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        free = cross_validate_C(make, X, Y, [0.1, 1.0], folds=3, n_jobs=-1)
        given_two = cross_validate_C(make, X, Y, [0.1, 1.0], folds=3, n_jobs=2)
    assert given == [2, -1, 2]
    assert _without_times(bounded) == _without_times(free) == _without_times(given_two)
    assert cross_validate_many([], [0.1, 1.0], n_jobs=-1) == []     # nothing to bound
