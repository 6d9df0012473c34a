"""The options of C: ``--C`` (a number or "auto"), its units, and the
cross-validation of ``--C auto`` (grid, folds, the folds' tolerance, the
grid's extension), with their checks before any feature is computed."""
from __future__ import annotations

import sys
from dataclasses import replace

from segstruct.cli.common import UsageError
from segstruct.io.text import count
from segstruct.learn.estimators.base import POSITIVE, Options, check_param
from segstruct.learn.methods import DEFAULTS, TrainingSettings
from segstruct.learn.selection import (C_LIMITS, DEFAULT_C_EXTEND, DEFAULT_FOLD_TOL,
                                       DEFAULT_FOLDS, DEFAULT_GRID)
from segstruct.learn.estimators.structured_svm import C_UNITS, DEFAULT_C

__all__ = ["add_C_options", "C_choice", "fit_split", "fold_tol", "C_extend"]


def add_C_options(g) -> None:
    """``--C``, ``--C-units``, ``--C-grid``, ``--C-extend``, ``--folds`` and
    ``--cv-tol`` on the argument group ``g``."""
    g.add_argument("--C", default=None, metavar="C|auto",
                   help="regularisation trade-off, in --C-units. 'auto': choose C per "
                        "method and class by k-fold cross-validation on the training split "
                        "(pooled held-out VOC IoU, ties to the smaller C), then refit on the "
                        f"whole split (default {DEFAULTS.C}; C {DEFAULT_C:g} on a training "
                        "split with fewer images than folds)")
    g.add_argument("--C-units", choices=C_UNITS, default=DEFAULTS.C_units,
                   help="superpixel: the loss counted in missed superpixels and summed over "
                        "the examples, so that one C suits every method and both scopes; "
                        "paper: the C of the paper's Eq. 8 (its C = 1 is the paper's "
                        "setting); the model file and records give the objective's own C "
                        "(svm_C) either way (default %(default)s)")
    g.add_argument("--C-grid", nargs="+", type=float, default=None, metavar="C",
                   help="--C auto: the values of C tried (default: "
                        f"{' '.join(f'{c:g}' for c in DEFAULT_GRID)}, log-spaced)")
    g.add_argument("--C-extend", type=int, default=None, metavar="K",
                   help="--C auto: where held-out IoU is best at an end of --C-grid and "
                        "still rising towards it, go on past that end by the grid's own "
                        "step (warm-started), until the curve turns, at most K steps each "
                        f"way and within C {C_LIMITS[0]:g}-{C_LIMITS[1]:g}; 0: the grid "
                        f"only (default {DEFAULT_C_EXTEND})")
    g.add_argument("--folds", type=int, default=None, metavar="K",
                   help="--C auto: folds of the training split, by image, drawn with "
                        f"--seed (default {DEFAULT_FOLDS})")
    g.add_argument("--cv-tol", type=float, default=None, metavar="TOL",
                   help="--C auto: the folds' fits (1-slack cutting planes, C in "
                        "superpixel units) stop at TOL times C, between --tol and TOL: "
                        "they only rank the values of C, and the refit stops at --tol "
                        f"(default {DEFAULT_FOLD_TOL:g}: with --tol 1e-05, 0.0001 at C "
                        "0.01, 0.001 at C 0.1 and 0.01 from C 1)")


def C_choice(args) -> tuple[float | str, tuple | None]:
    """``--C`` (a number or "auto") and its cross-validation options, checked.

    Returns
    -------
    C : float, or "auto".
    cv : ``(grid, folds)`` with ``--C auto`` (defaults filled in), else None.

    Raises
    ------
    UsageError
        ``--C`` neither a number nor "auto"; a bad grid or fold count;
        ``--C-grid`` / ``--folds`` / ``--cv-tol`` / ``--C-extend`` without
        ``--C auto``; a negative ``--C-extend``.
    ValueError
        A number that is not positive and finite (as the estimator's own
        check has always done: exit status 2 without the usage text).
    """
    from segstruct.learn.selection import check_fold_tol, check_folds, check_grid
    C = _parse_C(DEFAULTS.C if args.C is None else args.C)
    if C != "auto":
        check_param("--C", C, [POSITIVE, Options("auto")])
        given = [flag for flag, value in (("--C-grid", args.C_grid), ("--folds", args.folds),
                                          ("--cv-tol", args.cv_tol),
                                          ("--C-extend", args.C_extend)) if value is not None]
        if given:
            raise UsageError(f"{' and '.join(given)} appl{'ies' if len(given) == 1 else 'y'} "
                             f"only to --C auto (C is {C:g}); add --C auto to choose C "
                             "by cross-validation")
        return C, None
    try:
        grid = check_grid(DEFAULT_GRID if args.C_grid is None else args.C_grid)
        folds = check_folds(DEFAULT_FOLDS if args.folds is None else args.folds)
        check_fold_tol(args.cv_tol)
        C_extend(args)
    except ValueError as err:
        raise UsageError(f"--C auto: {err}") from err
    return C, (grid, folds)


def _parse_C(value):
    """A float, or "auto"; anything else is a UsageError."""
    if isinstance(value, float) or value == "auto":
        return value
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"--C must be a positive number or 'auto', got {value!r}") from None


def fit_split(settings: TrainingSettings, C_given: bool, dataset, split: str) -> TrainingSettings:
    """With --C auto, refuse (before any feature) a split with fewer images
    than folds; the default "auto" (no --C given) falls back to the fixed
    default C instead, and says so. Returns the settings to train with."""
    if not settings.auto:
        return settings
    folds = settings.cv()[1]
    n_images = len(dataset.ids(split))
    if n_images < folds and not C_given:
        print(f"note: split {split!r} has {count(n_images, 'training image')}, too few for "
              f"{folds}-fold cross-validation of C: training at C {DEFAULT_C:g} "
              "(give --C to set it)", file=sys.stderr)
        return replace(settings, C=DEFAULT_C, C_grid=None, folds=None)
    if n_images < folds:
        raise UsageError(f"--C auto: split {split!r} has {count(n_images, 'training image')}, "
                         f"fewer than the {folds} folds; give fewer --folds or a fixed --C")
    return settings


def fold_tol(args) -> float:
    """``--cv-tol``, or its default where not given."""
    return DEFAULT_FOLD_TOL if args.cv_tol is None else float(args.cv_tol)


def C_extend(args) -> int:
    """``--C-extend``, or its default where not given (ValueError when negative)."""
    from segstruct.learn.selection import check_extend
    return DEFAULT_C_EXTEND if args.C_extend is None else check_extend(args.C_extend)
