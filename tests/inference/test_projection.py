"""Projection oracles and the Fenchel-Young loss against independent references.

References: a generic convex QP solved by HiGHS (the cube, the budget set, and
the marginal polytope as a QP over convex-combination weights of all 2^N
labellings), and brute-force enumeration for the linear oracle and decoding.
"""
import itertools

import highspy
import numpy as np
import pytest

from segstruct.inference import NotSubmodularError
from segstruct.inference.highs import new_highs, run
from segstruct.inference.projection import (
    decode_iou,
    decode_parts,
    encode,
    linear_maximiser,
    project,
    project_budget,
    project_cube,
    project_marginal,
    projection_loss,
    round_labels,
)


# ---- references ------------------------------------------------------------------

def highs_qp(Q, c, lower, upper, A=None, row_lower=None, row_upper=None):
    """min 1/2 x'Qx + c'x s.t. bounds and row_lower <= A x <= row_upper, by HiGHS."""
    n = c.size
    A = np.zeros((0, n)) if A is None else np.atleast_2d(A)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, A.shape[0]
    lp.col_cost_ = np.asarray(c, np.float64)
    lp.col_lower_, lp.col_upper_ = np.asarray(lower, float), np.asarray(upper, float)
    lp.row_lower_ = np.asarray(row_lower if row_lower is not None else [], float)
    lp.row_upper_ = np.asarray(row_upper if row_upper is not None else [], float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = (np.arange(n + 1) * A.shape[0]).astype(np.int32)  # dense columns
    lp.a_matrix_.index_ = np.tile(np.arange(A.shape[0]), n).astype(np.int32)
    lp.a_matrix_.value_ = A.T.ravel().astype(np.float64)
    hess = highspy.HighsHessian()
    hess.dim_ = n
    hess.format_ = highspy.HessianFormat.kTriangular
    rows, cols = np.triu_indices(n)  # column j of the lower triangle = row j of the upper
    hess.start_ = np.concatenate([[0], np.cumsum(np.arange(n, 0, -1))]).astype(np.int32)
    hess.index_ = cols.astype(np.int32)
    hess.value_ = np.asarray(Q, float)[rows, cols]
    model = highspy.HighsModel()
    model.lp_, model.hessian_ = lp, hess
    h = new_highs(primal_feasibility_tolerance=1e-10, dual_feasibility_tolerance=1e-10)
    h.passModel(model)
    h = run(h, "reference QP", retries=())
    return np.asarray(h.getSolution().col_value), h.getInfo().objective_function_value


def all_labellings(n):
    return np.array(list(itertools.product([0, 1], repeat=n)), dtype=np.uint8)


def vertices(n, edges):
    ys = all_labellings(n).astype(float)
    return np.hstack([ys, ys[:, edges[:, 0]] * ys[:, edges[:, 1]]])


def marginal_reference(theta_u, theta_p, edges):
    """proj_M(theta) and min ||m - theta||^2/2 via the QP over simplex weights."""
    V = vertices(theta_u.size, edges)
    theta = np.concatenate([theta_u, theta_p])
    k = V.shape[0]
    lam, obj = highs_qp(V @ V.T, -V @ theta, np.zeros(k), np.ones(k),
                        np.ones((1, k)), [1.0], [1.0])
    m = lam @ V
    return m, 0.5 * np.sum((m - theta) ** 2)


def random_graph(rng, n, density=0.6):
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < density]
    return np.array(pairs, dtype=int).reshape(-1, 2)


def objective(proj, theta_u, theta_p):
    return 0.5 * (np.sum((proj.unary - theta_u) ** 2) + np.sum((proj.pairwise - theta_p) ** 2))


SEEDS = range(8)


# ---- cube and budget -------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_cube_matches_highs_qp(seed):
    rng = np.random.default_rng(seed)
    n, e = 7, 9
    theta = rng.normal(0.5, 1.2, n + e)
    ref, _ = highs_qp(np.eye(n + e), -theta, np.zeros(n + e), np.ones(n + e))
    proj = project_cube(theta[:n], theta[n:])
    np.testing.assert_allclose(np.concatenate([proj.unary, proj.pairwise]), ref, atol=1e-7)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("which", ["upper", "lower", "equality", "inactive"])
def test_budget_matches_highs_qp(seed, which):
    rng = np.random.default_rng(seed)
    n, e = 9, 6
    theta_u, theta_p = rng.normal(0.5, 1.0, n), rng.normal(0.5, 1.0, e)
    a = rng.integers(0, 5, n).astype(float)  # zeros included: those nodes are free
    s = float(a @ np.clip(theta_u, 0, 1))
    total = a.sum()
    lower, upper = {"upper": (0.0, 0.5 * s), "lower": (s + 0.5 * (total - s), total),
                    "equality": (0.3 * total, 0.3 * total), "inactive": (0.0, total)}[which]
    proj = project_budget(theta_u, theta_p, upper, a=a, lower=lower)
    A = np.concatenate([a, np.zeros(e)])[None, :]
    theta = np.concatenate([theta_u, theta_p])
    ref, _ = highs_qp(np.eye(n + e), -theta, np.zeros(n + e), np.ones(n + e), A, [lower], [upper])
    np.testing.assert_allclose(np.concatenate([proj.unary, proj.pairwise]), ref, atol=1e-6)
    assert lower - 1e-9 <= a @ proj.unary <= upper + 1e-9


def test_budget_rejects_an_empty_set():
    with pytest.raises(ValueError, match="empty"):
        project_budget([0.5, 0.5], [], upper=1.0, lower=2.0)
    with pytest.raises(ValueError, match="empty"):
        project_budget([0.5, 0.5], [], upper=5.0, lower=3.0)  # more than sum a = 2
    with pytest.raises(ValueError, match="node weights"):
        project_budget([0.5, 0.5], [], upper=1.0, a=[1.0, -1.0])


# ---- linear oracle ---------------------------------------------------------------

def brute_max(g_u, g_p, edges):
    V = vertices(g_u.size, edges)
    return float(np.max(V @ np.concatenate([g_u, g_p])))


@pytest.mark.parametrize("seed", range(20))
def test_linear_maximiser_attractive_is_exact(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    edges = random_graph(rng, n)
    g_u, g_p = rng.normal(0, 1, n), np.abs(rng.normal(0, 1, len(edges)))
    # exact_limit=0: the graph cut must answer, never the enumeration
    ans = linear_maximiser(g_u, g_p, edges, exact_limit=0, strict=True)
    assert ans.exact and ans.bound == ans.value
    assert ans.value == pytest.approx(brute_max(g_u, g_p, edges), abs=1e-9)
    y_u, y_p = encode(ans.labels, edges)
    assert ans.value == pytest.approx(g_u @ y_u + g_p @ y_p, abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_linear_maximiser_non_attractive(seed):
    rng = np.random.default_rng(seed)
    n = 7
    edges = random_graph(rng, n, 0.7)
    g_u, g_p = rng.normal(0, 1, n), rng.normal(0, 1.5, len(edges))
    g_p[0] = -1.0  # at least one repulsive edge
    best = brute_max(g_u, g_p, edges)
    # enumeration (n <= exact_limit) and the MILP (exact_limit=0) are exact
    for limit in (12, 0):
        ans = linear_maximiser(g_u, g_p, edges, exact_limit=limit)
        assert ans.exact and ans.value == pytest.approx(best, abs=1e-7)
        assert ans.bound >= best - 1e-7
    with pytest.raises(NotSubmodularError, match="negative"):
        linear_maximiser(g_u, g_p, edges, strict=True)


# ---- marginal polytope -----------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("exact_limit", [12, 0])  # enumeration / relaxation + MILP
def test_marginal_matches_simplex_qp(seed, exact_limit):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    edges = random_graph(rng, n)
    theta_u = rng.normal(0.5, 1.0, n)
    theta_p = rng.normal(0.3, 1.0, len(edges))  # both signs
    tol = 1e-7
    proj = project_marginal(theta_u, theta_p, edges, tol=tol, exact_limit=exact_limit)
    assert proj.status == "converged" and proj.exact_maximiser
    ref, f_star = marginal_reference(theta_u, theta_p, edges)
    m = np.concatenate([proj.unary, proj.pairwise])
    # f is 1-strongly convex: ||m - m*||^2 / 2 <= f(m) - f* <= gap
    assert np.linalg.norm(m - ref) <= np.sqrt(2 * proj.gap) + 1e-5
    assert objective(proj, theta_u, theta_p) - f_star <= proj.gap + 1e-8
    # the active set reproduces m
    y_u, y_p = encode(proj.support[0], edges)
    V = np.array([np.concatenate(encode(y, edges)) for y in proj.support])
    np.testing.assert_allclose(proj.weights @ V, m, atol=1e-12)
    assert np.all(proj.weights > 0) and proj.weights.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_marginal_gap_bounds_suboptimality_when_stopped_early(seed):
    rng = np.random.default_rng(100 + seed)
    n = 6
    edges = random_graph(rng, n, 0.8)
    theta_u, theta_p = rng.normal(0.5, 2.0, n), rng.normal(0.5, 2.0, len(edges))
    _, f_star = marginal_reference(theta_u, theta_p, edges)
    for max_iter in (0, 1, 2, 4):
        proj = project_marginal(theta_u, theta_p, edges, tol=0.0, max_iter=max_iter)
        assert proj.status in ("max_iter", "converged") and proj.iterations <= max_iter
        assert objective(proj, theta_u, theta_p) - f_star <= proj.gap + 1e-8


def test_marginal_single_edge_known_answer():
    # theta = (1, 1, 0) violates y12 >= y1 + y2 - 1: projection onto that facet
    proj = project_marginal([1.0, 1.0], [0.0], [[0, 1]], exact_limit=0)
    np.testing.assert_allclose(proj.unary, [2 / 3, 2 / 3], atol=1e-6)
    np.testing.assert_allclose(proj.pairwise, [1 / 3], atol=1e-6)
    # the residual's pairwise part is negative here, so strict mode refuses
    with pytest.raises(NotSubmodularError):
        project_marginal([1.0, 1.0], [0.0], [[0, 1]], strict=True)


def test_marginal_strict_succeeds_without_negative_coefficients():
    # theta = phi(y) with theta_p >= 0: the first cut finds y, the residual is 0
    edges = np.array([[0, 1], [1, 2], [0, 2]])
    y_u, y_p = encode([1, 1, 0], edges)
    proj = project_marginal(y_u, y_p, edges, strict=True)
    assert proj.status == "converged" and proj.gap == 0.0
    np.testing.assert_allclose(proj.unary, y_u)
    np.testing.assert_allclose(proj.pairwise, y_p)
    # theta inside M still starts at a vertex whose residual is repulsive
    with pytest.raises(NotSubmodularError):
        project_marginal([0.5, 0.5], [0.5], [[0, 1]], strict=True)


# ---- the loss --------------------------------------------------------------------

def loss_options(kind, a, y):
    if kind == "budget":
        return {"upper": float(a @ y) + 1.0, "a": a}
    return {"tol": 1e-10} if kind == "marginal" else {}


KINDS = ["cube", "budget", "marginal"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(6))
def test_loss_nonnegative_and_zero_at_the_target(kind, seed):
    rng = np.random.default_rng(seed)
    n = 5
    edges = random_graph(rng, n, 0.7)
    y = rng.integers(0, 2, n)
    a = rng.integers(1, 4, n).astype(float)
    opts = loss_options(kind, a, y)
    y_u, y_p = encode(y, edges)
    theta_u, theta_p = rng.normal(0.5, 1.5, n), rng.normal(0.5, 1.5, len(edges))
    res = projection_loss(theta_u, theta_p, edges, y, kind, **opts)
    assert res.value >= -res.projection.gap - 1e-12
    # zero at theta = phi(y) and at s (2 phi(y) - 1), s >= 1 (normal cone of the vertex)
    for s in (None, 1.0, 3.0):
        tu, tp = (y_u, y_p) if s is None else (s * (2 * y_u - 1), s * (2 * y_p - 1))
        zero = projection_loss(tu, tp, edges, y, kind, **opts)
        assert abs(zero.value) <= 1e-7
        np.testing.assert_allclose(zero.grad_unary, 0, atol=1e-6)
    # but not for s < 1/2: the projection is s phi(y) in the cube, not phi(y)
    small = projection_loss(0.4 * (2 * y_u - 1), 0.4 * (2 * y_p - 1), edges, y, kind, **opts)
    assert small.value > 1e-3


@pytest.mark.parametrize("seed", range(6))
def test_smaller_sets_give_smaller_losses(seed):
    rng = np.random.default_rng(seed)
    n = 5
    edges = random_graph(rng, n, 0.7)
    y = rng.integers(0, 2, n)
    theta_u, theta_p = rng.normal(0.5, 1.5, n), rng.normal(0.5, 1.5, len(edges))
    cube = projection_loss(theta_u, theta_p, edges, y, "cube").value
    budget = projection_loss(theta_u, theta_p, edges, y, "budget", upper=float(y.sum())).value
    marginal = projection_loss(theta_u, theta_p, edges, y, "marginal", tol=1e-10)
    assert budget <= cube + 1e-12
    assert marginal.value <= cube + 1e-12


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(4))
def test_loss_gradient_matches_finite_differences(kind, seed):
    rng = np.random.default_rng(seed)
    n = 4
    edges = random_graph(rng, n, 0.8)
    y = rng.integers(0, 2, n)
    a = np.ones(n)
    opts = {"tol": 1e-12} if kind == "marginal" else loss_options(kind, a, y)
    theta = rng.normal(0.5, 1.0, n + len(edges))

    def value(t):
        return projection_loss(t[:n], t[n:], edges, y, kind, **opts).value

    res = projection_loss(theta[:n], theta[n:], edges, y, kind, **opts)
    grad = np.concatenate([res.grad_unary, res.grad_pairwise])
    h = 1e-5
    fd = np.array([(value(theta + h * d) - value(theta - h * d)) / (2 * h)
                   for d in np.eye(theta.size)])
    np.testing.assert_allclose(grad, fd, atol=1e-5)


def test_budget_loss_rejects_a_target_outside_the_budget():
    with pytest.raises(ValueError, match="outside the budget"):
        projection_loss([0.0, 0.0], [0.0], [[0, 1]], [1, 1], "budget", upper=1.0)


def test_unknown_set():
    with pytest.raises(ValueError, match="unknown projection set"):
        project([0.0], [], [], "sphere")


# ---- decoding --------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(10))
def test_decode_iou_is_the_best_top_k(seed):
    rng = np.random.default_rng(seed)
    n = 7
    mu = rng.random(n) ** 2
    a = rng.integers(0, 4, n).astype(float)
    y = decode_iou(mu, a)
    n_pos = a @ mu

    def expected_iou(z):
        tp, fp = a @ (z * mu), a @ (z * (1 - mu))
        return 1.0 if n_pos + fp == 0 else tp / (n_pos + fp)

    # the best top-k set is as good as the best of all labellings under this ratio
    best = max(expected_iou(z) for z in all_labellings(n).astype(float))
    assert expected_iou(y.astype(float)) == pytest.approx(best, abs=1e-12)


def test_round_labels():
    np.testing.assert_array_equal(round_labels([0.2, 0.5, 0.9]), [0, 1, 1])


@pytest.mark.parametrize("seed", range(6))
def test_decode_parts_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 6
    edges = random_graph(rng, n, 0.7)
    proj = project_marginal(rng.normal(0.5, 1, n), rng.normal(0.5, 1, len(edges)), edges)
    ans = decode_parts(proj.unary, proj.pairwise, edges)
    g_u, g_p = 2 * proj.unary - 1, 2 * proj.pairwise - 1
    assert ans.value == pytest.approx(brute_max(g_u, g_p, edges), abs=1e-9)
