"""The crf method: its likelihoods against enumeration, their gradients
against finite differences, L-BFGS-B against a generic solver, the
estimator (marginals, C, saving), and each check shown to fail on a
deliberately broken objective."""
import numpy as np
import pytest
from scipy.optimize import minimize

from segstruct.inference import score
from segstruct.inference.marginals import enumerate_marginals, loopy_bp
from segstruct.learn.estimators.crf import CRF, LIKELIHOOD_SCALE
from segstruct.learn.solvers.fenchel_young import fit_lbfgs
from segstruct.learn.solvers.likelihood import LikelihoodProblem
from segstruct.learn.methods import estimator_for
from segstruct.feature_map import MRFModel
from segstruct.toy import chain_problem


def _problem(likelihood, seed=0, tree=False, C=2.0, **kw):
    rng = np.random.default_rng(seed)
    U, P, E, T = [], [], [], []
    for _ in range(3):
        n = 6
        e = [(i, i + 1) for i in range(n - 1)] + ([] if tree else [(0, 3), (2, 5)])
        U.append(rng.normal(size=(n, 3)))
        P.append(rng.random((len(e), 2)))
        E.append(np.array(e))
        T.append(rng.integers(0, 2, n))
    kw.setdefault("scope", "image")
    return LikelihoodProblem(U, T, P, E, svm_C=C, likelihood=likelihood,
                             bp_options={"tol": 1e-13, "max_iter": 5000}, **kw), (U, P, E, T)


W = np.array([0.4, -0.3, 0.2, -0.5, -0.2])


def _potentials(w, U, P):
    return U @ w[:3], P @ w[3:]


def test_pseudo_likelihood_is_the_product_of_node_conditionals():
    problem, (U, P, E, T) = _problem("pseudo")
    expected = 0.0
    for u_f, p_f, e, t in zip(U, P, E, T):
        u, p = _potentials(W, u_f, p_f)
        for i in range(len(t)):
            flipped = t.copy()
            flipped[i] = 1 - t[i]
            own, other = score(u, e, p, t), score(u, e, p, flipped)
            expected -= own - np.logaddexp(own, other)
    assert problem.risk(W)[0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("edges", [True, False])
def test_likelihood_is_exact_where_it_should_be(edges):
    """On trees BP's log Z is exact, so the "bethe" risk is the negative
    log-likelihood by enumeration; without edges the pseudo-likelihood is."""
    problem, (U, P, E, T) = _problem("bethe", tree=True)
    if not edges:
        problem = LikelihoodProblem(U, T, None, None, svm_C=0.5, scope="image", likelihood="pseudo")
        P = [np.zeros((len(e), 2)) for e in E]
    expected = 0.0
    for u_f, p_f, e, t in zip(U, P, E, T):
        u, p = _potentials(W, u_f, p_f)
        expected += enumerate_marginals(u, e, p).log_z - score(u, e, p, t)
    assert problem.risk(W)[0] == pytest.approx(expected, rel=1e-9)


def check_gradient(problem, w, atol=1e-6):
    _, g = problem.value_and_grad(w)
    h = 1e-5
    num = [(problem.value_and_grad(w + h * d)[0] - problem.value_and_grad(w - h * d)[0])
           / (2 * h) for d in np.eye(w.size)]
    np.testing.assert_allclose(num, g, rtol=0, atol=atol)


@pytest.mark.parametrize("likelihood", ["pseudo", "bethe"])
@pytest.mark.parametrize("scope", ["image", "dataset"])
def test_gradient_matches_finite_differences(likelihood, scope):
    # on the loopy graphs the Bethe risk's gradient is the beliefs' only at
    # BP's fixed point: the messages are converged to 1e-13
    problem, _ = _problem(likelihood, scope=scope)
    check_gradient(problem, W)


def test_weighted_pseudo_likelihood_gradient():
    problem, (U, P, E, T) = _problem("pseudo")
    rng = np.random.default_rng(9)
    weighted = LikelihoodProblem(U, T, P, E, svm_C=2.0, scope="image",
                                 weights=[rng.random(6) * 10 for _ in T])
    check_gradient(weighted, W)


def test_lbfgs_reaches_the_optimum_of_a_generic_solver():
    problem, _ = _problem("pseudo", seed=1)
    fit = fit_lbfgs(problem, tol=1e-9)
    ref = minimize(lambda w: problem.value_and_grad(w)[0], np.zeros(problem.dim),
                   jac=lambda w: problem.value_and_grad(w)[1], method="SLSQP",
                   bounds=problem.bounds(), options={"ftol": 1e-14, "maxiter": 2000})
    assert fit.converged and np.all(fit.w[3:] <= 0)
    assert fit.objective <= ref.fun + 1e-7
    assert fit.objective - ref.fun <= fit.bound + 1e-7


class _NoPairwiseGradient(LikelihoodProblem):
    """A broken objective: the pairwise block's gradient is dropped."""

    def risk(self, w):
        value, grad = super().risk(w)
        grad[self.n_u:] = 0.0
        return value, grad


class _WrongConditional(LikelihoodProblem):
    """A broken pseudo-likelihood: neighbours' labels enter with the wrong sign."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.B = -self.B


def test_the_checks_fail_on_a_broken_objective():
    problem, (U, P, E, T) = _problem("pseudo")
    check_gradient(problem, W)
    with pytest.raises(AssertionError):
        check_gradient(_NoPairwiseGradient(U, T, P, E, svm_C=2.0, scope="image"), W)
    wrong = _WrongConditional(U, T, P, E, svm_C=2.0, scope="image")
    with pytest.raises(AssertionError):
        assert wrong.risk(W)[0] == pytest.approx(problem.risk(W)[0], rel=1e-12)


# ------------------------------------------------------------------ the estimator
def test_estimator_fits_and_its_marginals_are_bp_at_temperature_one():
    X, Y = chain_problem(n_graphs=6, noise=0.3)
    crf = CRF(C=1.0).fit(X, Y)
    assert crf.converged_ and crf.temperature_ == 1.0
    assert crf.score(X, Y) > 0.8
    assert np.all(crf.w_[2:] <= 0)
    model = MRFModel()
    for x, q in zip(X, crf.marginals(X)):
        u, p = model.potentials(x, crf.w_)
        np.testing.assert_allclose(q, loopy_bp(u, x.edges, p).node)
    # the MAP labels by graph cut, as every method
    assert all(np.array_equal(a, (b > 0).astype(np.uint8)) for a, b in
               zip(crf.predict(X), crf.decision_function(X)))


def test_C_counts_the_likelihood_as_hamming_times_the_scale():
    X, Y = chain_problem()
    crf = CRF(C=0.7)
    hamming = estimator_for("hamming", C=0.7)
    assert crf.objective_C(X, Y) == pytest.approx(LIKELIHOOD_SCALE * hamming.objective_C(X, Y))
    assert crf.fit(X, Y).svm_C_ == pytest.approx(crf.objective_C(X, Y))


def test_bethe_and_pseudo_agree_on_a_chain():
    """On chains BP is exact: the "bethe" fit is the maximum-likelihood one,
    close to the pseudo-likelihood's on well-specified data."""
    X, Y = chain_problem(n_graphs=8, noise=0.4, seed=2)
    a = CRF(C=1.0, likelihood="bethe").fit(X, Y)
    b = CRF(C=1.0, likelihood="pseudo").fit(X, Y)
    assert a.converged_
    assert np.mean([np.mean(np.abs(qa - qb)) for qa, qb in
                    zip(a.marginals(X), b.marginals(X))]) < 0.1


def test_estimator_for_crf_and_its_settings():
    est = estimator_for("crf", C=0.3, likelihood="bethe", solver="oneslack")
    assert isinstance(est, CRF) and est.likelihood == "bethe" and est.C == 0.3
    with pytest.raises(ValueError, match="area node weights"):
        CRF(likelihood="bethe", node_weights="area").check_params()
    with pytest.raises(ValueError, match="likelihood"):
        CRF(likelihood="exact").check_params()


def test_marginals_need_a_temperature():
    from segstruct.learn.estimators.base import NotFittedError
    X, Y = chain_problem()
    svm = estimator_for("bl1", C=1.0).fit(X, Y)
    with pytest.raises(NotFittedError, match="calibrate"):
        svm.marginals(X)
    hot, cold = svm.marginals(X, temperature=100.0), svm.marginals(X, temperature=0.01)
    assert np.all(np.abs(hot[0] - 0.5) < np.abs(cold[0] - 0.5) + 1e-12)
