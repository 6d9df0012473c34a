"""Training a star-model detector from segmentation masks (latent SVM, cut down).

The schedule follows DPM (Felzenszwalb et al., PAMI 2010) in two stages:

1. **Roots.** Positives (one box per mask component, ``boxes.py``, and
   their mirror images) are split into components at the median aspect
   ratio; each component's root filter has that component's typical aspect.
   Random windows from training images that overlap no object start the
   negatives; then ``mining_rounds`` rounds each relabel the positives (the
   root placement overlapping the box by at least ``positive_iou`` that
   scores best: DPM's latent root placement) and add the hardest windows of
   fresh training images (hard-negative mining, cache capped).
2. **Parts.** Each component's root, doubled in resolution, gives the
   initial parts at its highest-energy subwindows (as DPM initialises them);
   the star model is then trained like the roots, now with latent part
   placements as well.

Each component is trained against its own negatives (one SVM each), rather
than DPM's single SVM over all components; the components' scores are
therefore not calibrated against each other, which only matters for
non-maximum suppression across components.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from segstruct.features.topdown.boxes import box_iou, boxes_from_mask, non_maximum_suppression
from segstruct.features.topdown.detector import (DEFORMATION_DIM, Component, Detector,
                                                 DetectorParams, LevelScores)
from segstruct.features.topdown.hog import HOG_DIM, feature_pyramid, pad_map
from segstruct.features.topdown.svm import train_linear_svm
# the weight-vector layout has its own module; its names stay importable from here
from segstruct.features.topdown.filters import (init_parts, lower_bounds, pack,
                                                placement_features, root_size, unpack)


# --------------------------------------------------------------------------
# Examples


@dataclass
class TrainingObject:
    """A positive: image index, box (x0, y0, x1, y1), mirrored or not."""

    image: int
    box: np.ndarray
    flip: bool


def _flip_box(box, width):
    return np.array([width - box[2], box[1], width - box[0], box[3]], box.dtype)


def positive_features(detector: Detector, k: int, obj: TrainingObject, image,
                      latent: bool, pyramids: dict | None = None):
    """Features of the best placement of component k on one positive.

    Only the few pyramid scales at which the root fits the box are
    computed, on a crop around the box: that makes relabelling positives
    cheap. Without ``latent`` (a fresh root) the placement of highest IoU
    is taken; with it, the best-scoring one among those overlapping the box
    by ``positive_iou`` or more (falling back to highest IoU).

    ``image`` is the image, or a callable that reads it (not called when
    ``pyramids``, a dict kept by the caller while the detector's shapes do
    not change, holds this object's crop pyramids already).

    Returns
    -------
    (D,) float32 array, or None when the object is too small for the
    finest root scale or no placement overlaps it by 0.5.
    """
    p = detector.params
    comp = detector.components[k]
    h, w = comp.root.shape[:2]
    box = obj.box.astype(np.float64)
    bh, bw = box[3] - box[1], box[2] - box[0]
    target = np.sqrt((h * p.cell / bh) * (w * p.cell / bw))
    series = p.root_scale * 2.0 ** (-np.arange(0, 12 * p.interval) / p.interval)
    scales = series[(series <= target * 1.45) & (series >= target / 1.45)]
    if scales.size == 0:
        return None
    # The crop must hold every root window that could overlap the box by
    # 0.5, even a root larger than the object: at the coarsest candidate
    # scale a root is h * cell / scale pixels tall.
    margin = max(bh, bw, h * p.cell / scales[-1], w * p.cell / scales[-1])
    key = (k, obj.image, tuple(obj.box.tolist()), obj.flip)
    if pyramids is not None and key in pyramids:
        roots, parts, (x0, y0, x1, y1, H, W) = pyramids[key]
    else:
        img = image() if callable(image) else image
        img = img[:, ::-1] if obj.flip else img
        H, W = img.shape[:2]
        x0, y0 = int(max(0, box[0] - margin)), int(max(0, box[1] - margin))
        x1, y1 = int(min(W, box[2] + margin)), int(min(H, box[3] + margin))
        crop = np.ascontiguousarray(img[y0:y1, x0:x1])
        roots = feature_pyramid(crop, p.cell, p.interval, pad=detector.pad, scales=scales)
        parts = (feature_pyramid(crop, p.cell, p.interval, pad=detector.pad,
                                 scales=2 * scales) if comp.n_parts else None)
        if pyramids is not None:
            pyramids[key] = (roots, parts, (x0, y0, x1, y1, H, W))
    local = box - [x0, y0, x0, y0]
    # A crop edge inside the image is not the image border: a window that
    # crosses it would see padding (the truncation feature) where the image
    # goes on, and teach the filter that objects come with borders.
    lo = np.array([-np.inf if x0 == 0 else 0, -np.inf if y0 == 0 else 0])
    hi = np.array([np.inf if x1 == W else x1 - x0, np.inf if y1 == H else y1 - y0])
    # (rank key 1, rank key 2, features)
    best: tuple[float, float, np.ndarray | None] = (-np.inf, -np.inf, None)
    for lv in range(len(scales)):
        feats = roots.levels[lv]
        part_map = pad_map(parts.levels[lv], *detector.pad) if parts is not None else None
        ls = detector.score_maps(feats, part_map)[k]
        if ls.score.size == 0:
            continue
        rr, qq = np.meshgrid(np.arange(ls.score.shape[0]), np.arange(ls.score.shape[1]),
                             indexing="ij")
        windows = detector.root_boxes(roots, lv, k, rr.ravel(), qq.ravel())
        iou = box_iou(windows, local[None])[:, 0]
        inside = np.all((windows[:, :2] >= lo - 1e-6) & (windows[:, 2:] <= hi + 1e-6), axis=1)
        iou = np.where(inside, iou, 0.0)
        score = ls.score.ravel()
        if latent:
            ok = (iou >= p.positive_iou) & np.isfinite(score)
            key1 = np.where(ok, 1.0, 0.0)
            key2 = np.where(ok, score, iou)
        else:
            key1, key2 = np.zeros_like(iou), iou
        order = np.lexsort((-np.arange(iou.size), key2, key1))  # last key is primary
        j = order[-1]
        if iou[j] < 0.5 or not np.isfinite(score[j]):
            continue
        if (key1[j], key2[j]) > best[:2]:
            r, q = divmod(int(j), ls.score.shape[1])
            best = (key1[j], key2[j],
                    placement_features(comp, p, feats, part_map, ls, r, q))
    return best[2]


def negative_features(detector: Detector, image, objects: np.ndarray,
                      rng: np.random.Generator, random: bool, pyramid=None) -> list:
    """Negatives of one image for every component.

    Parameters
    ----------
    image : the image, or a callable that reads it (not called with ``pyramid``).
    objects : (K, 4) boxes of every object of the class (kept and ignored).
    random : bool, only random windows (the first round); otherwise the
        highest-scoring ones above ``-hard_margin`` (up to
        ``negatives_per_image``) and a quarter as many random ones.
    pyramid : ``detector.pyramid(image)``, when the caller has it.

    Returns
    -------
    list over components of (M, D) float32 arrays.
    """
    p = detector.params
    if pyramid is None:
        pyramid = detector.pyramid(image() if callable(image) else image)
    # (key, level, r, q, boxes)
    cands: list[list[tuple[np.ndarray, ...]]] = [[] for _ in detector.components]
    levels = detector.root_levels(pyramid)
    maps = {}
    with_parts = p.n_parts and detector.components[0].n_parts
    for lv in levels:
        part_map = detector.part_level(pyramid, lv) if with_parts else None
        if random and not with_parts:
            # Random windows of roots alone need the score maps' shapes only
            # (the features are the windows' cells): the first round's scan
            # of every level with untrained roots is skipped.
            scores = [_unscored(pyramid.levels[lv], comp) for comp in detector.components]
        else:
            scores = detector.score_maps(pyramid.levels[lv], part_map)
        maps[lv] = (part_map, scores)
        for k, ls in enumerate(scores):
            if ls.score.size == 0:
                continue
            # Random windows always come along (ranked below every hard one):
            # the hard ones alone cover too little of what a new stage can
            # fire on (a fresh part model scored the sky highest on camvid).
            n = min(ls.score.size, 4 * p.negatives_per_image)
            flat = rng.choice(ls.score.size, n, replace=False)
            key = rng.random(n) - 2.0 - p.hard_margin
            if not random:
                hard = np.flatnonzero(ls.score.ravel() > -p.hard_margin)
                flat = np.concatenate([hard, flat])
                key = np.concatenate([ls.score.ravel()[hard], key])
            r, q = np.divmod(flat, ls.score.shape[1])
            cands[k].append((key, np.full(flat.size, lv), r, q,
                             detector.root_boxes(pyramid, lv, k, r, q)))
    out = []
    for k, comp in enumerate(detector.components):
        if not cands[k]:
            out.append(np.zeros((0, pack(comp, p).size), np.float32))
            continue
        key = np.concatenate([c[0] for c in cands[k]])
        lv = np.concatenate([c[1] for c in cands[k]])
        r = np.concatenate([c[2] for c in cands[k]])
        q = np.concatenate([c[3] for c in cands[k]])
        boxes = np.concatenate([c[4] for c in cands[k]])
        if objects.size and key.size:
            far = box_iou(boxes, objects).max(axis=1) <= p.negative_iou
            key, lv, r, q, boxes = key[far], lv[far], r[far], q[far], boxes[far]
        order = np.argsort(-key, kind="stable")
        is_hard = key[order] > -p.hard_margin
        hard = order[is_hard][:50 * p.negatives_per_image]
        rand = order[~is_hard][:10 * p.negatives_per_image]
        # NMS spreads the kept windows over the image instead of one blob;
        # it stops at the windows kept (on camvid, with a few kept of several
        # thousand candidates, a pass per kept box took a large share of
        # training)
        hard = hard[non_maximum_suppression(boxes[hard], key[hard], 0.5,
                                            limit=p.negatives_per_image)]
        if hard.size and rand.size:     # no random window on a kept hard one
            rand = rand[box_iou(boxes[rand], boxes[hard]).max(axis=1) <= 0.5]
        rand = rand[non_maximum_suppression(
            boxes[rand], key[rand], 0.5,
            limit=max(1, p.negatives_per_image // 4) if hard.size else p.negatives_per_image)]
        keep = np.concatenate([hard, rand])
        rows = []
        for j in keep:
            part_map, scores = maps[int(lv[j])]
            rows.append(placement_features(comp, p, pyramid.levels[int(lv[j])], part_map,
                                           scores[k], int(r[j]), int(q[j])))
        out.append(np.asarray(rows, np.float32).reshape(len(rows), pack(comp, p).size))
    return out


def _unscored(feats: np.ndarray, comp: Component) -> LevelScores:
    """The ``LevelScores`` shape of a root without parts on a level, its
    scores NaN (only their shape is read)."""
    h, w = comp.root.shape[:2]
    shape = (max(feats.shape[0] - h + 1, 0), max(feats.shape[1] - w + 1, 0))
    empty = np.zeros((0,) + shape, np.int64)
    return LevelScores(np.full(shape, np.nan, np.float32), empty, empty)


# --------------------------------------------------------------------------
# The schedule


class TooFewObjects(ValueError):
    """The training masks hold too few objects of the class (or all of one
    shape) to give every component a positive."""


def collect_objects(masks: Sequence[np.ndarray], class_index: int, params: DetectorParams):
    """Positive boxes and every object box (positives and ignored) per image.

    Returns
    -------
    positives : list of TrainingObject (with mirror images if ``flip``)
    objects : list of (K_i, 4) int64 boxes per image (for negative mining)
    widths : list of image widths
    """
    positives, objects, widths = [], [], []
    for i, mask in enumerate(masks):
        mask = np.asarray(mask)
        kept, ignored = boxes_from_mask(mask, class_index, params.min_box_area,
                                        params.max_void_fraction, return_ignored=True)
        objects.append(np.concatenate([kept, ignored]))
        widths.append(mask.shape[1])
        for box in kept:
            positives.append(TrainingObject(i, box, False))
            if params.flip:
                positives.append(TrainingObject(i, _flip_box(box, mask.shape[1]), True))
    return positives, objects, widths


def _split_components(positives, n_components):
    """Component of each positive: quantiles of the aspect ratio h / w."""
    aspect = np.array([(o.box[3] - o.box[1]) / max(o.box[2] - o.box[0], 1) for o in positives])
    edges = np.quantile(aspect, np.linspace(0, 1, n_components + 1)[1:-1])
    return np.searchsorted(edges, aspect, side="right")


def train_detector(images: Sequence[np.ndarray], masks: Sequence[np.ndarray],
                   class_index: int, params: DetectorParams | None = None,
                   on_stage: Callable[[str, Detector, float], None] | None = None,
                   pyramids: dict | None = None) -> Detector:
    """Train a detector for one class from training images and their masks.

    Parameters
    ----------
    images : sequence of (H, W, 3) uint8 RGB images (indexed, possibly many
        times; a lazy sequence that reads from disk is fine).
    masks : sequence of (H, W) uint8 VOC masks (255 = void), same order.
    class_index : int, the VOC class index.
    params : DetectorParams, optional.
    on_stage : callable(stage, detector, seconds), optional
        Called after the root stage (``"roots"``, a root-only detector at the
        same scales) and at the end (``"parts"``), with the elapsed time.
    pyramids : dict, optional
        Filled with the HOG pyramids of the images the last mining round
        scanned (all of them when there are at most ``mining_images``), by
        index into ``images``: those of the returned detector, which
        ``average_shapes`` can take instead of computing them again.

    Returns
    -------
    Detector

    Raises
    ------
    TooFewObjects (a ValueError)
        When some component gets no positive box (too few objects of the
        class, or all of one aspect ratio).
    """
    params = params or DetectorParams()
    start = time.perf_counter()
    rng = np.random.default_rng(params.seed)
    positives, objects, _ = collect_objects(masks, class_index, params)
    groups = _component_groups(positives, class_index, params, rng)

    # Stage 1: roots only, at the scales the final roots use.
    root_params = replace(params, n_parts=0, max_scale=params.root_scale)
    comps = []
    for group in groups:
        rows, cols = root_size(np.array([o.box for o in group]), params)
        comps.append(Component(np.zeros((rows, cols, HOG_DIM), np.float32),
                               np.zeros((0, 1, 1, HOG_DIM), np.float32),
                               np.zeros((0, 2), np.int64), np.zeros((0, DEFORMATION_DIM)), 0.0))
    detector = Detector(root_params, comps)
    negatives = [None] * len(comps)
    n_images = len(images)

    def mining_sample():
        return np.sort(rng.choice(n_images, min(params.mining_images, n_images), replace=False))

    def run_stage(detector, fresh):
        # The pyramids of a stage do not change from round to round (the
        # filters' shapes and the scales are fixed): the positives' crops are
        # kept, and so are the images a round samples again (on small splits,
        # all of them), which saves recomputing them in every mining round.
        crops, last = {}, {}
        for round_ in range(params.mining_rounds + 1):
            first = round_ == 0
            pos = _positive_matrix(detector, groups, images, latent=not (first and fresh),
                                   pyramids=crops)
            new = [[] for _ in comps]
            sample = mining_sample()
            last = {i: last[i] for i in sample if i in last}
            for i in sample:
                if i not in last:
                    last[i] = detector.pyramid(images[i])
                for k, rows in enumerate(negative_features(detector, None, objects[i], rng,
                                                           random=first and fresh,
                                                           pyramid=last[i])):
                    new[k].append(rows)
            comps_now = []
            for k, comp in enumerate(detector.components):
                fresh_neg = (np.concatenate(new[k]) if new[k] else
                             np.zeros((0, pos[k].shape[1]), np.float32))
                if negatives[k] is not None and not first:
                    old = negatives[k]
                    # keep the old negatives the current model still gets wrong
                    w = pack(comp, detector.params).astype(np.float32)
                    hard = old @ w > -params.hard_margin
                    fresh_neg = np.concatenate([old[hard], fresh_neg])
                fresh_neg = fresh_neg[:params.negative_cache]
                negatives[k] = fresh_neg
                X = np.concatenate([pos[k], fresh_neg])
                y = np.concatenate([np.ones(len(pos[k])), -np.ones(len(fresh_neg))])
                w = train_linear_svm(X, y, params.C, lower_bounds(comp, params),
                                     w0=pack(comp, params))
                comps_now.append(unpack(w, comp, params))
            detector = Detector(detector.params, comps_now)
        if pyramids is not None:
            # the filters' shapes, and so the pads and scales, stay within a stage
            pyramids.clear()
            pyramids.update(last)
        return detector

    detector = run_stage(detector, fresh=True)
    if on_stage is not None:
        on_stage("roots", detector, time.perf_counter() - start)
    if params.n_parts == 0:
        return detector

    # Stage 2: parts from the trained roots, then latent star-model training.
    comps = []
    for comp in detector.components:
        parts, anchors, deformation = init_parts(comp.root, params)
        comps.append(Component(comp.root.copy(), parts, anchors, deformation, comp.bias))
    detector = Detector(params, comps)
    negatives[:] = [None] * len(comps)   # old rows lack the part features
    detector = run_stage(detector, fresh=False)
    if on_stage is not None:
        on_stage("parts", detector, time.perf_counter() - start)
    return detector


def _component_groups(positives: list, class_index: int, params: DetectorParams,
                      rng: np.random.Generator) -> list[list]:
    """The positives of each component (by aspect ratio), at most
    ``params.max_positives`` each (a seeded sample); TooFewObjects when a
    component would have none."""
    assign = (_split_components(positives, params.n_components) if positives
              else np.zeros(0, np.int64))
    per_component = np.bincount(assign, minlength=params.n_components)
    if len(positives) < params.n_components or (per_component == 0).any():
        # mirrored positives share their original's aspect ratio, so a single
        # object (or objects of one shape) leaves a component empty
        raise TooFewObjects(
            f"too few objects of class {class_index} to train a detector: "
            f"{len(positives)} positive boxes (mirrors included) of at least "
            f"{params.min_box_area} pixels, {per_component.tolist()} per component; "
            f"each of the {params.n_components} components needs one")
    groups = []
    for k in range(params.n_components):
        idx = np.flatnonzero(assign == k)
        if idx.size > params.max_positives:
            idx = np.sort(rng.choice(idx, params.max_positives, replace=False))
        groups.append([positives[j] for j in idx])
    return groups


def _positive_matrix(detector, groups, images, latent, pyramids=None):
    """(n_k, D) float32 positive features of each component (``pyramids``:
    the crops' pyramids, kept by the caller while the filters' shapes stay)."""
    out = []
    for k, group in enumerate(groups):
        rows = []
        for obj in group:
            f = positive_features(detector, k, obj, lambda i=obj.image: images[i], latent,
                                  pyramids)
            if f is not None:
                rows.append(f)
        d = pack(detector.components[k], detector.params).size
        out.append(np.asarray(rows, np.float32).reshape(len(rows), d))
    return out
