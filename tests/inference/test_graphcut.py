"""Graph-cut inference against brute force, and brute force against a naive loop.

The reference values here come from plain Python loops over edges and nodes
(`naive_*` below), never from the code under test.
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segstruct.inference import (
    InferenceResult,
    NotSubmodularError,
    brute_force,
    loss_augmented,
    maximize,
    score,
)
from segstruct.inference.losses import AdjustedHammingLoss, FBetaLoss, HammingLoss, IoULoss

TOL = 1e-9


# ---- naive references ----------------------------------------------------------

def naive_score(u, edges, p, y):
    s = sum((2 * int(y[i]) - 1) * u[i] for i in range(len(u)))
    s += sum(p[k] for k, (i, j) in enumerate(edges) if y[i] != y[j])
    return float(s)


def naive_counts(y, t, a):
    fp = sum(a[i] for i in range(len(y)) if y[i] == 1 and t[i] == 0)
    fn = sum(a[i] for i in range(len(y)) if y[i] == 0 and t[i] == 1)
    n_pos = sum(a[i] for i in range(len(y)) if t[i] == 1)
    n_neg = sum(a[i] for i in range(len(y)) if t[i] == 0)
    return fp, fn, n_pos, n_neg


def naive_objective(u, edges, p, y, t=None, a=None, delta=None):
    """score(y) + delta(FP, FN, Np, Nn), with delta a plain function of four numbers."""
    value = naive_score(u, edges, p, y)
    if delta is not None:
        a = np.ones(len(u)) if a is None else a
        value += delta(*naive_counts(y, t, a))
    return value


def naive_optimum(u, edges, p, t=None, a=None, delta=None):
    """(max value, all maximisers within 1e-12) by itertools.product."""
    values = {y: naive_objective(u, edges, p, y, t, a, delta)
              for y in itertools.product((0, 1), repeat=len(u))}
    best = max(values.values())
    return best, [y for y, v in values.items() if v >= best - 1e-12]


def hamming(fp, fn, n_pos, n_neg):
    return fp + fn


def iou(fp, fn, n_pos, n_neg):
    return (fp + fn) / (n_pos + fp) if n_pos + fp > 0 else 0.0


def f1(fp, fn, n_pos, n_neg):
    tp = n_pos - fn
    den = 2 * tp + fn + fp
    return 1 - 2 * tp / den if den > 0 else 0.0


# ---- random instances ----------------------------------------------------------

def random_mrf(rng, n, density=None, integer=False, scale=1.0):
    """Random attractive MRF on a random graph: u (N,), edges (E, 2) i<j, p (E,) <= 0."""
    density = rng.uniform(0.1, 0.9) if density is None else density
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = np.array([e for e in pairs if rng.random() < density], dtype=int).reshape(-1, 2)
    if integer:
        u = rng.integers(-3, 4, n).astype(float)
        p = -rng.integers(0, 3, len(edges)).astype(float)
    else:
        u = rng.normal(size=n) * scale
        p = -rng.exponential(size=len(edges)) * scale
        p[rng.random(len(edges)) < 0.1] = 0.0
    return u, edges, p


def random_targets(rng, n, area=False):
    t = rng.integers(0, 2, n)
    if not area:
        return t, None
    a = rng.uniform(0, 3, n)
    a[rng.random(n) < 0.15] = 0.0  # superpixels with only void pixels
    return t, a


# ---- score ---------------------------------------------------------------------

def test_score_matches_naive_single_and_batch():
    rng = np.random.default_rng(1)
    u, edges, p = random_mrf(rng, 9)
    p[::3] *= -1  # score itself works for any sign
    ys = rng.integers(0, 2, (20, 9))
    batch = score(u, edges, p, ys)
    assert batch.shape == (20,)
    for y, s in zip(ys, batch):
        expected = naive_score(u, edges, p, y)
        assert s == pytest.approx(expected, abs=TOL)
        single = score(u, edges, p, y)
        assert isinstance(single, float) and single == pytest.approx(expected, abs=TOL)


# ---- maximize ------------------------------------------------------------------

def test_maximize_equals_brute_force_plain_score():
    rng = np.random.default_rng(2)
    for _ in range(150):
        n = int(rng.integers(1, 15))
        u, edges, p = random_mrf(rng, n, scale=rng.choice([0.1, 1.0, 10.0]))
        y, value = maximize(u, edges, p)
        assert y.dtype == np.uint8 and y.shape == (n,) and set(np.unique(y)) <= {0, 1}
        ref = brute_force(u, edges, p)
        assert value == pytest.approx(ref.objective, abs=TOL)
        # Equal up to ties: the graph-cut labelling is itself a maximiser.
        assert naive_score(u, edges, p, y) == pytest.approx(ref.objective, abs=TOL)


def test_maximize_with_linear_and_constant_equals_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(100):
        n = int(rng.integers(1, 13))
        u, edges, p = random_mrf(rng, n)
        linear = rng.normal(size=n) * 2
        constant = rng.normal() * 5
        y, value = maximize(u, edges, p, linear=linear, constant=constant)
        # Brute force on the same objective: fold linear into the unaries,
        # (2y-1)(u + l/2) = (2y-1)u + l y - l/2.
        ref = brute_force(u + linear / 2, edges, p).objective + linear.sum() / 2 + constant
        assert value == pytest.approx(ref, abs=TOL)
        direct = naive_score(u, edges, p, y) + float(linear @ y) + constant
        assert value == pytest.approx(direct, abs=1e-12)


def test_maximize_value_is_recomputed_from_labels():
    rng = np.random.default_rng(4)
    u, edges, p = random_mrf(rng, 12, density=0.5)
    linear = rng.normal(size=12)
    y, value = maximize(u, edges, p, linear=linear, constant=3.25)
    assert value == score(u, edges, p, y) + float(linear @ y) + 3.25


def test_exact_ties_break_to_fewest_ones_like_brute_force():
    # Integer data: every sum is exact, so ties are real ties. The graph cut
    # documents the minimal maximiser; brute force the lowest index sum y_i 2^i.
    # For a submodular problem these are the same labelling.
    rng = np.random.default_rng(5)
    for _ in range(150):
        n = int(rng.integers(1, 11))
        u, edges, p = random_mrf(rng, n, integer=True)
        t, _ = random_targets(rng, n)
        y, _ = maximize(u, edges, p)
        np.testing.assert_array_equal(y, brute_force(u, edges, p).labels)
        res = loss_augmented(u, edges, p, t, None, HammingLoss())
        np.testing.assert_array_equal(res.labels, brute_force(u, edges, p, t, None, "hamming").labels)


def test_all_ties_give_all_zero():
    y, value = maximize(np.zeros(5), np.array([[0, 1], [1, 2], [3, 4]]), np.zeros(3))
    np.testing.assert_array_equal(y, np.zeros(5))
    assert value == 0.0


def test_small_edge_cases():
    # N = 0: the empty labelling; its score is 0.
    y, value = maximize(np.zeros(0), np.zeros((0, 2), int), np.zeros(0), constant=1.5)
    assert y.shape == (0,) and y.dtype == np.uint8 and value == 1.5
    assert brute_force(np.zeros(0), [], []).objective == 0.0
    # N = 1.
    y, value = maximize([0.5], [], [])
    assert list(y) == [1] and value == 0.5
    y, value = maximize([-0.5], [], [])
    assert list(y) == [0] and value == 0.5
    # E = 0: independent nodes, y_i = 1 iff 2 u_i + linear_i > 0.
    u = np.array([1.0, -1.0, 0.2, -0.2])
    lin = np.array([0.0, 3.0, -1.0, 0.0])
    y, value = maximize(u, np.zeros((0, 2), int), np.zeros(0), linear=lin)
    assert list(y) == [1, 1, 0, 0]
    # unaries (2y-1)u: +1 - 1 - 0.2 + 0.2 = 0; linear: 3 from node 1.
    assert value == pytest.approx(3.0)
    # A strong attractive edge overrides a weak unary.
    y, _ = maximize([1.0, -0.1], [[0, 1]], [-5.0])
    assert list(y) == [1, 1]


# ---- loss-augmented inference --------------------------------------------------

LINEAR_LOSSES = ["hamming", "adjusted_hamming"]


@pytest.mark.parametrize("kind", LINEAR_LOSSES)
@pytest.mark.parametrize("area", [False, True])
def test_loss_augmented_equals_brute_force(kind, area):
    rng = np.random.default_rng([LINEAR_LOSSES.index(kind), int(area)])
    for _ in range(60):
        n = int(rng.integers(1, 15))
        u, edges, p = random_mrf(rng, n, scale=rng.choice([0.3, 1.0, 3.0]))
        t, a = random_targets(rng, n, area)
        if kind == "hamming":
            loss, delta = HammingLoss(), hamming
        else:
            kappa = float(rng.uniform(0.05, 5.0))
            loss = AdjustedHammingLoss(kappa)

            def delta(fp, fn, n_pos, n_neg, kappa=kappa):
                return kappa * fp + fn
        res = loss_augmented(u, edges, p, t, a, loss)
        ref = brute_force(u, edges, p, t, a, loss)
        assert isinstance(res, InferenceResult)
        assert res.objective == pytest.approx(ref.objective, abs=TOL)
        assert res.bound == res.objective
        # Equal up to ties, checked with the naive evaluator.
        truth = naive_objective(u, edges, p, res.labels, t, a, delta)
        assert truth == pytest.approx(ref.objective, abs=TOL)
        assert res.objective == pytest.approx(truth, abs=TOL)
        # The parts are consistent.
        weights = np.ones(n) if a is None else a
        fp, fn, n_pos, n_neg = naive_counts(res.labels, t, weights)
        assert res.fp == pytest.approx(fp, abs=TOL) and res.fn == pytest.approx(fn, abs=TOL)
        assert res.loss == pytest.approx(delta(fp, fn, n_pos, n_neg), abs=TOL)
        assert res.score == pytest.approx(naive_score(u, edges, p, res.labels), abs=TOL)
        assert res.objective == res.loss + res.score


def test_loss_augmented_accepts_names_and_rejects_nonlinear_losses():
    rng = np.random.default_rng(6)
    u, edges, p = random_mrf(rng, 6)
    t, a = random_targets(rng, 6, area=True)
    by_name = loss_augmented(u, edges, p, t, a, "hamming")
    assert by_name.objective == loss_augmented(u, edges, p, t, a, HammingLoss()).objective
    for loss in (IoULoss(), FBetaLoss(1.0), "f1", lambda fp, fn, q, r: fp + fn):
        with pytest.raises(ValueError, match="LP"):
            loss_augmented(u, edges, p, t, a, loss)


def test_loss_augmented_validation():
    u, edges, p = np.zeros(3), np.array([[0, 1]]), np.array([-1.0])
    with pytest.raises(ValueError, match="shape"):
        loss_augmented(u, edges, p, np.array([0, 1]), None, "hamming")
    with pytest.raises(ValueError):
        loss_augmented(u, edges, p, np.array([0, 1, 2]), None, "hamming")
    with pytest.raises(ValueError):
        loss_augmented(u, edges, p, np.array([0, 1, 1]), np.ones(2), "hamming")
    with pytest.raises(NotSubmodularError):
        loss_augmented(u, edges, np.array([1.0]), np.array([0, 1, 1]), None, "hamming")


# ---- validation ----------------------------------------------------------------

def test_positive_pairwise_raises_not_submodular():
    u = np.zeros(4)
    edges = np.array([[0, 1], [1, 2], [2, 3]])
    p = np.array([-1.0, 0.5, 2.0])
    with pytest.raises(NotSubmodularError) as err:
        maximize(u, edges, p)
    assert isinstance(err.value, ValueError)
    assert "2" in str(err.value) and "max 2" in str(err.value)
    # Brute force is the reference for any sign.
    assert brute_force(u, edges, p).objective == pytest.approx(naive_optimum(u, edges, p)[0])


@pytest.mark.parametrize("u, edges, p, match", [
    (np.zeros((2, 2)), np.zeros((0, 2), int), np.zeros(0), "shape"),
    (np.zeros(3), np.array([[0, 1, 2]]), np.zeros(1), "shape"),
    (np.zeros(3), np.array([0, 1]), np.zeros(1), "shape"),
    (np.zeros(3), np.array([[0, 1]]), np.zeros(2), "shape"),
    (np.zeros(3), np.array([[0, 3]]), np.zeros(1), "range|\\[0, 3\\)"),
    (np.zeros(3), np.array([[-1, 2]]), np.zeros(1), "range|\\[0, 3\\)"),
    (np.zeros(3), np.array([[1, 1]]), np.zeros(1), "self loop"),
    (np.zeros(3), np.array([[0.5, 1]]), np.zeros(1), "integer"),
    (np.array([0.0, np.nan, 0.0]), np.array([[0, 1]]), np.zeros(1), "finite"),
    (np.array([0.0, np.inf, 0.0]), np.array([[0, 1]]), np.zeros(1), "finite"),
    (np.zeros(3), np.array([[0, 1]]), np.array([-np.inf]), "finite"),
])
def test_input_validation(u, edges, p, match):
    for solver in (maximize, brute_force):
        with pytest.raises(ValueError, match=match):
            solver(u, edges, p)
    with pytest.raises(ValueError, match=match):
        score(u, edges, p, np.zeros(len(np.atleast_1d(u)), int))


def test_maximize_validation_of_linear_and_constant():
    u, edges, p = np.zeros(3), np.array([[0, 1]]), np.array([-1.0])
    with pytest.raises(ValueError, match="shape"):
        maximize(u, edges, p, linear=np.zeros(2))
    with pytest.raises(ValueError, match="finite"):
        maximize(u, edges, p, linear=np.array([0.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="finite"):
        maximize(u, edges, p, constant=np.inf)
    with pytest.raises(ValueError):
        score(u, edges, p, np.array([0, 2, 1]))
    with pytest.raises(ValueError):
        score(u, edges, p, np.array([0, 1]))


def test_float_edges_with_integer_values_are_accepted():
    u = np.array([1.0, -0.2, -0.2])
    y1, v1 = maximize(u, np.array([[0.0, 1.0], [1.0, 2.0]]), np.array([-1.0, -1.0]))
    y2, v2 = maximize(u, np.array([[0, 1], [1, 2]]), np.array([-1.0, -1.0]))
    np.testing.assert_array_equal(y1, y2)
    assert v1 == v2


# ---- hypothesis ----------------------------------------------------------------

@st.composite
def small_mrfs(draw):
    n = draw(st.integers(1, 7))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []
    finite = dict(allow_nan=False, allow_infinity=False)
    u = draw(st.lists(st.floats(-10, 10, **finite), min_size=n, max_size=n))
    p = draw(st.lists(st.floats(-10, 0, **finite), min_size=len(edges), max_size=len(edges)))
    t = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    kappa = draw(st.floats(0.01, 100))
    return (np.array(u), np.array(edges, dtype=int).reshape(-1, 2), np.array(p),
            np.array(t), kappa)


@settings(max_examples=150, deadline=None)
@given(small_mrfs())
def test_graphcut_matches_naive_optimum_hypothesis(mrf):
    u, edges, p, t, kappa = mrf
    best, _ = naive_optimum(u, edges, p)
    y, value = maximize(u, edges, p)
    assert value == pytest.approx(best, abs=TOL)
    assert naive_score(u, edges, p, y) == pytest.approx(best, abs=TOL)

    def delta(fp, fn, n_pos, n_neg):
        return kappa * fp + fn
    best, _ = naive_optimum(u, edges, p, t, None, delta)
    res = loss_augmented(u, edges, p, t, None, AdjustedHammingLoss(kappa))
    assert res.objective == pytest.approx(best, abs=TOL)
    assert naive_objective(u, edges, p, res.labels, t, None, delta) == pytest.approx(best, abs=TOL)


# ---- brute force on its own ----------------------------------------------------

@pytest.mark.parametrize("loss, delta", [(None, None), ("hamming", hamming), (IoULoss(), iou),
                                         ("f1", f1), (iou, iou)])
def test_brute_force_matches_itertools_loop(loss, delta):
    rng = np.random.default_rng(7)
    for _ in range(25):
        n = int(rng.integers(1, 7))
        u, edges, p = random_mrf(rng, n)
        p = p * rng.choice([-1.0, 1.0], size=p.shape)  # any sign
        t, a = random_targets(rng, n, area=bool(rng.integers(0, 2)))
        best, maximisers = naive_optimum(u, edges, p, t, a, delta)
        res = brute_force(u, edges, p, t if loss is not None else None, a, loss)
        assert res.objective == pytest.approx(best, abs=1e-12)
        assert res.bound == res.objective
        assert tuple(res.labels) in maximisers
        assert res.labels.dtype == np.uint8
        assert res.info["n_labellings"] == 2 ** n


def test_brute_force_tie_break_is_lowest_index():
    # Integer data (exact sums) with positive and negative couplings.
    rng = np.random.default_rng(8)
    for _ in range(60):
        n = int(rng.integers(1, 7))
        u, edges, p = random_mrf(rng, n, integer=True)
        p = p * rng.choice([-1.0, 1.0], size=p.shape)
        _, maximisers = naive_optimum(u, edges, p)
        lowest = min(maximisers, key=lambda y: sum(b << i for i, b in enumerate(y)))
        assert tuple(brute_force(u, edges, p).labels) == lowest


def test_brute_force_without_loss_reports_counts_when_given_targets():
    u, edges, p = np.array([1.0, -1.0, 1.0]), np.array([[0, 1]]), np.array([-0.5])
    res = brute_force(u, edges, p, t=np.array([1, 1, 0]))
    assert list(res.labels) == [1, 0, 1]
    assert res.loss == 0.0 and res.objective == res.score == pytest.approx(2.5)
    assert (res.fp, res.fn) == (1.0, 1.0)
    res = brute_force(u, edges, p)
    assert res.fp is None and res.fn is None


def test_brute_force_limits_and_errors():
    with pytest.raises(ValueError, match="max_nodes"):
        brute_force(np.zeros(17), [], [])
    with pytest.raises(ValueError, match="max_nodes"):
        brute_force(np.zeros(5), [], [], max_nodes=4)
    with pytest.raises(ValueError, match="targets"):
        brute_force(np.zeros(3), [], [], loss="iou")
    with pytest.raises(ValueError, match="shape"):
        brute_force(np.zeros(3), [], [], t=np.array([0, 1]), loss="iou")
    with pytest.raises(ValueError, match="non-finite"):
        brute_force(np.zeros(3), [], [], t=np.array([0, 1, 1]),
                    loss=lambda fp, fn, q, r: np.full(np.shape(fp), np.nan))


def test_brute_force_chunks_agree_with_graphcut_at_sixteen_nodes():
    # 2^16 labellings span several chunks: the chunked maximum must be global.
    rng = np.random.default_rng(9)
    u, edges, p = random_mrf(rng, 16, density=0.3)
    t, a = random_targets(rng, 16, area=True)
    ref = brute_force(u, edges, p, t, a, "hamming")
    res = loss_augmented(u, edges, p, t, a, "hamming")
    assert res.objective == pytest.approx(ref.objective, abs=TOL)


def test_brute_force_ties_across_chunks_keep_the_first():
    # All 2^15 labellings score 0: the answer must be labelling 0 (all zeros),
    # not the first of a later chunk.
    res = brute_force(np.zeros(15), [], [])
    np.testing.assert_array_equal(res.labels, np.zeros(15))
    # Only y_14 matters and is indifferent: still all zeros.
    res = brute_force(np.zeros(15), [[13, 14]], [0.0])
    np.testing.assert_array_equal(res.labels, np.zeros(15))
