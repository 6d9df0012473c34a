"""What the projection oracles share: their result types, the encoding
phi(y) of a labelling, and the checks of scores and weights."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._mrf import check_labels, check_mrf


@dataclass
class Projection:
    """Euclidean projection ``mu = proj_C(theta)`` of MRF scores onto a convex set.

    Attributes
    ----------
    unary : ndarray of float64, shape (N,)
        ``mu_u``, in [0, 1].
    pairwise : ndarray of float64, shape (E,)
        ``mu_p``, in [0, 1].
    gap : float
        Certified bound on ``||mu - theta||^2/2 - min_{m in C} ||m - theta||^2/2``
        (0 for the closed-form projections). Since that objective is
        1-strongly convex, ``||mu - proj_C(theta)|| <= sqrt(2 gap)``.
    status : str
        ``"exact"`` (closed form), ``"converged"`` (Frank-Wolfe gap <= tol),
        ``"max_iter"`` (iteration cap reached first) or ``"stalled"`` (the
        maximiser found no improving vertex while its bound left a gap above
        ``tol``, i.e. solver tolerances; ``gap`` is still a valid bound).
    iterations : int
        Frank-Wolfe iterations (0 for closed forms).
    exact_maximiser : bool
        Whether every linear-maximiser call was exact (graph cut on attractive
        coefficients, or enumeration).
    support : ndarray of uint8, shape (K, N), or None
        Marginal polytope only: labellings whose encodings, weighted by
        ``weights``, sum to ``mu``.
    weights : ndarray of float64, shape (K,), or None
        Convex-combination weights of ``support`` (positive, sum 1).
    """

    unary: np.ndarray
    pairwise: np.ndarray
    gap: float = 0.0
    status: str = "exact"
    iterations: int = 0
    exact_maximiser: bool = True
    support: np.ndarray | None = None
    weights: np.ndarray | None = None


@dataclass
class OracleAnswer:
    """Answer of :func:`linear_maximiser`: ``argmax_y <g, phi(y)>``.

    Attributes
    ----------
    labels : ndarray of uint8, shape (N,)
        The labelling found.
    value : float
        ``<g, phi(labels)>``.
    bound : float
        An upper bound on ``max_y <g, phi(y)>``; equal to ``value`` when exact.
    exact : bool
        Whether ``labels`` is a proven maximiser.
    """

    labels: np.ndarray
    value: float
    bound: float
    exact: bool


@dataclass
class FenchelYoungLoss:
    """Value and gradient of the projection loss ``L_C(theta; y)``.

    Attributes
    ----------
    value : float
    grad_unary : ndarray of float64, shape (N,)
        ``mu_u - y``.
    grad_pairwise : ndarray of float64, shape (E,)
        ``mu_p - (y_i y_j)_E``.
    projection : Projection
        ``mu = proj_C(theta)``. For the marginal polytope ``mu`` is approximate
        and the true loss lies in ``[value, value + projection.gap]``.
    """

    value: float
    grad_unary: np.ndarray
    grad_pairwise: np.ndarray
    projection: Projection


# ---- encoding and checks ---------------------------------------------------------

def encode(y, edges):
    """The parts ``phi(y)`` of one labelling.

    Parameters
    ----------
    y : array_like, shape (N,)
        Labels in {0, 1}.
    edges : array_like of int, shape (E, 2)

    Returns
    -------
    y_u : ndarray of float64, shape (N,)
        ``y_i``.
    y_p : ndarray of float64, shape (E,)
        ``y_i y_j`` for each edge.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must have shape (N,), got {y.shape}")
    n_edges = np.asarray(edges).reshape(-1, 2).shape[0]
    _, edges, _ = check_mrf(np.zeros(y.size), edges, np.zeros(n_edges))
    y = check_labels(y, y.size).astype(np.float64)
    return y, y[edges[:, 0]] * y[edges[:, 1]]


def check_theta(theta_u, theta_p, edges):
    """Validated float64 ``theta_u`` (N,), ``theta_p`` (E,) and intp ``edges`` (E, 2)."""
    theta_u, edges, theta_p = check_mrf(theta_u, edges, theta_p)
    return theta_u, theta_p, edges


def check_weights(a, n):
    """Node weights as float64 (N,), all finite and >= 0; None means 1."""
    a = np.ones(n) if a is None else np.asarray(a, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"node weights a must have shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("node weights a must be finite and >= 0")
    return a
