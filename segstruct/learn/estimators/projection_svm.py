"""The ``projection`` method: a pairwise MRF trained on the Fenchel-Young
(projection) loss of Blondel et al., decoded by its graph cut MAP.

:mod:`segstruct.learn.solvers.fenchel_young` minimises

    1/2 ||w||^2 + C * (projection loss of the training set),    w_p <= 0,

by L-BFGS-B, with the parts' scores ``theta(w)`` linear in the model's
weights (unary and pairwise blocks learnt together, no choice afterwards)
and an offset of 1/2 that makes the model's own prediction, the graph cut
``argmax_y score(y)``, equal to ``argmax_y <2 theta - 1, phi(y)>``: the
decoding that minimises the expected number of wrong parts when theta is
read as the parts' marginals.

The set: the cube (``projection_set="cube"``, the default) projects by
clipping, so a run costs seconds and takes node weights; the cube with a
foreground budget (``"budget"``, at most the training split's largest
foreground fraction of each image's superpixels); the marginal polytope
(``"marginal"``, Frank-Wolfe with graph cuts; exact but seconds per image
and projection, so for small data only).

Decoding for IoU: the MAP above. It is calibrated for an error count, not
for IoU (whose Bayes decision depends on the object's size, Nowozin 2014;
``segstruct.inference.projection.decode_iou`` implements that one on the
unary marginals). The MAP is kept because it is exact by one graph cut,
uses the learnt pairwise terms, and leaves a plain StructuredSVM that
``predict``, ``evaluate`` and the saved model files handle like every
other method's.

The fitted estimator predicts as every learner on
:class:`~segstruct.learn.estimators.base.BaseSSVM` does; its ``loss_`` is the Hamming
loss (the error count that its decoding targets), and ``load_model`` gives
back a StructuredSVM that predicts the same.
"""
from __future__ import annotations

import time


from segstruct.learn.solvers.fenchel_young import SETS, ProjectionProblem, fit_lbfgs
from segstruct.learn.estimators.single_run import SolverResult, SingleRunSVM, lbfgs_run
from segstruct.learn._params import Options

__all__ = ["ProjectionSVM", "SETS"]


class ProjectionSVM(SingleRunSVM):
    """A pairwise MRF on the Fenchel-Young loss of a projection (module docstring).
    scikit-learn style, as StructuredSVM.

    Parameters
    ----------
    C, C_units, scope, node_weights, pairwise, tol, max_iter
        As :class:`~segstruct.learn.estimators.base.BaseSSVM`'s. C weighs the loss, a
        sum over parts (superpixels and edges) that scales as the Hamming
        loss does (the objective weighs it by ``svm_C_``); the scope sums
        it over the training set or takes the mean of the images' (the
        same loss, weighing images differently); "area" node weights need
        the cube (with the other sets every superpixel counts once, a
        void-only one as background); the fit stops once
        ``F(w) - min F <= C tol``, certified by the gradient
        (``segstruct.learn.solvers.fenchel_young``), after ``max_iter`` objective
        evaluations at most.
    projection_set : {"cube", "budget", "marginal"}, default "cube"

    Attributes
    ----------
    w_ : (Du + Dp,) weights, w_p <= 0.
    loss_ : the Hamming loss (module docstring).
    log_ : one entry per objective evaluation (``primal``, ``best_primal``,
        ``seconds``; the last adds ``dual`` and ``gap``).
    primal_, dual_, gap_, n_iter_, converged_, n_features_in_, fit_seconds_ :
        as StructuredSVM's; ``dual_`` is ``primal_`` less the certified bound.

    Examples
    --------
    >>> from segstruct.toy import chain_problem
    >>> X, Y = chain_problem()
    >>> svm = ProjectionSVM(C=1.0).fit(X, Y)
    >>> round(svm.score(X, Y), 3)
    0.864
    """

    method = "projection"
    solver = "lbfgs"
    loss = "hamming"

    def __init__(self, *, projection_set="cube", **params):
        super().__init__(**params)
        self.projection_set = projection_set

    _parameter_constraints = {**SingleRunSVM._parameter_constraints,
                              "projection_set": [Options(*SETS)]}

    def check_params(self) -> None:
        """Raise ValueError for a bad hyper-parameter, without fitting."""
        self.validate_params()
        if self.node_weights == "area" and self.projection_set != "cube":
            raise ValueError(f"area node weights need the cube projection set, not "
                             f"{self.projection_set!r}: the other sets' projections are "
                             "not separable, so weighting their parts' losses would not "
                             "give the loss of a projection")

    def _train(self, X: list, Y) -> SolverResult:
        # the checks, and each image's targets and node weights (any scope)
        _, _, _, ts, ws = self._examples(X, Y)
        start = time.perf_counter()
        objective = self._objective_C(ts, ws)
        svm_C = objective["svm_C_"]
        problem = ProjectionProblem(
            [x.unary for x in X], ts,
            pairwise=[x.pairwise for x in X] if self.pairwise else None,
            edges=[x.edges for x in X], svm_C=svm_C, kind=self.projection_set,
            scope=self.scope, weights=ws if self.projection_set == "cube" else None)
        fit = fit_lbfgs(problem, tol=svm_C * self.tol, max_iter=int(self.max_iter))
        return lbfgs_run(fit, "projection L-BFGS-B", start, objective)
