"""scikit-learn's estimator contract: params, clone, estimator checks, model selection.

scikit-learn is a test dependency only; the library never imports it.
"""
import inspect
import warnings
from functools import partial

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.metrics import f1_score  # noqa: E402
from sklearn.model_selection import (GridSearchCV, KFold, StratifiedKFold,  # noqa: E402
                                     cross_val_score)

from segstruct import MultivariateSVM, StructuredSVM  # noqa: E402
from segstruct.learn.estimators.base import ParamsMixin  # noqa: E402
from segstruct.learn.estimators.crf import CRF  # noqa: E402
from segstruct.learn.estimators.first_order_svm import FirstOrderSVM  # noqa: E402
from segstruct.learn.estimators.lovasz_svm import LovaszSVM  # noqa: E402
from segstruct.learn.methods import estimator_for  # noqa: E402


def points(seed=0, n=60):
    """A noisy linear problem with a third of positives (labels 0 / 1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X @ np.array([1.5, -1.0, 0.5]) + 0.7 * rng.normal(size=n) > 0.6).astype(int)
    return X, y


def proposed_oracle():
    """The proposed method's oracle (it keeps warm-start state between calls)."""
    return estimator_for("proposed", n_triangles=8).oracle


class Scaled(ParamsMixin):
    """A parameter that is an estimator itself (nested ``name__key`` parameters)."""

    def __init__(self, factor=1.0):
        self.factor = factor


# ---------------------------------------------------------------------------
# get_params / set_params / clone

ESTIMATORS = {
    "structured": lambda: StructuredSVM(loss="iou", C=2.0, scope="image",
                                        oracle=proposed_oracle()),
    "multivariate": lambda: MultivariateSVM(loss="iou", C=3.0, fit_intercept=False),
    "first-order-bcfw": lambda: FirstOrderSVM(loss="iou", C=2.0, solver="bcfw", max_iter=50,
                                              oracle=proposed_oracle()),
    "lovasz": lambda: LovaszSVM(C=2.0, scope="image"),
    "crf": lambda: CRF(C=2.0, scope="image"),
    "perceptron": lambda: FirstOrderSVM(solver="perceptron", max_iter=20),
}


def init_names(cls) -> set:
    """The keyword names of every ``__init__`` on ``cls``'s way to object:
    an ``__init__`` with ``**params`` hands them to its base's."""
    names = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        parameters = inspect.signature(vars(klass)["__init__"]).parameters.values()
        names |= {p.name for p in parameters if p.name != "self" and p.kind != p.VAR_KEYWORD}
        if not any(p.kind == p.VAR_KEYWORD for p in parameters):
            break
    return names


@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
def test_params_come_from_init_and_round_trip(kind):
    est = ESTIMATORS[kind]()
    names = init_names(type(est))
    params = est.get_params(deep=True)
    assert set(params) == names == set(est.get_params(deep=False))
    other = type(est)()
    assert other.set_params(**params) is other
    for name, value in other.get_params(deep=True).items():
        assert value is params[name], name
    other.set_params(C=0.25)
    assert other.C == 0.25 and est.C != 0.25
    with pytest.raises(ValueError, match="invalid parameter 'no_such'"):
        other.set_params(no_such=1)


def test_nested_params_of_a_parameter_that_is_an_estimator():
    est = StructuredSVM(oracle=Scaled(2.0))
    params = est.get_params(deep=True)
    assert params["oracle__factor"] == 2.0 and "oracle__factor" not in est.get_params(deep=False)
    est.set_params(oracle__factor=3.0, C=1.5)
    assert est.oracle.factor == 3.0 and est.C == 1.5
    # like scikit-learn: a nested name of a parameter that has none is a ValueError
    with pytest.raises(ValueError, match="invalid parameters \\['x'\\] of 'oracle'"):
        StructuredSVM().set_params(oracle__x=1)


@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
def test_clone_is_unfitted_and_refits_to_the_same_model(kind, chain_graphs):
    est = ESTIMATORS[kind]()
    if kind != "multivariate":
        X, Y = chain_graphs(1)
        weights = lambda m: m.w_  # noqa: E731
    else:
        X, Y = points(1)
        weights = lambda m: np.append(m.coef_, m.intercept_)  # noqa: E731
    fitted = est.fit(X, Y)
    twin = clone(fitted)
    assert twin is not fitted and not hasattr(twin, "w_") and not hasattr(twin, "coef_")
    assert repr(twin) == repr(fitted)
    np.testing.assert_array_equal(weights(twin.fit(X, Y)), weights(fitted))


# ---------------------------------------------------------------------------
# scikit-learn's estimator checks

#: Checks MultivariateSVM fails on purpose, with the reason; the test of
#: such a check is an expected failure (xfail) when it fails in any way.
EXPECTED_FAILURES = {
    "check_estimators_unfitted": (
        "predict before fit raises segstruct.learn.estimators.base.NotFittedError, a ValueError "
        "and an AttributeError like sklearn.exceptions.NotFittedError, but the check wants "
        "that very class, and the library does not import scikit-learn. "
        "sklearn.utils.validation.check_is_fitted works on the estimator "
        "(check_fit_check_is_fitted passes)."),
}


def _check_name(check):
    func = check.func if isinstance(check, partial) else check
    keywords = check.keywords if isinstance(check, partial) else {}
    extra = ",".join(f"{k}={v}" for k, v in sorted(keywords.items()))
    return func.__name__ + (f"({extra})" if extra else "")


def _estimator_checks():
    """(estimator, check) pairs of scikit-learn's checks for MultivariateSVM."""
    with warnings.catch_warnings():
        # "does not inherit from BaseEstimator": on purpose (no run-time sklearn)
        warnings.simplefilter("ignore", UserWarning)
        try:
            from sklearn.utils.estimator_checks import estimator_checks_generator
        except ImportError:                         # scikit-learn < 1.6
            from sklearn.utils.estimator_checks import check_estimator
            return list(check_estimator(MultivariateSVM(), generate_only=True))
        return list(estimator_checks_generator(MultivariateSVM(), legacy=True))


CHECKS = _estimator_checks()


def test_the_estimator_checks_were_collected():
    names = {_check_name(check) for _, check in CHECKS}
    assert len(CHECKS) > 30
    assert {"check_classifiers_train", "check_classifiers_classes",
            "check_n_features_in", "check_fit_score_takes_y"} <= names


@pytest.mark.parametrize("estimator,check", CHECKS,
                         ids=[_check_name(check) for _, check in CHECKS])
def test_sklearn_estimator_check(estimator, check):
    name = _check_name(check).split("(")[0]
    try:
        check(estimator)
    except Exception as err:
        if name in EXPECTED_FAILURES and type(err).__name__ != "SkipTest":
            pytest.xfail(EXPECTED_FAILURES[name])
        raise


# ---------------------------------------------------------------------------
# MultivariateSVM as a binary classifier

def test_any_two_labels_train_the_same_model():
    X, y = points(2)
    reference = MultivariateSVM(C=2.0).fit(X, y)
    for labels in ([-1, 1], ["neg", "pos"], [False, True], [3.0, 7.0]):
        y_named = np.where(y == 1, labels[1], labels[0])
        model = MultivariateSVM(C=2.0).fit(X, y_named)
        np.testing.assert_array_equal(model.classes_, np.asarray(labels))
        np.testing.assert_array_equal(model.coef_, reference.coef_)
        assert model.intercept_ == reference.intercept_
        pred = model.predict(X)
        assert pred.dtype == model.classes_.dtype
        np.testing.assert_array_equal(pred, np.where(reference.predict(X) == 1, labels[1],
                                                     labels[0]))
    with pytest.raises(ValueError, match="Only binary"):
        MultivariateSVM().fit(X, np.arange(len(y)) % 3)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        MultivariateSVM().fit(X, y + 0.5)


def test_score_is_the_accuracy_and_decision_function_agrees_with_predict():
    X, y = points(3)
    model = MultivariateSVM(C=1.0).fit(X, y)
    pred = model.predict(X)
    assert model.score(X, y) == np.mean(pred == y)
    np.testing.assert_array_equal(pred, (model.decision_function(X) > 0).astype(int))
    assert 0.5 < model.score(X, y) < 1.0
    with pytest.raises(ValueError, match="X has 2 features, but MultivariateSVM is "
                                         "expecting 3 features as input"):
        model.predict(X[:, :2])


def test_cross_val_score_with_f1_gives_each_folds_f1():
    X, y = points(4)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(MultivariateSVM(C=0.5), X, y, scoring="f1", cv=cv,
                             error_score="raise")
    expected = [f1_score(y[test], MultivariateSVM(C=0.5).fit(X[train], y[train]).predict(X[test]))
                for train, test in cv.split(X, y)]
    assert np.all(np.isfinite(scores)) and np.all(scores > 0)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("scoring", [None, "f1"])
def test_grid_search_over_C(scoring):
    X, y = points(5)
    grid = [0.01, 1.0, 100.0]
    search = GridSearchCV(MultivariateSVM(loss="f1"), {"C": grid}, scoring=scoring,
                          cv=StratifiedKFold(3), error_score="raise").fit(X, y)
    means = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(means)) and len(means) == len(grid)
    best = search.best_params_["C"]
    assert best == grid[int(np.argmax(means))]
    # the refitted model is a plain fit on all the data at the chosen C
    plain = MultivariateSVM(loss="f1", C=best).fit(X, y)
    np.testing.assert_array_equal(search.best_estimator_.coef_, plain.coef_)
    np.testing.assert_array_equal(search.predict(X), plain.predict(X))


# ---------------------------------------------------------------------------
# StructuredSVM in model selection (X: a list of graphs)

def test_structured_svm_cross_validates_on_graphs(chain_graphs):
    X, Y = chain_graphs(6, n_graphs=9)
    est = StructuredSVM(loss="hamming", scope="image")
    cv = KFold(3)
    scores = cross_val_score(est, X, Y, cv=cv, error_score="raise")
    expected = []
    for train, test in cv.split(X):
        fold = clone(est).fit([X[i] for i in train], [Y[i] for i in train])
        expected.append(fold.score([X[i] for i in test], [Y[i] for i in test]))
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-12)
    search = GridSearchCV(est, {"C": [0.1, 1.0]}, cv=cv, error_score="raise").fit(X, Y)
    assert search.best_params_["C"] in (0.1, 1.0)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_the_library_runs_without_importing_sklearn(tmp_path):
    import subprocess
    import sys
    code = ("import sys, numpy as np\n"
            "from segstruct import MultivariateSVM, StructuredSVM\n"
            "import segstruct.learn.callbacks, segstruct.cli, segstruct.compare, segstruct.io.persistence\n"
            "X = np.array([[0.0], [1.0], [2.0], [3.0]])\n"
            "m = MultivariateSVM().fit(X, [0, 0, 1, 1])\n"
            "m.predict(X); m.score(X, [0, 0, 1, 1]); m.get_params(); repr(m)\n"
            "assert not any(k.split('.')[0] == 'sklearn' for k in sys.modules), 'sklearn'\n")
    # run from elsewhere: in the repository, ./segstruct would shadow the
    # installed package (whose datasets/ and inference/ are mapped in)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)
