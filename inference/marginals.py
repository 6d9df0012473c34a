"""Marginals and the log partition function of the model's Gibbs distribution.

The model's score (docs/design.md, "Model") defines a distribution

    p(y) = exp(score(y)) / Z,   score(y) = sum_i (2 y_i - 1) u_i + sum_E [y_i != y_j] p_ij,

the conditional random field of a likelihood-trained model (and, with the
scores divided by a temperature, a probabilistic reading of an SSVM's).

:func:`enumerate_marginals` sums over every labelling (N <= 20): the exact
reference. :func:`gibbs_samples` draws labellings from p(y) by Gibbs
sampling. :func:`loopy_bp` runs sum-product belief propagation on the
graph's edges: exact on a forest, the Bethe approximation on a loopy graph.
Each message of a binary model is one number, the log-ratio
``m_{i->j}(1) / m_{i->j}(0)``, so a sweep is a few numpy operations over the
2E directed edges (one sweep updates every message from the last sweep's:
the "flooding" schedule, damped so that loops do not make it oscillate).

Only numpy and scipy are used, so the module stands alone as every solver
here does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse

from ._mrf import check_mrf

__all__ = ["Marginals", "enumerate_marginals", "gibbs_samples", "loopy_bp"]

#: The most nodes :func:`enumerate_marginals` enumerates (2^N labellings).
MAX_ENUMERATED_NODES = 20


@dataclass
class Marginals:
    """Marginals of p(y) ∝ exp(score(y)) (module docstring).

    Attributes
    ----------
    node : ndarray of float64, shape (N,)
        p(y_i = 1).
    cut : ndarray of float64, shape (E,)
        p(y_i != y_j) of each edge.
    log_z : float
        log Z (exact, or the Bethe approximation from :func:`loopy_bp`).
    converged : bool
        Whether the messages stopped changing (always True when enumerated).
    n_iter : int
        Sweeps of belief propagation (0 when enumerated).
    messages : ndarray of float64, shape (2E,)
        The final log-ratio messages (for a warm start), empty when enumerated.
    """

    node: np.ndarray
    cut: np.ndarray
    log_z: float
    converged: bool = True
    n_iter: int = 0
    messages: np.ndarray | None = None


def enumerate_marginals(u, edges, p) -> Marginals:
    """Exact marginals and log Z by summing over all 2^N labellings.

    Parameters
    ----------
    u : array_like of float, shape (N,), N <= 20
    edges : array_like of int, shape (E, 2)
    p : array_like of float, shape (E,), any sign

    Returns
    -------
    Marginals
    """
    u, edges, p = check_mrf(u, edges, p)
    n = u.size
    if n > MAX_ENUMERATED_NODES:
        raise ValueError(f"enumerating 2^{n} labellings: at most {MAX_ENUMERATED_NODES} "
                         "nodes (use loopy_bp)")
    ys = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(np.float64)
    cuts = (ys[:, edges[:, 0]] != ys[:, edges[:, 1]]).astype(np.float64)
    scores = (2.0 * ys - 1.0) @ u + cuts @ p
    top = scores.max()
    weights = np.exp(scores - top)
    z = weights.sum()
    prob = weights / z
    return Marginals(node=prob @ ys, cut=prob @ cuts, log_z=float(top + np.log(z)))


def _entropy(*probs) -> np.ndarray:
    """Elementwise sum of -q log q over the given arrays (0 log 0 = 0)."""
    total = np.zeros(np.shape(probs[0]))
    for q in probs:
        q = np.clip(q, 0.0, 1.0)
        total = total - np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0)
    return total


def loopy_bp(u, edges, p, max_iter: int = 200, tol: float = 1e-8, damping: float = 0.5,
             messages=None) -> Marginals:
    """Sum-product belief propagation: marginals and the Bethe log Z.

    Parameters
    ----------
    u : array_like of float, shape (N,)
    edges : array_like of int, shape (E, 2)
    p : array_like of float, shape (E,), any sign
    max_iter : int
        Sweeps at most.
    tol : float
        Stop once no message changes by more than this (in log-ratio units).
    damping : float in [0, 1)
        Each sweep keeps this share of the old message (in log-ratio units).
    messages : ndarray, shape (2E,), optional
        Start from these (the ``messages`` of an earlier call on the same
        graph); zeros otherwise.

    Returns
    -------
    Marginals
        Exact on a forest (one sweep per level of the deepest tree), the
        Bethe approximation otherwise; ``converged`` False when ``max_iter``
        sweeps did not reach ``tol`` (the beliefs of the last sweep are
        returned all the same).
    """
    u, edges, p = check_mrf(u, edges, p)
    if not (0.0 <= damping < 1.0):
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if max_iter < 1 or not tol > 0:
        raise ValueError("max_iter must be >= 1 and tol > 0")
    n, e = u.size, len(edges)
    # directed edge d < E goes i -> j, d >= E goes j -> i; reverse[d] is its twin
    src = np.concatenate([edges[:, 0], edges[:, 1]])
    dst = np.concatenate([edges[:, 1], edges[:, 0]])
    pd = np.concatenate([p, p])
    reverse = np.concatenate([np.arange(e, 2 * e), np.arange(e)])
    mu = np.zeros(2 * e) if messages is None else np.array(messages, np.float64)
    if mu.shape != (2 * e,):
        raise ValueError(f"messages must have shape ({2 * e},), got {mu.shape}")
    # log-odds of a lone node: score(1) - score(0) = 2 u_i
    field = 2.0 * u
    converged, sweeps = e == 0, 0
    while not converged and sweeps < max_iter:
        sweeps += 1
        h = field + np.bincount(dst, mu, minlength=n)
        cavity = h[src] - mu[reverse]          # i's log-odds without j's message
        # m(y_j=1)/m(y_j=0) = (e^a + e^p) / (e^(a+p) + 1): y_i = y_j costs nothing
        new = np.logaddexp(cavity, pd) - np.logaddexp(cavity + pd, 0.0)
        new = damping * mu + (1.0 - damping) * new
        converged = bool(np.max(np.abs(new - mu)) <= tol)
        mu = new
    h = field + np.bincount(dst, mu, minlength=n)
    node = 0.5 * (1.0 + np.tanh(0.5 * h))      # the logistic of h, without overflow
    # edge beliefs from the cavities of both ends: log b(y_i, y_j) up to a constant
    a_i = h[edges[:, 0]] - mu[e:]              # without j -> i
    a_j = h[edges[:, 1]] - mu[:e]              # without i -> j
    logs = np.stack([np.zeros(e), a_j + p, a_i + p, a_i + a_j], axis=1)   # 00, 01, 10, 11
    logs -= logs.max(axis=1, keepdims=True)
    b = np.exp(logs)
    b /= b.sum(axis=1, keepdims=True)
    cut = b[:, 1] + b[:, 2]
    # Bethe: log Z = E_b[score] + sum_E H(b_ij) - sum_i (d_i - 1) H(b_i)
    degree = np.bincount(edges.ravel(), minlength=n) if e else np.zeros(n)
    energy = float((2.0 * node - 1.0) @ u + cut @ p)
    h_node = _entropy(node, 1.0 - node)
    h_edge = _entropy(b[:, 0], b[:, 1], b[:, 2], b[:, 3])
    log_z = energy + float(h_edge.sum()) - float((degree - 1.0) @ h_node)
    return Marginals(node=node, cut=cut, log_z=log_z, converged=converged, n_iter=sweeps,
                     messages=mu)


def _colouring(n: int, edges: np.ndarray) -> list[np.ndarray]:
    """Node sets with no edge inside any (greedy colouring, in node order)."""
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for i, j in edges:
        neighbours[i].append(j)
        neighbours[j].append(i)
    colour = np.full(n, -1)
    for i in range(n):
        taken = {colour[j] for j in neighbours[i]}
        colour[i] = next(c for c in range(n + 1) if c not in taken)
    return [np.flatnonzero(colour == c) for c in range(colour.max() + 1)] if n else []


def gibbs_samples(u, edges, p, n_samples: int, seed: int = 0, burn_in: int = 50,
                  thin: int = 2) -> np.ndarray:
    """Labellings drawn from p(y) ∝ exp(score(y)) by Gibbs sampling.

    Each sweep resamples the nodes one colour class at a time (a greedy
    colouring: no two neighbours in a class, so a class's nodes are
    independent given the rest), node i from its conditional
    ``p(y_i = 1 | rest) = logistic(2 u_i + sum_{j ~ i} p_ij (1 - 2 y_j))``.

    Parameters
    ----------
    u, edges, p : the model (any sign of p).
    n_samples : int >= 1
    seed : int, of the draws; the same seed gives the same samples.
    burn_in : int >= 0, sweeps discarded first (from an all-0 labelling).
    thin : int >= 1, sweeps between kept samples.

    Returns
    -------
    ndarray of uint8, shape (n_samples, N)
    """
    u, edges, p = check_mrf(u, edges, p)
    if n_samples < 1 or burn_in < 0 or thin < 1:
        raise ValueError("n_samples and thin must be >= 1 and burn_in >= 0")
    n = u.size
    rng = np.random.default_rng(seed)
    # W[i, j] = p_ij on both sides (sparse: superpixel graphs have few edges
    # a node): the neighbours' pull is W @ (1 - 2 y)
    W = scipy.sparse.csr_matrix(
        (np.concatenate([p, p]), (np.concatenate([edges[:, 0], edges[:, 1]]),
                                  np.concatenate([edges[:, 1], edges[:, 0]]))), shape=(n, n))
    classes = _colouring(n, edges)
    rows = [W[nodes] for nodes in classes]
    y = np.zeros(n)
    out = np.empty((n_samples, n), np.uint8)
    kept, sweep = 0, 0
    while kept < n_samples:
        for nodes, W_nodes in zip(classes, rows):
            logit = 2.0 * u[nodes] + W_nodes @ (1.0 - 2.0 * y)
            y[nodes] = rng.random(nodes.size) < 0.5 * (1.0 + np.tanh(0.5 * logit))
        sweep += 1
        if sweep > burn_in and (sweep - burn_in) % thin == 0:
            out[kept] = y
            kept += 1
    return out
