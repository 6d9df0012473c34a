import numpy as np
import pytest

from segstruct.inference import score
from segstruct.feature_map import Graph, MRFModel, disjoint_union


def random_graph(rng, n=7, du=4, dp=3):
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.4]
    edges = np.array(pairs, np.int64).reshape(-1, 2)
    return Graph(rng.normal(size=(n, du)), edges, rng.uniform(0, 2, (len(edges), dp)))


def test_joint_feature_hand_made():
    g = Graph(np.array([[1.0, 2.0], [3.0, 5.0]]), np.array([[0, 1]]), np.array([[7.0, 1.0, 2.0]]))
    psi = MRFModel().joint_feature(g, np.array([1, 0]))
    # unary: (+1)[1, 2] + (-1)[3, 5] = [-2, -3]; the edge is cut: [7, 1, 2]
    assert psi.tolist() == [-2, -3, 7, 1, 2]
    assert MRFModel(pairwise=False).joint_feature(g, np.array([1, 1])).tolist() == [4, 7]


def test_score_equals_potentials_score():
    rng = np.random.default_rng(0)
    model = MRFModel()
    for _ in range(50):
        g = random_graph(rng)
        w = rng.normal(size=model.n_features(g))
        y = rng.integers(0, 2, g.n_nodes)
        u, p = model.potentials(g, w)
        assert model.score(g, w, y) == pytest.approx(score(u, g.edges, p, y))


def test_upper_bounds_and_unary_only():
    g = random_graph(np.random.default_rng(1))
    assert MRFModel().upper_bounds(g).tolist() == [np.inf] * 4 + [0.0] * 3
    u, p = MRFModel(pairwise=False).potentials(g, np.ones(4))
    assert np.allclose(u, g.unary.sum(axis=1)) and np.all(p == 0)
    with pytest.raises(ValueError, match="shape"):
        MRFModel().potentials(g, np.ones(4))


def test_disjoint_union_sums_psi():
    rng = np.random.default_rng(2)
    graphs = [random_graph(rng, n) for n in (3, 5, 4)]
    ys = [rng.integers(0, 2, g.n_nodes) for g in graphs]
    union = disjoint_union(graphs)
    model = MRFModel()
    assert union.n_nodes == 12 and len(union.edges) == sum(len(g.edges) for g in graphs)
    assert np.allclose(model.joint_feature(union, np.concatenate(ys)),
                       sum(model.joint_feature(g, y) for g, y in zip(graphs, ys)))


def test_disjoint_union_without_pairwise_features():
    g = Graph(np.ones((3, 2)), np.zeros((0, 2), np.int64), np.zeros((0, 0)))
    union = disjoint_union([g, g])
    assert union.unary.shape == (6, 2) and union.pairwise.shape == (0, 0)
