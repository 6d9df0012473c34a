"""Training a model for one class of a VOC data set: the one workflow that
``segstruct train``, ``segstruct compare`` and the scripts share.

:func:`train` is the whole of it: it takes a data split (through its
feature extractor), a class, a method and :class:`TrainingSettings`, and
does what ``train`` does, in this order:

1. :func:`check_training_set` refuses, before any feature is computed, a split
   that cannot teach the class (too few images, no foreground, too few for
   cross-validation);
2. with ``C = "auto"``, the cross-validation curve of C: the one an
   interrupted run saved beside the model (:func:`resumable_curve`; ``compare``
   saves every pair's as soon as its folds are done), else the folds are run
   now (:mod:`segstruct.learn.selection`);
3. the temperature of the marginals, where asked (held-out likelihood on the
   training folds, :func:`segstruct.decisions.fit_temperature`);
4. :func:`train_model` fits with a training log and a checkpoint beside the
   model (an interrupted run continues from it), scores the training set
   (and a validation split), diagnoses a collapse, saves the model and drops
   the checkpoint once the run converged (one stopped at ``max_iter`` keeps
   it, so that a higher ``max_iter`` can continue it; ``compare`` keeps it
   until its record of the pair is written, so that an interruption in
   between costs no training);
5. with ``C = "auto"``, :func:`refit_chosen_C` runs step 4 at the
   cross-validated C and refuses a refit that finds nothing on its own
   training split, refitting at the next C; the curve is kept beside the
   model (:func:`curve_path`) until the model is saved, so that an
   interrupted refit resumes at its C.

What the workflow says goes to two callables, ``say`` (progress) and
``warn`` (warnings), so that the command line prints and a cluster task
stays quiet; it never reads parsed options.
"""
from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path
from typing import Callable

from segstruct.datasets import DatasetError, voc_class_name
from segstruct.decisions import fit_temperature
from segstruct.evaluate.diagnosis import diagnose, generalisation
from segstruct.evaluate.inspection import classes_present, training_set_problem
from segstruct.features.extraction import FeatureExtractor
from segstruct.io.files import write_json
from segstruct.io.persistence import checkpoint_path, log_path, model_paths, save_model
from segstruct.io.text import fmt
from segstruct.learn.callbacks import training_callbacks
from segstruct.learn.estimators.structured_svm import oracle_name
from segstruct.learn.methods import TrainingSettings, with_workers
from segstruct.learn.selection import (check_cv_data, format_curve, next_C_after_refit,
                                       select_C)
from segstruct.learn.selection.extension import asked_grid
from segstruct.segmentation_model import SegmentationModel

__all__ = ["train", "check_training_set", "train_model", "curve_path", "resumable_curve",
           "refit_chosen_C", "cross_validate", "curve_lines", "fresh_estimator"]


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
                    fold_tol: float | None = None, extend: int | None = None) -> dict | None:
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
    extend : int, optional
        The bound of the grid's extension asked for now (``--C-extend``); a
        curve extended under another (a curve without ``extended``: 0) is
        not reused. None: not checked.

    Returns
    -------
    dict or None
        The saved curve (with ``chosen_C`` and any ``refused`` C); None when
        there is no readable curve, it was made with another grid (the one
        asked for, before any extension), fold count, ``identity``,
        ``fold_tol`` or ``extend``, or it carries no matching ``identity`` and there is
        no checkpoint of its refit to continue.
    """
    saved = curve_path(out)
    if not saved.exists():
        return None
    try:
        curve = json.loads(saved.read_text())
    except (OSError, ValueError):
        return None                     # unreadable: cross-validate again
    if asked_grid(curve) != [float(c) for c in grid] or curve.get("folds") != folds:
        return None
    if extend is not None and (curve.get("extended") or {}).get("bound", 0) != extend:
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


def fresh_estimator(settings: TrainingSettings, method: str, C: float, n_jobs: int = 1):
    """A fresh learner of ``method`` at ``C`` with ``n_jobs`` inference workers
    (a module-level function, so that ``functools.partial`` of it pickles to
    the workers of a cross-validation, as a lambda would not)."""
    return with_workers(settings.estimator(method, C=C), n_jobs)


def cross_validate(settings: TrainingSettings, method: str, X, Y, *, seed: int = 0,
                   n_jobs: int = 1, progress: bool = False, groups=None) -> dict:
    """The cross-validation curve of C for one (class, method) on its training
    examples, with the chosen C (``chosen_C``) and any edge warning.

    The folds' learners are ``method``'s at ``settings``, each on the grid of
    ``settings.cv()``, stopped at ``settings.cv_tol`` (the folds only rank
    the values of C), extended past an end of the grid where the curve still
    rises there, at most ``settings.C_extend`` steps each way. ``groups``:
    one label per image, kept together in one fold
    (``segstruct.learn.selection.make_folds``), optional."""
    grid, folds = settings.cv()
    make = functools.partial(fresh_estimator, settings, method, grid[0], n_jobs)
    return select_C(make, X, Y, grid, folds, seed, progress, n_jobs, groups,
                    fold_tol=settings.cv_tol, extend=settings.C_extend)[1]


def curve_lines(curve: dict, where: str, class_name: str, method: str) -> list[str]:
    """The curve's lines and the C it chose, as ``train`` and ``compare`` say
    them; ``where`` names the training split (``data/split``)."""
    fits = sum(map(sum, curve["fit_seconds"]))
    return [*format_curve(curve),
            f"C chosen by {curve['folds']}-fold cross-validation on {where} ({method}, "
            f"{class_name}): {curve['chosen_C']:g} (pooled held-out VOC IoU; {fits:.1f} s "
            "of fits)"]


def _curve(settings: TrainingSettings, method: str, class_name: str, X, Y, out,
           extractor: FeatureExtractor, split: str, identity: str | None, resume: bool,
           seed: int, n_jobs: int, progress: bool, say: Callable[[str], None]) -> dict:
    """``C = "auto"``: the curve saved beside model ``out`` by an interrupted
    run that is resumed, or with this run's ``identity`` (``compare``'s
    cross-validation of every pair), else one made now
    (:func:`refit_chosen_C` saves it there before each refit)."""
    grid, folds = settings.cv()
    curve = None
    if resume or identity is not None:
        curve = resumable_curve(out, grid, folds, identity, fold_tol=settings.cv_tol,
                                extend=settings.C_extend)
    if curve is not None and resume and checkpoint_path(out).exists():
        say(f"resuming the refit at C {curve['chosen_C']:g}, chosen by the cross-validation "
            f"of the interrupted run ({curve_path(out)})")
        return curve
    if curve is None:
        curve = cross_validate(settings, method, X, Y, seed=seed, n_jobs=n_jobs,
                               progress=progress)
        if identity is not None:
            curve["identity"] = identity
    for line in curve_lines(curve, f"{extractor.dataset.name}/{split}", class_name, method):
        say(line)
    return curve


def _temperature(settings: TrainingSettings, method: str, C: float, X, Y, seed: int,
                 say: Callable[[str], None], warn: Callable[[str], None]) -> tuple[float, dict]:
    """The temperature of the marginals of ``method`` at ``C``, by held-out
    likelihood on the folds of the training split."""
    folds = settings.cv()[1]
    say(f"fitting the temperature of the marginals on {folds} folds of the training split")
    T, fit = fit_temperature(functools.partial(fresh_estimator, settings, method, C), X, Y,
                             folds=folds, seed=seed)
    say(f"temperature {T:.3g} of the marginals, by held-out likelihood "
        f"({fit['seconds']:.1f} s)")
    if fit["at_edge"]:
        warn("the temperature is at the end of its range: the held-out scores say little "
             "about the labels")
    return T, fit


def train(extractor: FeatureExtractor, split: str, class_name: str, method: str,
          settings: TrainingSettings, out, *, val_split: str | None = None,
          calibrate: bool = False, resume: bool = True, keep_checkpoint: bool = False,
          curve_identity: str | None = None, seed: int = 0, n_jobs: int = 1,
          progress: bool = False, say: Callable[[str], None] | None = None,
          warn: Callable[[str], None] | None = None) -> SegmentationModel:
    """Train ``method`` for ``class_name`` on ``split`` and save it as model ``out``
    (the module docstring's steps).

    Parameters
    ----------
    extractor : FeatureExtractor of the data set (its features, codebook and
        detectors are saved with the model).
    split, class_name, method : what is trained (``method`` one of
        ``segstruct.learn.methods.METHODS``).
    settings : TrainingSettings; with ``C = "auto"`` the C is
        cross-validated on ``split``.
    out : model path (prefix): ``out.json`` and ``out.npz`` are written, the
        log, the checkpoint and an unfinished run's curve beside them.
    val_split : a split scored beside the training one and checked for
        over-fitting, optional.
    calibrate : also fit the temperature of the marginals (for decisions on
        them); a CRF has its own.
    resume : continue from the checkpoint beside ``out`` when there is one.
    keep_checkpoint : keep the checkpoint of a converged run and the curve of
        its C (the caller drops them once its own records are written);
        otherwise both go once the model is saved.
    curve_identity : what a saved curve must carry to be reused without a
        checkpoint (``compare``'s cross-validation of all pairs saves them).
    seed : the folds' seed (of C and of the temperature).
    n_jobs : worker processes of the learner's inference and the folds.
    progress : show progress bars.
    say, warn : called with each line of progress and each warning; by
        default progress is not said and a warning is a ``UserWarning``.

    Returns
    -------
    SegmentationModel, as saved (its ``doc`` holds ``C_selection`` with
    ``C = "auto"``, ``temperature_fit`` when calibrated); the fitted learner
    is its ``estimator``.

    Raises
    ------
    DatasetError
        The split cannot teach the class (or hold the folds).
    """
    say = say or _silent
    warn = warn or _warning
    folds = settings.cv()[1] if settings.auto else None
    check_training_set(extractor, split, class_name, folds)
    if extractor.config.detector is not None:
        # a class too small for a detector stops here, before any feature
        extractor.block_detectors(class_name)
    examples = extractor.examples(split, class_name)
    X = [ex.graph for ex in examples]
    Y = [ex.pixel_counts for ex in examples]
    val = None
    if val_split is not None:
        held = extractor.examples(val_split, class_name)
        val = (val_split, [ex.graph for ex in held], [ex.pixel_counts for ex in held])
    curve = None
    if settings.auto:
        curve = _curve(settings, method, class_name, X, Y, out, extractor, split,
                       curve_identity, resume, seed, n_jobs, progress, say)

    def refit(C: float) -> SegmentationModel:
        extra: dict = {} if curve is None else {"C_selection": curve}
        temperature = None
        if calibrate:
            # before the fit: the fold models' held-out scores, not the final model's
            temperature, fit = _temperature(settings, method, C, X, Y, seed, say, warn)
            extra["temperature_fit"] = fit
        if resume and checkpoint_path(out).exists():
            say(f"resuming from {checkpoint_path(out)}")
        return train_model(fresh_estimator(settings, method, C, n_jobs), X, Y, out, extractor,
                           split=split, class_name=class_name, method=method,
                           metadata=extra, progress=progress, resume=resume,
                           keep_checkpoint=keep_checkpoint, val=val, temperature=temperature)

    if curve is None:
        return refit(float(settings.C))
    trained = refit_chosen_C(refit, curve, out, warn)
    if not keep_checkpoint and not checkpoint_path(out).exists():
        curve_path(out).unlink(missing_ok=True)     # in the model now: nothing to resume
    return trained


def _silent(text: str) -> None:
    """The default ``say``: a library call says nothing of its progress."""


def _warning(text: str) -> None:
    """The default ``warn``: a ``UserWarning``, which the caller may filter."""
    warnings.warn(text, UserWarning, stacklevel=3)
