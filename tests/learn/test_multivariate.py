"""MultivariateSVM (SVM-perf in Python) against the QP with every constraint written out."""
import itertools

import numpy as np
import pytest

from segstruct import MultivariateSVM
from segstruct.learn.solvers.qp import WorkingSetQP


# References written from the table of docs/design.md ("Counts and losses"),
# independent of segstruct.inference.losses.
def f_beta_loss(beta):
    def loss(fp, fn, n_pos, n_neg):
        b2 = beta ** 2
        den = (1 + b2) * (n_pos - fn) + b2 * fn + fp
        return 0.0 if den == 0 else (b2 * fn + fp) / den
    return loss


def iou_loss(fp, fn, n_pos, n_neg):
    return 0.0 if n_pos + fp == 0 else (fp + fn) / (n_pos + fp)


REFERENCE_LOSSES = {"f1": f_beta_loss(1.0), "iou": iou_loss}


def design(X, intercept):
    return np.hstack([X, np.ones((len(X), 1))]) if intercept else X


def all_constraints(X, y, loss, intercept):
    """(g, Delta) for every labelling y': g = Psi(y) - Psi(y'), Psi(y) = sum (2y-1) x."""
    Z = design(X, intercept)
    psi_true = (2.0 * y - 1.0) @ Z
    n_pos, n_neg = float(y.sum()), float((1 - y).sum())
    for bits in itertools.product([0, 1], repeat=len(y)):
        yp = np.array(bits, float)
        fp, fn = float(((1 - y) * yp).sum()), float((y * (1 - yp)).sum())
        yield psi_true - (2.0 * yp - 1.0) @ Z, loss(fp, fn, n_pos, n_neg)


def full_qp(X, y, loss, C, intercept):
    """The 1-slack QP with all 2^n constraints, one group capped at C, no bounds."""
    dim = X.shape[1] + int(intercept)
    qp = WorkingSetQP(dim, [C], ())
    for g, delta in all_constraints(X, y, loss, intercept):
        qp.add(g, delta, 0)
    return qp.solve()


def primal_by_enumeration(X, y, loss, C, intercept, w):
    slack = max(delta - g @ w for g, delta in all_constraints(X, y, loss, intercept))
    return 0.5 * w @ w + C * max(0.0, slack)


def tiny_problem(seed, n):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X @ np.array([1.0, -0.5]) + 0.8 * rng.normal(size=n) > 0.3).astype(int)
    y[0], y[1] = 1, 0  # both classes present
    return X, y


def weights(model):
    return np.append(model.coef_, model.intercept_) if model.fit_intercept else model.coef_


CASES = [(seed, n, C) for seed, n, C in [(0, 8, 1.0), (1, 6, 10.0), (2, 7, 0.3)]]


@pytest.mark.parametrize("loss", ["f1", "iou"])
@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("seed,n,C", CASES)
def test_objective_equals_full_qp(loss, intercept, seed, n, C):
    X, y = tiny_problem(seed, n)
    model = MultivariateSVM(loss=loss, C=C, fit_intercept=intercept, tol=1e-9).fit(X, y)
    ref = full_qp(X, y, REFERENCE_LOSSES[loss], C, intercept)
    assert ref.primal - ref.dual <= 1e-7 * max(1.0, ref.primal)
    assert model.objective_ == pytest.approx(ref.primal, rel=1e-5)
    # objective_ is a true primal value, so never below the optimum's lower bound.
    assert model.objective_ >= ref.dual - 1e-9 * max(1.0, abs(ref.dual))
    # The optimum w is unique (strictly convex in w).
    np.testing.assert_allclose(weights(model), ref.w, atol=2e-3)
    if not intercept:
        assert model.intercept_ == 0.0


@pytest.mark.parametrize("loss", ["f1", "iou"])
def test_tiny_objectives_are_not_accepted_early(loss):
    """Features x s and C / s^2 give the same model (no intercept, whose
    feature is not scaled) with objective / s^2.

    With s = 1e4 the objective is ~1e-9, the scale of SVM-perf's C mapping at
    n = 20,000: a QP gap test with an absolute floor took any answer there as
    solved, and training stopped at 2.5 % from the optimum.
    """
    X, y = tiny_problem(0, 8)
    s = 1e4
    ref = full_qp(X, y, REFERENCE_LOSSES[loss], 1.0, False)
    model = MultivariateSVM(loss=loss, C=1.0 / s ** 2, tol=1e-7,
                            fit_intercept=False).fit(X * s, y)
    assert model.objective_ * s ** 2 == pytest.approx(ref.primal, rel=1e-4)
    np.testing.assert_allclose(model.coef_ * s, ref.w, atol=2e-3)


def test_fbeta_uses_beta():
    X, y = tiny_problem(4, 7)
    model = MultivariateSVM(loss="fbeta", beta=2.0, C=2.0, tol=1e-9).fit(X, y)
    ref = full_qp(X, y, f_beta_loss(2.0), 2.0, True)
    assert model.objective_ == pytest.approx(ref.primal, rel=1e-5)
    assert model.loss_.beta == 2.0


@pytest.mark.parametrize("loss", ["f1", "iou", "hamming"])
def test_objective_is_exact_at_returned_weights(loss):
    """objective_ is recomputed at w, even when training stops early."""
    X, y = tiny_problem(5, 8)
    reference = REFERENCE_LOSSES.get(loss, lambda fp, fn, P, N: fp + fn)
    for max_iter in (1, 2, 50):
        with pytest.warns(RuntimeWarning) if max_iter < 3 else _no_warning():
            model = MultivariateSVM(loss=loss, C=3.0, tol=1e-9, max_iter=max_iter).fit(X, y)
        w = weights(model)
        expected = primal_by_enumeration(X, y, reference, 3.0, True, w)
        assert model.objective_ == pytest.approx(expected, rel=1e-12, abs=1e-12)


class _no_warning:
    def __enter__(self):
        import warnings
        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.simplefilter("error", RuntimeWarning)

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


def test_error_rate_loss_is_a_hinge_svm():
    """With Delta = errors / n the slack is sum_i max(0, 1/n - 2 s_i w.z_i),
    s_i = +-1: the identity behind the documented SVM-perf / SVM-light scaling."""
    X, y = tiny_problem(6, 8)
    n = len(y)
    model = MultivariateSVM(loss=lambda fp, fn, P, N: (fp + fn) / n, C=4.0, tol=1e-9).fit(X, y)
    w = weights(model)
    s = 2.0 * y - 1.0
    hinge = np.maximum(0.0, 1.0 / n - 2.0 * s * (design(X, True) @ w)).sum()
    assert model.objective_ == pytest.approx(0.5 * w @ w + 4.0 * hinge, rel=1e-12)


def test_shapes():
    X, y = tiny_problem(7, 8)
    model = MultivariateSVM().fit(X, y)
    X_new = np.random.default_rng(0).normal(size=(5, 2))
    assert model.coef_.shape == (2,)
    assert isinstance(model.intercept_, float)
    assert model.decision_function(X_new).shape == (5,)
    pred = model.predict(X_new)
    assert pred.shape == (5,) and set(np.unique(pred)) <= {0, 1}
    np.testing.assert_array_equal(pred, (X_new @ model.coef_ + model.intercept_ > 0).astype(int))
    assert model.n_iter_ >= 1 and model.n_features_in_ == 2


@pytest.mark.parametrize("loss", ["f1", "iou"])
def test_separable_data_is_learnt_perfectly(loss):
    rng = np.random.default_rng(8)
    y = np.repeat([0, 1], 20)
    X = rng.normal(scale=0.4, size=(40, 2)) + np.where(y[:, None] == 1, [2.0, 1.0], [-1.0, -2.0])
    model = MultivariateSVM(loss=loss, C=100.0).fit(X, y)
    pred = model.predict(X)
    tp = int(np.sum(pred * y))
    f1 = 2 * tp / (pred.sum() + y.sum())
    assert f1 == 1.0


def test_init_only_stores_parameters():
    model = MultivariateSVM(loss="no-such-loss", C=-1.0, max_iter=0)
    assert model.get_params() == {"loss": "no-such-loss", "C": -1.0, "fit_intercept": True,
                                  "beta": 1.0, "tol": 1e-4, "max_iter": 0}
    assert not hasattr(model, "coef_")


def test_input_validation():
    X, y = tiny_problem(9, 6)
    with pytest.raises(ValueError, match="2-D"):
        MultivariateSVM().fit(X[:, 0], y)
    with pytest.raises(ValueError, match="shape"):
        MultivariateSVM().fit(X, y[:-1])
    # any two labels are classes (tests/learn/test_sklearn.py); three are not
    with pytest.raises(ValueError, match="Only binary"):
        MultivariateSVM().fit(X, np.arange(6) % 3)
    with pytest.raises(ValueError, match="finite"):
        MultivariateSVM().fit(np.where(X > 1, np.nan, X), y)
    with pytest.raises(ValueError, match="no samples"):
        MultivariateSVM().fit(np.zeros((0, 2)), np.zeros(0))
    with pytest.raises(ValueError, match="C must be"):
        MultivariateSVM(C=0.0).fit(X, y)
    with pytest.raises(ValueError, match="unknown loss"):
        MultivariateSVM(loss="no-such-loss").fit(X, y)
    for loss in ("f1", "iou", "fbeta"):
        for labels in (np.ones(6, int), np.zeros(6, int)):
            with pytest.raises(ValueError, match="one positive and one negative"):
                MultivariateSVM(loss=loss).fit(X, labels)
    # A decomposable loss is fine with one class.
    MultivariateSVM(loss="hamming").fit(X, np.ones(6, int))
    with pytest.raises(RuntimeError, match="not fitted"):
        MultivariateSVM().predict(X)
    model = MultivariateSVM().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.decision_function(np.zeros((3, 3)))


def test_w_zero_is_an_optimum_it_says_so():
    """Labels independent of the features, a small C: the exact optimum is
    w = 0 (checked against the primal at w = 0 and at the learnt w), and fit
    warns instead of returning it without a word."""
    import warnings

    from segstruct.learn.estimators.multivariate_svm import MultivariateSVM
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = (rng.random(200) < 0.3).astype(int)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        svm = MultivariateSVM(loss="f1", C=1e-4).fit(X, y)
    assert not np.any(svm.coef_) and svm.intercept_ == 0.0 and svm.converged_
    # at w = 0 the hinge is the largest F1 loss, 1: the objective is C
    assert svm.objective_ == pytest.approx(1e-4)
    assert any("optimum at C=0.0001 is w = 0: every point gets label 0" in str(w.message)
               for w in caught)
    # labels the features explain: weights, and no such warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = MultivariateSVM(loss="f1", C=10.0).fit(X, (X[:, 0] > 0.5).astype(int))
    assert np.any(fitted.coef_) and not any("is w = 0" in str(w.message) for w in caught)
