"""The per-image work of feature extraction, run in worker processes: an
image's superpixel graph and features, its top-down block, a sample of its
descriptors for the codebook; every result from the cache when possible
(``segstruct.features.extraction`` maps these over a data set)."""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from segstruct.io.process_memo import sharing as sharing_memo
from segstruct.io.threads import thread_limits
from segstruct.datasets.voc import VOCDataset
from segstruct.features import descriptors as F
from segstruct.features.cache import ArrayCache, image_digest
from segstruct.features.detection import top_down_key, train_shape_detector
from segstruct.features.scale import resize_image, resize_labels, working_key, working_shape
from segstruct.features.superpixels import (SuperpixelParams, adjacency, segment,
                                            superpixel_means)
from segstruct.features.topdown.features import filter_masks, pooled_masks
from segstruct.features.topdown.hog import shared_maps
from segstruct.features.topdown.training import TooFewObjects

# Bump when the meaning of a cached array changes, so old entries are ignored.
FEATURE_VERSION = 1


@dataclass
class SuperpixelGraph:
    """An image's superpixel graph and features (independent of the class).

    Attributes
    ----------
    image_id : str
    working_segments : (h, w) int32 superpixel map, values 0 .. N-1, at
        the working resolution (``FeatureConfig.long_side``) the features
        were computed at.
    edges : (E, 2) int64, adjacent pairs with i < j.
    boundary : (E,) float64 shared boundary length (pixels of the working
        resolution).
    unary : (N, D) float64 unary features phi_u, or None when not computed
        (with the top-down block: of the class it was computed for).
    pairwise : (E, 3) float64 pairwise features phi_p (>= 0), or None.
    image_shape : (H, W) of the image's own pixels when they are not the
        working resolution's, else None.
    """

    image_id: str
    working_segments: np.ndarray
    edges: np.ndarray
    boundary: np.ndarray
    unary: np.ndarray | None = None
    pairwise: np.ndarray | None = None
    image_shape: tuple[int, int] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """(H, W) of the image's own pixels."""
        if self.image_shape is None:
            return (int(self.working_segments.shape[0]), int(self.working_segments.shape[1]))
        return (int(self.image_shape[0]), int(self.image_shape[1]))

    @property
    def segments(self) -> np.ndarray:
        """(H, W) int32 superpixel map on the image's own pixels (where masks
        are painted and pixels counted): the working map resized to them by
        nearest pixel, made on each call and not kept: it takes 4 bytes a
        pixel, so a phone photo's is many times the working map's, and a chunk
        of ``predict`` holds a graph per image and model. An image smaller than
        the working size can lose superpixels narrower than one of its
        pixels here: they keep their node and features, and cover no pixel.
        """
        if self.image_shape is None:
            return self.working_segments
        return resize_labels(self.working_segments, self.image_shape)

    @property
    def n_nodes(self) -> int:
        return int(self.working_segments.max()) + 1

    def paint(self, values) -> np.ndarray:
        """Per-superpixel values on the image's own pixels.

        Parameters
        ----------
        values : (N,) array, one value per superpixel.

        Returns
        -------
        (H, W) array of values' dtype, each pixel its superpixel's value:
        exactly ``values[self.segments]``, painted at the working resolution
        and then resized, so that the full-size map is never made.
        """
        values = np.asarray(values)
        if values.shape != (self.n_nodes,):
            raise ValueError(f"values of shape {values.shape} for the {self.n_nodes} "
                             f"superpixels of image {self.image_id}: give one per superpixel")
        work = values[self.working_segments]
        return work if self.image_shape is None else resize_labels(work, self.image_shape)


def _superpixel_key(digest: str, params: SuperpixelParams, work=None,
                    upsampling: str = "linear") -> dict:
    return {"image": digest, "superpixels": params.to_dict(), "version": FEATURE_VERSION,
            **working_key(work, upsampling)}


def _superpixels_of(image, digest, params, cache, work=None, upsampling="linear"):
    def compute():
        segments = segment(image(), params)
        edges, boundary = adjacency(segments)
        # "labels": the array's name in caches written before the renaming
        return {"labels": segments, "edges": edges, "boundary": boundary}
    return cache.get_or_compute("superpixels", _superpixel_key(digest, params, work, upsampling),
                                compute)


def read_working_image(dataset, image_id, long_side, upsampling: str = "linear") -> np.ndarray:
    """The image at the working resolution (``FeatureConfig.long_side`` and
    ``upsampling``)."""
    image = dataset.read_image(image_id)
    return resize_image(image, working_shape(image.shape, long_side), upsampling)


def resized_shape(shape, long_side) -> tuple[int, int] | None:
    """The working (height, width) of an image of ``shape`` (H, W) worked on
    at another size than its own, None for one worked on as it is: the part
    of a cache key that tells them apart, absent for the second so that
    their entries are those made before the working resolution."""
    if long_side == "auto":
        raise ValueError("long_side 'auto' must be resolved first (FeatureExtractor does)")
    work = working_shape(shape, long_side)
    return None if work == tuple(shape[:2]) else work


def graph_task(dataset, image_id, config, codebook, codebook_id, cache_dir,
                cache_enabled, with_features, loaded: dict | None = None):
    """Superpixels (and features) of one image, from the cache when possible.

    ``dataset`` is anything with ``image_path(id)``, ``image_size(id)`` and
    ``read_image(id)`` (a VOCDataset, or the image files of ``segstruct
    predict``). Superpixels and features are computed at the working
    resolution (``config.long_side``); the graph's ``segments`` are on the
    image's own pixels. ``loaded``: a dict that keeps the image's digest and
    size, the working image, its Lab values and its dense words for other
    superpixel settings of the same image and working resolution
    (:func:`graph_variants_task`).
    """
    with thread_limits(1):
        import cv2
        cv2.setNumThreads(1)
        cache = ArrayCache(cache_dir, cache_enabled)
        loaded = {} if loaded is None else loaded
        if "digest" not in loaded:      # once per image, not once per variant
            loaded["digest"] = image_digest(dataset.image_path(image_id))
            # the header is read only when a working size is set (no I/O added otherwise)
            loaded["shape"] = (None if config.long_side is None
                               else tuple(dataset.image_size(image_id)))
        digest, shape = loaded["digest"], loaded["shape"]
        work = None if shape is None else resized_shape(shape, config.long_side)

        def image():
            if "image" not in loaded:
                loaded["image"] = read_working_image(dataset, image_id, config.long_side,
                                                     config.upsampling)
            return loaded["image"]

        sp = _superpixels_of(image, digest, config.superpixels, cache, work, config.upsampling)
        graph = SuperpixelGraph(image_id, sp["labels"], sp["edges"], sp["boundary"],
                                image_shape=None if work is None else shape)
        if not with_features:
            return graph
        key = {"image": digest, "config": config.bottom_up_dict(), "codebook": codebook_id,
               "version": FEATURE_VERSION, **working_key(work, config.upsampling)}

        def compute():
            if "lab" not in loaded:
                loaded["lab"] = F.rgb_to_lab(image())
            if config.sift and "words" not in loaded:
                loaded["words"] = F.dense_words(image(), config, codebook)
            lab = loaded["lab"]
            n = graph.n_nodes
            # cached with L1 words; the normalisation asked for comes after
            segments = graph.working_segments
            unary = F.unary_features(image(), segments, replace(config, sift_norm="l1"),
                                     codebook, lab=lab, words=loaded.get("words"))
            lab_mean = superpixel_means(lab, segments, n)
            pairwise = F.pairwise_features(lab_mean, graph.edges,
                                           graph.boundary / config.boundary_unit,
                                           config.tau1, config.tau2)
            # before caching: a non-finite result must never be stored
            check_finite_features(image_id, {"unary": unary, "pairwise": pairwise},
                                  dataset.image_path(image_id))
            return {"unary": unary, "pairwise": pairwise}

        feats = cache.get_or_compute("features", key, compute)
        graph.unary = F.normalise_words(feats["unary"], config)
        graph.pairwise = feats["pairwise"]
        # Checked after the cache too: an entry written by other code is
        # refused here rather than turning into NaN weights in training.
        check_finite_features(image_id, {"unary": graph.unary, "pairwise": graph.pairwise},
                              dataset.image_path(image_id),
                              hint=f"; they came from the cache {cache.path('features', key)}: "
                                   "delete that file, or run with --no-cache")
        return graph


def graph_variants_task(dataset, image_id, configs, codebook, codebook_id, cache_dir,
                        cache_enabled) -> list:
    """:func:`graph_task`'s graphs with features of one image under several
    superpixel settings (``configs`` differ in nothing else): the image is
    read, and its dense words and Lab values made, once for all of them.
    The same graphs, bit for bit, and the same cache entries, as one
    ``graph_task`` per setting."""
    if any(replace(c, superpixels=configs[0].superpixels) != configs[0] for c in configs):
        raise ValueError("the variants of an image may differ only in their superpixels")
    loaded: dict = {}
    return [graph_task(dataset, image_id, c, codebook, codebook_id, cache_dir, cache_enabled,
                       True, loaded) for c in configs]


def top_down_task(dataset, image_id, segments, detectors, cache_dir, cache_enabled,
                  upsampling="linear", share_memo=False):
    """The top-down block of one image's superpixels: the mean of the blocks of
    ``detectors`` (ShapeDetectors), each from the cache when possible.
    ``segments`` is the superpixel map at the working resolution
    (``SuperpixelGraph.working_segments``): the detector sees the image at
    that size, enlarged to it by ``upsampling``. With ``share_memo`` the
    image's HOG maps are read from and kept in the process memo
    (:mod:`segstruct.io.process_memo`): the detectors' training and the
    other classes' blocks of the same image made them already."""
    return top_down_blocks_task(dataset, image_id, segments, [detectors], cache_dir,
                                cache_enabled, upsampling, share_memo)[0]


def top_down_blocks_task(dataset, image_id, segments, detector_sets, cache_dir,
                         cache_enabled, upsampling="linear", share_memo=False) -> list:
    """:func:`top_down_task` for several sets of detectors on one image (one
    set per class): the image is read, and its HOG maps made, once for all
    of them. Returns the mean block of each set, in order."""
    return _top_down_blocks(dataset, image_id, [segments], detector_sets, cache_dir,
                            cache_enabled, upsampling, share_memo)[0]


def top_down_variants_task(dataset, image_id, segment_maps, detectors, cache_dir,
                           cache_enabled, upsampling="linear", share_memo=False) -> list:
    """:func:`top_down_task` for several superpixelisations of one image (at
    one working size): each detector's masks are made once and pooled over
    each. Returns the mean block of ``detectors`` for each map, in order:
    the same, bit for bit, and the same cache entries, as one
    ``top_down_task`` per map."""
    return [blocks[0] for blocks in _top_down_blocks(
        dataset, image_id, segment_maps, [detectors], cache_dir, cache_enabled, upsampling,
        share_memo)]


def _top_down_blocks(dataset, image_id, segment_maps, detector_sets, cache_dir,
                     cache_enabled, upsampling, share_memo) -> list:
    """Per superpixel map of ``segment_maps`` (all of one shape, the working
    size), per set of ``detector_sets``, the set's mean block."""
    with thread_limits(1), (sharing_memo() if share_memo else nullcontext()):
        import cv2
        cv2.setNumThreads(1)
        cache = ArrayCache(cache_dir, cache_enabled)
        digest = image_digest(dataset.image_path(image_id))
        shape = segment_maps[0].shape
        if any(m.shape != shape for m in segment_maps):
            raise ValueError("the superpixel maps of one image must share the working size")
        loaded: dict = {}

        def image():
            if "image" not in loaded:
                loaded["image"] = resize_image(dataset.read_image(image_id), shape, upsampling)
                # the image's HOG maps, computed once for all the detectors (the K
                # cross-fitted ones of a val image, every class's) rather than
                # once for each
                loaded["hog"] = shared_maps(loaded["image"]) or {}
            return loaded["image"]

        counts = [int(m.max()) + 1 for m in segment_maps]
        # per map, per set, the blocks of the set's detectors
        blocks: list = [[[] for _ in detector_sets] for _ in segment_maps]
        for j, detectors in enumerate(detector_sets):
            for sd in detectors:
                made: list = []        # the detector's masks, made once for every map

                def compute(segments, sd=sd, made=made):
                    if not made:
                        made.append(filter_masks(
                            sd.detector.confidence_maps(image(), memo=loaded["hog"]),
                            sd.shapes))
                    block = pooled_masks(made[0], segments)
                    # before caching: a non-finite block must never be stored
                    check_finite_features(image_id, {"top_down": block},
                                          dataset.image_path(image_id))
                    return {"top_down": block}

                for v, (segments, n) in enumerate(zip(segment_maps, counts)):
                    key = top_down_key(digest, segments, sd.digest, upsampling)
                    block = cache.get_or_compute("top_down", key,
                                                 partial(compute, segments))["top_down"]
                    hint = f" came from the cache {cache.path('top_down', key)}: delete " \
                           "that file, or run with --no-cache"
                    if block.shape != (n, sd.params.n_filters):
                        raise ValueError(f"image {image_id!r}: a top-down block of shape "
                                         f"{block.shape} for {n} superpixels{hint}")
                    check_finite_features(image_id, {"top_down": block},
                                          dataset.image_path(image_id), hint=f"; they{hint}")
                    blocks[v][j].append(block)
        return [[b[0] if len(b) == 1 else np.mean(b, axis=0) for b in per_map]
                for per_map in blocks]


def detector_or_error(*args):
    """``train_shape_detector(*args)`` as (detector, None), or (None, the
    TooFewObjects): one class short of objects must not stop the others'.
    The training images' HOG maps are kept in the process memo
    (:mod:`segstruct.io.process_memo`) for the other detectors and the
    blocks that scan the same images."""
    try:
        with sharing_memo():
            return train_shape_detector(*args), None
    except TooFewObjects as err:
        return None, err


def check_finite_features(image_id: str, blocks: dict, image_path=None,
                          hint: str = "") -> None:
    """Raise ValueError naming the image if any feature is NaN or infinite.

    The features are finite by construction (empty superpixels and
    histograms are guarded), so this is a last line of defence that stops a
    run with the image's name instead of training on NaN.

    Parameters
    ----------
    image_id : str
    blocks : dict, name -> (N, D) float array (or None, skipped), e.g.
        ``{"unary": ..., "pairwise": ...}``.
    image_path : path named in the message, optional.
    hint : str appended to the message.
    """
    for name, values in blocks.items():
        if values is None:
            continue
        bad = ~np.isfinite(values)
        if bad.any():
            rows, cols = np.nonzero(bad)
            where = f" ({image_path})" if image_path is not None else ""
            raise ValueError(
                f"image {image_id!r}{where}: {int(bad.sum())} non-finite {name} "
                f"feature value(s), first at superpixel {rows[0]}, column {cols[0]}{hint}")


def codebook_share(config, n_images: int) -> int:
    """Descriptors each of the codebook's ``n_images`` images gives."""
    return -(-config.codebook_descriptors // n_images)


def codebook_of_sample(parts, config, on_iteration=None) -> np.ndarray:
    """The codebook (k-means words) of the images' descriptor samples ``parts``."""
    sample = np.concatenate(parts)[:config.codebook_descriptors]
    return F.learn_codebook(sample, config.n_words, config.seed, config.kmeans_iterations,
                            on_iteration=on_iteration)


def codebook_task(dataset_root, image_ids, config) -> np.ndarray:
    """The codebook learnt in one task, on one core: the same words as
    ``FeatureExtractor.codebook`` learns with a worker per image."""
    n_keep = codebook_share(config, len(image_ids))
    parts = [sample_descriptors_task(dataset_root, i, config, n_keep, config.seed + k)
             for k, i in enumerate(image_ids)]
    with thread_limits(1):
        return codebook_of_sample(parts, config)


def training_task(kind: str, *args):
    """A task of ``FeatureExtractor.train_detectors``: a detector
    (``detector_or_error``) or the codebook (``codebook_task``)."""
    if kind == "codebook":
        return codebook_task(*args)
    return detector_or_error(*args)


def sample_descriptors_task(dataset_root, image_id, config, n_keep, seed):
    with thread_limits(1):
        dataset = VOCDataset(dataset_root)
        _, desc = F.dense_opponent_sift(read_working_image(dataset, image_id, config.long_side,
                                                           config.upsampling),
                                        config.grid_step, config.keypoint_size)
        rng = np.random.default_rng(seed)
        take = rng.choice(desc.shape[0], min(n_keep, desc.shape[0]), replace=False)
        return desc[np.sort(take)]
