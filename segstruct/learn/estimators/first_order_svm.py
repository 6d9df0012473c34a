"""The first-order learners of the structural SVM: projected subgradient
descent, SGD over images and block-coordinate Frank-Wolfe, as an estimator;
and the averaged structured perceptron beside them.

:class:`FirstOrderSVM` minimises :class:`~segstruct.learn.estimators.structured_svm.StructuredSVM`'s
per-image objective (the same loss, C, oracle and bound w_p <= 0) with the
learners of :mod:`segstruct.learn.solvers.first_order`, a sibling of the cutting-plane
estimator on :class:`~segstruct.learn.estimators.base.BaseSSVM`. An iteration
(``max_iter``, ``log_``) is an epoch: n oracle calls, plus n more to evaluate
the objective. The image sampling is seeded, so a fit is repeatable. Only
BCFW has a stopping test (its duality gap <= ``svm_C_`` tol); subgradient
descent stops early only when a step leaves w in place, SGD runs all
``max_iter`` epochs, and the perceptron stops after an epoch without a
mistake (never, on data no weights separate: its log counts the
mistakes). The learners keep no resumable state: a checkpoint is refused.
"""
from __future__ import annotations

import copy
import time
from typing import Sequence, cast

import numpy as np

from segstruct.io.threads import thread_limits
from segstruct.inference import loss_augmented
from segstruct.inference.highs import SolverError
from segstruct.learn._params import Options
from segstruct.learn._problem import (CUTTING_PLANE_SOLVERS, STOCHASTIC_SOLVERS,
                                      TrainingError, LossAugmentedRun, svm_C)
from segstruct.learn.estimators.base import LossAugmentedSSVM
from segstruct.learn.callbacks import Callback, TrainingState, without_checkpoints
from segstruct.learn.solvers.qp import QPError
from segstruct.learn.solvers.first_order import (ImageScopeProblem, solve_bcfw, solve_perceptron,
                                        solve_sgd, solve_subgradient)
from segstruct.feature_map import MRFModel

__all__ = ["FirstOrderSVM"]


class FirstOrderSVM(LossAugmentedSSVM):
    """The per-image structural SVM trained by a first-order learner
    (module docstring); scikit-learn style, as StructuredSVM.

    Parameters
    ----------
    loss, kappa, oracle
        As :class:`~segstruct.learn.estimators.base.LossAugmentedSSVM`'s.
    C, C_units, node_weights, pairwise, tol, max_iter
        As :class:`~segstruct.learn.estimators.base.BaseSSVM`'s; ``max_iter`` counts
        epochs, and ``tol`` is BCFW's (its duality gap <= ``svm_C_`` tol).
    solver : {"subgradient", "sgd", "bcfw", "perceptron"}, default "bcfw"
        Projected subgradient descent (step 1/t, the best iterate kept),
        projected SGD over images (step 2/(t+1), weighted average of the
        iterates), block-coordinate Frank-Wolfe on the dual (exact line
        search under w_p <= 0), or the averaged structured perceptron (MAP
        by graph cut, no loss and no regulariser: C, loss and oracle are
        not used; it stops after an epoch without a mistake, and its
        ``primal`` is the perceptron risk, not F).
    scope : {"image"}, default "image"
        The per-image loss, the one default of the family's shared
        parameters that differs here (``BaseSSVM``'s is "dataset"): the
        data-set scope is one example, with nothing to sample or split
        into blocks.

    Attributes
    ----------
    As StructuredSVM's, but ``log_`` has one entry per epoch
    (``iteration`` the epoch, ``updates``, ``primal``, ``best_primal`` the
    objective of the weights the learner would return then, ``oracle_calls``,
    ``seconds``, ``solver``; BCFW adds ``dual`` and ``gap``), ``dual_`` is
    BCFW's dual objective and 0, the trivial bound, for subgradient descent
    and SGD, which certify nothing; there is no working set.

    Examples
    --------
    Block-coordinate Frank-Wolfe, one block per image:

    >>> from segstruct.toy import chain_problem
    >>> X, Y = chain_problem()
    >>> svm = FirstOrderSVM(solver="bcfw", scope="image", C=1.0).fit(X, Y)
    >>> svm.converged_, round(svm.score(X, Y), 3)
    (True, 0.864)
    """

    #: Seed of the image sampling of SGD and BCFW (fixed: a fit is deterministic).
    SAMPLING_SEED = 0

    #: The first-order loops sample images: the data-set scope is one example.
    _other_defaults = {"scope": "the first-order loops sample images or split them into "
                                "blocks; the data-set scope is one example"}

    def __init__(self, *, solver="bcfw", scope="image", **params):
        super().__init__(scope=scope, **params)
        self.solver = solver

    _parameter_constraints = {
        **LossAugmentedSSVM._parameter_constraints,
        "solver": [Options(*STOCHASTIC_SOLVERS)], "scope": [Options("image")],
    }

    def check_params(self) -> None:
        """Raise ValueError for a bad hyper-parameter, without fitting."""
        if self.scope != "image":
            raise ValueError(f"solver {self.solver!r} needs the per-image loss scope "
                             f"(scope='image'), not {self.scope!r}: the data-set loss is one "
                             "example, so there is nothing to sample or split into blocks; "
                             f"StructuredSVM's {CUTTING_PLANE_SOLVERS} train the data-set "
                             "scope")
        self.validate_params()

    #: Seed of the image sampling of SGD and BCFW (fixed: a fit is deterministic).
    SAMPLING_SEED = 0

    def fit(self, X, Y, callbacks: Sequence[Callback] | None = None) -> "FirstOrderSVM":
        """Train on inputs X (graphs) and labels Y (targets or pixel counts),
        as :meth:`StructuredSVM.fit <segstruct.learn.estimators.structured_svm.StructuredSVM.fit>`.

        The callbacks see one ``on_iteration`` per epoch (the log so far,
        the current iterate as ``w``; the JSON log and the progress bar
        follow the run), and a last one with the returned weights and
        whether the run converged. The learners keep no resumable state: a
        :class:`Checkpoint` writes nothing, and one asked to resume from an
        existing file is refused (CheckpointError) rather than silently
        started afresh.
        """
        self.check_params()
        with thread_limits(1, "blas"):    # small matrices: one thread
            return self._train(X, Y, list(callbacks or ()))

    def _train(self, X, Y, callbacks: list) -> "FirstOrderSVM":
        callbacks = without_checkpoints(
            callbacks, f"solver {self.solver!r}",
            f"only the cutting-plane solvers {CUTTING_PLANE_SOLVERS} do; delete the "
            "checkpoint to train from the start, or resume with the solver that wrote it")
        start = time.perf_counter()
        model = MRFModel(pairwise=self.pairwise)
        xs, ts, ws, all_t, all_w = self._examples(X, Y)
        loss = self._resolve_loss(all_t, all_w)
        dim = model.n_features(xs[0])
        nonpositive = np.flatnonzero(model.upper_bounds(xs[0]) == 0)
        psi_true = np.stack([model.joint_feature(x, t) for x, t in zip(xs, ts)])
        oracle = copy.deepcopy(self.oracle or loss_augmented)
        objective_C, delta = svm_C(self.C, self.C_units, loss, all_t, all_w, len(xs))
        problem = ImageScopeProblem(
            feature_map=model, xs=xs, ts=ts, ws=ws, loss=loss, oracle=oracle,
            psi_true=psi_true, nonpositive=nonpositive, svm_C=objective_C)
        # no working set, no checkpoint: the run the callbacks see has no QP
        run = LossAugmentedRun(
            estimator=self, svm_C=objective_C, superpixel_loss=delta, feature_map=model,
            xs=xs, ts=ts, ws=ws, loss=loss, oracle=oracle, psi_true=psi_true,
            nonpositive=nonpositive, dim=dim, start=start)
        state = TrainingState.start(dim, len(xs))
        epochs, rng = int(self.max_iter), np.random.default_rng(self.SAMPLING_SEED)
        iterate = {"w": np.zeros(dim)}

        def keep_iterate(_, w):
            iterate["w"] = w

        epochs_log = []         # grows by one entry an epoch, not rebuilt

        def each_epoch(trace):
            epochs_log.append(self._first_order_entry(trace, len(trace)))
            log = list(epochs_log)
            gap = log[-1].get("gap")
            epoch_state = TrainingState(
                iteration=len(log), w=np.array(iterate["w"]), xi=np.zeros(len(xs)),
                dual=float(log[-1]["dual"]) if gap is not None else 0.0,
                best_w=np.array(iterate["w"]), best_g=np.zeros(dim), best_l=0.0,
                best_primal=float(log[-1]["best_primal"]), log=log, converged=False,
                seconds=run.seconds())
            for callback in callbacks:
                callback.on_iteration(run, epoch_state)

        try:
            for callback in callbacks:
                callback.on_fit_start(run, state)
            # every epoch evaluated (eval_every 1): one log entry per epoch
            result = self._solve(problem, epochs, rng, keep_iterate, each_epoch)
            log = self._first_order_log(result.trace)
            certified = result.dual is not None and np.isfinite(result.dual)
            state = TrainingState(
                iteration=len(log), w=result.w, xi=np.zeros(len(xs)),
                # certified: the dual is not None
                dual=float(cast(float, result.dual)) if certified else 0.0, best_w=result.w,
                best_g=np.zeros(dim), best_l=0.0, best_primal=float(result.primal), log=log,
                converged=bool(result.converged), seconds=run.seconds())
            for callback in callbacks:
                callback.on_iteration(run, state)
        except (SolverError, QPError) as err:
            raise TrainingError(f"training ({self.solver}) failed: {err}. This solver keeps "
                                "no checkpoint: train again from the start") from err
        finally:
            for callback in callbacks:
                callback.on_fit_end(run, state)
        self.oracle_ = oracle
        self.svm_C_, self.superpixel_loss_ = objective_C, delta
        self.w_ = result.w
        self.loss_ = loss
        self.log_ = log
        self.n_iter_ = len(log)
        self.converged_ = state.converged
        self.primal_ = state.best_primal
        self.dual_ = state.dual
        self.gap_ = state.best_primal - state.dual
        self.n_features_in_ = dim
        self.fit_seconds_ = run.seconds()
        return self

    def _solve(self, problem: ImageScopeProblem, epochs: int, rng, keep_iterate, each_epoch):
        """The solver's run on the problem (every epoch evaluated: one log entry each)."""
        if self.solver == "subgradient":
            return solve_subgradient(problem, epochs, keep_iterate, each_epoch)
        if self.solver == "sgd":
            return solve_sgd(problem, epochs, rng, "weighted", 1, keep_iterate, each_epoch)
        if self.solver == "perceptron":
            return solve_perceptron(problem, epochs, rng, keep_iterate, each_epoch)
        return solve_bcfw(problem, epochs, float(self.tol), rng, "uniform", 1, keep_iterate,
                          each_epoch)

    def _first_order_log(self, trace: list) -> list:
        """``log_`` entries (one per epoch) from a first-order learner's trace."""
        return [self._first_order_entry(trace, k) for k in range(1, len(trace) + 1)]

    def _first_order_entry(self, trace: list, k: int) -> dict:
        """The ``log_`` entry of the trace's k-th record (1-based)."""
        def calls(entry):
            return entry["oracle_calls"] + entry["eval_calls"]
        entry = trace[k - 1]
        out = {"iteration": k, "solver": self.solver, "epoch": entry["epoch"],
               "updates": entry["iteration"], "primal": entry["primal"],
               # the objective of the weights the learner returns at this point:
               # the best iterate for subgradient descent, the current one else
               "best_primal": entry.get("best_primal", entry["primal"]),
               "oracle_calls": calls(entry) - (calls(trace[k - 2]) if k > 1 else 0),
               "seconds": entry["seconds"]}
        if "dual" in entry:
            out.update(dual=entry["dual"], gap=entry["gap"])
        if "mistakes" in entry:
            out["mistakes"] = entry["mistakes"]
        return out
