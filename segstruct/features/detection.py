"""The top-down block of a data set: per class, an object detector with the
average shapes under its filters, trained on the training split and cached,
and per image the superpixel features they give.

The detector and its shapes (``segstruct.features.topdown``) are kept
together as a :class:`ShapeDetector`: the features need both, a model trained
on them must carry both to predict on new images, and the cache keys of the
per-image features name both by one digest.
"""
from __future__ import annotations

import hashlib
import json
from functools import cached_property
from dataclasses import dataclass

import numpy as np

from segstruct.datasets.folds import make_folds
from segstruct.datasets.voc import VOCDataset, class_index, voc_class_name
from segstruct.features.cache import ArrayCache, canonical_json, file_digest, image_digest
from segstruct.features.scale import resize_image, resize_labels, upsampling_key, working_shape
from segstruct.features.topdown.detector import Detector, DetectorParams
from segstruct.features.topdown.shapes import AverageShapes, average_shapes
from segstruct.features.topdown.training import TooFewObjects, train_detector
from segstruct.io.text import count

# Bump when the meaning of a cached detector or top-down block changes (2: the
# average shapes are cropped under unclipped root boxes).
TOP_DOWN_VERSION = 2

_DETECTOR = "detector."
_SHAPES = "shapes."


@dataclass
class ShapeDetector:
    """A class's object detector and the average shape under each of its filters.

    Attributes
    ----------
    class_name : str, the VOC class it detects.
    detector : Detector
    shapes : AverageShapes
    """

    class_name: str
    detector: Detector
    shapes: AverageShapes

    @property
    def params(self) -> DetectorParams:
        return self.detector.params

    def to_arrays(self) -> tuple[dict, dict]:
        """(arrays, settings): named numpy arrays and a JSON-able dict, for
        the cache and for model files."""
        det_arrays, det_settings = self.detector.to_arrays()
        arrays = {_DETECTOR + k: v for k, v in det_arrays.items()}
        arrays.update({_SHAPES + k: v for k, v in self.shapes.to_arrays().items()})
        return arrays, {"class": self.class_name, "detector": det_settings}

    @classmethod
    def from_arrays(cls, arrays: dict, settings: dict) -> "ShapeDetector":
        """Inverse of :meth:`to_arrays` (ValueError for another format)."""
        def part(prefix):
            return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
        return cls(settings["class"], Detector.from_arrays(part(_DETECTOR), settings["detector"]),
                   AverageShapes.from_arrays(part(_SHAPES)))

    @cached_property
    def digest(self) -> str:
        """Identity by content (the per-image features' cache key names it;
        compare checks every record against it): hashed once, as a detector
        is not changed after it is made."""
        arrays, settings = self.to_arrays()
        h = hashlib.sha256(canonical_json(settings).encode())
        for name in sorted(arrays):
            value = np.ascontiguousarray(arrays[name])
            h.update(name.encode())
            h.update(str((value.dtype.str, value.shape)).encode())
            h.update(value.tobytes())
        return h.hexdigest()


def detectors_digest(detectors) -> str:
    """Identity of the detectors of a top-down block by content: a single
    detector's own digest (as records made before cross-fitting hold), else
    a digest of the members' digests in order."""
    detectors = list(detectors)
    if len(detectors) == 1:
        return detectors[0].digest
    return hashlib.sha256(" ".join(sd.digest for sd in detectors).encode()).hexdigest()


class _Images:
    """A split's images at the working resolution, read from disk when
    indexed (training reads each image several times; holding them all would
    take gigabytes)."""

    def __init__(self, dataset: VOCDataset, ids, long_side: int | None = None,
                 upsampling: str = "linear"):
        self.dataset, self.ids, self.long_side = dataset, list(ids), long_side
        self.upsampling = upsampling

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, k):
        image = self.dataset.read_image(self.ids[k])
        return resize_image(image, working_shape(image.shape, self.long_side), self.upsampling)


def train_shape_detector(dataset: VOCDataset, class_name: str, split: str,
                         params: DetectorParams, cache: ArrayCache,
                         say=None, ids=None, what: str = "",
                         long_side: int | None = None,
                         upsampling: str = "linear") -> ShapeDetector:
    """The class's detector and shapes, trained on ``split`` (cached).

    The cache key holds the bytes of every image and mask it is trained on,
    the class and every detector setting, so that changing any of them
    trains anew.

    Parameters
    ----------
    dataset : VOCDataset
    class_name : str
    split : str, the training split.
    params : DetectorParams
    cache : ArrayCache
    say : callable(str), optional; told when training starts (minutes of work).
    ids : sequence of str, optional
        Train on these images of ``split`` only (a cross-fitting fold's
        training part); default all of them.
    what : str, how ``say`` names the images (e.g. "without fold 2").
    long_side : int or None
        The working resolution (``FeatureConfig.long_side``): images and
        masks are resized to it, so that objects have the sizes the
        detector meets on the working images it labels.
    upsampling : str, how smaller images are enlarged to it
        (``FeatureConfig.upsampling``).

    Raises
    ------
    TooFewObjects (a ValueError)
        When the split holds too few objects of the class to train on.
    """
    class_name = voc_class_name(class_name)      # the cache key and the record
    cls = class_index(class_name)
    ids = dataset.ids(split) if ids is None else list(ids)
    key = {"images": [image_digest(dataset.image_path(i)) for i in ids],
           "masks": [file_digest(dataset.mask_path(i)) for i in ids],
           "class": class_name, "detector": params.to_dict(), "version": TOP_DOWN_VERSION}
    sizes = [tuple(dataset.image_size(i)) for i in ids] if long_side is not None else []
    work = [working_shape(size, long_side) for size in sizes]
    if work != sizes:
        key["work"] = [list(w) for w in work]   # absent otherwise: the entries made before
        key.update(upsampling_key(upsampling))

    def compute():
        if say is not None:
            say(f"training the {class_name} detector on {dataset.name}/{split}"
                f"{' ' + what if what else ''} ({count(len(ids), 'image')})")
        images = _Images(dataset, ids, long_side, upsampling)
        masks = [dataset.read_mask(i) for i in ids]
        if work:
            masks = [resize_labels(m, w) for m, w in zip(masks, work)]
        pyramids: dict = {}
        try:
            detector = train_detector(images, masks, cls, params, pyramids=pyramids)
        except TooFewObjects as err:
            raise TooFewObjects(f"{class_name} detector on {dataset.name}/{split}: {err}; "
                                "train without the top-down block (--no-top-down), or on a "
                                "split with more objects") from err
        # the last mining round's pyramids are those the shapes need
        shapes = average_shapes(detector, images, masks, cls, pyramids=pyramids)
        arrays, settings = ShapeDetector(class_name, detector, shapes).to_arrays()
        arrays["settings"] = np.frombuffer(json.dumps(settings).encode(), np.uint8)
        return arrays

    arrays = dict(cache.get_or_compute("detector", key, compute))
    settings = json.loads(arrays.pop("settings").tobytes().decode())
    return ShapeDetector.from_arrays(arrays, settings)


def detector_folds(dataset: VOCDataset, class_name: str, split: str, n_folds: int,
                   seed: int) -> dict:
    """The fold of each image of ``split`` for cross-fitted detectors.

    The images showing the class are dealt out first
    (:func:`segstruct.datasets.folds.make_folds`), so that every fold's
    training part holds objects to learn from.

    Returns
    -------
    dict, image id -> fold in 0 .. n_folds - 1.

    Raises
    ------
    TooFewObjects (a ValueError)
        When fewer than ``n_folds`` images show the class: some fold's
        detector would then be trained on images without any.
    """
    cls = class_index(class_name)
    ids = dataset.ids(split)
    shows = np.array([bool(np.any(dataset.read_mask(i) == cls)) for i in ids], np.int64)
    if int(shows.sum()) < n_folds:
        raise TooFewObjects(
            f"{class_name} on {dataset.name}/{split}: {count(int(shows.sum()), 'image')} "
            f"{'shows' if int(shows.sum()) == 1 else 'show'} it, "
            f"fewer than the {n_folds} folds of the cross-fitted detectors; use fewer "
            "(--top-down-folds), 1 (no cross-fitting), or --no-top-down")
    return dict(zip(ids, make_folds(shows, n_folds, seed).tolist()))


def top_down_key(digest: str, segments: np.ndarray, detector_digest: str,
                 upsampling: str = "linear") -> dict:
    """Cache key of one image's top-down block: the image, the superpixels it
    is averaged over (by content, so a new segmentation never reuses an old
    block; their shape is the working size), the detector, and how the image
    was enlarged to the working size when not linearly (the entries made
    before the setting)."""
    segments = np.ascontiguousarray(segments)
    return {"image": digest, "detector": detector_digest, "version": TOP_DOWN_VERSION,
            "segments": [list(segments.shape), hashlib.sha256(segments.tobytes()).hexdigest()],
            **upsampling_key(upsampling)}
