"""The averaged structured perceptron (``--solver perceptron``): it separates
separable data (every training labelling checked against brute-force MAP),
returns the average of its iterates, keeps w_p <= 0, and the checks fail on
a deliberately broken learner."""
import numpy as np
import pytest

from segstruct.inference import brute_force
from segstruct.learn.estimators.first_order_svm import FirstOrderSVM
from segstruct.learn.methods import estimator_for
from segstruct.learn.solvers.first_order import solve_perceptron, structured_perceptron
from segstruct.learn.solvers._image_scope import image_scope_problem
from segstruct.feature_map import MRFModel


def check_separates(w, X, Y):
    """Every training graph's brute-force MAP under w is its target."""
    model = MRFModel()
    for x, t in zip(X, Y):
        u, p = model.potentials(x, w)
        np.testing.assert_array_equal(brute_force(u, x.edges, p).labels, t)


def check_average(result, iterates):
    np.testing.assert_allclose(result.w, np.mean(iterates, axis=0), atol=1e-12)


def test_perceptron_separates_separable_data(random_problem):
    X, Y = random_problem(0, n_graphs=6, n=6, separable=True)
    result = structured_perceptron(X, Y, max_epochs=50)
    assert result.converged and result.trace[-1]["mistakes"] == 0
    check_separates(result.w, X, Y)
    assert np.all(result.w[3:] <= 0)
    assert result.primal == pytest.approx(0.0, abs=1e-9)   # the perceptron risk


def test_perceptron_returns_the_average_of_its_iterates(random_problem):
    X, Y = random_problem(1, n_graphs=5, n=6)
    iterates = []
    result = structured_perceptron(X, Y, max_epochs=7,
                                   callback=lambda t, w: iterates.append(np.array(w)))
    assert len(iterates) == result.n_iter
    check_average(result, iterates)


def test_the_checks_fail_on_a_broken_perceptron(random_problem):
    X, Y = random_problem(1, n_graphs=5, n=6)
    iterates = []
    problem = image_scope_problem(X, Y, {})
    result = solve_perceptron(problem, 7, np.random.default_rng(0),
                              lambda t, w: iterates.append(np.array(w)))
    check_average(result, iterates)
    # broken: the last iterate instead of the average
    last = type(result)(w=iterates[-1], primal=result.primal)
    with pytest.raises(AssertionError):
        check_average(last, iterates)
    # broken: no update at all separates nothing
    Xs, Ys = random_problem(0, n_graphs=6, n=6, separable=True)
    with pytest.raises(AssertionError):
        check_separates(np.zeros(5), Xs, Ys)


def test_the_estimator_trains_by_perceptron(random_problem):
    X, Y = random_problem(0, n_graphs=6, n=6, separable=True)
    est = estimator_for("bl1", solver="perceptron", scope="image", C=0.5)
    assert isinstance(est, FirstOrderSVM)
    est.fit(X, Y)
    assert est.converged_ and est.score(X, Y) == 1.0
    assert est.log_[-1]["mistakes"] == 0 and est.log_[-1]["solver"] == "perceptron"
    # C does not enter the perceptron
    other = estimator_for("bl1", solver="perceptron", scope="image", C=50.0).fit(X, Y)
    np.testing.assert_array_equal(est.w_, other.w_)
    with pytest.raises(ValueError, match="per-image"):
        FirstOrderSVM(solver="perceptron", scope="dataset").fit(X, Y)


def test_an_unseparated_run_says_so(random_problem):
    from segstruct.evaluate.diagnosis import diagnose
    X, Y = random_problem(3, n_graphs=6, n=6)          # random targets: not separable
    est = FirstOrderSVM(solver="perceptron", max_iter=5).fit(X, Y)
    assert not est.converged_ and est.log_[-1]["mistakes"] > 0
    warning = diagnose(est, X, Y)["warnings"][0]
    assert f"{est.log_[-1]['mistakes']} training image(s) still mislabelled" in warning
