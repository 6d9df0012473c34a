"""Apply trained class models to images: one VOC palette PNG per image.

Each output PNG has the image's size and holds a VOC class index per pixel
(0 background), painted from a label per superpixel:

- one model of class c: c where the model's graph cut labels the superpixel
  foreground (exactly the labelling ``evaluate`` scores);
- several models (one per class, on the same features): for each
  superpixel the class whose model is surest, by the max-marginal difference
  ``max score with y_i = 1 - max score with y_i = 0``
  (:meth:`~segstruct.learn.estimators.structured_svm.StructuredSVM.decision_function`), or
  background where no model labels it foreground. Where one model alone
  fires, the label is that model's own prediction.

Images are labelled in chunks, and each PNG is written (atomically) as soon
as its chunk is done, so an interrupted run keeps the images it finished.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from segstruct.datasets.voc import voc_colormap
from segstruct.decisions import decide
from segstruct.ensemble import (averaged_labels, combine_scores, ensemble_record,
                                graphs_per_image)
from segstruct.io.files import atomic_write_bytes
from segstruct.io.provenance import code_version
from segstruct.segmentation_model import SegmentationModel

__all__ = ["BETA", "CHUNK", "COMBINATION", "DECISION", "SAMPLES", "check_models",
           "label_images", "label_superpixels", "multiclass_confusion", "predict_to_folder",
           "prediction_index", "write_label_png", "write_overlay"]

#: Images whose features are held in memory at once.
CHUNK = 32

#: The defaults of a prediction (and of ``segstruct predict``'s options):
#: each model's own graph cut, the F-beta of "expected-fbeta", and no Gibbs
#: samples (the expected measure from the marginals' expected counts).
DECISION = "map"
BETA = 1.0
SAMPLES = 0

#: How several class models label an image together (said in every output).
COMBINATION = ("per superpixel, the class with the largest positive max-marginal "
               "difference, else background")


def check_models(models: Sequence[SegmentationModel]) -> None:
    """Refuse models that cannot label images together.

    Raises
    ------
    ValueError
        No model, two models of one class, or models trained on other
        feature settings or another codebook than the first (their
        superpixels or features would differ).
    """
    if not models:
        raise ValueError("no model given")
    first = models[0]
    seen: dict[str, Path | None] = {}      # class -> the model's path
    for m in models:
        if m.class_name in seen:
            raise ValueError(f"{seen[m.class_name]} and {m.path} both segment "
                             f"{m.class_name!r}: give one model per class")
        seen[m.class_name] = m.path
        # each model brings its own class's detector; the settings, detector
        # settings included, and the codebook must be the first model's
        # (``first.codebook is not None`` follows from the first test: it
        # tells the type checker)
        same_codebook = (m.codebook is None) == (first.codebook is None) and (
            m.codebook is None or (first.codebook is not None
                                   and np.array_equal(m.codebook, first.codebook)))
        if m.config.to_dict() != first.config.to_dict() or not same_codebook:
            raise ValueError(f"{m.path} was trained on other features than {first.path} "
                             "(superpixels, blocks or codebook): predict with them "
                             "separately")


def label_superpixels(models: Sequence[SegmentationModel], graphs: Sequence,
                      decision: str = DECISION, beta: float = BETA,
                      samples: int = SAMPLES) -> np.ndarray:
    """VOC class index per superpixel of one image.

    Parameters
    ----------
    models : the class models.
    graphs : the image's graph under each model's features, in model order
        (the same superpixels; the top-down block differs per class).
    decision : one of ``segstruct.decisions.DECISIONS``; other than "map",
        one model with a temperature, deciding for the image alone.
    beta : float, of "expected-fbeta".
    samples : int, Gibbs samples per image for the expected measures (0:
        the measure of the expected counts; ``segstruct.decisions.decide``).

    Returns
    -------
    (N,) uint8: 0 (background) or a model's class index.
    """
    if decision != "map":
        if len(models) != 1:
            raise ValueError(f"decision {decision!r} labels one class: give one model")
        y = decide(models[0].estimator, [graphs[0]], decision, "image", beta,
                   samples=samples)[0]
        return (y * models[0].label).astype(np.uint8)
    if len(models) == 1:
        y = models[0].estimator.predict([graphs[0]])[0]
        return (y * models[0].label).astype(np.uint8)
    scores = np.stack([m.estimator.decision_function([g])[0]
                       for m, g in zip(models, graphs)])
    return combine_scores(scores, [m.label for m in models])


def label_images(models: Sequence[SegmentationModel], extractor, ids: Sequence[str],
                 chunk: int = CHUNK, decision: str = DECISION, beta: float = BETA,
                 samples: int = SAMPLES,
                 variants: Sequence = ()) -> Iterator[tuple[str, np.ndarray]]:
    """Yield (image id, (H, W) uint8 label image) for every id, in order.

    ``extractor`` is a FeatureExtractor of the models' features (built with
    their codebook and detectors) over the images; ``decision``, ``beta``
    and ``samples`` as for :func:`label_superpixels`. ``variants``: more
    extractors over the same images, each with other superpixels
    (:func:`segstruct.ensemble.superpixel_variants`); with them, each pixel
    is labelled from the models' max-marginal differences averaged over all
    the extractors (:mod:`segstruct.ensemble`; decision "map" only).
    """
    if variants and decision != "map":
        raise ValueError(f"an ensemble of superpixelisations decides by the models' scores, "
                         f"not by decision {decision!r}")
    for start in range(0, len(ids), chunk):
        part = list(ids[start:start + chunk])
        if variants:
            yield from zip(part, averaged_labels(models, [extractor, *variants], part))
            continue
        for image_id, graphs in zip(part, graphs_per_image(models, extractor, part)):
            yield image_id, graphs[0].paint(label_superpixels(models, graphs, decision, beta,
                                                              samples))


def write_label_png(path: Path, labels: np.ndarray) -> None:
    """Write an (H, W) uint8 class-index image as a VOC palette PNG, atomically."""
    image = Image.fromarray(np.asarray(labels, np.uint8), mode="P")
    image.putpalette(voc_colormap().astype(np.uint8).ravel().tolist())
    atomic_write_bytes(Path(path), lambda f: image.save(f, format="PNG"))


def write_overlay(path: Path, rgb: np.ndarray, labels: np.ndarray, alpha: float = 0.5) -> None:
    """Write the image with its labels drawn on it as a JPEG, atomically.

    Each labelled region is tinted with its VOC colour and outlined in white
    inside a black line, so that it stays visible on an image of its own
    colour.
    """
    from skimage.segmentation import find_boundaries
    colours = voc_colormap().astype(np.float64)
    out = np.asarray(rgb, np.float64).copy()
    fg = labels > 0
    out[fg] = (1 - alpha) * out[fg] + alpha * colours[labels[fg]]
    out[find_boundaries(labels, mode="outer") & ~fg] = 0.0
    out[find_boundaries(labels, mode="inner") & fg] = 255.0
    image = Image.fromarray(np.clip(out, 0, 255).astype(np.uint8), mode="RGB")
    atomic_write_bytes(Path(path), lambda f: image.save(f, format="JPEG", quality=90))


def predict_to_folder(models: Sequence[SegmentationModel], extractor, ids: Sequence[str],
                      out_dir: Path, overlay: bool = False,
                      bar: Callable[[int], Any] | None = None, decision: str = DECISION,
                      beta: float = BETA, samples: int = SAMPLES,
                      variants: Sequence = ()) -> list[dict]:
    """Label every image, write ``OUT/<id>.png`` (and ``<id>.jpg`` with
    ``overlay``); return one index entry per image. ``decision``, ``beta``
    and ``samples`` as for :func:`label_superpixels`, ``variants`` as for
    :func:`label_images`.

    ``bar(total)`` gives a progress bar (anything with ``update()`` and
    ``close()``), or None for none.
    """
    out_dir = Path(out_dir)
    dataset = extractor.dataset
    entries, progress = [], bar(len(ids)) if bar is not None else None
    names = {m.label: m.class_name for m in models}
    try:
        for image_id, labels in label_images(models, extractor, ids, decision=decision,
                                             beta=beta, samples=samples, variants=variants):
            start = time.perf_counter()
            write_label_png(out_dir / f"{image_id}.png", labels)
            entry = {"id": image_id, "image": str(dataset.image_path(image_id)),
                     "height": int(labels.shape[0]), "width": int(labels.shape[1]),
                     "mask": f"{image_id}.png",
                     "class_pixels": {names[int(c)]: int(n) for c, n in
                                      zip(*np.unique(labels, return_counts=True)) if c}}
            if overlay:
                write_overlay(out_dir / f"{image_id}.jpg", dataset.read_image(image_id),
                              labels)
                entry["overlay"] = f"{image_id}.jpg"
            entry["write_seconds"] = time.perf_counter() - start
            entries.append(entry)
            if progress is not None:
                progress.update()
    finally:
        if progress is not None:
            progress.close()
    return entries


def prediction_index(models: Sequence[SegmentationModel], source: dict, entries: list[dict],
                     seconds: float, decision: str = DECISION, beta: float = BETA,
                     samples: int = SAMPLES, superpixels: Sequence | None = None) -> dict:
    """``index.json`` of a folder of predictions.

    Parameters
    ----------
    models : the class models that labelled the images.
    source : where the images came from: {"images": [paths]}, or
        {"data_root": ..., "split": ...}.
    entries : :func:`predict_to_folder`'s, one per image.
    seconds : wall-clock seconds of the labelling.
    decision, beta, samples : how the labels were decided (:func:`label_superpixels`).
    superpixels : with an ensemble, the SuperpixelParams of each of its members.
    """
    if superpixels and len(superpixels) > 1:
        combination = (f"per pixel, the mean max-marginal difference over {len(superpixels)} "
                       "superpixelisations (SLIC segments "
                       + ", ".join(str(sp.n_segments) for sp in superpixels) + "): "
                       + ("foreground where it is > 0" if len(models) == 1 else
                          "the class whose mean is largest, where it is > 0, else background"))
    elif len(models) == 1:
        combination = ("the model's graph cut" if decision == "map" else
                       f"decision {decision}" + (f" (beta {beta:g})" if decision ==
                                                 "expected-fbeta" else "") +
                       f" from the marginals at temperature "
                       f"{models[0].estimator.temperature_:.3g}, per image"
                       + (f", expected measure from {samples} Gibbs samples" if samples
                          else ""))
    else:
        combination = COMBINATION
    return {
        # format 3: "ensemble" is {"members", "slic_segments"}, as in evaluate's
        # records (format 2 named the members "runs")
        "format": "segstruct-predictions", "format_version": 3, **source,
        "models": [{"path": str(m.path), "class": m.class_name, "class_index": m.label,
                    "method": m.doc["method"], "dataset": m.doc.get("dataset"),
                    "train_split": m.doc.get("train_split"),
                    "code_version": m.doc.get("code_version")} for m in models],
        "combination": combination, "decision": decision,
        "ensemble": ensemble_record(superpixels),
        "features": models[0].config.to_dict(), "code_version": code_version(),
        "seconds": seconds, "images": entries}


def multiclass_confusion(models: Sequence[SegmentationModel], extractor, ids: Sequence[str],
                         variants: Sequence = ()):
    """The 21-label confusion of the models' combined labels against the
    masks of a VOC data set (``extractor.dataset``), void ignored;
    ``variants`` as for :func:`label_images`.

    Returns
    -------
    segstruct.evaluate.multiclass.ConfusionMatrix
    """
    from segstruct.evaluate.multiclass import ConfusionMatrix
    confusion = ConfusionMatrix()
    for image_id, labels in label_images(models, extractor, ids, variants=variants):
        confusion.add(labels, extractor.dataset.read_mask(image_id))
    return confusion

