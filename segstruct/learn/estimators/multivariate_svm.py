"""SVM-perf in Python: a linear classifier trained for a multivariate loss.

Joachims (2005) treats a whole training set as one structured example:
labels ``y in {0,1}^n`` of all points at once, the joint feature map

    Psi(X, y) = sum_i (2 y_i - 1) x_i,

and a loss of the contingency table (F1, IoU, ...) of the whole labelling.
That is exactly the unary-only model of docs/design.md ("The model") at the
data-set scope, with one node per point and no edges, so :class:`MultivariateSVM`
is a thin scikit-learn-style front end to
:class:`segstruct.learn.estimators.structured_svm.StructuredSVM` with the BL2
oracle (:func:`segstruct.inference.bl2`): no cutting-plane loop of its own.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse

from segstruct.inference import bl2
from segstruct.inference.losses import FBetaLoss, IoULoss, Loss, get_loss

from segstruct.learn._params import DataConversionWarning, NotFittedError
from segstruct.learn.estimators.base import RegularisedLearner
from segstruct.learn.estimators.structured_svm import StructuredSVM
from segstruct.feature_map import Graph

__all__ = ["MultivariateSVM"]

# Losses defined relative to a positive and a negative class (see fit).
_TWO_CLASS_LOSSES = (IoULoss, FBetaLoss)


class MultivariateSVM(RegularisedLearner):
    r"""Linear SVM trained for a multivariate loss (SVM-perf, Joachims 2005).

    Solves, over ``w`` (and the intercept, see below),

        min 1/2 ||w||^2 + C xi
        s.t. w . (Psi(y) - Psi(y')) >= Delta(y, y') - xi   for every y' in {0,1}^n,

    with ``Psi(y) = sum_i (2 y_i - 1) x_i`` and ``Delta`` a loss of the
    counts (FP, FN) of ``y'`` against ``y`` over the whole training set. The
    most violated constraint is found exactly by BL2 for any such loss.
    Prediction is ``x . coef_ + intercept_ > 0``.

    It is a binary classifier with scikit-learn's contract (``clone``,
    ``GridSearchCV``, ``cross_val_score``, ``check_estimator``; scikit-learn
    itself is not needed). ``y`` may hold any two labels: the greater one,
    ``classes_[1]``, is the positive class of the loss (as ``pos_label`` is
    in scikit-learn's binary classifiers), so with labels 0 / 1 or -1 / 1
    the positive class is 1. Relabel to train for the other one: F1 and IoU
    are not symmetric in the two classes.

    Parameters
    ----------
    loss : str, Loss or callable, default "f1"
        "f1", "fbeta" (with ``beta``), "iou", "hamming", a
        :class:`segstruct.inference.losses.Loss`, or a function
        ``f(fp, fn, n_pos, n_neg)`` (see :func:`segstruct.inference.losses.get_loss`).
        Losses are fractions (F1 loss = 1 - F1), not percent.
    C : float, default 1.0
        Trade-off between ``1/2 ||w||^2`` and the single slack ``xi``; see
        "Relation to SVM-perf" for converting SVM-perf's ``-c``. Declared,
        with ``tol`` and ``max_iter``, by
        :class:`~segstruct.learn.estimators.base.RegularisedLearner`, the
        base of every learner of segstruct (keyword arguments only).
    fit_intercept : bool, default True
        Append a constant feature 1 to every point. Its weight is the
        intercept and is regularised like the other weights, as SVM-perf does
        with its bias feature (``--b 1``, its default).
    beta : float, default 1.0
        Used only with ``loss="fbeta"``; ignored otherwise.
    tol : float, default 1e-4
        Stop when the most violated constraint exceeds the working-set slack
        by at most ``tol`` (in loss units). The returned objective is then
        within ``C * tol`` of the optimum (up to the QP solver's tolerance).
        Finer than the segmentation learners' family default of 1e-3
        (``BaseSSVM``): this loss is one number in [0, 1] for the whole
        training set, where theirs is counted in missed superpixels, so
        1e-3 here would stop a tenth of a percent of the loss short.
    max_iter : int, default 1000
        Maximum number of cutting-plane iterations.

    Attributes
    ----------
    classes_ : ndarray, shape (2,)
        The labels seen in ``fit``, sorted; ``classes_[1]`` is the positive
        class. It has one element when ``y`` held one label only (accepted
        by losses that are defined then, such as Hamming): the model is
        trained with it as the positive class unless it equals 0 (0 / 1
        labels keep their meaning), and predicts it everywhere.
    coef_ : ndarray, shape (d,)
    intercept_ : float
        0.0 when ``fit_intercept=False``.
    objective_ : float
        ``1/2 ||w||^2 + C max(0, max_y' [Delta(y, y') - w . (Psi(y) - Psi(y'))])``
        evaluated exactly at the returned weights (with BL2), where ``w``
        includes the intercept weight. Not the learner's running estimate.
    n_iter_ : int
        Cutting-plane iterations run.
    converged_ : bool
        Whether the learner met ``tol`` within ``max_iter`` (a RuntimeWarning
        is issued otherwise).
    loss_ : Loss
        The resolved loss.
    n_features_in_ : int
        d.

    Notes
    -----
    **Relation to SVM-perf.** SVM-perf (Joachims' ``svm_perf_learn``, v3.00)
    solves ``min 1/2 ||w_p||^2 + c_perf xi_p`` with its whole training set as
    one structural example, like here, but on a different scale. Its source
    (``svm_struct_api.c``, ``read_struct_examples``) replaces every label by
    ``+-0.5 * 100 / n`` for the threshold losses (F1, error rate, ...), so its
    joint feature map is ``(50 / n) Psi(y)``, and its losses are in percent
    (``fone_loss`` returns ``100 * (1 - F1)``): ``Delta_p = 100 Delta``.
    Substituting ``w_p = 2 n w`` and ``xi_p = 100 xi`` turns its problem into
    ``4 n^2 [1/2 ||w||^2 + (25 c_perf / n^2) xi]`` with our constraints, so

        C = 25 * c_perf / n**2        (equivalently  c_perf = C * n**2 / 25),

    with ``n`` the number of training points; the solutions agree up to
    ``w_perf = 2 n w`` (same predictions; SVM-perf's decision values are
    ``2 n`` times ours, its bias weight ``2 n`` times ``intercept_``). This
    mapping reproduces the note SVM-perf prints in its help,
    ``c_light = c_perf * 100 / n`` for its error-rate loss (check: our
    problem with Delta = errors / n is SVM-light with ``C_light = 4 n C``).
    Other correspondences: ``loss="f1"`` is ``-l 1``; ``fit_intercept=True``
    is ``--b 1`` (default) and False is ``--b 0``; SVM-perf's ``-e eps``
    (in percent units of xi_p) corresponds to ``tol = eps / 100``. SVM-perf
    has no IoU loss; and for F1 it sets the loss to 100 even for the correct
    labelling when there is no positive, a case refused here.
    Source: SVM-perf v3.00 ``svm_struct_api.c`` by T. Joachims (e.g. the copy
    in GitHub repository baojian/auc-opt, ``svm_perf/svm_struct_api.c``:
    label rescaling in ``read_struct_examples``, ``psi``, ``fone_loss``,
    and the help text in ``print_struct_help``); documentation at
    https://www.cs.cornell.edu/people/tj/svm_light/svm_perf.html. The relation
    is derived from that code, and was checked by running SVM-perf V3.00,
    built from that source, side by side on the same files (F1, 2,000 and
    20,000 points): at matched precision (tol 1e-4 against ``-e 0.01``) the
    objectives agreed to within that precision.

    **w = 0 can be the optimum.** Where no weights reduce the loss by more
    than their norm costs at this C (a noisy problem, a small C), the exact
    optimum is w = 0; ``fit`` then warns (RuntimeWarning) and every point
    gets ``classes_[0]``. SVM-perf stops near such an optimum with small
    nonzero weights instead, which rank the points (so its F1 on such a
    problem is above 0, where this learner's is 0).
    """

    # scikit-learn < 1.6 reads the kind of estimator from this attribute
    _estimator_type = "classifier"

    _other_defaults = {"tol": "its loss is one number in [0, 1] for the whole training set, "
                              "not counted in missed superpixels"}

    def __init__(self, *, loss="f1", fit_intercept=True, beta=1.0, tol=1e-4, **params):
        super().__init__(tol=tol, **params)
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.beta = beta

    # ------------------------------------------------------------------
    def __sklearn_tags__(self):
        """Estimator tags for scikit-learn >= 1.6: a binary classifier of dense,
        finite 2-D input that needs ``y``."""
        from sklearn.utils import ClassifierTags     # only scikit-learn calls this
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags(multi_class=False)
        tags.target_tags.required = True
        return tags

    def _more_tags(self) -> dict:
        """The same tags for scikit-learn < 1.6 (a plain dict, nothing imported)."""
        return {"binary_only": True, "requires_y": True}

    def _resolve_loss(self) -> Loss:
        if isinstance(self.loss, str) and self.loss.strip().lower() == "fbeta":
            return get_loss("fbeta", beta=self.beta)
        return get_loss(self.loss)

    def _design(self, X) -> np.ndarray:
        """X with the constant intercept column appended (if any)."""
        if self.fit_intercept:
            return np.hstack([X, np.ones((X.shape[0], 1))])
        return X

    def _check_X(self, X, fitted: bool = False) -> np.ndarray:
        """X as a finite (n, d) float64 array; with ``fitted``, d must be
        ``n_features_in_``. The messages are scikit-learn's, which its
        estimator checks look for."""
        if sparse.issparse(X):
            raise TypeError(f"{type(self).__name__} does not take sparse input; "
                            "pass a dense array (X.toarray())")
        X = np.asarray(X)
        if np.iscomplexobj(X):
            # float64 conversion would drop the imaginary part with a mere warning
            raise ValueError("Complex data not supported")
        X = X.astype(np.float64, copy=False)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n_samples, n_features), got shape "
                             f"{X.shape}. Reshape your data: X.reshape(-1, 1) for one "
                             "feature, X.reshape(1, -1) for one sample")
        if X.shape[0] == 0:
            raise ValueError("X has no samples")
        if X.shape[1] == 0:
            raise ValueError(f"0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
        if fitted and X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        if not np.all(np.isfinite(X)):
            raise ValueError("X must be finite (no NaN or inf)")
        return X

    def _check_y(self, y, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(y as a 1-D array of n labels, its classes sorted): at most two."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the "
                             "target y is None")
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected; it is "
                          "read as shape (n_samples,)", DataConversionWarning, stacklevel=3)
            y = y.ravel()
        if y.shape != (n,):
            raise ValueError(f"y must have shape ({n},) to match X, got {y.shape}")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("Input y contains NaN or infinity")
        # float labels are classes only when whole (1.0, 0.0), as in scikit-learn
        if y.dtype.kind == "c" or (y.dtype.kind == "f" and np.any(y != np.round(y))):
            raise ValueError("Unknown label type: continuous. MultivariateSVM is a binary "
                             "classifier: y must hold class labels")
        try:
            classes = np.unique(y)
        except TypeError as err:       # e.g. str and int mixed in an object array
            raise ValueError(f"Unknown label type: labels that cannot be sorted ({err})") \
                from err
        if classes.size > 2:
            raise ValueError(f"Only binary classification is supported. The type of the "
                             f"target is multiclass: y has {classes.size} classes")
        return y, classes

    # ------------------------------------------------------------------
    def fit(self, X, y) -> "MultivariateSVM":
        """Train on points X and binary labels y.

        Parameters
        ----------
        X : array_like of float, shape (n, d)
        y : array_like, shape (n,)
            Two class labels (numbers, strings, bools); ``classes_[1]``,
            the greater, is the positive class.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad shapes or values, more than two classes, bad
            hyper-parameters, or only one class present with the IoU /
            F-beta losses.
        """
        X = self._check_X(X)
        n, d = X.shape
        labels, classes = self._check_y(y, n)
        if classes.size == 2:
            y = (labels == classes[1]).astype(np.uint8)
        else:
            # one class only: 0 stays the negative class, as 0 / 1 labels were read
            y = np.full(n, 0 if classes[0] == 0 else 1, np.uint8)
        self.validate_params()
        loss = self._resolve_loss()
        n_pos = int(y.sum())
        if isinstance(loss, _TWO_CLASS_LOSSES) and (n_pos == 0 or n_pos == n):
            # With no positive, TP = 0 for every labelling: the loss is 1 for
            # all but the all-zero one (0 only by the 0/0 convention). With no
            # negative, FP = 0 always and the problem is a one-class one.
            raise ValueError(
                f"loss {loss!r} needs at least one positive and one negative example, but "
                f"y has one class only ({n_pos} positive, {n - n_pos} negative)")

        Z = self._design(X)
        # One structured example: all points, no edges, no pairwise features.
        graph = Graph(unary=Z, edges=np.zeros((0, 2), np.int64), pairwise=np.zeros((0, 0)))
        # its C is the objective's own (SVM-struct's): twice it in the paper's units
        learner = StructuredSVM(loss=loss, C=2.0 * float(self.C), C_units="paper",
                                solver="oneslack",
                                scope="dataset", node_weights="count", pairwise=False,
                                oracle=bl2, tol=self.tol, max_iter=self.max_iter)
        with warnings.catch_warnings():
            # said below in this estimator's terms (its C, its labels)
            warnings.filterwarnings("ignore", "the optimum at C=", RuntimeWarning)
            learner.fit([graph], [y])
        w = np.asarray(learner.w_, dtype=np.float64)
        if not learner.converged_:
            warnings.warn(f"MultivariateSVM did not converge to tol={self.tol} in "
                          f"max_iter={self.max_iter} iterations", RuntimeWarning, stacklevel=2)

        self.classes_ = classes
        self.coef_ = w[:d].copy()
        self.intercept_ = float(w[d]) if self.fit_intercept else 0.0
        self.loss_ = loss
        self.n_iter_ = learner.n_iter_
        self.converged_ = learner.converged_
        self.n_features_in_ = d
        self.objective_ = self._objective(Z, y, w, loss)
        if learner.converged_ and not np.any(w):
            # not a failure: where no weights beat the loss of predicting one
            # class, w = 0 is the optimum (SVM-perf's own dual bound agreed on
            # such a problem, where it stopped slightly above it)
            warnings.warn(f"the optimum at C={self.C:g} is w = 0: every point gets label "
                          f"{np.asarray(classes[0]).tolist()!r} (decision value 0); the data "
                          "give no weights "
                          "worth their norm at this C: a larger C may find some",
                          RuntimeWarning, stacklevel=2)
        return self

    def _objective(self, Z, y, w, loss) -> float:
        """Exact primal at w: the slack is max_y' Delta + w.Psi(y') - w.Psi(y), by BL2."""
        u = Z @ w
        res = bl2(u, np.zeros((0, 2), np.int64), np.zeros(0), y, None, loss)
        hinge = res.objective - float((2.0 * y - 1.0) @ u)
        return float(0.5 * w @ w + float(self.C) * max(0.0, hinge))

    # ------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise NotFittedError("this MultivariateSVM is not fitted yet; call fit first")

    def decision_function(self, X) -> np.ndarray:
        """``X @ coef_ + intercept_``, shape (m,): > 0 predicts ``classes_[1]``."""
        self._check_fitted()
        X = self._check_X(X, fitted=True)
        return X @ self.coef_ + self.intercept_

    def predict(self, X) -> np.ndarray:
        """Labels, shape (m,): ``classes_[1]`` where ``decision_function(X) > 0``,
        else ``classes_[0]`` (the one class when ``fit`` saw only one)."""
        positive = self.decision_function(X) > 0
        if self.classes_.size == 1:
            return np.full(positive.shape, self.classes_[0])
        return self.classes_[positive.astype(int)]

    def score(self, X, y) -> float:
        """Mean accuracy of ``predict(X)`` against ``y``.

        The default ``score`` of scikit-learn's classifiers, so that
        ``GridSearchCV`` and ``cross_val_score`` compare it with other
        classifiers on the same scale. It is not the measure the model was
        trained for: to select ``C`` for F1 or IoU, pass
        ``scoring="f1"`` / ``scoring="jaccard"`` (``pos_label`` is 1 there:
        with other labels use ``make_scorer(f1_score, pos_label=...)``).
        """
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        return float(np.mean(self.predict(X) == y))
