"""BL2: exact loss-augmented inference for the unary-only model (Joachims 2005).

For the unary-only model (no pairwise terms, docs/design.md "Loss-augmented
inference") the most violated constraint

    argmax_y  Delta(FP, FN, Np, Nn) + sum_i (2 y_i - 1) u_i

can be found exactly for *any* loss of (FP, FN), not only a decomposable one.
With unit node weights FP and FN are integers, FP in 0..Nn and FN in 0..Np.
Fix a pair (FP = j, FN = k): the loss is then a constant, and the score,
``const + sum_i 2 u_i y_i``, is largest when the j negatives labelled 1 are
the j negatives with the highest u and the k positives labelled 0 are the k
positives with the lowest u. So one sort of each class, prefix sums, and an
evaluation of all (Nn + 1)(Np + 1) pairs give the exact optimum in
O(N log N + Np Nn) time (Joachims 2005, Algorithm 2).

For the named losses (Hamming, IoU, F-beta) the objective is concave in FP
for each FN: the prefix sums of the sorted unaries are concave, and so is
the loss (``Loss.concave_in_fp``). The best FP for every FN is then found by
bisection, O(N log N) in all; any other loss keeps the full scan.

Nodes with weight 0 (superpixels whose pixels are all void) never count in
FP or FN, so they are labelled independently by the sign of their unary.
"""
from __future__ import annotations

import numpy as np

from .losses import get_loss, totals

from ._mrf import InferenceResult, check_mrf, exact_result

__all__ = ["bl2"]

# (FP, FN) pairs evaluated per numpy batch by the full scan (losses that are
# not concave in FP). Evaluating a loss makes a handful of float64 temporaries
# of the batch's size, so 2^20 pairs (a few megabytes per array) keep the
# peak small even for the data-set scope (Np * Nn ~ 1e8 pairs then takes ~100
# batches).
_CHUNK = 1 << 20


def bl2(u, edges, p, t, a=None, loss=None) -> InferenceResult:
    """Exact ``argmax_y Delta(FP, FN, Np, Nn) + score(y)`` for a unary-only model.

    Same signature as the other oracles (``oracle(u, edges, p, t, a, loss)``),
    so it can be handed to :class:`segstruct.learn.estimators.structured_svm.StructuredSVM` as
    ``oracle=bl2`` together with ``pairwise=False`` and ``weights="count"``.

    Parameters
    ----------
    u : array_like of float, shape (N,)
        Unary potentials.
    edges : array_like of int, shape (E, 2)
        Node pairs; may be empty. Accepted only so that the signature matches
        the other oracles: every pairwise potential must be 0.
    p : array_like of float, shape (E,)
        Pairwise potentials; must all be exactly 0 (unary-only model).
    t : array_like, shape (N,)
        Targets in {0, 1}.
    a : array_like of float, shape (N,), optional
        Node weights, each exactly 0 or 1 (count mode); default 1. Nodes with
        ``a_i = 0`` never count in FP / FN and are labelled ``y_i = 1`` iff
        ``u_i > 0``.
    loss : Loss, str or callable, optional
        Anything :func:`segstruct.inference.losses.get_loss` accepts, any function of
        (FP, FN, Np, Nn). None maximises the plain score.

    Returns
    -------
    InferenceResult
        Exact optimum: ``objective`` (true loss + score, recomputed from the
        labels), ``loss``, ``score``, ``fp``, ``fn``, ``bound == objective``
        and ``info == {"method": "bl2"}``.

    Notes
    -----
    Tie-breaking is deterministic. Among (FP, FN) pairs with exactly equal
    computed objective the one with the fewest false positives wins, then the
    one with the fewest false negatives. Within a class, nodes of equal
    ``u`` are taken in index order: the negatives switched on are the first
    in a stable descending sort of ``u``, the positives switched off the first
    in a stable ascending sort. A zero-weight node with ``u_i = 0`` gets 0.
    Objectives are compared as computed from prefix sums, so two labellings
    whose true objectives differ only by rounding (~1e-15 relative) may be
    ordered either way.

    Raises
    ------
    ValueError
        Some ``p_ij != 0``; a weight other than 0 or 1; no targets; bad
        shapes or values; a loss returning non-finite values.
    """
    u, edges, p = check_mrf(u, edges, p)
    n = u.size
    nonzero = np.count_nonzero(p)
    if nonzero:
        raise ValueError(
            f"BL2 is exact only for the unary-only model, but {nonzero} of {p.size} "
            "pairwise potentials are non-zero; train with pairwise=False (edges may be "
            "given, with p all zero) or use the graph-cut / LP oracles")
    if t is None:
        raise ValueError("BL2 needs targets t")
    if np.shape(t) != (n,):
        raise ValueError(f"targets t must have shape ({n},) like u, got {np.shape(t)}")
    n_pos, n_neg = totals(t, a)  # validates t and a (finite, >= 0)
    t = np.asarray(t, dtype=np.float64)
    a = np.ones(n) if a is None else np.asarray(a, dtype=np.float64)
    bad = (a != 0) & (a != 1)
    if np.any(bad):
        raise ValueError(
            f"BL2 needs unit node weights (a_i = 1, or 0 for void-only superpixels), "
            f"but {int(bad.sum())} weight(s) differ, e.g. a[{int(np.flatnonzero(bad)[0])}] = "
            f"{a[bad][0]:g}; use count mode (weights='count'), not area mode")
    if loss is not None:
        loss = get_loss(loss)

    counted = a == 1
    pos = np.flatnonzero(counted & (t == 1))
    neg = np.flatnonzero(counted & (t == 0))
    # Positives by increasing u: the first k are the false negatives of FN = k.
    pos = pos[np.argsort(u[pos], kind="stable")]
    # Negatives by decreasing u (stable: equal u keep index order): the first
    # j are the false positives of FP = j.
    neg = neg[np.argsort(-u[neg], kind="stable")]
    # Switching node i from 0 to 1 adds 2 u_i to the score. Relative to the
    # labelling y = t on counted nodes, pair (j, k) changes the score by
    # gain[j] - cost[k].
    gain = np.concatenate([[0.0], np.cumsum(2.0 * u[neg])])   # (Nn + 1,)
    cost = np.concatenate([[0.0], np.cumsum(2.0 * u[pos])])   # (Np + 1,)
    if loss is None or loss.concave_in_fp:
        best_j, best_k = _bisect_pairs(gain, cost, loss, n_pos, n_neg)
    else:
        best_j, best_k = _scan_pairs(gain, cost, loss, n_pos, n_neg)

    y = np.zeros(n, dtype=np.uint8)
    y[pos[best_k:]] = 1
    y[neg[:best_j]] = 1
    void = ~counted
    y[void] = u[void] > 0
    return exact_result(u, edges, p, y, t, a, loss, n_pos, n_neg, method="bl2")


def _pair_values(gain, cost, loss, j, k, n_pos, n_neg):
    """Objective (up to a constant) of the pairs (FP = j, FN = k), broadcast."""
    value = gain[j] - cost[k]
    if loss is not None:
        delta = loss(j.astype(np.float64), k.astype(np.float64), n_pos, n_neg)
        if not np.all(np.isfinite(delta)):
            raise ValueError(f"loss {loss!r} returned non-finite values")
        value = value + delta
    return value


def _scan_pairs(gain, cost, loss, n_pos, n_neg):
    """Best (j, k) by evaluating all (Nn + 1)(Np + 1) pairs, in batches of rows."""
    k = np.arange(cost.size)[None, :]
    best_value, best_j, best_k = -np.inf, 0, 0
    rows = max(1, _CHUNK // cost.size)
    for start in range(0, gain.size, rows):
        j = np.arange(start, min(start + rows, gain.size))[:, None]
        value = _pair_values(gain, cost, loss, j, k, n_pos, n_neg)
        flat = int(np.argmax(value))  # first maximum: smallest j, then smallest k
        if value.flat[flat] > best_value:  # strict: earlier batches (smaller j) win ties
            best_value = value.flat[flat]
            best_j, best_k = start + flat // value.shape[1], flat % value.shape[1]
    return int(best_j), int(best_k)


def _bisect_pairs(gain, cost, loss, n_pos, n_neg):
    """Best (j, k) when the objective is concave in j for every k.

    ``gain`` is concave (prefix sums of a decreasing sequence) and the loss is
    concave in FP, so for each k the steps ``value(j + 1) - value(j)`` do not
    increase: the smallest maximiser is the smallest j whose step is <= 0,
    found by bisection for all k at once, O(Np log Nn) evaluations instead of
    O(Np Nn). Ties are broken as in :func:`_scan_pairs`.
    """
    k = np.arange(cost.size)
    lo = np.zeros(cost.size, dtype=np.intp)
    hi = np.full(cost.size, gain.size - 1, dtype=np.intp)  # step at Nn counts as <= 0
    while True:
        open_ = lo < hi
        if not open_.any():
            break
        ko, mid = k[open_], (lo[open_] + hi[open_]) // 2
        step = (_pair_values(gain, cost, loss, mid + 1, ko, n_pos, n_neg)
                - _pair_values(gain, cost, loss, mid, ko, n_pos, n_neg))
        down = step <= 0
        hi[open_] = np.where(down, mid, hi[open_])
        lo[open_] = np.where(down, lo[open_], mid + 1)
    value = _pair_values(gain, cost, loss, lo, k, n_pos, n_neg)
    tied = np.flatnonzero(value == value.max())
    first = tied[np.lexsort((tied, lo[tied]))[0]]  # smallest j, then smallest k
    return int(lo[first]), int(first)
