"""The working-set QP of cutting-plane structural SVM training, solved with HiGHS.

Primal, over weights w (D,) and one slack per group g:

    min  1/2 ||w||^2 + sum_g C_g xi_g
    s.t. w . g_k >= l_k - xi_{group(k)}   for every constraint k in the working set
         xi_g >= 0,   w_d <= 0 for d in ``nonpositive``  (w_p <= 0, docs/design.md "The model")

It is solved in its dual, one variable per constraint plus one per bounded
weight, which is much faster than the primal when the weights outnumber
the constraints (docs/history/design-2026-12.md, "Measurements behind the
design"):

    max  l . alpha - 1/2 ||w||^2,   w = G^T alpha - S mu
    s.t. alpha >= 0, mu >= 0, sum_{k in g} alpha_k <= C_g

with G the (K, D) matrix of constraint vectors and S the columns of the
identity at the bounded weights. The Hessian is the Gram matrix of
[G^T, -S], kept up to date one row at a time as constraints arrive.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import highspy
import numpy as np

from segstruct.inference.highs import SolverError, new_highs, run

from segstruct.learn.solvers.active_set import refine
from segstruct.learn._params import POSITIVE, check_param


class QPError(RuntimeError):
    """HiGHS did not solve the working-set QP."""


@dataclass
class QPSolution:
    """Solution of the working-set QP.

    Attributes
    ----------
    w : (D,) weights, with ``w[nonpositive] <= 0`` exactly (clipped; see solve).
    alpha : (K,) dual variables of the constraints.
    mu : (P,) dual variables of the bounds ``w_d <= 0``.
    xi : (n_groups,) slacks, ``max(0, max_k l_k - w . g_k)`` per group.
    primal : 1/2 ||w||^2 + sum_g C_g xi_g at ``w``.
    dual : l . alpha - 1/2 ||G^T alpha - S mu||^2, a lower bound on the QP optimum.
    seconds : solver time.
    """

    w: np.ndarray
    alpha: np.ndarray
    mu: np.ndarray
    xi: np.ndarray
    primal: float
    dual: float
    seconds: float


class WorkingSetQP:
    """A growing (and prunable) set of cutting planes and its QP.

    Parameters
    ----------
    n_features : D, the length of w.
    caps : (n_groups,) C_g > 0 per slack group (n-slack: C / n for each of n
        groups; 1-slack: one group with C).
    nonpositive : indices of weights constrained to be <= 0.
    """

    # HiGHS's dual is run with these Hessian regularisations in turn (None =
    # HiGHS's default, 1e-7, which never failed in tests but can leave gaps of
    # 1e-3 relative on long runs; without regularisation it is exact there but
    # cycled on some random working sets, hence the iteration cap).
    DUAL_REGULARIZATIONS = (None, 0.0)
    # Seconds one HiGHS run of the dual (DUAL_TIME_LIMIT) or of the primal
    # may take; the next route then takes over. Dual solves of up to 500
    # constraints stay well inside it on the shared data, but a run can stall:
    # with unary features scaled by 1e3 (before the rescaling in solve) one
    # never returned, and on camvid car bl1 the unregularised dual and the
    # primal ran to any limit on every solve.
    DUAL_TIME_LIMIT = 1.0
    TIME_LIMIT = 2.0

    def __init__(self, n_features: int, caps, nonpositive=()):
        self.n_features = int(n_features)
        self.caps = np.asarray(caps, np.float64).reshape(-1)
        for cap in self.caps:
            check_param("every slack cap C_g", float(cap), [POSITIVE])
        self.nonpositive = np.asarray(nonpositive, np.int64).reshape(-1)
        self.G = np.zeros((0, self.n_features))
        self.losses = np.zeros(0)
        self.groups = np.zeros(0, np.int64)
        self.inactive = np.zeros(0, np.int64)   # solves in a row with alpha_k = 0
        self._gram = np.zeros((0, 0))
        self._last: np.ndarray | None = None
        self.last_route: str | None = None
        # Index into the (scaling, regularisation) routes of the one whose
        # answer was best in the last solve (see solve); saved with the
        # working set, so a resumed run tries the routes in the same order.
        self._preferred: int | None = None
        # Indices of the routes that gave no answer when last tried (see
        # solve); saved with the working set too.
        self._failed: set[int] = set()
        self.gap_tol = 1e-8
        # An absolute gap that is small enough for the caller (the learner
        # sets a hundredth of its own target gap): HiGHS's answers meet it
        # without the exact, but on long runs slow, active-set finish.
        self.abs_gap_tol = 0.0

    @property
    def n_constraints(self) -> int:
        return self.G.shape[0]

    def add(self, g, loss: float, group: int | np.integer) -> None:
        """Add the constraint ``w . g >= loss - xi_group``."""
        g = np.asarray(g, np.float64).reshape(1, -1)
        if g.shape[1] != self.n_features:
            raise ValueError(f"constraint has {g.shape[1]} entries, expected {self.n_features}")
        if not (np.all(np.isfinite(g)) and np.isfinite(loss)):
            raise ValueError("constraint vector and loss must be finite")
        if not 0 <= group < self.caps.size:
            raise ValueError(f"group {group} outside 0..{self.caps.size - 1}")
        cross = self.G @ g[0]
        k = self.n_constraints
        gram = np.empty((k + 1, k + 1))
        gram[:k, :k] = self._gram
        gram[k, :k] = gram[:k, k] = cross
        gram[k, k] = g[0] @ g[0]
        self._gram = gram
        self.G = np.vstack([self.G, g])
        self.losses = np.append(self.losses, float(loss))
        self.groups = np.append(self.groups, int(group))
        self.inactive = np.append(self.inactive, 0)
        if self._last is not None:
            self._last = np.insert(self._last, k, 0.0)

    def prune(self, max_inactive: int) -> int:
        """Drop constraints whose alpha was 0 in the last ``max_inactive`` solves.

        Dropping a constraint with alpha = 0 leaves the current solution
        optimal, so the dual objective stays monotone. Returns how many went.
        """
        keep = self.inactive < max_inactive
        removed = int(np.count_nonzero(~keep))
        if removed:
            self.G, self.losses = self.G[keep], self.losses[keep]
            self.groups, self.inactive = self.groups[keep], self.inactive[keep]
            self._gram = self._gram[np.ix_(keep, keep)]
            if self._last is not None:
                k = keep.size
                self._last = np.concatenate([self._last[:k][keep], self._last[k:]])
        return removed

    # Arrays that make up the working set: saved and restored whole, so a
    # resumed training run continues on exactly the same QP.
    _STATE = ("G", "losses", "groups", "inactive", "_gram", "_last")

    def get_state(self) -> dict:
        """The working set as named arrays (for checkpoints)."""
        state = {name.lstrip("_"): getattr(self, name) for name in self._STATE
                 if getattr(self, name) is not None}
        if self._preferred is not None:
            state["preferred"] = np.array(self._preferred, np.int64)
        state["failed"] = np.array(sorted(self._failed), np.int64)
        return state

    def set_state(self, state: dict) -> None:
        """Restore a working set saved by ``get_state``."""
        G = np.asarray(state["G"], np.float64)
        k = G.shape[0]
        if G.ndim != 2 or G.shape[1] != self.n_features:
            raise ValueError(f"saved constraints have shape {G.shape}, expected (K, "
                             f"{self.n_features})")
        shapes = {"losses": (k,), "groups": (k,), "inactive": (k,), "gram": (k, k)}
        for name, shape in shapes.items():
            if np.shape(state[name]) != shape:
                raise ValueError(f"saved {name} has shape {np.shape(state[name])}, "
                                 f"expected {shape}")
        self.G = G
        self.losses = np.asarray(state["losses"], np.float64)
        self.groups = np.asarray(state["groups"], np.int64)
        self.inactive = np.asarray(state["inactive"], np.int64)
        self._gram = np.asarray(state["gram"], np.float64)
        last = state.get("last")
        self._last = None if last is None else np.asarray(last, np.float64)
        preferred = state.get("preferred")
        self._preferred = None if preferred is None else int(preferred)
        # a working set saved before the failed routes were kept: none waits
        self._failed = {int(i) for i in np.asarray(state.get("failed", []), np.int64).reshape(-1)}

    # ------------------------------------------------------------------
    def _scale(self) -> float:
        """s = the largest ||g_k||: the QP is solved for g / s (see solve)."""
        top = float(np.sqrt(np.max(np.diag(self._gram), initial=0.0)))
        return top if np.isfinite(top) and top > 0 else 1.0

    def _hessian(self, gram, G) -> np.ndarray:
        k, p = self.n_constraints, self.nonpositive.size
        gs = G[:, self.nonpositive]
        h = np.empty((k + p, k + p))
        h[:k, :k] = gram
        h[:k, k:] = -gs
        h[k:, :k] = -gs.T
        h[k:, k:] = np.eye(p)
        return h

    def _highs_model(self, h: np.ndarray, caps) -> highspy.HighsModel:
        """The dual QP as a HiGHS model. (Jacobi scaling of z was tried and
        made HiGHS fail more often on badly scaled constraint vectors.)"""
        k, p = self.n_constraints, self.nonpositive.size
        n = k + p
        lp = highspy.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = self.caps.size
        lp.col_cost_ = np.concatenate([-self.losses, np.zeros(p)])
        lp.col_lower_ = np.zeros(n)
        lp.col_upper_ = np.full(n, highspy.kHighsInf)
        lp.row_lower_ = np.full(self.caps.size, -highspy.kHighsInf)
        lp.row_upper_ = np.array(caps, np.float64)
        # Column k of the group-sum rows has a single 1 in row groups[k].
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.concatenate([np.arange(k + 1), np.full(p, k)]).astype(np.int32)
        lp.a_matrix_.index_ = self.groups.astype(np.int32)
        lp.a_matrix_.value_ = np.ones(k)
        hess = highspy.HighsHessian()
        hess.dim_ = n
        hess.format_ = highspy.HessianFormat.kTriangular
        # Lower triangle, column-wise: column j holds rows j..n-1, which are
        # the upper triangle's row j read left to right (H is symmetric).
        rows, cols = np.triu_indices(n)
        hess.start_ = np.concatenate([[0], np.cumsum(np.arange(n, 0, -1))]).astype(np.int32)
        hess.index_ = cols.astype(np.int32)
        hess.value_ = h[rows, cols]
        model = highspy.HighsModel()
        model.lp_ = lp
        model.hessian_ = hess
        return model

    def _route_index(self, route) -> int:
        """A (scale index, regularisation) route's place in the default order."""
        i, reg = route
        return i * len(self.DUAL_REGULARIZATIONS) + self.DUAL_REGULARIZATIONS.index(reg)

    def _scaled_model(self, scale: float):
        """(caps, G, Hessian, unit, warm start, HiGHS model) of the dual QP with
        constraint vectors g / scale (see solve); z' = unit z."""
        k, p = self.n_constraints, self.nonpositive.size
        caps_s, G_s = self.caps * scale ** 2, self.G / scale
        h = self._hessian(self._gram / scale ** 2, G_s)
        unit = np.concatenate([np.full(k, scale ** 2), np.full(p, scale)])
        warm = (self._last * unit if self._last is not None and self._last.size == k + p
                else None)
        return caps_s, G_s, h, unit, warm, self._highs_model(h, caps_s)

    def solve(self) -> QPSolution:
        """Solve the QP with HiGHS and recover w, the slacks and both objectives.

        Routes are tried in turn until one's primal-dual gap meets the
        tolerance (``gap_tol`` relative, or ``abs_gap_tol``): HiGHS's dual
        with each of ``DUAL_REGULARIZATIONS``, on the QP as it is and then on
        a rescaled copy; the exact active-set method from the best answer;
        then HiGHS on the primal form. A route that gave no answer when last
        tried (it ran into its time or iteration limit) waits until the
        others and the active-set finish have not met the tolerance; one that
        gave the best answer last time goes first. HiGHS's solution meets
        the dual's bounds only to its tolerances, so the returned w is
        projected onto ``w[nonpositive] <= 0`` (a change within tolerance)
        and the slacks and primal objective are evaluated at that w; the dual
        objective is evaluated at alpha scaled back into its feasible set, so
        it is a true lower bound of the QP optimum.
        """
        start = time.perf_counter()
        k, p = self.n_constraints, self.nonpositive.size
        if k == 0:
            w = np.zeros(self.n_features)
            return QPSolution(w, np.zeros(0), np.zeros(p), np.zeros(self.caps.size),
                              0.0, 0.0, time.perf_counter() - start)
        # HiGHS is tried on the QP as it is and then on a rescaled copy:
        # constraint vectors g / s with s the largest ||g||, so the Hessian's
        # entries are at most 1 and the optimal duals (which scale as
        # 1 / ||g||^2) are of the order of the losses. Neither suits every
        # working set tried: with unary features scaled by 1e3 the duals of
        # the QP as it is fell to HiGHS's feasibility tolerance and its runs
        # failed or never returned, while on bl1's Hamming losses (hundreds of
        # superpixels) the copy's exact route failed on half the solves of the
        # horse data, where the QP as it is solved them all. In the copy
        # alpha' = s^2 alpha, mu' = s mu, caps' = s^2 caps and w' = s w.
        cost = np.concatenate([-self.losses, np.zeros(p)])
        groups = np.concatenate([self.groups, np.full(p, -1)])
        best, best_route, best_z = None, None, None
        preferred = None      # index of the HiGHS route whose answer is best so far

        def consider(z, route, unit, index=None):
            nonlocal best, best_route, best_z, preferred
            if z is None:
                return
            z = z / unit
            candidate = self._evaluate(z)
            if best is None or candidate.primal - candidate.dual < best.primal - best.dual:
                best, best_route, best_z = candidate, route, z
                if index is not None:
                    preferred = index
        # The order costs least on the working sets tried: HiGHS's dual
        # with its default regularisation (fast; can leave a gap of 1e-3
        # relative), without it (exact, and fast on sets where the active-set
        # finish is slow, but on some camvid sets it ran to any time limit),
        # on each scaling; then the exact active-set finish from the best
        # answer, and only then the primal.
        def done():
            return best is not None and self.converged(best)
        # The route whose answer was best last time (the one that met the
        # tolerance, or else the one the active-set finish started from) goes
        # first: a route that fails on a problem tends to fail on every solve of
        # it, up to its time limit (the QP as it is on MultivariateSVM's F1
        # problem: every solve ran both its routes to the limit, where the
        # rescaled copy answered at once).
        scales = tuple(dict.fromkeys((1.0, self._scale())))   # once if s = 1
        routes = [(i, reg) for i in range(len(scales)) for reg in self.DUAL_REGULARIZATIONS]
        if self._preferred is not None and self._preferred < len(routes):
            routes.insert(0, routes.pop(self._preferred))
        # A route that gave no answer in the last solve waits until the others
        # and the active-set finish have not met the tolerance: such a route
        # tends to fail again, at its time limit. On CamVid car (proposed)
        # the last solves of a run spent nearly all their time in HiGHS's
        # unregularised dual of the rescaled copy running to DUAL_TIME_LIMIT,
        # while the active-set finish from the regularised answer reached the
        # exact optimum almost at once.
        waiting = [r for r in routes if self._route_index(r) in self._failed]
        models: dict = {}
        last = None                 # the last model tried: the finish works in its scale

        def run_routes(chosen) -> None:
            nonlocal last
            for i, reg in chosen:
                if i not in models:
                    models[i] = self._scaled_model(scales[i])
                last = models[i]
                *_, unit, warm, model = last
                index = self._route_index((i, reg))
                z = self._run_dual(model, reg, warm)
                (self._failed.add if z is None else self._failed.discard)(index)
                name = "" if scales[i] == 1.0 else "scaled "
                consider(z, f"{name}{reg}", unit, index)
                if done():
                    return

        def finish(max_iter=None) -> None:
            if best is not None and not done():
                assert last is not None          # best comes from a route tried
                caps_s, _, h, unit, _, _ = last
                z_exact, _ = refine(h, cost, groups, caps_s, best_z * unit, max_iter=max_iter)
                consider(z_exact, f"{best_route}+active-set", unit)

        run_routes([r for r in routes if r not in waiting])
        if waiting:
            # from a near answer a few exchanges of the active set suffice; one
            # that needs more (slow on a large working set) lets the waiting
            # routes try first
            finish(max_iter=k + p)
            if not done():
                run_routes(waiting)
        finish()
        if preferred is not None:
            self._preferred = preferred
        assert last is not None                  # every route waiting means all ran
        caps_s, G_s, h, unit, _, _ = last
        if not done():
            consider(self._solve_primal(G_s, caps_s), "primal", unit)
        if best is None:
            # Every HiGHS route failed: the active-set method alone, from the
            # last solution (or 0), which is feasible; slower, but needs no HiGHS.
            start_z = (self._last if self._last is not None and self._last.size == k + p
                       else np.zeros(k + p))
            try:
                z, _ = refine(h, cost, groups, caps_s, start_z * unit)
                z = z / unit
            except np.linalg.LinAlgError as err:
                raise QPError(f"the working-set QP with {k} constraints could not be solved "
                              f"by HiGHS (dual with two regularisations, primal) nor by the "
                              f"active-set method ({err})") from None
            best, best_route = self._evaluate(z), "active-set"
        self._last = np.concatenate([best.alpha, best.mu])
        self.last_route = best_route
        active = best.alpha > 1e-9 * self.caps[self.groups]
        self.inactive = np.where(active, 0, self.inactive + 1)
        best.seconds = time.perf_counter() - start
        return best

    def converged(self, sol: QPSolution) -> bool:
        """Whether ``sol`` meets the gap tolerance (relative or absolute).

        Relative to the objective itself, with no floor of 1: objectives can
        be tiny (SVM-perf's C mapping makes them ~1e-8 at n = 20,000), and a
        floor would accept any answer there.
        """
        return bool(sol.primal - sol.dual <= max(self.gap_tol * abs(sol.primal),
                                                 self.abs_gap_tol))

    def _run_dual(self, model, regularization, warm=None) -> np.ndarray | None:
        """Dual variables [alpha; mu] from HiGHS, or None when it did not finish."""
        k, p = self.n_constraints, self.nonpositive.size
        # The unregularised active-set method can cycle on rank-deficient
        # Hessians; cap it so the next route gets its turn.
        highs = new_highs(qp_iteration_limit=100 * (k + p) + 1000,
                          time_limit=self.DUAL_TIME_LIMIT)
        if regularization is not None:
            highs.setOptionValue("qp_regularization_value", regularization)
        highs.passModel(model)
        if warm is not None:
            # Warm start from the previous solution padded with zeros for new
            # constraints (still feasible: group sums unchanged).
            sol = highspy.HighsSolution()
            sol.col_value = list(warm)
            sol.value_valid = True
            highs.setSolution(sol)
        try:
            # the other routes are the retries
            highs = run(highs, "the working-set QP", retries=())
        except SolverError:
            return None
        return np.asarray(highs.getSolution().col_value, np.float64)

    def _evaluate(self, z) -> QPSolution:
        """Feasible dual point, projected w, slacks and both objectives from z."""
        k = self.n_constraints
        alpha = np.maximum(z[:k], 0.0)
        mu = np.maximum(z[k:], 0.0)
        # Scale alpha into sum_{k in g} alpha_k <= C_g (tolerance overshoot).
        sums = np.bincount(self.groups, weights=alpha, minlength=self.caps.size)
        shrink = np.minimum(1.0, self.caps / np.maximum(sums, 1e-300))
        alpha = alpha * shrink[self.groups]
        w_dual = self.G.T @ alpha
        w_dual[self.nonpositive] -= mu
        dual = float(self.losses @ alpha - 0.5 * w_dual @ w_dual)
        w = w_dual.copy()
        w[self.nonpositive] = np.minimum(w[self.nonpositive], 0.0)
        xi = self.slacks(w)
        primal = float(0.5 * w @ w + self.caps @ xi)
        return QPSolution(w, alpha, mu, xi, primal, dual, 0.0)

    def _solve_primal(self, G, caps) -> np.ndarray | None:
        """Last resort: the primal QP (Hessian I on w, so strictly convex in w).

        Slower for many features, but HiGHS never cycled on it in tests.
        Returns the dual variables [alpha; mu] read off its row and column
        duals, so the caller treats both routes alike.
        """
        k, d, n_groups = self.n_constraints, self.n_features, self.caps.size
        lp = highspy.HighsLp()
        lp.num_col_ = d + n_groups
        lp.num_row_ = k
        lp.col_cost_ = np.concatenate([np.zeros(d), caps])
        upper = np.full(d, highspy.kHighsInf)
        upper[self.nonpositive] = 0.0
        lp.col_lower_ = np.concatenate([np.full(d, -highspy.kHighsInf), np.zeros(n_groups)])
        lp.col_upper_ = np.concatenate([upper, np.full(n_groups, highspy.kHighsInf)])
        lp.row_lower_ = self.losses.copy()
        lp.row_upper_ = np.full(k, highspy.kHighsInf)
        # Row k: G_k . w + xi_{group(k)} >= l_k, stored row-wise.
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.arange(0, k * (d + 1) + 1, d + 1).astype(np.int32)
        index = np.hstack([np.tile(np.arange(d), (k, 1)), d + self.groups[:, None]])
        lp.a_matrix_.index_ = index.ravel().astype(np.int32)
        lp.a_matrix_.value_ = np.hstack([G, np.ones((k, 1))]).ravel()
        hess = highspy.HighsHessian()
        hess.dim_ = d
        hess.format_ = highspy.HessianFormat.kTriangular
        hess.start_ = np.arange(d + 1).astype(np.int32)
        hess.index_ = np.arange(d).astype(np.int32)
        hess.value_ = np.ones(d)
        model = highspy.HighsModel()
        model.lp_ = lp
        model.hessian_ = hess
        highs = new_highs(qp_iteration_limit=100 * (k + d) + 1000, time_limit=self.TIME_LIMIT)
        highs.passModel(model)
        try:
            # no retry: on the sets where it fails, it fails again (it is the last
            # route, after the active-set finish)
            highs = run(highs, "the primal working-set QP", retries=())
        except SolverError:
            return None
        sol = highs.getSolution()
        # Multipliers of ">=" rows and of the upper bounds w_d <= 0.
        alpha = np.abs(np.asarray(sol.row_dual, np.float64))
        mu = np.abs(np.asarray(sol.col_dual, np.float64)[self.nonpositive])
        return np.concatenate([alpha, mu])

    def slacks(self, w) -> np.ndarray:
        """xi_g = max(0, max_{k in g} l_k - w . g_k) for each group."""
        xi = np.zeros(self.caps.size)
        if self.n_constraints:
            np.maximum.at(xi, self.groups, self.losses - self.G @ w)
        return xi
