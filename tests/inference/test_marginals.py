"""Marginals and log Z of p(y) ∝ exp(score(y)): enumeration against a direct
sum over labellings, belief propagation against enumeration (exact on
forests, close on small loopy graphs), and each check shown to fail on a
deliberately broken solver."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from segstruct.inference import score
from segstruct.inference.marginals import enumerate_marginals, loopy_bp


def _tree(rng, n):
    edges = np.array([(i, int(rng.integers(0, i))) for i in range(1, n)]).reshape(-1, 2)
    return edges


def _grid(rows, cols):
    idx = np.arange(rows * cols).reshape(rows, cols)
    right = [(idx[r, c], idx[r, c + 1]) for r in range(rows) for c in range(cols - 1)]
    down = [(idx[r, c], idx[r + 1, c]) for r in range(rows - 1) for c in range(cols)]
    return np.array(right + down)


def _direct(u, edges, p):
    """Marginals and log Z by a Python loop over labellings and the model's score."""
    n = len(u)
    ys = np.array(list(itertools.product([0, 1], repeat=n)))
    s = np.array([score(u, edges, p, y) for y in ys])
    w = np.exp(s - s.max())
    z = w.sum()
    cut = np.array([[y[i] != y[j] for i, j in edges] for y in ys], float).reshape(len(ys), -1)
    return (w @ ys) / z, (w @ cut) / z, float(s.max() + np.log(z))


def check_exact(solver, u, edges, p, atol=1e-7):
    node, cut, log_z = _direct(u, edges, p)
    m = solver(u, edges, p)
    np.testing.assert_allclose(m.node, node, atol=atol)
    np.testing.assert_allclose(m.cut, cut, atol=atol)
    assert m.log_z == pytest.approx(log_z, abs=atol)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 7), st.integers(0, 10_000), st.booleans())
def test_enumeration_matches_a_direct_sum(n, seed, attractive):
    rng = np.random.default_rng(seed)
    edges = np.array([(i, j) for i in range(n) for j in range(i + 1, n)
                      if rng.random() < 0.5]).reshape(-1, 2)
    u = rng.normal(size=n)
    p = rng.normal(size=len(edges))
    p = -np.abs(p) if attractive else p
    check_exact(enumerate_marginals, u, edges, p, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 12), st.integers(0, 10_000), st.floats(0.0, 0.8))
def test_bp_is_exact_on_trees(n, seed, damping):
    rng = np.random.default_rng(seed)
    edges = _tree(rng, n)
    u = 2 * rng.normal(size=n)
    p = 3 * rng.normal(size=len(edges))      # any sign: BP is exact on a tree anyway
    m = loopy_bp(u, edges, p, damping=damping, tol=1e-12, max_iter=2000)
    assert m.converged
    ref = enumerate_marginals(u, edges, p)
    np.testing.assert_allclose(m.node, ref.node, atol=1e-8)
    np.testing.assert_allclose(m.cut, ref.cut, atol=1e-8)
    assert m.log_z == pytest.approx(ref.log_z, abs=1e-7)


def test_bp_is_exact_on_a_forest_with_isolated_nodes():
    u = np.array([0.3, -1.0, 2.0, 0.0, -0.5])
    edges = np.array([[0, 1], [3, 4]])
    p = np.array([-1.5, -0.2])
    check_exact(lambda *a: loopy_bp(*a, tol=1e-12), u, edges, p)


@pytest.mark.parametrize("coupling", [0.2, 0.5])
def test_bp_is_close_on_a_loopy_grid(coupling):
    """The Bethe approximation on a 3x4 grid: marginals within 1e-2 and log Z
    within 1 % of the exact ones at weak-to-moderate attractive coupling."""
    rng = np.random.default_rng(3)
    edges = _grid(3, 4)
    u = 0.5 * rng.normal(size=12)
    p = -coupling * rng.random(len(edges))
    m = loopy_bp(u, edges, p, tol=1e-12, max_iter=2000)
    ref = enumerate_marginals(u, edges, p)
    assert m.converged
    np.testing.assert_allclose(m.node, ref.node, atol=1e-2)
    assert m.log_z == pytest.approx(ref.log_z, rel=1e-2)


def test_warm_start_reaches_the_same_fixed_point_in_fewer_sweeps():
    rng = np.random.default_rng(4)
    edges = _grid(4, 4)
    u, p = rng.normal(size=16), -0.3 * rng.random(len(edges))
    cold = loopy_bp(u, edges, p, tol=1e-10)
    warm = loopy_bp(u, edges, p, tol=1e-10, messages=cold.messages)
    np.testing.assert_allclose(warm.node, cold.node, atol=1e-9)
    assert warm.n_iter < cold.n_iter


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at most 20"):
        enumerate_marginals(np.zeros(21), np.zeros((0, 2)), np.zeros(0))
    with pytest.raises(ValueError, match="damping"):
        loopy_bp(np.zeros(2), [[0, 1]], [0.0], damping=1.0)
    with pytest.raises(ValueError, match="messages"):
        loopy_bp(np.zeros(2), [[0, 1]], [0.0], messages=np.zeros(3))


# ---------------------------------------------------------------- broken solvers
def _broken_message(u, edges, p, **kw):
    """BP with the pairwise term's sign flipped: repulsive where it is attractive."""
    return loopy_bp(u, edges, -np.asarray(p), **kw)


def _broken_log_z(u, edges, p, **kw):
    """BP whose log Z forgets the edge entropies (the mean-field energy only)."""
    m = loopy_bp(u, edges, p, **kw)
    m.log_z = float((2 * m.node - 1) @ u + m.cut @ p)
    return m


@pytest.mark.parametrize("broken", [_broken_message, _broken_log_z])
def test_the_checks_fail_on_a_broken_solver(broken):
    rng = np.random.default_rng(5)
    edges = _tree(rng, 6)
    u, p = rng.normal(size=6), -1.0 - rng.random(len(edges))
    check_exact(lambda *a: loopy_bp(*a, tol=1e-12), u, edges, p)     # the real one passes
    with pytest.raises(AssertionError):
        check_exact(broken, u, edges, p)


# ---------------------------------------------------------------- Gibbs samples
def check_samples(sampler, u, edges, p, atol=0.03):
    """Sample frequencies match the exact node and cut marginals."""
    ys = sampler(u, edges, p).astype(float)
    ref = enumerate_marginals(u, edges, p)
    np.testing.assert_allclose(ys.mean(axis=0), ref.node, atol=atol)
    cuts = (ys[:, edges[:, 0]] != ys[:, edges[:, 1]]).mean(axis=0)
    np.testing.assert_allclose(cuts, ref.cut, atol=atol)


def test_gibbs_samples_match_the_exact_marginals():
    from segstruct.inference.marginals import gibbs_samples
    rng = np.random.default_rng(6)
    edges = _grid(2, 3)
    u, p = 0.5 * rng.normal(size=6), -rng.random(len(edges))
    check_samples(lambda *a: gibbs_samples(*a, n_samples=8000, seed=1), u, edges, p)
    # seeded: the same draws again
    np.testing.assert_array_equal(gibbs_samples(u, edges, p, 5, seed=3),
                                  gibbs_samples(u, edges, p, 5, seed=3))
    # broken: a sampler that ignores the edges gets the cut marginals wrong
    with pytest.raises(AssertionError):
        check_samples(lambda u, e, p: gibbs_samples(u, e, 0 * p, n_samples=8000, seed=1),
                      u, edges, p)
