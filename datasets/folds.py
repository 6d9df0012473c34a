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
    _check_n_folds(n_folds, n, "image(s)")
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(strata == s))
                            for s in np.unique(strata)[::-1]])
    folds = np.empty(n, np.int64)
    folds[order] = np.arange(n) % int(n_folds)
    return folds


def group_folds(groups, n_folds: int, seed: int) -> np.ndarray:
    """Assign whole groups of images to ``n_folds`` folds, deterministically.

    For images that are not independent (frames of one video sequence): all
    images of a group go to one fold, so a fold's held-out images are never
    near-copies of its training images. The groups are shuffled with
    ``seed`` and each, largest first, goes to the fold with the fewest
    images so far.

    Parameters
    ----------
    groups : (n,) array of hashable labels (e.g. str), one per image.
    n_folds : int >= 2, at most the number of groups.
    seed : int

    Returns
    -------
    (n,) int64 array of fold indices in 0..n_folds-1.

    Raises
    ------
    ValueError
        For fewer than 2 folds, or more folds than groups.
    """
    groups = np.asarray(groups)
    names, index, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    _check_n_folds(n_folds, len(names), "group(s) of images")
    order = np.random.default_rng(seed).permutation(len(names))
    order = order[np.argsort(-sizes[order], kind="stable")]      # largest first, ties shuffled
    fold_of_group = np.empty(len(names), np.int64)
    filled = np.zeros(int(n_folds), np.int64)
    for g in order:
        k = int(np.argmin(filled))
        fold_of_group[g] = k
        filled[k] += sizes[g]
    return fold_of_group[index.reshape(-1)]


def _check_n_folds(n_folds: int, n_units: int, units: str) -> None:
    if int(n_folds) != n_folds or n_folds < 2:
        raise ValueError(f"folds need n_folds >= 2, got {n_folds}")
    if n_units < n_folds:
        raise ValueError(f"{n_units} {units} cannot fill {n_folds} folds")
