"""Max-marginals against enumeration on tiny graphs, and their sign against
the graph cut's MAP."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from segstruct.inference import maximize
from segstruct.inference.maxmarginals import max_marginals


def random_mrf(rng, n, density=0.5, scale=1.0):
    """An attractive MRF on a random graph: u (N,), edges (E, 2), p (E,) <= 0."""
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = np.array([e for e in pairs if rng.random() < density], dtype=int).reshape(-1, 2)
    p = -rng.exponential(size=len(edges)) * scale
    p[rng.random(len(edges)) < 0.1] = 0.0
    return rng.normal(size=n) * scale, edges, p


@st.composite
def small_mrfs(draw):
    n = draw(st.integers(1, 7))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []
    finite = dict(allow_nan=False, allow_infinity=False)
    u = draw(st.lists(st.floats(-10, 10, **finite), min_size=n, max_size=n))
    p = draw(st.lists(st.floats(-10, 0, **finite), min_size=len(edges), max_size=len(edges)))
    return np.array(u), np.array(edges, dtype=int).reshape(-1, 2), np.array(p)


def enumerated(u, edges, p):
    """m_i by scoring all 2^N labellings."""
    n = u.size
    ys = np.array(list(itertools.product([0, 1], repeat=n)), dtype=float)
    cut = (ys[:, edges[:, 0]] != ys[:, edges[:, 1]]).astype(float) if len(edges) else \
        np.zeros((len(ys), 0))
    scores = (2 * ys - 1) @ u + cut @ p
    return np.array([scores[ys[:, i] == 1].max() - scores[ys[:, i] == 0].max()
                     for i in range(n)])


@pytest.mark.parametrize("seed", range(40))
def test_max_marginals_equal_enumeration(seed):
    rng = np.random.default_rng(seed)
    u, edges, p = random_mrf(rng, int(rng.integers(1, 10)), density=rng.uniform(0.1, 0.9),
                             scale=rng.uniform(0.1, 10))
    np.testing.assert_allclose(max_marginals(u, edges, p), enumerated(u, edges, p),
                               atol=1e-9 * max(1.0, np.abs(u).sum() + np.abs(p).sum()))


@settings(max_examples=100, deadline=None)
@given(small_mrfs())
def test_max_marginals_equal_enumeration_hypothesis(mrf):
    u, edges, p = mrf
    np.testing.assert_allclose(max_marginals(u, edges, p), enumerated(u, edges, p),
                               atol=1e-7)


@pytest.mark.parametrize("seed", range(20))
def test_positive_max_marginals_are_the_map(seed):
    """m > 0 is the maximiser with the fewest ones, which maximize returns."""
    rng = np.random.default_rng(100 + seed)
    u, edges, p = random_mrf(rng, 30, density=0.15)
    m = max_marginals(u, edges, p)
    np.testing.assert_array_equal((m > 0).astype(np.uint8), maximize(u, edges, p)[0])


def test_attractive_edges_are_required():
    with pytest.raises(ValueError):
        max_marginals(np.zeros(2), np.array([[0, 1]]), np.array([1.0]))
