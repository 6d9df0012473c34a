"""Projection oracles and the Fenchel-Young (projection) loss of a binary pairwise MRF.

Following Blondel, Martins & Niculae (2019, "Learning with Fenchel-Young
losses" / "Structured prediction with projection oracles"), a labelling
``y in {0,1}^N`` of a graph with edges ``E`` (each pair ``i < j`` once, shape
(E, 2)) is encoded by its parts::

    phi(y) = ( y_i  for i in nodes ;  y_i y_j  for (i, j) in E ),   length N + E,

and a model outputs scores ``theta = (theta_u (N,), theta_p (E,))`` of the same
shape. The loss of ``theta`` for the target ``y`` on a closed convex set
``C`` that holds every ``phi(y)`` is::

    L_C(theta; y) = <theta, mu> - ||mu||^2 / 2 + ||phi(y)||^2 / 2 - <phi(y), theta>
                  = ||phi(y) - theta||^2 / 2 - ||mu - theta||^2 / 2,
    mu = proj_C(theta) = argmin_{m in C} ||m - theta||^2,    grad L = mu - phi(y).

Three sets, from the largest (cheapest) to the smallest (tightest):

- the unit cube ``[0,1]^(N+E)`` (:func:`project_cube`, clipping);
- the cube with a weighted foreground budget (:func:`project_budget`): the
  unary part in ``[0,1]^N`` with ``lower <= sum_i a_i mu_i <= upper``, the
  pairwise part in ``[0,1]^E`` (clipped independently; it is not tied to the
  unary part);
- the marginal polytope ``M = conv{phi(y)}`` (:func:`project_marginal`), by
  pairwise Frank-Wolfe whose linear step (:func:`linear_maximiser`) is the
  graph cut of :mod:`.graphcut`.

A smaller set gives a smaller loss (Blondel et al. 2019, Prop. 2), and all
three are inside the cube, so ``L_M <= L_cube`` and ``L_budget <= L_cube``.

Only numpy, highspy (the MILP oracle) and sibling modules are used (the rule
of ``inference/``).
"""
from __future__ import annotations

import numpy as np

from ._mrf import check_labels
# the parts live in private modules by role; their public names are this
# module's, as before the split
from ._projection_vertex import EXACT_LIMIT, linear_maximiser
from ._projection_sets import SETS as SETS  # re-exported: the learners read it here
from ._projection_sets import (finite, project, project_budget, project_cube,
                               project_marginal)
from ._projection_types import (FenchelYoungLoss, OracleAnswer, Projection, check_theta,
                                check_weights, encode)

__all__ = [
    "Projection",
    "OracleAnswer",
    "FenchelYoungLoss",
    "encode",
    "linear_maximiser",
    "project_cube",
    "project_budget",
    "project_marginal",
    "project",
    "projection_loss",
    "round_labels",
    "decode_iou",
    "decode_parts",
]


# ---- the loss --------------------------------------------------------------------

def projection_loss(theta_u, theta_p, edges, y, kind: str = "marginal",
                    **options) -> FenchelYoungLoss:
    """Fenchel-Young projection loss ``L_C(theta; y)`` and its gradient ``mu - phi(y)``.

    ``L_C(theta; y) = <theta, mu> - ||mu||^2/2 + ||phi(y)||^2/2 - <phi(y), theta>``
    with ``mu = proj_C(theta)``. Properties (Blondel et al. 2019): convex and
    1-smooth in ``theta``; ``L >= 0`` whenever ``phi(y) in C``, with equality
    exactly when ``mu = phi(y)``, e.g. for ``theta = phi(y)`` or
    ``theta = s (2 phi(y) - 1)`` with ``s >= 1`` (that point lies in the
    cube's normal cone at the vertex ``phi(y)``, hence in the normal cone of
    every smaller set that has ``phi(y)`` as a vertex).

    Parameters
    ----------
    theta_u : array_like of float, shape (N,)
    theta_p : array_like of float, shape (E,)
    edges : array_like of int, shape (E, 2)
    y : array_like, shape (N,)
        Target labelling in {0, 1}.
    kind : {"cube", "budget", "marginal"}
    **options
        As in :func:`project`.

    Returns
    -------
    FenchelYoungLoss

    Raises
    ------
    ValueError
        For ``"budget"``, a target outside the budget (``phi(y)`` not in the
        set, so the loss could be negative).
    """
    theta_u, theta_p, edges = check_theta(theta_u, theta_p, edges)
    y_u, y_p = encode(check_labels(y, theta_u.size), edges)
    if kind == "budget":
        a = check_weights(options.get("a"), theta_u.size)
        fg = float(a @ y_u)
        if not options.get("lower", 0.0) <= fg <= options["upper"]:
            raise ValueError(f"the target's foreground {fg:.6g} is outside the budget "
                             f"[{options.get('lower', 0.0)}, {options['upper']}]")
    proj = project(theta_u, theta_p, edges, kind, **options)
    mu_u, mu_p = proj.unary, proj.pairwise
    # ||phi(y) - theta||^2/2 - ||mu - theta||^2/2, the same quantity as the
    # defining formula, written as a difference of squared distances.
    value = 0.5 * (np.sum((y_u - theta_u) ** 2) + np.sum((y_p - theta_p) ** 2)
                   - np.sum((mu_u - theta_u) ** 2) - np.sum((mu_p - theta_p) ** 2))
    return FenchelYoungLoss(float(value), mu_u - y_u, mu_p - y_p, proj)


# ---- decoding --------------------------------------------------------------------

def round_labels(mu_u, threshold: float = 0.5) -> np.ndarray:
    """``y_i = [mu_i >= threshold]``: the Hamming-calibrated decoding of ``mu``.

    Parameters
    ----------
    mu_u : array_like of float, shape (N,)
    threshold : float, default 0.5

    Returns
    -------
    ndarray of uint8, shape (N,)
    """
    return (finite(mu_u, "mu_u") >= threshold).astype(np.uint8)


def decode_iou(mu_u, a=None) -> np.ndarray:
    """The top-k labelling of ``mu_u`` with the best expected-IoU estimate.

    Reading ``mu_i`` as the probability that node ``i`` is foreground, a
    labelling ``S`` has expected ``TP = sum_S a_i mu_i``, ``FP = sum_S a_i
    (1 - mu_i)`` and ``Np = sum_i a_i mu_i``. IoU is a ratio, not a sum over
    nodes, so the 0.5 threshold (right for Hamming) is not its best decision:
    for a small object it pays to take uncertain nodes, for a large one to
    drop them. Following Nowozin (2014, "Optimal decisions from probabilistic
    models: the intersection-over-union case"), the ratio of expectations
    ``TP / (Np + FP)`` is maximised over the N + 1 labellings that take the k
    most probable nodes (ties in ``mu`` keep index order); k = 0 scores 1
    when ``Np = 0`` (the empty prediction of an empty target is perfect, as in
    docs/design.md) and 0 otherwise.

    Parameters
    ----------
    mu_u : array_like of float, shape (N,)
        Unary part of a projection, in [0, 1].
    a : array_like of float, shape (N,), optional
        Node weights ``>= 0``; default 1.

    Returns
    -------
    ndarray of uint8, shape (N,)
    """
    mu = np.clip(finite(mu_u, "mu_u"), 0.0, 1.0)
    a = check_weights(a, mu.size)
    order = np.argsort(-mu, kind="stable")
    tp = np.concatenate([[0.0], np.cumsum(a[order] * mu[order])])
    fp = np.concatenate([[0.0], np.cumsum(a[order] * (1.0 - mu[order]))])
    n_pos = float(a @ mu)
    denom = n_pos + fp
    iou = np.where(denom > 0, tp / np.where(denom > 0, denom, 1.0), 1.0)
    y = np.zeros(mu.size, dtype=np.uint8)
    y[order[:int(np.argmax(iou))]] = 1
    return y


def decode_parts(mu_u, mu_p, edges, exact_limit: int = EXACT_LIMIT,
                 strict: bool = False) -> OracleAnswer:
    """``argmax_y <2 mu - 1, phi(y)>``: the decoding calibrated for errors on parts.

    ``||phi(y) - phi(t)||^2`` counts the nodes and edges that ``y`` gets wrong;
    its expectation when ``mu`` holds the parts' probabilities is
    ``<1 - 2 mu, phi(y)> + const``, so its minimiser maximises
    ``<2 mu - 1, phi(y)>`` (the plain MAP ``argmax <mu, phi(y)>`` would
    predict every node foreground, as ``mu >= 0``). It is exact by one cut
    when every ``mu_ij >= 1/2``; otherwise :func:`linear_maximiser`'s rules apply.

    Parameters
    ----------
    mu_u : array_like of float, shape (N,)
    mu_p : array_like of float, shape (E,)
    edges : array_like of int, shape (E, 2)
    exact_limit, strict
        As in :func:`linear_maximiser`.

    Returns
    -------
    OracleAnswer
    """
    mu_u, mu_p, edges = check_theta(mu_u, mu_p, edges)
    return linear_maximiser(2.0 * mu_u - 1.0, 2.0 * mu_p - 1.0, edges, exact_limit, strict)
