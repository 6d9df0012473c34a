"""Training a model for one class of a VOC data set: the steps every command shares.

``segstruct train`` and ``segstruct compare`` (and the scripts built on
``compare``) train through :func:`train_model`, so they check the data, fit,
diagnose and save in one way:

1. :func:`check_training_set` refuses, before any feature is computed, a split
   that cannot teach the class (too few images, no foreground, too few for
   cross-validation);
2. :func:`train_model` fits with a training log and a checkpoint beside the
   model (an interrupted run continues from it), scores the training set,
   diagnoses a collapse, saves the model and drops the checkpoint once the
   run converged (one stopped at ``max_iter`` keeps it, so that a higher
   ``max_iter`` can continue it; ``compare`` keeps it until its record of the
   pair is written, so that an interruption in between costs no training);
3. with ``--C auto``, :func:`refit_chosen_C` runs :func:`train_model` at the
   cross-validated C and refuses a refit that finds nothing on its own
   training split, refitting at the next C; the curve is kept beside the
   model (:func:`curve_path`) until the model is saved, so that an
   interrupted refit resumes at its C (:func:`resumable_curve`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from segstruct.datasets import DatasetError, voc_class_name
from segstruct.evaluate.diagnosis import diagnose, generalisation
from segstruct.evaluate.inspection import classes_present, training_set_problem
from segstruct.features.extraction import FeatureExtractor
from segstruct.io.files import write_json
from segstruct.io.persistence import checkpoint_path, log_path, model_paths, save_model
from segstruct.io.text import fmt
from segstruct.learn.callbacks import training_callbacks
from segstruct.learn.selection import check_cv_data, next_C_after_refit
from segstruct.learn.estimators.structured_svm import oracle_name
from segstruct.segmentation_model import SegmentationModel

__all__ = ["check_training_set", "train_model", "curve_path", "resumable_curve",
           "refit_chosen_C"]


def check_training_set(extractor: FeatureExtractor, split: str, class_name: str,
                       folds: int | None = None) -> None:
    """Refuse a training split that cannot teach ``class_name``.

    Reads masks only (no features). Raises DatasetError naming the data root
    when the split has no image showing the class, or, for cross-validation
    with ``folds`` folds, too few of them.
    """
    examples = extractor.examples(split, class_name, with_features=False)
    root = extractor.dataset.root
    problem = training_set_problem(examples, class_name, split)
    if problem and not any(ex.fg.sum() for ex in examples):
        # the class has no pixel: name the classes the masks do hold
        found = classes_present(extractor.dataset, [ex.graph.image_id for ex in examples])
        problem = training_set_problem(examples, class_name, split, found)
    if problem:
        raise DatasetError(f"{root}: {problem}")
    if folds is not None:
        try:
            check_cv_data([ex.pixel_counts for ex in examples], folds)
        except ValueError as err:
            raise DatasetError(f"{root}, class {class_name!r}, split {split!r}: {err}") from err


def train_model(estimator, X, Y, out, extractor: FeatureExtractor, *, split: str,
                class_name: str, method: str, metadata: dict | None = None,
                progress: bool = False, resume: bool = True,
                keep_checkpoint: bool = False, val=None,
                temperature: float | None = None) -> SegmentationModel:
    """Fit ``estimator`` on one split's examples and save it as model ``out``.

    Parameters
    ----------
    estimator : StructuredSVM, not fitted (its C already chosen).
    X, Y : the split's graphs and label counts (``ex.graph``, ``ex.pixel_counts``
        of ``extractor.examples(split, class_name)``).
    out : model path (``out.json`` and ``out.npz`` are written; the log and
        the checkpoint go beside them).
    extractor : the features the model is trained on (saved with it).
    split, class_name, method : what is trained, recorded in the model file.
    metadata : more entries for the model file (e.g. the C selection curve).
    progress : show a progress bar.
    resume : continue from the checkpoint when there is one.
    keep_checkpoint : keep the checkpoint of a converged run too (the caller
        deletes it once its own records are written).
    val : (split name, graphs, label counts) of a validation split, optional:
        scored beside the training split, recorded, and checked for
        over-fitting (:func:`segstruct.evaluate.diagnosis.generalisation`).
    temperature : float, optional
        The temperature of the marginals of an SSVM, calibrated beforehand
        (``segstruct.decisions.fit_temperature``): set as ``temperature_``
        and saved, for ``predict --decision``.

    Returns
    -------
    SegmentationModel
        The model as saved, with the fitted learner itself (its training
        run's attributes: ``n_iter_``, ``log_``, ...) as ``estimator``; the
        document holds ``train_score``, ``diagnosis`` (its warnings include
        over-fitting when a validation split was scored) and ``val_score``.
        The log and the checkpoint are ``log_path(model.path)`` and
        ``checkpoint_path(model.path)`` (``segstruct.io.persistence``); the
        checkpoint exists if the run did not converge, or was kept.
    """
    class_name = voc_class_name(class_name)      # "Horse" is stored as "horse"
    json_path, _ = model_paths(out)
    log_file, checkpoint = log_path(out), checkpoint_path(out)
    estimator.fit(X, Y, callbacks=training_callbacks(
        progress=progress, log_path=log_file, checkpoint_path=checkpoint, resume=resume,
        inputs={"class": class_name, "split": split, "features": extractor.config.to_dict()}))
    if temperature is not None:
        estimator.temperature_ = float(temperature)
    predictions = estimator.predict(X)        # one graph cut per image, used twice
    train_score = estimator.voc_score(X, Y, predictions).to_dict()
    diagnosis = diagnose(estimator, X, Y, predictions)
    config = extractor.config
    val_meta = {}
    if val is not None:
        val_split, X_val, Y_val = val
        val_score = estimator.voc_score(X_val, Y_val).to_dict()
        val_meta = {"val_split": val_split, "val_score": val_score}
        warning = generalisation(train_score["voc_iou_percent"], val_score["voc_iou_percent"],
                                 {"top_down": config.detector is not None,
                                  "top_down_folds": config.top_down_folds,
                                  "C": estimator.C, "C_auto": "C_selection" in (metadata or {})})
        if warning:
            diagnosis["warnings"].append(warning)
    codebook = extractor.codebook()[0] if config.sift else None
    dataset = extractor.dataset
    detectors = extractor.block_detectors(class_name) if config.detector is not None else None
    save_model(out, estimator, config, codebook, {
        "class": class_name, "method": method, "dataset": dataset.name,
        "oracle": oracle_name(getattr(estimator, "oracle", None)),
        "data_root": str(dataset.root), "train_split": split,
        "n_train_images": len(X), "train_score": train_score,
        "diagnosis": diagnosis, "training_log": log_file.name, **val_meta,
        **(metadata or {})}, shape_detectors=detectors)
    if estimator.converged_ and not keep_checkpoint:
        checkpoint.unlink(missing_ok=True)  # the model is safe: the checkpoint is spent
    # the fitted learner itself (with its training run's attributes), and the
    # document as written
    return SegmentationModel(estimator, config, codebook, detectors,
                             json.loads(json_path.read_text()), json_path.with_suffix(""))


def curve_path(out) -> Path:
    """``MODEL.cv.json``: the cross-validation curve of model ``out``'s
    ``--C auto`` refit, kept while the refit is unfinished."""
    json_path, _ = model_paths(out)
    return json_path.with_name(json_path.name[: -len(".json")] + ".cv.json")


def resumable_curve(out, grid, folds: int, identity: str | None = None,
                    fold_tol: float | None = None) -> dict | None:
    """The curve an interrupted ``--C auto`` run of model ``out`` saved, so that
    the run goes on at its C without cross-validating again.

    Parameters
    ----------
    out : model path (prefix).
    grid : sequence of float, the grid of C asked for now.
    folds : int, the fold count asked for now.
    identity : str, optional
        What the curve must carry as its ``identity`` to stand on its own
        (``compare`` saves each pair's curve as soon as its cross-validation
        ends, before the refit has a checkpoint).
    fold_tol : float, optional
        The folds' tolerance asked for now; a curve of another (or of none
        recorded: made before the option) is not reused. None: not checked.

    Returns
    -------
    dict or None
        The saved curve (with ``chosen_C`` and any ``refused`` C); None when
        there is no readable curve, it was made with another grid, fold count,
        ``identity`` or ``fold_tol``, or it carries no matching ``identity`` and there is
        no checkpoint of its refit to continue.
    """
    saved = curve_path(out)
    if not saved.exists():
        return None
    try:
        curve = json.loads(saved.read_text())
    except (OSError, ValueError):
        return None                     # unreadable: cross-validate again
    if ([float(c) for c in curve.get("grid", [])] != [float(c) for c in grid]
            or curve.get("folds") != folds):
        return None
    if fold_tol is not None and curve.get("fold_tol") != fold_tol:
        return None
    if identity is not None and "identity" in curve:
        return curve if curve["identity"] == identity else None    # else another run's
    return curve if checkpoint_path(out).exists() else None


def refit_chosen_C(refit: Callable[[float], SegmentationModel], curve: dict, out,
                   say: Callable[[str], None] = print) -> SegmentationModel:
    """Refit at the cross-validated C, and at the next C while a refit finds nothing.

    A converged refit whose IoU on its own training split is 0 is refused
    (:func:`segstruct.learn.selection.next_C_after_refit`): its checkpoint is
    dropped and the next C by pooled held-out IoU is refitted. A refit
    stopped at ``max_iter`` is kept as it is (a resumed run continues it).
    Before each refit the curve is written to :func:`curve_path`, so that an
    interrupted refit resumes at its C (:func:`resumable_curve`); the caller
    removes that file once the model (and its own records) are safe.

    Parameters
    ----------
    refit : callable (C) -> SegmentationModel
        :func:`train_model` at that C, saving model ``out`` with ``curve`` in
        its metadata (which then names the refused C).
    curve : dict, of :func:`segstruct.learn.selection.select_C`; updated in place.
    out : model path (prefix).
    say : callable, prints a refusal.

    Returns
    -------
    SegmentationModel, the refit that stands (at ``curve["chosen_C"]``).
    """
    while True:
        C = float(curve["chosen_C"])
        write_json(curve_path(out), curve)      # an interrupted refit resumes at this C
        trained = refit(C)
        iou = trained.doc["train_score"]["voc_iou_percent"]
        following = next_C_after_refit(curve, iou) if trained.estimator.converged_ else None
        if following is None:
            return trained
        # the refused run is spent: the next C trains from the start
        checkpoint_path(out).unlink(missing_ok=True)
        say(f"the refit at C {C:g} finds nothing of the class on its own training split "
            f"(IoU {fmt(iou, '.2f')} %): refused; refitting at C {following:g}, the next best "
            "by pooled held-out IoU")
