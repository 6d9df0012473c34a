"""A linear SVM: L2-regularised squared hinge loss, minimised in the primal.

    f(w) = 1/2 ||w||^2 + C sum_i max(0, 1 - y_i w . x_i)^2

The squared hinge is differentiable, so L-BFGS-B (scipy) minimises it
directly and takes box bounds on single weights for free: the detector needs
them to keep its deformation costs convex (quadratic weights >= a small
positive floor). There is no separate bias: callers append a constant
feature, whose size sets how lightly the bias is regularised.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize


def squared_hinge_objective(w: np.ndarray, X: np.ndarray, y: np.ndarray, C: float):
    """The objective and its gradient.

    Parameters
    ----------
    w : (D,) float64 weights.
    X : (N, D) float32 or float64 examples.
    y : (N,) labels in {-1, +1}.
    C : float > 0, weight of the loss.

    Returns
    -------
    value : float
    gradient : (D,) float64
    """
    w = np.asarray(w, np.float64)
    margin = 1.0 - y * (X @ w.astype(X.dtype)).astype(np.float64)
    active = margin > 0
    slack = np.where(active, margin, 0.0)
    value = 0.5 * float(w @ w) + C * float(slack @ slack)
    coef = (-2.0 * C * y * slack)[active].astype(X.dtype)
    grad = w + (coef @ X[active]).astype(np.float64)
    return value, grad


def train_linear_svm(X: np.ndarray, y: np.ndarray, C: float = 0.01,
                     lower_bounds: np.ndarray | None = None,
                     w0: np.ndarray | None = None, max_iter: int = 1000,
                     tol: float = 1e-6) -> np.ndarray:
    """Weights minimising ``squared_hinge_objective``.

    Parameters
    ----------
    X : (N, D) array of examples (float32 keeps large mining caches small).
    y : (N,) array of labels in {-1, +1}.
    C : float > 0.
    lower_bounds : (D,) float64 array, optional
        Per-weight lower bound (``-inf`` = none).
    w0 : (D,) array, optional, the starting point (a previous round's
        weights: hard-negative mining then converges in a few steps).
    max_iter : int, L-BFGS-B iterations at most.
    tol : float, L-BFGS-B's relative objective tolerance (``ftol``).

    Returns
    -------
    w : (D,) float64 array. The problem is strictly convex, so the answer
        does not depend on ``w0`` beyond the solver's tolerance; the solver
        is deterministic for the same inputs.
    """
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    y = np.asarray(y, np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"expected X (N, D) and y (N,), got {X.shape} and {y.shape}")
    if not np.all(np.abs(y) == 1):
        raise ValueError("labels must be -1 or +1")
    d = X.shape[1]
    start = np.zeros(d) if w0 is None else np.asarray(w0, np.float64).copy()
    bounds = None
    if lower_bounds is not None:
        lower_bounds = np.asarray(lower_bounds, np.float64)
        start = np.maximum(start, lower_bounds)
        bounds = [(None if not np.isfinite(lo) else lo, None) for lo in lower_bounds]
    result = minimize(squared_hinge_objective, start, args=(X, y, C), jac=True,
                      method="L-BFGS-B", bounds=bounds,
                      options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-8})
    return np.asarray(result.x, np.float64)
