"""Summaries of a data set before training: counts, shares, oracle IoU, problems."""
from __future__ import annotations

import numpy as np

from segstruct.datasets.voc import VOC_CLASSES, VOID_LABEL, DatasetError, class_index

from .extraction import Example, FeatureExtractor
from .scoring import oracle_score
from .superpixels import pixel_counts


def readable_ids(dataset, split: str) -> tuple[list[str], list[str]]:
    """Split a split's ids into those that read cleanly and problem messages.

    Every image and mask is decoded, so a data set can be fixed before a
    long run rather than failing half-way through it.
    """
    good, problems = [], []
    for image_id in dataset.ids(split):
        try:
            dataset.load(image_id, "background")
        except DatasetError as err:
            problems.append(f"{split}/{image_id}: {err}")
        else:
            good.append(image_id)
    return good, problems


def classes_present(dataset, ids) -> list[str]:
    """Names of the object classes (not background) found in the masks."""
    found = set()
    for image_id in ids:
        found.update(np.unique(dataset.read_labels(image_id)).tolist())
    found.discard(0)
    found.discard(VOID_LABEL)
    return [VOC_CLASSES[k] for k in sorted(found)]


def _split_stats(examples: list[Example], void_pixels: int) -> dict:
    n_sp = np.array([ex.graph.n_nodes for ex in examples])
    fg = sum(int(ex.fg.sum()) for ex in examples)
    bg = sum(int(ex.bg.sum()) for ex in examples)
    targets = [ex.targets[~ex.void_only] for ex in examples]
    fg_sp = int(sum(t.sum() for t in targets))
    bg_sp = int(sum(t.size - t.sum() for t in targets))
    oracle = oracle_score(examples).to_dict()
    return {
        "images": len(examples),
        "images_with_class": int(sum(ex.fg.sum() > 0 for ex in examples)),
        "foreground_pixel_share": fg / max(fg + bg, 1),
        "void_pixel_share": void_pixels / max(fg + bg + void_pixels, 1),
        "superpixels_per_image": {"mean": float(n_sp.mean()) if n_sp.size else 0.0,
                                  "min": int(n_sp.min()) if n_sp.size else 0,
                                  "max": int(n_sp.max()) if n_sp.size else 0},
        "foreground_superpixels": fg_sp,
        "background_superpixels": bg_sp,
        "void_only_superpixels": int(sum(ex.void_only.sum() for ex in examples)),
        # kappa of adjusted Hamming (Eq. 28) if this split were the training set
        "kappa_fg_bg_superpixel_ratio": fg_sp / bg_sp if bg_sp else None,
        "oracle_voc_iou_percent": oracle["voc_iou_percent"],
    }


def inspect_dataset(extractor: FeatureExtractor, splits=None, class_names=None) -> dict:
    """Per split and class: counts, shares, superpixels and the oracle IoU.

    Parameters
    ----------
    extractor : FeatureExtractor (its data set, superpixel settings and cache).
    splits : list of split names (default: every split of the data set).
    class_names : list of class names (default: the classes found in the masks).

    Returns
    -------
    dict with keys ``splits`` ({split: {class: stats}}), ``classes`` and
    ``problems`` (one message per unreadable or inconsistent file).
    """
    dataset = extractor.dataset
    splits = list(splits) if splits else dataset.splits()
    problems, good_ids = [], {}
    for split in splits:
        try:
            good_ids[split], bad = readable_ids(dataset, split)
        except DatasetError as err:
            problems.append(str(err))
            continue
        problems.extend(bad)
    if class_names:
        for name in class_names:
            class_index(name)          # unknown names fail before any work
        classes = list(class_names)
    else:
        all_ids = sorted({i for ids in good_ids.values() for i in ids})
        classes = classes_present(dataset, all_ids)
    result = {"classes": classes, "splits": {}, "problems": problems}
    for split, ids in good_ids.items():
        graphs = extractor.graphs(split, ids, with_features=False)
        masks = [dataset.read_labels(g.image_id) for g in graphs]
        void_pixels = sum(int((m == VOID_LABEL).sum()) for m in masks)
        per_class = {}
        for name in classes:
            cls = class_index(name)
            examples = [Example(g, *pixel_counts(g.labels, m == cls, m == VOID_LABEL,
                                                 g.n_nodes))
                        for g, m in zip(graphs, masks)]
            per_class[name] = _split_stats(examples, void_pixels)
            if per_class[name]["images_with_class"] == 0:
                problems.append(f"split {split!r}: no image contains class {name!r}")
        result["splits"][split] = per_class
    return result
