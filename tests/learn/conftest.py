"""Shared helpers of the learner tests."""
import numpy as np
import pytest

from segstruct.feature_map import Graph


def _random_problem(seed, n_graphs=3, n=5, du=3, targets="random", separable=False):
    """Small random graphs (edges with probability 0.6, 2 pairwise features
    each) and 0/1 targets with node 0 in the foreground.

    ``seed`` is an int or a numpy Generator. ``targets="alternating"`` gives
    neighbours of different labels as often as possible, so the pairwise
    weights would rather be positive and the bound w_p <= 0 holds at the
    optimum. ``separable``: the first unary feature is the target plus a
    little noise and the last a bias.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n_graphs):
        t = rng.integers(0, 2, n) if targets == "random" else np.arange(n) % 2
        t[0] = 1
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.6]
        edges = np.array(pairs, np.int64).reshape(-1, 2)
        unary = rng.normal(size=(n, du))
        if separable:
            unary[:, 0] = (2 * t - 1) + 0.2 * rng.normal(size=n)
            unary[:, -1] = 1.0
        X.append(Graph(unary, edges, rng.uniform(0, 1, (len(edges), 2))))
        Y.append(t)
    return X, Y


@pytest.fixture(scope="session")
def random_problem():
    """The function ``random_problem(seed, n_graphs=3, n=5, du=3,
    targets="random", separable=False) -> (X, Y)``."""
    return _random_problem
