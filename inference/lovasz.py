"""Lovász hinge for the weighted Jaccard (IoU) loss (Yu & Blaschko, ICML 2015).

A labelling ``y`` of N nodes with targets ``t`` and node weights ``a``
mispredicts the set ``M = {i : y_i != t_i}``. The IoU loss of docs/design.md,
``(FP + FN) / (Np + FP)``, is then the set function

    Delta(M) = a(M) / (a(P) + a(M ∩ Neg)),    P = {t = 1}, Neg = {t = 0},

with ``a(S) = sum_{i in S} a_i`` and ``Delta = 0`` when the denominator is 0
(because ``FP = a(M ∩ Neg)`` and ``FN = a(M ∩ P)``). Delta is submodular and
increasing (Berman et al., CVPR 2018, prove it for the Jaccard loss; weights
only replace counts by sums), so its Lovász extension ``hat Delta`` is convex
(Lovász 1983) and non-decreasing in every coordinate (all increments >= 0).

The Lovász extension of x in R^N: sort x decreasingly (permutation pi), take
the increments ``g_k = Delta({pi_1..pi_k}) - Delta({pi_1..pi_{k-1}})``, then
``hat Delta(x) = sum_k g_k x_{pi_k}``. The vector ``g`` (scattered back to node
order) is the greedy vertex of the base polytope of Delta, hence a subgradient
of ``hat Delta`` at x. One sort and prefix sums: O(N log N), no Python loop.

Which hinge (Yu & Blaschko, Def. 5 and the paragraph after it)
---------------------------------------------------------------
Node scores ``theta`` (the unary margins ``u_i`` of the model; the prediction
is ``y_i = [theta_i > 0]``) give margins ``m_i = 1 - theta_i (2 t_i - 1)``. The
paper's Eq. 25 thresholds *after* the extension, ``max(hat Delta(m), 0)``, and
allows thresholding each component *before* it, ``hat Delta(max(m, 0))``, when
the loss is increasing. We implement the componentwise variant

    L(theta) = hat Delta(max(m, 0)) = sum_k g_k max(m_{pi_k}, 0),

with pi sorting m decreasingly (the same order as max(m, 0)), because

- the Jaccard loss is increasing, the condition under which the paper allows
  it;
- it upper-bounds the IoU loss of the thresholded prediction: a mispredicted
  node has ``m_i >= 1``, so ``max(m, 0) >= 1_M`` componentwise, and the
  extension, non-decreasing for an increasing Delta, gives
  ``L >= hat Delta(1_M) = Delta(M)``. The other variant can fall below
  Delta(M): large negative margins of correct nodes cancel the errors;
- correct nodes beyond the margin (m_i <= 0) then cost nothing and get no
  gradient, as in the ordinary hinge; with a modular (Hamming) loss the same
  construction gives the SVM hinge.

It is convex: ``L = max over s in B(Delta), u in [0,1]^N of sum_i s_i u_i m_i``
(every s in the base polytope is >= 0 because Delta is increasing), a
maximum of affine functions of theta; the maximiser ``s = g``,
``u_i = [m_i > 0]`` gives the subgradient returned here.

Loss scopes (docs/design.md, "Learning"): :func:`lovasz_hinge_dataset`
evaluates one Jaccard loss over all images' nodes concatenated (the VOC
measure accumulates over the data set); :func:`lovasz_hinge_per_image`
averages one loss per image.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .losses import IoULoss

__all__ = [
    "jaccard_set_loss",
    "jaccard_increments",
    "lovasz_extension",
    "lovasz_hinge",
    "lovasz_hinge_dataset",
    "lovasz_hinge_per_image",
]

_IOU = IoULoss()


def _check_targets_weights(t, a) -> tuple[np.ndarray, np.ndarray]:
    """Targets as float64 {0, 1} (N,) and weights as float64 >= 0 (N,), validated."""
    t = np.asarray(t)
    if t.ndim != 1:
        raise ValueError(f"targets t must be 1-D (N,), got shape {t.shape}")
    if not np.all((t == 0) | (t == 1)):
        raise ValueError("targets t must be 0 or 1")
    t = t.astype(np.float64)
    if a is None:
        return t, np.ones(t.size, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    if a.shape != t.shape:
        raise ValueError(f"weights a must have shape {t.shape}, got {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("weights a must be finite and >= 0")
    return t, a


def _check_vector(x, n: int, what: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (n,):
        raise ValueError(f"{what} must have shape ({n},), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what} must be finite")
    return x


def jaccard_set_loss(mispredicted, t, a=None):
    """Weighted Jaccard loss ``Delta(M)`` of sets of mispredicted nodes.

    Parameters
    ----------
    mispredicted : array_like of bool, shape (N,) or (K, N)
        Indicator of the set M (``y_i != t_i``), or of K such sets.
    t : array_like, shape (N,)
        Targets in {0, 1}.
    a : array_like of float, shape (N,), optional
        Node weights >= 0 (1 per superpixel, or its non-void pixel count);
        default 1.

    Returns
    -------
    float, or ndarray of float64 with shape (K,)
        ``a(M) / (a(P) + a(M ∩ Neg))`` in [0, 1], 0 when the denominator is 0;
        equal to the IoU loss ``(FP + FN) / (Np + FP)`` of the labelling
        ``y = t XOR M``.
    """
    t, a = _check_targets_weights(t, a)
    m = np.asarray(mispredicted)
    if m.ndim not in (1, 2) or m.shape[-1] != t.size:
        raise ValueError(f"mispredicted must have shape ({t.size},) or (K, {t.size}), "
                         f"got {m.shape}")
    if not np.all((m == 0) | (m == 1)):
        raise ValueError("mispredicted must be 0/1 (a set indicator)")
    m = m.astype(np.float64)
    fp = m @ (a * (1.0 - t))
    fn = m @ (a * t)
    value = _IOU(fp, fn, a @ t, a @ (1.0 - t))
    return float(value) if m.ndim == 1 else value


def jaccard_increments(order, t, a=None) -> np.ndarray:
    """Increments of Delta along an order of the nodes (the greedy algorithm).

    Parameters
    ----------
    order : array_like of int, shape (N,)
        A permutation of ``0..N-1``: nodes are added to M in this order.
    t : array_like, shape (N,)
        Targets in {0, 1}.
    a : array_like of float, shape (N,), optional
        Node weights >= 0; default 1.

    Returns
    -------
    ndarray of float64, shape (N,)
        ``g[k] = Delta({order[0..k]}) - Delta({order[0..k-1]})``, in the order
        given (not scattered back to nodes). All ``g >= 0`` (Delta is
        increasing) and ``sum g = Delta(all nodes)``; a node of weight 0 gets
        ``g = 0``.
    """
    t, a = _check_targets_weights(t, a)
    order = np.asarray(order)
    if order.shape != t.shape or not np.array_equal(np.sort(order), np.arange(t.size)):
        raise ValueError(f"order must be a permutation of 0..{t.size - 1}")
    return _increments(order, t, a)


def _increments(order: np.ndarray, t: np.ndarray, a: np.ndarray) -> np.ndarray:
    # Prefix sums give FP and FN of every prefix set at once; the IoU loss of
    # losses.py then fixes the 0/0 convention in one place for the project.
    a_sorted, t_sorted = a[order], t[order]
    fp = np.cumsum(a_sorted * (1.0 - t_sorted))
    fn = np.cumsum(a_sorted * t_sorted)
    delta = _IOU(fp, fn, a @ t, a @ (1.0 - t))
    g = np.diff(delta, prepend=0.0)
    # Rounding in the prefix sums can leave -1e-17 where Delta stays put (a
    # zero-weight node); the exact increments of an increasing Delta are >= 0.
    return np.maximum(g, 0.0)


def _sorted_increments(x: np.ndarray, t: np.ndarray, a: np.ndarray):
    """(pi, g): x sorted decreasingly, increments along that order."""
    # Stable sort: ties keep node order, so results are reproducible; any
    # order of ties gives the same extension value.
    order = np.argsort(-x, kind="stable")
    return order, _increments(order, t, a)


def lovasz_extension(x, t, a=None) -> tuple[float, np.ndarray]:
    """Lovász extension of the weighted Jaccard loss, with a subgradient.

    Parameters
    ----------
    x : array_like of float, shape (N,)
        Error vector in R^N (1 on a mispredicted node, 0 on a correct one at
        the vertices of the unit cube; any real values elsewhere).
    t : array_like, shape (N,)
        Targets in {0, 1}.
    a : array_like of float, shape (N,), optional
        Node weights >= 0; default 1.

    Returns
    -------
    value : float
        ``sum_k g_k x_{pi_k}`` with pi sorting x decreasingly; equals
        :func:`jaccard_set_loss` of ``{i : x_i = 1}`` on every 0/1 vector.
    grad : ndarray of float64, shape (N,)
        A subgradient (the greedy vertex): ``grad[pi_k] = g_k >= 0``.
    """
    t, a = _check_targets_weights(t, a)
    x = _check_vector(x, t.size, "x")
    order, g = _sorted_increments(x, t, a)
    grad = np.empty_like(x)
    grad[order] = g
    return float(g @ x[order]), grad


def lovasz_hinge(theta, t, a=None) -> tuple[float, np.ndarray]:
    """Lovász hinge of the weighted Jaccard loss for one set of nodes.

    Parameters
    ----------
    theta : array_like of float, shape (N,)
        Node scores; the prediction is ``y_i = [theta_i > 0]``.
    t : array_like, shape (N,)
        Targets in {0, 1}.
    a : array_like of float, shape (N,), optional
        Node weights >= 0 (1 in count mode, non-void pixels in area mode);
        default 1. Nodes of weight 0 contribute nothing to value or gradient.

    Returns
    -------
    value : float
        ``sum_k g_k max(m_{pi_k}, 0)`` with margins ``m = 1 - theta (2t - 1)``
        sorted decreasingly by pi (module docstring); >= the IoU loss of the
        prediction, 0 when every weighted node has margin ``m_i <= 0``.
    grad : ndarray of float64, shape (N,)
        A subgradient with respect to theta:
        ``-g_{rank(i)} [m_i > 0] (2 t_i - 1)``.
    """
    t, a = _check_targets_weights(t, a)
    theta = _check_vector(theta, t.size, "theta")
    sign = 2.0 * t - 1.0
    margins = 1.0 - theta * sign
    active = np.maximum(margins, 0.0)
    order, g = _sorted_increments(margins, t, a)
    g_nodes = np.empty_like(theta)
    g_nodes[order] = g
    grad = -g_nodes * (margins > 0) * sign
    return float(g @ active[order]), grad


def lovasz_hinge_dataset(thetas: Sequence, targets: Sequence,
                         weights: Sequence | None = None) -> tuple[float, list[np.ndarray]]:
    """Lovász hinge of one Jaccard loss over all images' nodes (data-set scope).

    Parameters
    ----------
    thetas, targets : sequences of array_like, shapes (N_j,)
        Node scores and targets of each image j.
    weights : sequence of array_like, shapes (N_j,), optional
        Node weights of each image; default 1 everywhere.

    Returns
    -------
    value : float
        :func:`lovasz_hinge` of the concatenated nodes: FP, FN and Np are sums
        over the whole data set, as in the VOC measure.
    grads : list of ndarray of float64, shapes (N_j,)
        The subgradient, split back per image.
    """
    theta, t, a, sizes = _concatenate(thetas, targets, weights)
    value, grad = lovasz_hinge(theta, t, a)
    return value, np.split(grad, np.cumsum(sizes)[:-1])


def lovasz_hinge_per_image(thetas: Sequence, targets: Sequence,
                           weights: Sequence | None = None) -> tuple[float, list[np.ndarray]]:
    """Mean over images of the per-image Lovász hinge (image scope).

    Parameters
    ----------
    thetas, targets : sequences of array_like, shapes (N_j,)
        Node scores and targets of each of the J >= 1 images.
    weights : sequence of array_like, shapes (N_j,), optional
        Node weights of each image; default 1 everywhere.

    Returns
    -------
    value : float
        ``(1/J) sum_j lovasz_hinge(theta_j, t_j, a_j)``.
    grads : list of ndarray of float64, shapes (N_j,)
        Subgradient of that mean with respect to each image's scores.
    """
    if len(thetas) == 0:
        raise ValueError("need at least one image")
    if weights is None:
        weights = [None] * len(thetas)
    if not len(thetas) == len(targets) == len(weights):
        raise ValueError("thetas, targets and weights must have one entry per image")
    results = [lovasz_hinge(th, t, a) for th, t, a in zip(thetas, targets, weights)]
    n = len(results)
    return sum(v for v, _ in results) / n, [g / n for _, g in results]


def _concatenate(thetas, targets, weights):
    if len(thetas) == 0:
        raise ValueError("need at least one image")
    if weights is None:
        weights = [np.ones(np.shape(t)) for t in targets]
    if not len(thetas) == len(targets) == len(weights):
        raise ValueError("thetas, targets and weights must have one entry per image")
    sizes = [np.size(t) for t in targets]
    for th, t, a in zip(thetas, targets, weights):
        if np.ndim(th) != 1 or np.ndim(t) != 1 or np.ndim(a) != 1 \
                or not np.size(th) == np.size(t) == np.size(a):
            raise ValueError("each image needs 1-D theta, t and a of one length")
    cat = [np.concatenate([np.asarray(v, dtype=np.float64) for v in vs])
           for vs in (thetas, targets, weights)]
    return (*cat, sizes)
