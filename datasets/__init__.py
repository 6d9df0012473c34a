"""Data set readers (installed as ``segstruct.datasets``).

- :mod:`.voc`: reader for the PASCAL VOC segmentation layout.
- :mod:`.synthetic`: a generated VOC-layout set, the out-of-the-box default.
- :mod:`.images`: images without masks, to apply a model to.
"""
from .images import ImageFiles
from .synthetic import GENERATOR_VERSION, default_synthetic_root, make_synthetic_voc
from .voc import (
    VOC_CLASSES,
    VOID_LABEL,
    DatasetError,
    Sample,
    VOCDataset,
    class_index,
    voc_class_name,
    voc_colormap,
)

__all__ = [
    "VOC_CLASSES",
    "VOID_LABEL",
    "DatasetError",
    "Sample",
    "VOCDataset",
    "class_index",
    "voc_class_name",
    "voc_colormap",
    "ImageFiles",
    "GENERATOR_VERSION",
    "default_synthetic_root",
    "make_synthetic_voc",
]
