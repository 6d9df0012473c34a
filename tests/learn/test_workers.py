"""Loss-augmented inference on worker processes (segstruct.learn.solvers.workers).

What must hold: the pool returns what the oracle returns when called on the
problems one after another here, the oracle's warm-start state afterwards is
the same too, and a fit with workers equals the fit without them. References
are the serial calls and brute force over every labelling of small graphs.
"""
import itertools

import numpy as np
import pytest

from segstruct.inference import loss_augmented, score
from segstruct.inference.losses import AdjustedHammingLoss, counts, get_loss, totals
from segstruct.inference.proposed import ProposedOracle
from segstruct.learn.estimators.structured_svm import StructuredSVM
from segstruct.learn.solvers.workers import InferencePool, blocks, split_union
from segstruct.feature_map import Graph, MRFModel, disjoint_union


def graphs(rng, n_graphs, n_nodes=(5, 40), du=4):
    """Random superpixel-like graphs with targets (a chain plus random edges)."""
    X, Y = [], []
    for _ in range(n_graphs):
        n = int(rng.integers(*n_nodes))
        t = (rng.random(n) < 0.35).astype(np.int64)
        t[0] = 1
        pairs = {(i, i + 1) for i in range(n - 1)}
        pairs |= {tuple(sorted(rng.choice(n, 2, replace=False))) for _ in range(n // 3)}
        edges = np.array(sorted(pairs), np.int64).reshape(-1, 2)
        unary = rng.normal(size=(n, du)) + np.outer(2 * t - 1, np.r_[1.0, np.zeros(du - 1)])
        X.append(Graph(unary, edges, rng.uniform(0, 1, (len(edges), 2))))
        Y.append(t)
    return X, Y


def problems_at(X, Y, w):
    model = MRFModel()
    out = []
    for x, y in zip(X, Y):
        u, p = model.potentials(x, w)
        out.append((u, x.edges, p, y.astype(float), None))
    return out


@pytest.mark.parametrize("sizes,n", [([1] * 7, 3), ([5, 1, 1, 1, 1, 1], 2), ([3], 4),
                                     ([2, 2], 8), ([], 2), ([0, 0, 4, 0], 2)])
def test_blocks_are_contiguous_nonempty_and_cover_everything(sizes, n):
    got = blocks(sizes, n)
    assert [i for r in got for i in r] == list(range(len(sizes)))
    assert all(len(r) > 0 for r in got) and len(got) <= n


def test_blocks_balance_the_sizes():
    got = blocks([10] * 8, 2)
    assert [len(r) for r in got] == [4, 4]
    got = blocks([60, 10, 10, 10, 10], 2)
    assert [list(r) for r in got] == [[0], [1, 2, 3, 4]]


@pytest.mark.parametrize("n_blocks", [1, 2, 3, 4, 9])
def test_split_union_gives_unions_of_whole_images(n_blocks):
    rng = np.random.default_rng(0)
    X, Y = graphs(rng, 4)
    union = disjoint_union(X)
    t = np.concatenate(Y).astype(float)
    a = rng.uniform(0.5, 2, t.size)
    model = MRFModel()
    w = rng.normal(size=model.n_features(X[0]))
    w[model.upper_bounds(X[0]) == 0] = -np.abs(w[model.upper_bounds(X[0]) == 0])
    u, p = model.potentials(union, w)
    parts = split_union(u, union.edges, p, t, a, [len(x.unary) for x in X],
                        [len(x.edges) for x in X], n_blocks)
    # each part is the union of a run of whole images, in order
    runs = blocks([len(x.unary) for x in X], n_blocks)
    assert len(parts) == len(runs) <= n_blocks
    for r, (uk, ek, pk, tk, ak) in zip(runs, parts):
        sub = disjoint_union([X[i] for i in r])
        u_ref, p_ref = model.potentials(sub, w)
        np.testing.assert_allclose(uk, u_ref)
        np.testing.assert_array_equal(ek, sub.edges)
        np.testing.assert_allclose(pk, p_ref)
        np.testing.assert_array_equal(tk, np.concatenate([Y[i] for i in r]))
    np.testing.assert_array_equal(np.concatenate([part[4] for part in parts]), a)
    with pytest.raises(ValueError, match="nodes"):
        split_union(u, union.edges, p, t, a, [1, 2], [len(union.edges)], 2)


def test_split_union_is_exact_for_a_linear_loss_by_brute_force():
    """The union's most violated labelling is the parts' side by side."""
    rng = np.random.default_rng(3)
    X, Y = graphs(rng, 3, n_nodes=(3, 5))
    union = disjoint_union(X)
    t = np.concatenate(Y).astype(float)
    model = MRFModel()
    w = rng.normal(size=model.n_features(X[0]))
    w[model.upper_bounds(X[0]) == 0] = -np.abs(w[model.upper_bounds(X[0]) == 0])
    u, p = model.potentials(union, w)
    loss = AdjustedHammingLoss(0.7)
    parts = split_union(u, union.edges, p, t, None, [len(x.unary) for x in X],
                        [len(x.edges) for x in X], len(X))
    y = np.concatenate([loss_augmented(*part, loss).labels for part in parts])

    def objective(lab):
        lab = np.asarray(lab, np.uint8)
        return score(u, union.edges, p, lab) + float(loss(*counts(lab, t), *totals(t)))

    best = max(objective(lab) for lab in itertools.product((0, 1), repeat=len(t)))
    assert objective(y) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("inference", ["envelope", "decomposition"])
def test_pool_equals_serial_calls_and_keeps_the_warm_starts(inference):
    """Results and the oracle's state after two rounds, with 2 workers and
    without: the second round starts from the first's warm starts."""
    rng = np.random.default_rng(1)
    X, Y = graphs(rng, 7)
    loss = get_loss("iou")
    dim = MRFModel().n_features(X[0])
    ws = [rng.normal(size=dim) for _ in range(2)]
    for w in ws:
        w[MRFModel().upper_bounds(X[0]) == 0] = -np.abs(w[MRFModel().upper_bounds(X[0]) == 0])
    serial, parallel = ProposedOracle(inference=inference), ProposedOracle(inference=inference)
    with InferencePool(parallel, n_jobs=2) as pool:
        assert pool.n_workers == 2
        for w in ws:
            problems = problems_at(X, Y, w)
            want = [serial(*problem, loss) for problem in problems]
            got = pool(problems, loss)
            assert [r.objective for r in got] == pytest.approx([r.objective for r in want])
            for r, s in zip(got, want):
                np.testing.assert_array_equal(r.labels, s.labels)
    want_state, got_state = serial.get_state(), parallel.get_state()
    assert sorted(want_state) == sorted(got_state) and len(want_state) == len(X)
    for key in want_state:
        np.testing.assert_array_equal(got_state[key], want_state[key])


def test_pool_outside_its_context_calls_in_this_process():
    calls = []

    def oracle(u, edges, p, t, a, loss):
        calls.append(len(u))
        return loss_augmented(u, edges, p, t, a, loss)

    rng = np.random.default_rng(2)
    X, Y = graphs(rng, 3)
    pool = InferencePool(oracle, n_jobs=2)       # not entered: no workers
    pool(problems_at(X, Y, np.zeros(MRFModel().n_features(X[0]))), "hamming")
    assert calls == [len(x.unary) for x in X]


@pytest.mark.parametrize("scope,loss,oracle", [
    ("image", "iou", ProposedOracle()),
    ("dataset", "adjusted_hamming", None),      # the union split into images
    ("dataset", "iou", ProposedOracle()),       # the union in one piece
])
def test_fit_with_workers_equals_the_fit_without(scope, loss, oracle):
    rng = np.random.default_rng(5)
    X, Y = graphs(rng, 6)
    params = dict(loss=loss, scope=scope, oracle=oracle, C=5.0, tol=1e-4)
    one = StructuredSVM(**params).fit(X, Y)
    two = StructuredSVM(**params, n_jobs=2).fit(X, Y)
    assert one.n_iter_ > 2 and one.converged_ and two.converged_
    assert two.n_iter_ == one.n_iter_
    np.testing.assert_allclose(two.w_, one.w_, rtol=1e-9, atol=1e-12)
    assert two.primal_ == pytest.approx(one.primal_, rel=1e-12)
    assert [e["primal"] for e in two.log_] == pytest.approx([e["primal"] for e in one.log_])


def test_the_command_line_gives_workers_only_where_they_paid():
    """-j reaches the inference of the image scope; at the data-set scope the
    union's cut is faster in one process (scripts/parallel_inference.py)."""
    from segstruct.learn.estimators.lovasz_svm import LovaszSVM
    from segstruct.learn.methods import with_workers
    assert with_workers(StructuredSVM(scope="image"), 3).n_jobs == 3
    assert with_workers(StructuredSVM(scope="dataset"), 3).n_jobs == 1
    assert "n_jobs" not in with_workers(LovaszSVM(), 3).get_params()
