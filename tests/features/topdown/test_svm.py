import numpy as np
from scipy.optimize import minimize

from segstruct.features.topdown.svm import squared_hinge_objective, train_linear_svm


def separable(seed=0, n=60, d=5):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    X = rng.normal(size=(n, d))
    y = np.sign(X @ w)
    X += 0.5 * y[:, None] * w / np.linalg.norm(w)     # a clear margin
    return np.column_stack([X, np.ones(n)]), y


def test_separable_set_reaches_zero_training_loss():
    X, y = separable()
    # The squared hinge keeps slacks of order 1/C at the optimum, so the
    # hinge loss reaches zero (to 1e-3) as C grows; no training error at all.
    w = train_linear_svm(X, y, C=1e5, tol=1e-12)
    assert np.all(y * (X @ w) >= 1 - 1e-3)
    assert np.all(np.sign(X @ w) == y)
    assert np.sum(np.maximum(0, 1 - y * (X @ w))) <= 1e-2


def test_objective_matches_a_generic_minimiser():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 6))
    y = np.where(rng.random(80) < 0.5, -1.0, 1.0)          # not separable
    C = 0.3
    w = train_linear_svm(X, y, C=C, tol=1e-12)
    ref = minimize(lambda v: 0.5 * v @ v + C * np.sum(np.maximum(0, 1 - y * (X @ v)) ** 2),
                   np.zeros(6), method="BFGS", options={"gtol": 1e-10})
    f, _ = squared_hinge_objective(w, X, y, C)
    assert abs(f - ref.fun) <= 1e-7 * max(1, abs(ref.fun))
    np.testing.assert_allclose(w, ref.x, atol=1e-4)


def test_gradient_is_the_objectives():
    rng = np.random.default_rng(2)
    X, y, w = rng.normal(size=(30, 4)), np.sign(rng.normal(size=30)), rng.normal(size=4)
    _, g = squared_hinge_objective(w, X, y, 0.7)
    eps = 1e-6
    num = [(squared_hinge_objective(w + eps * e, X, y, 0.7)[0]
            - squared_hinge_objective(w - eps * e, X, y, 0.7)[0]) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)


def test_lower_bounds_hold_and_sklearn_agrees_on_the_unbounded_problem():
    X, y = separable(3)
    lo = np.full(X.shape[1], -np.inf)
    lo[0] = 0.5
    w = train_linear_svm(X, y, C=1.0, lower_bounds=lo)
    assert w[0] >= 0.5 - 1e-12
    from sklearn.svm import LinearSVC
    # LinearSVC's intercept is regularised too when fit_intercept=False and a
    # ones column is given, which is our problem exactly
    ref = LinearSVC(C=0.5, loss="squared_hinge", fit_intercept=False, tol=1e-10,
                    max_iter=100000).fit(X, y)
    ours = train_linear_svm(X, y, C=0.5, tol=1e-12)
    np.testing.assert_allclose(ours, ref.coef_[0], atol=1e-3)
