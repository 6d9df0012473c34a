"""``segstruct train``: train a structural SVM for one class and save the model."""
from __future__ import annotations

import sys
from pathlib import Path

from segstruct.cli.common import (UsageError, add_scheduler_option, open_dataset, show_progress,
                                  voc_class)
from segstruct.cli.c_options import fit_split
from segstruct.cli.resume import resume_error
from segstruct.cli.settings import (add_training_options, check_resume, first_estimator,
                                    make_extractor, training_settings)
from segstruct.datasets.voc import SPLIT_DIR
from segstruct.ensemble import default_members
from segstruct.io.checkpoint import CheckpointError
from segstruct.io.provenance import code_version
from segstruct.learn.methods import METHOD_HELP, METHODS, fold_tol_text
from segstruct.report.tables import fmt

HELP = "train a structural SVM for one class and save the model"
FEATURES = True


def add_arguments(p) -> None:
    add_scheduler_option(p)
    g = p.add_argument_group("training")
    g.add_argument("--class", dest="class_name", required=True, type=voc_class,
                   metavar="CLASS",
                   help="VOC class name to segment")
    g.add_argument("--method", choices=sorted(METHODS), default="bl1",
                   help=f"{METHOD_HELP} (default %(default)s)")
    add_training_options(g)
    g.add_argument("--split", default="train", help="training split (default %(default)s)")
    g.add_argument("--split-val", default=None, metavar="SPLIT",
                   help="validation split, scored beside the training split and checked for "
                        "over-fitting; 'none' scores no other split (default: val, when the "
                        "data has it)")
    g.add_argument("--out", required=True, type=Path, metavar="MODEL",
                   help="writes MODEL.json, MODEL.npz and MODEL.log.json; while training, "
                        "MODEL.ckpt.npz after every iteration")
    g.add_argument("--calibrate", action="store_true",
                   help="also fit the temperature of the model's marginals (scores / T) "
                        "by held-out likelihood on --folds folds of the training split "
                        "(one more fit per fold), so that predict --decision can use "
                        "them; a crf model has its own (T = 1)")
    g.add_argument("--resume", action="store_true",
                   help="continue an interrupted run from MODEL.ckpt.npz (same data and "
                        "options; --max-iter may be raised)")
    g.add_argument("--force", action="store_true",
                   help="replace an existing model at --out (refused otherwise)")


def _val_split(args, dataset) -> str | None:
    """train's validation split: --split-val, else "val" when the data has one
    (never the training split itself); None for none."""
    if args.split_val is None:
        return "val" if "val" in dataset.splits() and args.split != "val" else None
    if args.split_val == "none":
        return None
    if args.split_val == args.split:
        raise UsageError(f"--split-val {args.split_val} is the training split: give another "
                         "split, or 'none'")
    if args.split_val not in dataset.splits():
        raise UsageError(f"--split-val {args.split_val}: {dataset.root} has no such split "
                         f"(it has {', '.join(dataset.splits())}); give one of those, or 'none'")
    return args.split_val


def _no_val_note(args, dataset) -> str | None:
    """The line that says why no validation split was scored by default (the
    data has no val split, or trains on it), and how to get one; None when
    one was scored or --split-val was given."""
    if args.split_val is not None:
        return None
    later = f"or score the model later with `segstruct evaluate --model {args.out} --split SPLIT`"
    if "val" not in dataset.splits():
        return (f"note: {dataset.root} has no val split "
                f"({SPLIT_DIR / 'val.txt'} is missing), so val IoU is not measured; "
                f"add that file listing held-out images, give --split-val SPLIT, {later}")
    if args.split == "val":
        return (f"note: the training split is val, so no other split is scored; give "
                f"--split-val SPLIT, {later}")
    return None


def _draw_curve(args, settings, dataset, curve: dict) -> None:
    """The curve next to the model (``MODEL.cv.png``, beside ``MODEL.cv.json``),
    drawn after the refit, so that it marks the C of the saved model (and any
    refused one)."""
    from segstruct.report.figures import cv_figure, save_figure
    from segstruct.workflow import curve_path
    caption = (f"data {dataset.name}/{args.split}; class {args.class_name}; method "
               f"{args.method}; {curve['folds']} folds of the training split, seed "
               f"{args.seed}; scope {settings.scope}, node weights {settings.node_weights}, "
               f"tol {settings.tol:g} (the folds' fits: "
               f"{fold_tol_text({'cv_tol': settings.cv_tol, 'tol': settings.tol})}); code "
               f"{code_version()}")
    path = save_figure(cv_figure({args.method: curve}, caption=caption),
                       curve_path(args.out).with_suffix(".png"))
    print(f"wrote {path}")


def _warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr)


def _train(args, settings, dataset, extractor, val_split):
    """The library's workflow with the options' values; a checkpoint of
    other settings refused by ``--resume`` is said in options."""
    from segstruct.io.persistence import checkpoint_path
    from segstruct.workflow import train
    try:
        return train(extractor, args.split, args.class_name, args.method, settings, args.out,
                     val_split=val_split, calibrate=args.calibrate, resume=args.resume,
                     seed=args.seed, n_jobs=args.n_jobs, progress=show_progress(args),
                     say=print, warn=_warn)
    except CheckpointError as err:
        # in the options the user gave, not the library's names
        message = resume_error(err, checkpoint_path(args.out))
        if message is None:
            raise
        raise UsageError(message) from None


def _check_files(args) -> None:
    """Refuse to overwrite a model, or to start over an unfinished run."""
    from segstruct.io.persistence import checkpoint_path, model_paths
    checkpoint = checkpoint_path(args.out)
    if checkpoint.exists() and not args.resume:
        raise UsageError(f"{checkpoint} holds an unfinished training run: add --resume to "
                         "continue it (raise --max-iter if it stopped there), or delete it "
                         "to start again")
    model_file = model_paths(args.out)[0]
    if model_file.exists() and not args.force and not (args.resume and checkpoint.exists()):
        raise UsageError(f"{model_file} exists: add --force to replace that model, or give "
                         "another --out")


def _report(args, dataset, trained, val_split) -> None:
    """What the run did: convergence, the scores, notes and warnings."""
    from segstruct.io.persistence import checkpoint_path, log_path, model_paths
    estimator = trained.estimator
    train_score, diagnosis = trained.doc["train_score"], trained.doc["diagnosis"]
    val_score = trained.doc.get("val_score")
    status = "converged" if estimator.converged_ else "stopped at --max-iter"
    print(f"{args.method} on {dataset.name}/{args.split}, class {args.class_name}: "
          f"{status} after {estimator.n_iter_} iterations in {estimator.fit_seconds_:.1f} s; "
          f"primal {estimator.primal_:.6g}, dual {estimator.dual_:.6g}, "
          f"gap {estimator.gap_:.3g}; {estimator.loss_!r}")
    scores = f"VOC IoU {fmt(train_score['voc_iou_percent'], '.2f')} % on {args.split}"
    if val_score is not None:
        scores += f", {fmt(val_score['voc_iou_percent'], '.2f')} % on {val_split}"
    members = default_members(trained.config)
    if members > 1:                 # what evaluate reports by default differs
        scores += (" (the model's graph cut, as evaluate --ensemble 1; predict and "
                   f"evaluate label with {members} members by default)")
    print(scores)
    if (no_val := _no_val_note(args, dataset)) is not None:
        print(no_val)
    for warning in diagnosis["warnings"]:
        _warn(warning)
    print(f"wrote {model_paths(trained.path)[0]} (+ .npz) and {log_path(trained.path)}")
    checkpoint = checkpoint_path(args.out)
    if checkpoint.exists():
        print(f"kept {checkpoint}: rerun with --resume and a higher --max-iter to continue")


def execute(args) -> int:
    from segstruct.io.persistence import checkpoint_path
    _check_files(args)
    # every option is checked before any feature is computed
    settings = training_settings(args, [args.method])
    check_resume(args, first_estimator(settings, args.method, args.n_jobs, args))
    if args.calibrate and args.method == "crf":
        raise UsageError("--calibrate: a crf model's scores are its log-probabilities "
                         "(temperature 1); calibrate the SSVM methods only")
    if args.resume and not checkpoint_path(args.out).exists():
        print(f"no checkpoint at {checkpoint_path(args.out)}: training from the start",
              file=sys.stderr)
    dataset = open_dataset(args)
    settings = fit_split(settings, args.C is not None, dataset, args.split)
    val_split = _val_split(args, dataset)
    trained = _train(args, settings, dataset, make_extractor(args, dataset), val_split)
    curve = trained.doc.get("C_selection")
    if curve is not None:
        _draw_curve(args, settings, dataset, curve)
    _report(args, dataset, trained, val_split)
    return 0
