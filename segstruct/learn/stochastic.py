"""Subgradient, stochastic subgradient and block-coordinate Frank-Wolfe learners
for the margin-rescaled structural SVM at the per-image (n-slack) loss scope.

The objective is exactly the one :class:`segstruct.learn.ssvm.StructuredSVM`
minimises with ``scope="image"`` (either solver), so the optima are the same:

    F(w) = 1/2 ||w||^2 + (C / n) sum_{i=1..n} H_i(w),    subject to  w_p <= 0,
    H_i(w) = max_y  Delta(t_i, y) + w . Psi(x_i, y) - w . Psi(x_i, t_i)

The hinges are *averaged* over the n images (SVM-struct's C / n per slack;
the paper's Eq. 8 writes ||w||^2 + C xi, so its C = 1 is our C = 0.5), and
the pairwise block w_p is kept <= 0 so that loss-augmented inference stays
submodular (docs/design.md, "The model"). Since y = t_i is a candidate,
H_i >= 0; like the cutting-plane learner, an oracle answer whose hinge is
negative (an approximate oracle) is replaced by y = t_i.

Notation: g_i(y) = Psi(x_i, t_i) - Psi(x_i, y) (D,) and L_i(y) = Delta(t_i, y),
so H_i(w) = max_y L_i(y) - w . g_i(y), and the oracle's answer y_i gives the
subgradient -g_i(y_i) of H_i at w. K = {w : w_p <= 0}, Pi_K clips w_p at 0.

Learners
--------
:func:`subgradient_descent`
    Projected full subgradient descent: F is 1-strongly convex, so the
    lecture's step 1 / (lambda t) (lambda = 1 / C once F is divided by C)
    gives ``w <- Pi_K((1 - 1/t) w + (1/t) (C/n) sum_i g_i)``; the best
    iterate evaluated is kept (the iterates do not decrease F monotonically).
:func:`stochastic_subgradient`
    Projected SGD over images, one oracle call a step, with the step
    2 / (t + 1) and the t-weighted average of Lacoste-Julien, Schmidt & Bach
    (2012), whose expected error is O(1/t) (no log t); ``averaging="uniform"``
    gives the lecture's step 1 / t with the plain average.
:func:`bcfw`
    Block-coordinate Frank-Wolfe on the dual (Lacoste-Julien, Jaggi, Schmidt
    & Pletscher, ICML 2013, Algorithm 4), with the bound w_p <= 0 (below),
    stopped by its duality gap.

BCFW with the constraint w_p <= 0
---------------------------------
Write the dual variables alpha_i as distributions over the labellings of
image i, and v(alpha) = (C/n) sum_{i,y} alpha_iy g_i(y) (the textbook's
A alpha), b . alpha = (C/n) sum_{i,y} alpha_iy L_i(y). The Lagrangian is
1/2 ||w||^2 - w . v + b . alpha, minimised over w in K (not over all of R^D)::

    min_{w in K} 1/2 ||w - v||^2 - 1/2 ||v||^2   at  w = Pi_K(v),

and since K is a closed convex cone, v = Pi_K(v) + Pi_{K polar}(v) with the
two parts orthogonal (Moreau), so the dual is

    D(alpha) = b . alpha - 1/2 ||Pi_K(v(alpha))||^2.

It is concave and smooth: grad_v 1/2 ||Pi_K v||^2 = Pi_K v, which is
1-Lipschitz (Pi_K is non-expansive), so BCFW's curvature constants are no
larger than without the bound and its O(1/k) guarantee carries over. The
gradient with respect to alpha_iy is (C/n) (L_i(y) - w . g_i(y)) at
w = Pi_K(v): the block linear oracle is loss-augmented inference at w, and
w has w_p <= 0, so the graph cut stays exact. The duality gap is

    gap = F(w) - D(alpha) = ||w||^2 + (C/n) sum_i H_i(w) - b . alpha,

which equals the Frank-Wolfe gap (C/n) sum_i H_i(w) - b . alpha + w . v
because w . v = ||Pi_K v||^2 (orthogonality). It bounds F(w) - F* when the
oracle is exact (with an approximate one it is only an estimate).

As in Algorithm 4, each block keeps its share v_i = (C/n) sum_y alpha_iy g_i(y)
and l_i = (C/n) sum_y alpha_iy L_i(y) (the paper's w_i, l_i); they start at the
vertex y = t_i (v_i = 0, l_i = 0). A step for block i moves (v_i, l_i) towards
(s, l_s) = (C/n) (g_i(y_i), L_i(y_i)) by gamma in [0, 1]; with d = s - v_i
and e = l_s - l_i the dual along the step is

    phi(gamma) = const + gamma e - 1/2 ||Pi_K(v + gamma d)||^2,
    phi'(gamma) = e - Pi_K(v + gamma d) . d.

phi is a concave piecewise quadratic: a unary coordinate always contributes
-1/2 (v_j + gamma d_j)^2, a pairwise one -1/2 min(v_j + gamma d_j, 0)^2, which
changes form only where v_j + gamma d_j crosses 0, at gamma_j = -v_j / d_j.
phi' is continuous, piecewise linear and non-increasing. The exact line
search (:func:`bcfw_line_search`) returns 0 when phi'(0) <= 0, 1 when
phi'(1) >= 0, and otherwise bisects over the sorted breakpoints in (0, 1)
for the segment where phi' changes sign; on it the set S of coordinates in
the quadratic part is fixed and

    gamma = (e - v_S . d_S) / ||d_S||^2,

which without pairwise breakpoints (or without the bound) is the textbook
step (lambda (w_i - w_s) . w - l_i + l_s) / (lambda ||w_i - w_s||^2).

Every learner here works on the problem the cutting-plane learner builds
(:class:`ImageScopeProblem`: the same targets, weights, loss and oracle), is
seeded and deterministic, and returns a :class:`LearnerResult` with a trace
of the objective against oracle calls and wall-clock time.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from segstruct.inference import loss_augmented
from segstruct.inference.losses import Loss
from segstruct.learn._problem import resolve_loss, targets_and_node_weights
from segstruct.learn._params import POSITIVE, check_param
from segstruct.model import MRFModel

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
    model : MRFModel
    xs, ts, ws : lists of the n inputs, (N_i,) targets and (N_i,) node weights.
    loss : Loss, resolved (kappa filled in).
    oracle : ``oracle(u, edges, p, t, a, loss) -> InferenceResult``.
    psi_true : (n, D) Psi(x_i, t_i).
    nonpositive : (P,) int, indices of the weights kept <= 0 (the pairwise block).
    C : float, the weight of the *mean* hinge.
    """

    model: MRFModel
    xs: list
    ts: list
    ws: list
    loss: Loss
    oracle: Callable
    psi_true: np.ndarray
    nonpositive: np.ndarray
    C: float

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
        """
        check_param("C", C, [POSITIVE])
        if len(X) != len(Y):
            raise ValueError(f"{len(X)} inputs but {len(Y)} label arrays")
        if len(X) == 0:
            raise ValueError("no training examples")
        ts, ws = map(list, zip(*(targets_and_node_weights(y, node_weights) for y in Y)))
        model = MRFModel(pairwise=pairwise)
        xs = list(X)
        return cls(model=model, xs=xs, ts=ts, ws=ws, loss=resolve_loss(loss, kappa, ts, ws),
                   oracle=copy.deepcopy(oracle or loss_augmented),
                   psi_true=np.stack([model.joint_feature(x, t) for x, t in zip(xs, ts)]),
                   nonpositive=np.flatnonzero(model.upper_bounds(xs[0]) == 0), C=float(C))

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
        u, p = self.model.potentials(x, w)
        res = self.oracle(u, x.edges, p, self.ts[i], self.ws[i], self.loss)
        g = self.psi_true[i] - self.model.joint_feature(x, res.labels)
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
        return 0.5 * float(w @ w) + self.C * float(np.mean(hinges))


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


def _problem(X, Y, settings: dict) -> ImageScopeProblem:
    return ImageScopeProblem.from_data(X, Y, **settings)


def _check_epochs(max_epochs: int, eval_every: int = 1) -> None:
    if not (int(max_epochs) == max_epochs and max_epochs >= 1):
        raise ValueError(f"max_epochs must be a positive integer, got {max_epochs}")
    if not (int(eval_every) == eval_every and eval_every >= 1):
        raise ValueError(f"eval_every must be a positive integer, got {eval_every}")


# ----------------------------------------------------------------------
# projected subgradient descent
def subgradient_descent(X, Y, *, max_epochs: int = 200, callback: IterateCallback | None = None,
                        **settings) -> LearnerResult:
    """Projected full subgradient descent on F, step 1 / t, keeping the best iterate.

    Parameters
    ----------
    X, Y : training inputs and labels, as for ``StructuredSVM.fit``.
    max_epochs : int
        Iterations; each is one pass (n oracle calls) that both evaluates
        F at the current iterate and gives its subgradient.
    callback : ``callback(iteration, w)`` after every update, optional.
    **settings : ``C``, ``loss``, ``kappa``, ``node_weights``, ``pairwise``,
        ``oracle``, as for :class:`StructuredSVM` (see
        :meth:`ImageScopeProblem.from_data`).

    Returns
    -------
    LearnerResult, with ``w`` the best iterate evaluated.
    """
    _check_epochs(max_epochs)
    with threadpool_limits(limits=1, user_api="blas"):
        return solve_subgradient(_problem(X, Y, settings), int(max_epochs), callback)


def solve_subgradient(problem: ImageScopeProblem, max_epochs: int,
                      callback: IterateCallback | None,
                      on_trace: TraceCallback | None = None) -> LearnerResult:
    """:func:`subgradient_descent` on a set-up problem (``on_trace`` sees every
    trace entry as it is made: the estimator's per-epoch callbacks)."""
    start = time.perf_counter()
    w = np.zeros(problem.dim)
    best_w, best = w, np.inf
    trace, converged, updates = [], False, 0
    for t in range(1, max_epochs + 1):
        gs, _, hinges = problem.evaluate(w)
        primal = problem.primal(w, hinges)
        if primal < best:
            best_w, best = w, primal
        trace.append({"iteration": updates, "epoch": t, "oracle_calls": t * problem.n,
                      "eval_calls": 0, "primal": primal, "best_primal": best,
                      "seconds": time.perf_counter() - start})
        if on_trace is not None:
            on_trace(trace)
        if converged or t == max_epochs:
            break        # the last pass only evaluates
        # subgradient of F at w: w - C mean_i g_i; F is 1-strongly convex,
        # so the step is 1 / (mu t) with mu = 1
        new_w = problem.project(w - (w - problem.C * gs.mean(axis=0)) / t)
        # Pi_K(w - s / t) = w means -s is in the normal cone of K at w: optimal
        converged = np.array_equal(new_w, w)
        w, updates = new_w, updates + 1
        if callback is not None:
            callback(updates, w)
    return LearnerResult(w=best_w, primal=best, trace=trace, n_iter=updates,
                         converged=converged, seconds=time.perf_counter() - start)


# ----------------------------------------------------------------------
# projected stochastic subgradient descent
def stochastic_subgradient(X, Y, *, max_epochs: int = 50, seed: int = 0,
                           averaging: str = "weighted", eval_every: int = 1,
                           callback: IterateCallback | None = None, **settings) -> LearnerResult:
    """Projected SGD over images with iterate averaging.

    Step t picks an image i uniformly at random, calls its oracle at the
    iterate w_t, and moves along the stochastic subgradient w_t - C g_i of
    F (F = mean_i of 1/2 ||w||^2 + C H_i(w), each 1-strongly convex):
    ``w_{t+1} = Pi_K(w_t - eta_t (w_t - C g_i))``.

    Parameters
    ----------
    X, Y : training inputs and labels, as for ``StructuredSVM.fit``.
    max_epochs : int
        Number of epochs of n steps each.
    seed : int
        Seed of the image sampling; the same seed gives the same w.
    averaging : {"weighted", "uniform", "none"}
        "weighted": eta_t = 2 / (t + 1) and the average of w_1..w_t with
        weights proportional to t (Lacoste-Julien, Schmidt & Bach 2012);
        "uniform": the lecture's eta_t = 1 / t with the plain average;
        "none": eta_t = 1 / t, the last iterate.
    eval_every : int
        Evaluate F at the returned point every this many epochs (n oracle
        calls each, counted as ``eval_calls``), and after the last.
    callback : ``callback(iteration, w)`` after every step (the iterate,
        not the average), optional.
    **settings : as for :func:`subgradient_descent`.

    Returns
    -------
    LearnerResult, with ``w`` the average (or last iterate for "none").
    """
    _check_epochs(max_epochs, eval_every)
    if averaging not in AVERAGING:
        raise ValueError(f"unknown averaging {averaging!r}; use one of {AVERAGING}")
    with threadpool_limits(limits=1, user_api="blas"):
        return solve_sgd(_problem(X, Y, settings), int(max_epochs), np.random.default_rng(seed),
                    averaging, int(eval_every), callback)


def solve_sgd(problem: ImageScopeProblem, max_epochs: int, rng: np.random.Generator,
              averaging: str, eval_every: int, callback: IterateCallback | None,
              on_trace: TraceCallback | None = None) -> LearnerResult:
    """:func:`stochastic_subgradient` on a set-up problem (``on_trace``: as
    :func:`solve_subgradient`)."""
    start = time.perf_counter()
    n, C = problem.n, problem.C
    w = np.zeros(problem.dim)
    w_avg = w.copy()
    trace, t, evals, primal = [], 0, 0, np.inf
    for epoch in range(1, max_epochs + 1):
        for i in rng.integers(0, n, size=n):
            t += 1
            # the average is over the points where subgradients are taken
            if averaging == "weighted":
                step, rho = 2.0 / (t + 1), 2.0 / (t + 1)
            else:
                step, rho = 1.0 / t, 1.0 / t
            w_avg += rho * (w - w_avg)
            g, _ = problem.constraint(i, w)
            w = problem.project(w - step * (w - C * g))
            if callback is not None:
                callback(t, w)
        if epoch % eval_every == 0 or epoch == max_epochs:
            point = w if averaging == "none" else w_avg
            primal = problem.primal(point)
            evals += n
            trace.append({"iteration": t, "epoch": epoch, "oracle_calls": t,
                          "eval_calls": evals, "primal": primal,
                          "seconds": time.perf_counter() - start})
            if on_trace is not None:
                on_trace(trace)
    point = w if averaging == "none" else w_avg
    # a convex combination of points of K is in K; clip rounding all the same
    return LearnerResult(w=problem.project(point), primal=primal, trace=trace, n_iter=t,
                         seconds=time.perf_counter() - start)


# ----------------------------------------------------------------------
# block-coordinate Frank-Wolfe
def bcfw_line_search(v: np.ndarray, d: np.ndarray, e: float, nonpositive) -> float:
    """Exact line search of BCFW with the bound w_p <= 0.

    Maximises over gamma in [0, 1] the concave piecewise quadratic

        phi(gamma) = gamma e - 1/2 ||Pi_K(v + gamma d)||^2

    (see the module docstring). phi'(gamma) = e - Pi_K(v + gamma d) . d is
    non-increasing and linear between the points where a bounded coordinate
    v_j + gamma d_j crosses 0; the segment where it changes sign is found by
    bisection over those points, and the root solved for on it.

    Parameters
    ----------
    v : (D,) the dual's weights A alpha before the step (not projected).
    d : (D,) the step's direction s - v_i.
    e : float, the change of the linear term, l_s - l_i.
    nonpositive : (P,) int, the coordinates of K's bound.

    Returns
    -------
    float in [0, 1].
    """
    nonpositive = np.asarray(nonpositive, np.int64)

    def slope(gamma: float) -> float:
        z = v + gamma * d
        z[nonpositive] = np.minimum(z[nonpositive], 0.0)
        return e - float(z @ d)

    if slope(0.0) <= 0.0:
        return 0.0
    if slope(1.0) >= 0.0:
        return 1.0
    vp, dp = v[nonpositive], d[nonpositive]
    moving = dp != 0
    kinks = -vp[moving] / dp[moving]
    knots = np.unique(np.concatenate([[0.0], kinks[(kinks > 0) & (kinks < 1)], [1.0]]))
    lo, hi = 0, knots.size - 1              # slope(knots[lo]) > 0 >= slope(knots[hi])
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if slope(knots[mid]) > 0.0:
            lo = mid
        else:
            hi = mid
    a, b = knots[lo], knots[hi]
    # coordinates in the quadratic part of phi on (a, b): all unbounded ones,
    # and the bounded ones that are negative there
    quadratic = np.ones(v.size, bool)
    middle = v[nonpositive] + 0.5 * (a + b) * d[nonpositive]
    quadratic[nonpositive] = middle < 0.0
    ds = d[quadratic]
    curvature = float(ds @ ds)
    if curvature <= 0.0:          # cannot happen but for rounding: phi' fell on (a, b)
        return float(b)
    return float(np.clip((e - float(v[quadratic] @ ds)) / curvature, a, b))


def bcfw(X, Y, *, max_epochs: int = 1000, tol: float = 1e-3, seed: int = 0,
         sampling: str = "uniform", eval_every: int = 1,
         callback: IterateCallback | None = None, **settings) -> LearnerResult:
    """Block-coordinate Frank-Wolfe on the SSVM dual, with w_p <= 0.

    Algorithm 4 of Lacoste-Julien et al. (2013) with the primal-dual map
    w = Pi_K(v) and the piecewise-quadratic exact line search of
    :func:`bcfw_line_search` (module docstring). Stops when the duality gap
    is at most ``C tol``.

    Parameters
    ----------
    X, Y : training inputs and labels, as for ``StructuredSVM.fit``.
    max_epochs : int
        Epochs of n block steps each.
    tol : float
        In loss units, as ``StructuredSVM``'s: stop when F(w) - D(alpha),
        which bounds F(w) - F* for an exact oracle, is <= C tol.
    seed : int
        Seed of the block sampling; the same seed gives the same w.
    sampling : {"uniform", "permutation"}
        Blocks drawn uniformly with replacement (the paper's analysis) or
        a fresh random permutation each epoch.
    eval_every : int
        Compute the primal, dual and gap every this many epochs (n oracle
        calls each, counted as ``eval_calls``), and after the last.
    callback : ``callback(iteration, w)`` after every block step, optional.
    **settings : as for :func:`subgradient_descent`.

    Returns
    -------
    LearnerResult, with ``w`` = Pi_K(v) at the end and its ``gap`` and ``dual``.
    """
    _check_epochs(max_epochs, eval_every)
    if sampling not in SAMPLING:
        raise ValueError(f"unknown sampling {sampling!r}; use one of {SAMPLING}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    with threadpool_limits(limits=1, user_api="blas"):
        return solve_bcfw(_problem(X, Y, settings), int(max_epochs), float(tol),
                     np.random.default_rng(seed), sampling, int(eval_every), callback)


def solve_bcfw(problem: ImageScopeProblem, max_epochs: int, tol: float,
               rng: np.random.Generator, sampling: str, eval_every: int,
               callback: IterateCallback | None,
               on_trace: TraceCallback | None = None) -> LearnerResult:
    """:func:`bcfw` on a set-up problem (``on_trace``: as :func:`solve_subgradient`)."""
    start = time.perf_counter()
    n, scale = problem.n, problem.C / problem.n
    # each block starts at the vertex y = t_i: v_i = 0, l_i = 0
    v_blocks, l_blocks = np.zeros((n, problem.dim)), np.zeros(n)
    v, l_sum = np.zeros(problem.dim), 0.0
    w = problem.project(v)
    trace, k, evals = [], 0, 0
    primal = gap = dual = np.inf
    converged = False
    for epoch in range(1, max_epochs + 1):
        blocks = rng.permutation(n) if sampling == "permutation" else rng.integers(0, n, size=n)
        for i in blocks:
            g, loss = problem.constraint(i, w)
            d = scale * g - v_blocks[i]
            e = scale * loss - l_blocks[i]
            gamma = bcfw_line_search(v, d, e, problem.nonpositive)
            v_blocks[i] += gamma * d
            l_blocks[i] += gamma * e
            v += gamma * d
            l_sum += gamma * e
            w = problem.project(v)
            k += 1
            if callback is not None:
                callback(k, w)
        # rebuild the sums from the blocks so rounding does not drift
        v, l_sum = v_blocks.sum(axis=0), float(l_blocks.sum())
        w = problem.project(v)
        if epoch % eval_every == 0 or epoch == max_epochs:
            primal = problem.primal(w)
            evals += n
            dual = l_sum - 0.5 * float(w @ w)
            gap = primal - dual
            trace.append({"iteration": k, "epoch": epoch, "oracle_calls": k,
                          "eval_calls": evals, "primal": primal, "dual": dual, "gap": gap,
                          "seconds": time.perf_counter() - start})
            if on_trace is not None:
                on_trace(trace)
            if gap <= problem.C * tol:
                converged = True
                break
    return LearnerResult(w=w, primal=primal, trace=trace, n_iter=k, converged=converged,
                         gap=gap, dual=dual, seconds=time.perf_counter() - start)
