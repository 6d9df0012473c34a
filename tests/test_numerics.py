"""Numerical faults: degenerate losses, huge C, badly scaled features, ties.

Each must train to the end with finite weights and a finite, logged gap, or
stop with a message saying why (documented in the README's reliability
section).
"""
import json

import numpy as np
import pytest

from segstruct.inference import maximize
from segstruct.learn.methods import make_oracle
from segstruct.learn.estimators.structured_svm import StructuredSVM
from segstruct.feature_map import Graph


def graphs(seed, n_graphs=4, n=6, du=3, all_background=(), scale=None):
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for k in range(n_graphs):
        t = (rng.random(n) < 0.5).astype(np.uint8)
        if k in all_background:
            t[:] = 0
        elif t.sum() == 0:
            t[0] = 1
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5]
        edges = np.array(pairs, np.int64).reshape(-1, 2)
        unary = rng.normal(size=(n, du)) + 0.5 * (2.0 * t[:, None] - 1)
        if scale is not None:
            unary = unary * scale
        X.append(Graph(unary, edges, rng.uniform(0, 1, (len(edges), 2))))
        Y.append(t)
    return X, Y


def assert_sane(svm):
    assert np.all(np.isfinite(svm.w_))
    if svm.pairwise:
        assert np.all(svm.w_[-2:] <= 0)                    # pairwise block stays <= 0
    for entry in svm.log_:
        for key in ("primal", "dual", "gap", "max_violation"):
            assert np.isfinite(entry[key]), (key, entry)
    assert svm.gap_ >= -1e-6 * max(1.0, abs(svm.primal_))
    json.dumps(svm.log_)                                   # loggable, no NaN objects


@pytest.mark.parametrize("method", ["bl2", "proposed", "exact"])
def test_images_without_foreground_in_the_per_image_scope(method):
    # Np = 0 images: IoU is 0 with no false positive and 1 with any
    X, Y = graphs(1, all_background=(0, 2))
    oracle = make_oracle({"proposed": "proposed", "exact": "exact", "bl2": "bl2"}[method],
                         n_triangles=6)
    svm = StructuredSVM(loss="iou", scope="image", solver="nslack", C=10.0, tol=1e-4,
                        oracle=oracle, pairwise=method != "bl2",
                        max_iter=100).fit(X, Y)
    assert_sane(svm)
    assert svm.converged_


def test_all_background_training_set():
    X, Y = graphs(2, all_background=range(4))
    # adjusted Hamming needs a foreground/background ratio: refused with the reason
    with pytest.raises(ValueError, match="0 foreground"):
        StructuredSVM(loss="adjusted_hamming").fit(X, Y)
    # IoU over an all-background set is defined (a step at FP = 0): trains, and
    # predicting no foreground anywhere costs nothing
    svm = StructuredSVM(loss="iou", scope="dataset", oracle=make_oracle("exact"),
                        C=1.0).fit(X, Y)
    assert_sane(svm)
    assert all(not y.any() for y in svm.predict(X))


@pytest.mark.parametrize("C", [1e6, 1e9])
def test_huge_C(C):
    X, Y = graphs(3)
    svm = StructuredSVM(loss="hamming", scope="image", C=C, tol=1e-3, max_iter=150).fit(X, Y)
    assert_sane(svm)
    # a huge C asks for zero training loss when it is reachable; the
    # certificate stays valid whatever happens
    assert svm.primal_ >= svm.dual_ - 1e-6 * abs(svm.primal_)


def test_features_on_very_different_scales():
    scale = np.array([1e-4, 1.0, 1e4])
    X, Y = graphs(4, scale=scale)
    svm = StructuredSVM(loss="adjusted_hamming", scope="dataset", C=1.0, tol=1e-3,
                        max_iter=300).fit(X, Y)
    assert_sane(svm)
    # the certificate holds: the reported objective is that of the returned w
    scaled_log = svm.log_
    assert min(e["primal"] for e in scaled_log) == pytest.approx(svm.primal_)


def test_all_tied_potentials_give_a_valid_labelling_and_training_starts():
    # at w = 0 every potential is 0: the first oracle call is all ties
    n = 5
    labels, value = maximize(np.zeros(n), np.array([[0, 1], [1, 2]]), np.zeros(2))
    assert labels.shape == (n,) and set(np.unique(labels)) <= {0, 1} and value == 0.0
    X = [Graph(np.ones((n, 2)), np.array([[0, 1], [1, 2]]), np.zeros((2, 1)))] * 3
    Y = [np.array([1, 0, 1, 0, 0], np.uint8)] * 3
    # identical features for positives and negatives: nothing separates them
    svm = StructuredSVM(loss="hamming", scope="image", C=1.0).fit(X, Y)
    assert_sane(svm)
    assert svm.converged_


def test_same_data_and_settings_give_the_same_model():
    X, Y = graphs(5)
    a = StructuredSVM(loss="iou", oracle=make_oracle("proposed", n_triangles=6),
                      C=2.0).fit(X, Y)
    b = StructuredSVM(loss="iou", oracle=make_oracle("proposed", n_triangles=6),
                      C=2.0).fit(X, Y)
    assert np.array_equal(a.w_, b.w_) and a.n_iter_ == b.n_iter_


@pytest.mark.parametrize("name", ["unary", "pairwise"])
def test_non_finite_features_are_refused_with_the_input_named(name):
    X, Y = graphs(8)
    bad = getattr(X[2], name).copy()
    bad[0, 0] = np.nan
    X[2] = Graph(**{**{k: getattr(X[2], k) for k in ("unary", "edges", "pairwise")},
                    name: bad})
    with pytest.raises(ValueError, match=rf"X\[2\] .*non-finite {name}"):
        StructuredSVM().fit(X, Y)
