"""The projection method: the Fenchel-Young objective's gradient against
finite differences, its L-BFGS-B optimum against a generic solver (SLSQP),
and the estimator on a separable problem."""
import numpy as np
import pytest
from scipy.optimize import minimize
from types import SimpleNamespace

from segstruct.learn.solvers.fenchel_young import ProjectionProblem, fit_lbfgs
from segstruct.learn.estimators.projection_svm import ProjectionSVM


def _problem(kind, seed=0, C=5.0, **options):
    rng = np.random.default_rng(seed)
    U, P, E, T = [], [], [], []
    for _ in range(3):
        n = 7
        e = np.array([(i, i + 1) for i in range(n - 1)] + [(0, 4)])
        U.append(rng.normal(size=(n, 3)))
        P.append(rng.random((len(e), 2)))
        E.append(e)
        T.append(rng.integers(0, 2, n))
    options.setdefault("scope", "image")
    return ProjectionProblem(U, T, P, E, svm_C=C, kind=kind, **options)


@pytest.mark.parametrize("kind", ["cube", "budget", "marginal"])
def test_gradient_matches_finite_differences(kind):
    # The marginal projection is Frank-Wolfe's, exact to its tolerance only
    # (1e-6 by default): a difference quotient divides that error by h, which
    # left 2.6e-5 at h = 1e-6 (numpy 2.4 and 2.5). Projected to 1e-12 the
    # quotients match the gradient to 1e-9; the loss is piecewise quadratic,
    # so central differences are exact away from its kinks.
    options = {"projection_options": {"tol": 1e-12}} if kind == "marginal" else {}
    problem = _problem(kind, **options)
    w = np.array([0.3, -0.2, 0.5, -0.4, -0.1])
    _, g = problem.value_and_grad(w)
    h = 1e-5
    num = [(problem.value_and_grad(w + h * d)[0] - problem.value_and_grad(w - h * d)[0]) / (2 * h)
           for d in np.eye(w.size)]
    np.testing.assert_allclose(num, g, rtol=0, atol=1e-7)


@pytest.mark.parametrize("kind", ["cube", "budget"])
def test_lbfgs_reaches_the_optimum_of_a_generic_solver(kind):
    problem = _problem(kind, seed=1)
    fit = fit_lbfgs(problem, tol=1e-9)
    ref = minimize(lambda w: problem.value_and_grad(w)[0], np.zeros(problem.dim),
                   method="SLSQP", bounds=problem.bounds(),
                   options={"ftol": 1e-12, "maxiter": 1000})
    assert fit.converged
    assert fit.objective <= ref.fun + 1e-6
    assert np.all(fit.w[3:] <= 0)
    # the certificate bounds the distance to the optimum
    assert fit.objective - ref.fun <= fit.bound + 1e-6


def test_an_early_lbfgs_stop_is_restarted_from_the_best_point(monkeypatch):
    """L-BFGS-B's line search can give up far from the optimum (COCO's chairs):
    fit_lbfgs restarts it, so a run cut short still reaches the certificate."""
    import scipy.optimize
    problem = _problem("cube", seed=2)
    reference = fit_lbfgs(problem, tol=1e-9)
    real, calls = scipy.optimize.minimize, []

    def gives_up_early(fun, x0, **kwargs):
        calls.append(np.array(x0))
        if len(calls) == 1:            # the first run stops after 3 evaluations
            kwargs["options"] = {**kwargs["options"], "maxfun": 3}
        return real(fun, x0, **kwargs)
    monkeypatch.setattr(scipy.optimize, "minimize", gives_up_early)
    fit = fit_lbfgs(problem, tol=1e-9)
    assert len(calls) >= 2 and np.any(calls[1])      # the restart began at a best point
    assert fit.converged and fit.objective == pytest.approx(reference.objective, abs=1e-8)


def test_estimator_fits_a_separable_problem_and_predicts_it():
    rng = np.random.default_rng(2)
    X, Y = [], []
    for _ in range(4):
        n = 10
        t = rng.integers(0, 2, n)
        unary = np.column_stack([2.0 * t - 1.0, np.ones(n)])
        edges = np.array([(i, i + 1) for i in range(n - 1)])
        X.append(SimpleNamespace(unary=unary, edges=edges, pairwise=np.ones((n - 1, 1)),
                                 image_id="x"))
        Y.append(t)
    est = ProjectionSVM(C=100.0).fit(X, Y)
    assert est.converged_ and est.gap_ <= 100.0 * est.tol
    assert all(np.array_equal(p, t) for p, t in zip(est.predict(X), Y))
    assert est.score(X, Y) == 1.0


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="projection_set must be one of 'cube'"):
        ProjectionSVM(projection_set="ball").check_params()
    with pytest.raises(ValueError, match="cube"):
        ProjectionSVM(projection_set="budget", node_weights="area").check_params()
