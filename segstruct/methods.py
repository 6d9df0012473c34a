"""The named training methods of the paper's Table 1 (and two references).

A method fixes the loss (or takes the one asked for), whether the model has
a pairwise block, and the loss-augmented inference oracle. ``train`` and
``compare`` both build their estimators here, so the two commands cannot
disagree about what "bl2" means.
"""
from __future__ import annotations

from segstruct.inference import bl2, loss_augmented
from segstruct.inference.losses import get_loss
from segstruct.inference.milp import milp_oracle
from segstruct.inference.proposed import DEFAULT_LP_SOLVER, TriangleOracle
from segstruct.inference.triangulation import N_TRIANGLES

from .ssvm import StructuredSVM

# loss None = the loss asked for (IoU by default).
METHODS = {
    "bl1": {"loss": "adjusted_hamming", "pairwise": True, "oracle": "graphcut"},  # Eq. 28
    "hamming": {"loss": "hamming", "pairwise": True, "oracle": "graphcut"},  # kappa = 1
    "bl2": {"loss": None, "pairwise": False, "oracle": "bl2"},       # Joachims 2005
    "proposed": {"loss": None, "pairwise": True, "oracle": "proposed"},  # Sec. 4
    "exact": {"loss": None, "pairwise": True, "oracle": "exact"},    # MILP, small data only
}

METHOD_HELP = ("bl1: adjusted Hamming kappa FP + FN (kappa = fg/bg ratio of the training "
               "set), unary + pairwise, graph cut; hamming: kappa = 1; bl2: the loss with "
               "a unary-only model, exact enumeration (Joachims 2005); proposed: the loss "
               "with unary + pairwise (the paper's method), its most violated constraint "
               "found as --lp-solver says: exactly, by branch and bound with graph cuts "
               "(envelope, the default), or by the paper's one LP per loss-surface triangle "
               "(decomposition, lp); exact: the loss by MILP (small data only)")


def method_loss(method: str, loss: str = "iou", beta: float = 1.0):
    """The loss a method trains with: its own, or ``loss`` for the complex-loss methods."""
    spec = METHODS[_check(method)]["loss"]
    if spec is not None:
        return spec
    return get_loss(loss, **({"beta": beta} if loss == "fbeta" else {}))


def make_oracle(name: str, n_triangles: int = N_TRIANGLES,
                lp_solver: str = DEFAULT_LP_SOLVER, polish: bool = True):
    """The oracle of a method: graphcut, bl2, proposed (triangles) or exact (MILP)."""
    if name == "graphcut":
        return loss_augmented
    if name == "bl2":
        return bl2
    if name == "proposed":
        return TriangleOracle(n_triangles, lp_solver, polish=polish)
    if name == "exact":
        return milp_oracle
    raise ValueError(f"unknown oracle {name!r}")


def estimator_for(method: str, *, loss: str = "iou", beta: float = 1.0,
                  n_triangles: int = N_TRIANGLES, lp_solver: str = DEFAULT_LP_SOLVER,
                  polish: bool = True, weights: str = "count", **params) -> StructuredSVM:
    """A ``StructuredSVM`` set up for ``method``.

    Parameters
    ----------
    method : one of ``METHODS``.
    loss, beta : the complex loss of bl2 / proposed / exact ("iou", "fbeta", "f1").
    n_triangles, lp_solver, polish : the proposed method's M, triangle-LP
        solver and closing greedy flips (False: the paper's method as published).
    weights : "count" or "area" node weights.
    **params : further StructuredSVM hyper-parameters (C, scope, solver, ...).

    Raises
    ------
    ValueError for an unknown method, or bl2 with area weights (its exact
    enumeration counts superpixels).
    """
    spec = METHODS[_check(method)]
    if method == "bl2" and weights != "count":
        raise ValueError("bl2 needs count weights: its exact oracle counts superpixels")
    oracle = None
    if spec["oracle"] != "graphcut":
        oracle = make_oracle(spec["oracle"], n_triangles=n_triangles, lp_solver=lp_solver,
                             polish=polish)
    return StructuredSVM(loss=method_loss(method, loss, beta), pairwise=spec["pairwise"],
                         oracle=oracle, weights=weights, **params)


def _check(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {sorted(METHODS)}")
    return method
