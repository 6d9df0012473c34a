"""A model that predicts no foreground, and a run stopped before convergence,
are named in the learner's diagnosis and by train / compare."""
import json

import numpy as np
import pytest

from segstruct.cli import main, show_progress
from segstruct.evaluate.diagnosis import diagnose, foreground_share
from segstruct.inference import bl2
from segstruct.learn.estimators.structured_svm import StructuredSVM
from segstruct.feature_map import Graph

# the top-down block (on by default) costs a detector per class; these tests are
# about other things (the top-down ones switch it on)
SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]


def separable(rng, n_graphs=4, n=8):
    X, Y = [], []
    for _ in range(n_graphs):
        y = (rng.random(n) < 0.5).astype(np.uint8)
        y[0] = 1
        edges = np.array([(i, i + 1) for i in range(n - 1)], np.int64)
        unary = np.c_[2.0 * y - 1 + 0.1 * rng.normal(size=n), np.ones(n)]
        X.append(Graph(unary, edges, rng.random((n - 1, 2))))
        Y.append(np.c_[10 * y, 10 * (1 - y)])          # pixel counts
    return X, Y


def test_foreground_share_weighs_pixels():
    y = [np.array([1, 0]), np.array([0])]
    counts = [np.array([[3, 1], [0, 2]]), np.array([[0, 4]])]
    assert foreground_share(y, counts) == pytest.approx(4 / 10)
    assert foreground_share([np.array([1, 0])], [np.array([1, 0])]) == 0.5


def test_a_healthy_converged_model_has_no_warning():
    X, Y = separable(np.random.default_rng(0))
    report = diagnose(StructuredSVM(loss="hamming", C=10.0).fit(X, Y), X, Y)
    assert report["collapse"] is None and report["converged"]
    assert report["warnings"] == []
    assert 0 < report["foreground_share"] < 1


def test_collapse_and_its_cause_are_named():
    X, Y = separable(np.random.default_rng(1))
    est = StructuredSVM(loss="iou", C=1.0, pairwise=False, oracle=bl2).fit(X, Y)
    assert diagnose(est, X, Y)["collapse"] is None
    # weights of a model that learnt nothing, or only the bias
    for w, collapse, cause in [([0.0, 0.0], "no foreground", "weights are all 0"),
                               ([0.0, -1.0], "no foreground", "try a larger C"),
                               ([0.0, 1.0], "all foreground", "try a larger C")]:
        est.w_ = np.array(w)
        report = diagnose(est, X, Y)
        assert report["collapse"] == collapse
        assert report["foreground_share"] == (1.0 if collapse == "all foreground" else 0.0)
        text = " ".join(report["warnings"])
        assert f"predicts {collapse} on its own training set" in text and cause in text


def test_an_unconverged_run_says_how_far_it_is():
    X, Y = separable(np.random.default_rng(2))
    est = StructuredSVM(loss="hamming", C=100.0, max_iter=2).fit(X, Y)
    assert not est.converged_
    report = diagnose(est, X, Y)
    text = " ".join(report["warnings"])
    assert "not converged: stopped at max_iter 2" in text
    assert f"a gap of {est.gap_:.3g}" in text
    assert report["relative_gap"] == pytest.approx(est.gap_ / est.primal_)
    # a solver that stops early, short of max_iter, is not told to raise it
    est.max_iter = 10
    text = " ".join(diagnose(est, X, Y)["warnings"])
    assert "stopped making progress after 2 iterations" in text
    assert "raise max_iter" not in text


@pytest.mark.slow
def test_train_warns_and_records_the_collapse(data_root, tmp_path, capsys):
    model = tmp_path / "car_bl2"
    assert main(["train", "--data", str(data_root), "--class", "car", "--method", "bl2",
                 "--C", "1e-12", "--out", str(model), "--cache", str(tmp_path / "c"),
                 *SMALL]) == 0
    err = capsys.readouterr().err
    assert "warning: the model predicts no foreground on its own training set" in err
    doc = json.loads((tmp_path / "car_bl2.json").read_text())
    assert doc["diagnosis"]["collapse"] == "no foreground"


@pytest.mark.slow
def test_progress_unless_q_and_no_bar_in_a_log(data_root, tmp_path, capsys):
    from segstruct.cli import build_parser
    parse = build_parser().parse_args
    assert show_progress(parse(["features", "--data", str(data_root)]))
    assert not show_progress(parse(["features", "--data", str(data_root), "-q"]))
    assert show_progress(parse(["features", "--data", str(data_root), "--progress"]))
    with pytest.raises(SystemExit):
        parse(["features", "--data", str(data_root), "--progress", "-q"])
    # a whole training run writes plain lines, not a redrawn bar, into a
    # non-terminal stderr (pytest's): small, and no carriage returns
    assert main(["train", "--data", str(data_root), "--class", "car", "--C", "1", "--out",
                 str(tmp_path / "m"), "--cache", str(tmp_path / "c"),
                 *[a for a in SMALL if a != "-q"]]) == 0
    err = capsys.readouterr().err
    assert "cutting planes: " in err and "\r" not in err and "img/s" not in err
    assert len(err) < 4000


def test_over_fitting_is_a_gap_of_stated_points_whatever_the_ratio():
    from segstruct.evaluate.diagnosis import generalisation
    # the unseen set's collapse: 75 % on its training images, 10 % on val
    warning = generalisation(75.2, 10.1, {"top_down": True, "top_down_folds": 1})
    assert "65.1 points above" in warning and "--top-down-folds 3" in warning
    assert "--C auto" in warning
    cross_fitted = generalisation(75.2, 10.1, {"top_down": True, "top_down_folds": 3})
    assert "--no-top-down" in cross_fitted and "--top-down-folds" not in cross_fitted
    assert "top-down" not in generalisation(75.2, 10.1)
    # the points decide, not the ratio: 90.4 on train against 60.8 on val is
    # 1.49 times, and over-fitting all the same
    from segstruct.evaluate.diagnosis import OVERFIT_POINTS
    assert "29.6 points above" in generalisation(90.4, 60.8)
    assert f"threshold: {OVERFIT_POINTS:g} points" in generalisation(90.4, 60.8)
    assert generalisation(38.9, 38.9 - OVERFIT_POINTS) is not None     # at the threshold
    assert generalisation(48.6, 48.6 - OVERFIT_POINTS + 0.1) is None   # just inside it
    assert generalisation(11.0, 2.0) is None         # 5.5 times, but 9 points
    assert generalisation(None, 10.0) is None and generalisation(50.0, None) is None
    # the advice on C names the model's C, and whether cross-validation chose it
    fixed = generalisation(75.2, 10.1, {"C": 1.0, "C_auto": False})
    assert "a C below 1 (--C 0.1), or --C auto" in fixed
    chosen = generalisation(75.2, 10.1, {"C": 3.0, "C_auto": True})
    assert "below the cross-validated 3 (--C 0.3)" in chosen and "--C auto" not in chosen
