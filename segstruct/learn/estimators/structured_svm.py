"""Margin-rescaled structural SVM trained by cutting planes (n-slack and 1-slack).

Objective, with ``C_svm`` the objective's own C (:func:`svm_C`: the user's C
in superpixel units, or the paper's C / 2):

    min_w  1/2 ||w||^2 + (C_svm / n) sum_{i=1..n} max(0, H_i(w)),
    H_i(w) = max_y  Delta(t_i, y) + w . Psi(x_i, y) - w . Psi(x_i, t_i)

* n-slack: one slack per training example, each weighted C_svm / n;
* 1-slack (Joachims, Finley & Yu 2009): one slack for the mean of the
  examples' constraints; at its optimum it equals the n-slack problem. It
  is stabilised as OCAS is (``segstruct.learn.solvers.cutting_planes``).

The "examples" depend on the loss scope: per image, each image is one
example; for the data-set scope, all training images form one example (the
disjoint union of their graphs, FP and FN counted over the whole training
set, as in the paper and the VOC measure), so n = 1.

The learner sees inference only through an oracle with the plain-array
signature of ``segstruct.inference.loss_augmented``:
``oracle(u, edges, p, t, a, loss) -> InferenceResult``. Its siblings on
:class:`~segstruct.learn.estimators.base.BaseSSVM` are the first-order learners
(:mod:`segstruct.learn.estimators.first_order_svm`), the Lovász hinge
(:mod:`segstruct.learn.estimators.lovasz_svm`) and the projection loss
(:mod:`segstruct.learn.estimators.projection_svm`).
"""
from __future__ import annotations

import copy
import warnings
import time
from numbers import Integral
from typing import Sequence

import numpy as np

from segstruct.io.threads import thread_limits
from segstruct.inference import loss_augmented
from segstruct.inference.highs import SolverError

from segstruct.io.checkpoint import fingerprint
from segstruct.learn._problem import (C_UNITS, CUTTING_PLANE_SOLVERS, DEFAULT_C,
                                      DEFAULT_MAX_ITER, NODE_WEIGHT_MODES, SCOPES, SOLVERS,
                                      STOCHASTIC_SOLVERS, TrainingError, LossAugmentedRun,
                                      label_counts, oracle_name, resolve_loss,
                                      superpixel_loss, svm_C, targets_and_node_weights)
from segstruct.learn.solvers.cutting_planes import cutting_planes
from segstruct.learn._params import Interval, Options
from segstruct.learn.estimators.base import LossAugmentedSSVM
from segstruct.learn.callbacks import Callback, Checkpoint, TrainingState
from segstruct.learn.solvers.qp import QPError, WorkingSetQP
from segstruct.learn.solvers.workers import InferencePool
from segstruct.feature_map import MRFModel


# the shared problem's names (segstruct.learn._problem) are this module's public API too
__all__ = ["StructuredSVM", "SOLVERS", "CUTTING_PLANE_SOLVERS", "STOCHASTIC_SOLVERS",
           "C_UNITS", "DEFAULT_C", "DEFAULT_MAX_ITER", "NODE_WEIGHT_MODES", "SCOPES",
           "TrainingError", "LossAugmentedRun", "label_counts", "oracle_name", "resolve_loss",
           "superpixel_loss", "svm_C", "targets_and_node_weights"]


class StructuredSVM(LossAugmentedSSVM):
    """Structural SVM for binary MRF segmentation (scikit-learn style).

    The constructor only stores the hyper-parameters (scikit-learn's
    contract: ``get_params`` / ``set_params`` / ``clone`` work); ``fit``
    checks them. What a training run writes or shows (checkpoint, log,
    progress bar) is not a hyper-parameter: it is given to ``fit`` as
    callbacks (:mod:`segstruct.learn.callbacks`).

    Parameters
    ----------
    loss, kappa, oracle
        As :class:`~segstruct.learn.estimators.base.LossAugmentedSSVM`'s.
    C, C_units, scope, node_weights, pairwise, max_iter
        As :class:`~segstruct.learn.estimators.base.BaseSSVM`'s; ``max_iter`` counts
        cutting-plane iterations.
    tol : float, default 1e-3
        In loss units. 1-slack: stop when the best objective evaluated is
        within C tol of the working-set QP's lower bound (or, the plain
        cutting-plane test, when the QP's solution violates no constraint by
        more than tol); n-slack: when no example's constraint is violated by
        more than tol beyond its slack.
    solver : {"oneslack", "nslack"}, default "oneslack"
        The cutting-plane loops (``segstruct.learn.solvers.cutting_planes``):
        1-slack, stabilised as OCAS, or n-slack. The first-order learners of
        the same objective (subgradient, sgd, bcfw) are
        :class:`~segstruct.learn.estimators.first_order_svm.FirstOrderSVM`.
    inactive_limit : int, default 50
        Drop a constraint after this many QP solves with zero dual weight.
    warm_start : bool, default False
        When this estimator was fitted before on the same examples, loss,
        scope, solver and model, start from its working set and weights, and
        go on with its oracle's warm-start state (``oracle_``).
        Cutting planes do not depend on C, so a path over C (cross-validation)
        reuses every cut; the weights' objective is re-evaluated at the new
        C. Otherwise (other data or settings) training starts afresh.
    n_jobs : int, default 1
        Worker processes for the cutting-plane solvers' loss-augmented
        inference (joblib convention, -1 = every core): the examples of the
        image scope, or at the data-set scope the images of the union when
        the loss is linear in (FP, FN) and the oracle is the default graph
        cut (``segstruct.learn.solvers.workers``). The workers persist for the fit.
        It changes no result, only the time; the data-set scope's IoU and
        F-beta losses (which couple the images) run in this process.

    Attributes
    ----------
    w_ : (D,) learnt weights, with the pairwise block <= 0: those with the
        lowest objective evaluated (the last ones when training converged).
    loss_ : the resolved Loss (kappa filled in).
    log_ : list of dict, one per iteration: primal and dual objective, gap,
        number of constraints, violated examples, times.
    primal_ : the objective at ``w_``, an upper bound of the optimum (exact
        when the oracle is; with an approximate oracle, up to its gap).
    dual_ : the last working-set QP value, a lower bound of the optimum.
    n_iter_, converged_, gap_ (= primal_ - dual_), fit_seconds_.
    svm_C_ : float, the C of the objective solved,
        ``1/2 ||w||^2 + svm_C_ * mean_k H_k(w)`` (:func:`svm_C`); ``primal_``,
        ``dual_`` and ``log_`` are values of that objective, and training
        stops at a gap of ``svm_C_ * tol``. The paper's C is twice it.
    superpixel_loss_ : float or None, the loss of one missed superpixel
        (:func:`superpixel_loss`); None with ``C_units="paper"``.
    working_set_ : dict of arrays, the final cutting planes (for warm_start).
    oracle_ : the oracle this fit used: a deep copy of ``oracle`` (or the
        graph cut), so that its warm-start state (e.g. a ``ProposedOracle``'s
        labellings) belongs to the fit and ``oracle`` itself never changes;
        a warm-started fit goes on with the previous fit's copy.
    n_features_in_ : D, the number of weights.

    Notes
    -----
    A saved model is restored by :meth:`from_weights` (used by
    ``segstruct.io.persistence.load_model``), which sets only ``w_``,
    ``loss_`` and ``n_features_in_``: enough to predict.

    Examples
    --------
    bl1's learner (adjusted Hamming loss, graph cuts) on generated chains:

    >>> from segstruct.toy import chain_problem
    >>> X, Y = chain_problem()
    >>> svm = StructuredSVM(C=1.0).fit(X, Y)
    >>> svm.converged_, round(svm.score(X, Y), 3)
    (True, 0.864)
    >>> svm.predict(X[:1])[0].tolist()
    [0, 1, 1, 0, 0, 1, 0, 0]
    """

    def __init__(self, *, solver="oneslack", inactive_limit=50, warm_start=False, n_jobs=1,
                 **params):
        super().__init__(**params)
        self.solver = solver
        self.inactive_limit = inactive_limit
        self.warm_start = warm_start
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------
    #: The hyper-parameters' constraints: the family's and its own.
    _parameter_constraints = {
        **LossAugmentedSSVM._parameter_constraints,
        "solver": [Options(*CUTTING_PLANE_SOLVERS)],
        "inactive_limit": [Interval(Integral, 1)], "warm_start": [bool],
        "n_jobs": [Interval(Integral, 1), Interval(Integral, None, -1)],
    }

    def check_params(self) -> None:
        """Raise ValueError for a bad hyper-parameter, without fitting.

        ``fit`` runs this check first; the commands run it before they
        compute any feature, so a typo fails in seconds, not after hours.
        """
        if self.solver in STOCHASTIC_SOLVERS:
            raise ValueError(f"solver {self.solver!r} is a first-order learner: "
                             "FirstOrderSVM (segstruct.learn.estimators.first_order_svm) "
                             "trains it (at the per-image scope); "
                             "StructuredSVM's cutting planes are "
                             f"{CUTTING_PLANE_SOLVERS}")
        self.validate_params()

    #: Its checkpoints hold the whole state: an unfinished fit continues.
    resumable = True

    # ------------------------------------------------------------------
    def fit(self, X, Y, callbacks: Sequence[Callback] | None = None) -> "StructuredSVM":
        """Train on inputs X (graphs) and labels Y (targets or pixel counts).

        Parameters
        ----------
        X : sequence of objects with ``unary`` (N, Du), ``edges`` (E, 2),
            ``pairwise`` (E, Dp) arrays (e.g. ``SuperpixelGraph``).
        Y : sequence of (N,) targets in {0, 1} or (N, 2) [fg, bg] pixel counts.
        callbacks : sequence of :class:`segstruct.learn.callbacks.Callback`, optional
            What the run writes or shows, called in this order after every
            iteration: e.g. ``[Checkpoint(path, resume=True), JSONLog(path),
            ProgressBar()]`` (:func:`segstruct.learn.callbacks.training_callbacks`).
            With a checkpoint that resumes, a run continues from it (if there
            is one) and ends where an uninterrupted run would.

        Returns
        -------
        self

        Raises
        ------
        TrainingError
            A solver failed beyond its retries; the message names the
            iteration and the checkpoint to resume from.
        """
        self.check_params()
        # Training multiplies small matrices (Gram rows, potentials), where
        # OpenBLAS's default threads cost more in start-up and contention than
        # they gain (BL1 and BL2 on weizmann_horse_voc ran slower with them),
        # so BLAS gets one thread here.
        with thread_limits(1, "blas"):
            return self._fit(X, Y, list(callbacks or ()))

    def _fit(self, X, Y, callbacks: list) -> "StructuredSVM":
        """Set the problem up, start from a checkpoint, a warm start or the
        origin, run the loop with the callbacks around it, keep the result."""
        run = self._training_run(X, Y)
        assert run.qp is not None and run.oracle is not None    # _training_run sets both
        state = TrainingState.start(run.dim, len(run.qp.caps))
        for callback in callbacks:
            restored = callback.restore(run)
            if restored is not None:
                state = restored
        run.seconds_before = state.seconds
        if run.warm and state.iteration == 0:
            self._warm_state(run, state)
        try:
            for callback in callbacks:
                callback.on_fit_start(run, state)
            # workers only where there are several problems to deal out
            split = self.scope == "image" or run.union_parts is not None
            with InferencePool(run.oracle, self.n_jobs if split else 1) as pool:
                # each state the loop yields is the next one's start
                for state in cutting_planes(run, state, pool):  # noqa: B020
                    for callback in callbacks:
                        callback.on_iteration(run, state)
        except (SolverError, QPError) as err:
            raise TrainingError(self._failure(state.iteration + 1, err, callbacks)) from err
        finally:
            for callback in callbacks:
                callback.on_fit_end(run, state)
        self.working_set_ = run.qp.get_state()
        self.working_set_.pop("last", None)     # the QP's duals depend on C
        self._best_cut = (state.best_g, state.best_l)
        self._warm = run.warm_key
        self.oracle_ = run.oracle
        self.svm_C_ = run.svm_C
        self.superpixel_loss_ = run.superpixel_loss
        self.w_ = state.best_w
        self.loss_ = run.loss
        self.log_ = state.log
        self.n_iter_ = len(state.log)
        self.converged_ = state.converged
        self.primal_ = state.best_primal
        self.dual_ = state.dual
        self.gap_ = state.best_primal - state.dual
        self.n_features_in_ = run.dim
        self.fit_seconds_ = run.seconds()
        if self.converged_ and not np.any(self.w_):
            # not a failure: where no weights beat the loss of labelling every
            # node alike, w = 0 is the optimum
            warnings.warn(f"the optimum at C={self.C:g} is w = 0: every node scores 0, so "
                          "predict labels every node alike (background); the features give "
                          "no weights worth their norm at this C: a larger C may find some",
                          RuntimeWarning, stacklevel=3)
        return self

    def _training_run(self, X, Y) -> "LossAugmentedRun":
        """The problem of one fit: examples, loss, model, QP and oracle."""
        start = time.perf_counter()
        model = MRFModel(pairwise=self.pairwise)
        xs, ts, ws, all_t, all_w = self._examples(X, Y)
        loss = self._resolve_loss(all_t, all_w)
        n = len(xs)
        objective_C, delta = svm_C(self.C, self.C_units, loss, all_t, all_w, n)
        dim = model.n_features(xs[0])
        nonpositive = np.flatnonzero(model.upper_bounds(xs[0]) == 0)
        caps = [objective_C] if self.solver == "oneslack" else [objective_C / n] * n
        qp = WorkingSetQP(dim, caps, nonpositive)
        # the QP's own gap adds to the certified one: keep it far below C tol
        qp.abs_gap_tol = 0.01 * objective_C * self.tol
        psi_true = np.stack([model.joint_feature(x, t) for x, t in zip(xs, ts)])
        # hashing every feature array costs a fraction of a second: only when asked
        warm_key = self._warm_key(xs, ts, ws, loss) if self.warm_start else None
        warm = warm_key is not None and getattr(self, "_warm", None) == warm_key
        # The oracle may keep state between calls (a ProposedOracle's warm-start
        # labellings): the fit works on its own copy, so that `oracle` is the
        # same before and after every fit; a warm start goes on with the last
        # fit's copy, as it goes on with its working set.
        oracle = self.oracle_ if warm else copy.deepcopy(self.oracle or loss_augmented)
        union_parts = None
        if (self.scope == "dataset" and oracle is loss_augmented
                and loss.linear_coefficients is not None):
            union_parts = ([np.shape(x.unary)[0] for x in X], [np.shape(x.edges)[0] for x in X])
        return LossAugmentedRun(
            estimator=self, svm_C=objective_C, superpixel_loss=delta, feature_map=model,
            xs=xs, ts=ts, ws=ws, loss=loss, oracle=oracle, qp=qp, psi_true=psi_true,
            nonpositive=nonpositive, dim=dim, start=start, warm_key=warm_key, warm=warm,
            fingerprint=lambda: self._fingerprint(xs, ts, ws, loss), union_parts=union_parts,
            settings=lambda: self._checkpoint_settings(loss))

    def _warm_state(self, run: "LossAugmentedRun", state: TrainingState) -> None:
        """Start ``state`` from the previous fit's working set and weights."""
        assert run.qp is not None           # _training_run's runs have a working set
        run.qp.set_state(self.working_set_)
        # the cut at the old best point stays exact there; its objective
        # changes with C
        state.w, state.best_w = self.w_.copy(), self.w_.copy()
        state.best_g, state.best_l = self._best_cut
        state.best_primal = (0.5 * self.w_ @ self.w_ + run.svm_C
                             * max(0.0, self._best_cut[1] - self._best_cut[0] @ self.w_))
        if self.solver == "nslack":          # its cuts are per example
            state.best_primal = np.inf
        state.qp_solved = False      # the old w does not solve the QP at this C

    def _failure(self, iteration, err, callbacks) -> str:
        where = f"training failed at iteration {iteration}: {err}. "
        checkpoint = next((c for c in callbacks if isinstance(c, Checkpoint)), None)
        if checkpoint is None:
            return where + ("No checkpoint was kept (give fit a "
                            "segstruct.learn.callbacks.Checkpoint to keep one).")
        if iteration <= 1:
            return where + "No iteration had finished, so there is nothing to resume."
        return (where + f"The state after iteration {iteration - 1} is saved in "
                f"{checkpoint.path}: continue from there with --resume (segstruct train; "
                "compare resumes by itself), or in Python with fit(..., callbacks="
                "[Checkpoint(path, resume=True), ...]).")

    # ------------------------------------------------------------------
    # checkpoints
    def _checkpoint_settings(self, loss) -> dict:
        """The settings a checkpoint must share with the fit that resumes it."""
        # the I/O (progress, log_path, checkpoint_path, resume) was excluded here
        # when it was a hyper-parameter: the same settings, the same fingerprint
        settings = {k: v for k, v in self.get_params(deep=False).items()
                    if k not in ("max_iter", "oracle", "loss", "warm_start", "n_jobs")}
        settings.update(loss=repr(loss), oracle=oracle_name(self.oracle))
        return settings

    def _fingerprint(self, xs, ts, ws, loss) -> str:
        arrays = [a for x in xs for a in (x.unary, x.edges, x.pairwise) if a is not None]
        return fingerprint(arrays + list(ts) + list(ws), self._checkpoint_settings(loss))

    def _warm_key(self, xs, ts, ws, loss) -> str:
        """What a warm start must share with the previous fit: data and all
        settings but C, the stopping rule and the I/O."""
        arrays = [a for x in xs for a in (x.unary, x.edges, x.pairwise) if a is not None]
        settings = {k: v for k, v in self.get_params(deep=False).items()
                    if k in ("solver", "scope", "node_weights", "pairwise", "kappa")}
        try:
            # a function's repr holds its address, which differs between processes:
            # a fit pickled to another worker (an extension of the grid of C) would
            # not warm-start from its own state
            oracle = oracle_name(self.oracle)
        except ValueError:          # no name that is stable across processes
            oracle = repr(self.oracle)
        settings.update(loss=repr(loss), oracle=oracle)
        return fingerprint(arrays + list(ts) + list(ws), settings)

    # ------------------------------------------------------------------
