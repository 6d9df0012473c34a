"""Reference oracle: exact (loss-augmented) inference by enumerating all labellings.

Only for small graphs (2^N labellings), but it accepts any pairwise sign and
any loss, so every other oracle is tested against it.
"""
from __future__ import annotations

import numpy as np

from .losses import get_loss, totals

from ._mrf import InferenceResult, check_mrf, count_weights, exact_result

__all__ = ["brute_force"]

# Labellings scored per numpy batch: (2^14, N) arrays stay at a few MB for N <= 20.
_CHUNK = 1 << 14


def brute_force(u, edges, p, t=None, a=None, loss=None, max_nodes: int = 16) -> InferenceResult:
    """Exact ``argmax_y Delta(FP, FN, Np, Nn) + score(y)`` over all of ``{0,1}^N``.

    Parameters
    ----------
    u : array_like of float, shape (N,)
        Unary potentials.
    edges : array_like of int, shape (E, 2)
        Node pairs.
    p : array_like of float, shape (E,)
        Pairwise potentials, any sign.
    t : array_like, shape (N,), optional
        Targets in {0, 1}; needed with a loss. Without a loss they only fill
        in ``fp`` / ``fn`` of the result.
    a : array_like of float, shape (N,), optional
        Node weights >= 0; default 1.
    loss : Loss, str or callable, optional
        Anything :func:`segstruct.inference.losses.get_loss` accepts. None maximises the
        plain score.
    max_nodes : int, default 16
        Refuse larger graphs (the cost doubles with every node).

    Returns
    -------
    InferenceResult
        ``bound == objective`` (exact). ``info["n_labellings"]`` = 2^N.

    Notes
    -----
    Labelling number ``k`` has ``y_i`` = bit ``i`` of ``k``; they are scored in
    increasing ``k`` and, among those with the largest computed objective
    (exact float comparison), the lowest ``k`` is returned. For a submodular
    problem that is the maximiser with the fewest ones, which is also what
    the graph cut returns.

    Raises
    ------
    ValueError
        ``N > max_nodes``, a loss without targets, or bad inputs.
    """
    u, edges, p = check_mrf(u, edges, p)
    n = u.size
    if n > max_nodes:
        raise ValueError(f"brute force over 2^{n} labellings refused: N = {n} > "
                         f"max_nodes = {max_nodes}")
    if loss is not None:
        if t is None:
            raise ValueError("a loss needs targets t")
        loss = get_loss(loss)
    if t is not None:
        if np.shape(t) != (n,):
            raise ValueError(f"targets t must have shape ({n},), got {np.shape(t)}")
        n_pos, n_neg = totals(t, a)  # also validates t and a
        t = np.asarray(t, dtype=np.float64)
        a = np.ones(n) if a is None else np.asarray(a, dtype=np.float64)
        neg_weight, pos_weight = count_weights(t, a)

    bits = np.arange(n, dtype=np.int64)
    best_value, best_k = -np.inf, 0
    n_labellings = 1 << n
    for start in range(0, n_labellings, _CHUNK):
        k = np.arange(start, min(start + _CHUNK, n_labellings), dtype=np.int64)
        y = ((k[:, None] >> bits) & 1).astype(np.float64)
        value = (2.0 * y - 1.0) @ u
        if edges.shape[0]:
            value += (y[:, edges[:, 0]] != y[:, edges[:, 1]]) @ p
        if loss is not None:
            delta = loss(y @ neg_weight, (1.0 - y) @ pos_weight, n_pos, n_neg)
            if not np.all(np.isfinite(delta)):
                raise ValueError(f"loss {loss!r} returned non-finite values")
            value += delta
        i = int(np.argmax(value))  # first maximum within the chunk
        if value[i] > best_value:  # strict: earlier chunks win ties
            best_value, best_k = value[i], int(k[i])

    labels = ((best_k >> bits) & 1).astype(np.uint8)
    if t is None:
        return exact_result(u, edges, p, labels, method="brute_force", n_labellings=n_labellings)
    return exact_result(u, edges, p, labels, t, a, loss, n_pos, n_neg, method="brute_force",
                   n_labellings=n_labellings)
