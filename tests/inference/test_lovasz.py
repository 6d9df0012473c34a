"""Tests of segstruct.inference.lovasz against brute force, hand values and
independent formulas: extension property, submodularity, convexity,
subgradients, the upper bound on the IoU loss, weights, scopes, edge cases."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segstruct.inference.losses import IoULoss, counts, totals
from segstruct.inference.lovasz import (
    jaccard_increments,
    jaccard_set_loss,
    lovasz_extension,
    lovasz_hinge,
    lovasz_hinge_dataset,
    lovasz_hinge_per_image,
)

SEEDS = st.integers(0, 2**32 - 1)
FAST = settings(max_examples=40, deadline=None)


def random_problem(rng, n, zeros=True, area=None):
    """Targets (N,) and weights (N,): unit or pixel-like weights, some zero."""
    t = rng.integers(0, 2, n)
    if area is None:
        area = rng.random() < 0.5
    a = rng.integers(1, 500, n).astype(float) if area else np.ones(n)
    if zeros:
        a[rng.random(n) < 0.25] = 0.0
    return t, a


def delta_by_definition(mask, t, a):
    """a(M) / (a(P) + a(M ∩ Neg)), 0 on 0/0: written out, not from the module."""
    num = a[mask].sum()
    den = a[t == 1].sum() + a[mask & (t == 0)].sum()
    return 0.0 if den == 0 else num / den


def extension_by_loop(x, t, a):
    """Lovász extension by its definition, one prefix set at a time."""
    order = np.argsort(-x, kind="stable")
    value, previous, mask = 0.0, 0.0, np.zeros(len(x), bool)
    for i in order:
        mask[i] = True
        current = delta_by_definition(mask, t, a)
        value += x[i] * (current - previous)
        previous = current
    return value


def all_masks(n):
    return [np.array(bits, dtype=bool) for bits in itertools.product((0, 1), repeat=n)]


# ---------------------------------------------------------------- set function

@pytest.mark.parametrize("seed", range(12))
def test_set_loss_is_the_iou_loss_of_the_labelling(seed):
    # Delta(M) must be the design's IoU loss of y = t XOR M, with counts()
    # and IoULoss from losses.py, and the written-out formula.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    t, a = random_problem(rng, n)
    n_pos, n_neg = totals(t, a)
    for mask in all_masks(n):
        y = np.where(mask, 1 - t, t)
        fp, fn = counts(y, t, a)
        expected = float(IoULoss()(fp, fn, n_pos, n_neg))
        assert jaccard_set_loss(mask, t, a) == pytest.approx(expected, abs=1e-12)
        assert delta_by_definition(mask, t, a) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_set_loss_is_submodular_and_increasing(seed):
    # The convexity of the extension and the hinge's bound rest on these two.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    t, a = random_problem(rng, n)
    masks = all_masks(n)
    values = jaccard_set_loss(np.array(masks), t, a)
    value = {m.tobytes(): v for m, v in zip(masks, values)}
    for m1, m2 in itertools.product(masks, repeat=2):
        union, inter = m1 | m2, m1 & m2
        assert value[m1.tobytes()] + value[m2.tobytes()] >= \
            value[union.tobytes()] + value[inter.tobytes()] - 1e-12
        if np.all(inter == m1):  # m1 subset of m2
            assert value[m1.tobytes()] <= value[m2.tobytes()] + 1e-12


# ---------------------------------------------------------------- extension

@pytest.mark.parametrize("seed", range(20))
def test_extension_equals_set_loss_on_every_vertex(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    t, a = random_problem(rng, n)
    for mask in all_masks(n):
        value, _ = lovasz_extension(mask.astype(float), t, a)
        assert value == pytest.approx(delta_by_definition(mask, t, a), abs=1e-12)


@FAST
@given(seed=SEEDS, n=st.integers(1, 12))
def test_extension_matches_loop_definition_off_vertices(seed, n):
    rng = np.random.default_rng(seed)
    t, a = random_problem(rng, n)
    x = rng.normal(size=n) * 3
    value, grad = lovasz_extension(x, t, a)
    assert value == pytest.approx(extension_by_loop(x, t, a), rel=1e-10, abs=1e-12)
    # The extension is positively homogeneous and linear on the sorted cone,
    # so value = grad . x.
    assert grad @ x == pytest.approx(value, rel=1e-10, abs=1e-12)
    assert np.all(grad >= 0)
    assert np.all(grad[a == 0] == 0)


def test_increments_sum_to_loss_of_all_nodes_and_match_hand_values():
    # t = (1, 0, 1), a = (1, 2, 1), order 1, 0, 2:
    # Delta({1}) = 2 / (2 + 2) = 1/2, Delta({1,0}) = 3/4, Delta(all) = 4/4.
    g = jaccard_increments([1, 0, 2], [1, 0, 1], [1.0, 2.0, 1.0])
    np.testing.assert_allclose(g, [0.5, 0.25, 0.25], atol=1e-15)


@FAST
@given(seed=SEEDS, n=st.integers(1, 10))
def test_extension_is_convex(seed, n):
    rng = np.random.default_rng(seed)
    t, a = random_problem(rng, n)
    x, z = rng.normal(size=(2, n)) * 2
    fx, gx = lovasz_extension(x, t, a)
    fz, _ = lovasz_extension(z, t, a)
    fmid, _ = lovasz_extension((x + z) / 2, t, a)
    assert fmid <= (fx + fz) / 2 + 1e-12
    # Subgradient inequality at x, tested at z.
    assert fz >= fx + gx @ (z - x) - 1e-10


# ---------------------------------------------------------------- hinge

def hinge_by_loop(theta, t, a):
    """The chosen variant written out: extension of max(m, 0) by its definition."""
    m = 1.0 - theta * (2 * t - 1)
    return extension_by_loop(np.maximum(m, 0.0), t, a)


@FAST
@given(seed=SEEDS, n=st.integers(1, 12))
def test_hinge_matches_loop_definition(seed, n):
    rng = np.random.default_rng(seed)
    t, a = random_problem(rng, n)
    theta = rng.normal(size=n) * 2
    value, _ = lovasz_hinge(theta, t, a)
    assert value == pytest.approx(hinge_by_loop(theta, t, a), rel=1e-10, abs=1e-12)


@FAST
@given(seed=SEEDS, n=st.integers(1, 10))
def test_hinge_is_convex_in_theta(seed, n):
    rng = np.random.default_rng(seed)
    t, a = random_problem(rng, n)
    th1, th2 = rng.normal(size=(2, n)) * 2
    f1, g1 = lovasz_hinge(th1, t, a)
    f2, _ = lovasz_hinge(th2, t, a)
    fmid, _ = lovasz_hinge((th1 + th2) / 2, t, a)
    assert fmid <= (f1 + f2) / 2 + 1e-12
    assert f2 >= f1 + g1 @ (th2 - th1) - 1e-10


def away_from_kinks(theta, t, a, h):
    """True if no margin of a weighted node is within 10 h of 0 or of another."""
    m = 1.0 - theta * (2 * t - 1)
    m = m[a > 0]
    if np.any(np.abs(m) < 10 * h):
        return False
    gaps = np.diff(np.sort(m))
    return gaps.size == 0 or gaps.min() > 10 * h


@pytest.mark.parametrize("seed", range(25))
def test_hinge_gradient_equals_finite_differences(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 15))
    t, a = random_problem(rng, n)
    theta = rng.normal(size=n) * 2
    h = 1e-6
    assert away_from_kinks(theta, t, a, h)  # continuous draws: ties have probability 0
    _, grad = lovasz_hinge(theta, t, a)
    numeric = np.array([(lovasz_hinge(theta + h * e, t, a)[0]
                         - lovasz_hinge(theta - h * e, t, a)[0]) / (2 * h)
                        for e in np.eye(n)])
    np.testing.assert_allclose(grad, numeric, atol=1e-6)


@pytest.mark.parametrize("seed", range(10))
def test_extension_gradient_equals_finite_differences(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    t, a = random_problem(rng, n)
    x = rng.normal(size=n)
    h = 1e-6
    _, grad = lovasz_extension(x, t, a)
    numeric = np.array([(lovasz_extension(x + h * e, t, a)[0]
                         - lovasz_extension(x - h * e, t, a)[0]) / (2 * h)
                        for e in np.eye(n)])
    np.testing.assert_allclose(grad, numeric, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, n=st.integers(1, 12), scale=st.sampled_from([0.01, 0.5, 1.0, 3.0]))
def test_hinge_upper_bounds_iou_of_thresholded_prediction(seed, n, scale):
    rng = np.random.default_rng(seed)
    t, a = random_problem(rng, n)
    # Scores near 0 and exact zeros included: y = [theta > 0] treats 0 as negative.
    theta = rng.normal(size=n) * scale
    theta[rng.random(n) < 0.2] = 0.0
    y = (theta > 0).astype(float)
    fp, fn = counts(y, t, a)
    iou = float(IoULoss()(fp, fn, *totals(t, a)))
    value, _ = lovasz_hinge(theta, t, a)
    assert value >= iou - 1e-12


def test_thresholding_after_the_extension_would_break_the_bound():
    # Why the module thresholds each margin: t = (1, 1), theta = (0, 10).
    # Node 0 is wrong (margin 1), node 1 right far beyond the margin (-9).
    # IoU loss 1/2; max(hat Delta(m), 0) = max(1/2 * 1 + 1/2 * (-9), 0) = 0.
    t, theta = np.array([1, 1]), np.array([0.0, 10.0])
    margins = 1.0 - theta
    assert max(lovasz_extension(margins, t)[0], 0.0) == 0.0
    assert lovasz_hinge(theta, t)[0] == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(15))
def test_hinge_is_tight_at_unit_margins(seed):
    # Errors with margin exactly 1 (theta = 0 on a positive, theta = +eps on a
    # negative) and correct nodes with margin 0: the hinge is the IoU loss.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 10))
    t, a = random_problem(rng, n)
    wrong = rng.random(n) < 0.5
    eps = 1e-9
    theta = np.where(wrong, np.where(t == 1, 0.0, eps), 2.0 * t - 1.0)
    y = (theta > 0).astype(float)
    assert np.array_equal(y != t, wrong)
    iou = float(IoULoss()(*counts(y, t, a), *totals(t, a)))
    assert lovasz_hinge(theta, t, a)[0] == pytest.approx(iou, abs=1e-8)


def test_hinge_hand_values():
    t = np.array([1, 0, 1, 0])
    # Margins 0 (or below) everywhere: no loss, no gradient.
    value, grad = lovasz_hinge(2.0 * t - 1.0, t)
    assert value == 0.0 and np.all(grad == 0)
    # Every node wrong by c = 2: all margins 3, Delta(all) = 1 -> 3.
    value, grad = lovasz_hinge(-2.0 * (2 * t - 1), t)
    assert value == pytest.approx(3.0)
    # All margins tie at 3, so the split of the increments among them depends
    # on the tie order; the sum of |grad| is Delta(all) = 1 whatever it is.
    assert np.abs(grad).sum() == pytest.approx(1.0)
    # t = (1, 0), theta = (0, 0.5): margins (1, 1.5), order node 1 then 0.
    # Delta({1}) = 1 / (1 + 1) = 1/2, Delta({0, 1}) = 2/2 = 1: g = (1/2, 1/2).
    # value = 1/2 * 1.5 + 1/2 * 1 = 1.25; grad = (-1/2, +1/2).
    value, grad = lovasz_hinge([0.0, 0.5], [1, 0])
    assert value == pytest.approx(1.25)
    np.testing.assert_allclose(grad, [-0.5, 0.5])


@pytest.mark.parametrize("seed", range(10))
def test_unit_weights_match_unweighted_formula(seed):
    # Unweighted Lovász-Jaccard increments as in Berman et al. (2018):
    # 1 - (Np - cumsum t) / (Np + cumsum (1 - t)), differenced.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 20))
    t = rng.integers(0, 2, n)
    theta = rng.normal(size=n)
    m = 1.0 - theta * (2 * t - 1)
    order = np.argsort(-m, kind="stable")
    ts = t[order].astype(float)
    n_pos = ts.sum()
    union = n_pos + np.cumsum(1 - ts)
    jac = 1.0 - (n_pos - np.cumsum(ts)) / union
    g = np.diff(jac, prepend=0.0)
    expected = g @ np.maximum(m[order], 0.0)
    for a in (None, np.ones(n), np.full(n, 7.0)):
        value, _ = lovasz_hinge(theta, t, a)
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-14)


@FAST
@given(seed=SEEDS, n=st.integers(1, 12), c=st.floats(1e-3, 1e3))
def test_scaling_weights_changes_nothing(seed, n, c):
    rng = np.random.default_rng(seed)
    t, a = random_problem(rng, n)
    theta = rng.normal(size=n)
    v1, g1 = lovasz_hinge(theta, t, a)
    v2, g2 = lovasz_hinge(theta, t, c * a)
    assert v2 == pytest.approx(v1, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(g2, g1, rtol=1e-9, atol=1e-12)


@FAST
@given(seed=SEEDS, n=st.integers(1, 12))
def test_zero_weight_nodes_contribute_nothing(seed, n):
    rng = np.random.default_rng(seed)
    t, a = random_problem(rng, n)
    theta = rng.normal(size=n) * 2
    keep = a > 0
    value, grad = lovasz_hinge(theta, t, a)
    reduced, reduced_grad = lovasz_hinge(theta[keep], t[keep], a[keep])
    assert value == pytest.approx(reduced, rel=1e-12, abs=1e-14)
    assert np.all(grad[~keep] == 0)
    np.testing.assert_allclose(grad[keep], reduced_grad, atol=1e-14)


# ---------------------------------------------------------------- edge cases

def test_no_positives():
    # Np = 0: Delta(M) = 1 as soon as M holds a weighted node, so the hinge is
    # the largest positive margin among weighted nodes, 1 + theta_i here.
    t = np.zeros(4, dtype=int)
    a = np.array([1.0, 0.0, 3.0, 2.0])
    theta = np.array([-0.5, 5.0, 0.25, -3.0])  # margins 0.5, 6 (weight 0), 1.25, -2
    value, grad = lovasz_hinge(theta, t, a)
    assert value == pytest.approx(1.25)
    np.testing.assert_allclose(grad, [0.0, 0.0, 1.0, 0.0])
    # All correct beyond the margin: nothing.
    value, grad = lovasz_hinge(np.full(4, -2.0), t, a)
    assert value == 0.0 and np.all(grad == 0)
    assert jaccard_set_loss([0, 0, 0, 0], t, a) == 0.0
    assert jaccard_set_loss([0, 1, 0, 0], t, a) == 0.0  # weight 0 node
    assert jaccard_set_loss([0, 0, 1, 0], t, a) == 1.0


def test_all_weights_zero():
    t = np.array([1, 0, 1])
    theta = np.array([-4.0, 4.0, 0.0])
    value, grad = lovasz_hinge(theta, t, np.zeros(3))
    assert value == 0.0 and np.all(grad == 0)
    value, grad = lovasz_extension(np.ones(3), t, np.zeros(3))
    assert value == 0.0 and np.all(grad == 0)


@pytest.mark.parametrize("t, a, theta, value, grad", [
    (1, 2.0, 0.3, 0.7, -1.0),    # margin 0.7, Delta({0}) = 1
    (1, 1.0, 1.5, 0.0, 0.0),     # margin -0.5: beyond the margin
    (0, 5.0, 0.2, 1.2, 1.0),     # margin 1.2, Delta({0}) = 5/5
    (0, 0.0, 0.2, 0.0, 0.0),     # weight 0
    (1, 1.0, 0.0, 1.0, -1.0),    # theta = 0 predicts 0: an error, margin 1
])
def test_single_node(t, a, theta, value, grad):
    v, g = lovasz_hinge([theta], [t], [a])
    assert v == pytest.approx(value)
    np.testing.assert_allclose(g, [grad])


def test_no_nodes():
    value, grad = lovasz_hinge(np.zeros(0), np.zeros(0, dtype=int))
    assert value == 0.0 and grad.shape == (0,)


@pytest.mark.parametrize("call", [
    lambda: lovasz_hinge([0.0, 1.0], [1, 2]),               # target not 0/1
    lambda: lovasz_hinge([0.0, 1.0], [1, 0], [1.0, -1.0]),  # negative weight
    lambda: lovasz_hinge([0.0], [1, 0]),                    # shape mismatch
    lambda: lovasz_hinge([np.nan, 1.0], [1, 0]),            # not finite
    lambda: lovasz_extension([0.0, 1.0], [[1, 0]]),         # 2-D targets
    lambda: jaccard_increments([0, 0], [1, 0]),             # not a permutation
    lambda: jaccard_set_loss([0, 2], [1, 0]),               # not a set
    lambda: lovasz_hinge_per_image([], []),
    lambda: lovasz_hinge_dataset([[0.0]], [[1], [0]]),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


# ---------------------------------------------------------------- scopes

def test_scopes_hand_values():
    # Image 1: t = 1, theta = 0 (margin 1); image 2: t = 0, theta = -2 (margin -1).
    thetas, targets = [np.array([0.0]), np.array([-2.0])], [np.array([1]), np.array([0])]
    # Per image: hinges 1 and 0, mean 1/2; gradient -1 on image 1, halved.
    value, grads = lovasz_hinge_per_image(thetas, targets)
    assert value == pytest.approx(0.5)
    np.testing.assert_allclose(grads[0], [-0.5])
    np.testing.assert_allclose(grads[1], [0.0])
    # Data set: order node 0, node 1; Delta({0}) = 1/1, Delta({0, 1}) = 2/2:
    # g = (1, 0), value 1 * 1 + 0 * 0 = 1.
    value, grads = lovasz_hinge_dataset(thetas, targets)
    assert value == pytest.approx(1.0)
    np.testing.assert_allclose(grads[0], [-1.0])
    np.testing.assert_allclose(grads[1], [0.0])


@pytest.mark.parametrize("seed", range(8))
def test_dataset_scope_ignores_how_nodes_split_into_images(seed):
    rng = np.random.default_rng(seed)
    n = 20
    t, a = random_problem(rng, n)
    theta = rng.normal(size=n)
    cuts = np.sort(rng.choice(np.arange(1, n), size=3, replace=False))
    parts = [np.split(v, cuts) for v in (theta, t, a)]
    value, grads = lovasz_hinge_dataset(*parts)
    whole, whole_grad = lovasz_hinge(theta, t, a)
    assert value == pytest.approx(whole, rel=1e-12)
    np.testing.assert_allclose(np.concatenate(grads), whole_grad, atol=1e-14)
    assert [g.shape for g in grads] == [p.shape for p in parts[0]]


@pytest.mark.parametrize("scope", [lovasz_hinge_dataset, lovasz_hinge_per_image])
@pytest.mark.parametrize("seed", range(5))
def test_scope_gradients_equal_finite_differences(scope, seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, size=3)
    problems = [random_problem(rng, s) for s in sizes]
    targets = [p[0] for p in problems]
    weights = [p[1] for p in problems]
    thetas = [rng.normal(size=s) * 2 for s in sizes]
    _, grads = scope(thetas, targets, weights)
    h = 1e-6
    for j, s in enumerate(sizes):
        for i in range(s):
            up = [th.copy() for th in thetas]
            down = [th.copy() for th in thetas]
            up[j][i] += h
            down[j][i] -= h
            numeric = (scope(up, targets, weights)[0] - scope(down, targets, weights)[0]) / (2 * h)
            assert grads[j][i] == pytest.approx(numeric, abs=1e-6)


def test_vectorised_on_a_large_problem():
    # 200,000 nodes (a data-set scope of thousands of images): one sort and
    # prefix sums; a Python loop over nodes would take seconds.
    rng = np.random.default_rng(0)
    n = 200_000
    t, a = random_problem(rng, n, area=True)
    theta = rng.normal(size=n)
    value, grad = lovasz_hinge(theta, t, a)
    y = (theta > 0).astype(float)
    iou = float(IoULoss()(*counts(y, t, a), *totals(t, a)))
    assert iou <= value and np.isfinite(grad).all()
    assert np.abs(grad).sum() <= 1.0 + 1e-9  # increments sum to at most Delta(all) = 1
