"""LovaszSVM, the lovasz method: the Lovász hinge's unary weights in an MRF
estimator, its pairwise choice, and its place among the methods."""
import json

import numpy as np
import pytest

from segstruct.io.checkpoint import CheckpointError
from segstruct.learn.estimators.base import BaseSSVM
from segstruct.learn.callbacks import Checkpoint, JSONLog, ProgressBar
from segstruct.learn.solvers.lovasz_hinge import fit_cutting_plane, fit_sgd
from segstruct.learn.estimators.lovasz_svm import LovaszSVM
from segstruct.learn.methods import METHODS, estimator_for
from segstruct.learn.estimators.structured_svm import StructuredSVM
from segstruct.feature_map import Graph, MRFModel


def separable_graphs(seed, n_graphs=5, n=12):
    """Chains whose first unary feature is 2t - 1 plus small noise (a bias column
    besides), with random non-negative pairwise features."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n_graphs):
        t = (rng.random(n) < 0.4).astype(np.int64)
        t[0] = 1
        unary = np.column_stack([(2 * t - 1) + 0.3 * rng.uniform(-1, 1, n),
                                 rng.normal(size=n), np.ones(n)])
        edges = np.array([(i, i + 1) for i in range(n - 1)])
        X.append(Graph(unary, edges, rng.uniform(0, 1, (n - 1, 3))))
        Y.append(t)
    return X, Y


def noisy_chains(seed, n_graphs=6, n=30, noise=1.5):
    """Chains with one run of foreground each and very noisy unaries: unaries
    alone mislabel many nodes, smoothing along the chain repairs them."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n_graphs):
        t = np.zeros(n, np.int64)
        start = rng.integers(0, n // 2)
        t[start:start + n // 3] = 1
        unary = np.column_stack([(2 * t - 1) + noise * rng.normal(size=n), np.ones(n)])
        edges = np.array([(i, i + 1) for i in range(n - 1)])
        X.append(Graph(unary, edges, np.ones((n - 1, 3))))
        Y.append(t)
    return X, Y


@pytest.mark.parametrize("scope", ["dataset", "image"])
@pytest.mark.parametrize("pairwise", [True, False])
def test_separable_problem_reaches_zero_training_loss(scope, pairwise):
    X, Y = separable_graphs(0)
    est = LovaszSVM(C=50.0, scope=scope, pairwise=pairwise).fit(X, Y)
    assert est.converged_ and est.score(X, Y) == 1.0
    for y_hat, t in zip(est.predict(X), Y):
        np.testing.assert_array_equal(y_hat, t)
    assert est.w_.shape == (3 + 3 * pairwise,) and np.all(est.w_[3:] <= 0)
    assert (est.pairwise_selection_ is None) == (not pairwise)


def test_unary_weights_are_the_hinge_optimum_and_attributes_describe_it():
    X, Y = separable_graphs(1)
    # the published hinge, in the paper's units (its C = 4: an objective weight of 2)
    est = LovaszSVM(C=4.0, C_units="paper", tol=1e-4, margin_scale="unit").fit(X, Y)
    assert est.svm_C_ == 2.0 and est.superpixel_loss_ is None
    fit = fit_cutting_plane([x.unary for x in X], Y, C=2.0, tol=2.0 * 1e-4)
    np.testing.assert_array_equal(est.w_[:3], fit.w)
    assert (est.primal_, est.dual_, est.n_iter_) == (fit.objective, fit.lower_bound, fit.n_iter)
    assert est.gap_ == pytest.approx(fit.objective - fit.lower_bound)
    assert est.gap_ <= 2.0 * 1e-4
    assert len(est.log_) == est.n_iter_
    assert [e["primal"] for e in est.log_] == fit.history
    assert est.log_[-1]["dual"] == est.dual_


@pytest.mark.parametrize("scope", ["dataset", "image"])
def test_foreground_margin_scale_is_the_hinge_of_scaled_scores(scope):
    X, Y = separable_graphs(5)
    Y[1] = np.zeros_like(Y[1])                   # an image without foreground
    counts = [float(np.sum(t)) for t in Y]
    scales = LovaszSVM(scope=scope).margin_scales(Y, [np.ones(t.size) for t in Y])
    expected = [sum(counts)] * len(Y) if scope == "dataset" else \
        [c if c > 0 else 1.0 for c in counts]
    assert scales == expected
    # area weights: the foreground weight in units of the mean node weight
    areas = [np.full(t.size, 7.0) for t in Y]
    assert LovaszSVM(scope=scope).margin_scales(Y, areas) == expected
    assert LovaszSVM(margin_scale="unit").margin_scales(Y, areas) == [1.0] * len(Y)
    est = LovaszSVM(C=2.0, scope=scope, tol=1e-4, pairwise=False).fit(X, Y)
    # superpixel units: the C of the IoU SSVMs (svm_C), which the hinge's scale matches
    n = 1 if scope == "dataset" else len(Y)
    assert est.svm_C_ == pytest.approx(2.0 * n * n / sum(counts))
    fit = fit_cutting_plane([s * x.unary for s, x in zip(scales, X)], Y, C=est.svm_C_,
                            scope=scope, tol=est.svm_C_ * 1e-4)
    np.testing.assert_array_equal(est.w_, fit.w)
    assert est.primal_ == fit.objective


def test_foreground_margin_scale_is_the_unit_margin_at_C_times_s_squared():
    """The hinge is positively homogeneous: scaling the scores by s is the
    published (unit-margin) hinge at C s^2, with weights s times larger."""
    X, Y = separable_graphs(6)
    s = float(sum(np.sum(t) for t in Y))          # data-set scope, count weights
    scaled = LovaszSVM(C=0.01, C_units="paper", pairwise=False, tol=1e-6).fit(X, Y)
    unit = LovaszSVM(C=0.01 * s ** 2, C_units="paper", pairwise=False, tol=1e-6,
                     margin_scale="unit").fit(X, Y)
    np.testing.assert_allclose(unit.w_, s * scaled.w_, rtol=1e-3, atol=1e-6)
    assert unit.primal_ == pytest.approx(s ** 2 * scaled.primal_, rel=1e-4)


@pytest.mark.parametrize("scope", ["dataset", "image"])
def test_convergence_means_a_gap_of_at_most_C_tol_in_objective_units(scope):
    """As for the SVMs: an absolute gap, however large the objective."""
    rng = np.random.default_rng(0)
    X, Y = [], []
    for _ in range(10):                         # overlapping classes in 8 dimensions
        t = (rng.random(40) < 0.3).astype(np.int64)
        unary = np.column_stack([0.5 * (2 * t - 1)[:, None] + rng.normal(size=(40, 8)),
                                 np.ones(40)])
        X.append(Graph(unary, np.array([(i, i + 1) for i in range(39)]), np.ones((39, 1))))
        Y.append(t)
    est = LovaszSVM(C=100.0, C_units="paper", scope=scope, margin_scale="unit",
                    pairwise=False).fit(X, Y)
    # F is about 20 here: a gap relative to F (1 of 20) would stop far earlier
    assert est.primal_ > 10.0
    assert est.converged_ and 0 <= est.gap_ <= 50.0 * 1e-3


def test_pairwise_strength_is_the_best_on_the_training_split():
    X, Y = noisy_chains(0)
    est = LovaszSVM(C=5.0).fit(X, Y)
    sel = est.pairwise_selection_
    assert sel["ratios"] == list(LovaszSVM.PAIRWISE_RATIOS)
    best = int(np.argmax(sel["train_iou"]))
    assert sel["ratio"] == sel["ratios"][best] > 0       # smoothing helps here
    assert sel["train_iou"][best] > sel["train_iou"][0] + 0.05
    np.testing.assert_array_equal(est.w_[2:], -sel["scale"])
    assert est.score(X, Y) == pytest.approx(sel["train_iou"][best])
    # the strength is relative: at ratio 1 an average node's edges cost its
    # average |unary| (every pairwise feature is 1 here)
    u = np.concatenate([x.unary @ est.w_[:2] for x in X])
    degree_sum = 2 * sum(3.0 * len(x.edges) for x in X) / u.size
    unit = sel["scales"][sel["ratios"].index(1.0)]
    assert unit * degree_sum == pytest.approx(np.mean(np.abs(u)))
    assert np.all(MRFModel().potentials(X[0], est.w_)[1] < 0)     # every edge smooths


def test_ties_go_to_the_weaker_pairwise_term():
    X, Y = separable_graphs(2)
    sel = LovaszSVM(C=50.0).fit(X, Y).pairwise_selection_
    assert sel["train_iou"][0] == 1.0 and sel["ratio"] == 0.0


def test_only_the_iou_loss_is_accepted():
    for loss in ("f1", "hamming"):
        with pytest.raises(ValueError, match="Lovász hinge of the IoU loss only"):
            LovaszSVM(loss=loss).check_params()
    with pytest.raises(ValueError, match="IoU loss only"):
        estimator_for("lovasz", loss="fbeta", beta=2.0).check_params()
    with pytest.raises(ValueError, match="scope must be one of 'image', 'dataset', got 'pixel'"):
        LovaszSVM(scope="pixel").fit(*separable_graphs(0))
    # the unit margin has no superpixel units
    with pytest.raises(ValueError, match="C_units='paper'"):
        LovaszSVM(margin_scale="unit").check_params()


def test_sgd_solver_gives_fit_sgds_weights_and_only_at_the_image_scope():
    X, Y = separable_graphs(4)
    est = LovaszSVM(C=100.0, C_units="paper", scope="image", solver="sgd", max_iter=40,
                    margin_scale="unit").fit(X, Y)
    fit = fit_sgd([x.unary for x in X], Y, C=50.0, epochs=40)
    np.testing.assert_array_equal(est.w_[:3], fit.w)
    assert (est.n_iter_, est.converged_, est.dual_) == (40, False, 0.0)
    assert est.primal_ == fit.objective and len(est.log_) == 40
    assert est.score(X, Y) == 1.0        # separable: SGD gets there too
    with pytest.raises(ValueError, match="needs the per-image loss scope"):
        LovaszSVM(solver="sgd").check_params()
    with pytest.raises(ValueError, match="cutting planes .* or SGD"):
        LovaszSVM(solver="bcfw", scope="image").check_params()


def test_method_entry_and_defaults():
    est = estimator_for("lovasz", C=0.25, scope="image", solver="oneslack", tol=1e-4)
    assert isinstance(est, LovaszSVM) and isinstance(est, BaseSSVM)
    assert (est.C, est.scope, est.tol, est.pairwise) == (0.25, "image", 1e-4, True)
    # its own SGD for "sgd", its cutting planes for any other SSVM solver
    assert estimator_for("lovasz", scope="image", solver="sgd").solver == "sgd"
    assert estimator_for("lovasz", scope="image", solver="bcfw").solver == "oneslack"
    assert LovaszSVM().scope == "dataset"
    assert METHODS["lovasz"]["loss"] is None


def test_saved_parameters_make_a_structured_svm_that_predicts_the_same():
    X, Y = noisy_chains(1)
    est = LovaszSVM(C=5.0).fit(X, Y)
    params = est.get_params(deep=False)
    del params["loss"], params["margin_scale"]
    # what load_model does with a model file's parameters
    loaded = StructuredSVM.from_weights(est.w_.copy(), est.loss_, **params)
    for a, b in zip(loaded.predict(X), est.predict(X)):
        np.testing.assert_array_equal(a, b)


def test_callbacks_see_the_run_and_resume_is_refused(tmp_path):
    X, Y = separable_graphs(3)
    ckpt, log = tmp_path / "m.ckpt.npz", tmp_path / "m.log.json"
    est = LovaszSVM().fit(X, Y, callbacks=[Checkpoint(ckpt, resume=True), JSONLog(log),
                                           ProgressBar()])
    assert not ckpt.exists()
    assert json.loads(log.read_text()) == json.loads(json.dumps(est.log_))
    ckpt.write_bytes(b"an earlier run's checkpoint")
    with pytest.raises(CheckpointError, match="cannot resume"):
        est.fit(X, Y, callbacks=[Checkpoint(ckpt, resume=True)])
