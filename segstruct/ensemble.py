"""Labels averaged over several superpixelisations (``predict --ensemble K``).

A model labels whole superpixels, so a pixel near a superpixel boundary gets
the label of whichever superpixel the cut happens to put it in, and a photo
at another size or with a little noise is cut a little differently. An
ensemble labels each image K times, with SLIC's number of segments times
each of the first K :data:`FACTORS` (the model's codebook, detectors and
weights unchanged), paints each member's max-marginal differences
(``decision_function``) on the pixels, and decides on their mean: the
class whose model's mean is largest, where it is > 0 (with one model:
foreground where its mean is > 0). K = 1 is the model's own prediction.
The members share the working resolution, so the scores are summed and
decided there and the labels then resized to the image's pixels: the
same labels as summing on the image's pixels, without a float per pixel
of a 12-MP photo and model held per image of a chunk.

The factors and their order were chosen on the first 30 horse val images
with a bl1 model, and judged on the other three shared data sets
(docs/history/studies-2026-12.md, "Masks averaged over several superpixelisations"): held
out, the ensemble of 5 raised val IoU in 10 of 15 pairs of class and
method and lowered none beyond its noise, and it makes a photo's mask
steadier under enlargement. So it is how a SLIC model labels images
unless told otherwise (:func:`default_members`); ``K = 1`` is the graph cut
that training and cross-validation score. An ensemble of K costs K
superpixelisations, poolings and max-marginal computations per image; the dense
words and the detectors' masks, which do not depend on the superpixels,
are made once.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from segstruct.features.config import FeatureConfig
from segstruct.features.scale import resize_labels
from segstruct.features.superpixels import paint

__all__ = ["DEFAULT_MEMBERS", "FACTORS", "add_painted_scores", "averaged_labels", "combine_scores",
           "default_members", "ensemble_record", "graphs_per_image", "member_labels",
           "superpixel_variants"]

#: SLIC segment counts of an ensemble's members, as multiples of the model's, in
#: the order an ensemble of K takes the first K.
FACTORS = (1.0, 0.8, 1.25, 0.9, 1.125)
#: An ensemble's members when none is asked for, for a SLIC model: all of FACTORS.
DEFAULT_MEMBERS = len(FACTORS)


def default_members(config: FeatureConfig) -> int:
    """How many members label an image when the caller leaves it open.

    Parameters
    ----------
    config : FeatureConfig, a model's.

    Returns
    -------
    int: :data:`DEFAULT_MEMBERS` for SLIC superpixels; 1 (the model's graph
    cut) for Felzenszwalb's, whose segment sizes have no one count to vary.
    """
    return DEFAULT_MEMBERS if config.superpixels.method == "slic" else 1


def superpixel_variants(config: FeatureConfig, size: int | None = None,
                        factors: Sequence[float] = FACTORS) -> list[FeatureConfig]:
    """The feature settings of an ensemble's ``size`` members.

    Parameters
    ----------
    config : FeatureConfig, a model's; its superpixels must be SLIC's
        unless ``size`` is 1.
    size : int, 1 to ``len(factors)``, or None: :func:`default_members`.
    factors : positive floats, the segment counts as multiples of the
        model's (default :data:`FACTORS`; others are for experiments).

    Returns
    -------
    list of ``size`` FeatureConfig: ``config`` with SLIC's ``n_segments``
    times each of the first ``size`` factors (rounded, at least 2); a
    factor of 1 gives ``config`` itself.

    Raises
    ------
    ValueError
        A size out of range, or Felzenszwalb superpixels (whose count has no
        one setting to vary).
    """
    if size is None:
        size = default_members(config)
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or \
            not 1 <= size <= len(factors):
        raise ValueError(f"an ensemble has 1 to {len(factors)} members, got {size!r}")
    if any(not f > 0 for f in factors):
        raise ValueError(f"the factors must be > 0, got {list(factors)}")
    sp = config.superpixels
    if sp.method != "slic" and any(f != 1.0 for f in factors[:size]):
        raise ValueError(f"an ensemble varies SLIC's number of segments, and this model's "
                         f"superpixels are {sp.method}'s: label without an ensemble, or "
                         "train with --superpixels slic")
    return [config if f == 1.0 else
            replace(config, superpixels=replace(sp, n_segments=max(2, round(sp.n_segments * f))))
            for f in factors[:size]]


def ensemble_record(superpixels: Sequence | None) -> dict:
    """How the labels were made, for evaluate's records and predict's index:
    ``{"members": K, "slic_segments": [SLIC's segment count of each member]}``,
    the counts None for one member (the model's own superpixels).

    ``superpixels``: the SuperpixelParams of each member, or None (one).
    """
    members = list(superpixels or [])
    return {"members": max(1, len(members)),
            "slic_segments": [sp.n_segments for sp in members] if len(members) > 1 else None}


def graphs_per_image(models: Sequence, extractor, ids: Sequence[str]) -> list[list]:
    """Per image of ``ids``, its graph under each model's features, in model
    order: one extraction shared by all models without the top-down block,
    one per class with it (its block is the class's detector's)."""
    if models[0].config.detector is not None:
        per_model = [extractor.graphs(ids=list(ids), class_name=m.class_name) for m in models]
    else:
        per_model = [extractor.graphs(ids=list(ids))] * len(models)
    return [[g[k] for g in per_model] for k in range(len(ids))]


def averaged_labels(models: Sequence, extractors: Sequence, ids: Sequence[str]) -> list:
    """An ensemble's labels of some images.

    Parameters
    ----------
    models : M class models (``label``, ``config``, ``class_name``,
        ``estimator.decision_function``), on the same features.
    extractors : FeatureExtractors over the images, one per member
        (:func:`superpixel_variants`' settings), differing in nothing but
        their superpixels; the first one's data, cache and detectors make
        every member's features (``FeatureExtractor.variant_graphs``).
    ids : the images' ids.

    Returns
    -------
    list of (H, W) uint8: per image, the VOC class index per pixel of the
    image from the models' max-marginal differences summed over the members
    (the sum's sign and arg-max are the mean's; :func:`combine_scores`).
    """
    ids = list(ids)
    first = extractors[0]
    superpixels = [e.config.superpixels for e in extractors]
    if any(replace(e.config, superpixels=first.config.superpixels) != first.config
           for e in extractors):
        raise ValueError("the members of an ensemble may differ only in their superpixels")
    # each image's words and detector masks made once for all members: the first
    # extractor's data, cache and detectors serve every member
    if models[0].config.detector is not None:
        per_model = [first.variant_graphs(ids, superpixels, m.class_name) for m in models]
    else:
        per_model = [first.variant_graphs(ids, superpixels)] * len(models)
    return [member_labels(models, [[per_model[m][k][j] for m in range(len(models))]
                                   for j in range(len(extractors))])
            for k in range(len(ids))]


def member_labels(models: Sequence, members: Sequence[Sequence]) -> np.ndarray:
    """One image's labels from its graphs of an ensemble's members.

    Parameters
    ----------
    models : M class models (``label``, ``estimator.decision_function``).
    members : per member, the image's M graphs, one per model in model order
        (one superpixelisation; the top-down block differs per class).

    Returns
    -------
    (H, W) uint8: the VOC class index per pixel of the image, from the
    models' max-marginal differences summed over the members at the working
    resolution (:func:`add_painted_scores`, :func:`combine_scores`), then
    resized to the image's pixels.
    """
    total = add_painted_scores(None, models, members[0])
    for graphs in members[1:]:
        total = add_painted_scores(total, models, graphs)
    return resize_labels(combine_scores(total, [m.label for m in models]), members[0][0].shape)


def add_painted_scores(total: np.ndarray | None, models: Sequence, graphs: Sequence) -> np.ndarray:
    """Add one member's per-pixel scores of one image to a running sum.

    Parameters
    ----------
    total : (M, h, w) float32 array to add to (in place), or None to start one.
    models : M class models (anything with ``.estimator.decision_function``).
    graphs : M graphs of the image, one per model, in model order (the same
        superpixels; the top-down block differs per class).

    Returns
    -------
    (M, h, w) float32: ``total`` plus each model's max-marginal differences
    painted on the pixels of the working resolution (``working_segments``;
    :func:`segstruct.features.scale.resize_labels` takes a decision from
    there to the image's pixels).
    """
    for k, (model, graph) in enumerate(zip(models, graphs)):
        scores = paint(graph.working_segments, model.estimator.decision_function([graph])[0])
        if total is not None and total.shape[1:] != scores.shape:
            raise ValueError(f"the members of an ensemble must share the working resolution: "
                             f"{scores.shape} against {total.shape[1:]}")
        if total is None:
            total = np.zeros((len(models), *scores.shape), np.float32)
        total[k] += scores
    assert total is not None, "no model given"
    return total


def combine_scores(scores: np.ndarray, labels: Sequence[int]) -> np.ndarray:
    """Class index per element from the class models' scores.

    Parameters
    ----------
    scores : (M, ...) float array, one score per model and element
        (superpixel or pixel).
    labels : M VOC class indices, in model order.

    Returns
    -------
    (...) uint8: the label of the model of largest score where that score
    is > 0, else 0 (background). Ties go to the first model.
    """
    scores = np.asarray(scores)
    if scores.shape[0] != len(labels):
        raise ValueError(f"{scores.shape[0]} models' scores but {len(labels)} labels")
    best = np.argmax(scores, axis=0)
    return np.where(scores.max(axis=0) > 0, np.asarray(labels, np.uint8)[best],
                    0).astype(np.uint8)
