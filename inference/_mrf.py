"""The binary MRF problem that every oracle solves: its check, score and result.

The model (docs/design.md, "The model (Eq. 15)") scores a labelling ``y in {0,1}^N`` as

    score(y) = sum_i (2 y_i - 1) u_i + sum_{(i,j) in E} [y_i != y_j] p_ij,

and a loss-augmented oracle maximises ``Delta(FP, FN, Np, Nn) + score(y)`` with

    FP(y) = sum_i a_i (1 - t_i) y_i      FN(y) = sum_i a_i t_i (1 - y_i).

Every solver of this package takes the problem as plain arrays ``(u, edges, p,
t, a, loss)``, checks it here and returns an :class:`InferenceResult`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .losses import Loss, get_loss, totals
from .triangulation import N_TRIANGLES, triangulate

__all__ = [
    "NotSubmodularError",
    "InferenceResult",
    "check_mrf",
    "check_labels",
    "score",
    "raw_score",
    "count_weights",
    "exact_result",
    "complex_loss_inputs",
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



def check_labels(y, n: int) -> np.ndarray:
    """Labellings ``y`` of shape (N,) or (K, N) in {0, 1}, as int8; ValueError otherwise."""
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
    y = check_labels(y, u.size)
    value = raw_score(u, edges, p, y)
    return float(value) if y.ndim == 1 else value



def raw_score(u, edges, p, y):
    """:func:`score` without the checks, for inputs the caller has validated."""
    cut = (y[..., edges[:, 0]] != y[..., edges[:, 1]]).astype(np.float64)
    return (2.0 * y - 1.0) @ u + cut @ p



def count_weights(t, a) -> tuple[np.ndarray, np.ndarray]:
    """Per-node weights of FP and of TP: ``FP(y) = fp_w @ y``, ``FN(y) = Np - tp_w @ y``.

    Parameters
    ----------
    t, a : ndarray of float64, shape (N,)
        Targets in {0, 1} and node weights, already validated.

    Returns
    -------
    fp_w, tp_w : ndarray of float64, shape (N,)
        ``a (1 - t)`` and ``a t``.
    """
    return a * (1.0 - t), a * t


def exact_result(u, edges, p, y, t=None, a=None, loss: Loss | None = None,
            n_pos: float = 0.0, n_neg: float = 0.0, **info) -> InferenceResult:
    """Evaluate labelling ``y`` exactly and pack it as an exact oracle's result.

    Inputs must already be validated; ``t`` and ``a`` as float64 arrays (or
    ``t`` None), ``n_pos`` / ``n_neg`` their totals.
    """
    y = np.asarray(y, dtype=np.uint8)
    s = float(raw_score(u, edges, p, y))
    fp = fn = None
    delta = 0.0
    if t is not None:
        # Same formulas as losses.counts, without re-validating.
        fp_w, tp_w = count_weights(t, a)
        fp = float(fp_w @ y)
        fn = float(tp_w @ (1.0 - y))
        if loss is not None:
            delta = float(loss(fp, fn, n_pos, n_neg))
    objective = delta + s
    return InferenceResult(labels=y, objective=objective,
                           loss=delta, score=s, fp=fp, fn=fn, bound=objective, info=info)


def complex_loss_inputs(u, edges, p, t, a, loss, triangulation=None, n_triangles=N_TRIANGLES,
                        submodular=True):
    """Validated arrays, the loss, totals and a matching triangulation.

    Returns
    -------
    loss, u, edges, p, t (float64), a (float64), n_pos, n_neg, triangulation
    (None when ``n_triangles`` is None and none was given).
    """
    loss = get_loss(loss)
    u, edges, p = check_mrf(u, edges, p, submodular=submodular)
    t = np.asarray(t, np.float64)
    a = np.ones(u.size) if a is None else np.asarray(a, np.float64)
    n_pos, n_neg = totals(t, a)
    if triangulation is None and n_triangles is not None:
        triangulation = triangulate(loss, n_pos, n_neg, n_triangles=n_triangles)
    elif triangulation is not None and not (np.isclose(triangulation.n_pos, n_pos)
                                            and np.isclose(triangulation.n_neg, n_neg)):
        raise ValueError(f"triangulation is for Np={triangulation.n_pos}, Nn="
                         f"{triangulation.n_neg}, but the targets give Np={n_pos}, Nn={n_neg}")
    return loss, u, edges, p, t, a, n_pos, n_neg, triangulation
