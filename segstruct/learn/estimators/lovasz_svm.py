"""The ``lovasz`` method: unary weights learnt on the Lovász hinge of the IoU
loss, then a pairwise (smoothing) weight chosen on the training split.

:func:`segstruct.learn.solvers.lovasz_hinge.fit_cutting_plane` minimises

    1/2 ||w_u||^2 + C H(w_u),    theta = Phi_u w_u,

with H the Lovász hinge of the weighted Jaccard loss (Yu & Blaschko 2015;
``segstruct.inference.lovasz``), one loss over the training set (scope
"dataset") or the mean of the images' losses ("image"). That hinge is a
convex surrogate of the IoU loss of the *unary* labelling y_i = [theta_i > 0]
(the model's unaries are u = theta: with no pairwise term, argmax_y score(y)
labels each node by the sign of u_i). It has no term for the pairwise block,
and there is no Lovász hinge of a labelling coupled by edges that one could
minimise the same way.

The margins are on the SSVM's scale (``margin_scale="foreground"``, the
default): the hinge is taken of the scores multiplied by the scope's
foreground weight in units of the mean node weight, s = W / mean(a) (the
number of foreground superpixels with count weights; s = 1 for an image
without foreground at the image scope). Why: one wrong node changes the
Jaccard loss by about a_i / W, so the margin-rescaled SSVM of bl2 and
proposed asks each node for a score margin of about that size, while the
Lovász hinge as published (``"unit"``) asks for a margin of 1. The two
differ by a factor s in the scores, hence s^2 in C (the hinge is
positively homogeneous): at the data-set scope of camvid's cars, with
thousands of foreground superpixels, the published hinge at the C that
suits the other methods learns w = 0. With the scaling, one C means about
the same regularisation for every method of a table. The labelling
y_i = [theta_i > 0] does not change (s > 0), nor do the relative pairwise
strengths below.

So the pairwise block is not learnt but chosen: its weights are
w_p = -s (1, ..., 1), a fixed non-positive direction (every pairwise
feature is a non-negative contrast-weighted boundary length, so each
p_ij = -s sum_k phi_p,k(ij) <= 0: a Potts penalty for cutting an edge, larger
across weak colour boundaries, and graph cuts stay exact), with s from a
small grid of strengths relative to the unaries::

    s = r * mean_i |u_i| / mean_i (sum of phi_p over node i's edges),

so that at r = 1 an average node's total cut penalty equals its average
unary. Each r of :attr:`LovaszSVM.PAIRWISE_RATIOS` (r = 0 is the unary model
the hinge was trained for) is decoded by graph cut on the training images,
and the r with the highest training VOC IoU wins (ties: the smaller r).
``pairwise_selection_`` records the curve. With ``pairwise=False`` the model
is unary only, as bl2's.

The fitted estimator predicts as every learner on
:class:`~segstruct.learn.estimators.base.BaseSSVM` does, by graph cut with ``w_``, and
its saved hyper-parameters are StructuredSVM's (``margin_scale`` aside), so
``load_model`` gives back a StructuredSVM that predicts the same.
"""
from __future__ import annotations

import time

import numpy as np

from segstruct.inference import maximize
from segstruct.inference.losses import IoULoss, get_loss

from segstruct.evaluate.scoring import VOCScore, superpixel_confusion
from segstruct.learn._params import Options
from segstruct.learn.solvers.lovasz_hinge import fit_cutting_plane, fit_sgd
from segstruct.learn.estimators.single_run import SolverResult, SingleRunSVM
from segstruct.learn._problem import label_counts
from segstruct.feature_map import MRFModel

__all__ = ["LovaszSVM"]


class LovaszSVM(SingleRunSVM):
    """Unary weights by the Lovász hinge of IoU, pairwise weight chosen on the
    training split (module docstring). scikit-learn style, as StructuredSVM.

    Parameters
    ----------
    loss : "iou" or an IoULoss, default "iou"
        The Lovász hinge here is that of the (weighted) Jaccard loss only.
    C, C_units, scope, node_weights, pairwise
        As :class:`~segstruct.learn.estimators.base.BaseSSVM`'s: the objective is
        ``1/2 ||w_u||^2 + svm_C_ H(w_u)``, with ``svm_C_`` that of the IoU SSVMs
        at the same C (the margins are on their scale); the scope's Jaccard
        loss is one over the training set, or the mean of per-image ones;
        with ``pairwise=False`` no pairwise weight is chosen (module
        docstring), a unary-only model.
    margin_scale : {"foreground", "unit"}, default "foreground"
        Scores scaled by the foreground weight before the hinge, so that C
        means what it means for the SSVM methods (module docstring), or the
        hinge of the raw scores (Yu & Blaschko's margin of 1).
    solver : {"oneslack", "sgd"}, default "oneslack"
        "oneslack": 1-slack cutting planes on the hinge (both scopes), with a
        certified stop. "sgd": Pegasos-style stochastic subgradient over
        images, as Lovász-Softmax trains (image scope only; no stopping test,
        so the run never counts as converged: ``log_`` shows its objective).
    tol : float, default 1e-3
        Cutting planes stop when the best objective is within C tol of the
        working-set QP's lower bound.
    max_iter : int, default 1000
        Cutting-plane iterations at most; epochs (passes over the images) for
        "sgd".

    Attributes
    ----------
    w_ : (Du + Dp,) weights (Du without the pairwise block): the hinge's
        unary weights and the chosen pairwise ones.
    loss_, n_features_in_, fit_seconds_ : as StructuredSVM's.
    log_ : one entry per cutting-plane iteration (``primal``, ``best_primal``;
        the last adds ``dual`` and ``gap``).
    primal_, dual_, gap_, n_iter_, converged_ : of the Lovász-hinge problem of
        the unary weights (not of the pairwise choice); with "sgd", ``dual_``
        is the trivial bound 0 and ``n_iter_`` counts epochs.
    pairwise_selection_ : dict with ``ratios``, ``scales``, ``train_iou``
        (VOC IoU in [0, 1], None where undefined) and the chosen ``ratio`` and
        ``scale``; None with ``pairwise=False``.

    Examples
    --------
    >>> from segstruct.toy import chain_problem
    >>> X, Y = chain_problem()
    >>> svm = LovaszSVM(C=1.0).fit(X, Y)
    >>> round(svm.score(X, Y), 3)
    0.76
    """

    #: Strengths r of the pairwise block tried (module docstring).
    PAIRWISE_RATIOS = (0.0, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0)

    #: The values of ``solver`` and ``margin_scale``.
    SOLVERS = ("oneslack", "sgd")
    MARGIN_SCALES = ("foreground", "unit")

    method = "lovasz"

    def __init__(self, *, loss="iou", margin_scale="foreground", solver="oneslack", **params):
        super().__init__(**params)
        self.loss = loss
        self.margin_scale = margin_scale
        self.solver = solver

    _parameter_constraints = {
        **SingleRunSVM._parameter_constraints,
        "margin_scale": [Options(*MARGIN_SCALES)], "solver": [Options(*SOLVERS)]}

    def check_params(self) -> None:
        """Raise ValueError for a bad hyper-parameter, without fitting."""
        try:
            loss = get_loss(self.loss)
        except (TypeError, ValueError) as err:
            raise ValueError(f"lovasz: {err}") from err
        if not isinstance(loss, IoULoss):
            raise ValueError(f"the lovasz method trains the Lovász hinge of the IoU loss "
                             f"only, not {loss!r}")
        if self.solver not in self.SOLVERS:
            raise ValueError(f"the lovasz method trains by cutting planes (solver "
                             f"'oneslack') or SGD ('sgd'), not {self.solver!r}")
        self.validate_params()
        if self.margin_scale == "unit" and self.C_units == "superpixel":
            raise ValueError("margin_scale='unit' (the published hinge) asks a margin of 1 "
                             "per node, which C in superpixel units does not describe: "
                             "give C in the paper's units (C_units='paper')")
        if self.solver == "sgd" and self.scope != "image":
            raise ValueError("the lovasz method's SGD needs the per-image loss scope "
                             "(scope='image'): the data-set Jaccard loss is not a sum "
                             "over images, so one image's subgradient does not estimate it")

    def _train(self, X: list, Y) -> SolverResult:
        # the checks, and each image's targets and node weights (any scope)
        _, _, _, ts, ws = self._examples(X, Y)
        start = time.perf_counter()
        scales = self.margin_scales(ts, ws)
        unary = [s * np.asarray(x.unary, np.float64) for s, x in zip(scales, X)]
        objective = self._objective_C(ts, ws)
        svm_C = objective["svm_C_"]
        if self.solver == "sgd":
            fit = fit_sgd(unary, ts, ws, C=svm_C, epochs=int(self.max_iter))
            fit.lower_bound = 0.0          # the trivial bound: F >= 0
        else:
            fit = fit_cutting_plane(unary, ts, ws, C=svm_C, scope=self.scope,
                                    tol=svm_C * self.tol,
                                    max_iter=int(self.max_iter))
        w, selection = fit.w, None
        if self.pairwise:
            w, selection = self._choose_pairwise(X, Y, fit.w, MRFModel(pairwise=True))
        return SolverResult(w=w, log=self._log(fit, selection, time.perf_counter() - start),
                         # epochs for SGD, as the SSVM's first-order solvers count
                         n_iter=len(fit.history) if self.solver == "sgd" else fit.n_iter,
                         converged=fit.converged,
                         primal=fit.objective, dual=fit.lower_bound,
                         attributes={"pairwise_selection_": selection, **objective})

    def margin_scales(self, targets, weights) -> list[float]:
        """The factor s of each image's scores in the hinge (module docstring).

        Parameters
        ----------
        targets, weights : sequences of (N_j,) arrays, the images' targets
            in {0, 1} and node weights >= 0.

        Returns
        -------
        list of float > 0, one per image (all equal at the data-set scope).
        """
        if self.margin_scale == "unit":
            return [1.0] * len(targets)
        mean = float(np.mean(np.concatenate([np.asarray(a, np.float64) for a in weights])))
        if mean <= 0:
            return [1.0] * len(targets)
        fg = [float(np.dot(np.asarray(t, np.float64), a)) for t, a in zip(targets, weights)]
        if self.scope == "dataset":
            fg = [sum(fg)] * len(fg)
        return [f / mean if f > 0 else 1.0 for f in fg]

    def _choose_pairwise(self, X, Y, w_u, model) -> tuple[np.ndarray, dict]:
        """w = [w_u, -s 1] with s from the grid of ratios, by training VOC IoU."""
        n_pairwise = model.n_features(X[0]) - w_u.size
        unary_mean = np.mean(np.concatenate([np.abs(np.asarray(x.unary) @ w_u) for x in X]))
        n_nodes = sum(np.shape(x.unary)[0] for x in X)
        # each edge's penalty per unit of s, counted at both of its nodes
        per_node = 2.0 * sum(float(np.sum(x.pairwise)) for x in X) / n_nodes
        unit = unary_mean / per_node if per_node > 0 and unary_mean > 0 else 0.0
        ratios = [r for r in self.PAIRWISE_RATIOS if r == 0 or unit > 0]
        scales, ious, candidates = [], [], []
        for r in ratios:
            w = np.concatenate([w_u, np.full(n_pairwise, -r * unit)])
            score = VOCScore()
            for x, y in zip(X, Y):
                u, p = model.potentials(x, w)
                score.add(*superpixel_confusion(maximize(u, x.edges, p)[0], *label_counts(y)))
            scales.append(r * unit)
            ious.append(None if np.isnan(score.iou) else float(score.iou))
            candidates.append(w)
        values = [-np.inf if v is None else v for v in ious]
        best = int(np.argmax(values))           # the first maximum: the smaller ratio
        return candidates[best], {"ratios": list(ratios), "scales": scales,
                                  "train_iou": ious, "ratio": ratios[best],
                                  "scale": scales[best]}

    def _log(self, fit, selection, seconds) -> list:
        log, best = [], np.inf
        for k, f in enumerate(fit.history, start=1):
            best = min(best, float(f))
            log.append({"iteration": k, "solver": f"lovasz {self.solver}",
                        "primal": float(f), "best_primal": best})
        if log:
            log[-1].update(dual=float(fit.lower_bound),
                           gap=float(fit.objective - fit.lower_bound), seconds=seconds)
            if selection is not None:
                log[-1]["pairwise_selection"] = selection
        return log
