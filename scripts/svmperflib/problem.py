"""The benchmark's problem: the generated data, F1, the most violated
constraint by one sort, and the certified optimum of the objective (a dual QP)."""
from __future__ import annotations

import time

import numpy as np

#: The generated problem: dimension, share of positives, class separation,
#: test-set size and seed.
D = 50
POSITIVE_RATE = 0.25
SEPARATION = 1.5
N_TEST = 10000
SEED = 0
#: The random streams of the splits.
SPLITS = {"train": 1, "test": 2}


def make_problem(n: int, seed: int = SEED, split: str = "train", d: int = D,
                 positive_rate: float = POSITIVE_RATE,
                 separation: float = SEPARATION) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: n points of the module docstring's generator.

    X is (n, d) float64, y (n,) int64 in {0, 1} with exactly
    ``round(positive_rate * n)`` ones.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {tuple(SPLITS)}, got {split!r}")
    v = np.random.default_rng([seed, 0]).standard_normal(d)
    mu = separation * v / np.linalg.norm(v)
    rng = np.random.default_rng([seed, SPLITS[split], n])
    y = np.zeros(n, np.int64)
    y[rng.permutation(n)[:int(round(positive_rate * n))]] = 1
    X = rng.standard_normal((n, d)) + y[:, None] * mu
    return X, y


def f1_score(y_true, y_pred) -> float:
    """2 TP / (2 TP + FP + FN); 0 when there is nothing positive at all."""
    y_true, y_pred = np.asarray(y_true).astype(bool), np.asarray(y_pred).astype(bool)
    tp = int(np.count_nonzero(y_true & y_pred))
    denom = 2 * tp + int(np.count_nonzero(~y_true & y_pred)) + int(
        np.count_nonzero(y_true & ~y_pred))
    return 2.0 * tp / denom if denom else 0.0


# ----------------------------------------------------------------------
# independent F1 loss-augmented inference and objective (no segstruct code)
def f1_cut(Z: np.ndarray, y: np.ndarray, w: np.ndarray, chunk: int = 64):
    """Most violated F1 constraint at w (our units), by enumeration of counts.

    Maximises ``Delta(y, y') + w . (Psi(y') - Psi(y))`` over all y', with
    ``Psi(y) = sum_i (2 y_i - 1) z_i`` and ``Delta = 1 - F1``. For a labelling
    with a true positives and b false positives the best is to switch on the
    a top-scored positives and the b top-scored negatives, so it suffices to
    scan every (a, b).

    Returns ``(delta, g, hinge)``: the loss of the maximiser, the cut
    ``g = Psi(y) - Psi(y')`` and ``hinge = delta - g . w`` (>= 0).
    """
    s = Z @ w
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    pos = pos[np.argsort(-s[pos], kind="stable")]
    neg = neg[np.argsort(-s[neg], kind="stable")]
    P = pos.size
    cp = np.concatenate([[0.0], np.cumsum(s[pos])])      # top-a positives' sum
    cn = np.concatenate([[0.0], np.cumsum(s[neg])])      # top-b negatives' sum
    b = np.arange(neg.size + 1, dtype=np.float64)
    best, best_a, best_b = -np.inf, 0, 0
    for a0 in range(0, P + 1, chunk):
        a = np.arange(a0, min(P + 1, a0 + chunk), dtype=np.float64)[:, None]
        val = -2.0 * a / (a + b + P) + 2.0 * cp[a0:a0 + a.shape[0], None] + 2.0 * cn
        k = int(np.argmax(val))
        if val.flat[k] > best:
            best, best_a, best_b = float(val.flat[k]), a0 + k // b.size, k % b.size
    delta = 1.0 - 2.0 * best_a / (best_a + best_b + P)
    g = 2.0 * (Z[pos[best_a:]].sum(axis=0) - Z[neg[:best_b]].sum(axis=0))
    return delta, g, max(0.0, delta - float(g @ w))


def exact_objective(Z, y, w, C) -> float:
    """``1/2 ||w||^2 + C max_y' [...]`` (our units) by :func:`f1_cut`."""
    return float(0.5 * w @ w + C * f1_cut(Z, y, w)[2])


def _capped_simplex_projection(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto {x >= 0, sum x <= 1}."""
    x = np.maximum(v, 0.0)
    if x.sum() <= 1.0:
        return x
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, v.size + 1)
    rho = np.flatnonzero(u - css / k > 0)[-1]
    return np.maximum(v - css[rho] / (rho + 1.0), 0.0)


def _dual_qp(A, b, c, beta, gap_tol, max_steps=20000):
    """max_beta c beta.b - 1/2 ||c A^T beta||^2 over {beta >= 0, sum beta <= 1}.

    FISTA with gradient restarts, from ``beta``; stops when the working-set
    duality gap is at most ``gap_tol``. Returns ``(beta, dual value)``.
    """
    L = c * float(np.linalg.eigvalsh(A.T @ A)[-1]) or 1.0
    x, z, t = beta.copy(), beta.copy(), 1.0
    f_old = np.inf
    dual = -np.inf
    for step in range(max_steps):
        grad = c * (A @ (A.T @ z)) - b              # of F = c/2 |A^T z|^2 - z.b
        x_new = _capped_simplex_projection(z - grad / L)
        u = c * (A.T @ x_new)
        f_new = 0.5 * u @ u / c - x_new @ b
        if f_new > f_old:                           # restart the momentum
            z, t = x.copy(), 1.0
            continue
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        z = x_new + ((t - 1.0) / t_new) * (x_new - x)
        x, t, f_old = x_new, t_new, f_new
        if step % 10 == 0:
            dual = c * float(x @ b) - 0.5 * float(u @ u)
            primal = 0.5 * float(u @ u) + c * max(0.0, float(np.max(b - A @ u)))
            if primal - dual <= gap_tol:
                break
    u = c * (A.T @ x)
    return x, c * float(x @ b) - 0.5 * float(u @ u)


def reference_optimum(X, y, c_perf, rtol=1e-5, max_iter=5000, time_limit=600.0,
                      prune_after=30) -> dict:
    """Certified optimum of SVM-perf's problem (its units) by BMRM.

    SVM-perf's problem is ``min 1/2 ||u||^2 + c_perf max_y' [100 Delta -
    (50 / n) u . (Psi(y) - Psi(y'))]`` with u = 2 n w and an appended constant
    feature 1 (its ``--b 1``). Returns the best objective evaluated
    (``objective``, an upper bound), the best dual value (``lower_bound``),
    their relative gap, iterations, seconds, whether ``rtol`` was met and the
    weights (``coef``, ``intercept``) in our units (w = u / (2 n)).
    """
    start = time.perf_counter()
    n = X.shape[0]
    Z = np.hstack([X, np.ones((n, 1))])
    u = np.zeros(Z.shape[1])
    A, bs = np.zeros((0, Z.shape[1])), np.zeros(0)
    beta, idle = np.zeros(0), np.zeros(0, np.int64)
    upper, lower, best_u = np.inf, 0.0, u
    it = 0
    for it in range(1, max_iter + 1):
        delta, g, hinge = f1_cut(Z, y, u / (2.0 * n))
        primal = 0.5 * float(u @ u) + c_perf * 100.0 * hinge
        if primal < upper:
            upper, best_u = primal, u
        if upper - lower <= rtol * upper or time.perf_counter() - start > time_limit:
            break
        A = np.vstack([A, (50.0 / n) * g])
        bs = np.append(bs, 100.0 * delta)
        idle = np.append(idle, 0)
        beta, dual = _dual_qp(A, bs, c_perf, np.append(beta, 0.0),
                              gap_tol=0.05 * max(upper - lower, 0.0) + 1e-3 * rtol * upper)
        lower = max(lower, dual)
        u = c_perf * (A.T @ beta)
        # drop cuts unused for PRUNE_AFTER solves (every dual value stays a bound)
        idle = np.where(beta > 0, 0, idle + 1)
        keep = idle < prune_after
        A, bs, beta, idle = A[keep], bs[keep], beta[keep], idle[keep]
    w = best_u / (2.0 * n)
    return {"objective": upper, "lower_bound": lower,
            "gap_pct": 100.0 * (upper - lower) / upper, "n_iter": it,
            "certified": bool(upper - lower <= rtol * upper), "rtol": rtol,
            "seconds": time.perf_counter() - start,
            "coef": w[:-1], "intercept": float(w[-1])}
