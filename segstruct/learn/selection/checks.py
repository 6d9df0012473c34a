"""Checks of the cross-validation's input and the folds of the training images.

Part of :mod:`segstruct.learn.selection` (every name here is importable
from there): the grid of C, the fold count, the folds' tolerance and the
training data checked with messages that name the command-line options,
and the folds dealt by image (or by group).
"""
from __future__ import annotations

import numpy as np

from segstruct.datasets.folds import group_folds
from segstruct.datasets.folds import make_folds as deal_folds
from segstruct.learn._params import POSITIVE, check_param
from segstruct.learn.estimators.structured_svm import label_counts

__all__ = ["check_grid", "check_folds", "check_fold_tol", "image_strata", "check_cv_data",
           "make_folds"]

# --------------------------------------------------------------------------
# Checks


def check_grid(grid) -> tuple[float, ...]:
    """The grid of C as increasing floats, or a ValueError saying what is wrong.

    Parameters
    ----------
    grid : sequence of float, length >= 2
        Candidate values of C; each positive and finite, none twice.

    Returns
    -------
    tuple of float, sorted increasingly (the order warm starts walk it).
    """
    values = [float(c) for c in grid]
    for c in values:
        check_param("every C of the grid", c, [POSITIVE])
    if len(values) < 2:
        raise ValueError(f"the grid of C needs at least 2 values to choose from, got "
                         f"{len(values)}; give a fixed --C instead")
    if len(set(values)) < len(values):
        raise ValueError(f"a C is given twice in the grid {' '.join(f'{c:g}' for c in values)}")
    return tuple(sorted(values))


def check_folds(n_folds: int, n_images: int | None = None) -> int:
    """``n_folds`` if it is an integer >= 2 and at most ``n_images``, else ValueError.

    Parameters
    ----------
    n_folds : int, the folds asked for.
    n_images : int, optional, the training images to deal out.

    Returns
    -------
    int
    """
    if int(n_folds) != n_folds or n_folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {n_folds}")
    if n_images is not None and n_images < n_folds:
        raise ValueError(f"{n_images} training image(s) is fewer than the {n_folds} folds: "
                         "every fold needs at least one image; give fewer --folds or "
                         "a fixed --C")
    return int(n_folds)


def check_fold_tol(fold_tol) -> float | None:
    """``fold_tol`` as a float (positive, finite), or None (the folds then
    keep their estimator's own ``tol``); else a ValueError."""
    if fold_tol is None:
        return None
    check_param("the folds' tolerance (--cv-tol)", float(fold_tol), [POSITIVE])
    return float(fold_tol)


def image_strata(Y) -> np.ndarray:
    """How much of the class each training image shows, for dealing out folds.

    Parameters
    ----------
    Y : sequence of label specs, (N_k,) targets or (N_k, 2) [fg, bg] pixel counts.

    Returns
    -------
    (n_images,) int array: 2 = the class is the majority of some superpixel
    (the image teaches it), 1 = it has class pixels only, 0 = none.
    """
    out = np.zeros(len(Y), np.int64)
    for k, y in enumerate(Y):
        fg, bg = label_counts(y)
        out[k] = 2 if np.any(fg > bg) else 1 if np.any(fg > 0) else 0
    return out


def check_cv_data(Y, n_folds: int) -> None:
    """Refuse training data that k-fold cross-validation cannot use.

    Every fold trains on the other folds, which must show the class in some
    superpixel (BL1's kappa and any learning need foreground): the class
    must teach in at least 2 images. Raises ValueError otherwise, or when
    there are fewer images than folds.

    Parameters
    ----------
    Y : sequence of n label specs, (N_k,) targets or (N_k, 2) [fg, bg] counts.
    n_folds : int, the folds asked for.
    """
    check_folds(n_folds, len(Y))
    teaching = int(np.count_nonzero(image_strata(Y) == 2))
    if teaching < 2:
        raise ValueError(
            f"the class is the majority of some superpixel in {teaching} of the {len(Y)} "
            "training images: cross-validation needs at least 2, so that every fold's "
            "training part shows it; give a fixed --C")


# --------------------------------------------------------------------------
# Folds


def make_folds(strata, n_folds: int, seed: int, groups=None) -> np.ndarray:
    """:func:`segstruct.datasets.folds.make_folds`, after :func:`check_folds`
    (whose messages name the command-line options); with ``groups`` (one
    label per image), :func:`segstruct.datasets.folds.group_folds`: each
    group's images in one fold.

    Parameters
    ----------
    strata : (n,) int array, :func:`image_strata` (dealt first: the higher).
    n_folds : int >= 2.
    seed : int.
    groups : (n,) labels, optional.

    Returns
    -------
    (n,) int64 array of fold indices in 0 .. n_folds - 1.
    """
    check_folds(n_folds, len(strata))
    if groups is not None:
        if len(groups) != len(strata):
            raise ValueError(f"{len(groups)} group labels for {len(strata)} images")
        return group_folds(groups, n_folds, seed)
    return deal_folds(strata, n_folds, seed)
