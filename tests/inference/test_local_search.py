"""Greedy flips: gains are exact, the objective never drops, and the single
false positive that is optimal on an image without foreground is found."""
import numpy as np
import pytest

from segstruct.inference import loss_augmented
from segstruct.inference import score
from segstruct.inference.brute_force import brute_force
from segstruct.inference.local_search import flip_gains, polish
from segstruct.inference.losses import counts, get_loss, totals
from segstruct.inference.milp import milp_oracle
from segstruct.inference.proposed import ProposedOracle


def instance(rng, n=9, background_only=False):
    u = rng.normal(size=n)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.4]
    edges = np.array(pairs, np.int64).reshape(-1, 2)
    p = -rng.uniform(0, 1, len(edges))
    t = np.zeros(n, np.uint8) if background_only else (rng.random(n) < 0.4).astype(np.uint8)
    a = rng.integers(1, 4, n).astype(float)
    return u, edges, p, t, a


def objective(u, edges, p, t, a, loss, y):
    fp, fn = counts(y, t, a)
    return float(loss(fp, fn, *totals(t, a))) + score(u, edges, p, y)


@pytest.mark.parametrize("name", ["iou", "f1", "hamming"])
def test_flip_gains_are_the_objective_changes(name):
    rng = np.random.default_rng(0)
    loss = get_loss(name)
    for _ in range(20):
        u, edges, p, t, a = instance(rng)
        y = rng.integers(0, 2, len(u)).astype(np.uint8)
        base = objective(u, edges, p, t, a, loss, y)
        expect = []
        for i in range(len(u)):
            z = y.copy()
            z[i] ^= 1
            expect.append(objective(u, edges, p, t, a, loss, z) - base)
        np.testing.assert_allclose(flip_gains(u, edges, p, t, a, loss, y), expect,
                                   rtol=1e-9, atol=1e-9)


def test_polish_never_lowers_and_ends_at_a_flip_optimum():
    rng = np.random.default_rng(1)
    loss = get_loss("iou")
    for _ in range(30):
        u, edges, p, t, a = instance(rng)
        y0 = rng.integers(0, 2, len(u)).astype(np.uint8)
        y, n = polish(u, edges, p, t, a, loss, y0)
        assert objective(u, edges, p, t, a, loss, y) >= objective(u, edges, p, t, a, loss, y0)
        assert np.all(flip_gains(u, edges, p, t, a, loss, y) <= 1e-9)
        assert (n == 0) == np.array_equal(y, y0)


def test_no_foreground_image_single_false_positive_is_found():
    # Np = 0: IoU is 0 at FP = 0 and 1 at any FP > 0; a cheap node to switch
    # on makes FP = 1 the optimum, which no loss plane reaches
    # switching node 0 alone costs 0.5; nodes 1 and 2 cost 1.0 alone (their
    # edge) but 0.8 together, so g(FP) = 0, -0.5, -0.8 and FP = 1 lies below
    # the chord of FP = 0 and 2: no plane picks it, yet it is the optimum
    u = np.array([-0.25, -0.2, -0.2, -3.0])
    edges = np.array([[1, 2], [2, 3]])
    p = np.array([-0.6, -0.01])
    t = np.zeros(4, np.uint8)
    a = np.ones(4)
    exact = milp_oracle(u, edges, p, t, a, "iou")
    assert exact.fp == 1
    plain = ProposedOracle(6, "decomposition", polish=False)(u, edges, p, t, a, "iou")
    polished = ProposedOracle(6, "decomposition")(u, edges, p, t, a, "iou")
    assert plain.objective < exact.objective - 1e-6          # the case polishing is for
    assert polished.objective == pytest.approx(exact.objective)
    assert polished.bound >= exact.objective - 1e-9 and polished.info["flips"] >= 1
    # the envelope inference needs no flips: FP = 1 is a point its planes cannot
    # rule out, and the restricted MILP settles it
    envelope = ProposedOracle(6, "envelope", polish=False)(u, edges, p, t, a, "iou")
    assert envelope.objective == pytest.approx(exact.objective)
    assert envelope.info["certified"] and envelope.bound == pytest.approx(exact.objective)


@pytest.mark.parametrize("inference", ["decomposition", "lp"])
def test_polished_oracle_is_exact_on_random_small_instances(inference):
    rng = np.random.default_rng(2)
    misses = 0
    for k in range(40):
        u, edges, p, t, a = instance(rng, n=10, background_only=k % 4 == 0)
        exact = brute_force(u, edges, p, t, a, "iou")
        res = ProposedOracle(15, inference=inference)(u, edges, p, t, a, "iou")
        assert res.objective <= exact.objective + 1e-9
        assert res.bound >= exact.objective - 1e-9
        misses += res.objective < exact.objective - 1e-9
    assert misses == 0


def test_graph_cut_results_are_already_flip_optimal_for_hamming():
    rng = np.random.default_rng(3)
    for _ in range(10):
        u, edges, p, t, a = instance(rng)
        res = loss_augmented(u, edges, p, t, a, "hamming")
        assert polish(u, edges, p, t, a, get_loss("hamming"), res.labels)[1] == 0


def test_lp_oracle_offers_its_best_distinct_candidates_as_starts():
    rng = np.random.default_rng(4)
    from segstruct.inference.lp import lp_oracle
    loss = get_loss("iou")
    u, edges, p, t, a = instance(rng, n=8)
    res = lp_oracle(u, edges, p, t, a, loss, n_triangles=6)
    starts = res.info["labellings"]
    objectives = [objective(u, edges, p, t, a, loss, y) for y in starts]
    assert 1 <= len(starts) <= 8 and len({y.tobytes() for y in starts}) == len(starts)
    assert objectives == sorted(objectives, reverse=True)
    assert objectives[0] == pytest.approx(res.objective)
