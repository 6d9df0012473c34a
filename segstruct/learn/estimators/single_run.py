"""The fit of a method that trains in one call of its own solver (lovasz,
projection, crf) and still speaks the callback protocol of
:class:`~segstruct.learn.estimators.structured_svm.StructuredSVM`, so
``train`` and ``compare`` handle it as any other.

Such a run keeps no resumable state: its callbacks see it once it has ended
(one ``on_iteration`` with the whole log), and a
:class:`~segstruct.learn.callbacks.Checkpoint` writes nothing. One asked to
resume from an existing file raises CheckpointError rather than starting
afresh silently.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from segstruct.io.threads import thread_limits
from segstruct.inference.losses import get_loss
from segstruct.learn.callbacks import Callback, TrainingState, without_checkpoints
from segstruct.learn._problem import FitRun, svm_C
from segstruct.learn.estimators.base import BaseSSVM
from segstruct.feature_map import MRFModel

__all__ = ["SolverResult", "SingleRunSVM", "lbfgs_run"]


@dataclass
class SolverResult:
    """What a one-call solver returns to :meth:`SingleRunSVM.fit`.

    Attributes
    ----------
    w : (D,) the weights.
    log : one dict per solver iteration (the last one may hold more).
    n_iter, converged : of the solver.
    primal, dual : the objective at ``w`` and a certified lower bound of its minimum.
    attributes : further fitted attributes to set, by name (ending in ``_``).
    """

    w: np.ndarray
    log: list
    n_iter: int
    converged: bool
    primal: float
    dual: float
    attributes: dict = field(default_factory=dict)


class SingleRunSVM(BaseSSVM):
    """A learner whose ``fit`` is one call of :meth:`_train` (module docstring).

    Subclasses set ``method`` (the name said in errors) and implement
    ``_train(X, Y) -> SolverResult`` and ``check_params``.

    Parameters
    ----------
    The subclass's (:class:`~segstruct.learn.estimators.lovasz_svm.LovaszSVM`,
    :class:`~segstruct.learn.estimators.projection_svm.ProjectionSVM`).
    """

    method = "?"
    # each subclass's method (declared for the type checker)
    check_params: Callable[[], None]

    def fit(self, X, Y, callbacks: Sequence[Callback] | None = None):
        """Train on inputs X (graphs) and labels Y (targets or pixel counts).

        ``callbacks`` as for :meth:`StructuredSVM.fit`, seen once the run has
        ended; a :class:`Checkpoint` writes nothing (module docstring).
        """
        self.check_params()
        callbacks = list(callbacks or ())
        callbacks = without_checkpoints(callbacks, f"the {self.method} method",
                                        "delete it to train from the start")
        start = time.perf_counter()
        X = list(X)
        dim = MRFModel(pairwise=self.pairwise).n_features(X[0])
        state = TrainingState.start(dim, 1)
        run = FitRun(estimator=self, start=start)          # no working set, no checkpoint
        with thread_limits(1, "blas"):
            try:
                for callback in callbacks:
                    callback.on_fit_start(run, state)
                result = self._train(X, Y)
                state = TrainingState(
                    iteration=len(result.log), w=result.w, xi=np.zeros(1),
                    dual=float(result.dual), best_w=result.w, best_g=np.zeros(dim),
                    best_l=0.0, best_primal=float(result.primal), log=result.log,
                    converged=bool(result.converged), seconds=time.perf_counter() - start)
                for callback in callbacks:
                    callback.on_iteration(run, state)
            finally:
                for callback in callbacks:
                    callback.on_fit_end(run, state)
        self.w_ = result.w
        self.loss_ = get_loss(self.loss)
        self.log_ = result.log
        self.n_iter_ = result.n_iter
        self.converged_ = bool(result.converged)
        self.primal_ = float(result.primal)
        self.dual_ = float(result.dual)
        self.gap_ = self.primal_ - self.dual_
        for name, value in result.attributes.items():
            setattr(self, name, value)
        self.n_features_in_ = dim
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def _train(self, X: list, Y) -> SolverResult:
        raise NotImplementedError

    def _objective_C(self, targets, weights) -> dict:
        """The C of the objective the solver minimises, in the SSVM's way
        (:func:`~segstruct.learn.estimators.structured_svm.svm_C`: one example at the data-set
        scope, the images at the image scope), as the fitted attributes
        ``svm_C_`` and ``superpixel_loss_``."""
        n = 1 if self.scope == "dataset" else len(targets)
        C, delta = svm_C(self.C, self.C_units, get_loss(self.loss), targets, weights, n)
        return {"svm_C_": C, "superpixel_loss_": delta}


def lbfgs_run(fit, solver: str, start: float, attributes: dict) -> SolverResult:
    """A :class:`SolverResult` from a :func:`segstruct.learn.solvers.fenchel_young.fit_lbfgs`
    result: one log entry per objective evaluation, the last with the
    certified bound as ``gap`` (``start``: ``time.perf_counter()`` at the
    fit's start)."""
    log, best = [], np.inf
    for k, (f, s) in enumerate(zip(fit.history, fit.seconds_history), start=1):
        best = min(best, f)
        log.append({"iteration": k, "solver": solver, "primal": f, "best_primal": best,
                    "seconds": s})
    log[-1].update(dual=fit.objective - fit.bound, gap=fit.bound,
                   seconds=time.perf_counter() - start)
    return SolverResult(w=fit.w, log=log, n_iter=fit.n_iter, converged=fit.converged,
                     primal=fit.objective, dual=fit.objective - fit.bound,
                     attributes=attributes)
