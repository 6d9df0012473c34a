"""From a VOC-style data set to superpixel graphs with features, cached.

Feature extraction is the slow step (dense SIFT, k-means quantisation), so
every result is stored in an ``ArrayCache`` keyed by the image's bytes and
every setting that changes it; images are processed in parallel (joblib) with
a progress bar. Graphs and features do not depend on the class; the per-class
targets are cheap and are computed from the mask on every load.
"""
from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Iterable, Mapping, Sequence

import numpy as np
from joblib import cpu_count

from segstruct.io.threads import thread_limits
from segstruct.cluster import parallel_map
from segstruct.datasets.voc import (DatasetError, VOCDataset, voc_class_name)
from segstruct.features import descriptors as F
from segstruct.features.cache import ArrayCache, image_digest, key_digest
from segstruct.features.example import Example, packed_masks, paired_examples
from segstruct.features.detection import ShapeDetector, detector_folds, train_shape_detector
# the per-image work; SuperpixelGraph and check_finite_features imported from here too
from segstruct.features.per_image import (FEATURE_VERSION,  # noqa: F401
                                          SuperpixelGraph, check_finite_features,
                                          codebook_of_sample, codebook_share, graph_task,
                                          graph_variants_task, top_down_variants_task,
                                          resized_shape, sample_descriptors_task,
                                          top_down_blocks_task,
                                          training_task)
from segstruct.features.scale import auto_long_side, upsampling_key
from segstruct.features.topdown.training import TooFewObjects
from segstruct.io.progress import note, progress_bar


def codebook_digest(codebook: np.ndarray) -> str:
    """Identity of a codebook by content (feature cache entries are keyed by it)."""
    words = np.ascontiguousarray(codebook, np.float32)
    return key_digest({"shape": list(words.shape),
                       "sha256": hashlib.sha256(words.tobytes()).hexdigest()})


# --------------------------------------------------------------------------
# Public entry points


def _map_images(func, arg_lists: Sequence[tuple], n_jobs: int, progress: bool, desc: str):
    """``func(*args)`` per image, in order (:func:`segstruct.cluster.parallel_map`),
    leaving the workers' process memo to the top-down blocks that follow."""
    return parallel_map(func, arg_lists, n_jobs, progress, desc, unit="img", keep_memo=True)


class FeatureExtractor:
    """Superpixel graphs and features of a data set, cached and in parallel.

    Parameters
    ----------
    dataset : VOCDataset
    config : FeatureConfig
    cache : ArrayCache, optional (default: the user's cache folder).
    n_jobs : number of worker processes (joblib convention, -1 = all cores).
    progress : show progress bars.
    codebook_split : the training split: the codebook and (with
        ``config.detector``) each class's detector are learnt on it.
    codebook : (n_words, 384) array, optional
        A codebook to use instead of learning one (a trained model's, so that
        features of new data match the ones it was trained on).
    detectors : dict of class name -> ShapeDetector, optional
        Detectors to use instead of training them (a trained model's).
    from_model : bool
        The features of a trained model: its codebook and detectors must be
        given, never learnt anew (also implied by giving a codebook).
    """

    def __init__(self, dataset: VOCDataset, config: F.FeatureConfig | None = None,
                 cache: ArrayCache | None = None, n_jobs: int = 1,
                 progress: bool = True, codebook_split: str = "train",
                 codebook: np.ndarray | None = None,
                 detectors: Mapping[str, ShapeDetector | Sequence[ShapeDetector]] | None = None,
                 from_model: bool = False):
        self.dataset = dataset
        self._config = config or F.FeatureConfig()
        self.cache = cache if cache is not None else ArrayCache()
        self.n_jobs = n_jobs
        self.progress = progress
        self.codebook_split = codebook_split
        self._codebook = None
        # a model's block detectors (one, or its folds'), by class
        self._given: dict[str, list[ShapeDetector]] = {
            name: [sd] if isinstance(sd, ShapeDetector) else list(sd)
            for name, sd in (detectors or {}).items()}
        self._detectors = {name: sds[0] for name, sds in self._given.items() if len(sds) == 1}
        self._fold_detectors: dict = {}          # class -> (fold of image, detectors)
        self._from_model = from_model or codebook is not None
        for name, sds in self._given.items():
            if not sds or any(sd.params != self._config.detector for sd in sds):
                raise ValueError(f"the {name} detector's settings differ from the feature "
                                 "settings' (config.detector)")
        if codebook is not None:
            codebook = np.ascontiguousarray(codebook, np.float32)
            if codebook.shape != (self._config.n_words, F.OPPONENT_DIM):
                raise ValueError(f"codebook has shape {codebook.shape}, expected "
                                 f"({self._config.n_words}, {F.OPPONENT_DIM})")
            if not np.all(np.isfinite(codebook)):
                raise ValueError("codebook holds non-finite values")
            self._codebook = (codebook, codebook_digest(codebook))

    @property
    def config(self) -> F.FeatureConfig:
        """The feature settings, with a ``long_side`` of "auto" replaced by
        the largest long side of ``codebook_split``'s images
        (:func:`~segstruct.features.scale.auto_long_side`, read from their
        headers on first use): the number a model records. Unreadable images
        are left out (the run that needs them stops at them, naming them); a
        split without a readable image leaves the images as given (None)."""
        if self._config.long_side == "auto":
            if self._from_model:
                raise ValueError("a trained model's features must give their long_side; "
                                 "'auto' is resolved when a model is trained")
            self._config = replace(self._config, long_side=self._auto_long_side())
        return self._config

    @property
    def long_side(self) -> int | None:
        """The working long side in pixels (None: images as given)."""
        value = self.config.long_side
        assert not isinstance(value, str)         # "auto" is resolved by config
        return value

    def _auto_long_side(self) -> int | None:
        try:
            ids = self.dataset.ids(self.codebook_split)
        except DatasetError:
            return None
        sizes = []
        for image_id in ids:
            try:
                sizes.append(self.dataset.image_size(image_id))
            except DatasetError:
                continue
        return auto_long_side(sizes) if sizes else None

    def _resized(self, ids) -> dict[str, list[int]]:
        """The working (h, w) of each of these images worked on at another
        size than its own (the cache keys of what is learnt on them)."""
        out: dict[str, list[int]] = {}
        if self.long_side is None:          # no header to read
            return out
        for i in ids:
            work = resized_shape(self.dataset.image_size(i), self.long_side)
            if work is not None:
                out[i] = list(work)
        return out

    # -- codebook -----------------------------------------------------------
    def codebook(self) -> tuple[np.ndarray, str]:
        """The visual-word codebook and its identity (a digest).

        Learnt once on a seeded sample of ``codebook_split`` images and
        cached under a key made of those images' bytes and the settings.
        """
        if self._codebook is not None:
            return self._codebook
        key, chosen_ids = self._codebook_plan()
        cfg = self.config

        def compute():
            args = [(self.dataset.root, i, cfg, codebook_share(cfg, len(chosen_ids)), cfg.seed + k)
                    for k, i in enumerate(chosen_ids)]
            parts = _map_images(sample_descriptors_task, args, self.n_jobs,
                                  self.progress, "codebook descriptors")
            with thread_limits(max(1, self._cores())), \
                    progress_bar(cfg.kmeans_iterations, "codebook k-means", self.progress,
                                 unit="iteration") as bar:
                words = codebook_of_sample(parts, cfg, on_iteration=bar.update)
            return {"codebook": words}

        words = self.cache.get_or_compute("codebook", key, compute)["codebook"]
        self._codebook = (words, codebook_digest(words))
        return self._codebook

    def _codebook_plan(self) -> tuple[dict, list[str]]:
        """The codebook's cache key and the ids of the images it samples (a
        seeded draw of ``codebook_split``)."""
        if self._from_model:
            raise ValueError("the features are a trained model's, but its codebook was not "
                             "given: pass the model's (load_model returns it)")
        cfg = self.config
        ids = self.dataset.ids(self.codebook_split)
        rng = np.random.default_rng(cfg.seed)
        chosen = sorted(rng.choice(len(ids), min(cfg.codebook_images, len(ids)),
                                   replace=False).tolist())
        chosen_ids = [ids[k] for k in chosen]
        digests = [image_digest(self.dataset.image_path(i)) for i in chosen_ids]
        key = {"images": digests, "settings": cfg.codebook_dict(),
               "version": FEATURE_VERSION}
        resized = self._resized(chosen_ids)
        if resized:       # absent otherwise: the entries made before the setting
            key["work"] = [resized.get(i) for i in chosen_ids]
            key.update(upsampling_key(cfg.upsampling))
        return key, chosen_ids

    def _codebook_task(self) -> tuple | None:
        """The arguments of :func:`codebook_task` when the codebook is still
        to learn (None when it is known, cached or not wanted), and its key."""
        if self._codebook is not None or not self.config.sift or self._from_model:
            return None
        key, chosen_ids = self._codebook_plan()
        cached = self.cache.load("codebook", key)
        if cached is not None:
            words = cached["codebook"]
            self._codebook = (words, codebook_digest(words))
            return None
        return key, (self.dataset.root, chosen_ids, self.config)

    def _cores(self) -> int:
        if self.n_jobs < 0:   # joblib's convention: -1 = every core (of this process)
            return max(1, cpu_count() + 1 + self.n_jobs)
        return max(1, self.n_jobs)

    # -- detectors ----------------------------------------------------------
    def shape_detector(self, class_name: str) -> ShapeDetector:
        """The class's detector and shapes trained on the whole of
        ``codebook_split`` (cached): the block's detector without
        cross-fitting (``config.top_down_folds`` 1), and the one
        ``segstruct detector`` scores."""
        class_name = voc_class_name(class_name)
        if self.config.detector is None:
            raise ValueError("these feature settings have no top-down block (config.detector)")
        if class_name not in self._detectors:
            if self._from_model:
                # a model's features must come from its own detectors, never new ones
                raise ValueError(f"the features are a trained model's, but its {class_name} "
                                 "detector was not given: pass the model's "
                                 "(segstruct.load_shape_detectors(path))")
            self._detectors[class_name] = train_shape_detector(
                self.dataset, class_name, self.codebook_split, self.config.detector,
                self.cache, note if self.progress else None,
                long_side=self.long_side, upsampling=self.config.upsampling)
        return self._detectors[class_name]

    def block_detectors(self, class_name: str) -> list[ShapeDetector]:
        """The detectors whose blocks, averaged, give the top-down block of
        any image but a cross-fitted training image: the model's own (given),
        else the folds' (``config.top_down_folds`` >= 2 and
        ``config.top_down_detector`` "folds": :meth:`fold_detectors`), else
        the whole split's. A model saves them to label new images."""
        class_name = voc_class_name(class_name)
        if class_name in self._given:
            return self._given[class_name]
        if self._cross_fitting() and self.config.top_down_detector == "folds":
            return self.fold_detectors(class_name)[1]
        return [self.shape_detector(class_name)]

    def fold_detectors(self, class_name: str) -> tuple[dict, list]:
        """The class's cross-fitted detectors (``config.top_down_folds`` >= 2).

        Returns
        -------
        fold_of : dict, image id of ``codebook_split`` -> its fold.
        detectors : list of ShapeDetector, one per fold, trained (and cached)
            on the training split without that fold: the detector whose
            block a training image of that fold gets.
        """
        class_name = voc_class_name(class_name)
        k = self._cross_fitting()
        if not k:
            raise ValueError("these feature settings do not cross-fit the top-down block "
                             "(config.detector with top_down_folds >= 2, and features "
                             "that are not a trained model's)")
        if class_name not in self._fold_detectors:
            error = self.train_detectors([class_name]).get(class_name)
            if error is not None:
                raise error
        return self._fold_detectors[class_name]

    def train_detectors(self, class_names, with_codebook: bool = False) -> dict:
        """Train (or read from the cache) every detector the top-down blocks
        of these classes need, all at once on the workers, which keeps
        the workers busier than training one class at a time.

        With ``with_codebook`` the codebook (:meth:`codebook`) is learnt as
        one more task among them, when it is not cached: on one core,
        beside the detectors, rather than alone after them with the other
        cores idle (the same words: k-means' sums do not depend on the
        threads).

        Returns
        -------
        dict, class name -> TooFewObjects for the classes that cannot have
        their detectors (the others are ready: :meth:`block_detectors`).
        """
        class_names = [voc_class_name(c) for c in class_names]
        k = self._cross_fitting()
        errors: dict[str, Exception] = {}
        jobs: list[tuple[str, int | None, list[str] | None]] = []   # (class, fold, ids)
        detector = self.config.detector
        for name in class_names:
            if k and name not in self._fold_detectors:
                try:
                    assert detector is not None
                    fold_of = detector_folds(self.dataset, name, self.codebook_split, k,
                                             detector.seed)
                except TooFewObjects as err:
                    errors[name] = err
                    continue
                jobs += [(name, f, [i for i in fold_of if fold_of[i] != f]) for f in range(k)]
            if name not in self._detectors and name not in self._given and \
                    (not k or self.config.top_down_detector == "whole"):
                jobs.append((name, None, None))
        codebook = self._codebook_task() if with_codebook and jobs else None
        if not jobs:
            return errors
        args = [("detector", self.dataset, name, self.codebook_split, self.config.detector,
                 self.cache, note if self.progress else None, ids,
                 "" if f is None else f"without fold {f + 1} of {k}", self.long_side,
                 self.config.upsampling)
                for name, f, ids in jobs]
        if codebook is not None:
            # first: as long as a detector, it would leave a core idle at the end
            args.insert(0, ("codebook", *codebook[1]))
        done = parallel_map(training_task, args, min(self._cores(), len(args)), self.progress,
                            "detectors" if codebook is None else "detectors and codebook",
                            unit="detector" if codebook is None else "task", keep_memo=True)
        if codebook is not None:
            words = done.pop(0)
            self.cache.save("codebook", codebook[0], {"codebook": words})
            self._codebook = (words, codebook_digest(words))
        folds: dict[str, dict[int, ShapeDetector]] = {}
        for (name, f, _), (trained_one, error) in zip(jobs, done):
            if error is not None:
                errors.setdefault(name, error)
            elif f is None:
                self._detectors[name] = trained_one
            else:
                folds.setdefault(name, {})[f] = trained_one
        for name, trained in folds.items():
            if name not in errors:
                assert detector is not None
                fold_of = detector_folds(self.dataset, name, self.codebook_split, k,
                                         detector.seed)
                self._fold_detectors[name] = (fold_of, [trained[f] for f in range(k)])
        return errors

    def _cross_fitting(self) -> int:
        """The number of folds of cross-fitted detectors, 0 for none (a
        model's features are never cross-fitted: it carries its detectors)."""
        if self.config.detector is None or self._from_model:
            return 0
        return self.config.top_down_folds if self.config.top_down_folds >= 2 else 0

    def _graph_detectors(self, graphs, class_name: str) -> list:
        """The detectors whose mean block each graph gets: its fold's for a
        cross-fitted training image, :meth:`block_detectors` for any other."""
        out: list[list[ShapeDetector] | None] = [None] * len(graphs)
        if self._cross_fitting():
            train_ids = set(self.dataset.ids(self.codebook_split))
            if any(g.image_id in train_ids for g in graphs):
                fold_of, detectors = self.fold_detectors(class_name)
                for j, g in enumerate(graphs):
                    if g.image_id in fold_of:
                        out[j] = [detectors[fold_of[g.image_id]]]
        if any(d is None for d in out):
            others = self.block_detectors(class_name)
            return [others if d is None else d for d in out]
        return [d for d in out if d is not None]

    def _add_top_down(self, runs: list[list[SuperpixelGraph]], class_name: str) -> None:
        """Append the class's top-down block to every graph's unary features.

        ``runs``: per image, its graphs (one per superpixel setting, all at
        one working size), whose blocks are pooled from one making of each
        detector's masks."""
        chosen = self._graph_detectors([graphs[0] for graphs in runs], class_name)
        # the training-time blocks share HOG maps with the detectors' training
        # and between classes; a model's features (new images, each seen once)
        # keep nothing
        args = [(self.dataset, graphs[0].image_id, [g.working_segments for g in graphs],
                 detectors, self.cache.directory, self.cache.enabled, self.config.upsampling,
                 not self._from_model)
                for graphs, detectors in zip(runs, chosen)]
        blocks = _map_images(top_down_variants_task, args, self.n_jobs, self.progress,
                             f"top-down {class_name}")
        for graphs, per_run in zip(runs, blocks):
            for graph, block in zip(graphs, per_run):
                assert graph.unary is not None        # the bottom-up features come first
                graph.unary = np.hstack([graph.unary, block])
                check_finite_features(graph.image_id, {"unary": graph.unary},
                                      self.dataset.image_path(graph.image_id))

    # -- graphs -------------------------------------------------------------
    def graphs(self, split: str | None = None, ids: Iterable[str] | None = None,
               with_features: bool = True, class_name: str | None = None
               ) -> list[SuperpixelGraph]:
        """Superpixel graphs of a split (or of the given ids), in list order.

        With a top-down block (``config.detector``) the features depend on the
        class: give ``class_name``.
        """
        if ids is None:
            if split is None:
                raise ValueError("give a split or a list of ids")
            ids = self.dataset.ids(split)
        if with_features:
            return [runs[0] for runs in self.variant_graphs(
                ids, [self.config.superpixels], class_name, f"features {split or ''}".strip())]
        args = [(self.dataset, i, self.config, None, None, self.cache.directory,
                 self.cache.enabled, False) for i in ids]
        return _map_images(graph_task, args, self.n_jobs, self.progress,
                           f"superpixels {split or ''}".strip())

    def variant_graphs(self, ids: Iterable[str], superpixels: Sequence,
                       class_name: str | None = None, desc: str = "features"
                       ) -> list[list[SuperpixelGraph]]:
        """Per image of ``ids``, its graphs with features under each of several
        superpixel settings (an ensemble's members), the rest of the settings
        this extractor's: the graphs and cache entries of one extractor per
        setting, bit for bit, but each image's dense words, Lab values and
        detector masks made once for all the settings.

        Parameters
        ----------
        ids : image ids.
        superpixels : sequence of SuperpixelParams, one per run.
        class_name : with the top-down block, the class (its detectors').
        desc : the progress bar's label.

        Returns
        -------
        list (per image, in ``ids`` order) of lists (per setting, in order)
        of SuperpixelGraph.
        """
        if self.config.detector is not None and class_name is None:
            raise ValueError("the top-down features are per class: give class_name")
        ids = list(ids)
        configs = [replace(self.config, superpixels=sp) for sp in superpixels]
        codebook, codebook_id = self.codebook() if self.config.sift else (None, None)
        args = [(self.dataset, i, configs, codebook, codebook_id, self.cache.directory,
                 self.cache.enabled) for i in ids]
        per_image = _map_images(graph_variants_task, args, self.n_jobs, self.progress, desc)
        if self.config.detector is not None:
            assert class_name is not None
            self._add_top_down(per_image, class_name)
        return per_image

    def prefetch(self, splits, class_names) -> None:
        """Compute and cache the graphs and bottom-up features of every image
        of ``splits`` and, with the top-down block, each of those images'
        blocks of every class in ``class_names``, so that :meth:`examples`
        reads them from the cache afterwards.

        Two maps over the images instead of two per split and class, and one
        task per image for all its classes' blocks, which share the image's
        HOG maps. Without the cache it does nothing: what it made would be
        lost. The images' masks are not read here (:meth:`examples` checks
        them).
        """
        if not self.cache.enabled:
            return
        ids = list(dict.fromkeys(i for split in splits for i in self.dataset.ids(split)))
        codebook, codebook_id = self.codebook() if self.config.sift else (None, None)
        args = [(self.dataset, i, self.config, codebook, codebook_id, self.cache.directory,
                 self.cache.enabled, True) for i in ids]
        graphs = _map_images(graph_task, args, self.n_jobs, self.progress, "features")
        class_names = [voc_class_name(c) for c in class_names]
        if self.config.detector is None or not class_names:
            return
        chosen = [self._graph_detectors(graphs, c) for c in class_names]
        block_args = [(self.dataset, g.image_id, g.working_segments,
                       [per_class[j] for per_class in chosen], self.cache.directory,
                       self.cache.enabled, self.config.upsampling, not self._from_model)
                      for j, g in enumerate(graphs)]
        _map_images(top_down_blocks_task, block_args, self.n_jobs, self.progress, "top-down")

    def examples(self, split: str, class_name: str, with_features: bool = True,
                 ids: Iterable[str] | None = None) -> list[Example]:
        """Graphs of a split (or of some of its ids) with per-superpixel pixel
        counts for one class.

        Every mask is read and checked, and every image's header, before any
        superpixel or feature is computed, so a missing file, a bad label
        value, a grey image or a size mismatch stops the run at once, with
        the message ``VOCDataset.load`` (and so ``segstruct inspect``) gives.
        A truncated image is found when it is decoded.

        Raises
        ------
        DatasetError
            For the first bad file, in split order.
        """
        class_name = voc_class_name(class_name)     # its detectors' cache keys use it
        ids = self.dataset.ids(split) if ids is None else list(ids)
        masks = packed_masks(self.dataset, ids, class_name)
        return paired_examples(self.dataset, self.graphs(split, ids, with_features, class_name),
                               masks)
