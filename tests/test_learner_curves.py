"""scripts/learner_curves.py: every learner's curve on tiny problems, and the outputs."""
import json

import numpy as np
import pytest

from segstruct.datasets import make_synthetic_voc
from segstruct.learn.estimators.structured_svm import StructuredSVM


@pytest.fixture
def curves(load_script):
    return load_script("learner_curves")


@pytest.mark.slow
def test_every_learner_stays_above_the_lower_bound(curves, chain_graphs):
    X, Y = chain_graphs(seed=1, n_graphs=10, n=8, lean=1.0)
    X_val, Y_val = chain_graphs(seed=2, n_graphs=6, n=8, lean=1.0)
    est = StructuredSVM(C=5.0, scope="image", tol=1e-3, max_iter=10**6)
    res = curves.learner_curves(est, X, Y, X_val, Y_val, budget_seconds=1.0, n_points=8)
    learners = res["learners"]
    assert list(learners) == list(curves.LEARNERS)
    f_lower = res["F_lower"]
    assert f_lower is not None and res["F_star"] >= f_lower - 1e-6
    # the n-slack cutting planes converge on 10 chain graphs, and certify their
    # own F within C tol of their QP bound
    nslack = learners["nslack"]
    assert nslack["converged"] and nslack["stopped"] == "converged"
    assert nslack["final_primal"] - nslack["lower_bound"] <= est.C * est.tol
    for name, s in learners.items():
        assert s["points"], name
        seconds = [p["seconds"] for p in s["points"]]
        assert seconds == sorted(seconds), name
        assert s["oracle_calls"] > 0, name
        for p in s["points"]:
            # F of any weights is at least any certified lower bound of its minimum
            assert p["primal"] >= f_lower - 1e-6 * max(1.0, abs(f_lower)), (name, p)
            assert 0.0 <= p["val_iou"] <= 1.0
    # recording (and counting oracle calls) does not change what a learner does
    assert learners["nslack"]["final_primal"] == pytest.approx(
        StructuredSVM(**{**est.get_params(), "solver": "nslack"}).fit(X, Y).primal_)


def test_weighted_average_is_what_sgd_returns(curves, chain_graphs):
    from segstruct.learn.solvers.first_order import ImageScopeProblem, stochastic_subgradient
    X, Y = chain_graphs(seed=3, n_graphs=5, n=6)
    average = curves.WeightedAverage(ImageScopeProblem.from_data(X, Y).dim)
    result = stochastic_subgradient(X, Y, C=2.0, max_epochs=3, callback=average.update)
    assert np.allclose(average.mean, result.w)


def test_counting_oracle_shares_its_count_across_copies(curves):
    import copy
    calls = []
    oracle = curves.CountingOracle(lambda *a: calls.append(a))
    twin = copy.deepcopy(oracle)
    oracle(1)
    twin(2)
    assert oracle.calls == twin.calls == 2 and calls == [(1,), (2,)]


@pytest.mark.slow
def test_main_writes_figure_json_and_table(curves, tmp_path):
    root = make_synthetic_voc(tmp_path / "voc", n_train=4, n_val=4)
    out = tmp_path / "out"
    assert curves.main(["--data", str(root), "--class", "horse", "--C", "5",
                        "--budget-seconds", "0.5", "--points", "5",
                        "--cache", str(tmp_path / "cache"), "--out", str(out)]) == 0
    doc = json.loads((out / "curves.json").read_text())
    assert set(doc["results"]["learners"]) == set(curves.LEARNERS)
    assert doc["settings"]["class"] == "horse" and doc["settings"]["C"] == 5.0
    assert "code_version" in doc and "cpu_count" in doc["machine"]
    lines = (out / "table.md").read_text().splitlines()
    assert sum(line.startswith("| ") for line in lines) == 1 + len(curves.LEARNERS)
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
