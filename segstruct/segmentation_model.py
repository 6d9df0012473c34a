"""A trained segmentation model: the one object that labels new images.

A :class:`SegmentationModel` holds what a model file (``MODEL.json`` +
``MODEL.npz``, :mod:`segstruct.io.persistence`) holds: the fitted learner,
the feature settings, the codebook and the top-down block's detectors, and
the file's document (class, method, data set, scores). It is what
``segstruct train`` writes and ``predict``, ``evaluate`` and ``visualize``
read; in Python::

    from segstruct import SegmentationModel
    model = SegmentationModel.load("runs/horse_prop")
    masks = model.predict(["a.jpg", "b.png"])       # (H, W) uint8 arrays, 1 = horse

Glossary (one word per concept): the *model* is this object (and its files);
the *joint feature map* is :class:`segstruct.feature_map.MRFModel`; the *learner*
(estimator) is what ``fit`` trains (:mod:`segstruct.learn`).
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from PIL import Image, ImageOps

from segstruct.datasets import ImageFiles, class_index
from segstruct.datasets.voc import orientation
from segstruct.ensemble import averaged_labels, superpixel_variants
from segstruct.features.cache import ArrayCache
from segstruct.features.config import FeatureConfig
from segstruct.features.extraction import FeatureExtractor
from segstruct.io.persistence import load_model, load_shape_detectors, model_paths, save_model

__all__ = ["SegmentationModel"]


@dataclass
class SegmentationModel:
    """A trained model of one class and everything that applies it.

    Attributes
    ----------
    estimator : the fitted learner (``segstruct.learn``; it predicts by graph cut).
    config : FeatureConfig, the features it was trained on.
    codebook : (n_words, 384) float32 array, or None without the SIFT block.
    detectors : list of ShapeDetector (the top-down block's: their mean block
        is a new image's), or None without the block.
    doc : dict, the model file's document: ``class``, ``method``,
        ``dataset``, ``train_score``, ``val_score``, settings, code version.
    path : the model's path (without suffix), when it came from a file.
    """

    estimator: Any      # a fitted learner of segstruct.learn (duck-typed)
    config: FeatureConfig
    codebook: np.ndarray | None
    detectors: list | None
    doc: dict
    path: Path | None = None

    # -- what it segments ----------------------------------------------------
    @property
    def class_name(self) -> str:
        """The VOC class it segments."""
        return self.doc["class"]

    @property
    def label(self) -> int:
        """The VOC index of :attr:`class_name`."""
        return class_index(self.class_name)

    @property
    def method(self) -> str:
        """The training method (bl1, bl2, proposed, ...)."""
        return self.doc.get("method", "?")

    # -- files ----------------------------------------------------------------
    @classmethod
    def load(cls, path) -> "SegmentationModel":
        """Read a model saved by ``segstruct train`` (or :meth:`save`).

        Parameters
        ----------
        path : the model path, with or without ``.json`` / ``.npz``.

        Raises
        ------
        ModelFileError
            A missing, corrupted or inconsistent file (the message says which).
        """
        estimator, config, codebook, doc = load_model(path)
        json_path, _ = model_paths(path)
        return cls(estimator, config, codebook, load_shape_detectors(path), doc,
                   json_path.with_suffix(""))

    def save(self, path) -> Path:
        """Write the model as ``PATH.json`` + ``PATH.npz`` (atomically); returns
        the JSON path. The document's own entries (class, method, scores) are
        kept; the file format's are written anew."""
        own = {k: v for k, v in self.doc.items()
               if k not in ("format", "format_version", "code_version", "arrays_file",
                            "arrays_sha256", "estimator", "features", "n_features",
                            "top_down", "training", "json_sha256")}
        # a learner restored from a file has no training run: the file's summary
        training = None if hasattr(self.estimator, "n_iter_") else self.doc.get("training")
        json_path = save_model(path, self.estimator, self.config, self.codebook, own,
                               shape_detectors=self.detectors, training=training)
        self.path = json_path.with_suffix("")
        return json_path

    # -- applying it ----------------------------------------------------------
    def extractor(self, dataset, cache: ArrayCache | None = None, n_jobs: int = 1,
                  progress: bool = False) -> FeatureExtractor:
        """The features this model was trained on, over ``dataset`` (a
        VOCDataset or ImageFiles): its codebook and detectors, never new ones."""
        detectors = {self.class_name: self.detectors} if self.detectors else None
        return FeatureExtractor(dataset, self.config, cache, n_jobs=n_jobs, progress=progress,
                                codebook=self.codebook, detectors=detectors, from_model=True)

    def predict(self, images: Sequence, cache: ArrayCache | None = None, n_jobs: int = 1,
                progress: bool = False, ensemble: int | None = None) -> list[np.ndarray]:
        """Label images: one mask per image, at the image's own size.

        Parameters
        ----------
        images : sequence of image files (str or Path), PIL images or
            (H, W[, C]) uint8 arrays, mixed as wished; every image mode is
            converted to RGB as ``segstruct predict`` does. A file or a PIL
            image with an EXIF orientation (a phone photo) is turned as the
            tag says, the way viewers show it, so ``Image.open(path)`` gives
            the mask that ``path`` gives; the mask has the turned image's
            size. A PIL image turned already (``ImageOps.exif_transpose``
            drops the tag) is not turned again; an array is taken as it is.
        cache : ArrayCache, optional (default: the user's cache folder);
            ``ArrayCache(enabled=False)`` keeps nothing.
        n_jobs : worker processes of the feature extraction.
        progress : show progress bars.
        ensemble : int, 1 to 5, or None: label each image this many times,
            with SLIC's number of segments varied, and decide on the mean
            max-marginal difference per pixel (:mod:`segstruct.ensemble`;
            more than 1 for SLIC models only). 1: the model's graph cut, as
            training scores it. None (default): 5 for a SLIC model, 1 for
            a Felzenszwalb one (:func:`segstruct.ensemble.default_members`),
            as ``segstruct predict`` labels by default.

        Returns
        -------
        list of (H, W) uint8 arrays: 1 where the model labels the class, 0 elsewhere.
        """
        configs = superpixel_variants(self.config, ensemble)
        images = list(images)
        with tempfile.TemporaryDirectory(prefix="segstruct-") as folder:
            files = []
            for k, image in enumerate(images):
                if isinstance(image, (str, Path)):
                    files.append(Path(image))
                    continue
                # arrays and PIL images go through a lossless file: the features
                # (and their cache) are keyed by a file's bytes. The PNG keeps no
                # EXIF orientation, so a PIL image is turned by its tag first, as
                # ImageFiles turns a file
                if isinstance(image, Image.Image):
                    pil = ImageOps.exif_transpose(image) if orientation(image) != 1 else image
                else:
                    pil = Image.fromarray(np.asarray(image))
                files.append(Path(folder) / f"segstruct-image-{k}.png")
                pil.save(files[-1])
            source = ImageFiles(files)
            ids = [Path(f).resolve().stem for f in files]
            if len(configs) > 1:
                extractors = [replace(self, config=c).extractor(source, cache, n_jobs, progress)
                              for c in configs]
                return [(y == self.label).astype(np.uint8)
                        for y in averaged_labels([self], extractors, ids)]
            graphs = self.extractor(source, cache, n_jobs, progress).graphs(
                ids=ids, class_name=self.class_name if self.config.detector else None)
            labels = self.estimator.predict(graphs)
        return [g.paint(np.asarray(y, np.uint8)) for g, y in zip(graphs, labels)]
