"""The problem every learner of ``segstruct.learn`` shares: scopes and units,
targets and node weights of the label specs, the loss resolved for the
training set, the C of the objective, and the run a fit hands its callbacks.

A private module: the estimators, the cutting-plane loop, the first-order
learners and the callbacks import it, and it imports none of them (so the
learners and their callbacks form no import circle). Its public names are
re-exported by :mod:`segstruct.learn.estimators.structured_svm`.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from segstruct.inference.losses import AdjustedHammingLoss, Loss, get_loss
from segstruct.learn._params import SCOPES  # noqa: F401  (the learners import it from here)
from segstruct.learn.solvers.qp import WorkingSetQP
from segstruct.feature_map import MRFModel

@dataclass(kw_only=True)
class FitRun:
    """What a fit shows its callbacks (``segstruct.learn.callbacks``).

    ``estimator`` (the learner: its settings, e.g. ``max_iter``),
    ``seconds()`` (training time so far, earlier processes of a resumed run
    included), and, for a learner that keeps a resumable state, ``qp`` (the
    working set: ``get_state`` / ``set_state``, ``n_constraints``),
    ``oracle`` (the fit's own copy, whose ``get_state`` / ``set_state`` hold
    its warm starts) and ``fingerprint()`` (SHA-256 of the training data and
    settings); None for a learner that keeps none.
    """

    estimator: object
    start: float                       # time.perf_counter() when the fit began
    qp: WorkingSetQP | None = None
    oracle: Callable | None = None
    fingerprint: Callable[[], str] | None = None
    # the settings in that fingerprint, as a JSON-able dict (to name what changed)
    settings: Callable[[], dict] | None = None
    seconds_before: float = 0.0        # training time of earlier processes (resume)

    def seconds(self) -> float:
        """Training time so far, earlier processes of a resumed run included."""
        return self.seconds_before + time.perf_counter() - self.start


@dataclass(kw_only=True)
class LossAugmentedRun(FitRun):
    """One run of a :class:`~segstruct.learn.estimators.base.LossAugmentedSSVM`
    (cutting planes or a first-order loop): its problem, as the loop sees it
    (the callbacks read the fields of :class:`FitRun`)."""

    svm_C: float                       # the objective's C (svm_C_), see svm_C
    superpixel_loss: float | None      # of svm_C (None in paper units)
    feature_map: MRFModel
    xs: list
    ts: list
    ws: list
    loss: Loss
    psi_true: np.ndarray
    nonpositive: np.ndarray
    dim: int
    warm_key: str | None = None
    warm: bool = False                 # continues the previous fit (warm_start)
    # data-set scope with a loss linear in (FP, FN) and the graph cut: the
    # images' node and edge counts, to split the union for the workers
    union_parts: tuple[list[int], list[int]] | None = None


class TrainingError(RuntimeError):
    """A solver failed beyond its retries and fallbacks; the message names the
    iteration and the checkpoint that training can resume from."""


#: The cutting-plane solvers (StructuredSVM), then the first-order ones
#: (FirstOrderSVM, per-image scope only).
CUTTING_PLANE_SOLVERS = ("nslack", "oneslack")
STOCHASTIC_SOLVERS = ("subgradient", "sgd", "bcfw", "perceptron")
SOLVERS = CUTTING_PLANE_SOLVERS + STOCHASTIC_SOLVERS
#: What ``C`` is measured in (:func:`svm_C`).
C_UNITS = ("superpixel", "paper")
#: The estimators' default C, in superpixel units: the fixed C of the best mean
#: val IoU of bl1, bl2 and proposed over the four shared data sets
#: (scripts/lodo.py; docs/history/studies-2026-12.md); left out in turn, each data set lost
#: points to its best C on average per method, so the command line
#: cross-validates C instead (TrainingSettings.C = "auto").
DEFAULT_C = 1.0
#: Cutting-plane iterations at most. The stabilised 1-slack loop converges
#: well inside it on the shared data's classes at the defaults; 200, the old
#: default, stopped bl2 and proposed before convergence on some classes.
DEFAULT_MAX_ITER = 1000
#: The solvers' stopping tolerance, in loss units.
DEFAULT_TOL = 1e-3
NODE_WEIGHT_MODES = ("count", "area")


def label_counts(y_k) -> tuple[np.ndarray, np.ndarray]:
    """Per-superpixel (fg, bg) pixel counts from a label spec.

    A label spec is either a (N,) array of targets in {0, 1} (each superpixel
    counts as one unit of its own label) or a (N, 2) array of non-void
    foreground and background pixel counts.
    """
    y_k = np.asarray(y_k)
    if y_k.ndim == 1:
        if not np.all((y_k == 0) | (y_k == 1)):
            raise ValueError("a (N,) label array must hold targets 0 or 1")
        return y_k.astype(np.int64), (1 - y_k).astype(np.int64)
    if y_k.ndim == 2 and y_k.shape[1] == 2:
        if not np.issubdtype(y_k.dtype, np.number):
            raise ValueError(f"pixel counts must be numbers, got dtype {y_k.dtype}")
        for wrong, what in ((~np.isfinite(y_k), "finite numbers (found NaN or inf)"),
                            (y_k < 0, "non-negative"),
                            (y_k != np.rint(y_k), "whole numbers")):
            rows = np.flatnonzero(wrong.any(axis=1))
            if rows.size:
                raise ValueError(f"pixel counts must be {what}: row {rows[0]} is "
                                 f"{y_k[rows[0]].tolist()}"
                                 + (f" ({rows.size} rows in all)" if rows.size > 1 else ""))
        return y_k[:, 0].astype(np.int64), y_k[:, 1].astype(np.int64)
    raise ValueError(f"labels must have shape (N,) or (N, 2), got {y_k.shape}")


def targets_and_node_weights(y_k, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Targets t (majority label) and node weights a of one example.

    ``count``: a_i = 1 for a superpixel with a non-void pixel, else 0 (the
    paper's counts); ``area``: a_i = its number of non-void pixels.
    """
    fg, bg = label_counts(y_k)
    t = (fg > bg).astype(np.uint8)
    if mode == "count":
        a = ((fg + bg) > 0).astype(np.float64)
    elif mode == "area":
        a = (fg + bg).astype(np.float64)
    else:
        raise ValueError(f"unknown node weight mode {mode!r}; use one of {NODE_WEIGHT_MODES}")
    return t, a


def oracle_name(oracle) -> str:
    """A name for an oracle that is the same in every process.

    Raises ValueError when there is none (a lambda, a nested function, an
    object whose repr shows a memory address): a checkpoint could then not
    tell such oracles apart, nor recognise its own after a restart.
    """
    if oracle is None:
        return "graphcut"
    if inspect.isfunction(oracle):
        name = f"{oracle.__module__}.{oracle.__qualname__}"
    else:
        name = repr(oracle)
    if "<lambda>" in name or "<locals>" in name or " at 0x" in name:
        raise ValueError(f"oracle {name} has no name that is stable across processes; "
                         "use a module-level function or give it a __repr__ that names "
                         "its settings")
    return name


def resolve_loss(loss, kappa, targets, weights) -> Loss:
    """The loss a learner trains with: ``get_loss(loss)``, or for
    "adjusted_hamming" that loss with ``kappa`` (default: the foreground /
    background ratio of the weighted training targets, Eq. 28).

    Parameters
    ----------
    loss : str or Loss or callable, as ``get_loss`` takes it.
    kappa : float or None.
    targets, weights : sequences of (N_i,) {0, 1} targets and node weights.
    """
    name = loss.lower() if isinstance(loss, str) else None
    if name == "adjusted_hamming":
        if kappa is None:
            n_pos = sum(float(a @ t) for t, a in zip(targets, weights))
            n_neg = sum(float(a @ (1 - t)) for t, a in zip(targets, weights))
            if n_pos == 0 or n_neg == 0:
                raise ValueError(
                    "cannot set kappa = foreground / background ratio: the training "
                    f"set has {n_pos:g} foreground and {n_neg:g} background units")
            kappa = n_pos / n_neg
        return AdjustedHammingLoss(kappa)
    if kappa is not None:
        raise ValueError("kappa applies only to loss='adjusted_hamming'")
    return get_loss(loss)


def superpixel_loss(loss: Loss, targets, weights, n_examples: int) -> float:
    """The loss of missing one average superpixel of an average example.

    ``Delta(FP=0, FN=abar; Np/n, Nn/n)``, with ``abar`` the mean weight of the
    non-void nodes and Np, Nn the training set's totals spread over its
    ``n_examples`` examples (1 at the data-set scope, the images at the
    image scope). 1 for the Hamming losses with count weights, about 1/Np
    for IoU and 1/(2 Np) for F1. Where that is 0 (no foreground to miss,
    or a loss blind to false negatives), the loss of one false positive,
    ``Delta(abar, 0; Np/n, Nn/n)``, instead.

    Parameters
    ----------
    loss : Loss (resolved: kappa filled in).
    targets, weights : sequences of (N_k,) {0, 1} targets and node weights >= 0.
    n_examples : int >= 1.

    Returns
    -------
    float > 0

    Raises
    ------
    ValueError
        When the training set has no weighted node, or neither a missed nor
        a false superpixel has a positive loss: superpixel units are then
        undefined.
    """
    a = np.concatenate([np.asarray(w, np.float64) for w in weights])
    t = np.concatenate([np.asarray(x, np.float64) for x in targets])
    if not np.any(a > 0):
        raise ValueError("the training set has no node with a non-void pixel")
    abar = float(a[a > 0].mean())
    n_pos, n_neg = float(a @ t) / n_examples, float(a @ (1 - t)) / n_examples
    missed = float(loss(0.0, min(abar, n_pos), n_pos, n_neg)) if n_pos > 0 else 0.0
    if np.isfinite(missed) and missed > 0:
        return missed
    # no foreground to miss (or a loss blind to it): one false positive instead
    false = float(loss(min(abar, n_neg), 0.0, n_pos, n_neg)) if n_neg > 0 else 0.0
    if np.isfinite(false) and false > 0:
        return false
    raise ValueError(
        f"C in superpixel units needs a loss that is positive for one wrong superpixel; "
        f"{loss!r} gives {missed:g} for a missed one and {false:g} for a false one "
        f"(foreground weight {n_pos:g} per example): give C in the paper's units "
        "(C_units='paper')")


def svm_C(C: float, C_units: str, loss: Loss, targets, weights,
          n_examples: int) -> tuple[float, float | None]:
    """The C of the objective a learner solves, from C as the user gives it.

    Every learner minimises ``1/2 ||w||^2 + C_svm * mean_k H_k(w)`` over its
    n examples. In ``"superpixel"`` units (the default) the user's C is the
    weight of the hinge summed over the examples with the loss measured in
    missed superpixels: ``C_svm = C * n * delta``, delta the loss of one
    missed superpixel (:func:`superpixel_loss`). So one C means one
    trade-off for every loss (Hamming counts superpixels; IoU near the
    truth is about (FP + FN) / Np) and both scopes (for a loss that is a sum
    over images the two objectives are then equal). In ``"paper"`` units C
    is the paper's (Eq. 8 writes ||w||^2 + C xi): ``C_svm = C / 2``.

    Returns
    -------
    (C_svm, delta) ; delta is None in paper units.
    """
    if C_units == "paper":
        return 0.5 * float(C), None
    if C_units != "superpixel":
        raise ValueError(f"unknown C_units {C_units!r}; use one of {C_UNITS}")
    delta = superpixel_loss(loss, targets, weights, n_examples)
    return float(C) * n_examples * delta, delta
