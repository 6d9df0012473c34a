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
   pair is written, so that an interruption in between costs no training).
"""
from __future__ import annotations

import json

from segstruct.datasets import DatasetError
from segstruct.evaluate.diagnosis import diagnose, generalisation
from segstruct.evaluate.inspection import training_set_problem
from segstruct.features.extraction import FeatureExtractor
from segstruct.io.persistence import checkpoint_path, log_path, model_paths, save_model
from segstruct.learn.callbacks import training_callbacks
from segstruct.learn.selection import check_cv_data
from segstruct.learn.ssvm import oracle_name
from segstruct.segmentation_model import SegmentationModel

__all__ = ["check_training_set", "train_model"]


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
    json_path, _ = model_paths(out)
    log_file, checkpoint = log_path(out), checkpoint_path(out)
    estimator.fit(X, Y, callbacks=training_callbacks(
        progress=progress, log_path=log_file, checkpoint_path=checkpoint, resume=resume))
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
