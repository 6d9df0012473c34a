import numpy as np
import pytest
from scipy.optimize import minimize

from segstruct.learn.solvers.qp import WorkingSetQP


def random_qp(rng, d=None, k=None):
    d = d or int(rng.integers(2, 7))
    k = k or int(rng.integers(1, 12))
    n_groups = int(rng.integers(1, 4))
    caps = rng.uniform(0.1, 2.0, n_groups)
    nonpos = rng.choice(d, int(rng.integers(0, d)), replace=False)
    G = rng.normal(size=(k, d)) * rng.uniform(0.3, 3.0, d)
    losses = rng.uniform(0, 2, k)
    groups = rng.integers(0, n_groups, k)
    qp = WorkingSetQP(d, caps, nonpos)
    for row, l, g in zip(G, losses, groups):
        qp.add(row, l, g)
    return qp, (d, caps, nonpos, G, losses, groups)


def slsqp_primal(d, caps, nonpos, G, losses, groups):
    """Independent reference: the primal QP over (w, xi) by SciPy's SLSQP."""
    def objective(z):
        return 0.5 * z[:d] @ z[:d] + caps @ z[d:]
    cons = [{"type": "ineq", "fun": lambda z, k=k: G[k] @ z[:d] - losses[k] + z[d + groups[k]]}
            for k in range(len(losses))]
    bounds = [(None, 0) if j in nonpos else (None, None) for j in range(d)]
    bounds += [(0, None)] * len(caps)
    res = minimize(objective, np.zeros(d + len(caps)), method="SLSQP", bounds=bounds,
                   constraints=cons, options={"ftol": 1e-12, "maxiter": 1000})
    if not res.success:     # SLSQP gives up now and then; ask another method
        res = minimize(objective, np.zeros(d + len(caps)), method="trust-constr",
                       bounds=bounds, constraints=cons,
                       options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 5000})
    assert res.success, res.message
    return res.fun


def test_matches_independent_primal_solver():
    rng = np.random.default_rng(0)
    for _ in range(60):
        qp, data = random_qp(rng)
        sol = qp.solve()
        assert sol.primal == pytest.approx(slsqp_primal(*data), abs=1e-6)


def test_kkt_conditions_on_random_working_sets():
    rng = np.random.default_rng(1)
    tol = 1e-6
    for _ in range(100):
        qp, (d, caps, nonpos, G, losses, groups) = random_qp(rng, k=int(rng.integers(1, 30)))
        s = qp.solve()
        margins = G @ s.w - losses + s.xi[groups]
        sums = np.bincount(groups, weights=s.alpha, minlength=caps.size)
        # primal feasibility (w_p <= 0 exactly: the learner relies on it)
        assert np.all(s.w[nonpos] <= 0) and np.all(s.xi >= 0)
        assert np.all(margins >= -tol)
        # dual feasibility
        assert np.all(s.alpha >= 0) and np.all(s.mu >= 0) and np.all(sums <= caps + tol)
        # stationarity: w = G^T alpha - S mu (up to the projection onto w_p <= 0)
        w_dual = G.T @ s.alpha
        w_dual[nonpos] -= s.mu
        assert np.allclose(s.w, w_dual, atol=tol)
        # complementary slackness
        assert np.all(np.abs(margins[s.alpha > tol]) <= 1e-5)
        assert np.all(np.abs(s.w[nonpos][s.mu > tol]) <= tol)
        assert np.all(np.abs(sums - caps)[s.xi > tol] <= 1e-5)
        # strong duality
        assert s.primal - s.dual == pytest.approx(0, abs=1e-6)
        assert s.dual <= s.primal + 1e-12


def test_adding_constraints_keeps_dual_monotone_and_prune_keeps_optimum():
    rng = np.random.default_rng(2)
    qp = WorkingSetQP(5, [1.0], [3, 4])
    duals = []
    for _ in range(25):
        qp.add(rng.normal(size=5), rng.uniform(0, 2), 0)
        duals.append(qp.solve().dual)
    assert np.all(np.diff(duals) >= -1e-9)
    before = qp.solve()
    removed = qp.prune(1)
    after = qp.solve()
    assert removed > 0 and qp.n_constraints == 25 - removed
    assert after.primal == pytest.approx(before.primal, abs=1e-8)


def test_empty_and_invalid():
    qp = WorkingSetQP(3, [1.0])
    s = qp.solve()
    assert s.primal == 0 and np.all(s.w == 0)
    with pytest.raises(ValueError):
        qp.add(np.ones(2), 1.0, 0)
    with pytest.raises(ValueError):
        qp.add(np.ones(3), np.nan, 0)
    with pytest.raises(ValueError):
        qp.add(np.ones(3), 1.0, 5)
    with pytest.raises(ValueError):
        WorkingSetQP(3, [0.0])


def test_the_route_that_met_the_tolerance_goes_first(monkeypatch):
    """A route that fails once is not retried first on every later solve (it
    may run to its time limit each time), also after a restore."""
    calls = []
    original = WorkingSetQP._run_dual

    def run_dual(self, model, regularization, warm=None):
        scaled = np.max(np.abs(model.hessian_.value_)) <= 1.0 + 1e-9
        calls.append(scaled)
        # HiGHS "fails" on the QP as it is (entries ~1e4), as on badly scaled sets
        return original(self, model, regularization, warm) if scaled else None

    monkeypatch.setattr(WorkingSetQP, "_run_dual", run_dual)
    rng = np.random.default_rng(4)
    qp, data = random_qp(rng, d=4, k=3)
    qp.G *= 100.0
    qp._gram *= 1e4
    data[3][:] *= 100.0
    sol = qp.solve()
    assert calls[:2] == [False, False] and all(calls[2:])
    assert sol.primal == pytest.approx(slsqp_primal(*data), abs=1e-6)
    calls.clear()
    qp.add(rng.normal(size=4) * 100.0, 1.0, 0)
    qp.solve()
    # the route that served last goes first (the others follow only should it
    # miss the tolerance, as HiGHS 1.8's regularised dual does here)
    assert calls[0]
    restored = WorkingSetQP(4, qp.caps, qp.nonpositive)
    restored.set_state(qp.get_state())
    calls.clear()
    restored.solve()
    assert calls[0]


def test_gap_test_is_relative_without_a_floor():
    """An objective of 1e-9 with a gap of half of it is not solved (a floor of 1
    on the relative test would accept it); the caller's absolute tolerance is."""
    from segstruct.learn.solvers.qp import QPSolution
    qp = WorkingSetQP(2, [1e-8])
    sol = QPSolution(np.zeros(2), np.zeros(0), np.zeros(0), np.zeros(1), 1e-9, 0.5e-9, 0.0)
    assert not qp.converged(sol)
    qp.abs_gap_tol = 1e-9
    assert qp.converged(sol)
    exact = QPSolution(np.zeros(2), np.zeros(0), np.zeros(0), np.zeros(1), 1e-9, 1e-9, 0.0)
    qp.abs_gap_tol = 0.0
    assert qp.converged(exact)


def test_a_route_that_gave_no_answer_waits_behind_the_active_set_finish(monkeypatch):
    """The unregularised dual of the rescaled copy ran to its time limit on
    every late solve of a CamVid fit: once it gives no answer, later solves
    finish the regularised answer by the active-set method instead, to the
    same optimum; it is tried again only when that does not reach the
    tolerance, and the waiting is kept with the working set."""
    from segstruct.learn.solvers import qp as qp_module
    calls = []
    original = WorkingSetQP._run_dual

    def run_dual(self, model, regularization, warm=None):
        calls.append(regularization)
        z = original(self, model, regularization, warm)
        if regularization == 0.0:
            return None                   # stands for the time limit
        # the regularised answer, a little off the optimum: the finish must act
        return None if z is None else z * (1 + 1e-3)

    monkeypatch.setattr(WorkingSetQP, "_run_dual", run_dual)
    real_refine = qp_module.refine
    rng = np.random.default_rng(7)
    for _ in range(5):
        qp, data = random_qp(rng, d=5, k=6)
        first = qp.solve()
        assert 0.0 in calls and qp._failed
        assert first.primal == pytest.approx(slsqp_primal(*data), abs=1e-6)
        calls.clear()
        again = qp.solve()
        assert 0.0 not in calls and again.primal == pytest.approx(first.primal, abs=1e-9)
        assert "active-set" in qp.last_route
        restored = WorkingSetQP(qp.n_features, qp.caps, qp.nonpositive)
        restored.set_state(qp.get_state())
        assert restored._failed == qp._failed
        # the finish that misses the tolerance lets the waiting routes run
        calls.clear()
        monkeypatch.setattr(qp_module, "refine", lambda h, c, g, caps, z0, max_iter=None:
                            (z0, False))
        qp.solve()
        assert 0.0 in calls
        monkeypatch.setattr(qp_module, "refine", real_refine)
        calls.clear()
