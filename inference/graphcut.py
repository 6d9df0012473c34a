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

from dataclasses import dataclass, field
from typing import Any

import maxflow
import numpy as np

from segstruct.losses import Loss, get_loss, totals

__all__ = [
    "NotSubmodularError",
    "InferenceResult",
    "check_mrf",
    "score",
    "maximize",
    "loss_augmented",
]


class NotSubmodularError(ValueError):
    """A pairwise potential is positive, so a graph cut cannot solve the problem."""


@dataclass
class InferenceResult:
    """Outcome of a (loss-augmented) inference oracle.

    Attributes
    ----------
    labels : ndarray of uint8, shape (N,)
        The labelling found, in {0, 1}.
    objective : float
        Its true objective ``loss + score``, recomputed from ``labels``.
    loss : float
        ``Delta(FP, FN, Np, Nn)`` of ``labels`` (0 when there is no loss).
    score : float
        ``score(labels)``.
    fp, fn : float or None
        Weighted false positive / negative counts (None without targets).
    bound : float or None
        An upper bound on the optimal objective when the oracle knows one;
        exact oracles set it to ``objective``.
    info : dict
        Oracle-specific details (method name, timings, ...).
    """

    labels: np.ndarray
    objective: float
    loss: float
    score: float
    fp: float | None
    fn: float | None
    bound: float | None = None
    info: dict[str, Any] = field(default_factory=dict)


def check_mrf(u, edges, p, submodular: bool = False):
    """Validate and normalise an MRF given as plain arrays.

    Parameters
    ----------
    u : array_like of float, shape (N,)
        Unary potentials.
    edges : array_like of int, shape (E, 2)
        Node pairs, each in ``[0, N)`` with ``i != j``. (docs/design.md lists
        each pair once with ``i < j``; other orders and repeats are accepted
        and simply summed, by every oracle alike.)
    p : array_like of float, shape (E,)
        Pairwise potentials.
    submodular : bool, default False
        Also require ``p <= 0``.

    Returns
    -------
    u : ndarray of float64, shape (N,)
    edges : ndarray of intp, shape (E, 2)
    p : ndarray of float64, shape (E,)

    Raises
    ------
    ValueError
        Wrong shapes, non-finite values, non-integer or out-of-range node
        indices, self loops.
    NotSubmodularError
        ``submodular`` and some ``p_ij > 0``.
    """
    u = np.asarray(u, dtype=np.float64)
    if u.ndim != 1:
        raise ValueError(f"unary potentials u must have shape (N,), got {u.shape}")
    n = u.size
    edges = np.asarray(edges)
    if edges.size == 0:
        # An empty list/array has no usable shape or dtype; treat it as (0, 2).
        edges = np.zeros((0, 2), dtype=np.intp)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"edges must have shape (E, 2), got {edges.shape}")
    if edges.dtype == bool or not (np.issubdtype(edges.dtype, np.integer)
                                   or np.issubdtype(edges.dtype, np.floating)):
        raise ValueError(f"edges must hold integer node indices, got dtype {edges.dtype}")
    if np.issubdtype(edges.dtype, np.floating):
        if not np.all(np.isfinite(edges)) or np.any(edges != np.round(edges)):
            raise ValueError("edges must hold integer node indices")
    edges = edges.astype(np.intp)
    p = np.asarray(p, dtype=np.float64)
    if p.shape != (edges.shape[0],):
        raise ValueError(f"pairwise potentials p must have shape ({edges.shape[0]},) "
                         f"to match edges, got {p.shape}")
    if not np.all(np.isfinite(u)):
        raise ValueError("unary potentials u must be finite")
    if not np.all(np.isfinite(p)):
        raise ValueError("pairwise potentials p must be finite")
    if edges.size:
        if edges.min() < 0 or edges.max() >= n:
            raise ValueError(f"edge endpoints must lie in [0, {n}), got "
                             f"[{edges.min()}, {edges.max()}]")
        loops = edges[:, 0] == edges[:, 1]
        if np.any(loops):
            raise ValueError(f"{int(loops.sum())} self loop(s) in edges, e.g. "
                             f"edge {int(np.flatnonzero(loops)[0])}")
    if submodular and np.any(p > 0):
        raise NotSubmodularError(
            f"{int(np.count_nonzero(p > 0))} of {p.size} pairwise potentials are "
            f"positive (max {p.max():.6g}); a graph cut needs every p_ij <= 0. "
            "Constrain w_p <= 0 or use the brute-force / LP oracles.")
    return u, edges, p


def _check_labels(y, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim not in (1, 2) or y.shape[-1] != n:
        raise ValueError(f"labellings y must have shape ({n},) or (K, {n}), got {y.shape}")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("labellings y must be 0 or 1")
    return y.astype(np.int8)


def score(u, edges, p, y):
    """Score of one or more labellings.

    Parameters
    ----------
    u : array_like of float, shape (N,)
    edges : array_like of int, shape (E, 2)
    p : array_like of float, shape (E,)
        Any sign.
    y : array_like, shape (N,) or (K, N)
        Labellings in {0, 1}.

    Returns
    -------
    float, or ndarray of float64 with shape (K,)
        ``sum_i (2 y_i - 1) u_i + sum_E [y_i != y_j] p_ij``.
    """
    u, edges, p = check_mrf(u, edges, p)
    y = _check_labels(y, u.size)
    value = _score(u, edges, p, y)
    return float(value) if y.ndim == 1 else value


def _score(u, edges, p, y):
    # Unchecked core of score(), for inputs the caller has validated.
    cut = (y[..., edges[:, 0]] != y[..., edges[:, 1]]).astype(np.float64)
    return (2.0 * y - 1.0) @ u + cut @ p


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
    y = _min_cut(u, edges, p, lin)
    return y, float(_score(u, edges, p, y)) + float(lin @ y) + constant


def _min_cut(u, edges, p, lin) -> np.ndarray:
    # Unchecked core of maximize(): the maximiser only, as uint8 (N,).
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
        Anything :func:`segstruct.losses.get_loss` accepts; it must have
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
    y = _min_cut(u, edges, p, alpha * a * (1.0 - t) - beta * a * t)
    return _result(u, edges, p, y, t, a, loss, n_pos, n_neg, method="graphcut",
                   linear_coefficients=(alpha, beta))


def _result(u, edges, p, y, t=None, a=None, loss: Loss | None = None,
            n_pos: float = 0.0, n_neg: float = 0.0, **info) -> InferenceResult:
    """Evaluate labelling ``y`` exactly and pack it as an exact oracle's result.

    Inputs must already be validated; ``t`` and ``a`` as float64 arrays (or
    ``t`` None), ``n_pos`` / ``n_neg`` their totals.
    """
    y = np.asarray(y, dtype=np.uint8)
    s = float(_score(u, edges, p, y))
    fp = fn = None
    delta = 0.0
    if t is not None:
        # Same formulas as segstruct.losses.counts, without re-validating.
        fp = float((a * (1.0 - t)) @ y)
        fn = float((a * t) @ (1.0 - y))
        if loss is not None:
            delta = float(loss(fp, fn, n_pos, n_neg))
    objective = delta + s
    return InferenceResult(labels=y, objective=objective,
                           loss=delta, score=s, fp=fp, fn=fn, bound=objective, info=info)
