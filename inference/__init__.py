"""Inference oracles on plain arrays (installed as ``segstruct.inference``)."""
from .bl2 import bl2
from .brute_force import brute_force
from .graphcut import (
    InferenceResult,
    NotSubmodularError,
    check_mrf,
    loss_augmented,
    maximize,
    score,
)

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
