"""The proposed method's oracles (per-triangle LP, decomposition) and the
exact MILP, against brute force over all labellings."""
import itertools

import numpy as np
import pytest

from segstruct.inference import brute_force, score
from segstruct.inference.decomposition import decomposition_oracle
from segstruct.inference.losses import FBetaLoss, IoULoss, counts, get_loss, totals
from segstruct.inference.lp import lp_oracle
from segstruct.inference.milp import milp_oracle
from segstruct.inference.proposed import ProposedOracle
from segstruct.inference.triangulation import triangulate


def instance(rng, n, density=0.35, pairwise=True, weights=False):
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < density]
    edges = np.array(pairs, np.int64).reshape(-1, 2)
    p = -np.abs(rng.normal(size=len(edges))) if pairwise else np.zeros(len(edges))
    u = rng.normal(size=n)
    t = (rng.random(n) < 0.4).astype(int)
    t[0] = 1
    a = rng.integers(1, 4, n).astype(float) if weights else np.ones(n)
    return u, edges, p, t, a


def all_labellings(n):
    return np.array(list(itertools.product([0, 1], repeat=n)), np.uint8)


def test_lp_values_bound_the_piecewise_linear_optimum():
    rng = np.random.default_rng(0)
    for trial in range(15):
        u, edges, p, t, a = instance(rng, int(rng.integers(4, 10)), weights=trial % 2 == 1)
        loss = IoULoss()
        tri = triangulate(loss, *totals(t, a), n_triangles=8)
        res = lp_oracle(u, edges, p, t, a, loss, triangulation=tri)
        ys = all_labellings(u.size)
        fp, fn = counts(ys, t, a)
        s = score(u, edges, p, ys)
        values = np.array(res.info["lp_values"])
        where = tri.locate(fp, fn)
        for k in range(len(tri)):
            inside = where == k
            if inside.any():   # LP_k >= best integral plane objective in triangle k
                alpha, beta, gamma = tri.planes[k]
                best_k = (alpha * fp + beta * fn + gamma + s)[inside].max()
                assert values[k] >= best_k - 1e-7
        true_opt = (np.asarray(loss(fp, fn, *totals(t, a))) + s).max()
        assert res.objective <= true_opt + 1e-9
        assert res.bound >= true_opt - 1e-9      # a certified gap


def test_decomposition_solves_the_same_lps():
    rng = np.random.default_rng(1)
    for _ in range(10):
        u, edges, p, t, a = instance(rng, int(rng.integers(8, 20)), density=0.25)
        loss = get_loss("f1")
        tri = triangulate(loss, *totals(t, a), n_triangles=12)
        lp = np.array(lp_oracle(u, edges, p, t, a, loss, triangulation=tri).info["lp_values"])
        dw = decomposition_oracle(u, edges, p, t, a, loss, triangulation=tri)
        dw_values = np.array(dw.info["lp_values"])
        assert np.array_equal(np.isfinite(lp), np.isfinite(dw_values))
        assert np.allclose(lp[np.isfinite(lp)], dw_values[np.isfinite(lp)], atol=1e-6)
        if u.size <= 16:
            exact = brute_force(u, edges, p, t, a, loss).objective
            assert dw.bound >= exact - 1e-9         # a certified upper bound
            assert dw.objective <= exact + 1e-9     # a real labelling's value


@pytest.mark.parametrize("oracle", [lp_oracle, decomposition_oracle])
def test_no_pairwise_and_fine_triangulation_finds_the_optimum(oracle):
    rng = np.random.default_rng(2)
    for _ in range(10):
        u, edges, p, t, a = instance(rng, int(rng.integers(4, 11)), pairwise=False)
        loss = FBetaLoss(2.0)
        res = oracle(u, edges, p, t, a, loss, n_triangles=100)
        assert res.objective == pytest.approx(brute_force(u, edges, p, t, a, loss).objective,
                                              abs=1e-9)


def test_paper_rule_returns_the_largest_lp_triangle():
    rng = np.random.default_rng(3)
    u, edges, p, t, a = instance(rng, 9)
    res = lp_oracle(u, edges, p, t, a, IoULoss(), n_triangles=10, rule="paper")
    assert res.info["triangle"] == int(np.argmax(res.info["lp_values"]))
    best = lp_oracle(u, edges, p, t, a, IoULoss(), n_triangles=10, rule="best")
    assert best.objective >= res.objective - 1e-12


def test_superpixel_sized_instances_are_solved_exactly():
    # 40-node graphs like an image's superpixels: the returned labelling is
    # the exact optimum (MILP) on nearly every instance.
    rng = np.random.default_rng(4)
    exact = 0
    for _ in range(12):
        u, edges, p, t, a = instance(rng, 40, density=0.08)
        u *= 0.5
        milp = milp_oracle(u, edges, p, t, a, IoULoss())
        tri = ProposedOracle(40)
        res = tri(u, edges, p, t, a, IoULoss())
        assert res.bound >= milp.objective - 1e-9
        exact += res.objective >= milp.objective - 1e-9
    assert exact >= 11


def test_milp_equals_brute_force_for_any_pairwise_sign():
    rng = np.random.default_rng(5)
    for trial in range(40):
        u, edges, p, t, a = instance(rng, int(rng.integers(1, 10)), weights=True)
        p = rng.normal(size=len(edges))                        # any sign
        loss = get_loss(["iou", "f1", "hamming"][trial % 3])
        m = milp_oracle(u, edges, p, t, a, loss)
        b = brute_force(u, edges, p, t, a, loss)
        assert m.objective == pytest.approx(b.objective, abs=1e-9)
    with pytest.raises(ValueError, match="integer"):
        milp_oracle(u, edges, p, t, a + 0.5, loss)


def test_oracle_inputs_are_checked():
    rng = np.random.default_rng(6)
    u, edges, p, t, a = instance(rng, 6)
    with pytest.raises(ValueError, match="rule"):
        lp_oracle(u, edges, p, t, a, IoULoss(), rule="largest")
    tri = triangulate(IoULoss(), 1.0, 5.0, n_triangles=4)
    with pytest.raises(ValueError, match="triangulation"):
        lp_oracle(u, edges, p, t, a, IoULoss(), triangulation=tri)
    with pytest.raises(ValueError):
        ProposedOracle(inference="simplex")


def test_seeding_from_a_previous_call_keeps_the_answer_exact():
    # ProposedOracle starts each call from the last call's labellings for the
    # same graph; with w changed in between, answers must still be exact.
    rng = np.random.default_rng(7)
    u, edges, p, t, a = instance(rng, 30, density=0.1)
    oracle = ProposedOracle(20)
    for _ in range(4):
        res = oracle(u, edges, p, t, a, IoULoss())
        milp = milp_oracle(u, edges, p, t, a, IoULoss())
        assert res.objective >= milp.objective - 1e-9 and res.bound >= milp.objective - 1e-9
        u = u + 0.3 * rng.normal(size=u.size)
