"""Exact MAP and loss-augmented inference for attractive binary MRFs by graph cut.

The model (docs/design.md, "The model (Eq. 15)") scores a labelling ``y in {0,1}^N`` as

    score(y) = sum_i (2 y_i - 1) u_i + sum_{(i,j) in E} [y_i != y_j] p_ij.

With every ``p_ij <= 0`` (the learner keeps ``w_p <= 0``), maximising the score
plus any term linear in ``y`` is submodular and one s-t minimum cut solves it
exactly (Kolmogorov & Zabih 2004). Graphs are built with PyMaxflow's array
calls, so there is no Python loop over nodes or edges.

Tie-breaking: among all maximisers, :func:`maximize` returns the one with the
fewest ones (the maximisers of a submodular function are closed under
intersection, so that labelling is unique). This follows from how PyMaxflow
(Boykov-Kolmogorov) reports segments: a node is on the sink side, here
``y_i = 1``, only if it can still reach the sink in the residual graph. With
floating-point capacities, rounding can break exact ties either way.
"""
from __future__ import annotations

import maxflow
import numpy as np

from ._mrf import InferenceResult, check_mrf, exact_result, raw_score
from .losses import get_loss, totals

__all__ = ["maximize", "min_cut", "loss_augmented"]


def maximize(u, edges, p, linear=None, constant: float = 0.0):
    """Exact argmax of the score plus a linear term, by one s-t minimum cut.

    Maximises over ``y in {0,1}^N``

        sum_i (2 y_i - 1) u_i + sum_E [y_i != y_j] p_ij + sum_i linear_i y_i + constant.

    Parameters
    ----------
    u : array_like of float, shape (N,)
        Unary potentials.
    edges : array_like of int, shape (E, 2)
        Node pairs.
    p : array_like of float, shape (E,)
        Pairwise potentials, all ``<= 0``.
    linear : array_like of float, shape (N,), optional
        Extra reward for ``y_i = 1`` (e.g. a decomposable loss); default 0.
    constant : float, default 0.0

    Returns
    -------
    y : ndarray of uint8, shape (N,)
        A maximiser; the one with the fewest ones among exact ties.
    value : float
        The objective of ``y``, recomputed from ``y`` (not the flow value).

    Raises
    ------
    NotSubmodularError
        Some ``p_ij > 0``.
    ValueError
        Bad shapes or non-finite values.
    """
    u, edges, p = check_mrf(u, edges, p, submodular=True)
    n = u.size
    lin = np.zeros(n) if linear is None else np.asarray(linear, dtype=np.float64)
    if lin.shape != (n,):
        raise ValueError(f"linear must have shape ({n},), got {lin.shape}")
    if not np.all(np.isfinite(lin)):
        raise ValueError("linear must be finite")
    constant = float(constant)
    if not np.isfinite(constant):
        raise ValueError("constant must be finite")
    y = min_cut(u, edges, p, lin)
    return y, float(raw_score(u, edges, p, y)) + float(lin @ y) + constant


def min_cut(u, edges, p, lin) -> np.ndarray:
    """The maximiser of :func:`maximize` without its checks or value: uint8 (N,).

    For inputs the caller has validated (``check_mrf`` with ``submodular=True``;
    ``lin`` a finite float64 (N,) array).
    """
    n = u.size
    y = np.zeros(n, dtype=np.uint8)
    if n:
        # Up to a constant the objective is sum_i w_i y_i - sum_E |p_ij| [y_i != y_j].
        # Sink side = label 1: the source edge of i is cut (paid) when y_i = 1,
        # the sink edge when y_i = 0, so node i pays max(w_i, 0) for y_i = 0
        # or max(-w_i, 0) for y_i = 1 -- non-negative capacities either way.
        w = 2.0 * u + lin
        graph = maxflow.Graph[float](n, edges.shape[0])
        nodes = graph.add_nodes(n)
        graph.add_grid_tedges(nodes, np.maximum(-w, 0.0), np.maximum(w, 0.0))
        if edges.shape[0]:
            cap = -p
            graph.add_edges(nodes[edges[:, 0]], nodes[edges[:, 1]], cap, cap)
        graph.maxflow()
        y = graph.get_grid_segments(nodes).astype(np.uint8)
    return y


def loss_augmented(u, edges, p, t, a, loss) -> InferenceResult:
    """Most violated constraint ``argmax_y Delta(FP, FN) + score(y)`` for a linear loss.

    A loss ``alpha FP + beta FN`` is linear in ``y``:
    ``FP = sum_i a_i (1 - t_i) y_i`` and ``FN = Np - sum_i a_i t_i y_i``, so it
    is folded into the unaries and one cut solves the problem exactly.

    Parameters
    ----------
    u, edges, p
        The MRF, as in :func:`maximize` (``p <= 0``).
    t : array_like, shape (N,)
        Targets in {0, 1}.
    a : array_like of float, shape (N,), or None
        Node weights >= 0; None means 1.
    loss : Loss, str or callable
        Anything :func:`segstruct.inference.losses.get_loss` accepts; it must have
        ``linear_coefficients`` (Hamming, adjusted Hamming).

    Returns
    -------
    InferenceResult
        Exact optimum: ``bound == objective``.

    Raises
    ------
    ValueError
        The loss is not decomposable, or bad inputs.
    NotSubmodularError
        Some ``p_ij > 0``.
    """
    loss = get_loss(loss)
    coefficients = loss.linear_coefficients
    if coefficients is None:
        raise ValueError(
            f"loss {loss!r} is not a linear function of FP and FN, so a single graph "
            "cut cannot maximise it; use the LP (triangulation) oracle, BL2 for a "
            "unary model, or brute force for small graphs")
    alpha, beta = coefficients
    u, edges, p = check_mrf(u, edges, p, submodular=True)
    if np.shape(t) != u.shape:
        raise ValueError(f"targets t must have shape {u.shape} like u, got {np.shape(t)}")
    n_pos, n_neg = totals(t, a)  # validates t and a
    t = np.asarray(t, dtype=np.float64)
    a = np.ones(t.size) if a is None else np.asarray(a, dtype=np.float64)
    # The constant beta * Np of the FN term does not move the argmax.
    y = min_cut(u, edges, p, alpha * a * (1.0 - t) - beta * a * t)
    return exact_result(u, edges, p, y, t, a, loss, n_pos, n_neg, method="graphcut",
                   linear_coefficients=(alpha, beta))
