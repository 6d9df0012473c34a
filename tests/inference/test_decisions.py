"""Decisions from marginals: the threshold decision against every labelling
(brute force), the expected counts against an expectation over the exact
distribution, and the check shown to fail on a broken decision."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from segstruct.inference.decisions import (expected_counts, expected_measure,
                                           marginal_decision, threshold_decision)
from segstruct.inference.marginals import enumerate_marginals


def _all_labellings(n):
    return np.array(list(itertools.product([0, 1], repeat=n)), np.uint8)


def check_best(decision, q, a, measure, beta):
    """``decision`` reaches the largest measure of the expected counts over all labellings."""
    best = max(expected_measure(y, q, a, measure, beta) for y in _all_labellings(q.size))
    got = expected_measure(decision(q, a, measure, beta), q, a, measure, beta)
    assert got == pytest.approx(best, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.integers(0, 10_000), st.sampled_from(["iou", "fbeta"]),
       st.sampled_from([0.5, 1.0, 2.0]), st.booleans())
def test_threshold_decision_is_the_best_labelling(n, seed, measure, beta, weighted):
    rng = np.random.default_rng(seed)
    q = rng.random(n) ** rng.choice([0.5, 1, 3])
    q[rng.random(n) < 0.2] = rng.choice([0.0, 1.0])        # certain nodes too
    a = rng.integers(0, 50, n).astype(float) if weighted else None
    check_best(threshold_decision, q, a, measure, beta)


def test_threshold_decision_is_a_threshold():
    q = np.array([0.9, 0.1, 0.45, 0.6, 0.3])
    y = threshold_decision(q)
    assert set(q[y == 1]) and q[y == 1].min() > q[y == 0].max()


def test_expected_counts_are_the_expectation_under_the_distribution():
    """E[TP], E[FP], E[FN] of a labelling under a correlated distribution (an
    MRF, enumerated) equal the counts computed from its node marginals."""
    rng = np.random.default_rng(1)
    n = 6
    edges = np.array([(i, i + 1) for i in range(n - 1)])
    u, p = rng.normal(size=n), -rng.random(n - 1) * 2
    ys = _all_labellings(n).astype(float)
    s = (2 * ys - 1) @ u + (ys[:, edges[:, 0]] != ys[:, edges[:, 1]]) @ p
    prob = np.exp(s - s.max())
    prob /= prob.sum()
    a = rng.integers(1, 9, n).astype(float)
    y = np.array([1, 0, 1, 1, 0, 0])
    tp = prob @ (ys @ (a * y))
    fp = prob @ ((1 - ys) @ (a * y))
    fn = prob @ (ys @ (a * (1 - y)))
    q = enumerate_marginals(u, edges, p).node
    np.testing.assert_allclose(expected_counts(y, q, a), (tp, fp, fn), rtol=1e-10)


def test_marginal_decision_minimises_the_expected_hamming_loss():
    q = np.array([0.2, 0.51, 0.5, 0.99])
    best = min(_all_labellings(4), key=lambda y: float(np.sum(y * (1 - q) + (1 - y) * q)))
    np.testing.assert_array_equal(marginal_decision(q), best)


def test_nothing_expected_labels_nothing():
    assert threshold_decision(np.zeros(4)).sum() == 0


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="probabilities"):
        threshold_decision([0.2, 1.5])
    with pytest.raises(ValueError, match="node weights"):
        threshold_decision([0.2, 0.5], [1.0])
    with pytest.raises(ValueError, match="unknown measure"):
        threshold_decision([0.2], measure="dice")
    with pytest.raises(ValueError, match="beta"):
        threshold_decision([0.2], measure="fbeta", beta=0)


def test_the_check_fails_on_a_broken_decision():
    """q > 1/2 is not IoU-optimal: on small objects the best decision labels
    nodes below 1/2 as well."""
    q = np.array([0.45, 0.4, 0.05, 0.05, 0.05])
    check_best(threshold_decision, q, None, "iou", 1.0)
    with pytest.raises(AssertionError):
        check_best(lambda q, a, m, b: marginal_decision(q), q, None, "iou", 1.0)


# ------------------------------------------------------- decisions from samples
def _exact_expected_iou(y, u, edges, p):
    """E[IoU(y, t)] under p(t) ∝ exp(score(t)), by enumeration."""
    ts = _all_labellings(u.size).astype(float)
    s = (2 * ts - 1) @ u + (ts[:, edges[:, 0]] != ts[:, edges[:, 1]]) @ p
    prob = np.exp(s - s.max())
    prob /= prob.sum()
    tp = ts @ y
    den = tp + (y.sum() - tp) + (ts.sum(axis=1) - tp)
    return float(prob @ np.where(den > 0, tp / np.where(den > 0, den, 1), 1.0))


def check_sampled(decision, u, edges, p):
    """The decision's exact E[IoU] is the best of the threshold candidates'."""
    from segstruct.inference.marginals import gibbs_samples
    q = enumerate_marginals(u, edges, p).node
    samples = gibbs_samples(u, edges, p, 3000, seed=2)
    order = np.argsort(-q, kind="stable")
    best = max(_exact_expected_iou((np.isin(np.arange(q.size), order[:k])).astype(float),
                                   u, edges, p) for k in range(q.size + 1))
    got = _exact_expected_iou(decision(q, samples).astype(float), u, edges, p)
    assert got >= best - 0.01


def test_sampled_decision_reaches_the_best_expected_iou():
    from segstruct.inference.decisions import sampled_decision
    rng = np.random.default_rng(8)
    for _ in range(3):
        u, edges = rng.normal(size=6) - 0.5, np.array([(i, i + 1) for i in range(5)])
        p = -2 * rng.random(5)
        check_sampled(sampled_decision, u, edges, p)


def test_sampled_decision_takes_a_sample_when_the_samples_agree():
    """Every sample the same labelling t: t has IoU 1 against all of them."""
    from segstruct.inference.decisions import sampled_decision
    t = np.array([1, 0, 1, 0, 0], np.uint8)
    q = np.array([0.2, 0.9, 0.3, 0.1, 0.1])       # no threshold of q gives t
    np.testing.assert_array_equal(sampled_decision(q, np.tile(t, (4, 1))), t)
    with pytest.raises(ValueError, match="samples"):
        sampled_decision(q, np.ones((2, 4)))
    # broken: the expected-count threshold cannot reach t
    assert not np.array_equal(threshold_decision(q), t)


def test_sampled_decision_takes_a_threshold_when_no_sample_is_best():
    """Three samples, each two of the first three nodes: a sample scores
    (1 + 1/3 + 1/3) / 3 = 5/9 against them, the threshold labelling of the
    three largest marginals 2/3 against each; the fourth node (q 0.1) must
    stay out (with it: 1/2). The many-sample check above cannot tell the
    threshold candidates apart, since the samples hold every likely labelling."""
    from segstruct.inference.decisions import sampled_decision
    samples = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 1, 1, 0]], np.uint8)
    q = np.array([0.7, 0.8, 0.9, 0.1])
    np.testing.assert_array_equal(sampled_decision(q, samples), [1, 1, 1, 0])
