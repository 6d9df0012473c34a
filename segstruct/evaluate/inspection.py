"""Summaries of a data set before training: counts, shares, oracle IoU, problems.

``inspect_dataset`` reads every image and mask of every split and lists each
problem with the message training and evaluation would stop with on it;
``inspection_report`` is that summary with the provenance of its data,
features and code (what ``segstruct inspect --json`` writes);
``training_set_problem`` says why a training split leaves a class nothing
to learn.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from segstruct.datasets.voc import (SPLIT_DIR, VOC_CLASSES, VOID_LABEL, DatasetError,
                                    class_index, void_message)

from segstruct.evaluate.scoring import oracle_score
from segstruct.features.extraction import Example, FeatureExtractor
from segstruct.features.superpixels import pixel_counts
from segstruct.io.provenance import data_provenance


def readable_ids(dataset, split: str, checked: dict | None = None
                 ) -> tuple[list[str], list[str]]:
    """Split a split's ids into those that read cleanly and problem messages.

    Every image and mask is decoded, so a data set can be fixed before a
    long run rather than failing half-way through it. Each message is
    ``"<split>/<id>: "`` followed by the message training or evaluation
    stops with on that file. A mask that is void everywhere is reported,
    but its id still counts as readable (training and scoring accept it).

    Parameters
    ----------
    checked : dict, optional
        id -> (readable, list of messages) of ids already read; filled in,
        so that overlapping splits (trainval = train + val) decode each
        file once.

    Raises
    ------
    DatasetError
        If the split file itself is missing, empty or malformed.
    """
    checked = {} if checked is None else checked
    good: list[str] = []
    problems: list[str] = []
    for image_id in dataset.ids(split):
        if image_id not in checked:
            checked[image_id] = _check_id(dataset, image_id)
        readable, messages = checked[image_id]
        if readable:
            good.append(image_id)
        problems.extend(f"{split}/{image_id}: {message}" for message in messages)
    return good, problems


def _check_id(dataset, image_id) -> tuple[bool, list[str]]:
    """(readable, problem messages) of one id: image and mask are read apart,
    so that a broken image does not hide a broken mask."""
    messages, image, labels = [], None, None
    try:
        image = dataset.read_image(image_id)
    except DatasetError as err:
        messages.append(str(err))
    try:
        labels = dataset.read_mask(image_id)
    except DatasetError as err:
        messages.append(str(err))
    if image is None or labels is None:
        return False, messages
    try:
        dataset.check_sizes(image_id, image.shape[:2], labels.shape)
    except DatasetError as err:
        return False, [str(err)]
    if (labels == VOID_LABEL).all():
        messages.append(void_message(dataset.mask_path(image_id)))
    return True, messages


#: The classes whose indices the binary-masks hint gives when none was asked for.
_EXAMPLE_CLASSES = ("car", "horse", "person")


def binary_masks_hint(class_names=()) -> str:
    """What a split whose masks hold no object class most likely holds, with
    the VOC class index of each class of ``class_names`` (the ones asked for;
    car, horse and person as examples when none is), e.g. "... must hold its
    VOC class index instead (cat = 8; ...)"."""
    indices = ", ".join(f"{name} = {class_index(name)}"
                        for name in (class_names or _EXAMPLE_CLASSES))
    return (f"masks that mark the object {VOID_LABEL} (binary masks) must hold its "
            f"VOC class index instead ({indices}; `segstruct inspect` lists the classes "
            "found)")


def training_set_problem(examples: list[Example], class_name: str, split: str,
                         classes_found: list[str] | None = None) -> str | None:
    """Why a training split gives a class nothing to learn, or None.

    Parameters
    ----------
    examples : the split's examples for ``class_name``.
    class_name, split : named in the message.
    classes_found : the object classes in the split's masks
        (:func:`classes_present`), named where the class has no pixel; an
        empty list says the masks look binary.

    Returns
    -------
    str or None
        A message saying which of these holds: the split has no image; every
        mask is void everywhere; no non-void pixel has the class (absent, or
        only ever marked void, as VOC marks difficult objects); the class has
        pixels but is the majority of no superpixel (objects smaller than
        the superpixels); or every non-void superpixel is the class (nothing
        to tell it from).
    """
    if not examples:
        return f"split {split!r} has no images: nothing to learn"
    fg_px = sum(int(ex.fg.sum()) for ex in examples)
    bg_px = sum(int(ex.bg.sum()) for ex in examples)
    targets = [ex.targets[~ex.void_only] for ex in examples]
    fg_sp = int(sum(t.sum() for t in targets))
    bg_sp = int(sum(t.size - t.sum() for t in targets))
    if fg_px + bg_px == 0:
        return (f"every mask of split {split!r} is void ({VOID_LABEL}) everywhere: "
                "no pixel to learn from")
    if fg_px == 0:
        found = ("" if classes_found is None else
                 f"; its masks hold {', '.join(repr(c) for c in classes_found)}"
                 if classes_found else
                 f"; its masks hold no object class: {binary_masks_hint([class_name])}")
        return (f"no non-void pixel of split {split!r} has class {class_name!r} (the class "
                "is absent, or its pixels are all marked void): nothing to learn; check "
                "the class name and the split" + found)
    if fg_sp == 0:
        return (f"class {class_name!r} has {fg_px} non-void pixels in split {split!r} but "
                "is the majority label of no superpixel: nothing to learn; use smaller "
                "superpixels if its objects are tiny (a larger --slic-segments, or a "
                "smaller --fz-min-size with --superpixels felzenszwalb)")
    if bg_sp == 0:
        return (f"every non-void superpixel of split {split!r} is class {class_name!r}: "
                "no background to learn to tell it from")
    return None


def classes_present(dataset, ids) -> list[str]:
    """Names of the object classes (not background) found in the masks."""
    found = set()
    for image_id in ids:
        found.update(np.unique(dataset.read_mask(image_id)).tolist())
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
    for name in class_names or ():
        class_index(name)              # unknown names fail before any work
    splits = list(splits) if splits else dataset.splits()
    if not splits:
        return {"classes": [], "splits": {},
                "problems": [f"no split files in {dataset.root / SPLIT_DIR}"]}
    problems: list[str] = []
    good_ids: dict[str, list[str]] = {}
    checked: dict[str, tuple[bool, list[str]]] = {}      # readable_ids fills it in
    for split in splits:
        try:
            good_ids[split], bad = readable_ids(dataset, split, checked)
        except DatasetError as err:
            problems.append(str(err))
            continue
        problems.extend(bad)
    if class_names:
        classes = list(class_names)
    else:
        all_ids = sorted({i for ids in good_ids.values() for i in ids})
        classes = classes_present(dataset, all_ids)
    binary = (f"no mask holds an object class, only background (0) and void "
              f"({VOID_LABEL}): {binary_masks_hint(class_names or ())}")
    if not classes and good_ids:
        problems.append(binary)
    result: dict[str, Any] = {"classes": classes, "splits": {}, "problems": problems}
    any_object = False
    for split, ids in good_ids.items():
        graphs = extractor.graphs(split, ids, with_features=False)
        masks = [dataset.read_mask(g.image_id) for g in graphs]
        any_object = any_object or any(bool(np.any((m != 0) & (m != VOID_LABEL)))
                                       for m in masks)
        void_pixels = sum(int((m == VOID_LABEL).sum()) for m in masks)
        per_class = {}
        for name in classes:
            cls = class_index(name)
            examples = [Example(g, *pixel_counts(g.segments, m == cls, m == VOID_LABEL,
                                                 g.n_nodes))
                        for g, m in zip(graphs, masks)]
            per_class[name] = _split_stats(examples, void_pixels)
            if ids and per_class[name]["images_with_class"] == 0:
                problems.append(f"split {split!r}: no image contains class {name!r}")
        result["splits"][split] = per_class
    if class_names and any(good_ids.values()) and not any_object:
        # the classes were named, so the masks were not searched for one above
        problems.append(binary)
    return result


def inspection_report(extractor: FeatureExtractor, splits=None, class_names=None) -> dict:
    """A data set checked and summarised per split and class, with provenance.

    The workflow of ``segstruct inspect`` (which prints it and writes it with
    ``--json``), on plain values, so that a script inspecting several data
    sets computes the same report without the command line.

    Parameters
    ----------
    extractor : FeatureExtractor
        The data set (``extractor.dataset``), the superpixel settings the
        oracle IoU is over (``extractor.config``) and the feature cache.
    splits : list of str, optional
        Splits to inspect (default: every split of the data set).
    class_names : list of str, optional
        VOC class names, lower case (default: every class found in the
        masks).

    Returns
    -------
    dict
        ``io.provenance.data_provenance``'s keys ("dataset", "data_root",
        "features", "code_version"), then :func:`inspect_dataset`'s
        ("classes", "splits", "problems"). Nothing is printed.
    """
    return {**data_provenance(extractor),
            **inspect_dataset(extractor, splits, class_names)}
