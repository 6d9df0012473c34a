"""The envelope inference (exact branch and bound over (FP, FN) with graph-cut
planes) against brute force, the MILP and the triangle LPs."""
import itertools
import zlib
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

from segstruct.inference import envelope as E
from segstruct.inference import score
from segstruct.inference._mrf import raw_score
from segstruct.inference.decomposition import decomposition_oracle
from segstruct.inference.graphcut import min_cut
from segstruct.inference.losses import CallableLoss, counts, get_loss, totals
from segstruct.inference.lp import lp_oracle
from segstruct.inference.milp import milp_oracle
from segstruct.inference.proposed import ProposedOracle

LOSSES = ["iou", "f1", "hamming"]


def instance(rng, n, density=0.35, weights="ones", p_one=0.4, background=False):
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < density]
    edges = np.array(pairs, np.int64).reshape(-1, 2)
    p = -np.abs(rng.normal(size=len(edges)))
    u = rng.normal(size=n)
    t = np.zeros(n, int) if background else (rng.random(n) < p_one).astype(int)
    a = {"ones": np.ones(n), "integer": rng.integers(0, 4, n).astype(float),
         "real": rng.uniform(0.2, 2.5, n)}[weights]
    return u, edges, p, t, a


def brute(u, edges, p, t, a, loss):
    """The exact optimum over all 2^N labellings."""
    ys = np.array(list(itertools.product([0, 1], repeat=u.size)), np.uint8)
    fp, fn = counts(ys, t, a)
    values = np.asarray(get_loss(loss)(fp, fn, *totals(t, a))) + score(u, edges, p, ys)
    return float(values.max())


def check(res, optimum, u, edges, p, t, a, loss):
    """The result is a labelling whose recomputed objective is the optimum,
    and its bound is never below the optimum."""
    fp, fn = counts(res.labels, t, a)
    recomputed = float(get_loss(loss)(fp, fn, *totals(t, a))) + score(u, edges, p, res.labels)
    assert res.objective == pytest.approx(recomputed, abs=1e-9)
    assert res.bound >= optimum - 1e-9
    if res.info["certified"]:
        assert res.bound == pytest.approx(res.objective)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("weights", ["ones", "integer", "real"])
def test_exact_against_brute_force(loss, weights):
    # a stable seed: hash() of a str changes with every process
    rng = np.random.default_rng(zlib.crc32(f"{loss}-{weights}".encode()))
    for trial in range(12):
        inst = instance(rng, int(rng.integers(1, 11)), weights=weights,
                        background=trial % 4 == 3)
        res = E.envelope_oracle(*inst, loss)
        optimum = brute(*inst, loss)
        check(res, optimum, *inst, loss)
        assert res.objective == pytest.approx(optimum, abs=1e-7)
        if weights != "real":
            # integer weights: lattice points, so the bound closes (certified)
            assert res.info["certified"]


@pytest.mark.parametrize("loss", ["iou", "f1"])
def test_exact_against_the_milp_on_larger_graphs(loss):
    rng = np.random.default_rng(7)
    for trial in range(8):
        inst = instance(rng, 40, density=0.1, background=trial == 7)
        res = E.envelope_oracle(*inst, loss)
        exact = milp_oracle(*inst, loss)
        check(res, exact.objective, *inst, loss)
        assert res.objective == pytest.approx(exact.objective, abs=1e-7)


def test_never_worse_than_the_triangle_lp_solvers():
    rng = np.random.default_rng(3)
    for trial in range(10):
        inst = instance(rng, int(rng.integers(6, 25)), density=0.2)
        res = E.envelope_oracle(*inst, "iou")
        for other in (lp_oracle(*inst, "iou", n_triangles=10),
                      decomposition_oracle(*inst, "iou", n_triangles=10)):
            assert res.objective >= other.objective - 1e-9
            # the LP bound holds for the optimum, and ours is certified
            assert other.bound >= res.objective - 1e-9


def test_graphs_too_large_to_polish_stay_exact(monkeypatch):
    # pixel grids skip the greedy flips: make every graph "large", so the
    # planes and the restricted MILP must find the optimum alone
    monkeypatch.setattr(E, "MAX_POLISH_NODES", 0)
    calls = []
    monkeypatch.setattr(E, "polish", lambda *a, **k: calls.append(1))
    rng = np.random.default_rng(17)
    for trial in range(16):
        loss = LOSSES[trial % 3]
        inst = instance(rng, int(rng.integers(1, 11)), weights=("ones", "integer")[trial % 2],
                        background=trial % 4 == 3)
        res = E.envelope_oracle(*inst, loss)
        optimum = brute(*inst, loss)
        check(res, optimum, *inst, loss)
        assert res.objective == pytest.approx(optimum, abs=1e-7)
        assert res.info["certified"]
    assert not calls


def test_boxes_instead_of_points_stay_exact(monkeypatch):
    # large lattices start from boxes: force that path on small graphs
    monkeypatch.setattr(E, "MAX_POINT_LATTICE", 1)
    monkeypatch.setattr(E, "GRID", 2)
    rng = np.random.default_rng(11)
    for trial in range(12):
        loss = LOSSES[trial % 3]
        inst = instance(rng, int(rng.integers(2, 11)), weights=("ones", "integer")[trial % 2])
        res = E.envelope_oracle(*inst, loss)
        optimum = brute(*inst, loss)
        check(res, optimum, *inst, loss)
        assert res.objective == pytest.approx(optimum, abs=1e-7)
        # stopped early, the largest surviving box bound still covers the optimum
        early = E.envelope_oracle(*inst, loss, max_cuts=2, polish=False,
                                  exact_fallback=False)
        check(early, optimum, *inst, loss)


def test_box_bound_covers_every_point_inside():
    rng = np.random.default_rng(9)
    sigma = rng.normal(scale=3.0, size=(7, 2))
    g = rng.normal(size=7)
    lo = rng.integers(0, 6, size=(50, 2)).astype(float)
    hi = lo + rng.integers(0, 4, size=(50, 2))
    bounds = E._box_bounds(lo, hi, sigma, g)
    for k in range(50):
        fp, fn = np.meshgrid(np.arange(lo[k, 0], hi[k, 0] + 1), np.arange(lo[k, 1], hi[k, 1] + 1))
        pts = np.stack([fp.ravel(), fn.ravel()], 1)
        envelope = (g[None, :] - pts @ sigma.T).min(axis=1)
        assert bounds[k] >= envelope.max() - 1e-12
        # and it is the tightest bound of that form: some plane's box maximum
        assert bounds[k] == pytest.approx(min((g[j] - pts @ sigma[j]).max() for j in range(7)))


@pytest.mark.parametrize("max_cuts", [1, 3, 6])
def test_bound_holds_when_the_cut_budget_stops_the_search(max_cuts):
    rng = np.random.default_rng(max_cuts)
    for trial in range(10):
        inst = instance(rng, int(rng.integers(3, 11)), weights=("ones", "real")[trial % 2])
        res = E.envelope_oracle(*inst, "iou", max_cuts=max_cuts, exact_fallback=False,
                                polish=False)
        optimum = brute(*inst, "iou")
        check(res, optimum, *inst, "iou")
        assert res.objective <= optimum + 1e-9
        assert res.info["graph_cuts"] <= max(max_cuts, len(E._initial_slopes(
            get_loss("iou"), *totals(inst[3], inst[4]), E.INITIAL_GRID)))


def test_stuck_points_without_the_milp_keep_a_valid_bound():
    # Np = 0: FP = 1 is optimal but no plane picks it (see test_local_search);
    # without polish and MILP the search must say it is not certified
    u = np.array([-0.25, -0.2, -0.2, -3.0])
    edges = np.array([[1, 2], [2, 3]])
    p = np.array([-0.6, -0.01])
    t, a = np.zeros(4, np.uint8), np.ones(4)
    exact = milp_oracle(u, edges, p, t, a, "iou")
    res = E.envelope_oracle(u, edges, p, t, a, "iou", exact_fallback=False, polish=False)
    assert res.info["status"] == "stuck" and not res.info["certified"]
    assert res.objective < exact.objective - 1e-6
    assert res.bound >= exact.objective - 1e-9
    settled = E.envelope_oracle(u, edges, p, t, a, "iou", polish=False)
    assert settled.info["milp"] and settled.objective == pytest.approx(exact.objective)


def test_persistent_cutter_matches_fresh_graph_cuts():
    rng = np.random.default_rng(5)
    u, edges, p, t, a = instance(rng, 30, density=0.15, weights="integer")
    fp_w, tp_w = a * (1 - t), a * t
    cutter = E._Cutter(u, edges, p, fp_w, tp_w)
    for s_fp, s_fn in rng.normal(scale=2.0, size=(40, 2)):
        lin = s_fp * fp_w - s_fn * tp_w
        y = cutter(s_fp, s_fn)
        fresh = min_cut(u, edges, p, lin)
        value = lambda z: raw_score(u, edges, p, z) + lin @ z   # noqa: E731
        assert value(y) == pytest.approx(value(fresh), abs=1e-9)


def test_restricted_milp_finds_the_best_labelling_with_allowed_counts():
    rng = np.random.default_rng(2)
    u, edges, p, t, a = instance(rng, 9)
    ys = np.array(list(itertools.product([0, 1], repeat=9)), np.uint8)
    fp, fn = counts(ys, t, a)
    values = np.asarray(get_loss("iou")(fp, fn, *totals(t, a))) + score(u, edges, p, ys)
    allowed = np.array([[fp[k], fn[k]] for k in rng.choice(len(ys), 3, replace=False)])
    res = milp_oracle(u, edges, p, t, a, "iou", points=allowed)
    mask = np.zeros(len(ys), bool)
    for q in allowed:
        mask |= (fp == q[0]) & (fn == q[1])
    assert res.objective == pytest.approx(values[mask].max())
    assert any((res.fp, res.fn) == tuple(q) for q in allowed)
    with pytest.raises(ValueError, match="integer"):
        milp_oracle(u, edges, p, t, a, "iou", points=[[0.5, 0]])


def test_a_loss_that_decreases_is_refused():
    rng = np.random.default_rng(0)
    inst = instance(rng, 5)
    decreasing = CallableLoss(lambda fp, fn, n_pos, n_neg: 1.0 - fp / max(n_neg, 1.0))
    with pytest.raises(ValueError, match="does not decrease"):
        E.envelope_oracle(*inst, decreasing)


def test_triangle_oracle_uses_it_by_default_and_reseeds():
    rng = np.random.default_rng(4)
    inst = instance(rng, 10)
    oracle = ProposedOracle()
    first = oracle(*inst, "iou")
    assert first.info["method"] == "envelope" and "labellings" not in first.info
    state = oracle.get_state()
    assert state and all(v.shape[1] == 10 for v in state.values())
    again = ProposedOracle()
    again.set_state(state)
    second = again(*inst, "iou")
    assert second.objective == pytest.approx(first.objective)
    assert second.objective == pytest.approx(brute(*inst, "iou"))


def hull_by_enumeration(xs, ss, point, bound):
    """min over sigma in [-B, B]^2 of max_m s_m + sigma . (x_m - x*), by
    evaluating every vertex of the planes' arrangement in the box: corners,
    two planes equal on a box edge, three planes equal."""
    xs, ss = np.asarray(xs, float), np.asarray(ss, float)
    d = xs - np.asarray(point, float)
    cands = [np.array(c, float) for c in itertools.product([-bound, bound], repeat=2)]
    for i, j in itertools.combinations(range(len(ss)), 2):
        dd, ds = d[i] - d[j], ss[i] - ss[j]
        for k in range(2):
            o = 1 - k
            if abs(dd[o]) > 1e-12:
                for v in (-bound, bound):
                    sg = np.zeros(2)
                    sg[k], sg[o] = v, -(ds + dd[k] * v) / dd[o]
                    if abs(sg[o]) <= bound:
                        cands.append(sg)
        for m in range(j + 1, len(ss)):
            mat = np.array([d[i] - d[j], d[i] - d[m]])
            if abs(np.linalg.det(mat)) > 1e-12:
                sg = np.linalg.solve(mat, -np.array([ss[i] - ss[j], ss[i] - ss[m]]))
                if np.all(np.abs(sg) <= bound * (1 + 1e-12)):
                    cands.append(sg)
    return min(float(np.max(ss + d @ c)) for c in cands)


def test_hull_value_and_slopes_against_enumeration():
    rng = np.random.default_rng(11)
    for _ in range(600):
        m = int(rng.integers(1, 8))
        lattice = rng.random() < 0.5      # integer counts: ties and collinear points
        xs = rng.integers(0, 6, (m, 2)).astype(float) if lattice else 10 * rng.random((m, 2))
        point = rng.integers(0, 6, 2).astype(float) if lattice else 10 * rng.random(2)
        ss = 3 * rng.normal(size=m)
        bound = float(rng.choice([1.0, 5.0, 100.0]))
        hull = E.Hull(bound)
        for x, s in zip(xs, ss):
            hull.add(x, s)
        value, s_fp, s_fn = hull.slopes(point)
        optimum = hull_by_enumeration(xs, ss, point, bound)
        assert value == pytest.approx(optimum, rel=1e-9, abs=1e-9)
        # the slopes are feasible and attain the value
        assert max(abs(s_fp), abs(s_fn)) <= bound * (1 + 1e-12)
        attained = np.max(ss + (xs - point) @ np.array([s_fp, s_fn]))
        assert attained == pytest.approx(value, rel=1e-9, abs=1e-9)


def test_hull_inside_the_points_is_their_concave_envelope():
    # four corners of a square with heights of a plane, and a higher centre
    hull = E.Hull(1e6)
    for x, s in [((0, 0), 0.0), ((4, 0), 4.0), ((0, 4), 8.0), ((4, 4), 12.0)]:
        hull.add(x, s)
    value, s_fp, s_fn = hull.slopes((1, 3))
    assert value == pytest.approx(1 + 2 * 3)      # the plane s = x0 + 2 x1
    assert (s_fp, s_fn) == (pytest.approx(-1), pytest.approx(-2))
    hull.add((2, 2), 10.0)                        # above the plane at (2, 2): 6
    assert hull.slopes((2, 2))[0] == pytest.approx(10.0)
    with pytest.raises(ValueError, match="no point"):
        E.Hull(1.0).slopes((0, 0))


def test_hull_at_a_degenerate_vertex_does_not_cycle():
    """Recorded from a horse training run (43 known labellings, x* one of them):
    the simplex cycled for 500 pivots when rounding noise on zero basic values
    broke the ratio-test ties that Bland's rule relies on."""
    case = np.load(Path(__file__).resolve().parents[1] / "data" / "hull_degenerate_vertex.npz")
    xs, ss, bound, point = case["x"], case["s"], float(case["bound"]), case["point"]
    hull = E.Hull(bound)
    for x, s in zip(xs, ss):
        hull.add(x, s)
    value, s_fp, s_fn = hull.slopes(point)
    assert value == pytest.approx(hull_by_enumeration(xs, ss, point, bound), rel=1e-9)
    attained = np.max(ss + (xs - point) @ np.array([s_fp, s_fn]))
    assert attained == pytest.approx(value, rel=1e-9, abs=1e-9)


def test_hull_at_known_points_of_many_lattice_points():
    """x* on a known point, among many integer points: degenerate vertices."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        m = int(rng.integers(10, 40))
        xs = rng.integers(0, 30, (m, 2)).astype(float)
        ss = rng.normal(size=m) * rng.choice([0.01, 1.0, 100.0])
        point = xs[int(rng.integers(m))]
        bound = float(rng.choice([1.0, 25.0, 1e4]))
        hull = E.Hull(bound)
        for x, s in zip(xs, ss):
            hull.add(x, s)
        value, s_fp, s_fn = hull.slopes(point)
        attained = np.max(ss + (xs - point) @ np.array([s_fp, s_fn]))
        assert attained == pytest.approx(value, rel=1e-9, abs=1e-9)
        # the LP itself, min g - sigma . x* s.t. g - sigma . x_m >= s_m, by HiGHS
        ref = linprog([1.0, -point[0], -point[1]], A_ub=np.c_[-np.ones(m), xs], b_ub=-ss,
                      bounds=[(None, None), (-bound, bound), (-bound, bound)], method="highs")
        assert value == pytest.approx(ref.fun, rel=1e-7, abs=1e-7)


#: Reduced from a penn-fudan person training run (proposed, C 0.3 in
#: superpixel units, potentials below 1e-3): x* lies on the line FN = 495
#: of three known points, and a pivot of rounding noise took all three into
#: the basis, a singular 3x3 system (numpy's LinAlgError stopped training).
COLLINEAR = dict(
    xs=np.array([[522.0, 494.0], [503.0, 495.0], [496.0, 495.0], [493.0, 495.0],
                 [494.0, 496.0]]),
    ss=np.array([0.4095482110169316, 0.4092279511810837, 0.4094510789079195,
                 0.4095433756760542, 0.40852925479303803]),
    point=np.array([494.0, 495.0]), bound=9.0)


def _collinear_hull():
    hull = E.Hull(COLLINEAR["bound"])
    for x, s in zip(COLLINEAR["xs"], COLLINEAR["ss"]):
        hull.add(x, s)
    return hull


def _check_collinear(value, s_fp, s_fn):
    xs, ss, point = COLLINEAR["xs"], COLLINEAR["ss"], COLLINEAR["point"]
    assert value == pytest.approx(
        hull_by_enumeration(xs, ss, point, COLLINEAR["bound"]), rel=1e-9, abs=1e-12)
    attained = np.max(ss + (xs - point) @ np.array([s_fp, s_fn]))
    assert attained == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_hull_with_the_point_on_a_line_of_known_points():
    """The walk itself: no pivot of rounding noise, so no singular basis."""
    _check_collinear(*_collinear_hull().slopes(COLLINEAR["point"]))


def test_hull_falls_back_to_the_lp_at_a_singular_basis(monkeypatch):
    """Should the walk reach a singular basis (as numpy's pivots once did
    here, with a pivot of rounding noise), the answer comes from the LP
    instead of an error."""
    monkeypatch.setattr(E, "_inverse3", lambda columns: None)
    hull = _collinear_hull()
    used = []
    lp = hull._slopes_by_lp
    monkeypatch.setattr(hull, "_slopes_by_lp", lambda *args: used.append(1) or lp(*args))
    _check_collinear(*hull.slopes(COLLINEAR["point"]))
    assert used


def test_inverse3_against_numpy_and_at_singular_bases():
    rng = np.random.default_rng(4)
    for _ in range(200):
        m = rng.normal(size=(3, 3)) * rng.choice([1e-3, 1.0, 1e3], size=(1, 3))
        inverse, reference = np.array(E._inverse3(m.T.tolist())), np.linalg.inv(m)
        np.testing.assert_allclose(inverse, reference, rtol=1e-7,
                                   atol=1e-9 * np.abs(reference).max())
    # three collinear known points (the lifted columns (1, FP, FN)), and a
    # point with the slack columns of the same row
    xs = COLLINEAR["xs"]
    assert E._inverse3([[1.0, *xs[1]], [1.0, *xs[2]], [1.0, *xs[3]]]) is None
    assert E._inverse3([[1.0, *xs[1]], [0.0, -1.0, 0.0], [0.0, 1.0, 0.0]]) is None
    assert E._inverse3([[1.0, *xs[1]], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0]]) is not None


def test_hull_falls_back_to_a_general_lp(monkeypatch):
    """Should the walk not settle within its pivots, the LP gives the same value."""
    rng = np.random.default_rng(8)
    for _ in range(30):
        m = int(rng.integers(1, 12))
        xs, ss = rng.integers(0, 9, (m, 2)).astype(float), rng.normal(size=m)
        point, bound = rng.integers(0, 9, 2).astype(float), float(rng.choice([1.0, 50.0]))
        hull = E.Hull(bound)
        for x, s in zip(xs, ss):
            hull.add(x, s)
        walked = hull.slopes(point)
        monkeypatch.setattr(E.Hull, "MAX_PIVOTS", 0)
        value, s_fp, s_fn = hull.slopes(point)
        monkeypatch.undo()
        assert value == pytest.approx(walked[0], rel=1e-7, abs=1e-7)
        attained = np.max(ss + (xs - point) @ np.array([s_fp, s_fn]))
        assert attained == pytest.approx(value, rel=1e-7, abs=1e-7)


def test_warm_starts_are_kept_per_graph_not_per_size_and_targets():
    """Two graphs with as many nodes and edges and the same targets (images
    without the class, say) keep their own labellings: a shared entry made
    each start from the other's, and results depend on the call order."""
    rng = np.random.default_rng(7)
    u, edges, p, t, a = instance(rng, 8)
    present = {tuple(e) for e in edges}
    missing = next((i, j) for i in range(8) for j in range(i + 1, 8) if (i, j) not in present)
    other = edges.copy()
    other[0] = missing              # another graph: one edge moved
    assert not np.array_equal(other, edges)
    oracle = ProposedOracle()
    oracle(u, edges, p, t, a, "iou")
    oracle(u, other, p, t, a, "iou")
    assert len(oracle.get_state()) == 2


def test_state_of_is_the_state_the_problems_read():
    rng = np.random.default_rng(8)
    problems = [instance(rng, n) for n in (5, 6, 7)]
    oracle = ProposedOracle()
    for problem in problems:
        oracle(*problem, "iou")
    whole = oracle.get_state()
    assert len(whole) == 3
    part = oracle.state_of(problems[1:])
    assert sorted(part) == sorted(k for k in whole if k in part) and len(part) == 2
    for key, value in part.items():
        np.testing.assert_array_equal(value, whole[key])
    # a copy holding only that part answers those problems as the whole does
    light = ProposedOracle()
    light.set_state(part)
    for problem in problems[1:]:
        assert light(*problem, "iou").objective == oracle(*problem, "iou").objective
    assert oracle.state_of([instance(rng, 4)]) == {}


def test_box_bounds_are_the_corner_chosen_per_box_and_plane():
    """The planes are taken in groups of one sign pattern; the bounds are
    those of choosing each plane's corner box by box, to the last bit, with
    zero slopes and several chunks."""
    rng = np.random.default_rng(4)
    for _ in range(60):
        n_planes = int(rng.integers(1, 12))
        sigma = rng.normal(scale=3.0, size=(n_planes, 2))
        sigma[rng.random(sigma.shape) < 0.2] = 0.0
        g = rng.normal(size=n_planes)
        lo = rng.random((int(rng.integers(1, 60)), 2)) * 50
        hi = lo + rng.random(lo.shape) * 10
        fp = np.where(sigma[:, 0] > 0, lo[:, :1], hi[:, :1])
        fn = np.where(sigma[:, 1] > 0, lo[:, 1:], hi[:, 1:])
        expected = (g - fp * sigma[:, 0] - fn * sigma[:, 1]).min(axis=1)
        assert np.array_equal(E._box_bounds(lo, hi, sigma, g, chunk=7), expected)
    assert np.all(E._box_bounds(lo, hi, np.zeros((0, 2)), np.zeros(0)) == np.inf)


def _boxes(rng, integral, n, planes):
    """n random boxes (integer or not) under ``planes`` (an object with
    sigma and g), Delta at hi their coordinates' sum."""
    lo = np.floor(rng.random((n, 2)) * 40) if integral else rng.random((n, 2)) * 40
    hi = lo + (np.floor(rng.random((n, 2)) * 9) if integral else rng.random((n, 2)) * 9)
    boxes = E._Boxes.__new__(E._Boxes)
    boxes.integral, boxes.search = integral, planes
    boxes.dmax_of = lambda h: h.sum(axis=1) / 10.0
    boxes.min_size = np.full(2, 0.05)
    boxes._set(lo, hi, E._box_bounds(lo, hi, planes.sigma, planes.g))
    return boxes


def test_a_split_leaves_out_only_children_the_next_round_drops():
    """With a threshold, a split leaves out the children whose Delta plus
    their parent's plane bound cannot exceed it. After the next round's check
    (drop every box whose upper bound is at most the threshold) the boxes
    are, bit for bit and with their flags, those of a split without it: no
    child that could beat the threshold is lost, and some are never bounded."""
    rng = np.random.default_rng(8)
    left_out = 0
    for integral in (True, False):
        for _ in range(40):
            class Planes:
                sigma = rng.normal(scale=0.3, size=(int(rng.integers(1, 9)), 2))
                g = rng.normal(size=len(sigma)) + 5.0
            n = int(rng.integers(2, 30))
            state = rng.bit_generator.state
            full = _boxes(rng, integral, n, Planes)
            rng.bit_generator.state = state
            part = _boxes(rng, integral, n, Planes)
            which = rng.choice(n, int(rng.integers(1, n + 1)), replace=False)
            full.split(which)
            threshold = float(np.median(full.ub[n - len(which):]))
            part.split(which, threshold=threshold)
            left_out += len(full) - len(part)
            assert np.array_equal(part.point, part._point_like(part.lo, part.hi))
            assert not part.stuck.any() and len(part.stuck) == len(part)
            for boxes in (full, part):
                boxes.keep(boxes.ub > threshold)
            assert np.array_equal(part.rows, full.rows)
            assert np.array_equal(part.point, full.point)
    assert left_out > 0


def test_hull_of_many_points_as_they_come():
    """More points than the hull's first arrays hold (64 columns), queried
    between additions: the value and slopes of the LP solved directly."""
    rng = np.random.default_rng(12)
    bound = 40.0
    hull, xs, ss = E.Hull(bound), [], []
    for k in range(160):
        x = rng.integers(0, 25, 2).astype(float)
        s = float(-0.05 * ((x - 12.0) ** 2).sum() + rng.normal())
        hull.add(x, s)
        xs.append(x)
        ss.append(s)
        if k % 8 == 7:
            point = rng.integers(0, 25, 2).astype(float)
            value, s_fp, s_fn = hull.slopes(point)
            res = linprog([1.0, -point[0], -point[1]],
                          A_ub=np.c_[-np.ones(len(ss)), np.array(xs)], b_ub=-np.array(ss),
                          bounds=[(None, None), (-bound, bound), (-bound, bound)],
                          method="highs")
            assert value == pytest.approx(res.fun, rel=1e-9, abs=1e-9)
            attained = np.max(np.array(ss) + (np.array(xs) - point) @ np.array([s_fp, s_fn]))
            assert attained == pytest.approx(value, rel=1e-9, abs=1e-9)


def test_box_split_children_tile_their_parents():
    """Integer boxes: every lattice point of the split box lies in exactly one
    child, and no child reaches outside it; continuous boxes: the children's
    areas add up to the parent's. The other boxes stay as they were."""
    class NoPlanes:
        sigma, g = np.zeros((0, 2)), np.zeros(0)
    rng = np.random.default_rng(2)
    for integral in (True, False):
        for _ in range(60):
            n = int(rng.integers(1, 6))
            lo = np.floor(rng.random((n, 2)) * 20) if integral else rng.random((n, 2)) * 20
            hi = lo + (np.floor(rng.random((n, 2)) * 7) if integral else rng.random((n, 2)) * 7)
            boxes = E._Boxes.__new__(E._Boxes)
            boxes.integral, boxes.search = integral, NoPlanes
            boxes.dmax_of = lambda h: h.sum(axis=1)
            boxes.min_size = np.full(2, 1e-3)
            boxes._set(lo.copy(), hi.copy(), np.zeros(n))
            w, parts = int(rng.integers(n)), int(rng.integers(2, 5))
            boxes.split(np.array([w]), parts)
            kept = np.delete(np.arange(n), w)
            assert np.array_equal(boxes.lo[:n - 1], lo[kept])
            assert np.array_equal(boxes.hi[:n - 1], hi[kept])
            c_lo, c_hi = boxes.lo[n - 1:], boxes.hi[n - 1:]
            assert np.all(c_lo >= lo[w]) and np.all(c_hi <= hi[w]) and np.all(c_hi >= c_lo)
            assert len(c_lo) <= parts * parts and len(boxes.b) == len(boxes.lo)
            if integral:
                fp, fn = np.meshgrid(np.arange(lo[w, 0], hi[w, 0] + 1),
                                     np.arange(lo[w, 1], hi[w, 1] + 1), indexing="ij")
                pts = np.stack([fp.ravel(), fn.ravel()], 1)
                covers = np.all((pts[:, None] >= c_lo) & (pts[:, None] <= c_hi), axis=2)
                assert np.all(covers.sum(axis=1) == 1)
            else:
                area = np.prod(c_hi - c_lo, axis=1).sum()
                assert area == pytest.approx(np.prod(hi[w] - lo[w]), rel=1e-9, abs=1e-12)
                assert len(c_lo) == parts * parts
