"""What a comparison can compare: the classes the training split can teach
(with the top-down block, those that get detectors) and the pairs still to
train."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from segstruct.datasets import DatasetError, VOCDataset
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.topdown.training import TooFewObjects
from segstruct.workflow import check_training_set

__all__ = ["BLIND_DETECTOR", "EVAL_SPLIT", "METHODS_COMPARED", "TRAIN_SPLIT", "classes_in",
           "pending", "teachable", "with_detectors"]

#: The methods a comparison trains unless told otherwise (``segstruct compare``'s
#: default): the paper's two baselines and its proposed method, Table 1's columns.
METHODS_COMPARED = ("bl1", "bl2", "proposed")
#: The splits a comparison trains on and scores on unless told otherwise
#: (VOC's names: the models are scored on data they were not trained on).
TRAIN_SPLIT = "train"
EVAL_SPLIT = "val"

#: What the run says of a class whose detectors have no shape to vote for.
BLIND_DETECTOR = ("its average shapes are all zero (it fired on no training object with a "
                  "positive score), so its top-down block is zero everywhere and adds "
                  "nothing: the models differ from those without it only within the "
                  "learner's tolerance")


def classes_in(dataset: VOCDataset, split: str) -> list[str]:
    """VOC class names present in any mask of ``split``, in VOC order."""
    from segstruct.datasets import VOC_CLASSES
    seen = set()
    for image_id in dataset.ids(split):
        seen.update(np.unique(dataset.read_mask(image_id)).tolist())
    return [name for value, name in enumerate(VOC_CLASSES) if value in seen and value != 0]


def teachable(extractor: FeatureExtractor, split: str, classes, folds: int | None,
              skip: bool, say: Callable[[str], None]) -> dict[str, str]:
    """The classes ``split`` cannot teach (no usable object, or too few for
    ``folds`` of cross-validation), with the reason: raised as a DatasetError
    for the first one unless ``skip``, else returned (and said)."""
    skipped = {}
    for class_name in sorted(classes):
        try:
            check_training_set(extractor, split, class_name, folds)
        except DatasetError as err:
            if not skip:
                raise
            skipped[class_name] = str(err)
            say(f"skipping {class_name}: {err}")
    return skipped


def with_detectors(extractor: FeatureExtractor, classes, skip: bool,
                   say: Callable[[str], None]) -> tuple[dict[str, str], dict[str, str]]:
    """Every class's detectors, trained (or read from the cache) at once on the
    workers, before any pair: a class that cannot have them stops the run now
    rather than hours in, or, with ``skip``, is left out with the reason.

    Returns
    -------
    skipped : {class: why it has no detector}
    warnings : {class: what is wrong with its detectors} (one whose block is
        zero everywhere)
    """
    skipped: dict[str, str] = {}
    warnings: dict[str, str] = {}
    if extractor.config.detector is None:
        return skipped, warnings
    # the codebook learnt beside them, which the features need next
    errors = extractor.train_detectors(list(classes), with_codebook=True)
    for class_name in classes:
        try:
            if class_name in errors:
                raise errors[class_name]
            detectors = extractor.block_detectors(class_name)
        except TooFewObjects as err:
            if not skip:
                raise
            skipped[class_name] = str(err)
            say(f"skipping {class_name}: {err}")
            continue
        if not any(shape.any() for sd in detectors
                   for shape in [*sd.shapes.root, *sd.shapes.parts]):
            # no shape to vote for: the block is zero on every superpixel
            warnings[class_name] = BLIND_DETECTOR
            say(f"warning: {class_name}: {BLIND_DETECTOR}")
    return skipped, warnings


def pending(store, classes, methods) -> list[tuple[str, str]]:
    """The (class, method) pairs of ``store`` (a RecordStore) without a
    finished record of this run, in class then method order."""
    return [(c, m) for c in classes for m in methods if store.load(c, m) is None]
