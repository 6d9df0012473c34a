"""Folds of a split: images dealt out so that every fold shows the class.

Used wherever a split is cut into folds: cross-validation of C
(``segstruct.learn.selection``) and the cross-fitted detectors of the
top-down block (``segstruct.features.detection``). Plain numpy in and out.
"""
from __future__ import annotations

import numpy as np

__all__ = ["make_folds"]


def make_folds(strata, n_folds: int, seed: int) -> np.ndarray:
    """Assign every image to one of ``n_folds`` folds, deterministically.

    Images are shuffled with ``seed`` within each stratum, the strata are
    concatenated from the highest (e.g. images showing the class) down, and
    the result is dealt round-robin. So each fold holds an image of the
    highest stratum whenever there are at least ``n_folds`` of them, and fold
    sizes differ by at most one.

    Parameters
    ----------
    strata : (n,) int array, higher = dealt first.
    n_folds : int >= 2, at most n.
    seed : int

    Returns
    -------
    (n,) int64 array of fold indices in 0..n_folds-1.

    Raises
    ------
    ValueError
        For fewer than 2 folds, or more folds than images.
    """
    strata = np.asarray(strata)
    n = strata.shape[0]
    if int(n_folds) != n_folds or n_folds < 2:
        raise ValueError(f"folds need n_folds >= 2, got {n_folds}")
    if n < n_folds:
        raise ValueError(f"{n} image(s) cannot fill {n_folds} folds")
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(strata == s))
                            for s in np.unique(strata)[::-1]])
    folds = np.empty(n, np.int64)
    folds[order] = np.arange(n) % int(n_folds)
    return folds
