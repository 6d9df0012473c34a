"""The scikit-learn estimator protocol and parameter constraints, without scikit-learn.

segstruct's estimators follow scikit-learn's contract so that ``clone``,
``GridSearchCV``, ``cross_val_score`` and pipelines work on them. scikit-learn
is only a test dependency, so the pieces of its ``BaseEstimator`` that the
contract needs are written here:

* :class:`ParamsMixin` gives ``get_params(deep=True)`` and
  ``set_params(**params)`` read off the ``__init__`` signature. scikit-learn's
  rule applies: ``__init__`` stores each argument unchanged under its own
  name and does nothing else; parameters are checked in ``fit``. It also
  answers scikit-learn's request for estimator tags (``__sklearn_tags__``,
  which imports scikit-learn: only scikit-learn calls it).
* :class:`NotFittedError` is raised by a method that needs a fitted
  estimator.
* :class:`DataConversionWarning` says that input was converted (a column
  vector of labels read as a 1-D array).
* :class:`Interval` and :class:`Options` are the parameter constraints an
  estimator declares once, in ``_parameter_constraints`` (scikit-learn's
  manner), and :meth:`ParamsMixin.validate_params` checks in one place; the
  command line reads its choices from the same objects.
"""
from __future__ import annotations

import inspect
import math
from collections import defaultdict
from numbers import Integral, Real
from typing import Any

__all__ = ["DataConversionWarning", "NotFittedError", "ParamsMixin", "Interval", "Options",
           "POSITIVE", "check_param"]


class NotFittedError(ValueError, AttributeError, RuntimeError):
    """A method that needs a fitted estimator was called before ``fit``.

    A ValueError and an AttributeError, as scikit-learn's own NotFittedError
    (its estimator checks expect one of those), and a RuntimeError, which is
    what segstruct raised here before.
    """


class DataConversionWarning(UserWarning):
    """Input was converted to what the estimator needs (named as scikit-learn's)."""


class Interval:
    """Numbers between two bounds: a parameter constraint.

    Parameters
    ----------
    kind : ``numbers.Real`` or ``numbers.Integral`` (booleans are neither).
    low, high : bounds, None for none.
    closed : {"both", "left", "right", "neither"}, which bounds are allowed.
    """

    def __init__(self, kind, low=None, high=None, closed="both"):
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def __contains__(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, self.kind):
            return False
        if not math.isfinite(value):
            return False
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is not None and (value < self.low or (value == self.low and not left)):
            return False
        if self.high is not None and (value > self.high or (value == self.high and not right)):
            return False
        return True

    def __str__(self) -> str:
        what = "an integer" if self.kind is Integral else "a finite number"
        bounds = []
        if self.low is not None:
            bounds.append(f"{'>=' if self.closed in ('both', 'left') else '>'} {self.low:g}")
        if self.high is not None:
            bounds.append(f"{'<=' if self.closed in ('both', 'right') else '<'} {self.high:g}")
        return what + (f" {' and '.join(bounds)}" if bounds else "")


class Options:
    """One of a few values (e.g. names): a parameter constraint."""

    def __init__(self, *options):
        self.options = tuple(options)

    def __contains__(self, value) -> bool:
        return any(value == option and type(value) is type(option) for option in self.options)

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)


#: The loss scopes: one loss per image, or one over the whole training set
#: (every learner's ``scope``; the one statement of them).
SCOPES = ("image", "dataset")
#: C, tol and the like: a finite number above 0 (the one statement of "C > 0").
POSITIVE = Interval(Real, 0, None, closed="neither")


def check_param(name: str, value, constraints) -> None:
    """Raise ValueError, naming ``name`` and what it must be, unless ``value``
    satisfies one of ``constraints`` (Interval, Options, a type, or None for
    None itself)."""
    for constraint in constraints:
        if constraint is None:
            if value is None:
                return
        elif isinstance(constraint, type):
            if isinstance(value, constraint):
                return
        elif value in constraint:
            return
    wants = " or ".join("None" if c is None else c.__name__ if isinstance(c, type) else str(c)
                        for c in constraints)
    raise ValueError(f"{name} must be {wants}, got {value!r}")


class ParamsMixin:
    """``get_params`` / ``set_params`` from the ``__init__`` signature.

    A subclass's ``__init__`` takes every hyper-parameter of its own as an
    explicit keyword argument and stores it unchanged as an attribute of the
    same name; ``**params``, where it takes them, go to its base's
    ``__init__``, which does the same for the parameters the family shares
    (:meth:`_init_parameters`). ``clone`` rebuilds an estimator as
    ``type(est)(**est.get_params(deep=False))`` and checks that each value
    comes back as the same object.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # The class's signature lists the family's parameters, the base's too
        # (help(), editors, and scikit-learn's checks read it), where the
        # __init__ alone shows its own and **params.
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        try:
            cls.__signature__ = inspect.Signature(sorted(
                cls._init_parameters(), key=lambda p: kinds.index(p.kind)))
        except (RuntimeError, ValueError):
            # not its base's either: said when its parameters are read
            cls.__signature__ = None

    @classmethod
    def _init_parameters(cls) -> list[inspect.Parameter]:
        """The hyper-parameters of ``__init__``, with those it passes on.

        An ``__init__`` that takes ``**params`` hands them to its base's
        ``__init__`` (``super().__init__(**params)``), so the base's
        parameters are the estimator's too: a family declares each shared
        parameter once, on its base. A subclass that names one of them again
        (another default) takes precedence.
        """
        found: dict[str, inspect.Parameter] = {}
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            if init is object.__init__:
                break
            passes_on = False
            for p in inspect.signature(init).parameters.values():
                if p.name == "self":
                    continue
                if p.kind == p.VAR_KEYWORD:
                    passes_on = True
                elif p.kind == p.VAR_POSITIONAL:
                    raise RuntimeError(f"{cls.__name__}.__init__ takes *{p.name}: an "
                                       "estimator's parameters must be explicit keyword "
                                       "arguments")
                else:
                    found.setdefault(p.name, p)
            if not passes_on:
                break
        return list(found.values())

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        """Each hyper-parameter's default, by name (the base's too)."""
        return {p.name: p.default for p in cls._init_parameters()}

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The hyper-parameters' names, sorted (scikit-learn's order)."""
        return sorted(p.name for p in cls._init_parameters())

    #: name -> list of constraints (:func:`check_param`); a subclass declares its own
    _parameter_constraints: dict = {}

    def validate_params(self) -> None:
        """Check every declared hyper-parameter (ValueError naming the first bad one)."""
        for name, constraints in self._parameter_constraints.items():
            check_param(name, getattr(self, name), constraints)

    def get_params(self, deep: bool = True) -> dict:
        """Hyper-parameters, as passed to ``__init__``.

        Parameters
        ----------
        deep : bool, default True
            Also list the parameters of parameters that are estimators
            themselves (anything with ``get_params``), as ``name__key``.

        Returns
        -------
        dict
            Parameter name -> value.
        """
        out: dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params):
        """Set hyper-parameters; ``name__key`` sets ``key`` of parameter ``name``.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            A name that is not a parameter.
        """
        valid = self.get_params(deep=True)
        nested = defaultdict(dict)
        for key, value in params.items():
            name, nest, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters are {sorted(self._get_param_names())}")
            if nest:
                nested[name][sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub_params in nested.items():
            if not hasattr(valid[name], "set_params"):
                raise ValueError(f"invalid parameters {sorted(sub_params)} of {name!r}: "
                                 f"{valid[name]!r} has no parameters to set")
            valid[name].set_params(**sub_params)
        return self

    def __sklearn_tags__(self):
        """scikit-learn's default estimator tags (scikit-learn >= 1.6 asks for them).

        Subclasses change what differs (``super().__sklearn_tags__()``).
        """
        # Imported here: only scikit-learn calls this method, so it is
        # installed then; the library itself must run without it.
        from sklearn.utils import Tags, TargetTags
        return Tags(estimator_type=None, target_tags=TargetTags(required=False))

    def __repr__(self) -> str:
        # the parameters that differ from their defaults, as scikit-learn shows them
        defaults = type(self).default_params()
        shown = []
        for name, value in self.get_params(deep=False).items():
            default = defaults.get(name, inspect.Parameter.empty)
            try:
                same = value is default or bool(value == default)
            except (TypeError, ValueError):       # e.g. arrays: ambiguous truth value
                same = False
            if not same:
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"
