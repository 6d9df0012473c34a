"""The learners' hyper-parameters: each declared once, with one default.

The parameters every learner has (C, its units, the scope, node weights,
pairwise, tol, max_iter) are declared on :class:`BaseSSVM`, with their
constraints; a sibling declares only its own. Its defaults are then the
base's, unless the sibling names the parameter in ``_other_defaults`` with
its reason (and says so in its docstring).
"""
import inspect

import pytest

from segstruct.learn._params import ParamsMixin
from segstruct.learn.estimators.base import BaseSSVM, LossAugmentedSSVM, RegularisedLearner
from segstruct.learn.estimators.crf import CRF
from segstruct.learn.estimators.first_order_svm import FirstOrderSVM
from segstruct.learn.estimators.lovasz_svm import LovaszSVM
from segstruct.learn.methods import DEFAULTS
from segstruct.learn.estimators.multivariate_svm import MultivariateSVM
from segstruct.learn.estimators.projection_svm import ProjectionSVM
from segstruct.learn.estimators.structured_svm import StructuredSVM

SIBLINGS = (StructuredSVM, FirstOrderSVM, LovaszSVM, ProjectionSVM, CRF)


def declared(cls) -> dict:
    """The defaults each ``__init__`` on ``cls``'s way to ParamsMixin declares,
    read from the signatures themselves (the first to name one counts)."""
    defaults: dict = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or not issubclass(klass, ParamsMixin):
            continue
        for p in inspect.signature(vars(klass)["__init__"]).parameters.values():
            if p.kind == p.KEYWORD_ONLY:
                defaults.setdefault(p.name, p.default)
    return defaults


def shared_defaults() -> dict:
    """BaseSSVM's defaults: its own and its base's."""
    return declared(BaseSSVM)


def other_defaults(cls) -> set:
    """The shared parameters whose default ``cls`` changes."""
    params, base = cls().get_params(deep=False), shared_defaults()
    assert set(base) <= set(params)
    return {name for name in base if params[name] != base[name]}


@pytest.mark.parametrize("cls", SIBLINGS, ids=lambda c: c.__name__)
def test_every_sibling_shares_the_base_defaults(cls):
    different = other_defaults(cls)
    assert different == set(cls._other_defaults), (
        f"{cls.__name__} changes the defaults of {sorted(different)}: keep the base's, or "
        "name each in _other_defaults with the reason")
    for name in cls._other_defaults:
        assert name in (cls.__doc__ or ""), f"{cls.__name__}'s docstring must say why {name}"


@pytest.mark.parametrize("cls", SIBLINGS, ids=lambda c: c.__name__)
def test_a_sibling_declares_only_its_own_parameters(cls):
    """Its __init__ names no shared parameter (the base declares those) but
    the ones whose default it changes; its constraints extend the base's."""
    own = {p.name for p in inspect.signature(vars(cls)["__init__"]).parameters.values()
           if p.kind == p.KEYWORD_ONLY}
    assert own & set(shared_defaults()) == set(cls._other_defaults)
    for name, constraints in BaseSSVM._parameter_constraints.items():  # the family's
        if name not in cls._other_defaults:
            assert cls._parameter_constraints[name] is constraints, name
    assert set(cls._parameter_constraints) <= set(cls.default_params())


def test_the_loss_augmented_learners_share_loss_kappa_and_oracle():
    for cls in (StructuredSVM, FirstOrderSVM):
        assert issubclass(cls, LossAugmentedSSVM)
        defaults = cls.default_params()
        assert (defaults["loss"], defaults["kappa"], defaults["oracle"]) == (
            "adjusted_hamming", None, None)


def test_the_training_settings_defaults_are_the_learners():
    base = shared_defaults()
    for name in ("C_units", "scope", "node_weights", "max_iter"):
        assert getattr(DEFAULTS, name) == base[name], name
    # the commands' refit stops tighter than a learner built in Python, by the
    # fit-path spread (learn.methods.REFIT_TOL): the one default they do not share
    from segstruct.learn.methods import REFIT_TOL
    assert DEFAULTS.tol == REFIT_TOL < base["tol"]


def test_the_declared_defaults_are_the_ones_get_params_reads():
    for cls in (*SIBLINGS, MultivariateSVM):
        assert cls.default_params() == declared(cls), cls.__name__


def test_the_base_parameters_can_fail_the_rule():
    """A subclass that declares a shared parameter again with another default,
    without a reason, is caught by the same comparison."""

    class Drifted(BaseSSVM):
        def __init__(self, *, C=0.5, **params):
            super().__init__(C=C, **params)

    assert other_defaults(Drifted) == {"C"} != set(Drifted._other_defaults)


def test_init_parameters_follow_params_to_the_base():
    class Base(ParamsMixin):
        def __init__(self, *, a=1, b=2):
            self.a, self.b = a, b

    class Child(Base):
        def __init__(self, *, c=3, b=5, **params):
            super().__init__(b=b, **params)
            self.c = c

    assert Child.default_params() == {"c": 3, "b": 5, "a": 1}
    assert Child(a=7).get_params() == {"a": 7, "b": 5, "c": 3}
    assert repr(Child(a=7)) == "Child(a=7)"
    # the class's signature shows the family's parameters, the base's too
    assert list(inspect.signature(Child).parameters) == ["c", "b", "a"]

    class Star(Base):
        def __init__(self, *values):
            super().__init__()

    with pytest.raises(RuntimeError, match="explicit keyword"):
        Star.default_params()


def test_multivariate_svm_shares_c_tol_and_max_iter_with_the_family():
    """MultivariateSVM is not a segmentation learner (flat vectors, SVM-perf's
    objective), but C, tol and max_iter are the family's (RegularisedLearner);
    its one other default, tol, is stated with its reason."""
    assert issubclass(MultivariateSVM, RegularisedLearner)
    params, family = MultivariateSVM().get_params(), declared(RegularisedLearner)
    different = {name for name in family if params[name] != family[name]}
    assert different == set(MultivariateSVM._other_defaults) == {"tol"}
    assert "family default" in (MultivariateSVM.__doc__ or "")
    assert MultivariateSVM._parameter_constraints is RegularisedLearner._parameter_constraints


# ---------------------------------------------------------------------------
# the method registry names each method's learner and step


def test_every_method_names_its_learner_and_its_step():
    """``--method X`` -> METHODS[X]["step"] is the function that does an
    iteration's work, and it is the one the method's learner calls: an
    oracle method's oracle is that very function (bound), the others' step
    sits in the solver module their learner fits with."""
    from segstruct.inference import loss_augmented
    from segstruct.learn.methods import METHODS, estimator_for
    for name, spec in METHODS.items():
        step = spec["step"]
        assert callable(step), name
        assert step.__module__.startswith(("segstruct.inference", "segstruct.learn.solvers")), \
            (name, step.__module__)
        est = estimator_for(name, C=1.0, n_triangles=4)
        assert type(est) is spec["learner"], name
        if spec["oracle"] is not None:
            oracle = est.oracle or loss_augmented
            called = oracle if inspect.isfunction(oracle) else type(oracle).__call__
            assert called is step, name


def test_a_wrong_step_would_be_caught():
    from segstruct.inference import bl2, loss_augmented
    from segstruct.learn.methods import estimator_for
    assert (estimator_for("bl2", C=1.0).oracle or loss_augmented) is bl2
    assert (estimator_for("bl1", C=1.0).oracle or loss_augmented) is not bl2
