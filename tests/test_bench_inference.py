"""scripts/bench_inference.py on small random problems (no shared data needed)."""
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from segstruct.inference.graphcut import _result
from segstruct.losses import get_loss, totals

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_inference.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_inference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def grid_edges(rows, cols):
    idx = np.arange(rows * cols).reshape(rows, cols)
    right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1)
    down = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], 1)
    return np.concatenate([right, down]).astype(np.int64)


def random_instances(bench, n=3, seed=0):
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
        out.append(bench.Instance(f"random/{k}", rng.normal(0, 0.6, nodes), edges,
                                  -rng.uniform(0, 0.8, len(edges)), t, a))
    return out


def all_zeros_case(bench):
    """A deliberately poor oracle (labels nothing) with a bound that is too low."""
    def make(u, edges, p, t, a, loss):
        def call():
            n_pos, n_neg = totals(t, a)
            res = _result(u, edges, p, np.zeros(u.size, np.uint8), t.astype(float), a,
                          get_loss(loss), n_pos, n_neg)
            res.bound = res.objective - 1.0
            return res
        return call
    return bench.Case("all_zeros", "iou", make)


@pytest.fixture(scope="module")
def run(bench):
    cases = bench.default_cases(m_values=(4,), lp_m=4)
    cases["all_zeros"] = all_zeros_case(bench)
    instances = random_instances(bench)
    per_image = bench.bench_images(instances, cases, repeats=2)
    return cases, instances, per_image, bench.summarise(per_image)


def test_case_table(bench):
    cases = bench.default_cases()
    assert list(cases) == ["graphcut_hamming", "proposed_M15", "proposed_M40",
                           "proposed_M40_lp", "bl2", "exact_milp",
                           "triangulation_M15", "triangulation_M40"]
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
    assert per_image["cases"]["proposed_M4"]["info"][0]["method"] == "decomposition"
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
    for name in ("proposed_M4", "proposed_M4_lp"):
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
    both = bench.merge([per_image, per_image])
    assert both["images"] == per_image["images"] * 2
    assert both["cases"]["bl2"]["ms"] == per_image["cases"]["bl2"]["ms"] * 2
    overall = bench.summarise(both)
    assert overall["graphcut_hamming"]["n_images"] == 2 * len(instances)
    table = bench.markdown_table({"random": summary, "overall": overall})
    lines = table.strip().splitlines()
    assert len(lines) == 2 + 2 * len(cases)
    assert all(line.count("|") == 10 for line in lines)
    assert "| random | exact_milp | 3 |" in table


def test_min_timer_and_bad_arguments(bench):
    instances = random_instances(bench, n=1, seed=1)
    cases = {k: v for k, v in bench.default_cases((4,), None, False).items()
             if k in ("graphcut_hamming", "bl2")}
    out = bench.bench_images(instances, cases, repeats=3, timer="min")
    rec = out["cases"]["bl2"]
    assert rec["ms"][0] == min(rec["ms_runs"][0])
    with pytest.raises(ValueError):
        bench.bench_images(instances, cases, repeats=0)
    with pytest.raises(ValueError):
        bench.bench_images(instances, cases, timer="mean")


def test_missing_shared_data_is_a_clear_error(bench, tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        bench.main(["--shared-data", str(tmp_path / "nowhere"), "-q"])
    assert "not found" in str(err.value) and "--shared-data" in str(err.value)
    with pytest.raises(SystemExit) as err:
        bench.main(["--shared-data", str(tmp_path), "--data-sets", "camvid_voc:car"])
    assert "camvid_voc" in str(err.value)
    with pytest.raises(SystemExit):
        bench.main(["--shared-data", str(tmp_path), "--data-sets", "camvid_voc"])
    assert "NAME:CLASS" in capsys.readouterr().err
