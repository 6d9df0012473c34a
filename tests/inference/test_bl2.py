"""BL2 (exact loss-augmented inference for the unary-only model) against brute force."""
import importlib
import math

import numpy as np
import pytest

from segstruct.inference import bl2, brute_force, loss_augmented
from segstruct.inference.losses import FBetaLoss, get_loss

bl2_module = importlib.import_module("segstruct.inference.bl2")

NO_EDGES = np.zeros((0, 2), np.int64)
NO_P = np.zeros(0)


def wavy(fp, fn, n_pos, n_neg):
    """Non-monotone in FP and FN: the best labelling is not a threshold of u."""
    return np.sin(1.3 * fp) + 0.5 * np.sqrt(fn) * (1.0 + n_pos) / (1.0 + n_neg)


def scalar_only(fp, fn, n_pos, n_neg):
    """Works on scalars only (math.*), so CallableLoss applies it element-wise."""
    return math.cos(fp) + 0.3 * fn ** 1.5 - 0.1 * fp * fn


LOSSES = {
    "iou": "iou",
    "f1": "f1",
    "f2": FBetaLoss(2.0),
    "hamming": "hamming",
    "wavy": wavy,
    "scalar_only": scalar_only,
}


def random_problem(rng, max_nodes=12, void_prob=0.25):
    n = int(rng.integers(0, max_nodes + 1))
    scale = rng.choice([0.05, 0.3, 1.0, 3.0])
    if rng.random() < 0.25:
        u = rng.integers(-2, 3, n) * 0.5 * scale       # many exact ties
    else:
        u = rng.normal(size=n) * scale
    t = rng.integers(0, 2, n)
    a = (rng.random(n) >= void_prob).astype(float) if rng.random() < 0.6 else np.ones(n)
    return u, t, a


def check_consistent(res, u, t, a, loss):
    """fp / fn / loss / score / objective recomputed here from the labels."""
    y = np.asarray(res.labels)
    assert y.shape == u.shape and y.dtype == np.uint8
    assert np.all((y == 0) | (y == 1))
    a = np.ones(u.size) if a is None else np.asarray(a, float)
    yf = y.astype(float)
    fp = float(np.sum(a * (1 - t) * yf))
    fn = float(np.sum(a * t * (1 - yf)))
    score = float(np.sum((2 * yf - 1) * u))
    delta = float(get_loss(loss)(fp, fn, float(a @ t), float(a @ (1 - t))))
    assert res.fp == pytest.approx(fp, abs=1e-12)
    assert res.fn == pytest.approx(fn, abs=1e-12)
    assert res.score == pytest.approx(score, abs=1e-12)
    assert res.loss == pytest.approx(delta, abs=1e-12)
    assert res.objective == pytest.approx(delta + score, abs=1e-12)
    assert res.bound == res.objective
    assert res.info == {"method": "bl2"}
    # Void nodes are labelled by the sign of u.
    void = a == 0
    assert np.array_equal(y[void], (u[void] > 0).astype(np.uint8))


@pytest.mark.parametrize("name", list(LOSSES))
def test_matches_brute_force(name):
    loss = LOSSES[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    for _ in range(70):
        u, t, a = random_problem(rng)
        res = bl2(u, NO_EDGES, NO_P, t, a, loss)
        ref = brute_force(u, NO_EDGES, NO_P, t, a, loss)
        assert res.objective == pytest.approx(ref.objective, abs=1e-9)
        check_consistent(res, u, t, a, loss)


@pytest.mark.parametrize("name", ["iou", "f1", "wavy"])
@pytest.mark.parametrize("all_label", [0, 1])
def test_single_class(name, all_label):
    """Np = 0 (all negatives) or Nn = 0 (all positives), with and without voids."""
    loss = LOSSES[name]
    rng = np.random.default_rng(7 + all_label)
    for _ in range(20):
        n = int(rng.integers(1, 11))
        u = rng.normal(size=n) * rng.choice([0.1, 1.0])
        t = np.full(n, all_label)
        a = (rng.random(n) > 0.3).astype(float)
        for weights in (a, None):
            res = bl2(u, NO_EDGES, NO_P, t, weights, loss)
            ref = brute_force(u, NO_EDGES, NO_P, t, weights, loss)
            assert res.objective == pytest.approx(ref.objective, abs=1e-9)
            check_consistent(res, u, t, weights, loss)


def test_all_void_and_empty():
    u = np.array([0.5, -0.2, 0.0])
    res = bl2(u, NO_EDGES, NO_P, np.array([1, 0, 1]), np.zeros(3), "iou")
    assert res.labels.tolist() == [1, 0, 0]
    assert res.fp == 0 and res.fn == 0 and res.loss == 0
    assert res.objective == pytest.approx(0.5 + 0.2 + 0.0)
    empty = bl2(np.zeros(0), NO_EDGES, NO_P, np.zeros(0, int), None, "f1")
    assert empty.labels.shape == (0,) and empty.objective == 0.0


def test_zero_pairwise_edges_are_accepted():
    rng = np.random.default_rng(3)
    for _ in range(30):
        u, t, a = random_problem(rng, max_nodes=10)
        n = u.size
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.4]
        edges = np.array(pairs, np.int64).reshape(-1, 2)
        p = np.zeros(len(edges))
        res = bl2(u, edges, p, t, a, "iou")
        ref = brute_force(u, edges, p, t, a, "iou")
        assert res.objective == pytest.approx(ref.objective, abs=1e-9)


def test_chunked_evaluation_matches(monkeypatch):
    """Tiny batches (one FP value per batch) give the same optimum and labels."""
    rng = np.random.default_rng(11)
    problems = [random_problem(rng) for _ in range(60)]
    unchunked = [bl2(u, NO_EDGES, NO_P, t, a, wavy) for u, t, a in problems]
    monkeypatch.setattr(bl2_module, "_CHUNK", 3)
    for (u, t, a), first in zip(problems, unchunked):
        res = bl2(u, NO_EDGES, NO_P, t, a, wavy)
        ref = brute_force(u, NO_EDGES, NO_P, t, a, wavy)
        assert res.objective == pytest.approx(ref.objective, abs=1e-9)
        assert np.array_equal(res.labels, first.labels)


def test_large_hamming_matches_graph_cut():
    """Several default-size batches; Hamming is decomposable, so a graph cut is exact."""
    rng = np.random.default_rng(5)
    n = 4000
    u = rng.normal(size=n) * 0.7
    t = (rng.random(n) < 0.4).astype(int)
    a = (rng.random(n) > 0.05).astype(float)
    res = bl2(u, NO_EDGES, NO_P, t, a, "hamming")
    ref = loss_augmented(u, NO_EDGES, NO_P, t, a, "hamming")
    assert res.objective == pytest.approx(ref.objective, rel=1e-12)
    check_consistent(res, u, t, a, "hamming")


@pytest.mark.parametrize("chunk", [None, 1])
def test_tie_breaking_is_documented_rule(chunk, monkeypatch):
    if chunk is not None:  # one FP value per batch: ties across batches too
        monkeypatch.setattr(bl2_module, "_CHUNK", chunk)
    # Every (FP, FN) pair ties: fewest FP, then fewest FN -> y = t on counted nodes.
    t = np.array([1, 0, 1, 0, 1])
    a = np.array([1.0, 1.0, 0.0, 1.0, 1.0])
    res = bl2(np.zeros(5), NO_EDGES, NO_P, t, a, lambda fp, fn, P, N: 0.0 * fp)
    assert res.labels.tolist() == [1, 0, 0, 0, 1]
    # One false positive is best (+2 - 1 = 1, a second adds 0): the negatives
    # tie on u, so the lowest index is switched on.
    t = np.array([0, 1, 0, 0])
    u = np.array([-0.5, 1.0, -0.5, -0.5])
    step = lambda fp, fn, P, N: 2.0 * (fp >= 1)  # noqa: E731
    res = bl2(u, NO_EDGES, NO_P, t, None, step)
    assert res.labels.tolist() == [1, 1, 0, 0]
    assert res.objective == pytest.approx(brute_force(u, NO_EDGES, NO_P, t, None, step).objective)


def test_no_loss_maximises_score():
    u = np.array([0.3, -0.1, 0.0, 2.0])
    res = bl2(u, NO_EDGES, NO_P, np.array([0, 1, 1, 0]), None, None)
    # Node 2 (a positive with u = 0) ties; the rule keeps FN lowest: y = 1.
    assert res.labels.tolist() == [1, 0, 1, 1]
    assert res.loss == 0.0 and res.objective == pytest.approx(np.abs(u).sum())


@pytest.mark.parametrize("bad", [2.0, 0.5, 1e-3])
def test_non_unit_weights_rejected(bad):
    a = np.array([1.0, bad, 1.0])
    with pytest.raises(ValueError, match="unit node weights"):
        bl2(np.zeros(3), NO_EDGES, NO_P, np.array([1, 0, 1]), a, "iou")


def test_nonzero_pairwise_rejected():
    edges = np.array([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="unary-only"):
        bl2(np.zeros(3), edges, np.array([0.0, -0.1]), np.array([1, 0, 1]), None, "iou")


def test_bad_inputs_rejected():
    with pytest.raises(ValueError, match="targets"):
        bl2(np.zeros(3), NO_EDGES, NO_P, None, None, "iou")
    with pytest.raises(ValueError):
        bl2(np.zeros(3), NO_EDGES, NO_P, np.array([1, 0]), None, "iou")
    with pytest.raises(ValueError):
        bl2(np.zeros(3), NO_EDGES, NO_P, np.array([1, 0, 2]), None, "iou")
    with pytest.raises(ValueError):
        bl2(np.zeros(2), NO_EDGES, NO_P, np.array([1, 0]), np.array([1.0, -1.0]), "iou")
    with pytest.raises(ValueError, match="non-finite"):
        bl2(np.zeros(2), NO_EDGES, NO_P, np.array([1, 0]), None,
            lambda fp, fn, P, N: fp + np.inf)


CONCAVE = ["iou", "f1", FBetaLoss(0.5), FBetaLoss(2.0), "hamming", "adjusted_hamming"]


def _loss(spec):
    return get_loss(spec, kappa=0.3) if spec == "adjusted_hamming" else get_loss(spec)


@pytest.mark.parametrize("spec", CONCAVE)
def test_concave_in_fp_holds(spec):
    """The promise BL2's bisection relies on: second differences in FP are <= 0."""
    loss = _loss(spec)
    assert loss.concave_in_fp
    for n_pos in range(0, 9):
        for n_neg in range(0, 9):
            fp = np.arange(n_neg + 1, dtype=float)[:, None]
            fn = np.arange(n_pos + 1, dtype=float)[None, :]
            values = loss(fp, fn, n_pos, n_neg)
            assert np.all(np.diff(values, n=2, axis=0) <= 1e-12), (n_pos, n_neg)


def test_callable_losses_are_not_assumed_concave():
    assert not get_loss(wavy).concave_in_fp


@pytest.mark.parametrize("spec", CONCAVE + [None])
def test_bisection_matches_full_scan(spec):
    """Same optimum as evaluating every (FP, FN) pair, and the same pair when it is unique."""
    loss = None if spec is None else _loss(spec)
    rng = np.random.default_rng(17)
    for trial in range(60):
        n = int(rng.integers(0, 400))
        u = (rng.integers(-3, 4, n) * 0.25 if trial % 4 == 0 else rng.normal(size=n)) \
            * rng.choice([0.01, 0.3, 3.0])
        t = (rng.random(n) < rng.choice([0.0, 0.1, 0.5, 1.0])).astype(float)
        gain = np.concatenate([[0.0], np.cumsum(2.0 * np.sort(u[t == 0])[::-1])])
        cost = np.concatenate([[0.0], np.cumsum(2.0 * np.sort(u[t == 1]))])
        n_pos, n_neg = float(t.sum()), float(n - t.sum())
        jb, kb = bl2_module._bisect_pairs(gain, cost, loss, n_pos, n_neg)
        js, ks = bl2_module._scan_pairs(gain, cost, loss, n_pos, n_neg)
        value = lambda j, k: bl2_module._pair_values(  # noqa: E731
            gain, cost, loss, np.array(j), np.array(k), n_pos, n_neg)
        assert value(jb, kb) == pytest.approx(value(js, ks), abs=1e-9)
        all_values = bl2_module._pair_values(
            gain, cost, loss, np.arange(gain.size)[:, None], np.arange(cost.size)[None, :],
            n_pos, n_neg)
        if np.sum(all_values >= all_values.max() - 1e-9) == 1:
            assert (jb, kb) == (js, ks)


def test_bisection_is_used_for_named_losses(monkeypatch):
    """The named losses never reach the O(Np Nn) scan; a user callable does."""
    calls = []
    scan = bl2_module._scan_pairs
    monkeypatch.setattr(bl2_module, "_scan_pairs",
                        lambda *args: calls.append(1) or scan(*args))
    rng = np.random.default_rng(2)
    u, t = rng.normal(size=50), (rng.random(50) < 0.3).astype(int)
    for spec in ("iou", "f1", "hamming", None):
        bl2(u, NO_EDGES, NO_P, t, None, spec)
    assert calls == []
    bl2(u, NO_EDGES, NO_P, t, None, wavy)
    assert calls == [1]


def test_bisection_tie_breaking_is_documented_rule():
    """Every pair ties (u = 0, no loss): fewest FP, then fewest FN -> y = t on counted nodes."""
    t = np.array([1, 0, 1, 0, 1, 0])
    a = np.array([1.0, 1.0, 0.0, 1.0, 1.0, 1.0])
    res = bl2(np.zeros(6), NO_EDGES, NO_P, t, a, None)
    assert res.labels.tolist() == [1, 0, 0, 0, 1, 0]
    # Hamming with u = -1/2 on two negatives: each FP adds 2 u + 1 = 0, a
    # plateau FP = 0..2 that the rule settles for the fewest false positives.
    u = np.array([-0.5, -0.5, -1.0, 2.0])
    res = bl2(u, NO_EDGES, NO_P, np.array([0, 0, 0, 1]), None, "hamming")
    assert res.labels.tolist() == [0, 0, 0, 1]
