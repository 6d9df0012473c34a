"""The named training methods of the paper's Table 1 (and two references), and
the training settings with their defaults.

A method fixes the loss (or takes the one asked for), whether the model has
a pairwise block, the loss-augmented inference oracle, the learner, and
names its step: the function where the work of an iteration is done (the
most violated constraint, or the gradient). ``train`` and
``compare`` both build their estimators here, so the two commands cannot
disagree about what "bl2" means; :data:`DEFAULTS` (a :class:`TrainingSettings`)
holds the default of every training option, which the command line shows.
"""
from __future__ import annotations

from typing import Any

from dataclasses import asdict, dataclass

from segstruct.inference import bl2, loss_augmented
from segstruct.inference.losses import get_loss
from segstruct.inference.lovasz import lovasz_hinge
from segstruct.inference.milp import milp_oracle
from segstruct.inference.proposed import DEFAULT_INFERENCE, ProposedOracle
from segstruct.inference.triangulation import N_TRIANGLES

from segstruct.learn.estimators.base import BaseSSVM
from segstruct.learn.estimators.crf import CRF
from segstruct.learn.estimators.first_order_svm import FirstOrderSVM
from segstruct.learn.estimators.lovasz_svm import LovaszSVM
from segstruct.learn.estimators.projection_svm import ProjectionSVM
from segstruct.learn.estimators.structured_svm import STOCHASTIC_SOLVERS, StructuredSVM
from segstruct.learn.selection import (DEFAULT_C_EXTEND, DEFAULT_FOLD_TOL, DEFAULT_FOLDS,
                                       DEFAULT_GRID, check_extend, check_fold_tol, check_folds,
                                       check_grid)
from segstruct.learn.solvers.fenchel_young import ProjectionProblem
from segstruct.learn.solvers.likelihood import LikelihoodProblem

# Each method: the loss it trains with (None: the loss asked for, IoU by
# default), whether the model has a pairwise block, the oracle
# (:func:`make_oracle`'s name; None where the learner needs none), the
# learner that fits it, and its step: the function that finds the most
# violated constraint (an oracle, called once per example and iteration) or
# the objective's gradient (a method trained by L-BFGS-B or the Lovász
# hinge's cutting planes). One hop from ``--method X`` to the work.
METHODS: dict[str, dict[str, Any]] = {
    # Eq. 28: kappa FP + FN folded into the unaries, one graph cut
    "bl1": {"loss": "adjusted_hamming", "pairwise": True, "oracle": "graphcut",
            "learner": StructuredSVM, "step": loss_augmented},
    # kappa = 1
    "hamming": {"loss": "hamming", "pairwise": True, "oracle": "graphcut",
                "learner": StructuredSVM, "step": loss_augmented},
    # Joachims 2005: exact enumeration of the unary-only model
    "bl2": {"loss": None, "pairwise": False, "oracle": "bl2",
            "learner": StructuredSVM, "step": bl2},
    # Sec. 4: the exact envelope or the paper's triangle LPs
    "proposed": {"loss": None, "pairwise": True, "oracle": "proposed",
                 "learner": StructuredSVM, "step": ProposedOracle.__call__},
    # MILP, small data only
    "exact": {"loss": None, "pairwise": True, "oracle": "exact",
              "learner": StructuredSVM, "step": milp_oracle},
    # Lovász hinge of IoU for the unaries (its value and subgradient), the
    # pairwise weight chosen
    "lovasz": {"loss": None, "pairwise": True, "oracle": None,
               "learner": LovaszSVM, "step": lovasz_hinge},
    # Fenchel-Young loss of the cube projection, L-BFGS; its MAP decoding is
    # calibrated for an error count, hence "hamming"
    "projection": {"loss": "hamming", "pairwise": True, "oracle": None,
                   "learner": ProjectionSVM, "step": ProjectionProblem.value_and_grad},
    # a CRF trained by (pseudo- or Bethe) likelihood, L-BFGS; no training loss:
    # its MAP is calibrated for an error count, hence "hamming"
    "crf": {"loss": "hamming", "pairwise": True, "oracle": None,
            "learner": CRF, "step": LikelihoodProblem.value_and_grad},
}

#: The methods trained by one call of their own solver (nothing to resume from).
SINGLE_RUN_METHODS = ("lovasz", "projection", "crf")

#: The ``--solver`` values each single-run method takes (projection none: it
#: trains by L-BFGS-B; :func:`estimator_for` gives either the default solver
#: for another); the other methods take every one of ``SOLVERS``.
SINGLE_RUN_SOLVERS = {"lovasz": LovaszSVM.SOLVERS, "projection": (), "crf": ()}

METHOD_HELP = ("bl1: adjusted Hamming kappa FP + FN (kappa = fg/bg ratio of the training "
               "set), unary + pairwise, graph cut; hamming: kappa = 1; bl2: the loss with "
               "a unary-only model, exact enumeration (Joachims 2005); proposed: the loss "
               "with unary + pairwise (the paper's method), its most violated constraint "
               "found as --inference says: exactly, by branch and bound with graph cuts "
               "(envelope, the default), or by the paper's one LP per loss-surface triangle "
               "(decomposition, lp); exact: the loss by MILP (small data only); lovasz: "
               "IoU only, unary weights by cutting planes on the Lovász hinge (Yu & "
               "Blaschko 2015), then a pairwise smoothing strength picked by training "
               "IoU, by 1-slack cutting planes or --solver sgd; projection: the "
               "Fenchel-Young loss of the projection onto --projection-set (Blondel et "
               "al. 2020), unary and pairwise weights by L-BFGS-B, predicted by graph "
               "cut (--solver does not apply); crf: a CRF trained by the regularised "
               "conditional log-likelihood (--likelihood pseudo or bethe), by L-BFGS-B, "
               "predicted by graph cut or by a --decision on its marginals")


# StructuredSVM's own defaults (C, max_iter, scope, solver, node_weights), read
# from the learners so that they are written down once.
_SVM = StructuredSVM.default_params()

#: The commands' default tolerance of a fit (``--tol``: the refit stops within
#: C tol of the optimum; the folds of ``--C auto`` between it and ``cv_tol``),
#: tighter than the learners' own default (``segstruct.learn._problem.DEFAULT_TOL``,
#: which a learner built in Python keeps): the loosest tolerance whose fit-path
#: spread stayed under :data:`FIT_SPREAD_POINTS` on every data set, class and
#: method measured, at a cost of the refit chosen as defensible
#: (``python scripts/bench.py fit_spread``; docs/reliability.md, "Fit-path spread").
REFIT_TOL = 1e-5


@dataclass(frozen=True)
class TrainingSettings:
    """Everything besides features and data that changes a trained model, with
    the defaults of every command (the one place they are set).

    ``n_triangles`` and ``inference`` only affect the proposed method, and
    ``loss`` / ``beta`` only bl2, proposed and exact; they are recorded for
    every pair all the same, so a record says in full how it was made.

    ``solver`` is one of ``segstruct.learn.estimators.structured_svm.SOLVERS``: the cutting-plane
    "oneslack" (default) or "nslack", or the first-order "subgradient",
    "sgd" or "bcfw", which need ``scope="image"``. The lovasz method takes
    "oneslack" (its cutting planes) or "sgd"; projection ignores it.

    ``projection_set`` is the projection method's set (cube, budget or
    marginal); like ``C_grid`` it is recorded only when it is not the
    default, so the records made before it existed still resume; so are
    ``likelihood``, the crf method's, and ``decisions``, those compare
    scores besides the MAP.

    ``C`` is a number, or "auto" (the default): each pair then gets the C that ``folds``-fold
    cross-validation on the training split picks from ``C_grid``
    (``segstruct.learn.selection``; None means the defaults there), the folds'
    fits stopping at ``cv_tol`` times C, between ``tol`` and ``cv_tol`` (1-slack
    cutting planes; the refit keeps ``tol``). Where the best held-out IoU is at
    an end of the grid and rises towards it, the grid is extended past that
    end by its own step, at most ``C_extend`` steps each way
    (``segstruct.learn.selection.extension``; 0: the grid only). ``C_grid``,
    ``folds`` and ``cv_tol`` are recorded only with "auto" (:meth:`to_dict`),
    so the records of a fixed C are what they were before the options
    existed; ``C_extend`` only with "auto" and above 0, so that a record
    made before it existed is one of ``C_extend`` 0, the grid only, which it
    was.
    """

    loss: str = "iou"            # of bl2 / proposed / exact; bl1 and hamming have their own
    beta: float = 1.0
    scope: str = _SVM["scope"]
    # "auto": C by cross-validation on the training split. Leaving one data
    # set out (scripts/lodo.py; docs/history/studies-2026-12.md): the best C differs by data set
    # by orders of magnitude, and a fixed C chosen on the other three fell
    # further below the best in grid on the fourth than "auto" did.
    C: float | str = "auto"
    C_units: str = _SVM["C_units"]
    node_weights: str = _SVM["node_weights"]
    n_triangles: int = N_TRIANGLES
    inference: str = DEFAULT_INFERENCE
    polish: bool = True
    solver: str = _SVM["solver"]
    tol: float = REFIT_TOL
    max_iter: int = _SVM["max_iter"]
    C_grid: tuple | None = None
    folds: int | None = None
    # the folds only rank the values of C: their fits stop at cv_tol x C, between
    # tol and cv_tol (why: segstruct.learn.selection.cross_validation.DEFAULT_FOLD_TOL)
    cv_tol: float = DEFAULT_FOLD_TOL
    # steps past an end of the grid where held-out IoU still rises towards it
    C_extend: int = DEFAULT_C_EXTEND
    projection_set: str = "cube"
    likelihood: str = "pseudo"
    # the decisions compare scores besides the MAP ("map" first); the SSVMs'
    # need a temperature, fitted on training folds (segstruct.decisions)
    decisions: tuple = ("map",)

    @property
    def auto(self) -> bool:
        """Whether C is chosen by cross-validation."""
        return self.C == "auto"

    def cv(self) -> tuple[tuple[float, ...], int]:
        """(grid, folds) of ``C = "auto"``, defaults filled in and checked (ValueError)."""
        return (check_grid(DEFAULT_GRID if self.C_grid is None else self.C_grid),
                check_folds(DEFAULT_FOLDS if self.folds is None else self.folds))

    def to_dict(self) -> dict:
        """The settings as recorded (results.json, the resume identity)."""
        out = asdict(self)
        del out["C_grid"], out["folds"], out["cv_tol"], out["C_extend"]
        if self.projection_set == TrainingSettings.projection_set:
            del out["projection_set"]
        if self.likelihood == TrainingSettings.likelihood:
            del out["likelihood"]
        if tuple(self.decisions) == TrainingSettings.decisions:
            del out["decisions"]
        else:
            out["decisions"] = list(self.decisions)
        if self.auto:
            grid, folds = self.cv()
            out.update(C_grid=list(grid), folds=folds, cv_tol=check_fold_tol(self.cv_tol))
            if check_extend(self.C_extend):
                out["C_extend"] = self.C_extend
        return out

    def C_text(self) -> str:
        """How C was set, for captions: "C 0.5" or "C auto (3-fold CV over 5 values 0.05-50)"."""
        return c_text(self.to_dict())

    def estimator(self, method: str, C=None):
        """The method's StructuredSVM (unfitted).

        ``C`` overrides the settings' C (needed with "auto": the chosen one,
        or a grid value for the folds).
        """
        C = self.C if C is None else C
        if C == "auto":
            raise ValueError("these settings choose C by cross-validation (C='auto'): give "
                             "the estimator's C (the chosen one, or a grid value for a fold)")
        return estimator_for(method, loss=self.loss, beta=self.beta,
                             n_triangles=self.n_triangles, inference=self.inference,
                             polish=self.polish, node_weights=self.node_weights, C=C,
                             C_units=self.C_units,
                             scope=self.scope, projection_set=self.projection_set,
                             likelihood=self.likelihood,
                             solver=self.solver, tol=self.tol, max_iter=self.max_iter)


#: The defaults of every command and of the functions below.
DEFAULTS = TrainingSettings()

#: The fit-path spread, in points of val IoU (pooled VOC): how far the score
#: of a model of bl1, bl2 or proposed can move between fits of the same problem
#: that reach the default refit tolerance (``DEFAULTS.tol``) by other paths: from
#: another start, with the images in another order, or by another code version,
#: each stopping anywhere within the tolerance. A difference of scores smaller
#: than this lies inside the fit-path spread: the fits alone can make it, so a
#: table says so rather than ranking the two. ``python scripts/bench.py
#: fit_spread`` measures the spread of each tolerance; docs/reliability.md,
#: "Fit-path spread", gives its table, the data sets it covers and how the
#: refit's tolerance was chosen from it.
FIT_SPREAD_POINTS = 0.5


def c_text(settings: dict) -> str:
    """How C was set, from recorded settings (a dict of :meth:`TrainingSettings.to_dict`).

    Parameters
    ----------
    settings : dict with ``C`` (a number or "auto") and, with "auto",
        ``C_grid`` and ``folds``; ``C_units``, ``cv_tol`` and ``C_extend``
        where recorded.

    Returns
    -------
    str, e.g. "C 1", "C 1 (the paper's)" or "C auto (3-fold CV over 6 values
    0.01-3, folds to tol 0.01 x C in 1e-05-0.01, extended up to 3 steps past
    an end)".
    """
    if settings["C"] != "auto":
        C, units = settings["C"], settings.get("C_units")
        if units is None:      # records made before C_units: the objective's own C
            return f"C {C:g} (the paper's {2 * C:g})"
        return f"C {C:g}" + (" (the paper's)" if units == "paper" else "")
    grid = settings["C_grid"]
    # records made before cv_tol: their folds stopped at tol
    tol = "" if settings.get("cv_tol") is None else f", folds to {fold_tol_text(settings)}"
    extend = settings.get("C_extend", 0)
    extended = f", extended up to {extend} steps past an end" if extend else ""
    return (f"C auto ({settings['folds']}-fold CV over {len(grid)} values "
            f"{grid[0]:g}-{grid[-1]:g}{tol}{extended})")


def fold_tol_text(settings: dict) -> str:
    """The folds' tolerance of recorded ``--C auto`` settings (with ``cv_tol``
    and ``tol``), e.g. "tol 0.01 x C in 1e-05-0.01"."""
    cv, tol = settings["cv_tol"], settings.get("tol", DEFAULTS.tol)
    return f"tol {cv:g} x C in {tol:g}-{max(tol, cv):g}"


def method_loss(method: str, loss: str = DEFAULTS.loss, beta: float = DEFAULTS.beta):
    """The loss a method trains with: its own, or ``loss`` for the complex-loss methods.

    Parameters
    ----------
    method : str, a key of :data:`METHODS`.
    loss : {"iou", "f1", "fbeta"}, the complex loss of bl2, proposed and exact.
    beta : float > 0, of "fbeta".

    Returns
    -------
    str (the method's own loss, e.g. "adjusted_hamming", resolved by the
    learner) or a ``segstruct.inference.losses.Loss``.
    """
    spec = METHODS[_check(method)]["loss"]
    if spec is not None:
        return spec
    return get_loss(loss, **({"beta": beta} if loss == "fbeta" else {}))


def make_oracle(name: str, n_triangles: int = DEFAULTS.n_triangles,
                inference: str = DEFAULTS.inference, polish: bool = DEFAULTS.polish):
    """The oracle of a method: graphcut, bl2, proposed (triangles) or exact (MILP).

    Parameters
    ----------
    name : {"graphcut", "bl2", "proposed", "exact"}.
    n_triangles : int, M of the proposed oracle's triangulation.
    inference : str, the proposed oracle's route (``INFERENCE_CHOICES``).
    polish : bool, the proposed oracle's single-node flips on the true loss.

    Returns
    -------
    callable ``oracle(u, edges, p, t, a, loss) -> InferenceResult``.
    """
    if name == "graphcut":
        return loss_augmented
    if name == "bl2":
        return bl2
    if name == "proposed":
        return ProposedOracle(n_triangles, inference, polish=polish)
    if name == "exact":
        return milp_oracle
    raise ValueError(f"unknown oracle {name!r}")


def estimator_for(method: str, *, loss: str = DEFAULTS.loss, beta: float = DEFAULTS.beta,
                  n_triangles: int = DEFAULTS.n_triangles,
                  inference: str = DEFAULTS.inference, polish: bool = DEFAULTS.polish,
                  node_weights: str = DEFAULTS.node_weights,
                  projection_set: str = DEFAULTS.projection_set,
                  likelihood: str = DEFAULTS.likelihood, **params) -> BaseSSVM:
    """The learner of ``method``: a ``StructuredSVM`` (a
    :class:`~segstruct.learn.estimators.first_order_svm.FirstOrderSVM` for the solvers
    subgradient, sgd and bcfw), for "lovasz" a
    :class:`~segstruct.learn.estimators.lovasz_svm.LovaszSVM`, for "projection" a
    :class:`~segstruct.learn.estimators.projection_svm.ProjectionSVM`, which ignores
    ``solver``; lovasz takes "sgd" and trains by its cutting planes for any
    other solver.

    Parameters
    ----------
    method : one of ``METHODS``.
    loss, beta : the complex loss of bl2 / proposed / exact ("iou", "fbeta", "f1").
    n_triangles, inference, polish : the proposed method's M, inference
        algorithm and closing greedy flips (False: the paper's method as published).
    node_weights : "count" or "area" node weights.
    projection_set : the projection method's set ("cube", "budget", "marginal").
    likelihood : the crf method's likelihood ("pseudo", "bethe").
    **params : further StructuredSVM hyper-parameters (C, scope, solver, ...).

    Raises
    ------
    ValueError for an unknown method, or bl2 with area node weights (its
    exact enumeration counts superpixels).

    Examples
    --------
    The paper's method: IoU loss, the full MRF, an exact oracle:

    >>> from segstruct.toy import chain_problem
    >>> X, Y = chain_problem()
    >>> svm = estimator_for("proposed", C=1.0).fit(X, Y)
    >>> svm.loss_, svm.converged_, round(svm.score(X, Y), 3)
    (IoULoss(), True, 0.905)
    """
    spec = METHODS[_check(method)]
    if method == "crf":
        params.pop("solver", None)          # L-BFGS-B: the SSVM solver does not apply
        return CRF(pairwise=spec["pairwise"], likelihood=likelihood,
                   node_weights=node_weights, **params)
    if method == "projection":
        params.pop("solver", None)          # L-BFGS-B: the SSVM solver does not apply
        return ProjectionSVM(pairwise=spec["pairwise"], projection_set=projection_set,
                             node_weights=node_weights, **params)
    if method == "lovasz":
        # its SGD for "sgd", its 1-slack cutting planes for every other solver
        # (so that compare can run it beside methods trained by nslack or bcfw)
        if params.get("solver") not in LovaszSVM.SOLVERS:
            params["solver"] = "oneslack"
        return LovaszSVM(loss=method_loss(method, loss, beta), pairwise=spec["pairwise"],
                         node_weights=node_weights, **params)
    if method == "bl2" and node_weights != "count":
        raise ValueError("bl2 needs count node weights: its exact oracle counts superpixels")
    oracle = None
    if spec["oracle"] != "graphcut":
        oracle = make_oracle(spec["oracle"], n_triangles=n_triangles, inference=inference,
                             polish=polish)
    if params.get("solver") in STOCHASTIC_SOLVERS:      # the first-order learners
        for name in ("inactive_limit", "warm_start", "n_jobs"):
            params.pop(name, None)          # cutting-plane settings they do not have
        return FirstOrderSVM(loss=method_loss(method, loss, beta), pairwise=spec["pairwise"],
                             oracle=oracle, node_weights=node_weights, **params)
    return StructuredSVM(loss=method_loss(method, loss, beta), pairwise=spec["pairwise"],
                         oracle=oracle, node_weights=node_weights, **params)


def _check(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {sorted(METHODS)}")
    return method


def with_workers(estimator, n_jobs: int):
    """``estimator`` with ``n_jobs`` inference worker processes where they pay;
    returns it.

    Parameters
    ----------
    estimator : a learner of :func:`estimator_for`.
    n_jobs : int, worker processes; set only on a learner with ``n_jobs``
    at the image scope (below), left as it is otherwise.

    That is a cutting-plane SVM (``StructuredSVM.n_jobs``) at the image
    scope, where the per-image oracles run in parallel and its proposed
    method trains faster on several cores. At the data-set scope the union's
    graph cut (bl1) costs less than sending the union's parts to the workers
    (``scripts/parallel_inference.py`` times both), so the command line
    leaves it in one process there.
    """
    if "n_jobs" in estimator.get_params(deep=False) and \
            estimator.get_params(deep=False).get("scope") == "image":
        estimator.set_params(n_jobs=n_jobs)
    return estimator
