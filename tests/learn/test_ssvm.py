import itertools

import numpy as np
import pytest

import segstruct.learn.solvers.qp as qp_module
from segstruct.inference.losses import AdjustedHammingLoss, HammingLoss, IoULoss, counts, totals
from segstruct.learn.solvers.qp import WorkingSetQP
from segstruct.learn.estimators.structured_svm import StructuredSVM, targets_and_node_weights
from segstruct.feature_map import MRFModel, disjoint_union


def full_qp_optimum(X, Y, loss, C, solver_groups):
    """Reference: the QP with one constraint per labelling of every example."""
    model = MRFModel()
    dim = model.n_features(X[0])
    caps = [C / len(X)] * len(X) if solver_groups == "nslack" else [C]
    qp = WorkingSetQP(dim, caps, np.flatnonzero(model.upper_bounds(X[0]) == 0))
    if solver_groups == "nslack":
        for i, (x, t) in enumerate(zip(X, Y)):
            n_pos, n_neg = totals(t)
            for y in itertools.product([0, 1], repeat=t.size):
                y = np.array(y)
                fp, fn = counts(y, t)
                g = model.joint_feature(x, t) - model.joint_feature(x, y)
                qp.add(g, float(loss(fp, fn, n_pos, n_neg)), i)
    else:  # 1-slack over all combinations (tiny problems only)
        per_example = []
        for x, t in zip(X, Y):
            n_pos, n_neg = totals(t)
            rows = []
            for y in itertools.product([0, 1], repeat=t.size):
                y = np.array(y)
                fp, fn = counts(y, t)
                rows.append((model.joint_feature(x, t) - model.joint_feature(x, y),
                             float(loss(fp, fn, n_pos, n_neg))))
            per_example.append(rows)
        for combo in itertools.product(*per_example):
            qp.add(np.mean([g for g, _ in combo], axis=0), np.mean([l for _, l in combo]), 0)
    return qp.solve().primal


@pytest.mark.parametrize("solver", ["nslack", "oneslack"])
def test_learner_reaches_the_full_qp_optimum(random_problem, solver):
    rng = np.random.default_rng(0)
    n_graphs = 3 if solver == "nslack" else 2
    for _ in range(3):
        X, Y = random_problem(rng, n_graphs=n_graphs, n=4)
        tol, C = 1e-4, 1.0
        svm = StructuredSVM(loss="hamming", C=C, solver=solver, scope="image", tol=tol).fit(X, Y)
        # superpixel units: the hinges summed, so the mean's weight is C n
        assert svm.svm_C_ == pytest.approx(C * n_graphs)
        reference = full_qp_optimum(X, Y, HammingLoss(), svm.svm_C_, solver)
        assert svm.converged_
        # the learner's certificate brackets the true optimum
        assert svm.dual_ <= reference + 1e-7
        assert svm.primal_ >= reference - 1e-7
        assert svm.primal_ - reference <= svm.svm_C_ * tol + 1e-7


def test_nslack_and_oneslack_agree(random_problem):
    X, Y = random_problem(np.random.default_rng(1), n_graphs=6, n=6)
    a = StructuredSVM(loss="hamming", solver="nslack", scope="image", tol=1e-5).fit(X, Y)
    b = StructuredSVM(loss="hamming", solver="oneslack", scope="image", tol=1e-5).fit(X, Y)
    assert a.primal_ == pytest.approx(b.primal_, abs=1e-4)


@pytest.mark.parametrize("solver", ["nslack", "oneslack"])
@pytest.mark.parametrize("scope", ["image", "dataset"])
def test_separable_problem_reaches_zero_training_loss(random_problem, solver, scope):
    X, Y = random_problem(np.random.default_rng(2), n_graphs=10, n=8, separable=True)
    svm = StructuredSVM(loss="hamming", C=10.0, solver=solver, scope=scope, tol=1e-4).fit(X, Y)
    assert svm.converged_
    for y_hat, t in zip(svm.predict(X), Y):
        assert np.array_equal(y_hat, t)
    assert svm.score(X, Y) == 1.0


def test_gap_monotone_and_pairwise_weights_nonpositive(random_problem, monkeypatch):
    X, Y = random_problem(np.random.default_rng(3), n_graphs=12, n=7)
    seen = []
    original = qp_module.WorkingSetQP.solve

    def recording_solve(self):
        sol = original(self)
        seen.append(sol.w[self.nonpositive].copy())
        return sol

    monkeypatch.setattr(qp_module.WorkingSetQP, "solve", recording_solve)
    svm = StructuredSVM(loss=IoULoss(), scope="image", tol=1e-4,
                        oracle=_brute_force_oracle).fit(X, Y)
    gaps = [e["gap"] for e in svm.log_]
    assert svm.converged_ and len(seen) == svm.n_iter_ - 1
    assert all(np.all(w_p <= 0) for w_p in seen)          # after every iteration
    assert np.all(np.diff(gaps) <= 1e-9)                     # monotone
    assert gaps[-1] <= svm.svm_C_ * svm.tol + 1e-9
    assert all(e["n_constraints"] >= 1 for e in svm.log_)


def _brute_force_oracle(u, edges, p, t, a, loss):
    from segstruct.inference import brute_force
    return brute_force(u, edges, p, t, a, loss)


def test_kappa_is_training_fg_bg_ratio(random_problem):
    X, Y = random_problem(np.random.default_rng(4), n_graphs=5, n=6)
    svm = StructuredSVM(max_iter=2).fit(X, Y)
    fg = sum(int(t.sum()) for t in Y)
    bg = sum(int((1 - t).sum()) for t in Y)
    assert isinstance(svm.loss_, AdjustedHammingLoss)
    assert svm.loss_.kappa == pytest.approx(fg / bg)
    # area mode counts pixels: (N, 2) [fg, bg] label specs
    counts_y = [np.stack([t * 10, (1 - t) * 3 + 1], 1) for t in Y]
    area = StructuredSVM(node_weights="area", max_iter=2).fit(X, counts_y)
    pix_fg = sum(float(c[:, 0][c[:, 0] > c[:, 1]].sum() + c[:, 1][c[:, 0] > c[:, 1]].sum())
                 for c in counts_y)
    t_w = [targets_and_node_weights(c, "area") for c in counts_y]
    n_pos = sum(float(a @ t) for t, a in t_w)
    n_neg = sum(float(a @ (1 - t)) for t, a in t_w)
    assert n_pos == pix_fg and area.loss_.kappa == pytest.approx(n_pos / n_neg)


def test_dataset_scope_is_one_example_over_the_union(random_problem):
    X, Y = random_problem(np.random.default_rng(5), n_graphs=3, n=4)
    svm = StructuredSVM(loss="iou", scope="dataset", tol=1e-4,
                        oracle=_brute_force_oracle_union).fit(X, Y)
    assert svm.converged_
    # n = 1: its hinge at the solution is the union's, recomputed here
    union, t = disjoint_union(X), np.concatenate(Y)
    model = MRFModel()
    best = -np.inf
    for y in itertools.product([0, 1], repeat=t.size):
        y = np.array(y)
        fp, fn = counts(y, t)
        best = max(best, float(IoULoss()(fp, fn, *totals(t)))
                   + model.score(union, svm.w_, y) - model.score(union, svm.w_, t))
    assert 0.5 * svm.w_ @ svm.w_ + svm.svm_C_ * max(best, 0) == pytest.approx(
        svm.primal_, abs=1e-9)


def _brute_force_oracle_union(u, edges, p, t, a, loss):
    from segstruct.inference import brute_force
    return brute_force(u, edges, p, t, a, loss)


def test_bad_parameters_and_inputs(random_problem):
    X, Y = random_problem(np.random.default_rng(6), n=4)
    for kwargs in ({"solver": "bmrm"}, {"scope": "batch"}, {"node_weights": "pixels"},
                   {"C": -1.0}, {"loss": "iou", "kappa": 0.5}):
        with pytest.raises(ValueError):
            StructuredSVM(**kwargs).fit(X, Y)
    with pytest.raises(ValueError, match=rf"X has {len(X)} graphs but Y {len(X) - 1} label"):
        StructuredSVM().fit(X, Y[:-1])
    with pytest.raises(ValueError, match="nodes"):
        StructuredSVM().fit(X, [t[:-1] for t in Y])
    with pytest.raises(RuntimeError, match="not fitted"):
        StructuredSVM().predict(X)
    with pytest.raises(ValueError, match="kappa"):
        StructuredSVM().fit(X, [np.zeros_like(t) for t in Y])


def test_weights_match_the_reported_objective_when_stopped_early(random_problem):
    X, Y = random_problem(np.random.default_rng(8), n_graphs=8, n=7)
    svm = StructuredSVM(loss="hamming", scope="image", max_iter=3).fit(X, Y)
    assert not svm.converged_
    model = MRFModel()
    hinge = []
    for x, t in zip(X, Y):
        best = -np.inf
        for y in itertools.product([0, 1], repeat=t.size):
            y = np.array(y)
            fp, fn = counts(y, t)
            best = max(best, fp + fn + model.score(x, svm.w_, y) - model.score(x, svm.w_, t))
        hinge.append(max(best, 0.0))
    objective = 0.5 * svm.w_ @ svm.w_ + svm.svm_C_ / len(X) * sum(hinge)
    assert objective == pytest.approx(svm.primal_, abs=1e-9)


def test_warm_start_reuses_cuts_and_reaches_the_cold_optimum(random_problem):
    # Cuts do not depend on C: a fit at C = 2 that starts from the working set
    # of a fit at C = 0.5 must reach the exact optimum at C = 2 (full QP over
    # every labelling) within C tol, and start with the old cuts.
    rng = np.random.default_rng(7)
    X, Y = random_problem(rng, n_graphs=2, n=4)
    svm = StructuredSVM(loss="iou", scope="dataset", tol=1e-4,
                        warm_start=True, oracle=_brute_force_oracle)
    svm.fit(X, Y)
    n_cuts = svm.working_set_["G"].shape[0]
    assert n_cuts >= 2
    svm.C = 2.0
    svm.fit(X, Y)
    union, t = [disjoint_union(X)], [np.concatenate(Y)]
    optimum = full_qp_optimum(union, t, IoULoss(), svm.svm_C_, "oneslack")
    assert svm.converged_
    assert optimum - 1e-9 <= svm.primal_ <= optimum + svm.svm_C_ * 1e-4 + 1e-9
    # the first iteration already had the old cuts (plus the new ones)
    assert svm.log_[0]["n_constraints"] > n_cuts
    cold = StructuredSVM(loss="iou", scope="dataset", tol=1e-4, C=2.0,
                         oracle=_brute_force_oracle)
    cold.fit(X, Y)
    assert cold.log_[0]["n_constraints"] <= 2


def test_warm_start_on_other_data_starts_afresh(random_problem):
    rng = np.random.default_rng(8)
    X, Y = random_problem(rng, n_graphs=2, n=4)
    X2, Y2 = random_problem(rng, n_graphs=2, n=4)
    warm = StructuredSVM(loss="iou", tol=1e-4, warm_start=True,
                         oracle=_brute_force_oracle)
    warm.fit(X, Y)
    warm.fit(X2, Y2)
    cold = StructuredSVM(loss="iou", tol=1e-4,
                         oracle=_brute_force_oracle).fit(X2, Y2)
    np.testing.assert_array_equal(warm.w_, cold.w_)
    assert warm.n_iter_ == cold.n_iter_


def test_returned_weights_are_the_best_evaluated(random_problem):
    # The 1-slack loop evaluates the objective at several points an iteration
    # (line search, cut point); w_ must be the lowest of them and primal_ its
    # objective, recomputed here by brute force over all labellings.
    rng = np.random.default_rng(9)
    X, Y = random_problem(rng, n_graphs=2, n=4)
    svm = StructuredSVM(loss="iou", scope="dataset", tol=1e-6, max_iter=6,
                        oracle=_brute_force_oracle).fit(X, Y)
    union, t = disjoint_union(X), np.concatenate(Y)
    model = MRFModel()

    def objective(w):
        best = max(float(IoULoss()(*counts(np.array(y), t), *totals(t)))
                   + model.score(union, w, np.array(y)) - model.score(union, w, t)
                   for y in itertools.product([0, 1], repeat=t.size))
        return 0.5 * w @ w + svm.svm_C_ * max(best, 0.0)
    assert svm.primal_ == pytest.approx(objective(svm.w_), abs=1e-9)
    assert svm.primal_ <= min(e["primal"] for e in svm.log_) + 1e-12
    assert all(e["best_primal"] >= svm.primal_ - 1e-12 for e in svm.log_)


def test_line_search_never_leaves_the_pairwise_bound():
    # Both ends of the ray keep w_p <= 0; beyond the QP's solution (t > 1) the
    # ray can leave that bound, where graph cuts are inexact. Here the model
    # of the hinge falls steeply along the ray, so its minimum lies far past
    # t = 2, where the pairwise weight (index 1) reaches 0: the search must
    # stop there.
    from segstruct.learn.solvers.cutting_planes import Point, line_search
    g = np.array([10.0, 0.0])
    best = Point(np.array([0.0, -1.0]), g, 5.0, None, 3.0)
    at = Point(np.array([1.0, -0.5]), g, 5.0, None, 2.0)
    evaluated = []

    def evaluate(w):
        evaluated.append(w.copy())
        return Point(w, g, 5.0, None, 1.0)
    step = line_search(best, at, evaluate, dual=-100.0, nonpositive=np.array([1]), C=1.0,
                       tol=1e-3)
    assert evaluated, "the model's minimum is not at an end: the search evaluates"
    assert all(w[1] <= 0.0 for w in evaluated)
    assert step == pytest.approx(2.0)


# ---------------------------------------------------------------------------
# What C means (superpixel units, svm_C)


def test_superpixel_units_give_the_objectives_C_for_each_loss_and_scope(random_problem):
    rng = np.random.default_rng(21)
    X, Y = random_problem(rng, n_graphs=3, n=5)
    n_pos = sum(int(t.sum()) for t in Y)
    n_neg = sum(t.size for t in Y) - n_pos
    C = 3.0
    fit = {}
    for loss in ("hamming", "iou", "f1"):
        for scope in ("dataset", "image"):
            fit[loss, scope] = StructuredSVM(loss=loss, C=C, scope=scope, max_iter=2,
                                             oracle=_brute_force_oracle).fit(X, Y)
    # Hamming counts superpixels already: the hinges are summed
    assert fit["hamming", "dataset"].svm_C_ == pytest.approx(C)
    assert fit["hamming", "image"].svm_C_ == pytest.approx(C * len(X))
    # IoU: one missed superpixel of the union costs 1 / Np; per image, 1 / (Np / n)
    assert fit["iou", "dataset"].superpixel_loss_ == pytest.approx(1 / n_pos)
    assert fit["iou", "dataset"].svm_C_ == pytest.approx(C / n_pos)
    assert fit["iou", "image"].svm_C_ == pytest.approx(C * len(X) / (n_pos / len(X)))
    # F1: 1 - 2 (Np - 1) / (2 (Np - 1) + 1)
    delta = 1 - 2 * (n_pos - 1) / (2 * (n_pos - 1) + 1)
    assert fit["f1", "dataset"].svm_C_ == pytest.approx(C * delta)
    assert n_neg > 0
    # known before fitting too
    assert all(f.objective_C(X, Y) == pytest.approx(f.svm_C_) for f in fit.values())
    paper = StructuredSVM(loss="iou", C=C, C_units="paper", max_iter=2,
                          oracle=_brute_force_oracle).fit(X, Y)
    assert paper.svm_C_ == C / 2 and paper.superpixel_loss_ is None


def test_a_sum_over_images_has_one_meaning_of_C_at_both_scopes(random_problem):
    """Hamming's data-set hinge is the sum of the images' hinges: in
    superpixel units the two scopes are one problem, with one optimum."""
    X, Y = random_problem(np.random.default_rng(22), n_graphs=5, n=5)
    fits = [StructuredSVM(loss="hamming", C=2.0, scope=scope, tol=1e-6).fit(X, Y)
            for scope in ("dataset", "image")]
    assert all(f.converged_ for f in fits)
    assert fits[0].primal_ == pytest.approx(fits[1].primal_, rel=1e-4)
    np.testing.assert_allclose(fits[0].w_, fits[1].w_, atol=1e-2)


def test_paper_units_are_the_same_problem_at_the_mapped_C(random_problem):
    X, Y = random_problem(np.random.default_rng(23), n_graphs=3, n=5)
    sp = StructuredSVM(loss="iou", C=5.0, tol=1e-6, oracle=_brute_force_oracle).fit(X, Y)
    paper = StructuredSVM(loss="iou", C=2 * sp.svm_C_, C_units="paper", tol=1e-6,
                          oracle=_brute_force_oracle).fit(X, Y)
    assert paper.svm_C_ == pytest.approx(sp.svm_C_)
    np.testing.assert_allclose(paper.w_, sp.w_, atol=1e-9)


def test_superpixel_units_without_a_missed_superpixel_count_a_false_one(random_problem):
    from segstruct.inference.losses import CallableLoss
    from segstruct.learn.estimators.structured_svm import superpixel_loss
    X, Y = random_problem(np.random.default_rng(24), n_graphs=2, n=4)
    ones = [np.ones(t.size) for t in Y]
    # a loss blind to false negatives: one false positive's loss
    fp_only = CallableLoss(lambda fp, fn, n_pos, n_neg: 2.0 * fp)
    assert superpixel_loss(fp_only, Y, ones, 1) == 2.0
    # no foreground at all: IoU's false positive costs 1 (FP / FP)
    background = [np.zeros_like(t) for t in Y]
    assert superpixel_loss(IoULoss(), background, ones, 1) == 1.0
    # a loss blind to both has no superpixel units
    blind = CallableLoss(lambda fp, fn, n_pos, n_neg: 0.0 * fp)
    with pytest.raises(ValueError, match="C_units='paper'"):
        StructuredSVM(loss=blind, oracle=_brute_force_oracle).fit(X, Y)
    with pytest.raises(ValueError, match="C_units"):
        StructuredSVM(C_units="pixels").fit(X, Y)
    # in the paper's units the same loss trains
    assert StructuredSVM(loss=blind, C_units="paper", max_iter=3,
                         oracle=_brute_force_oracle).fit(X, Y).n_iter_ >= 1


def test_an_optimum_of_w_zero_is_named_with_what_to_try():
    """Features that are all 0 leave every labelling the same score: w = 0 is
    the optimum, and the fit says so (every node alike, a larger C); a fit
    with informative features says nothing."""
    import warnings

    from segstruct.feature_map import Graph
    from segstruct.toy import chain_problem
    X, Y = chain_problem(n_graphs=4, n_nodes=6, seed=1)
    blank = [Graph(np.zeros_like(x.unary), x.edges, np.zeros_like(x.pairwise)) for x in X]
    with pytest.warns(RuntimeWarning, match=r"optimum at C=1 is w = 0.*a larger C"):
        svm = StructuredSVM(C=1.0).fit(blank, Y)
    assert svm.converged_ and not np.any(svm.w_)
    assert all(not np.any(y) or np.all(y == y[0]) for y in svm.predict(blank))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert np.any(StructuredSVM(C=1.0).fit(X, Y).w_)
