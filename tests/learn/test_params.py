"""Parameter constraints, declared once per estimator and checked in one place."""
from numbers import Integral, Real

import numpy as np
import pytest

from segstruct.learn.estimators.base import POSITIVE, Interval, Options, check_param
from segstruct.learn.estimators.lovasz_svm import LovaszSVM
from segstruct.learn.estimators.multivariate_svm import MultivariateSVM
from segstruct.learn.estimators.projection_svm import ProjectionSVM
from segstruct.learn.estimators.structured_svm import SOLVERS, StructuredSVM


def test_an_interval_holds_finite_numbers_between_its_bounds():
    assert 0.5 in POSITIVE and np.float32(2) in POSITIVE and 10 ** 9 in POSITIVE
    for bad in (0, -1.0, float("inf"), float("nan"), True, "1", None):
        assert bad not in POSITIVE
    at_least_one = Interval(Integral, 1)
    assert 1 in at_least_one and np.int64(5) in at_least_one
    assert 0 not in at_least_one and 1.5 not in at_least_one
    closed = Interval(Real, 0, 1, closed="both")
    assert 0 in closed and 1 in closed and 1.01 not in closed
    assert str(POSITIVE) == "a finite number > 0"
    assert str(Interval(Integral, 1)) == "an integer >= 1"


def test_options_compare_by_value_and_type():
    flags = Options(True, False)
    assert True in flags and 1 not in flags
    names = Options("a", "b")
    assert "a" in names and "c" not in names


def test_check_param_names_the_parameter_and_what_it_must_be():
    check_param("C", 2.0, [POSITIVE])
    check_param("kappa", None, [None, POSITIVE])
    with pytest.raises(ValueError, match=r"C must be a finite number > 0, got -1"):
        check_param("C", -1, [POSITIVE])
    with pytest.raises(ValueError, match=r"kappa must be None or a finite number > 0"):
        check_param("kappa", 0.0, [None, POSITIVE])


@pytest.mark.parametrize("estimator, name, bad", [
    (StructuredSVM, "C", 0.0), (StructuredSVM, "tol", -1e-3),
    (StructuredSVM, "max_iter", 0), (StructuredSVM, "scope", "pixel"),
    (StructuredSVM, "node_weights", "pixels"), (StructuredSVM, "C_units", "svm"),
    (StructuredSVM, "n_jobs", 0), (LovaszSVM, "C", float("nan")),
    (LovaszSVM, "margin_scale", "half"), (ProjectionSVM, "projection_set", "ball"),
    (ProjectionSVM, "max_iter", 2.5),
])
def test_every_declared_constraint_is_checked_by_check_params(estimator, name, bad):
    assert name in estimator._parameter_constraints
    with pytest.raises(ValueError, match=f"{name} must be"):
        estimator(**{name: bad}).check_params()


def test_the_rule_c_positive_is_the_one_object_everywhere():
    """Every learner states "C > 0" with the same constraint object."""
    for estimator in (StructuredSVM, LovaszSVM, ProjectionSVM):
        assert estimator._parameter_constraints["C"] == [POSITIVE]
    with pytest.raises(ValueError, match="C must be a finite number > 0"):
        MultivariateSVM(C=-1.0).fit(np.eye(4), [0, 1, 0, 1])


def test_the_command_line_offers_the_declared_choices():
    from segstruct.cli import build_parser
    parser = build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    choices = {a.dest: a.choices for a in train._actions if a.choices}
    declared = StructuredSVM._parameter_constraints
    from segstruct.learn.estimators.first_order_svm import FirstOrderSVM
    first_order = FirstOrderSVM._parameter_constraints["solver"][0].options
    assert tuple(choices["solver"]) == SOLVERS == declared["solver"][0].options + first_order
    assert tuple(choices["C_units"]) == declared["C_units"][0].options
    assert tuple(choices["node_weights"]) == declared["node_weights"][0].options
    assert tuple(choices["scope"]) == declared["scope"][0].options
