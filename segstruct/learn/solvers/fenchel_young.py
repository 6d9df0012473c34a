"""A linear pairwise MRF trained on the Fenchel-Young (projection) loss by L-BFGS.

Blondel, Martins & Niculae (2019/2020) train a structured model by the loss
``L_C(theta; y)`` of a projection onto a convex set ``C`` that holds every
encoded labelling (``segstruct.inference.projection``: parts
``phi(y) = (y_i ; y_i y_j)``, sets ``cube``, ``budget``, ``marginal``). Here
the scores of image k's parts are linear in the weights ``w = (w_u, w_p)``::

    theta_u = 2 U w_u + S P w_p + 1/2,     theta_p = -2 P w_p + 1/2,

with U (N, Du) the unary and P (E, Dp) the pairwise features and S (N, E)
the node-edge incidence (S[i, e] = 1 when node i is an end of edge e). The
linear part is the model's own score written on parts:
``<theta - 1/2, phi(y)> = sum_i (2 y_i - 1) u_i + sum_E [y_i != y_j] p_ij
+ sum_i u_i`` (u = U w_u, p = P w_p; docs/design.md, "Model"), so the
graph cut MAP of the model, ``argmax_y score(y)``, is

    argmax_y <2 theta - 1, phi(y)>,

the decoding calibrated for the expected number of wrong parts when theta
is read as the parts' probabilities (``decode_parts``): the offset 1/2 puts
the model's decision boundary u_i = 0 at a lone node's theta_i = 1/2, where
rounding the projection ``mu_i = proj(theta)_i`` changes its label. Without
the offset a model trained to push foreground to theta >= 1 and background
to theta <= 0 would label every node with theta in (0, 1) foreground.
Since w_p <= 0 (as every learner here keeps it), ``theta_p >= 1/2`` and the
MAP stays one exact graph cut.

The objective is

    F(w) = 1/2 ||w||^2 + svm_C * R(w),   w_p <= 0,

with R the loss of the training set: ``sum_k L_k`` (scope ``"dataset"``) or
the mean of the images' losses ``mean_k L_k`` (``"image"``). Each L_k is a
sum over image k's parts, as the Hamming loss is a sum over its superpixels,
so a C scales the loss as it scales bl1's Hamming hinge at the same scope
(the loss is decomposable: the scopes only weigh the images differently). Each L_k is convex and
1-smooth in theta (Blondel et al., Prop. 2), so F is 1-strongly convex and
smooth; L-BFGS-B (scipy) handles the bound w_p <= 0 directly. The stopping
rule is certified: for a 1-strongly convex F, ``F(w) - min F <= ||G||^2 / 2``
with G the smallest element of the subdifferential of F plus the bound's
indicator (the gradient with its components zeroed where w_j = 0 is at its
bound and the gradient pushes past it), and training stops once that bound is
at most ``tol``.

Only numpy, scipy, ``segstruct.inference`` and the parameter check of
``segstruct.learn.estimators.base`` are used (plain arrays in and out), so this solver
is tested alone.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import scipy.optimize
import scipy.sparse

from segstruct.inference.projection import SETS, project
from segstruct.learn._params import POSITIVE, SCOPES, check_param

__all__ = ["BoundedObjective", "ProjectionFit", "ProjectionProblem", "fit_lbfgs", "SETS",
           "SCOPES"]


#: The offset of every part's score (module docstring).
OFFSET = 0.5


class _Certified(Exception):
    """Raised inside the objective to stop L-BFGS-B at a certified point."""


@dataclass
class ProjectionFit:
    """Result of :func:`fit_lbfgs`.

    Attributes
    ----------
    w : ndarray of float64, shape (Du + Dp,)
        The weights (w_p <= 0).
    objective : float
        ``F(w)``.
    bound : float
        ``||G||^2 / 2 >= F(w) - min F`` (module docstring).
    n_iter : int
        Objective evaluations (one projection of every image each).
    converged : bool
        ``bound <= tol``.
    history : list of float
        ``F`` at every evaluation.
    seconds_history : list of float
        Seconds since the start at every evaluation.
    """

    w: np.ndarray
    objective: float
    bound: float
    n_iter: int
    converged: bool
    history: list = field(default_factory=list)
    seconds_history: list = field(default_factory=list)


class BoundedObjective:
    """The certificate and bounds of an objective ``F`` that is 1-strongly
    convex in weights (w_u, w_p) with w_p <= 0 (``n_u``, ``n_p`` set by the
    subclass)."""

    n_u: int
    n_p: int

    @staticmethod
    def check_data(unary, targets, svm_C, scope) -> None:
        """The checks of every such problem's examples, constant and scope."""
        if scope not in SCOPES:
            raise ValueError(f"unknown loss scope {scope!r}; use one of {SCOPES}")
        check_param("svm_C", svm_C, [POSITIVE])
        if len(unary) == 0 or len(unary) != len(targets):
            raise ValueError(f"{len(unary)} unary arrays and {len(targets)} target arrays")

    @property
    def dim(self) -> int:
        return self.n_u + self.n_p

    def certificate(self, w: np.ndarray, grad: np.ndarray) -> float:
        """``||G||^2 / 2``, a bound on ``F(w) - min F`` (module docstring)."""
        g = np.array(grad, np.float64)
        pinned = np.zeros(self.dim, bool)
        pinned[self.n_u:] = (w[self.n_u:] >= 0.0) & (g[self.n_u:] < 0.0)
        g[pinned] = 0.0
        return 0.5 * float(g @ g)

    def bounds(self) -> list:
        """L-BFGS-B's bounds: w_u free, w_p <= 0."""
        return [(None, None)] * self.n_u + [(None, 0.0)] * self.n_p


class ProjectionProblem(BoundedObjective):
    """``F`` and its gradient on a list of images (module docstring).

    Parameters
    ----------
    unary : list of ndarray, shape (N_k, Du)
    targets : list of ndarray, shape (N_k,), values in {0, 1}
    pairwise : list of ndarray, shape (E_k, Dp), optional
        None: a unary-only model (no edge parts).
    edges : list of ndarray of int, shape (E_k, 2)
        Needed with ``pairwise``.
    svm_C : float > 0
        The objective's weight of the loss (module docstring): the
        estimator's C in its units, turned into the objective's own.
    scope : {"image", "dataset"}
    kind : {"cube", "budget", "marginal"}
        The set ``C`` of :mod:`segstruct.inference.projection`. The budget
        is ``sum_i mu_i <= f N_k`` with f the largest foreground fraction
        of the training targets (so every target is inside it).
    scope : {"image", "dataset"}
    weights : list of ndarray, shape (N_k,), optional
        Node weights a_i >= 0 (``"cube"`` only: its projection is separable,
        so a weighted sum of the parts' losses is still the loss of a
        projection). Node i's part counts a_i times, an edge's part the mean
        of its ends' weights. Default: every node 1.
    projection_options : dict, optional
        Passed to ``project`` (e.g. ``tol`` of ``"marginal"``).
    """

    def __init__(self, unary, targets, pairwise=None, edges=None, *, svm_C, scope,
                 kind="cube", weights=None, projection_options=None):
        if kind not in SETS:
            raise ValueError(f"unknown projection set {kind!r}; use one of {SETS}")
        self.check_data(unary, targets, svm_C, scope)
        self.svm_C, self.kind, self.scope = float(svm_C), kind, scope
        self.options = dict(projection_options or {})
        self.U = [np.asarray(x, np.float64) for x in unary]
        self.t = [np.asarray(t, np.float64).ravel() for t in targets]
        for k, (x, t) in enumerate(zip(self.U, self.t)):
            if x.ndim != 2 or x.shape[0] != t.size:
                raise ValueError(f"image {k}: unary has shape {x.shape}, targets {t.shape}")
            if not np.all((t == 0) | (t == 1)):
                raise ValueError(f"image {k}: targets must be 0 or 1")
        self.n_u = self.U[0].shape[1]
        if weights is not None and kind != "cube":
            raise ValueError(f"node weights need the separable cube, not {kind!r}")
        self.a = [np.ones(t.size) if weights is None else np.asarray(a, np.float64).ravel()
                  for t, a in zip(self.t, [None] * len(self.t) if weights is None else weights)]
        for k, (a, t) in enumerate(zip(self.a, self.t)):
            if a.shape != t.shape or not np.all(np.isfinite(a) & (a >= 0)) or a.sum() <= 0:
                raise ValueError(f"image {k}: node weights must be {t.size} finite values "
                                 ">= 0, not all 0")
        # a sum over the training set, or the mean of the images' sums: the
        # scales of the Hamming hinges at the two scopes, so C means the same
        self.scale = 1.0 / len(self.t) if scope == "image" else 1.0
        self.has_pairwise = pairwise is not None
        if self.has_pairwise:
            if edges is None or len(edges) != len(unary) or len(pairwise) != len(unary):
                raise ValueError("pairwise features need one edge array per image")
            self.P = [np.asarray(p, np.float64).reshape(len(e), -1)
                      for p, e in zip(pairwise, edges)]
            self.E = [np.asarray(e, np.int64).reshape(-1, 2) for e in edges]
            self.n_p = self.P[0].shape[1]
        else:
            self.P = [np.zeros((0, 0)) for _ in self.U]
            self.E = [np.zeros((0, 2), np.int64) for _ in self.U]
            self.n_p = 0
        # S[i, e] = 1 at both ends of edge e
        self.S = [scipy.sparse.csr_matrix(
            (np.ones(2 * len(e)), (e.T.ravel(), np.tile(np.arange(len(e)), 2))),
            shape=(t.size, len(e))) for e, t in zip(self.E, self.t)]
        self.t_p = [t[e[:, 0]] * t[e[:, 1]] for t, e in zip(self.t, self.E)]
        self.a_p = [0.5 * (a[e[:, 0]] + a[e[:, 1]]) for a, e in zip(self.a, self.E)]
        # each image's projection options: the budget's bound is per image
        self._image_options = [self.options] * len(self.t)
        if kind == "budget" and "upper" not in self.options:
            fraction = max(float(t.mean()) for t in self.t)
            self._image_options = [{**self.options, "upper": fraction * t.size}
                                   for t in self.t]

    def scores(self, w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(theta_u (N_k,), theta_p (E_k,)) of image k."""
        u = self.U[k] @ w[:self.n_u]
        if not self.has_pairwise:
            return 2.0 * u + OFFSET, np.zeros(0)
        p = self.P[k] @ w[self.n_u:]
        return 2.0 * u + self.S[k] @ p + OFFSET, -2.0 * p + OFFSET

    def value_and_grad(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """``(F(w), grad F(w))``."""
        w = np.asarray(w, np.float64)
        risk, grad = 0.0, np.zeros(self.dim)
        for k in range(len(self.t)):
            th_u, th_p = self.scores(w, k)
            proj = project(th_u, th_p, self.E[k], self.kind, **self._image_options[k])
            y_u, y_p = self.t[k], self.t_p[k]
            # L = ||phi(y) - theta||^2/2 - ||mu - theta||^2/2, gradient mu - phi(y);
            # part by part (weighted) for the separable cube, a sum for the others
            a_u, a_p = self.a[k], self.a_p[k]
            loss = 0.5 * (a_u @ ((y_u - th_u) ** 2 - (proj.unary - th_u) ** 2)
                          + a_p @ ((y_p - th_p) ** 2 - (proj.pairwise - th_p) ** 2))
            r_u = self.scale * a_u * (proj.unary - y_u)
            r_p = self.scale * a_p * (proj.pairwise - y_p)
            risk += self.scale * loss
            grad[:self.n_u] += 2.0 * (self.U[k].T @ r_u)
            if self.has_pairwise:
                grad[self.n_u:] += self.P[k].T @ (self.S[k].T @ r_u - 2.0 * r_p)
        return 0.5 * float(w @ w) + self.svm_C * risk, w + self.svm_C * grad


class Objective(Protocol):
    """What :func:`fit_lbfgs` needs of a problem (``ProjectionProblem``,
    ``segstruct.learn.solvers.likelihood.LikelihoodProblem``)."""

    @property
    def dim(self) -> int: ...

    def value_and_grad(self, w: np.ndarray) -> tuple[float, np.ndarray]: ...

    def certificate(self, w: np.ndarray, grad: np.ndarray) -> float: ...

    def bounds(self) -> list: ...


def fit_lbfgs(problem: Objective, tol: float = 1e-4,
              max_iter: int = 1000) -> ProjectionFit:
    """Minimise ``problem``'s F by L-BFGS-B from w = 0 until the certified
    bound ``F(w) - min F <= tol`` or ``max_iter`` evaluations.

    Parameters
    ----------
    problem : Objective, e.g. a ProjectionProblem
    tol : float
        In units of F.
    max_iter : int
        Objective evaluations at most (each projects every image once).

    Returns
    -------
    ProjectionFit
    """
    if not (tol > 0 and max_iter >= 1):
        raise ValueError("tol must be > 0 and max_iter >= 1")
    start = time.perf_counter()
    history, seconds = [], []
    best: dict[str, Any] = {"w": np.zeros(problem.dim), "f": np.inf, "bound": np.inf}

    def fun(w):
        f, g = problem.value_and_grad(w)
        history.append(float(f))
        seconds.append(time.perf_counter() - start)
        bound = problem.certificate(w, g)
        if f < best["f"] or bound <= tol:
            best.update(w=np.array(w), f=float(f), bound=bound)
        if bound <= tol or len(history) >= max_iter:
            raise _Certified
        return f, g

    try:
        # L-BFGS-B's own stopping rules are set below ours, which is certified.
        # It can still stop early: its line search fails on this piecewise-
        # quadratic F (the projection's kinks, with long pairwise features;
        # seen on COCO's chairs, early and far above the bound). Each such
        # stop restarts it from the best point, with its
        # curvature memory cleared, while a restart still lowers F.
        w0 = np.zeros(problem.dim)
        while True:
            before = best["f"]
            scipy.optimize.minimize(fun, w0, jac=True, method="L-BFGS-B",
                                    bounds=problem.bounds(),
                                    options={"maxiter": max_iter, "maxfun": max_iter + 1,
                                             "ftol": 1e-15, "gtol": 1e-12, "maxcor": 20})
            if not best["f"] < before:
                break
            w0 = best["w"]
    except _Certified:
        pass
    return ProjectionFit(w=best["w"], objective=best["f"], bound=best["bound"],
                         n_iter=len(history), converged=bool(best["bound"] <= tol),
                         history=history, seconds_history=seconds)
