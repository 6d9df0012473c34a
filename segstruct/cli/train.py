"""``segstruct train``: train a structural SVM for one class and save the model."""
from __future__ import annotations

import sys
from pathlib import Path

from segstruct.cli.common import (UsageError, add_scheduler_option, open_dataset, show_progress,
                                  voc_class)
from segstruct.cli.c_options import check_cv_size, fold_tol
from segstruct.cli.resume import resume_error
from segstruct.cli.settings import (add_training_options, check_resume, checked,
                                    make_estimator, make_extractor, train_estimator)
from segstruct.datasets.voc import SPLIT_DIR
from segstruct.ensemble import default_runs
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


def _cv_figure_path(model) -> Path:
    """Where ``train --C auto`` draws its curve: ``MODEL.cv.png`` (beside
    ``MODEL.cv.json``, :func:`segstruct.workflow.curve_path`)."""
    from segstruct.workflow import curve_path
    return curve_path(model).with_suffix(".png")


def _curve_to_resume(args, checkpoint: Path) -> dict | None:
    """The cross-validation curve an interrupted ``--C auto`` refit was made
    with (its checkpoint's C), when ``--resume`` continues that refit: the
    cross-validation is not run again (with other --max-iter it could choose
    another C than the checkpoint's)."""
    from segstruct.workflow import curve_path, resumable_curve
    if not args.resume:
        return None
    grid, folds = args.cv
    curve = resumable_curve(args.out, grid, folds, fold_tol=fold_tol(args))
    if curve is not None:
        print(f"resuming the refit at C {curve['chosen_C']:g}, chosen by the cross-validation "
              f"of the interrupted run ({curve_path(args.out)})")
    return curve


def _choose_C_for_train(args, dataset, X, Y) -> dict:
    """Cross-validate C on the training split and print the curve; returns
    the curve (with ``chosen_C``)."""
    from segstruct.learn.selection import format_curve, select_C
    grid, folds = args.cv
    # the folds' estimators: same method and options, no log, checkpoint nor bar
    # of their own (the cross-validation has one)
    chosen, curve = select_C(lambda: make_estimator(args), X, Y, grid,
                             folds, args.seed, show_progress(args), args.n_jobs,
                             fold_tol=fold_tol(args))
    print(f"C chosen by {folds}-fold cross-validation on {dataset.name}/{args.split} "
          f"({args.method}, {args.class_name}): {chosen:g} (pooled held-out VOC IoU, "
          f"{curve['seconds']:.1f} s)")
    print("\n".join(format_curve(curve)))
    return curve


def _draw_curve(args, dataset, curve: dict) -> None:
    """The curve next to the model (``MODEL.cv.png``), drawn after the refit,
    so that it marks the C of the saved model (and any refused one)."""
    from segstruct.report.figures import cv_figure, save_figure
    caption = (f"data {dataset.name}/{args.split}; class {args.class_name}; method "
               f"{args.method}; {curve['folds']} folds of the training split, seed "
               f"{args.seed}; scope {args.scope}, node weights {args.node_weights}, tol "
               f"{args.tol:g} (the folds' fits: "
               f"{fold_tol_text({'cv_tol': fold_tol(args), 'tol': args.tol})}); code "
               f"{code_version()}")
    path = save_figure(cv_figure({args.method: curve}, caption=caption),
                       _cv_figure_path(args.out))
    print(f"wrote {path}")


def _calibrate(args, estimator, X, Y) -> tuple[float, dict]:
    """--calibrate: the temperature of the marginals, by held-out likelihood."""
    from segstruct.decisions import fit_temperature
    from segstruct.learn.selection import DEFAULT_FOLDS
    folds = args.folds or DEFAULT_FOLDS
    print(f"fitting the temperature of the marginals on {folds} folds of {args.split}",
          file=sys.stderr)
    params = estimator.get_params(deep=False)
    T, fit = fit_temperature(lambda: type(estimator)(**params), X, Y, folds=folds,
                             seed=args.seed)
    print(f"temperature {T:.3g} ({fit['seconds']:.1f} s)", file=sys.stderr)
    return T, fit


def _fit_or_refit(refit, C: float, curve: dict | None, out, checkpoint):
    """The saved model: ``refit(C)``, or with a cross-validation ``curve``
    at its chosen C (the next where a refit labels nothing). A checkpoint of
    other settings refused by ``--resume`` is said in options."""
    from segstruct.workflow import refit_chosen_C
    try:
        if curve is None:
            return refit(C)
        return refit_chosen_C(refit, curve, out,
                              lambda text: print(f"warning: {text}", file=sys.stderr))
    except CheckpointError as err:
        # in the options the user gave, not the library's names
        message = resume_error(err, checkpoint)
        if message is None:
            raise
        raise UsageError(message) from None


def run(args) -> int:
    from segstruct.io.persistence import checkpoint_path, log_path, model_paths
    from segstruct.workflow import check_training_set, curve_path, train_model
    checkpoint = checkpoint_path(args.out)
    if checkpoint.exists() and not args.resume:
        raise UsageError(f"{checkpoint} holds an unfinished training run: add --resume to "
                         "continue it (raise --max-iter if it stopped there), or delete it "
                         "to start again")
    model_file = model_paths(args.out)[0]
    if model_file.exists() and not args.force and not (args.resume and checkpoint.exists()):
        raise UsageError(f"{model_file} exists: add --force to replace that model, or give "
                         "another --out")
    # every option is checked before any feature is computed
    estimator = checked(train_estimator(args), args)
    check_resume(args, estimator)
    if args.calibrate and args.method == "crf":
        raise UsageError("--calibrate: a crf model's scores are its log-probabilities "
                         "(temperature 1); calibrate the SSVM methods only")
    if args.resume and not checkpoint.exists():
        print(f"no checkpoint at {checkpoint}: training from the start", file=sys.stderr)
    dataset = open_dataset(args)
    if check_cv_size(args, dataset, args.split):
        estimator = checked(make_estimator(args), args)  # at the fixed C it fell back to
    val_split = _val_split(args, dataset)
    extractor = make_extractor(args, dataset)
    check_training_set(extractor, args.split, args.class_name,
                       args.cv[1] if args.cv is not None else None)
    if extractor.config.detector is not None:
        # a class too small for a detector stops here, before any feature
        extractor.block_detectors(args.class_name)
    examples = extractor.examples(args.split, args.class_name)
    X = [ex.graph for ex in examples]
    Y = [ex.pixel_counts for ex in examples]
    val = None
    if val_split is not None:
        held = extractor.examples(val_split, args.class_name)
        val = (val_split, [ex.graph for ex in held], [ex.pixel_counts for ex in held])
    curve = None
    if args.cv is not None:
        curve = _curve_to_resume(args, checkpoint) or _choose_C_for_train(args, dataset, X, Y)

    def refit(C: float):
        """The saved model at ``C``: all of the split (and its temperature)."""
        estimator.C = C
        extra = {} if curve is None else {"C_selection": curve}
        temperature = None
        if args.calibrate:
            temperature, fit = _calibrate(args, estimator, X, Y)
            extra = {**extra, "temperature_fit": fit}
        return train_model(estimator, X, Y, args.out, extractor, split=args.split,
                           class_name=args.class_name, method=args.method, metadata=extra,
                           progress=show_progress(args), resume=args.resume, val=val,
                           temperature=temperature)

    trained = _fit_or_refit(refit, estimator.C, curve, args.out, checkpoint)
    if curve is not None:
        _draw_curve(args, dataset, curve)
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
    runs = default_runs(trained.config)
    if runs > 1:                 # what evaluate reports by default differs
        scores += (" (the model's graph cut, as evaluate --ensemble 1; predict and "
                   f"evaluate label with {runs} runs by default)")
    print(scores)
    if (no_val := _no_val_note(args, dataset)) is not None:
        print(no_val)
    for warning in diagnosis["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {model_paths(trained.path)[0]} (+ .npz) and {log_path(trained.path)}")
    if args.cv is not None and not checkpoint.exists():
        curve_path(args.out).unlink(missing_ok=True)    # in the model now
    if checkpoint.exists():
        print(f"kept {checkpoint}: rerun with --resume and a higher --max-iter to continue")
    return 0

