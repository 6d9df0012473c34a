"""The per-image (n-slack) structural SVM problem the first-order learners
share (:mod:`segstruct.learn.solvers.first_order`, :mod:`segstruct.learn.solvers.bcfw`), and
what they return.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from segstruct.inference import loss_augmented
from segstruct.inference.losses import Loss
from segstruct.learn._problem import resolve_loss, targets_and_node_weights
from segstruct.learn._params import POSITIVE, check_param
from segstruct.feature_map import MRFModel

#: The first-order learners' iterate averaging (SGD) and image order.
AVERAGING = ("weighted", "uniform", "none")
SAMPLING = ("uniform", "permutation")

#: ``callback(iteration, w)``, called after every update with the new iterate.
IterateCallback = Callable[[int, np.ndarray], None]
#: ``on_trace(trace)``, called after every evaluation with the trace so far
#: (the list of dicts a LearnerResult's ``trace`` holds).
TraceCallback = Callable[[list], None]


@dataclass
class ImageScopeProblem:
    """The per-image SSVM problem: examples, loss, oracle and C.

    Attributes
    ----------
    feature_map : MRFModel, the joint feature map.
    xs, ts, ws : lists of the n inputs, (N_i,) targets and (N_i,) node weights.
    loss : Loss, resolved (kappa filled in).
    oracle : ``oracle(u, edges, p, t, a, loss) -> InferenceResult``.
    psi_true : (n, D) Psi(x_i, t_i).
    nonpositive : (P,) int, indices of the weights kept <= 0 (the pairwise block).
    svm_C : float, the objective's weight of the *mean* hinge.
    """

    feature_map: MRFModel
    xs: list
    ts: list
    ws: list
    loss: Loss
    oracle: Callable
    psi_true: np.ndarray
    nonpositive: np.ndarray
    svm_C: float

    @classmethod
    def from_data(cls, X, Y, *, C=0.5, loss="adjusted_hamming", kappa=None,
                  node_weights="count", pairwise=True, oracle=None) -> "ImageScopeProblem":
        """Build the problem as ``StructuredSVM(scope="image")`` does.

        The settings mean what they mean for :class:`StructuredSVM`: the
        same targets and node weights (``targets_and_node_weights``), the
        same kappa for ``loss="adjusted_hamming"`` (the training set's
        foreground / background ratio when None), the graph cut as the
        default oracle, and a deep copy of ``oracle`` so that its warm-start
        state belongs to this run.

        Parameters
        ----------
        X : sequence of n inputs with ``unary``, ``edges``, ``pairwise``.
        Y : sequence of n (N_i,) targets or (N_i, 2) pixel counts.
        C : float > 0, default 0.5 (the paper's C = 1)
            The objective's own weight of the mean hinge (an estimator's
            ``svm_C_``): the solvers on plain arrays take no C units.
        """
        check_param("C", C, [POSITIVE])
        if len(X) != len(Y):
            raise ValueError(f"{len(X)} inputs but {len(Y)} label arrays")
        if len(X) == 0:
            raise ValueError("no training examples")
        ts, ws = map(list, zip(*(targets_and_node_weights(y, node_weights) for y in Y)))
        model = MRFModel(pairwise=pairwise)
        xs = list(X)
        return cls(feature_map=model, xs=xs, ts=ts, ws=ws, loss=resolve_loss(loss, kappa, ts, ws),
                   oracle=copy.deepcopy(oracle or loss_augmented),
                   psi_true=np.stack([model.joint_feature(x, t) for x, t in zip(xs, ts)]),
                   nonpositive=np.flatnonzero(model.upper_bounds(xs[0]) == 0), svm_C=float(C))

    @property
    def n(self) -> int:
        """Number of images."""
        return len(self.xs)

    @property
    def dim(self) -> int:
        """Number of weights D."""
        return int(self.psi_true.shape[1])

    def project(self, w: np.ndarray) -> np.ndarray:
        """Pi_K(w): a copy of (D,) ``w`` with the pairwise block clipped at 0."""
        w = np.array(w, np.float64)
        w[self.nonpositive] = np.minimum(w[self.nonpositive], 0.0)
        return w

    def constraint(self, i: int, w: np.ndarray) -> tuple[np.ndarray, float]:
        """The most violated constraint of image ``i`` at ``w`` (one oracle call).

        Returns
        -------
        g : (D,) g_i(y_i) = Psi(x_i, t_i) - Psi(x_i, y_i).
        loss : float, L_i(y_i); ``loss - g . w`` is H_i(w) for an exact oracle.
        """
        x = self.xs[i]
        u, p = self.feature_map.potentials(x, w)
        res = self.oracle(u, x.edges, p, self.ts[i], self.ws[i], self.loss)
        g = self.psi_true[i] - self.feature_map.joint_feature(x, res.labels)
        loss = float(res.loss)
        if loss - g @ w < 0:
            # an approximate oracle did worse than the training labelling
            # (hinge 0): take that one, as the cutting-plane learner does
            return np.zeros_like(g), 0.0
        return g, loss

    def evaluate(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every image's constraint at ``w`` (n oracle calls).

        Returns
        -------
        gs : (n, D), losses : (n,), hinges : (n,) H_i(w) >= 0.
        """
        gs = np.empty((self.n, self.dim))
        losses = np.empty(self.n)
        for i in range(self.n):
            gs[i], losses[i] = self.constraint(i, w)
        return gs, losses, losses - gs @ w

    def primal(self, w: np.ndarray, hinges: np.ndarray | None = None) -> float:
        """F(w) = 1/2 ||w||^2 + C mean_i H_i(w); ``hinges`` from :meth:`evaluate`."""
        if hinges is None:
            hinges = self.evaluate(w)[2]
        return 0.5 * float(w @ w) + self.svm_C * float(np.mean(hinges))


@dataclass
class LearnerResult:
    """What a learner returns.

    Attributes
    ----------
    w : (D,) the weights returned (best evaluated iterate for subgradient
        descent, the average for SGD, Pi_K(v) for BCFW); ``w[nonpositive] <= 0``.
    primal : F(w).
    trace : list of dict, one per evaluation: ``iteration`` (updates so
        far), ``epoch``, ``oracle_calls`` (the learner's own), ``eval_calls``
        (spent on evaluating the objective), ``primal`` (at the point
        evaluated), ``seconds`` (wall clock since the start, evaluations
        included); BCFW adds ``dual`` and ``gap``, subgradient descent
        ``best_primal``.
    n_iter : number of updates of w.
    converged : BCFW: gap <= C tol; subgradient descent: a step left w in
        place (0 is a projected subgradient, so w is optimal); SGD: False.
    gap, dual : BCFW's last duality gap and dual value (None otherwise).
    seconds : wall-clock time of the whole run.
    """

    w: np.ndarray
    primal: float
    trace: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    gap: float | None = None
    dual: float | None = None
    seconds: float = 0.0


def image_scope_problem(X, Y, settings: dict) -> ImageScopeProblem:
    return ImageScopeProblem.from_data(X, Y, **settings)


def check_epochs(max_epochs: int, eval_every: int = 1) -> None:
    if not (int(max_epochs) == max_epochs and max_epochs >= 1):
        raise ValueError(f"max_epochs must be a positive integer, got {max_epochs}")
    if not (int(eval_every) == eval_every and eval_every >= 1):
        raise ValueError(f"eval_every must be a positive integer, got {eval_every}")
