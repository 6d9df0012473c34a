"""The stochastic and subgradient learners against the exact per-image optimum.

The reference optimum is the QP with one constraint for every labelling of
every image (brute force: a few images of five nodes), under the same
objective and bound w_p <= 0 as ``StructuredSVM(scope="image")``.
"""
import itertools

import numpy as np
import pytest

from segstruct.inference import brute_force, maximize
from segstruct.inference.losses import counts, get_loss, totals
from segstruct.learn.solvers.qp import WorkingSetQP
from segstruct.learn.estimators.structured_svm import StructuredSVM
from segstruct.learn.solvers.first_order import (ImageScopeProblem, bcfw, bcfw_line_search,
                                        stochastic_subgradient, subgradient_descent)
from segstruct.feature_map import MRFModel

LEARNERS = {
    "subgradient": lambda X, Y, **kw: subgradient_descent(X, Y, max_epochs=300, **kw),
    "sgd": lambda X, Y, **kw: stochastic_subgradient(X, Y, max_epochs=300, **kw),
    "bcfw": lambda X, Y, **kw: bcfw(X, Y, max_epochs=2000, tol=1e-3, eval_every=5, **kw),
}


def all_constraints(x, t, loss):
    """(g, L) for every labelling y of one graph: g = Psi(t) - Psi(y)."""
    model = MRFModel()
    n_pos, n_neg = totals(t)
    for y in itertools.product([0, 1], repeat=t.size):
        y = np.array(y)
        fp, fn = counts(y, t)
        yield (model.joint_feature(x, t) - model.joint_feature(x, y),
               float(loss(fp, fn, n_pos, n_neg)))


def full_qp_optimum(X, Y, C, loss="hamming", bound=True):
    """min 1/2 ||w||^2 + (C/n) sum_i xi_i over every labelling's constraint."""
    loss = get_loss(loss)
    model = MRFModel()
    dim = model.n_features(X[0])
    nonpositive = np.flatnonzero(model.upper_bounds(X[0]) == 0) if bound else ()
    qp = WorkingSetQP(dim, [C / len(X)] * len(X), nonpositive)
    for i, (x, t) in enumerate(zip(X, Y)):
        for g, l in all_constraints(x, t, loss):
            qp.add(g, l, i)
    return qp.solve()


def brute_force_objective(w, X, Y, C, loss="hamming"):
    """1/2 ||w||^2 + C * mean_i max_y (L_i(y) - w . g_i(y)), by enumeration."""
    loss = get_loss(loss)
    hinges = [max(l - g @ w for g, l in all_constraints(x, t, loss)) for x, t in zip(X, Y)]
    return 0.5 * w @ w + C * np.mean(hinges)


def nonpositive_block(X):
    return np.flatnonzero(MRFModel().upper_bounds(X[0]) == 0)


# ----------------------------------------------------------------------
def test_objective_is_the_cutting_plane_learners_per_image_objective(random_problem):
    # four images: a sum of hinges instead of their mean would be 4x off
    X, Y = random_problem(0, n_graphs=4)
    C = 0.7
    svm = StructuredSVM(loss="hamming", C=C, C_units="paper", solver="nslack", scope="image",
                        tol=1e-6).fit(X, Y)
    C = svm.svm_C_                    # the objective's C
    problem = ImageScopeProblem.from_data(X, Y, loss="hamming", C=C)
    assert problem.primal(svm.w_) == pytest.approx(svm.primal_, rel=1e-12)
    assert problem.primal(svm.w_) == pytest.approx(brute_force_objective(svm.w_, X, Y, C),
                                                   rel=1e-12)
    w = np.array([0.3, -0.2, 0.1, -0.4, -0.05])
    assert problem.primal(w) == pytest.approx(brute_force_objective(w, X, Y, C), rel=1e-12)


def test_problem_is_set_up_as_the_cutting_plane_learner_sets_it_up(random_problem):
    # pixel counts, area weights and kappa from the data: every set-up step counts
    X, _ = random_problem(9, n_graphs=3)
    rng = np.random.default_rng(9)
    Y = [rng.integers(0, 30, size=(x.unary.shape[0], 2)) for x in X]
    settings = dict(loss="adjusted_hamming", node_weights="area")
    svm = StructuredSVM(solver="nslack", scope="image", tol=1e-4, C=0.3, **settings).fit(X, Y)
    problem = ImageScopeProblem.from_data(X, Y, C=svm.svm_C_, **settings)
    assert repr(problem.loss) == repr(svm.loss_)
    assert problem.primal(svm.w_) == pytest.approx(svm.primal_, rel=1e-12)
    assert np.array_equal(problem.nonpositive, [3, 4])


def phi(gamma, v, d, e, nonpositive):
    """gamma e - 1/2 ||Pi_K(v + gamma d)||^2 for a scalar or (G,) gamma."""
    gamma = np.asarray(gamma, np.float64)
    z = v + gamma[..., None] * d
    z[..., nonpositive] = np.minimum(z[..., nonpositive], 0.0)
    return gamma * e - 0.5 * np.sum(z * z, axis=-1)


def test_line_search_maximises_the_piecewise_quadratic():
    rng = np.random.default_rng(1)
    nonpositive = np.array([3, 4, 5])
    grid = np.linspace(0.0, 1.0, 20001)
    differs_from_textbook = 0
    for _ in range(300):
        v, d = rng.normal(size=6), rng.normal(size=6)
        e = rng.normal() + float(v @ d)
        gamma = bcfw_line_search(v, d, e, nonpositive)
        assert 0.0 <= gamma <= 1.0
        assert phi(gamma, v, d, e, nonpositive) >= phi(grid, v, d, e, nonpositive).max() - 1e-12
        if 0.0 < gamma < 1.0:
            z = v + gamma * d
            z[nonpositive] = np.minimum(z[nonpositive], 0.0)
            assert e - z @ d == pytest.approx(0.0, abs=1e-10)
        textbook = np.clip((e - v @ d) / (d @ d), 0.0, 1.0)
        differs_from_textbook += abs(textbook - gamma) > 1e-6
    # the kinks matter in many of these cases, so the test checks them
    assert differs_from_textbook > 50


def test_line_search_without_the_bound_is_the_textbook_step():
    rng = np.random.default_rng(2)
    for _ in range(100):
        v, d = rng.normal(size=5), rng.normal(size=5)
        e = rng.normal() + float(v @ d)
        expected = np.clip((e - v @ d) / (d @ d), 0.0, 1.0)
        assert bcfw_line_search(v, d, e, []) == pytest.approx(expected, abs=1e-12)


def test_line_search_ends_of_the_segment():
    v, d = np.array([1.0, 2.0]), np.array([1.0, 0.0])
    assert bcfw_line_search(v, d, 0.5, []) == 0.0      # phi'(0) = 0.5 - 1 < 0
    assert bcfw_line_search(v, d, 5.0, []) == 1.0      # phi'(1) = 5 - 2 > 0
    # all of d in a bounded coordinate that stays positive: phi is linear
    assert bcfw_line_search(np.array([0.0, 1.0]), np.array([0.0, 1.0]), 1e-3, [1]) == 1.0


@pytest.mark.parametrize("targets, loss, oracle, sampling", [
    ("random", "hamming", None, "uniform"),
    ("alternating", "hamming", None, "permutation"),
    ("random", "iou", brute_force, "uniform"),
])
def test_bcfw_gap_bounds_the_error_and_reaches_the_optimum(random_problem, targets, loss, oracle, sampling):
    X, Y = random_problem(3, targets=targets)
    C, tol = 1.0, 1e-3
    optimum = full_qp_optimum(X, Y, C, loss).primal
    result = bcfw(X, Y, loss=loss, C=C, oracle=oracle, max_epochs=5000, tol=tol,
                  sampling=sampling, eval_every=5)
    assert result.converged and result.gap <= C * tol
    for entry in result.trace:
        assert entry["gap"] >= entry["primal"] - optimum - 1e-9
        assert entry["dual"] <= optimum + 1e-9
    # the exact line search never lowers the dual
    duals = np.array([entry["dual"] for entry in result.trace])
    assert np.all(np.diff(duals) >= -1e-12)
    assert result.primal == pytest.approx(brute_force_objective(result.w, X, Y, C, loss), rel=1e-12)
    assert result.primal - optimum <= C * tol
    assert np.all(result.w[nonpositive_block(X)] <= 0.0)


def test_bcfw_agrees_with_the_cutting_plane_learner(random_problem):
    X, Y = random_problem(4, n_graphs=4)
    svm = StructuredSVM(loss="hamming", C=2.0, solver="nslack", scope="image", tol=1e-6).fit(X, Y)
    C = svm.svm_C_                    # the objective's C
    result = bcfw(X, Y, loss="hamming", C=C, max_epochs=5000, tol=1e-3, eval_every=5)
    assert result.converged
    assert result.primal - svm.dual_ <= C * (1e-3 + 1e-6)
    assert svm.primal_ - result.dual <= C * 1e-6 + C * 1e-3


def test_the_bound_is_active_on_the_alternating_problem(random_problem):
    # otherwise the tests on it would not exercise w_p <= 0
    X, Y = random_problem(3, targets="alternating")
    bounded = full_qp_optimum(X, Y, 1.0)
    free = full_qp_optimum(X, Y, 1.0, bound=False)
    assert free.primal < bounded.primal - 1e-3
    assert np.any(free.w[nonpositive_block(X)] > 1e-3)


@pytest.mark.parametrize("name, rel", [("subgradient", 1e-3), ("sgd", 2e-2)])
@pytest.mark.parametrize("targets", ["random", "alternating"])
def test_subgradient_learners_approach_the_optimum_with_feasible_iterates(random_problem, name, rel, targets):
    X, Y = random_problem(3, targets=targets)
    C = 1.0
    optimum = full_qp_optimum(X, Y, C).primal
    nonpositive = nonpositive_block(X)
    highest, clipped = [], []

    def check(iteration, w):
        highest.append(w[nonpositive].max())
        clipped.append(np.any(w[nonpositive] == 0.0))

    result = LEARNERS[name](X, Y, loss="hamming", C=C, callback=check)
    assert len(highest) == result.n_iter > 0
    assert max(highest) <= 0.0
    assert np.all(result.w[nonpositive] <= 0.0)
    if targets == "alternating":
        assert any(clipped)          # the projection did act
    primals = [entry["primal"] for entry in result.trace]
    assert min(primals) >= optimum - 1e-9
    assert result.primal == pytest.approx(brute_force_objective(result.w, X, Y, C), rel=1e-12)
    assert result.primal - optimum <= rel * optimum


def test_bcfw_iterates_are_feasible(random_problem):
    X, Y = random_problem(3, targets="alternating")
    nonpositive = nonpositive_block(X)
    highest = []
    result = bcfw(X, Y, loss="hamming", C=1.0, max_epochs=50,
                  callback=lambda k, w: highest.append(w[nonpositive].max()))
    assert len(highest) == result.n_iter
    assert max(highest) <= 0.0


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_each_learner_fits_a_separable_problem(random_problem, name):
    X, Y = random_problem(5, n_graphs=4, separable=True)
    model = MRFModel()
    result = LEARNERS[name](X, Y, loss="hamming", C=1.0)
    for x, t in zip(X, Y):
        u, p = model.potentials(x, result.w)
        assert np.array_equal(maximize(u, x.edges, p)[0], t)


@pytest.mark.parametrize("learner", [stochastic_subgradient, bcfw])
def test_the_same_seed_gives_the_same_weights(random_problem, learner):
    X, Y = random_problem(6, n_graphs=5)
    first = learner(X, Y, loss="hamming", max_epochs=20, seed=7)
    again = learner(X, Y, loss="hamming", max_epochs=20, seed=7)
    other = learner(X, Y, loss="hamming", max_epochs=20, seed=8)
    assert np.array_equal(first.w, again.w)
    assert [e["primal"] for e in first.trace] == [e["primal"] for e in again.trace]
    assert not np.array_equal(first.w, other.w)


def test_subgradient_descent_is_deterministic(random_problem):
    X, Y = random_problem(6)
    first = subgradient_descent(X, Y, loss="hamming", max_epochs=20)
    assert np.array_equal(first.w, subgradient_descent(X, Y, loss="hamming", max_epochs=20).w)


def test_trace_records_calls_and_times(random_problem):
    X, Y = random_problem(7)
    result = bcfw(X, Y, loss="hamming", max_epochs=6, tol=1e-12, eval_every=2)
    assert [e["epoch"] for e in result.trace] == [2, 4, 6]
    assert [e["oracle_calls"] for e in result.trace] == [6, 12, 18]
    assert [e["eval_calls"] for e in result.trace] == [3, 6, 9]
    seconds = [e["seconds"] for e in result.trace]
    assert seconds == sorted(seconds) and result.seconds >= seconds[-1]
    assert not result.converged and result.n_iter == 18


@pytest.mark.parametrize("call, message", [
    (lambda X, Y: stochastic_subgradient(X, Y, averaging="mean"), "averaging"),
    (lambda X, Y: bcfw(X, Y, sampling="cyclic"), "sampling"),
    (lambda X, Y: bcfw(X, Y, tol=0), "tol"),
    (lambda X, Y: subgradient_descent(X, Y, max_epochs=0), "max_epochs"),
    (lambda X, Y: bcfw(X, Y, C=-1.0), "C must be a finite number > 0"),
])
def test_bad_settings_are_refused(random_problem, call, message):
    X, Y = random_problem(8)
    with pytest.raises(ValueError, match=message):
        call(X, Y)
