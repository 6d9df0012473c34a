"""Decisions from a fitted model (``segstruct.decisions``) and on the command
line: the data-set decision against brute force over every labelling of the
evaluation set, the temperature fit against a known temperature, and
``train --calibrate``, ``predict --decision``, ``compare --decisions``."""
import itertools
import json

import numpy as np
import pytest

from segstruct.cli import main
from segstruct.decisions import decide, fit_temperature, node_areas
from segstruct.inference.decisions import expected_measure
from segstruct.learn.estimators.crf import CRF
from segstruct.feature_map import Graph
from segstruct.toy import chain_problem

SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]


def _tiny():
    X, Y = chain_problem(n_graphs=6, n_nodes=5, noise=0.8, seed=3)
    return CRF(C=0.3).fit(X, Y), X[:2]


def check_dataset_decision(decide_fn, est, X, measure):
    """The data-set decision has the largest measure of the expected counts of
    every labelling of all of X's nodes together (brute force)."""
    q = np.concatenate(est.marginals(X))
    a = np.concatenate([node_areas(x) for x in X])
    best = max(expected_measure(np.array(y), q, a, measure)
               for y in itertools.product([0, 1], repeat=q.size))
    got = np.concatenate(decide_fn(est, X))
    assert expected_measure(got, q, a, measure) == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("decision,measure", [("expected-iou", "iou"),
                                              ("expected-fbeta", "fbeta")])
def test_dataset_decision_is_the_best_labelling_of_the_set(decision, measure):
    est, X = _tiny()
    check_dataset_decision(lambda e, xs: decide(e, xs, decision, "dataset"), est, X, measure)


def test_image_decision_is_the_best_per_image():
    est, X = _tiny()
    per_image = decide(est, X, "expected-iou", "image")
    for x, y in zip(X, per_image):
        check_dataset_decision(lambda e, xs, y=y: [y], est, [x], "iou")
    # the check can fail: the marginals' 1/2 rule is not the set's best decision here
    with pytest.raises(AssertionError):
        check_dataset_decision(lambda e, xs: decide(e, xs, "marginal"), est, X, "iou")


def test_map_and_marginal_decisions():
    est, X = _tiny()
    assert all(np.array_equal(a, b) for a, b in zip(decide(est, X, "map"), est.predict(X)))
    assert all(np.array_equal(y, (q > 0.5).astype(np.uint8))
               for y, q in zip(decide(est, X, "marginal"), est.marginals(X)))
    with pytest.raises(ValueError, match="unknown decision"):
        decide(est, X, "bayes")
    with pytest.raises(ValueError, match="decision scope"):
        decide(est, X, "expected-iou", scope="pixel")


def test_image_decision_from_samples():
    est, X = _tiny()
    a = decide(est, X, "expected-iou", "image", samples=200, seed=1)
    again = decide(est, X, "expected-iou", "image", samples=200, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip(a, again))       # seeded
    assert [y.shape for y in a] == [(x.unary.shape[0],) for x in X]
    with pytest.raises(ValueError, match="image scope"):
        decide(est, X, "expected-iou", "dataset", samples=10)
    with pytest.raises(ValueError, match="uses none"):
        decide(est, X, "marginal", "image", samples=10)


def test_node_areas_count_pixels():
    g = Graph(np.zeros((3, 1)), np.zeros((0, 2), int), np.zeros((0, 1)))
    np.testing.assert_array_equal(node_areas(g), [1, 1, 1])
    g.segments = np.array([[0, 0, 2], [0, 1, 2]])
    np.testing.assert_array_equal(node_areas(g), [3, 1, 2])


class _Known:
    """An 'estimator' whose fit sets known weights (the truth times T0), so
    that scores / T0 are the true log-odds of the labels."""

    pairwise = False

    def __init__(self, w):
        self.w = w

    def fit(self, X, Y):
        self.w_ = self.w
        return self


@pytest.mark.parametrize("T0", [0.25, 4.0])
def test_temperature_fit_recovers_a_known_temperature(T0):
    rng = np.random.default_rng(0)
    w_true = np.array([1.5, -0.3])
    X, Y = [], []
    for _ in range(60):
        u = np.column_stack([rng.normal(size=40), np.ones(40)])
        q = 1 / (1 + np.exp(-2 * u @ w_true))      # p(y = 1) = sigmoid(score(1) - score(0))
        X.append(Graph(u, np.zeros((0, 2), int), np.zeros((0, 0))))
        Y.append((rng.random(40) < q).astype(np.int64))
    T, info = fit_temperature(lambda: _Known(w_true * T0), X, Y, folds=3)
    assert abs(np.log(T / T0)) <= np.log(1.3) and not info["at_edge"]
    # T is the best of every temperature tried
    assert info["log_likelihood"][info["temperatures"].index(T)] == max(info["log_likelihood"])
    assert info["temperatures"] == sorted(info["temperatures"])


# ------------------------------------------------------------------ command line
def test_crf_model_predicts_with_every_decision(data_root, tmp_path, capsys):
    from segstruct.io.persistence import load_model
    cache = ["--cache", str(tmp_path / "c")]
    model = tmp_path / "crf"
    assert main(["train", "--data", str(data_root), "--class", "car", "--method", "crf",
                 "--C", "1", "--out", str(model), *cache, *SMALL]) == 0
    est, _, _, doc = load_model(model)
    assert doc["temperature"] == 1.0 and est.temperature_ == 1.0
    masks = {}
    for decision in ("map", "marginal", "expected-iou"):
        out = tmp_path / decision
        assert main(["predict", "--model", str(model), "--data", str(data_root), "--split",
                     "val", "--decision", decision, "--out", str(out), *cache, "-q"]) == 0
        index = json.loads((out / "index.json").read_text())
        assert index["decision"] == decision
        masks[decision] = sum(sum(e["class_pixels"].values()) for e in index["images"])
    # expected IoU labels at least as much as the marginals' 1/2 rule: its
    # threshold lies at or below 1/2 (IoU's ratio is at most 1)
    assert masks["expected-iou"] >= masks["marginal"]
    out = tmp_path / "sampled"
    assert main(["predict", "--model", str(model), "--data", str(data_root), "--split", "val",
                 "--decision", "expected-iou", "--samples", "50", "--out", str(out), *cache,
                 "-q"]) == 0
    assert "50 Gibbs samples" in json.loads((out / "index.json").read_text())["combination"]
    with pytest.raises(SystemExit):
        main(["predict", "--model", str(model), "--data", str(data_root), "--split", "val",
              "--samples", "5", "--out", str(tmp_path / "bad"), *cache, "-q"])
    assert "--samples" in capsys.readouterr().err


@pytest.mark.slow
def test_predict_decision_needs_a_temperature(data_root, tmp_path, capsys):
    cache = ["--cache", str(tmp_path / "c")]
    plain, calibrated = tmp_path / "plain", tmp_path / "calibrated"
    assert main(["train", "--data", str(data_root), "--class", "car", "--C", "1",
                 "--out", str(plain), *cache, *SMALL]) == 0
    with pytest.raises(SystemExit) as exc:
        main(["predict", "--model", str(plain), "--data", str(data_root), "--split", "val",
              "--decision", "expected-iou", "--out", str(tmp_path / "o"), *cache, "-q"])
    assert exc.value.code == 2 and "--calibrate" in capsys.readouterr().err
    assert main(["train", "--data", str(data_root), "--class", "car", "--C", "1",
                 "--calibrate", "--out", str(calibrated), *cache, *SMALL]) == 0
    doc = json.loads((tmp_path / "calibrated.json").read_text())
    assert doc["temperature"] > 0 and doc["temperature_fit"]["folds"] == 3
    assert main(["predict", "--model", str(calibrated), "--data", str(data_root), "--split",
                 "val", "--decision", "expected-iou", "--out", str(tmp_path / "o"), *cache,
                 "-q"]) == 0
    with pytest.raises(SystemExit):
        main(["train", "--data", str(data_root), "--class", "car", "--method", "crf",
              "--calibrate", "--out", str(tmp_path / "x"), *cache, *SMALL])
    assert "crf model's scores are its log-probabilities" in capsys.readouterr().err


@pytest.mark.slow
def test_compare_scores_every_decision(data_root, tmp_path):
    out = tmp_path / "o"
    assert main(["compare", "--data", str(data_root), "--classes", "car", "--methods", "bl1",
                 "crf", "--C", "1", "--decisions", "expected-iou", "marginal", "--no-figures",
                 "--out", str(out), "--cache", str(tmp_path / "c"), *SMALL]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["decisions"] == ["map", "expected-iou", "marginal"]
    runs = {r["method"]: r for r in results["results"]}
    for r in runs.values():
        scores = r["decisions"]["scores"]
        assert set(scores) == {"map", "expected-iou", "marginal"}
        # the map decision is the record's own score
        assert scores["map"]["eval_score"] == r["eval_score"]
    assert runs["crf"]["decisions"]["temperature"] == 1.0
    assert runs["bl1"]["decisions"]["temperature"] > 0 and "temperature_fit" in runs["bl1"]
    table = (out / "table.md").read_text()
    assert "VOC IoU % by decision" in table and "crf expected-iou" in table
