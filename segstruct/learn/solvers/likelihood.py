"""The regularised conditional log-likelihood of a pairwise binary CRF.

The model's score (docs/design.md, "Model") read as a distribution,
``p(y | x; w) = exp(score_w(y)) / Z_w`` with
``score_w(y) = w . Psi(x, y) = sum_i (2 y_i - 1) u_i + sum_E [y_i != y_j] p_ij``,
is trained by

    F(w) = 1/2 ||w||^2 + svm_C * R(w),   w_p <= 0,

with R the negative log-likelihood of the training targets, summed over the
training set (scope ``"dataset"``) or averaged over its images (``"image"``):
the scales at which a Hamming hinge counts at the two scopes, so that C
means what it means for the SSVMs (a sum over superpixels; the lectures' CRF
objective with the SSVM's regulariser). Keeping w_p <= 0 keeps the MAP one
graph cut, as for every learner here. Two likelihoods:

``"pseudo"`` (Besag's pseudo-likelihood)
    ``R = sum_i a_i -log p(t_i | t_neighbours)``, each factor a logistic
    of ``l_i = 2 u_i + sum_{j ~ i} p_ij (1 - 2 t_j)``. Exact and cheap,
    convex, and it takes node weights a_i (pixels). Its gradient is exact,
    so F is 1-strongly convex and ``||G||^2 / 2`` certifies ``F - min F``
    (as in :mod:`segstruct.learn.solvers.fenchel_young`).
``"bethe"`` (the likelihood with log Z by belief propagation)
    ``R = log Z_w - score_w(t)``, log Z and the expected features
    ``E_p[Psi] = (U^T (2 q - 1); P^T c)`` (q node, c edge-cut marginals)
    from :func:`segstruct.inference.marginals.loopy_bp`: exact on a forest,
    the Bethe approximation on loopy superpixel graphs, where the gradient
    is that of the approximation only once the messages converged; the
    certificate is then approximate too. Every superpixel counts once.

Numbers in, numbers out: only numpy, scipy, ``segstruct.inference`` and the
parameter checks are used, so the solver is tested alone (finite
differences, and log Z and the marginals against enumeration).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse

from segstruct.inference.marginals import loopy_bp
from segstruct.learn.solvers.fenchel_young import BoundedObjective

__all__ = ["LIKELIHOODS", "LikelihoodProblem"]

#: The likelihoods (module docstring).
LIKELIHOODS = ("pseudo", "bethe")


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class LikelihoodProblem(BoundedObjective):
    """``F`` and its gradient on a list of images (module docstring); the
    interface of :func:`segstruct.learn.solvers.fenchel_young.fit_lbfgs` (its
    certificate and bounds are :class:`BoundedObjective`'s).

    Parameters
    ----------
    unary : list of ndarray, shape (N_k, Du)
    targets : list of ndarray, shape (N_k,), values in {0, 1}
    pairwise : list of ndarray, shape (E_k, Dp), optional
        None: a unary-only model (independent nodes; both likelihoods are
        then the exact one).
    edges : list of ndarray of int, shape (E_k, 2)
        Needed with ``pairwise``.
    svm_C : float > 0
        The objective's weight of the likelihood (module docstring).
    scope : {"image", "dataset"}
    likelihood : {"pseudo", "bethe"}
    weights : list of ndarray, shape (N_k,), optional
        Node weights a_i >= 0, ``"pseudo"`` only; default 1.
    bp_options : dict, optional
        Passed to ``loopy_bp`` (``max_iter``, ``tol``, ``damping``).
    """

    def __init__(self, unary, targets, pairwise=None, edges=None, *, svm_C, scope,
                 likelihood="pseudo", weights=None, bp_options=None):
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"unknown likelihood {likelihood!r}; use one of {LIKELIHOODS}")
        self.check_data(unary, targets, svm_C, scope)
        if weights is not None and likelihood != "pseudo":
            raise ValueError("node weights need the pseudo-likelihood: a likelihood of "
                             "labellings counts every superpixel once")
        self.svm_C, self.likelihood = float(svm_C), likelihood
        self.bp_options = {"max_iter": 100, "tol": 1e-6, **(bp_options or {})}
        U = [np.asarray(x, np.float64) for x in unary]
        ts = [np.asarray(t, np.float64).ravel() for t in targets]
        for k, (x, t) in enumerate(zip(U, ts)):
            if x.ndim != 2 or x.shape[0] != t.size:
                raise ValueError(f"image {k}: unary has shape {x.shape}, targets {t.shape}")
            if not np.all((t == 0) | (t == 1)):
                raise ValueError(f"image {k}: targets must be 0 or 1")
        a = [np.ones(t.size) for t in ts] if weights is None else \
            [np.asarray(w, np.float64).ravel() for w in weights]
        for k, (w, t) in enumerate(zip(a, ts)):
            if w.shape != t.shape or not np.all(np.isfinite(w) & (w >= 0)):
                raise ValueError(f"image {k}: node weights must be {t.size} finite values >= 0")
        # every image in one disjoint union: one vectorised pass over all of them
        offsets = np.cumsum([0] + [t.size for t in ts])
        self.U = np.concatenate(U)
        self.t = np.concatenate(ts)
        self.a = np.concatenate(a)
        self.n_u = self.U.shape[1]
        self.has_pairwise = pairwise is not None
        if self.has_pairwise:
            if edges is None or len(edges) != len(unary) or len(pairwise) != len(unary):
                raise ValueError("pairwise features need one edge array per image")
            es = [np.asarray(e, np.int64).reshape(-1, 2) for e in edges]
            self.P = np.concatenate([np.asarray(p, np.float64).reshape(len(e), -1)
                                     for p, e in zip(pairwise, es)])
            self.edges = np.concatenate([e + o for e, o in zip(es, offsets)])
            self.n_p = self.P.shape[1]
        else:
            self.P = np.zeros((0, 0))
            self.edges = np.zeros((0, 2), np.int64)
            self.n_p = 0
        # the Hamming hinges' scales at the two scopes (module docstring)
        self.scale = 1.0 / len(ts) if scope == "image" else 1.0
        i, j = self.edges[:, 0], self.edges[:, 1]
        n = self.t.size
        # B[i, e] = 1 - 2 t_j for edge e = (i, j) (and symmetrically): l = 2u + B p
        self.B = scipy.sparse.csr_matrix(
            (np.concatenate([1 - 2 * self.t[j], 1 - 2 * self.t[i]]),
             (np.concatenate([i, j]), np.tile(np.arange(len(i)), 2))), shape=(n, len(i)))
        self.cut_t = (self.t[i] != self.t[j]).astype(np.float64)
        self._messages = None          # BP's last messages: a warm start

    def potentials(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(u (N,), p (E,)) of the union of the training images."""
        u = self.U @ w[:self.n_u]
        p = self.P @ w[self.n_u:] if self.has_pairwise else np.zeros(0)
        return u, p

    def risk(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """(R(w), grad R(w)) before the scope's scale."""
        u, p = self.potentials(w)
        grad = np.zeros(self.dim)
        if self.likelihood == "pseudo" or not self.has_pairwise:
            ell = 2.0 * u + (self.B @ p if self.has_pairwise else 0.0)
            value = float(self.a @ (_softplus(ell) - self.t * ell))
            r = self.a * (_sigmoid(ell) - self.t)
            grad[:self.n_u] = 2.0 * (self.U.T @ r)
            if self.has_pairwise:
                grad[self.n_u:] = self.P.T @ (self.B.T @ r)
            return value, grad
        m = loopy_bp(u, self.edges, p, messages=self._messages, **self.bp_options)
        self._messages = m.messages
        score_t = float((2.0 * self.t - 1.0) @ u + self.cut_t @ p)
        grad[:self.n_u] = self.U.T @ (2.0 * (m.node - self.t))
        grad[self.n_u:] = self.P.T @ (m.cut - self.cut_t)
        return m.log_z - score_t, grad

    def value_and_grad(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """``(F(w), grad F(w))``."""
        w = np.asarray(w, np.float64)
        value, grad = self.risk(w)
        c = self.svm_C * self.scale
        return 0.5 * float(w @ w) + c * value, w + c * grad
