"""A comparison's figures: training curves, cross-validation curves,
qualitative grids and loss surfaces, one set per class."""
from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import numpy as np

from segstruct.cluster import parallel_map
from segstruct.datasets import VOCDataset, class_index
from segstruct.evaluate.scoring import superpixel_confusion
from segstruct.features.extraction import FeatureExtractor
from segstruct.inference.losses import totals
from segstruct.io.persistence import load_model
from segstruct.learn.methods import METHODS, method_loss

__all__ = ["FIGURE_KINDS", "comparison_figures", "figure_task", "loss_lattice", "pick_images",
           "qualitative_panels", "save_qualitative"]


#: The kinds of figure a class gets, slowest first (they are drawn as tasks
#: of their own on the workers: the slowest first leave no core idle at the end).
FIGURE_KINDS = ("qualitative", "loss-surface", "training", "cv")
#: Images per qualitative figure unless told otherwise: four rows keep a grid
#: of every method readable on one page.
FIGURE_IMAGES = 4


def comparison_figures(comparison, n_images: int = FIGURE_IMAGES, ids=None) -> list[Path]:
    """Every figure of a :class:`~segstruct.compare.Comparison`'s finished pairs,
    written under ``DIR/figures``; their paths.

    Each figure is one task of :func:`segstruct.cluster.parallel_map` on the
    comparison's workers: drawn one after another in this process, the
    default comparison's figures kept the workers idle for a noticeable share
    of the run.

    Parameters
    ----------
    comparison : Comparison
    n_images : images per qualitative grid, drawn with the comparison's seed
        from the evaluation split (preferring ones that show the class).
    ids : image ids to draw instead.
    """
    c = comparison
    tasks = [(kind, class_name) for kind in FIGURE_KINDS for class_name in c.compared_classes]
    view = c.worker_view() if len(tasks) > 1 and c.n_jobs != 1 else c
    drawn = parallel_map(figure_task, [(view, kind, name, n_images, ids) for kind, name in tasks],
                         c.n_jobs)
    # in class order, as one after another
    order = {(name, kind): path for (kind, name), path in zip(tasks, drawn)}
    return [order[(name, kind)] for name in c.compared_classes for kind in
            ("training", "cv", "qualitative", "loss-surface") if order[(name, kind)] is not None]


def figure_task(comparison, kind: str, class_name: str, n_images: int = FIGURE_IMAGES,
                ids=None) -> Path | None:
    """One figure of one class of a comparison (``kind``, one of
    :data:`FIGURE_KINDS`), written under ``DIR/figures``; its path, or None
    when the class has nothing to draw of that kind."""
    from segstruct.report.figures import (cv_figure, loss_surface_figure, save_figure,
                                          training_figure)
    c = comparison
    fig_dir = c.out_dir / "figures"
    records = {m: c.store.load(class_name, m) for m in c.methods}
    records = {m: r for m, r in records.items() if r is not None}
    if kind == "training":
        if not records:
            return None
        logs = {m: json.loads((c.out_dir / r["training_log"]).read_text())
                for m, r in records.items()}
        return save_figure(training_figure(logs, caption=c.caption(class_name),
                                           scopes={m: r.get("scope", c.settings.scope)
                                                   for m, r in records.items()}),
                           fig_dir / f"training-{class_name}.png")
    if kind == "cv":
        curves = {m: r["C_selection"] for m, r in records.items() if "C_selection" in r}
        if not curves:
            return None
        return save_figure(cv_figure(curves, caption=c.caption(class_name, list(curves))),
                           fig_dir / f"cv-{class_name}.png")
    if kind == "qualitative":
        models = {m: load_model(c.out_dir / r["model"])[0] for m, r in records.items()}
        if not models:
            return None
        chosen = ids or pick_images(c.dataset, c.eval_split, class_name, n_images, c.seed)
        return save_qualitative(c.extractor, class_name, c.eval_split, chosen, models,
                                fig_dir / f"qualitative-{class_name}.png",
                                c.caption(class_name, list(models)))
    if kind != "loss-surface":
        raise ValueError(f"unknown figure kind {kind!r}; use one of {FIGURE_KINDS}")
    complex_methods = [m for m in c.methods if METHODS[m]["loss"] is None]
    if not complex_methods:
        return None
    n_pos, n_neg = loss_lattice(c.extractor, c.train_split, class_name, c.settings)
    loss = method_loss(complex_methods[0], c.settings.loss, c.settings.beta)
    where = ("the whole training set" if c.settings.scope == "dataset"
             else "the median training image showing the class")
    fig, _ = loss_surface_figure(
        loss, n_pos, n_neg, n_triangles=sorted({c.settings.n_triangles, 15}, reverse=True),
        caption=f"{c.caption(class_name, complex_methods)}; "
                f"Np {n_pos:g}, Nn {n_neg:g} ({where})")
    return save_figure(fig, fig_dir / f"loss-surface-{class_name}.png")


def loss_lattice(extractor: FeatureExtractor, split: str, class_name: str,
                 settings) -> tuple[float, float]:
    """(Np, Nn) of the loss the oracle sees: the training set's totals (scope
    "dataset") or those of its median image showing the class (scope "image")."""
    examples = extractor.examples(split, class_name, with_features=False)
    sizes = np.array([totals(ex.targets, ex.node_weights(settings.node_weights))
                      for ex in examples])
    # sizes has two columns, (Np, Nn): so has its sum or median
    if settings.scope == "dataset":
        return cast("tuple[float, float]", tuple(float(v) for v in sizes.sum(axis=0)))
    showing = sizes[sizes[:, 0] > 0]     # an image without the class has a flat loss
    return cast("tuple[float, float]",
                tuple(float(v) for v in np.median(showing if len(showing) else sizes, axis=0)))


def pick_images(dataset: VOCDataset, split: str, class_name: str, n: int, seed: int) -> list[str]:
    """``n`` image ids of ``split`` drawn with ``seed``, preferring ones showing the class."""
    value = class_index(class_name)
    ids = dataset.ids(split)
    showing = [i for i in ids if (dataset.read_mask(i) == value).any()]
    rest = [i for i in ids if i not in set(showing)]
    rng = np.random.default_rng(seed)
    chosen = list(rng.permutation(showing)[:n])
    if len(chosen) < n:
        chosen += list(rng.permutation(rest)[: n - len(chosen)])
    return [str(i) for i in chosen]


def save_qualitative(extractor: FeatureExtractor, class_name: str, split: str, ids,
                     models: dict, path, caption: str, masks: dict | None = None) -> Path:
    """Draw input | ground truth | one column per model for images ``ids``.

    Parameters
    ----------
    models : method name -> fitted estimator (all on the extractor's features).
    masks : method name -> one (H, W) 0/1 array per image of ``ids``, the
        masks to draw for that model instead of its graph cut's (an
        ensemble's, :func:`segstruct.predict.label_images`); default none.
    """
    from segstruct.report.figures import qualitative_figure, save_figure
    panels = qualitative_panels(extractor, class_name, split, ids, models, masks)
    return save_figure(qualitative_figure(panels, list(models), caption), path)


def qualitative_panels(extractor: FeatureExtractor, class_name: str, split: str, ids,
                       models: dict, masks: dict | None = None) -> list[dict]:
    """Every model's labelling of images ``ids`` of ``split``, one panel per
    image: what :func:`segstruct.report.figures.qualitative_figure` draws and
    :mod:`segstruct.report.gallery` shows.

    Parameters
    ----------
    models : method name -> fitted estimator (all on the extractor's features).
    masks : method name -> one (H, W) 0/1 array per image of ``ids``, used
        for that model instead of its graph cut; default none.

    Returns
    -------
    list of dict, in the order of ``ids``, with "image_id" (str), "image"
    ((H, W, 3) uint8), "truth" ((H, W) uint8: 0/1, 255 = void), "segments"
    ((H, W) int superpixels), "predictions" (method -> (H, W) 0/1 mask) and
    "counts" (method -> the image's (TP, FP, FN) foreground pixels, void
    left out, for the graph-cut models: what compare's evaluation adds up).
    """
    dataset = extractor.dataset
    value = class_index(class_name)
    examples = extractor.examples(split, class_name, ids=list(ids))
    masks = masks or {}
    predictions = {m: est.predict([ex.graph for ex in examples]) for m, est in models.items()
                   if m not in masks}
    panels = []
    for k, ex in enumerate(examples):
        raw = dataset.read_mask(ex.graph.image_id)
        truth = np.where(raw == 255, 255, raw == value).astype(np.uint8)
        panels.append({"image_id": ex.graph.image_id,
                       "image": dataset.read_image(ex.graph.image_id),
                       "truth": truth, "segments": ex.graph.segments,
                       "predictions": {m: masks[m][k] if m in masks else
                                       ex.graph.paint(predictions[m][k]) for m in models},
                       "counts": {m: superpixel_confusion(y[k], ex.fg, ex.bg)
                                  for m, y in predictions.items()}})
    return panels
