"""The JSON records of scoring saved models: ``segstruct evaluate --json``.

Each record names the data, split, class, method, features and both code
versions (the model's and the scorer's), so that a number read later can be
traced to what made it.
"""
from __future__ import annotations

from collections.abc import Sequence

from segstruct.io.provenance import code_version

__all__ = ["evaluation_record", "multiclass_record"]


def evaluation_record(dataset, split: str, model_path, doc: dict, score: dict,
                      image_ids: Sequence[str], per_image) -> dict:
    """One model scored on one split.

    Parameters
    ----------
    dataset : VOCDataset
        The data scored (its ``name`` and ``root``).
    split : str
    model_path : path-like
    doc : dict
        The model's document (its JSON file: "class", "method", "estimator",
        "features", "code_version").
    score : dict
        ``VOCScore.to_dict()`` of the split.
    image_ids : sequence of str
        The split's images, in the order of ``per_image``.
    per_image : sequence of (int, int, int)
        Each image's (TP, FP, FN) foreground pixels, so that two models can be
        compared image by image.
    """
    return {
        "dataset": dataset.name, "data_root": str(dataset.root), "split": split,
        "class": doc["class"], "method": doc["method"], "model": str(model_path),
        "estimator": doc["estimator"], "features": doc["features"],
        "model_code_version": doc["code_version"], "code_version": code_version(),
        "score": score,
        "per_image": [{"image_id": i, "tp": tp, "fp": fp, "fn": fn}
                      for i, (tp, fp, fn) in zip(image_ids, per_image)]}


def multiclass_record(dataset, split: str, models, combination: str, scores: dict,
                      alone: dict) -> dict:
    """Class models combined into one labelling, scored over all 21 labels.

    Parameters
    ----------
    dataset : VOCDataset
    split : str
    models : sequence of SegmentationModel
        One per class (``path``, ``class_name``, ``doc``, ``config``).
    combination : str
        How the models' labels were combined.
    scores : dict
        ``ConfusionMatrix.to_dict()`` of the combined labels.
    alone : dict
        {class: ``VOCScore.to_dict()``} of each model scored alone.
    """
    return {
        "format": "segstruct-multiclass-evaluation", "dataset": dataset.name,
        "data_root": str(dataset.root), "split": split,
        "models": [{"path": str(m.path), "class": m.class_name, "method": m.doc["method"],
                    "code_version": m.doc.get("code_version")} for m in models],
        "combination": combination,
        "features": models[0].config.to_dict(), "code_version": code_version(),
        "multiclass": scores, "alone": alone}
