"""scripts/bench_svmperf.py: its generator, its independent F1 inference and a tiny run."""
import json

import numpy as np
import pytest

from segstruct.inference import bl2
from segstruct.inference.losses import get_loss
from segstruct.learn.estimators.multivariate_svm import MultivariateSVM


@pytest.fixture(scope="module")
def bench(load_script):
    return load_script("bench_svmperf")


def test_generator_is_deterministic_with_the_documented_shape(bench):
    X, y = bench.make_problem(400, seed=3)
    X2, y2 = bench.make_problem(400, seed=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, y3 = bench.make_problem(400, seed=4)
    assert not np.array_equal(X, X3) and not np.array_equal(y, y3)
    Xt, yt = bench.make_problem(400, seed=3, split="test")
    assert not np.array_equal(X, Xt)
    assert X.shape == (400, bench.D) == (400, 50) and X.dtype == np.float64
    assert set(np.unique(y)) == {0, 1}
    assert int(y.sum()) == round(bench.POSITIVE_RATE * 400) == 100
    # the classes differ by separation * a unit vector
    shift = X[y == 1].mean(axis=0) - X[y == 0].mean(axis=0)
    assert abs(np.linalg.norm(shift) - bench.SEPARATION) < 1.0


def test_f1_score(bench):
    assert bench.f1_score([1, 1, 0, 0], [1, 0, 1, 0]) == pytest.approx(0.5)
    assert bench.f1_score([1, 0], [0, 0]) == 0.0


def test_independent_cut_matches_bl2(bench):
    X, y = bench.make_problem(120, seed=1)
    Z = np.hstack([X, np.ones((120, 1))])
    rng = np.random.default_rng(0)
    for scale in (0.0, 1e-3, 1e-2, 1.0):
        w = scale * rng.normal(size=Z.shape[1])
        delta, g, hinge = bench.f1_cut(Z, y, w, chunk=7)
        u = Z @ w
        res = bl2(u, np.zeros((0, 2), np.int64), np.zeros(0), y.astype(np.uint8), None,
                  get_loss("f1"))
        assert hinge == pytest.approx(res.objective - float((2.0 * y - 1.0) @ u), abs=1e-9)
        assert hinge == pytest.approx(delta - g @ w, abs=1e-9)


def test_main_on_a_tiny_problem(bench, tmp_path):
    out = tmp_path / "bench.json"
    assert bench.main(["--sizes", "300", "--c", "0.1", "--n-test", "500",
                       "--reference-rtol", "1e-3", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert {"generator", "settings", "code_version", "git", "machine", "runs", "references",
            "svmperf_issue", "total_seconds"} <= set(result)
    assert result["generator"]["seed"] == bench.SEED
    for key in ("numpy", "highspy", "python", "cpu_count"):
        assert key in result["machine"]
    (run,) = result["runs"]
    assert set(bench.RUN_KEYS) <= set(run)
    assert run["n"] == 300 and run["c_perf"] == 0.1
    X, y = bench.make_problem(300, bench.SEED)
    model = MultivariateSVM(loss="f1", C=25.0 * 0.1 / 300 ** 2).fit(X, y)
    assert run["objective"] == pytest.approx(4 * 300 ** 2 * model.objective_, rel=1e-9)
    assert run["objective_check"] == pytest.approx(run["objective"], rel=1e-9)
    ref = result["references"]["300"]["0.1"]
    assert ref["lower_bound"] <= ref["objective"] + 1e-9
    assert run["reference_objective"] == ref["objective"]
    assert 0 <= run["test_f1"] <= 1
    md = out.with_suffix(".md").read_text()
    assert "| 300 | 0.1 |" in md and "another machine" in md
