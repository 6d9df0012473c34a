"""Linear unary models trained on the Lovász hinge of the IoU loss.

Node scores are ``theta = X w`` (one row of X per superpixel, no pairwise
terms; prediction ``y_i = [theta_i > 0]``). The objective is

    F(w) = 1/2 ||w||^2 + C * H(w),

with H the Lovász hinge of ``segstruct.inference.lovasz`` at one of the two
loss scopes: ``"dataset"`` (one Jaccard loss over every image's nodes) or
``"image"`` (the mean of the images' losses). H is convex and piecewise
linear, and the hinge's subgradient gives an exact supporting plane at each
point:

    H(w') >= l - G . w'   for all w',  with equality at w,
    G = -sum_j X_j^T grad_j,  l = H(w) + G . w

(``grad_j`` the subgradient with respect to image j's scores). That is a
1-slack structural SVM constraint ``w . G >= l - xi``, so the cutting-plane
solver reuses the project's working-set QP (``segstruct.learn.solvers.qp``) with one
slack group capped at C.

Two solvers:

- :func:`fit_cutting_plane`: Kelley / 1-slack cutting planes on F, either
  scope; stops when the best F seen is within ``tol`` of the QP's dual
  bound, which is a certified lower bound on min F (the cuts lie below H).
- :func:`fit_sgd`: Pegasos-style stochastic subgradient over images (image
  scope only: the data-set loss does not split into a sum over images, so a
  one-image subgradient is not an unbiased estimate of it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from segstruct.inference.lovasz import lovasz_hinge_dataset, lovasz_hinge_per_image
from segstruct.learn._params import POSITIVE, SCOPES, check_param
from segstruct.learn.solvers.qp import WorkingSetQP

__all__ = ["LovaszFit", "lovasz_objective", "fit_cutting_plane", "fit_sgd", "SCOPES"]

_HINGES = {"dataset": lovasz_hinge_dataset, "image": lovasz_hinge_per_image}


@dataclass
class LovaszFit:
    """Result of training.

    Attributes
    ----------
    w : ndarray of float64, shape (D,)
        Learnt weights (the best point evaluated).
    objective : float
        ``F(w) = 1/2 ||w||^2 + C H(w)`` at ``w``.
    lower_bound : float
        A certified lower bound on min F (cutting planes), or nan (SGD).
    n_iter : int
        Cutting-plane iterations or SGD steps.
    converged : bool
        Cutting planes: ``objective - lower_bound <= tol``; SGD: always False
        (it has no certificate).
    history : list of float
        F at each evaluated point (cutting planes) or at each epoch end (SGD).
    """

    w: np.ndarray
    objective: float
    lower_bound: float
    n_iter: int
    converged: bool
    history: list = field(default_factory=list)


def _as_images(X, targets, weights):
    """Lists of (N_j, D) features, (N_j,) targets and (N_j,) weights.

    A single 2-D array X with 1-D targets is one image (or a data set already
    concatenated).
    """
    if isinstance(X, np.ndarray) and X.ndim == 2:
        X, targets = [X], [targets]
        weights = None if weights is None else [weights]
    X = [np.asarray(x, dtype=np.float64) for x in X]
    if len(X) == 0 or len(X) != len(targets):
        raise ValueError("need one target array per feature array, and at least one image")
    dims = {x.shape[1] if x.ndim == 2 else -1 for x in X}
    if len(dims) != 1 or -1 in dims:
        raise ValueError("every X_j must be 2-D (N_j, D) with the same D")
    if weights is None:
        weights = [np.ones(x.shape[0]) for x in X]
    if len(weights) != len(X):
        raise ValueError("need one weight array per image")
    for x, t, a in zip(X, targets, weights):
        if np.shape(t) != (x.shape[0],) or np.shape(a) != (x.shape[0],):
            raise ValueError("targets and weights of image j must have shape (N_j,)")
    return X, list(targets), list(weights)


def _check_hyper(C, scope):
    check_param("C", C, [POSITIVE])
    if scope not in SCOPES:
        raise ValueError(f"unknown loss scope {scope!r}; use one of {SCOPES}")


def _hinge_and_cut(w, X, targets, weights, scope):
    """H(w) and its supporting plane (G, l): H(w') >= l - G . w'."""
    thetas = [x @ w for x in X]
    value, grads = _HINGES[scope](thetas, targets, weights)
    G = -sum(x.T @ g for x, g in zip(X, grads))
    return value, G, value + G @ w


def lovasz_objective(w, X, targets, weights=None, C=1.0, scope="dataset"):
    """``F(w) = 1/2 ||w||^2 + C H(w)`` and a subgradient.

    Parameters
    ----------
    w : array_like of float, shape (D,)
    X : sequence of ndarray, shapes (N_j, D), or one ndarray (N, D)
        Node features per image (or all nodes concatenated).
    targets : sequence of array_like, shapes (N_j,)
        Targets in {0, 1}.
    weights : sequence of array_like, shapes (N_j,), optional
        Node weights >= 0 (1 per superpixel, or pixel counts); default 1.
    C : float
        Weight of the loss term, > 0.
    scope : {"dataset", "image"}

    Returns
    -------
    value : float
    grad : ndarray of float64, shape (D,)
    """
    _check_hyper(C, scope)
    X, targets, weights = _as_images(X, targets, weights)
    w = np.asarray(w, dtype=np.float64)
    value, G, _ = _hinge_and_cut(w, X, targets, weights, scope)
    return 0.5 * w @ w + C * value, w - C * G


def fit_cutting_plane(X, targets, weights=None, C=1.0, scope="dataset",
                      tol=1e-6, max_iter=500) -> LovaszFit:
    """Minimise ``1/2 ||w||^2 + C H(w)`` by cutting planes.

    Each iteration evaluates H and its supporting plane at the QP's solution,
    adds the plane to the working set and re-solves the QP (its dual, with
    HiGHS; ``segstruct.learn.solvers.qp``). The QP's dual objective lower-bounds min F
    because every plane lies below H.

    Parameters
    ----------
    X, targets, weights, C, scope
        As in :func:`lovasz_objective`.
    tol : float
        Stop when ``best F - lower bound <= tol`` (absolute, in units of F,
        as the structural SVM's C tol).
    max_iter : int
        Largest number of planes added.

    Returns
    -------
    LovaszFit
    """
    _check_hyper(C, scope)
    X, targets, weights = _as_images(X, targets, weights)
    dim = X[0].shape[1]
    qp = WorkingSetQP(dim, [C])
    # The QP's dual objective is the bound: its own gap must stay far below tol.
    qp.abs_gap_tol = 0.01 * tol
    qp.gap_tol = min(qp.gap_tol, 0.01 * tol)
    w = np.zeros(dim)
    best_w, best_f, bound, history = w, np.inf, -np.inf, []
    for it in range(1, max_iter + 1):
        value, G, level = _hinge_and_cut(w, X, targets, weights, scope)
        f = 0.5 * w @ w + C * value
        history.append(f)
        if f < best_f:
            best_w, best_f = w, f
        qp.add(G, level, 0)
        sol = qp.solve()
        bound = max(bound, sol.dual)
        if best_f - bound <= tol:
            return LovaszFit(best_w, best_f, bound, it, True, history)
        w = sol.w
    return LovaszFit(best_w, best_f, bound, max_iter, False, history)


def fit_sgd(X, targets, weights=None, C=1.0, epochs=100, seed=0) -> LovaszFit:
    """Minimise ``1/2 ||w||^2 + C mean_j H_j(w)`` (image scope) by SGD over images.

    Pegasos (Shalev-Shwartz et al., 2007) on the equivalent objective
    ``lambda/2 ||w||^2 + mean_j H_j(w)``, ``lambda = 1/C``: step
    ``1 / (lambda t)`` on one image at a time, in a fresh random order each
    epoch, then projection onto the ball ``||w|| <= sqrt(2 H(0) / lambda)``,
    which holds the optimum (F(w*) <= F(0) = C H(0)) and keeps early steps
    from running off. Returns, of the iterates at each epoch's end and each
    epoch's average iterate (averaging tames the 1/t steps' noise), the one
    with the lowest F.

    Parameters
    ----------
    X, targets, weights, C
        As in :func:`lovasz_objective` (scope "image").
    epochs : int
        Passes over the images.
    seed : int
        Seed of the image order.

    Returns
    -------
    LovaszFit
        With ``lower_bound = nan`` and ``converged = False``.
    """
    _check_hyper(C, "image")
    X, targets, weights = _as_images(X, targets, weights)
    rng = np.random.default_rng(seed)
    lam, n, dim = 1.0 / C, len(X), X[0].shape[1]
    h0, _ = lovasz_hinge_per_image([np.zeros(x.shape[0]) for x in X], targets, weights)
    radius = np.sqrt(2.0 * h0 / lam)
    w, step, history = np.zeros(dim), 0, []

    def objective(v):
        return lovasz_objective(v, X, targets, weights, C, "image")[0]
    best_w, best_f = w, objective(w)
    for _ in range(epochs):
        total = np.zeros(dim)
        for j in rng.permutation(n):
            step += 1
            eta = 1.0 / (lam * step)
            _, G, _ = _hinge_and_cut(w, [X[j]], [targets[j]], [weights[j]], "image")
            w = (1.0 - eta * lam) * w + eta * G      # G = -subgradient of H_j
            norm = np.linalg.norm(w)
            if norm > radius:
                w = w * (radius / norm)
            total += w
        for candidate in (w, total / n):
            f = objective(candidate)
            if f < best_f:
                best_w, best_f = candidate, f
        history.append(objective(w))
    return LovaszFit(best_w, best_f, float("nan"), step, False, history)
