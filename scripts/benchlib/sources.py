"""A data set / class and the BL1 weights its potentials come from: trained
here on the training split, or loaded from a saved model."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# scripts/benchlib/ -> the repository -> its sibling shared/data
DEFAULT_SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def check_root(shared: Path, name: str) -> Path:
    """The folder of shared data set ``name``; a clear exit when it is missing."""
    root = shared / name
    if not (root / "ImageSets" / "Segmentation").is_dir():
        raise SystemExit(
            f"error: shared data set {name!r} not found: {root}/ImageSets/Segmentation "
            f"does not exist. Give the folder holding the data sets with --shared-data DIR "
            f"(default {DEFAULT_SHARED}).")
    return root


@dataclass
class Source:
    """A data set / class with the BL1 weights its potentials come from.

    ``train`` holds the training examples when BL1 was trained here (the
    data-set scope target reuses them), else None (loaded with ``train_examples``).
    """

    name: str
    class_name: str
    dataset: object
    extractor: object
    w: np.ndarray
    model_info: dict
    train: list | None = None

    def train_examples(self) -> list:
        if self.train is None:
            self.train = self.extractor.examples("train", self.class_name)
        return self.train

    def potentials(self, graph):
        from segstruct.feature_map import MRFModel
        return MRFModel(pairwise=True).potentials(graph, self.w)


@dataclass(frozen=True)
class SourceSettings:
    """How sources are built: features (cache folder, worker processes, progress
    bars) and the BL1 training trained here (C, cutting-plane iterations)."""

    cache: Path | None = None
    n_jobs: int = 1
    progress: bool = False
    C: float = 0.5
    max_iter: int = 200


def load_source(shared: Path, name: str, class_name: str, settings: SourceSettings,
                model_path: Path | None = None) -> Source:
    """A trained BL1 model (or the saved ``model_path``) of one data set / class."""
    from segstruct.datasets import VOCDataset
    from segstruct.features.cache import ArrayCache

    dataset = VOCDataset(check_root(shared, name))
    cache = ArrayCache(settings.cache)
    if model_path is not None:
        return _loaded(name, class_name, dataset, cache, settings, model_path)
    return _trained(name, class_name, dataset, cache, settings)


def _loaded(name, class_name, dataset, cache, settings, model_path) -> Source:
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.io.persistence import load_model, load_shape_detector

    estimator, config, codebook, doc = load_model(model_path)
    if not estimator.pairwise:
        raise SystemExit(f"error: {model_path} is a unary-only model; the benchmark "
                         "needs pairwise potentials (a bl1/hamming/proposed model)")
    shape_detector = load_shape_detector(model_path)
    extractor = FeatureExtractor(dataset, config, cache, n_jobs=settings.n_jobs,
                                 progress=settings.progress, codebook=codebook,
                                 detectors={doc["class"]: shape_detector} if shape_detector
                                 else None)
    model_info = {"source": str(model_path), "class": doc.get("class"),
                  "dataset": doc.get("dataset"), "method": doc.get("method"),
                  "loss": repr(estimator.loss_)}
    if doc.get("class") not in (None, class_name):
        print(f"warning: {model_path} was trained for class {doc.get('class')!r}, "
              f"benchmarking it on {class_name!r}", file=sys.stderr)
    return Source(name, class_name, dataset, extractor,
                  np.asarray(estimator.w_, np.float64), model_info)


def _trained(name, class_name, dataset, cache, settings) -> Source:
    from segstruct.features.config import FeatureConfig
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.learn.estimators.structured_svm import StructuredSVM

    extractor = FeatureExtractor(dataset, FeatureConfig(), cache, n_jobs=settings.n_jobs,
                                 progress=settings.progress)
    train = extractor.examples("train", class_name)
    start = time.perf_counter()
    # data-set scope, as in the README's results
    estimator = StructuredSVM(loss="adjusted_hamming", scope="dataset", C=settings.C,
                              max_iter=settings.max_iter)
    estimator.fit([e.graph for e in train], [e.pixel_counts for e in train])
    model_info = {"source": "BL1 trained here", "train_split": "train",
                  "n_train_images": len(train), "loss": repr(estimator.loss_),
                  "C": settings.C, "scope": "dataset", "node_weights": "count",
                  "max_iter": settings.max_iter, "n_iter": estimator.n_iter_,
                  "converged": bool(estimator.converged_),
                  "fit_seconds": time.perf_counter() - start}
    return Source(name, class_name, dataset, extractor,
                  np.asarray(estimator.w_, np.float64), model_info, train)
