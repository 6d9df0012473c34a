"""scripts/bench_inference.py on small random problems (no shared data needed)."""
import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from segstruct.inference._mrf import exact_result
from segstruct.inference.losses import get_loss, totals

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_inference.py"
MODULES = ("cases", "instances", "measure", "report", "targets", "timelimit")


@pytest.fixture(scope="module")
def bench():
    """The script (``bench.script``) and its package's modules (``bench.cases``,
    ...), imported from scripts/ (not installed) and forgotten afterwards."""
    folder = str(SCRIPT.parent)
    sys.path.insert(0, folder)
    try:
        modules = {name: importlib.import_module(f"benchlib.{name}") for name in MODULES}
        yield SimpleNamespace(script=importlib.import_module("bench_inference"), **modules)
    finally:
        sys.path.remove(folder)
        for name in [n for n in sys.modules if n == "bench_inference"
                     or n == "benchlib" or n.startswith("benchlib.")]:
            del sys.modules[name]


def grid_edges(rows, cols):
    idx = np.arange(rows * cols).reshape(rows, cols)
    right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1)
    down = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], 1)
    return np.concatenate([right, down]).astype(np.int64)


def grid_instances(bench, n=3, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        rows, cols = 3, 4
        edges = grid_edges(rows, cols)
        nodes = rows * cols
        t = (rng.random(nodes) < 0.35).astype(np.uint8)
        t[k % nodes] = 1                      # at least one positive
        a = np.ones(nodes)
        a[-1] = 0.0                           # a void-only superpixel
        out.append(bench.instances.Instance(f"random/{k}", rng.normal(0, 0.6, nodes), edges,
                                            -rng.uniform(0, 0.8, len(edges)), t, a))
    return out


def all_zeros_case(bench):
    """A deliberately poor oracle (labels nothing) with a bound that is too low."""
    def make(u, edges, p, t, a, loss):
        def call():
            n_pos, n_neg = totals(t, a)
            res = exact_result(u, edges, p, np.zeros(u.size, np.uint8), t.astype(float), a,
                          get_loss(loss), n_pos, n_neg)
            res.bound = res.objective - 1.0
            return res
        return call
    return bench.cases.Case("all_zeros", "iou", make)


@pytest.fixture(scope="module")
def run(bench):
    cases = bench.cases.default_cases(m_values=(4,), lp_m=4)
    cases["all_zeros"] = all_zeros_case(bench)
    instances = grid_instances(bench)
    per_image = bench.measure.bench_images(instances, cases, repeats=2)
    return cases, instances, per_image, bench.report.summarise(per_image)


def test_case_table(bench):
    cases = bench.cases.default_cases()
    assert list(cases) == ["graphcut_hamming", "proposed_M40", "proposed_M40_decomposition",
                           "proposed_M40_lp", "bl2", "exact_milp", "triangulation_M40"]
    assert [n for n, c in cases.items() if c.unary_only] == ["bl2"]
    assert all(c.timed for c in cases.values())


def test_per_image_schema(run):
    cases, instances, per_image, _ = run
    n = len(instances)
    for key in ("images", "n_nodes", "n_edges", "n_pos", "n_neg"):
        assert len(per_image[key]) == n
    assert per_image["images"] == [i.name for i in instances]
    assert set(per_image["cases"]) == set(cases)
    for name, rec in per_image["cases"].items():
        assert set(rec) == {"ms", "ms_runs", "objective", "bound", "exact_objective",
                            "rel_gap", "info"}
        assert all(len(v) == n for v in rec.values())
        assert all(len(r) == 2 for r in rec["ms_runs"])
        # median of two runs
        assert rec["ms"] == pytest.approx([float(np.median(r)) for r in rec["ms_runs"]])
        assert all(ms > 0 for ms in rec["ms"])
    assert per_image["cases"]["triangulation_M4"]["objective"] == [None] * n
    assert per_image["cases"]["proposed_M40"]["info"][0]["method"] == "envelope"
    assert per_image["cases"]["proposed_M4_decomposition"]["info"][0]["method"] == "decomposition"
    json.dumps(per_image)                     # JSON-able as it is


def test_summary_numbers(bench, run):
    cases, _, per_image, summary = run
    assert set(summary) == set(cases)
    base = float(np.median(per_image["cases"]["graphcut_hamming"]["ms"]))
    for name, row in summary.items():
        assert set(row) == {"n_images", "median_ms", "mean_ms", "ratio_to_baseline",
                            "exact_share", "mean_rel_gap", "max_rel_gap",
                            "bound_checked", "bound_violations", "inexact_images"}
        med = float(np.median(per_image["cases"][name]["ms"]))
        assert row["median_ms"] == pytest.approx(med)
        assert row["ratio_to_baseline"] == pytest.approx(med / base)
    assert summary["graphcut_hamming"]["ratio_to_baseline"] == 1.0
    for name in ("graphcut_hamming", "exact_milp", "bl2"):
        assert summary[name]["exact_share"] == 1.0, name
        assert summary[name]["max_rel_gap"] <= 1e-6, name
    for name in ("proposed_M40", "proposed_M4_decomposition", "proposed_M4_lp"):
        row = summary[name]
        assert row["bound_checked"] == 3 and row["bound_violations"] == 0, name
        assert row["max_rel_gap"] >= -1e-9       # never better than the optimum
        for b, e in zip(per_image["cases"][name]["bound"],
                        per_image["cases"][name]["exact_objective"]):
            assert b >= e - 1e-6
    assert summary["triangulation_M4"]["exact_share"] is None
    assert summary["triangulation_M4"]["bound_checked"] == 0


def test_poor_case_is_caught(run):
    _, _, per_image, summary = run
    row = summary["all_zeros"]
    gaps = per_image["cases"]["all_zeros"]["rel_gap"]
    assert row["exact_share"] == pytest.approx(np.mean(np.asarray(gaps) <= 1e-6))
    assert row["exact_share"] < 1.0 and row["max_rel_gap"] > 1e-6
    assert row["bound_violations"] == 3
    assert row["inexact_images"] == [img for img, g in zip(per_image["images"], gaps)
                                     if g > 1e-6]
    assert summary["exact_milp"]["inexact_images"] == []


def test_bl2_uses_the_unary_only_problem(bench, run):
    _, instances, per_image, _ = run
    from segstruct.inference.milp import milp_oracle
    inst = instances[0]
    exact = milp_oracle(inst.u, inst.edges, np.zeros_like(inst.p), inst.t, inst.a, "iou")
    assert per_image["cases"]["bl2"]["exact_objective"][0] == pytest.approx(exact.objective)
    # ... which differs from the pairwise problem's optimum
    assert per_image["cases"]["exact_milp"]["exact_objective"][0] != pytest.approx(
        exact.objective)


def test_merge_and_table(bench, run):
    cases, instances, per_image, summary = run
    both = bench.measure.merge([per_image, per_image])
    assert both["images"] == per_image["images"] * 2
    assert both["cases"]["bl2"]["ms"] == per_image["cases"]["bl2"]["ms"] * 2
    overall = bench.report.summarise(both)
    assert overall["graphcut_hamming"]["n_images"] == 2 * len(instances)
    table = bench.report.markdown_table({"random": summary, "overall": overall})
    lines = table.strip().splitlines()
    assert len(lines) == 2 + 2 * len(cases)
    assert all(line.count("|") == 10 for line in lines)
    assert "| random | exact_milp | 3 |" in table


def test_min_timer_and_bad_arguments(bench):
    instances = grid_instances(bench, n=1, seed=1)
    cases = {k: v for k, v in bench.cases.default_cases((4,), None, False).items()
             if k in ("graphcut_hamming", "bl2")}
    out = bench.measure.bench_images(instances, cases, repeats=3, timer="min")
    rec = out["cases"]["bl2"]
    assert rec["ms"][0] == min(rec["ms_runs"][0])
    with pytest.raises(ValueError):
        bench.measure.bench_images(instances, cases, repeats=0)
    with pytest.raises(ValueError):
        bench.measure.bench_images(instances, cases, timer="mean")


def test_missing_shared_data_is_a_clear_error(bench, tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        bench.script.main(["--shared-data", str(tmp_path / "nowhere"), "-q"])
    assert "not found" in str(err.value) and "--shared-data" in str(err.value)
    with pytest.raises(SystemExit) as err:
        bench.script.main(["--shared-data", str(tmp_path), "--data-sets", "camvid_voc:car"])
    assert "camvid_voc" in str(err.value)
    with pytest.raises(SystemExit):
        bench.script.main(["--shared-data", str(tmp_path), "--data-sets", "camvid_voc"])
    assert "NAME:CLASS" in capsys.readouterr().err


# --------------------------------------------------------------------------
# Issue 7's targets


def target_inputs(sp_ratios=(10.0, 20.0, 30.0), objective=(5.0, 6.0, 7.0),
                  lp_objective=(5.0, 6.0, 7.0), n=100, n_exact=100, n_finite=None,
                  violations=0, ds_seconds=3.0, px_ratio=10.0, timed_out=False):
    gc_ms = 50.0
    return {
        "superpixel": {"images": [f"img{k}" for k in range(len(sp_ratios))],
                       "ratios": list(sp_ratios), "objective": list(objective),
                       "lp_objective": None if lp_objective is None else list(lp_objective)},
        "exactness": {"n": n, "n_exact": n_exact,
                      "n_finite_bound": n if n_finite is None else n_finite,
                      "n_bound_violations": violations,
                      "by_source": {"real": {"n": 40, "n_exact": min(40, n_exact)},
                                    "random50": {"n": n - 40,
                                                 "n_exact": max(0, n_exact - 40)}}},
        "dataset_scope": {"proposed_s": ds_seconds, "graphcut_ms": 4.0,
                          "triangulation_s": 0.5, "n_nodes": 11169, "n_edges": 25363},
        "pixel_level": [{"graphcut_ms": gc_ms, "proposed_s": px_ratio * gc_ms / 1e3,
                         "timed_out": timed_out, "n_nodes": 172800}],
    }


def verdict(bench, **kw):
    return {t["name"]: t for t in bench.targets.targets_from(target_inputs(**kw))}


def test_targets_schema_and_json(bench):
    targets = json.loads(json.dumps(bench.targets.targets_from(target_inputs())))
    assert [t["name"] for t in targets] == ["superpixel_M40_ratio", "exact_share",
                                            "dataset_scope_seconds", "pixel_level_ratio"]
    assert list(bench.targets.TARGET_NAMES) == [t["name"] for t in targets]
    for t in targets:
        assert set(t) == {"name", "value", "goal", "met", "detail"}
        assert {"name", "value", "goal", "met"} <= set(t)
        assert isinstance(t["value"], float) and isinstance(t["met"], bool)
        assert t["met"] is True, t
    assert [t["goal"] for t in targets] == [50.0, 0.99, 5.0, 20.0]
    table = bench.targets.targets_table(targets).strip().splitlines()
    assert len(table) == 6 and all(line.count("|") == 5 for line in table)
    assert "| superpixel_M40_ratio | 20 | <= 50 | yes |" in table


def test_target_superpixel_ratio(bench):
    assert verdict(bench, sp_ratios=(40.0, 50.0, 60.0))["superpixel_M40_ratio"]["met"]
    t = verdict(bench, sp_ratios=(49.0, 51.0, 60.0))["superpixel_M40_ratio"]
    assert t["value"] == 51.0 and not t["met"]
    # the objective must not fall below the plain LP's (1e-9 relative)
    t = verdict(bench, objective=(5.0, 6.0 - 1e-6, 7.0))["superpixel_M40_ratio"]
    assert t["value"] == 20.0 and not t["met"] and "2 / 3" in t["detail"]
    assert verdict(bench, objective=(5.0, 6.0 * (1 - 1e-10), 7.0))[
        "superpixel_M40_ratio"]["met"]
    assert verdict(bench, objective=(5.0, 9.0, 7.0))["superpixel_M40_ratio"]["met"]
    assert not verdict(bench, lp_objective=None)["superpixel_M40_ratio"]["met"]


def test_target_exact_share(bench):
    t = verdict(bench, n_exact=99)["exact_share"]
    assert t["value"] == pytest.approx(0.99) and t["met"]
    t = verdict(bench, n_exact=98)["exact_share"]
    assert t["value"] == pytest.approx(0.98) and not t["met"]
    # a missing / infinite bound or a bound below the optimum fails it too
    assert not verdict(bench, n_finite=99)["exact_share"]["met"]
    assert not verdict(bench, violations=1)["exact_share"]["met"]


def test_target_dataset_scope(bench):
    assert verdict(bench, ds_seconds=4.99)["dataset_scope_seconds"]["met"]
    t = verdict(bench, ds_seconds=5.0)["dataset_scope_seconds"]
    assert t["value"] == 5.0 and not t["met"]          # strictly under 5 s
    assert "ratio 1250" in verdict(bench, ds_seconds=5.0)["dataset_scope_seconds"]["detail"]


def test_target_pixel_level(bench):
    t = verdict(bench, px_ratio=20.0)["pixel_level_ratio"]
    assert t["value"] == pytest.approx(20.0) and t["met"]
    assert not verdict(bench, px_ratio=20.5)["pixel_level_ratio"]["met"]
    # a time-out: the value is only a lower bound, never met, and says so
    t = verdict(bench, px_ratio=5.0, timed_out=True)["pixel_level_ratio"]
    assert not t["met"] and t["detail"].startswith(">= ")
    assert "| pixel_level_ratio | >= 5 | <= 20 | NO |" in bench.targets.targets_table([t])


def test_targets_not_measured(bench):
    targets = bench.targets.targets_from({"superpixel": None, "exactness": None,
                                  "dataset_scope": None, "pixel_level": None})
    assert [t["name"] for t in targets] == list(bench.targets.TARGET_NAMES)
    assert all(t["value"] is None and t["met"] is False for t in targets)
    assert all("not measured" in t["detail"] for t in targets)


def test_target_inputs_from_measurements(bench, run):
    _, instances, per_image, _ = run
    sp = bench.targets.superpixel_inputs(per_image, "proposed_M40", "proposed_M4_lp")
    cases = per_image["cases"]
    assert sp["ratios"] == pytest.approx([c / b for c, b in zip(
        cases["proposed_M40"]["ms"], cases["graphcut_hamming"]["ms"])])
    assert sp["lp_objective"] == cases["proposed_M4_lp"]["objective"]
    # the envelope inference is never worse than the plain LP
    assert all(o >= q - 1e-9 for o, q in zip(sp["objective"], sp["lp_objective"]))
    assert bench.targets.superpixel_inputs(per_image)["lp_objective"] is None   # no proposed_M40_lp
    assert bench.targets.superpixel_inputs(per_image, "proposed_M15") is None   # no such case
    ex = bench.targets.exactness_inputs({"a": per_image, "b": per_image}, "proposed_M40")
    assert ex["n"] == 2 * len(instances) and ex["n_finite_bound"] == ex["n"]
    assert ex["n_bound_violations"] == 0 and set(ex["by_source"]) == {"a", "b"}
    poor = bench.targets.exactness_inputs({"a": per_image}, "all_zeros")
    assert poor["n_bound_violations"] == len(instances)
    assert poor["n_exact"] == sum(g <= 1e-6 for g in cases["all_zeros"]["rel_gap"])
    targets = bench.targets.targets_from({"superpixel": sp, "exactness": poor,
                                  "dataset_scope": None, "pixel_level": None})
    assert not targets[1]["met"]
    json.dumps(targets)


def test_random_instances(bench):
    insts = bench.instances.random_instances(20, seed=3)
    assert len(insts) == 20
    degrees = []
    for k, inst in enumerate(insts):
        assert inst.u.shape == (50,) and inst.t.shape == (50,) and inst.a.shape == (50,)
        assert inst.edges.ndim == 2 and inst.edges.shape[1] == 2
        assert inst.p.shape == (len(inst.edges),) and np.all(inst.p <= 0)
        assert np.all(inst.edges[:, 0] < inst.edges[:, 1])           # no self-loops
        assert len(np.unique(inst.edges, axis=0)) == len(inst.edges)  # no repeats
        assert inst.edges.min() >= 0 and inst.edges.max() < 50
        assert np.all(inst.a == 1) and set(np.unique(inst.t)) <= {0, 1}
        if k % 10 == 9:
            assert not inst.t.any() and inst.name.endswith("-bg")
        degrees.append(2 * len(inst.edges) / 50)
    assert 3.5 <= np.mean(degrees) <= 4.0
    share = np.mean(np.concatenate([i.t for k, i in enumerate(insts) if k % 10 != 9]))
    assert 0.2 < share < 0.4
    again = bench.instances.random_instances(20, seed=3)
    for x, y in zip(insts, again):
        for key in ("u", "edges", "p", "t", "a"):
            np.testing.assert_array_equal(getattr(x, key), getattr(y, key))
    other = bench.instances.random_instances(2, seed=4)
    assert not np.array_equal(other[0].u, insts[0].u)


def tiny_image(h=3, w=4):
    sp = np.zeros((h, w), np.int64)
    sp[:, w // 2:] = 1                                   # two superpixels
    lab = np.zeros((h, w, 3))
    lab[:, w // 2:, 0] = 50.0                            # a colour edge between them
    target = np.zeros((h, w), bool)
    target[:, w // 2:] = True
    void = np.zeros((h, w), bool)
    void[0, 0] = void[h - 1, w - 1] = True
    return sp, lab, target, void


def test_pixel_grid(bench):
    h, w = 3, 4
    sp, lab, target, void = tiny_image(h, w)
    u_sp = np.array([-3.0, 6.0])
    inst, params = bench.instances.pixel_grid(sp, u_sp, lab, target, void)
    assert inst.u.shape == (h * w,)
    assert inst.edges.shape == (h * (w - 1) + w * (h - 1), 2)
    assert len(np.unique(np.sort(inst.edges, 1), axis=0)) == len(inst.edges)
    d = np.abs(inst.edges[:, 1] - inst.edges[:, 0])
    assert set(d) == {1, w}                               # right and down neighbours
    horiz = inst.edges[d == 1]
    assert np.all(horiz[:, 0] // w == horiz[:, 1] // w)   # never across a row end
    # unaries: the superpixel's divided by its pixel count (6 pixels each)
    np.testing.assert_allclose(inst.u, (u_sp / 6.0)[sp.ravel()])
    # weights 0 on void, 1 elsewhere; targets the class pixels
    np.testing.assert_array_equal(inst.a, (~void).ravel().astype(float))
    assert inst.a[0] == 0 and inst.a[-1] == 0 and inst.a.sum() == h * w - 2
    np.testing.assert_array_equal(inst.t, target.ravel().astype(np.uint8))
    # pairwise: -lambda within a colour, weaker across the colour edge
    lam = 0.1 * np.median(np.abs(inst.u))
    assert params["lambda"] == pytest.approx(lam)
    assert np.all(inst.p <= 0) and inst.p.min() == pytest.approx(-lam)
    across = sp.ravel()[inst.edges[:, 0]] != sp.ravel()[inst.edges[:, 1]]
    assert across.sum() == h
    d2 = 50.0 ** 2
    sigma2 = d2 * h / len(inst.edges)
    assert params["sigma2"] == pytest.approx(sigma2)
    np.testing.assert_allclose(inst.p[across], -lam * np.exp(-d2 / (2 * sigma2)))
    np.testing.assert_allclose(inst.p[~across], -lam)


def pixel_problem(bench, h=24, w=24, seed=0):
    rng = np.random.default_rng(seed)
    sp = (np.arange(h)[:, None] // 6) * (w // 6) + np.arange(w)[None, :] // 6
    u_sp = rng.normal(0, 20.0, sp.max() + 1)
    lab = rng.normal(50, 10, (h, w, 3))
    target = np.zeros((h, w), bool)
    target[5:15, 6:18] = True
    void = np.zeros((h, w), bool)
    void[0] = True
    return bench.instances.pixel_grid(sp, u_sp, lab, target, void, name="toy/pixels")


def test_measure_pixel_in_process(bench):
    from segstruct.inference.proposed import ProposedOracle
    inst, params = pixel_problem(bench, 12, 12)
    r = bench.measure.measure_pixel(inst, params, repeats=2, timeout=None, n_triangles=6)
    assert not r["timed_out"] and r["proposed_s"] > 0 and len(r["graphcut_ms_runs"]) == 2
    assert r["ratio_to_graphcut"] == pytest.approx(1e3 * r["proposed_s"] / r["graphcut_ms"])
    assert r["n_nodes"] == 144 and r["n_edges"] == 2 * 12 * 11
    ref = ProposedOracle(6)(inst.u, inst.edges, inst.p, inst.t, inst.a, "iou")
    assert r["objective"] == pytest.approx(ref.objective)
    assert r["bound"] >= r["objective"] - 1e-9
    json.dumps(r)


def test_pixel_time_limit_worker(bench, monkeypatch):
    # the spawned worker imports benchlib.timelimit from scripts/
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    inst, _ = pixel_problem(bench, 12, 12)
    done = bench.timelimit.proposed_with_time_limit(inst, timeout=120.0, n_triangles=6)
    assert not done["timed_out"] and done["objective"] is not None
    # the default (envelope) solver builds no triangulation
    assert done["triangulation_s"] is None and done["proposed_s"] < 120
    inst, _ = pixel_problem(bench, 60, 60)
    cut = bench.timelimit.proposed_with_time_limit(inst, timeout=0.0, n_triangles=40)
    assert cut["timed_out"] and cut["proposed_s"] == 0.0 and cut["objective"] is None


def test_measure_dataset_scope(bench):
    insts = bench.instances.random_instances(3, n_nodes=20, seed=1)
    from segstruct.feature_map import Graph, disjoint_union
    graphs = [Graph(np.zeros((20, 1)), i.edges, np.zeros((len(i.edges), 1))) for i in insts]
    union = disjoint_union(graphs)
    inst = bench.instances.Instance("union", np.concatenate([i.u for i in insts]), union.edges,
                                    np.concatenate([i.p for i in insts]),
                                    np.concatenate([i.t for i in insts]),
                                    np.concatenate([i.a for i in insts]))
    r = bench.measure.measure_dataset_scope(inst, repeats=2, n_triangles=6)
    assert r["n_nodes"] == 60 and r["n_edges"] == sum(len(i.edges) for i in insts)
    assert r["proposed_s"] > 0 and r["triangulation_s"] is None     # envelope: none
    assert r["bound"] >= r["objective"] - 1e-9
    assert r["info"]["method"] == "envelope"
    json.dumps(r)


def test_a_call_past_the_limit_is_a_time_out(bench):
    # the result reached the pipe before the parent looked: still a time-out
    started = ("started", {"triangulation_s": None})
    done = ("done", {"proposed_s": 0.5, "objective": 1.0, "bound": None, "info": {}})
    late = bench.timelimit._outcome([started, done], "case", 0.1, 600.0)
    assert late["timed_out"] and late["proposed_s"] == 0.1 and late["objective"] is None
    kept = bench.timelimit._outcome([started, done], "case", 1.0, 600.0)
    assert not kept["timed_out"] and kept["proposed_s"] == 0.5 and kept["objective"] == 1.0
    assert not bench.timelimit._outcome([started, done], "case", None, 600.0)["timed_out"]
