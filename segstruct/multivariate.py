"""SVM-perf in Python: a linear classifier trained for a multivariate loss.

Joachims (2005) treats a whole training set as one structured example:
labels ``y in {0,1}^n`` of all points at once, the joint feature map

    Psi(X, y) = sum_i (2 y_i - 1) x_i,

and a loss of the contingency table (F1, IoU, ...) of the whole labelling.
That is exactly the unary-only model of docs/design.md ("The model") at the
data-set scope, with one node per point and no edges, so :class:`MultivariateSVM` is a thin
scikit-learn-style front end to :class:`segstruct.ssvm.StructuredSVM` with
the BL2 oracle (:func:`segstruct.inference.bl2`): no cutting-plane loop of
its own.
"""
from __future__ import annotations

import warnings

import numpy as np

from segstruct.inference import bl2
from segstruct.inference.losses import FBetaLoss, IoULoss, Loss, get_loss

from .model import Graph
from .ssvm import StructuredSVM

__all__ = ["MultivariateSVM"]

# Losses defined relative to a positive and a negative class (see fit).
_TWO_CLASS_LOSSES = (IoULoss, FBetaLoss)


class MultivariateSVM:
    r"""Linear SVM trained for a multivariate loss (SVM-perf, Joachims 2005).

    Solves, over ``w`` (and the intercept, see below),

        min 1/2 ||w||^2 + C xi
        s.t. w . (Psi(y) - Psi(y')) >= Delta(y, y') - xi   for every y' in {0,1}^n,

    with ``Psi(y) = sum_i (2 y_i - 1) x_i`` and ``Delta`` a loss of the
    counts (FP, FN) of ``y'`` against ``y`` over the whole training set. The
    most violated constraint is found exactly by BL2 for any such loss.
    Prediction is ``x . coef_ + intercept_ > 0``.

    Parameters
    ----------
    loss : str, Loss or callable, default "f1"
        "f1", "fbeta" (with ``beta``), "iou", "hamming", a
        :class:`segstruct.inference.losses.Loss`, or a function
        ``f(fp, fn, n_pos, n_neg)`` (see :func:`segstruct.inference.losses.get_loss`).
        Losses are fractions (F1 loss = 1 - F1), not percent.
    C : float, default 1.0
        Trade-off between ``1/2 ||w||^2`` and the single slack ``xi``; see
        "Relation to SVM-perf" for converting SVM-perf's ``-c``.
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
    max_iter : int, default 1000
        Maximum number of cutting-plane iterations.

    Attributes
    ----------
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
    is derived from that code; it has not been checked by running SVM-perf.
    """

    def __init__(self, loss="f1", C=1.0, fit_intercept=True, beta=1.0, tol=1e-4,
                 max_iter=1000):
        self.loss = loss
        self.C = C
        self.fit_intercept = fit_intercept
        self.beta = beta
        self.tol = tol
        self.max_iter = max_iter

    # ------------------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict:
        """Hyper-parameters, as passed to ``__init__`` (scikit-learn protocol)."""
        return {k: getattr(self, k) for k in
                ("loss", "C", "fit_intercept", "beta", "tol", "max_iter")}

    def set_params(self, **params) -> "MultivariateSVM":
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"invalid parameter {key!r} for MultivariateSVM")
            setattr(self, key, value)
        return self

    def _resolve_loss(self) -> Loss:
        if isinstance(self.loss, str) and self.loss.strip().lower() == "fbeta":
            return get_loss("fbeta", beta=self.beta)
        return get_loss(self.loss)

    def _design(self, X) -> np.ndarray:
        """X with the constant intercept column appended (if any)."""
        if self.fit_intercept:
            return np.hstack([X, np.ones((X.shape[0], 1))])
        return X

    @staticmethod
    def _check_X(X, n_features=None) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n_samples, n_features), got shape {X.shape}")
        if n_features is not None and X.shape[1] != n_features:
            raise ValueError(f"X has {X.shape[1]} features, but the model was fitted "
                             f"with {n_features}")
        if not np.all(np.isfinite(X)):
            raise ValueError("X must be finite (no NaN or inf)")
        return X

    # ------------------------------------------------------------------
    def fit(self, X, y) -> "MultivariateSVM":
        """Train on points X and binary labels y.

        Parameters
        ----------
        X : array_like of float, shape (n, d)
        y : array_like, shape (n,)
            Labels in {0, 1}.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad shapes or values, bad hyper-parameters, or only one class
            present with the IoU / F-beta losses.
        """
        X = self._check_X(X)
        n, d = X.shape
        if n == 0:
            raise ValueError("X has no samples")
        y = np.asarray(y)
        if y.shape != (n,):
            raise ValueError(f"y must have shape ({n},) to match X, got {y.shape}")
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("y must hold labels 0 or 1")
        y = y.astype(np.uint8)
        if isinstance(self.C, (bool, np.bool_)) or not (np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be a positive finite number, got {self.C!r}")
        loss = self._resolve_loss()
        n_pos = int(y.sum())
        if isinstance(loss, _TWO_CLASS_LOSSES) and (n_pos == 0 or n_pos == n):
            # With no positive, TP = 0 for every labelling: the loss is 1 for
            # all but the all-zero one (0 only by the 0/0 convention). With no
            # negative, FP = 0 always and the problem is a one-class one.
            raise ValueError(
                f"loss {loss!r} needs at least one positive and one negative example; "
                f"y has {n_pos} positive and {n - n_pos} negative")

        Z = self._design(X)
        # One structured example: all points, no edges, no pairwise features.
        graph = Graph(unary=Z, edges=np.zeros((0, 2), np.int64), pairwise=np.zeros((0, 0)))
        learner = StructuredSVM(loss=loss, C=float(self.C), solver="oneslack",
                                scope="dataset", weights="count", pairwise=False,
                                oracle=bl2, tol=self.tol, max_iter=self.max_iter,
                                progress=False)
        learner.fit([graph], [y])
        w = np.asarray(learner.w_, dtype=np.float64)
        if not learner.converged_:
            warnings.warn(f"MultivariateSVM did not converge to tol={self.tol} in "
                          f"max_iter={self.max_iter} iterations", RuntimeWarning, stacklevel=2)

        self.coef_ = w[:d].copy()
        self.intercept_ = float(w[d]) if self.fit_intercept else 0.0
        self.loss_ = loss
        self.n_iter_ = learner.n_iter_
        self.converged_ = learner.converged_
        self.n_features_in_ = d
        self.objective_ = self._objective(Z, y, w, loss)
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
            raise RuntimeError("this MultivariateSVM is not fitted yet; call fit first")

    def decision_function(self, X) -> np.ndarray:
        """``X @ coef_ + intercept_``, shape (m,)."""
        self._check_fitted()
        X = self._check_X(X, self.n_features_in_)
        return X @ self.coef_ + self.intercept_

    def predict(self, X) -> np.ndarray:
        """Labels ``decision_function(X) > 0`` as int, shape (m,)."""
        return (self.decision_function(X) > 0).astype(int)
