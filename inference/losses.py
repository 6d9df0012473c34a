"""Losses of a labelling as functions of its false positive / negative counts.

Every loss here is a function ``Delta(FP, FN, Np, Nn)`` (docs/design.md, "Counts
and losses") of the weighted counts

    FP(y) = sum_i a_i (1 - t_i) y_i      FN(y) = sum_i a_i t_i (1 - y_i)
    Np = sum_i a_i t_i                   Nn = sum_i a_i (1 - t_i)

with labelling ``y``, targets ``t`` and node weights ``a`` (1 per superpixel, or
its pixel area). Losses are evaluated on whole arrays of (FP, FN) pairs at
once, because the inference oracles (brute force, BL2, the triangulation of the
loss surface) evaluate thousands of pairs per call.

A loss that is exactly ``alpha * FP + beta * FN`` reports ``(alpha, beta)``
through :attr:`Loss.linear_coefficients`; the graph-cut oracle then folds it
into the unary potentials.

Losses are saved with models as JSON: :meth:`Loss.to_dict` and
:func:`loss_from_dict` are inverse to each other.
"""
from __future__ import annotations

import importlib
import math
from typing import Any, Callable

import numpy as np

__all__ = [
    "Loss",
    "HammingLoss",
    "AdjustedHammingLoss",
    "IoULoss",
    "FBetaLoss",
    "CallableLoss",
    "LOSS_NAMES",
    "get_loss",
    "loss_from_dict",
    "counts",
    "totals",
]


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with 0 where ``den == 0``, without floating-point warnings."""
    num, den = np.broadcast_arrays(num, den)
    out = np.zeros(num.shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _positive_finite(value: Any, what: str) -> float:
    """Validate a loss hyper-parameter that must be a finite number > 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r}") from None
    if isinstance(value, (bool, np.bool_)) or not math.isfinite(number) or number <= 0:
        raise ValueError(f"{what} must be a finite number > 0, got {value!r}")
    return number


class Loss:
    """A loss ``Delta(FP, FN, Np, Nn)``; subclasses implement :meth:`_evaluate`.

    Calling a loss broadcasts its four arguments against each other (numpy
    rules) and returns float64 values of the broadcast shape (a 0-d array for
    scalar arguments). Inputs are expected in range, ``0 <= FP <= Nn`` and
    ``0 <= FN <= Np``; the named losses never return NaN or inf there, Np = 0
    included.
    """

    #: Name used by :func:`get_loss` and :meth:`to_dict`.
    name: str = "loss"

    #: True if, for every fixed FN, Np and Nn, the loss is a concave function
    #: of FP on 0..Nn. BL2 then finds the best FP for each FN by bisection
    #: instead of scanning every pair; a loss that cannot promise it (any user
    #: callable) keeps the full scan.
    concave_in_fp: bool = False

    def __call__(self, fp, fn, n_pos, n_neg) -> np.ndarray:
        """Evaluate the loss.

        Parameters
        ----------
        fp, fn : array_like of float
            False positive and false negative counts (weighted by ``a``).
        n_pos, n_neg : array_like of float
            Totals Np = sum a t and Nn = sum a (1 - t).

        Returns
        -------
        ndarray of float64
            Loss values, with the broadcast shape of the arguments.
        """
        fp, fn, n_pos, n_neg = np.broadcast_arrays(
            *(np.asarray(v, dtype=np.float64) for v in (fp, fn, n_pos, n_neg)))
        return np.asarray(self._evaluate(fp, fn, n_pos, n_neg), dtype=np.float64)

    def _evaluate(self, fp, fn, n_pos, n_neg) -> np.ndarray:
        raise NotImplementedError

    def value(self, fp: float, fn: float, n_pos: float, n_neg: float) -> float:
        """The loss at one (FP, FN) as a Python float: ``float(self(fp, fn,
        n_pos, n_neg))``, the same number. The named losses compute it on
        floats, in the order of their array formula, without numpy's
        per-call overhead (the envelope oracle scores every labelling it
        meets one at a time: 22,000 calls in one proposed fit)."""
        return float(self(fp, fn, n_pos, n_neg))

    @property
    def linear_coefficients(self) -> tuple[float, float] | None:
        """``(alpha, beta)`` if the loss is exactly ``alpha FP + beta FN``, else None."""
        return None

    @property
    def params(self) -> dict[str, Any]:
        """Hyper-parameters, as passed to the constructor."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description; inverse of :func:`loss_from_dict`."""
        return {"name": self.name, **self.params}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return self.params == other.params

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self.params.items()))))


class HammingLoss(Loss):
    """Hamming loss ``FP + FN`` (paper Eq. 11, weighted by ``a``)."""

    name = "hamming"
    concave_in_fp = True  # linear

    def _evaluate(self, fp, fn, n_pos, n_neg):
        return fp + fn

    def value(self, fp, fn, n_pos, n_neg) -> float:
        return float(fp) + float(fn)

    @property
    def linear_coefficients(self) -> tuple[float, float]:
        return (1.0, 1.0)


class AdjustedHammingLoss(Loss):
    """Adjusted Hamming loss ``kappa * FP + FN`` (paper Eq. 28, baseline BL1).

    Parameters
    ----------
    kappa : float
        Weight of a false positive, finite and > 0. The paper sets it to the
        ratio of foreground to background superpixels in the training set, so
        that the many background nodes do not dominate the loss.
    """

    name = "adjusted_hamming"
    concave_in_fp = True  # linear

    def __init__(self, kappa: float):
        self.kappa = _positive_finite(kappa, "kappa")

    def _evaluate(self, fp, fn, n_pos, n_neg):
        return self.kappa * fp + fn

    def value(self, fp, fn, n_pos, n_neg) -> float:
        return self.kappa * float(fp) + float(fn)

    @property
    def linear_coefficients(self) -> tuple[float, float]:
        return (self.kappa, 1.0)

    @property
    def params(self) -> dict[str, Any]:
        return {"kappa": self.kappa}


class IoULoss(Loss):
    """Intersection-over-union loss ``(FP + FN) / (Np + FP)`` (paper Eq. 14).

    Equals ``1 - TP / (TP + FP + FN)``; defined as 0 when ``Np + FP == 0`` (no
    positives to find and none predicted: the labelling is perfect).
    """

    name = "iou"
    # 1 - (Np - FN) / (Np + FP): -c / (b + FP) with c, b >= 0 is concave; at
    # Np = 0 the values 0, 1, 1, ... are concave too.
    concave_in_fp = True

    def _evaluate(self, fp, fn, n_pos, n_neg):
        return _safe_ratio(fp + fn, n_pos + fp)

    def value(self, fp, fn, n_pos, n_neg) -> float:
        fp, fn = float(fp), float(fn)
        den = float(n_pos) + fp
        return (fp + fn) / den if den != 0 else 0.0


class FBetaLoss(Loss):
    """F-beta loss ``1 - (1+b^2) TP / ((1+b^2) TP + b^2 FN + FP)``, TP = Np - FN.

    Defined as 0 when the denominator is 0 (which, in range, means no
    positives and none predicted).

    Parameters
    ----------
    beta : float, default 1.0
        Finite and > 0; recall weighs ``beta`` times as much as precision.
    """

    name = "fbeta"
    # 1 - c / (b + FP) with c = (1+b^2) TP >= 0, b = (1+b^2) TP + b^2 FN >= 0.
    concave_in_fp = True

    def __init__(self, beta: float = 1.0):
        self.beta = _positive_finite(beta, "beta")

    def _evaluate(self, fp, fn, n_pos, n_neg):
        b2 = self.beta ** 2
        tp = n_pos - fn
        # 1 - (1+b2) TP / D == (b2 FN + FP) / D: this form is exactly 0 at the
        # target (FP = FN = 0) instead of 1 - x/x up to rounding, and building
        # D from the same numerator keeps the ratio <= 1 after rounding.
        num = b2 * fn + fp
        return _safe_ratio(num, (1.0 + b2) * tp + num)

    def value(self, fp, fn, n_pos, n_neg) -> float:
        fp, fn = float(fp), float(fn)
        b2 = self.beta ** 2
        tp = float(n_pos) - fn
        num = b2 * fn + fp
        den = (1.0 + b2) * tp + num
        return num / den if den != 0 else 0.0

    @property
    def params(self) -> dict[str, Any]:
        return {"beta": self.beta}


class CallableLoss(Loss):
    """Wrap a user function ``f(fp, fn, n_pos, n_neg)`` as a :class:`Loss`.

    ``f`` is first called with whole (broadcast) arrays. If that raises, or the
    result does not have the broadcast shape, ``f`` is taken to be a scalar
    function and is applied element-wise through :func:`numpy.vectorize`.
    Values must be finite, otherwise ValueError.

    Parameters
    ----------
    fn : callable
        ``f(fp, fn, n_pos, n_neg) -> float or array``.
    name : str, optional
        Label for messages and ``repr``; defaults to the function's name.
    """

    name = "callable"

    def __init__(self, fn: Callable, name: str | None = None):
        if not callable(fn):
            raise TypeError(f"CallableLoss needs a callable, got {fn!r}")
        self.fn = fn
        self.label = name if name is not None else getattr(fn, "__name__", repr(fn))

    def _evaluate(self, fp, fn, n_pos, n_neg):
        args = (fp, fn, n_pos, n_neg)
        if fp.ndim == 0:
            # Plain numpy scalars suit both array-aware and scalar functions.
            out = np.asarray(self.fn(*(v[()] for v in args)), dtype=np.float64)
        else:
            try:
                out = np.asarray(self.fn(*args), dtype=np.float64)
            except Exception:
                out = None
            if out is None or out.shape != fp.shape:
                out = np.vectorize(self.fn, otypes=[np.float64])(*args)
        if out.shape != fp.shape:
            raise ValueError(
                f"loss {self.label!r} returned shape {out.shape} for inputs of "
                f"shape {fp.shape}")
        if not np.all(np.isfinite(out)):
            bad = int(np.count_nonzero(~np.isfinite(out)))
            raise ValueError(f"loss {self.label!r} returned {bad} non-finite value(s)")
        return out

    @property
    def params(self) -> dict[str, Any]:
        return {"fn": self.fn, "name": self.label}

    def __repr__(self) -> str:
        return f"CallableLoss({self.label})"

    def __hash__(self) -> int:
        return hash((CallableLoss, self.fn))

    def to_dict(self) -> dict[str, Any]:
        """Describe the loss by the import path ``module:qualname`` of ``fn``.

        Raises
        ------
        ValueError
            If ``fn`` cannot be imported back by that path (a lambda, a local
            function, a bound method, ...): such a loss cannot be saved.
        """
        module = getattr(self.fn, "__module__", None)
        qualname = getattr(self.fn, "__qualname__", None)
        if module and qualname and "<" not in qualname:
            path = f"{module}:{qualname}"
            try:
                if _import_function(path) is self.fn:
                    return {"name": self.name, "function": path, "label": self.label}
            except (ImportError, AttributeError, ValueError):
                pass
        raise ValueError(
            f"cannot save loss {self.label!r}: its function is not importable by "
            "module and name (lambdas and local functions are not); define it "
            "at module level")


def _import_function(path: str) -> Callable:
    """Resolve ``"package.module:qual.name"`` to the object it names."""
    module_name, _, qualname = path.partition(":")
    if not module_name or not qualname:
        raise ValueError(f"function path must look like 'module:name', got {path!r}")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _f1(**params) -> FBetaLoss:
    if params:
        raise ValueError(f"loss 'f1' takes no parameters, got {sorted(params)}")
    return FBetaLoss(1.0)


# Name -> constructor. "f1" is F-beta at beta = 1 and saves itself as "fbeta".
_REGISTRY: dict[str, Callable[..., Loss]] = {
    "hamming": HammingLoss,
    "adjusted_hamming": AdjustedHammingLoss,
    "iou": IoULoss,
    "f1": _f1,
    "fbeta": FBetaLoss,
}
LOSS_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def get_loss(spec: str | Loss | Callable, **params) -> Loss:
    """Build a loss from a name, a :class:`Loss`, or a plain callable.

    Parameters
    ----------
    spec : str, Loss or callable
        One of :data:`LOSS_NAMES` (case-insensitive, ``-`` same as ``_``);
        a Loss instance, returned as is; or a function
        ``f(fp, fn, n_pos, n_neg)``, wrapped in :class:`CallableLoss`.
    **params
        Hyper-parameters: ``kappa`` for "adjusted_hamming", ``beta`` for
        "fbeta", ``name`` for a callable.

    Returns
    -------
    Loss

    Raises
    ------
    ValueError
        Unknown name, or parameters the loss does not take.
    """
    if isinstance(spec, Loss):
        if params:
            raise ValueError(f"parameters {sorted(params)} given with a ready-made loss {spec!r}")
        return spec
    if isinstance(spec, str):
        key = spec.strip().lower().replace("-", "_")
        if key not in _REGISTRY:
            raise ValueError(f"unknown loss {spec!r}; known losses: {', '.join(LOSS_NAMES)}")
        try:
            return _REGISTRY[key](**params)
        except TypeError as exc:
            # Wrong keyword arguments: report them as a bad value, like the rest.
            raise ValueError(f"bad parameters {sorted(params)} for loss {key!r}: {exc}") from None
    if callable(spec):
        return CallableLoss(spec, **params)
    raise ValueError(
        f"a loss is a name ({', '.join(LOSS_NAMES)}), a Loss or a callable; got {spec!r}")


def loss_from_dict(d: dict[str, Any]) -> Loss:
    """Rebuild a loss from :meth:`Loss.to_dict` output.

    A ``"callable"`` entry imports its function by the saved ``module:qualname``
    path, so that module must be importable when the model is loaded.
    """
    d = dict(d)
    name = d.pop("name", None)
    if name == CallableLoss.name:
        return CallableLoss(_import_function(d["function"]), name=d.get("label"))
    if not isinstance(name, str):
        raise ValueError(f"loss description needs a 'name', got {d!r}")
    return get_loss(name, **d)


def _weights(a, n: int) -> np.ndarray:
    if a is None:
        return np.ones(n, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"weights a must have shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("weights a must be finite and >= 0")
    return a


def _targets(t) -> np.ndarray:
    t = np.asarray(t)
    if t.ndim != 1:
        raise ValueError(f"targets t must be 1-D (N,), got shape {t.shape}")
    if not np.all((t == 0) | (t == 1)):
        raise ValueError("targets t must be 0 or 1 (void pixels are excluded through a = 0)")
    return t.astype(np.float64)


def totals(t, a=None) -> tuple[float, float]:
    """Weighted numbers of positive and negative nodes.

    Parameters
    ----------
    t : array_like, shape (N,)
        Targets in {0, 1}.
    a : array_like of float, shape (N,), optional
        Node weights >= 0; default 1.

    Returns
    -------
    n_pos, n_neg : float
        ``Np = sum a t`` and ``Nn = sum a (1 - t)``.
    """
    t = _targets(t)
    a = _weights(a, t.size)
    return float(a @ t), float(a @ (1.0 - t))


def counts(y, t, a=None):
    """Weighted false positive and false negative counts of labellings.

    Parameters
    ----------
    y : array_like, shape (N,) or (K, N)
        One labelling, or K of them, with values in [0, 1] (fractional values
        give the linear extension of FP and FN, as in an LP relaxation).
    t : array_like, shape (N,)
        Targets in {0, 1}.
    a : array_like of float, shape (N,), optional
        Node weights >= 0; default 1.

    Returns
    -------
    fp, fn : float, or ndarray of float64 with shape (K,)
        ``FP = sum a (1 - t) y`` and ``FN = sum a t (1 - y)``.
    """
    t = _targets(t)
    a = _weights(a, t.size)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim not in (1, 2) or y.shape[-1] != t.size:
        raise ValueError(f"labellings y must have shape ({t.size},) or (K, {t.size}), "
                         f"got {y.shape}")
    if not np.all((y >= 0) & (y <= 1)):
        raise ValueError("labellings y must lie in [0, 1]")
    fp = y @ (a * (1.0 - t))
    fn = (1.0 - y) @ (a * t)
    if y.ndim == 1:
        return float(fp), float(fn)
    return fp, fn
