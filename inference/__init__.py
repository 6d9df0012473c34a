"""Inference oracles on plain arrays (installed as ``segstruct.inference``).

The solvers here import only numpy, scipy, highspy and PyMaxflow (and each
other): none imports the rest of segstruct, so each can be used and tested on
its own. A problem is ``(u, edges, p, t, a, loss)`` (see ``_mrf``); a loss is
anything :func:`segstruct.inference.losses.get_loss` accepts, including any
callable of ``(FP, FN, Np, Nn)``.
"""
from .bl2 import bl2
from .brute_force import brute_force
from ._mrf import InferenceResult, NotSubmodularError, check_mrf, score
from .graphcut import loss_augmented, maximize

__all__ = [
    "InferenceResult",
    "NotSubmodularError",
    "bl2",
    "brute_force",
    "check_mrf",
    "loss_augmented",
    "maximize",
    "score",
]
