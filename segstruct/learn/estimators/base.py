"""The bases every learner of segstruct stands on, and what they declare once.

- :class:`RegularisedLearner`: the hyper-parameters of every learner (C,
  tol, max_iter), :class:`~segstruct.learn.estimators.multivariate_svm.MultivariateSVM`'s
  too;
- :class:`BaseSSVM`: what the segmentation learners share (C's units, the
  loss scope, node weights, pairwise), and what they do alike: the joint
  feature map's prediction (one graph cut per input), max-marginal scores,
  marginals, the VOC measure, restoring a model from its weights, the
  examples of a loss scope and the C of the objective;
- :class:`LossAugmentedSSVM`: the loss, its adjustment and the oracle of the
  learners whose step is loss-augmented inference
  (:class:`~segstruct.learn.estimators.structured_svm.StructuredSVM`,
  :class:`~segstruct.learn.estimators.first_order_svm.FirstOrderSVM`).

Each sibling adds only its own hyper-parameters, their constraints and
``fit``. The scikit-learn protocol (``get_params`` / ``set_params``) and the
parameter constraints come from :mod:`segstruct.learn._params` and are
re-exported here.
"""
from __future__ import annotations

from numbers import Integral
from typing import Callable

import numpy as np

from segstruct.evaluate.scoring import VOCScore, superpixel_confusion
from segstruct.inference import maximize
from segstruct.inference.losses import Loss
from segstruct.learn._params import (POSITIVE, DataConversionWarning, Interval,
                                     NotFittedError, Options, ParamsMixin, check_param)
from segstruct.learn._problem import (C_UNITS, DEFAULT_C, DEFAULT_MAX_ITER, DEFAULT_TOL,
                                      NODE_WEIGHT_MODES, SCOPES, label_counts, resolve_loss,
                                      svm_C, targets_and_node_weights)
from segstruct.feature_map import MRFModel, disjoint_union

__all__ = ["RegularisedLearner", "BaseSSVM", "LossAugmentedSSVM", "DataConversionWarning",
           "NotFittedError", "ParamsMixin", "Interval", "Options", "POSITIVE", "check_param"]


def check_inputs(X) -> None:
    """Refuse what is not a sequence of graphs, naming the first bad item.

    A graph is anything with ``unary`` (N, Du), ``edges`` (E, 2) and
    ``pairwise`` (E, Dp) arrays: a ``SuperpixelGraph``
    (``FeatureExtractor.examples(...)[k].graph``) or a
    :class:`segstruct.feature_map.Graph`.
    """
    if isinstance(X, np.ndarray) or not hasattr(X, "__len__"):
        raise TypeError(f"X must be a sequence of graphs, got {type(X).__name__}: give "
                        "[example.graph for example in FeatureExtractor.examples(...)] "
                        "or segstruct.feature_map.Graph(unary, edges, pairwise) objects")
    for k, x in enumerate(X):
        missing = [name for name in ("unary", "edges", "pairwise") if not hasattr(x, name)]
        if missing:
            raise TypeError(f"X[{k}] is a {type(x).__name__}, not a graph (it has no "
                            f"{', '.join(missing)}): give objects with unary (N, Du), edges "
                            "(E, 2) and pairwise (E, Dp) arrays, e.g. segstruct.feature_map."
                            "Graph or FeatureExtractor.examples(...)[k].graph")


def _labelled(k: int, read, y, *args):
    """``read(y, *args)`` for the label array Y[k], its errors naming it."""
    try:
        return read(y, *args)
    except ValueError as err:
        raise ValueError(f"Y[{k}]: {err}") from None


class RegularisedLearner(ParamsMixin):
    """What every learner of segstruct has, declared here once: the trade-off
    C between the weights' norm and the loss, and the solver's stop.

    Parameters
    ----------
    C : float, default 1.0 (``DEFAULT_C``)
        Regularisation trade-off (in ``C_units`` where the learner has them).
    tol : float, default 1e-3 (``DEFAULT_TOL``)
        The solver's stopping tolerance, in loss units (each learner says
        what it stops on).
    max_iter : int, default 1000 (``DEFAULT_MAX_ITER``)
        The solver's iterations at most.

    A subclass declares only its own hyper-parameters: its ``__init__``
    takes them as keyword arguments and hands ``**params`` to its base's,
    and its ``_parameter_constraints`` extend the base's
    (``{**Base._parameter_constraints, ...}``). A subclass that needs
    another default for a shared parameter names it again, and says why in
    ``_other_defaults`` and in its docstring.
    """

    #: Shared parameters whose default a subclass changes, with the reason.
    _other_defaults: dict[str, str] = {}

    def __init__(self, *, C=DEFAULT_C, tol=DEFAULT_TOL, max_iter=DEFAULT_MAX_ITER):
        self.C = C
        self.tol = tol
        self.max_iter = max_iter

    #: The constraints, checked in one place
    #: (:meth:`~segstruct.learn._params.ParamsMixin.validate_params`); the
    #: command line's choices are the same objects' options.
    _parameter_constraints = {"C": [POSITIVE], "tol": [POSITIVE],
                              "max_iter": [Interval(Integral, 1)]}


class BaseSSVM(RegularisedLearner):
    """What the segmentation learners share (module docstring), with the
    hyper-parameters every one of them has besides
    :class:`RegularisedLearner`'s, declared here once.

    Parameters
    ----------
    C, tol, max_iter
        :class:`RegularisedLearner`'s; C in ``C_units``.
    C_units : {"superpixel", "paper"}, default "superpixel"
        What C is measured in (:func:`~segstruct.learn._problem.svm_C`).
        "superpixel": the loss is counted in missed superpixels and summed
        over the examples, so one C suits every loss and both scopes.
        "paper": the C of the paper's Eq. 8 (its C = 1 is an objective
        weight of 0.5).
    scope : {"dataset", "image"}, default "dataset"
        One loss over the whole training set (the paper's multivariate
        formulation, and the VOC measure), or one loss per image; with C in
        superpixel units the losses are summed over the examples either way.
    node_weights : {"count", "area"}, default "count"
        Node weights a_i: superpixel counts (the paper's) or non-void pixel
        areas.
    pairwise : bool, default True
        Use the pairwise block (False: a unary-only model, as in BL2).

    Attributes
    ----------
    w_ : (D,) float64 weights, unary block first, pairwise block <= 0.
    loss_ : the resolved loss (``segstruct.inference.losses.Loss``).
    n_features_in_ : int, D.
    """

    #: Whether an unfinished fit can continue from a checkpoint (``train
    #: --resume``); a learner that keeps one says so.
    resumable = False

    def __init__(self, *, C_units="superpixel", scope="dataset", node_weights="count",
                 pairwise=True, **params):
        super().__init__(**params)
        self.C_units = C_units
        self.scope = scope
        self.node_weights = node_weights
        self.pairwise = pairwise

    _parameter_constraints = {
        **RegularisedLearner._parameter_constraints,
        "C_units": [Options(*C_UNITS)], "scope": [Options(*SCOPES)],
        "node_weights": [Options(*NODE_WEIGHT_MODES)], "pairwise": [bool],
    }

    # what fit or from_weights sets, and what a subclass stores besides the
    # shared parameters (declared for the type checker)
    loss: str | Loss | Callable
    w_: np.ndarray
    loss_: Loss
    n_features_in_: int

    def __sklearn_tags__(self):
        """Estimator tags for scikit-learn >= 1.6: fit needs Y, and X is a
        sequence of graphs, not a 2-D array."""
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.two_d_array = False
        return tags

    def _resolve_loss(self, targets, weights) -> Loss:
        # kappa is the Hamming learners' (None where the learner has no such parameter)
        return resolve_loss(self.loss, getattr(self, "kappa", None), targets, weights)

    def _examples(self, X, Y):
        """(inputs, targets, node weights) per training example for the scope."""
        check_inputs(X)
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} graphs but Y {len(Y)} label arrays: give one "
                             "label array per graph")
        if len(X) == 0:
            raise ValueError("no training examples")
        ts, ws = zip(*(_labelled(k, targets_and_node_weights, y, self.node_weights)
                       for k, y in enumerate(Y)))
        for k, (x, t) in enumerate(zip(X, ts)):
            for name in ("unary", "pairwise"):
                values = getattr(x, name, None)
                if values is not None and not np.all(np.isfinite(values)):
                    raise ValueError(f"X[{k}] ({getattr(x, 'image_id', 'no id')}) has "
                                     f"non-finite {name} features")
            if np.shape(x.unary)[0] != t.size:
                raise ValueError(f"X[{k}] has {np.shape(x.unary)[0]} nodes but Y[{k}] has "
                                 f"labels of {t.size}")
        if self.scope == "dataset":
            return [disjoint_union(X)], [np.concatenate(ts)], [np.concatenate(ws)], ts, ws
        return list(X), list(ts), list(ws), ts, ws

    def _check_fitted(self):
        if not hasattr(self, "w_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit "
                                 "first")

    def objective_C(self, X, Y) -> float:
        """The C of the objective a fit on (X, Y) solves (``svm_C_``), without fitting."""
        _, _, _, all_t, all_w = self._examples(X, Y)
        n = 1 if self.scope == "dataset" else len(X)
        return svm_C(self.C, self.C_units, self._resolve_loss(all_t, all_w), all_t, all_w,
                     n)[0]

    @classmethod
    def from_weights(cls, w, loss: Loss, **params) -> "BaseSSVM":
        """An estimator restored from saved weights, ready to predict.

        Parameters
        ----------
        w : (D,) learnt weights.
        loss : Loss, the resolved loss the weights were trained for (kappa
            filled in): both the ``loss`` parameter and ``loss_``.
        **params : the other hyper-parameters (``__init__``'s).

        Returns
        -------
        An estimator with ``w_``, ``loss_`` and ``n_features_in_`` set; the
        attributes of a training run (``log_``, ``primal_``, ...) are absent.
        """
        est = cls(**{"loss": loss, **params})
        est.w_ = np.asarray(w, np.float64)
        est.loss_ = loss
        est.n_features_in_ = est.w_.size
        return est

    def predict(self, X) -> list[np.ndarray]:
        """argmax_y w . Psi(x, y) for each input, by one graph cut each.

        Returns
        -------
        list of (N_k,) uint8 labellings.
        """
        return self._per_graph(X, lambda u, edges, p: maximize(u, edges, p)[0])

    def decision_function(self, X) -> list[np.ndarray]:
        """Per-superpixel confidence: the max-marginal differences
        ``max score with y_i = 1 - max score with y_i = 0``, by one graph cut
        per node (``segstruct.inference.maxmarginals``).

        ``decision_function(X)[k] > 0`` is ``predict(X)[k]``; the size says
        how much score the model would give up to flip the node, in its own
        units (what ``segstruct predict`` compares across class models).

        Returns
        -------
        list of (N_k,) float64 arrays.
        """
        from segstruct.inference.maxmarginals import max_marginals
        return self._per_graph(X, max_marginals)

    def marginals(self, X, temperature: float | None = None) -> list[np.ndarray]:
        """p(y_i = 1) per superpixel under ``p(y | x) ∝ exp(score(y) / T)``, by
        loopy belief propagation (``segstruct.inference.marginals``: exact
        on a forest, the Bethe approximation on loopy graphs).

        For a CRF, T = 1 and these are its own marginals. For an SSVM, whose
        scores are margins and not log-probabilities, they are an
        approximation whose temperature must be calibrated on held-out
        data (``segstruct.decisions.fit_temperature``).

        Parameters
        ----------
        X : sequence of graphs.
        temperature : float > 0, optional
            Default: the fitted ``temperature_``.

        Returns
        -------
        list of (N_k,) float64 arrays in [0, 1].
        """
        from segstruct.inference.marginals import loopy_bp
        self._check_fitted()            # before its temperature is looked for
        T = getattr(self, "temperature_", None) if temperature is None else temperature
        if T is None:
            raise NotFittedError(
                f"this {type(self).__name__} has no temperature for its marginals: its scores "
                "are margins, not log-probabilities; calibrate one on held-out data "
                "(segstruct.decisions.fit_temperature, or train --calibrate)")
        check_param("temperature", T, [POSITIVE])
        return self._per_graph(X, lambda u, edges, p: loopy_bp(u / T, edges, p / T).node)

    def _per_graph(self, X, solve: Callable) -> list:
        """``solve(u, edges, p)`` of each graph's potentials under ``w_``."""
        self._check_fitted()
        check_inputs(X)
        model = MRFModel(pairwise=self.pairwise)
        out = []
        for x in X:
            u, p = model.potentials(x, self.w_)
            out.append(solve(u, x.edges, p))
        return out

    def voc_score(self, X, Y, predictions=None) -> VOCScore:
        """The VOC measure of the predictions (pixel level when Y holds counts).

        ``predictions``: ``predict(X)``, when the caller has it already.
        """
        if len(X) != len(Y):            # before the work of predicting
            raise ValueError(f"X has {len(X)} graphs but Y {len(Y)} label arrays: give one "
                             "label array per graph")
        counts = [_labelled(k, label_counts, y) for k, y in enumerate(Y)]
        predictions = self.predict(X) if predictions is None else predictions
        if len(predictions) != len(X):
            raise ValueError(f"X has {len(X)} graphs but predictions {len(predictions)}: "
                             "give one prediction per graph")
        score = VOCScore()
        for k, (y_hat, (fg, bg)) in enumerate(zip(predictions, counts)):
            if fg.size != np.size(y_hat):
                raise ValueError(f"X[{k}] has {np.size(y_hat)} nodes but Y[{k}] has labels "
                                 f"of {fg.size}")
            score.add(*superpixel_confusion(y_hat, fg, bg))
        return score

    def score(self, X, Y) -> float:
        """VOC IoU of the predictions, as a fraction in [0, 1]."""
        return self.voc_score(X, Y).iou


class LossAugmentedSSVM(BaseSSVM):
    """The learners whose step is loss-augmented inference by an oracle
    (the cutting planes of :class:`~segstruct.learn.estimators.structured_svm.StructuredSVM`
    and the first-order loops of
    :class:`~segstruct.learn.estimators.first_order_svm.FirstOrderSVM`): the loss, its
    adjustment and the oracle, declared here once.

    Parameters
    ----------
    loss : str, Loss or callable, default "adjusted_hamming"
        The loss Delta(FP, FN) (see ``segstruct.inference.losses.get_loss``).
    kappa : float or None, default None
        For ``loss="adjusted_hamming"``: the FP weight; None means the
        foreground / background ratio of the training set, counted with the
        node weights in use (superpixels in count mode: Eq. 28 of the paper).
    oracle : callable, optional
        ``oracle(u, edges, p, t, a, loss) -> InferenceResult``: the most
        violated constraint; default the exact graph cut for
        node-decomposable losses (``segstruct.inference.loss_augmented``).
    **params
        :class:`BaseSSVM`'s.
    """

    def __init__(self, *, loss="adjusted_hamming", kappa=None, oracle=None, **params):
        super().__init__(**params)
        self.loss = loss
        self.kappa = kappa
        self.oracle = oracle

    _parameter_constraints = {**BaseSSVM._parameter_constraints, "kappa": [None, POSITIVE]}
