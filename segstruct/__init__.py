"""segstruct: structured SVMs for MRF segmentation under complex losses.

The public API. Names are imported on first use, so that a bare ``import
segstruct`` stays light (the estimators pull in the learner, HiGHS and
PyMaxflow):

- data: :class:`VOCDataset`;
- features: :class:`FeatureExtractor`, :class:`FeatureConfig`,
  :class:`DetectorParams` (the top-down block's detector settings), :func:`paint`
  (a superpixel labelling back to a pixel mask);
- learning: :class:`StructuredSVM`, :class:`MultivariateSVM`,
  :func:`estimator_for` (the paper's methods by name), :func:`get_loss`;
- models: :class:`SegmentationModel` (``load``, ``predict`` images, ``save``);
  the files underneath: :func:`save_model`, :func:`load_model`,
  :func:`load_shape_detectors` (``load_shape_detector`` is its old name).

The data flow, folder by folder: ``datasets`` (images and masks) ->
``features`` (superpixel graphs, descriptors, cache) -> ``feature_map`` (the
joint feature map) -> ``learn`` (estimators, cutting planes, QP), which calls the
oracles of ``inference`` (on plain arrays) -> ``evaluate`` (VOC measure,
checks) -> ``io`` and ``report`` (files, figures) -> ``workflow`` /
``compare`` -> ``cli``. docs/design.md gives the import layers.
"""
from importlib import import_module
from pathlib import Path

from segstruct._source_tree import map_sibling_packages
from segstruct._version import __version__

# run from a checkout (its root on sys.path), inference/ and datasets/ sit
# beside this folder, not in it: map them as an install does
map_sibling_packages(Path(__file__).resolve().parent)

# public name -> module that defines it
_EXPORTS = {
    "VOCDataset": "segstruct.datasets",
    "FeatureExtractor": "segstruct.features.extraction",
    "FeatureConfig": "segstruct.features.descriptors",
    "DetectorParams": "segstruct.features.topdown.detector",
    "paint": "segstruct.features.superpixels",
    "StructuredSVM": "segstruct.learn.estimators.structured_svm",
    "MultivariateSVM": "segstruct.learn.estimators.multivariate_svm",
    "estimator_for": "segstruct.learn.methods",
    "get_loss": "segstruct.inference.losses",
    "SegmentationModel": "segstruct.segmentation_model",
    "save_model": "segstruct.io.persistence",
    "load_model": "segstruct.io.persistence",
    "load_shape_detectors": "segstruct.io.persistence",
    "load_shape_detector": "segstruct.io.persistence",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
