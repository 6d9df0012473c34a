"""Choosing C: k-fold cross-validation on the training split
(``cross_validation``, its input checked and its folds dealt by ``checks``,
its grid extended past an end where the curve still rises there by
``extension``) and the choice made from its curve (``choice``).

Every public name of them is importable from here.
"""
from segstruct.learn.selection.choice import (C_LIMITS, DEFAULT_C_EXTEND, DEFAULT_FOLD_TOL,
                                              DEFAULT_FOLDS, DEFAULT_GRID,
                                              CrossValidationError, check_cv_data,
                                              check_extend, check_fold_tol, check_folds, check_grid,
                                              choose_C, cross_validate_C, cross_validate_many,
                                              edge_warning, format_curve, image_strata,
                                              make_folds, next_C_after_refit,
                                              preference_order, select_C, with_choice)

__all__ = ["DEFAULT_GRID", "DEFAULT_FOLDS", "DEFAULT_FOLD_TOL", "DEFAULT_C_EXTEND", "C_LIMITS",
           "check_extend", "CrossValidationError",
           "check_grid", "check_folds", "check_fold_tol", "check_cv_data", "image_strata",
           "make_folds", "cross_validate_C", "cross_validate_many", "preference_order",
           "choose_C", "with_choice", "next_C_after_refit", "edge_warning", "select_C",
           "format_curve"]
