"""Figures as PNG files: segmentations, loss surfaces and training curves.

Only matplotlib's object-oriented API is used (:class:`~matplotlib.figure.Figure`
rendered by the Agg canvas), never ``matplotlib.pyplot``: no window opens, no
global figure state is kept, and the functions are safe in worker processes
and on machines without a display.

- :func:`overlay` paints a foreground mask, void pixels and superpixel
  boundaries onto an image (numpy in, numpy out).
- :func:`qualitative_figure`: one row per image, columns input | ground truth
  | one per method, each method titled with its per-image IoU (the paper's
  Figs. 4-5).
- :func:`loss_surface_figure`: the exact loss surface Delta(FP, FN) beside
  its piecewise-linear approximations on M triangles (the paper's Fig. 1).
- :func:`training_figure`: objectives (relative to each method's final
  one), gap, violated examples or working-set size, and largest violation
  per cutting-plane iteration, from :attr:`StructuredSVM.log_`.
- :func:`cv_figure`: pooled held-out IoU against C (log axis) of the
  cross-validation of ``--C auto``, one line per method, the chosen C marked.
- :func:`save_figure` writes a figure as a PNG, atomically.

Every figure takes a ``caption``, printed small under it, which should name
the data, class, methods, parameters and code version, so that a PNG found
later says how it was made.

This module gathers them; they live in ``drawing`` (masks on images,
captions, files), ``panels`` (images side by side), ``curves`` (training and
cross-validation) and ``loss_surface``.
"""
from __future__ import annotations

from segstruct.report.curves import cv_figure, training_figure
from segstruct.report.drawing import (BOUNDARY_COLOUR, OUTLINE_INNER, OUTLINE_OUTER, TINT_COLOURS,
                                      VOID_COLOUR, contrasting_colour, image_iou, outline_width,
                                      overlay, save_figure)
from segstruct.report.loss_surface import loss_surface_figure
from segstruct.report.panels import detector_figure, qualitative_figure

__all__ = ["BOUNDARY_COLOUR", "OUTLINE_INNER", "OUTLINE_OUTER", "TINT_COLOURS", "VOID_COLOUR",
           "contrasting_colour", "cv_figure", "detector_figure", "image_iou",
           "loss_surface_figure", "outline_width", "overlay", "qualitative_figure",
           "save_figure", "training_figure"]
