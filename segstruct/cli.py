"""The ``segstruct`` command line.

Subcommands: ``inspect`` (check a data root and summarise it per split and
class, with the oracle IoU) and ``features`` (extract and cache superpixel
features). Training, evaluation and comparison plug in as further
subcommands through ``_SUBCOMMANDS``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from segstruct.datasets import DatasetError, VOCDataset, default_synthetic_root, make_synthetic_voc
from segstruct.features.cache import ArrayCache
from segstruct.features.descriptors import SIFT_NORMS, TOP_DOWN_DETECTORS, FeatureConfig
from segstruct.features.topdown.detector import DetectorParams
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.superpixels import SuperpixelParams
from segstruct.inference.proposed import INFERENCE_CHOICES
from segstruct.cluster import DASK_EXTRA, use_scheduler
from segstruct.io.files import write_json
from segstruct.io.provenance import code_version
from segstruct.learn.methods import (DEFAULTS, METHOD_HELP, METHODS, SINGLE_RUN_METHODS,
                                     SINGLE_RUN_SOLVERS, with_workers)
from segstruct.learn.base import POSITIVE, Options, check_param
from segstruct.learn.fenchel_young import SETS
from segstruct.learn.selection import DEFAULT_FOLDS, DEFAULT_GRID
from segstruct.learn.ssvm import C_UNITS, NODE_WEIGHT_MODES, SCOPES, SOLVERS


class UsageError(Exception):
    """Conflicting or invalid command-line options."""


# --------------------------------------------------------------------------
# Shared options


def _add_data_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--data", metavar="ROOT", type=Path,
                   help="VOC-layout data root (JPEGImages/, SegmentationClass/, "
                        "ImageSets/Segmentation/) (default: a generated data set, "
                        "written once under the cache folder)")
    g.add_argument("--cache", metavar="DIR", type=Path,
                   help="feature cache folder (default: $SEGSTRUCT_CACHE or ~/.cache/segstruct)")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    g.add_argument("-j", "--n-jobs", type=int, default=-1,
                   help="worker processes, -1 = every core (-2 all but one ...): feature "
                        "extraction and detector training, and for train and compare also "
                        "the folds of --C auto and, with --scope image, the loss-augmented "
                        "inference over the images; 1 runs everything in this process "
                        "(default %(default)s, every core)")
    out = g.add_mutually_exclusive_group()
    out.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    out.add_argument("--progress", action="store_true",
                     help="progress bars even when stderr is not a terminal (by default "
                          "they are shown only on a terminal, so logs stay small)")


def show_progress(args) -> bool:
    """Progress bars: with --progress, or when stderr is a terminal and not -q.

    A bar redrawn into a log file writes every update (measured: 117 KB for
    one comparison), so non-terminals get none unless asked.
    """
    return bool(args.progress or (not args.quiet and sys.stderr.isatty()))


def _add_feature_options(p: argparse.ArgumentParser) -> None:
    d = FeatureConfig()
    s = d.superpixels
    g = p.add_argument_group("superpixels and features")
    g.add_argument("--superpixels", choices=("felzenszwalb", "slic"), default=s.method,
                   help="over-segmentation: Felzenszwalb's graph-based method (the "
                        "paper's) or SLIC (default %(default)s)")
    g.add_argument("--fz-scale", type=float, default=s.scale,
                   help="Felzenszwalb k; larger gives larger superpixels (default "
                        "%(default)s, the paper's)")
    g.add_argument("--fz-sigma", type=float, default=s.sigma,
                   help="Felzenszwalb Gaussian pre-smoothing, pixels (default %(default)s, "
                        "the paper's)")
    g.add_argument("--fz-min-size", type=int, default=s.min_size,
                   help="Felzenszwalb minimum superpixel area, pixels (default "
                        "%(default)s, the paper's)")
    g.add_argument("--slic-segments", type=int, default=s.n_segments,
                   help="SLIC: target number of superpixels per image (with "
                        "--superpixels slic; default %(default)s)")
    g.add_argument("--slic-compactness", type=float, default=s.compactness,
                   help="SLIC: colour/space trade-off, larger gives more compact "
                        "superpixels (with --superpixels slic; default %(default)s)")
    g.add_argument("--words", type=int, default=d.n_words,
                   help="codebook size: visual words of the SIFT bag of words (default "
                        "%(default)s, the paper's)")
    g.add_argument("--codebook-descriptors", type=int, default=d.codebook_descriptors,
                   help="descriptors sampled from the training split for the codebook's "
                        "k-means (default %(default)s)")
    g.add_argument("--codebook-split", default=None,
                   help="split the codebook and each class's detector (top-down "
                        "block) are learnt on (training data only; default: the "
                        "training split)")
    for block in ("sift", "colour", "position", "bias"):
        g.add_argument(f"--no-{block}", action="store_true",
                       help=f"switch the {block} unary block off")
    g.add_argument("--no-top-down", action="store_true",
                   help="switch the top-down unary block off. It is on by default: per "
                        "class, an object detector (HOG root and part filters) trained on "
                        "the training split, and per superpixel the object shapes its "
                        "detections vote for (the paper's Sec. 5); trained once per class "
                        "and cached")
    # the switch of the days the block was off by default, kept so that
    # recorded commands still run
    g.add_argument("--top-down", action="store_true",
                   help="the top-down block on (the default; contradicts --no-top-down)")
    g.add_argument("--top-down-folds", type=int, default=d.top_down_folds, metavar="K",
                   help="the top-down block of each training image comes from a detector "
                        "trained on the other K - 1 folds of the training split (cross-"
                        "fitted, so the learner sees the detector's scores on images it was "
                        "not fitted to, as on new ones); 1: one detector for all, fitted "
                        "to its own training images too (default %(default)s)")
    g.add_argument("--top-down-detector", choices=TOP_DOWN_DETECTORS,
                   default=d.top_down_detector,
                   help="with --top-down-folds 2 or more, the block of other splits and new "
                        "images: the mean of the folds' detectors' blocks (folds), or the "
                        "block of a detector trained on the whole training split (whole) "
                        "(default %(default)s)")
    g.add_argument("--sift-norm", choices=SIFT_NORMS, default=d.sift_norm,
                   help="each superpixel's bag of words: word counts over their sum (l1), "
                        "or its square root (sqrt, Hellinger's) (default %(default)s)")
    g.add_argument("--seed", type=int, default=d.seed,
                   help="random seed of the codebook's descriptor sample and k-means, of "
                        "each class's detector (another seed trains other detectors), and "
                        "of the --C auto folds and the figures' images where the command "
                        "has them (default %(default)s)")


def _check_feature_options(args) -> None:
    """Refuse feature options that the other options make meaningless."""
    d = FeatureConfig()
    s = d.superpixels
    given = lambda name, default: getattr(args, name) != default  # noqa: E731
    if args.superpixels == "slic":
        unused = [f for f, n, v in (("--fz-scale", "fz_scale", s.scale),
                                    ("--fz-sigma", "fz_sigma", s.sigma),
                                    ("--fz-min-size", "fz_min_size", s.min_size)) if given(n, v)]
        if unused:
            raise UsageError(f"{', '.join(unused)} set Felzenszwalb, but --superpixels is slic")
    else:
        unused = [f for f, n, v in (("--slic-segments", "slic_segments", s.n_segments),
                                    ("--slic-compactness", "slic_compactness",
                                     s.compactness)) if given(n, v)]
        if unused:
            raise UsageError(f"{', '.join(unused)} set SLIC, but --superpixels is "
                             f"{args.superpixels}")
    if args.top_down and args.no_top_down:
        raise UsageError("--top-down and --no-top-down contradict each other; give one")
    if args.top_down_folds < 1:
        raise UsageError(f"--top-down-folds must be at least 1, got {args.top_down_folds}")
    for flag, name in (("--top-down-folds", "top_down_folds"),
                       ("--top-down-detector", "top_down_detector")):
        if args.no_top_down and given(name, getattr(d, name)):
            raise UsageError(f"{flag} sets the top-down block, but --no-top-down switches "
                             "it off")
    if args.no_sift:
        # --codebook-split also names the detector's training split
        split_used = not args.no_top_down and args.command != "inspect"
        unused = [f for f, n, v in (("--words", "words", d.n_words),
                                    ("--codebook-descriptors", "codebook_descriptors",
                                     d.codebook_descriptors),
                                    ("--codebook-split", "codebook_split", None))
                  if given(n, v) and not (n == "codebook_split" and split_used)]
        if unused:
            raise UsageError(f"{', '.join(unused)} set the SIFT codebook, but --no-sift "
                             "switches SIFT off")


def _feature_config(args) -> FeatureConfig:
    _check_feature_options(args)
    sp = SuperpixelParams(method=args.superpixels, scale=args.fz_scale, sigma=args.fz_sigma,
                          min_size=args.fz_min_size, n_segments=args.slic_segments,
                          compactness=args.slic_compactness)
    return FeatureConfig(superpixels=sp, sift=not args.no_sift, colour=not args.no_colour,
                         position=not args.no_position, bias=not args.no_bias,
                         n_words=args.words,
                         codebook_descriptors=args.codebook_descriptors, seed=args.seed,
                         sift_norm=args.sift_norm,
                         detector=None if args.no_top_down else DetectorParams(seed=args.seed),
                         top_down_folds=args.top_down_folds,
                         top_down_detector=args.top_down_detector)


def _dataset(args) -> VOCDataset:
    if args.data is None:
        root = default_synthetic_root()
        if not args.quiet:
            print(f"no --data given: using the generated data set at {root}", file=sys.stderr)
        make_synthetic_voc(root)
        return VOCDataset(root)
    return VOCDataset(args.data)


def _extractor(args, dataset, config=None, codebook=None, detectors=None) -> FeatureExtractor:
    """Features as the options say, or as a saved model's ``config``,
    ``codebook`` and ``detectors`` say (evaluation must see the features it
    was trained on)."""
    if args.no_cache and args.cache is not None:
        raise UsageError("--no-cache and --cache contradict each other; give one")
    if args.n_jobs == 0:
        raise UsageError("--n-jobs must be a positive number or -1")
    cache = ArrayCache(args.cache, enabled=not args.no_cache)
    if config is None:
        return FeatureExtractor(dataset, _feature_config(args), cache, n_jobs=args.n_jobs,
                                progress=show_progress(args),
                                codebook_split=_codebook_split(args))
    return FeatureExtractor(dataset, config, cache, n_jobs=args.n_jobs,
                            progress=show_progress(args), codebook=codebook,
                            detectors=detectors, from_model=True)


def _model_detectors(models) -> dict:
    """{class: [ShapeDetector, ...]} of SegmentationModels with a top-down block
    (models of one class must share their detectors)."""
    from segstruct.features.detection import detectors_digest
    found = {}
    for m in models:
        if m.detectors is None:
            continue
        if m.class_name in found and \
                detectors_digest(found[m.class_name]) != detectors_digest(m.detectors):
            raise UsageError(f"{', '.join(str(x.path) for x in models)} have different "
                             f"{m.class_name} detectors: draw them in separate figures")
        found[m.class_name] = m.detectors
    return found


def _load_models(paths) -> list:
    """The SegmentationModels of ``paths`` (each once)."""
    from segstruct.segmentation_model import SegmentationModel
    if len(set(paths)) < len(paths):
        raise UsageError("a --model is given twice")
    return [SegmentationModel.load(path) for path in paths]


def _codebook_split(args) -> str:
    """The codebook is learnt on training data: --codebook-split, else the training split."""
    given = getattr(args, "codebook_split", None)
    training = getattr(args, "split_train", None) or (
        args.split if args.command == "train" else "train")
    return given or training


def _refuse_overwriting(output, models) -> None:
    """An output file must not be one of the model files the command reads."""
    from segstruct.io.persistence import checkpoint_path, log_path, model_paths
    if output is None:
        return
    out = Path(output).resolve()
    for model in models:
        if out in {q.resolve() for q in (*model_paths(model), log_path(model),
                                         checkpoint_path(model))}:
            raise UsageError(f"{output} is a file of model {model}: writing there would "
                             "destroy it; give another output path")


def _check_model_data(args, dataset: VOCDataset, paths, docs) -> None:
    """Refuse to score or draw a model on data other than its training data
    (without --data that is the generated set) unless --other-data asks to."""
    if args.other_data:
        return
    for path, doc in zip(paths, docs):
        root = doc.get("data_root")
        if root is None or Path(root).expanduser().resolve() == dataset.root:
            continue
        given = (f"--data {args.data}" if args.data is not None else
                 "no --data was given, so the generated data set")
        raise UsageError(f"{path} was trained on {doc.get('dataset')} ({root}), but {given} "
                         f"is another data set: give --data {root}, or add --other-data to "
                         "use these data all the same")


def _class_models(paths) -> tuple[list, dict]:
    """Saved models (SegmentationModels) to label images together, checked,
    and their detectors by class."""
    from segstruct.predict import check_models
    models = _load_models(paths)
    try:
        check_models(models)
    except ValueError as err:
        raise UsageError(str(err)) from None
    return models, _model_detectors(models)


def _provenance(dataset: VOCDataset, extractor: FeatureExtractor) -> dict:
    return {"dataset": dataset.name, "data_root": str(dataset.root),
            "features": extractor.config.to_dict(), "code_version": code_version()}


# --------------------------------------------------------------------------
# inspect


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def _print_inspection(report: dict) -> None:
    print(f"data set {report['dataset']} ({report['data_root']}), code {code_version()}")
    header = (f"{'split':<10} {'class':<12} {'images':>6} {'with':>6} {'fg px %':>8} "
              f"{'void %':>7} {'sp/img':>7} {'fg sp':>6} {'bg sp':>6} {'kappa':>7} "
              f"{'oracle IoU %':>12}")
    print(header)
    print("-" * len(header))
    for split, per_class in report["splits"].items():
        for name, s in per_class.items():
            sp = s["superpixels_per_image"]
            print(f"{split:<10} {name:<12} {s['images']:>6} {s['images_with_class']:>6} "
                  f"{100 * s['foreground_pixel_share']:>8.2f} {100 * s['void_pixel_share']:>7.2f} "
                  f"{sp['mean']:>7.1f} {s['foreground_superpixels']:>6} "
                  f"{s['background_superpixels']:>6} "
                  f"{_fmt(s['kappa_fg_bg_superpixel_ratio'], '7.4f'):>7} "
                  f"{_fmt(s['oracle_voc_iou_percent'], '12.2f'):>12}")
    if report["problems"]:
        print(f"\n{len(report['problems'])} problem(s):")
        for msg in report["problems"]:
            print(f"  - {msg}")
    else:
        print("\nno problems found")


def inspect_report(args) -> dict:
    """The inspect workflow on parsed ``segstruct inspect`` options: the data
    root and features they name, checked and summarised per split and class.

    Returns the report ``--json`` writes: provenance (data set, features, code
    version), then ``inspect_dataset``'s "splits" and "problems". Scripts that
    inspect several data sets call this with ``build_parser().parse_args(
    ["inspect", ...])``, so they and the command share one workflow.
    """
    from segstruct.evaluate.inspection import inspect_dataset
    dataset = _dataset(args)
    extractor = _extractor(args, dataset)
    return {**_provenance(dataset, extractor),
            **inspect_dataset(extractor, args.split, args.class_names)}


def cmd_inspect(args) -> int:
    report = inspect_report(args)
    _print_inspection(report)
    if args.json:
        write_json(args.json, report)
        print(f"wrote {args.json}")
    return 1 if report["problems"] else 0


# --------------------------------------------------------------------------
# features


def cmd_features(args) -> int:
    if args.top_down and not args.class_name:
        raise UsageError("--top-down features are per class: give --class")
    if not args.class_name and not args.no_top_down:
        # the bottom-up blocks are shared by every class; the top-down one is not
        args.no_top_down = True
        if not args.quiet:
            print("no --class given: bottom-up features only (the top-down block is per "
                  "class)", file=sys.stderr)
    dataset = _dataset(args)
    extractor = _extractor(args, dataset)
    start = time.perf_counter()
    for split in args.split or ["train"]:
        if args.class_name:
            examples = extractor.examples(split, args.class_name)
            graphs = [ex.graph for ex in examples]
            fg_sp = sum(int(ex.targets[~ex.void_only].sum()) for ex in examples)
            extra = f", {fg_sp} {args.class_name} superpixels"
        else:
            graphs = extractor.graphs(split)
            extra = ""
        n_nodes = sum(g.n_nodes for g in graphs)
        n_edges = sum(len(g.edges) for g in graphs)
        dim = graphs[0].unary.shape[1] if graphs else 0
        print(f"{dataset.name}/{split}: {len(graphs)} images, {n_nodes} superpixels, "
              f"{n_edges} edges, unary dim {dim}, pairwise dim 3{extra}")
    where = "disabled" if not extractor.cache.enabled else extractor.cache.directory
    print(f"done in {time.perf_counter() - start:.1f} s; cache: {where}")
    return 0


# --------------------------------------------------------------------------
# train / evaluate

def _check_loss_options(args, methods) -> None:
    """Refuse options that the chosen loss or methods would silently ignore,
    then fill in the defaults of the proposed method's options."""
    if args.loss_given and all(METHODS[m]["loss"] is not None for m in methods):
        raise UsageError(f"--loss does not apply to {', '.join(methods)}: their losses are "
                         "fixed (it sets the loss of bl2, proposed and exact)")
    if args.beta is not None and args.loss != "fbeta":
        raise UsageError(f"--beta applies only to --loss fbeta (the loss is {args.loss})")
    if args.beta is not None and not args.beta > 0:
        raise UsageError(f"--beta must be positive, got {args.beta}")
    if "proposed" not in methods:
        for flag, value in (("--triangles", args.triangles), ("--inference", args.inference),
                            ("--no-polish", args.no_polish or None)):
            if value is not None:
                raise UsageError(f"{flag} applies only to the proposed method")
    if args.inference is None:
        args.inference = DEFAULTS.inference
    if args.triangles is not None and args.inference == "envelope":
        raise UsageError("--triangles applies to --inference decomposition or lp; the "
                         "envelope inference (the default) uses no triangles")
    if args.triangles is None:
        args.triangles = DEFAULTS.n_triangles


def _check_solver_options(args, methods) -> None:
    """Refuse a --solver or --projection-set that the methods rule out (the
    estimators refuse what their own settings rule out: check_params)."""
    if args.solver != DEFAULTS.solver and all(
            args.solver not in SINGLE_RUN_SOLVERS.get(m, SOLVERS) for m in methods):
        raise UsageError(f"--solver {args.solver} does not apply to {' and '.join(methods)}: "
                         "lovasz trains by 1-slack cutting planes (oneslack) or sgd, "
                         "projection by L-BFGS-B")
    if args.projection_set != DEFAULTS.projection_set and "projection" not in methods:
        raise UsageError(f"--projection-set {args.projection_set} applies to the projection "
                         f"method only, which {' and '.join(methods)} "
                         f"{'is' if len(methods) == 1 else 'are'} not")


def _checked(estimator):
    """``estimator`` after its own checks (check_params), as usage errors."""
    try:
        estimator.check_params()
    except ValueError as err:
        raise UsageError(str(err)) from err
    return estimator


def _check_resume(args, estimator) -> None:
    """Refuse --resume for a learner that keeps no checkpoint (``resumable``)."""
    if args.resume and not estimator.resumable:
        what = (f"the {args.method} method" if args.method in SINGLE_RUN_METHODS
                else f"--solver {args.solver}")
        raise UsageError(f"--resume: {what} keeps no checkpoint to continue from; train "
                         "without --resume (from the start)")


def _check_C_options(args) -> None:
    """Read ``--C`` (a number or "auto") and its cross-validation options.

    Sets ``args.C`` to a float or "auto" and ``args.cv`` to ``(grid, folds)``
    with ``--C auto`` (defaults filled in), else None.

    Raises
    ------
    UsageError
        ``--C`` neither a number nor "auto"; a bad grid or fold count;
        ``--C-grid`` / ``--folds`` without ``--C auto``.
    ValueError
        A number that is not positive and finite (as the estimator's own
        check has always done: exit status 2 without the usage text).
    """
    from segstruct.learn.selection import check_folds, check_grid
    args.C = _parse_C(args.C)
    if args.C != "auto":
        check_param("--C", args.C, [POSITIVE, Options("auto")])
        given = [flag for flag, value in (("--C-grid", args.C_grid), ("--folds", args.folds))
                 if value is not None]
        if given:
            raise UsageError(f"{' and '.join(given)} appl{'ies' if len(given) == 1 else 'y'} "
                             f"only to --C auto (C is {args.C:g}); add --C auto to choose C "
                             "by cross-validation")
        args.cv = None
        return
    try:
        grid = check_grid(DEFAULT_GRID if args.C_grid is None else args.C_grid)
        folds = check_folds(DEFAULT_FOLDS if args.folds is None else args.folds)
    except ValueError as err:
        raise UsageError(f"--C auto: {err}") from err
    args.cv = (grid, folds)


def _parse_C(value):
    """A float, or "auto"; anything else is a UsageError."""
    if isinstance(value, float) or value == "auto":
        return value
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"--C must be a positive number or 'auto', got {value!r}") from None


def _check_cv_size(args, dataset, split) -> None:
    """With --C auto, refuse (before any feature) a split with fewer images than folds."""
    if args.cv is None:
        return
    n_images = len(dataset.ids(split))
    if n_images < args.cv[1]:
        raise UsageError(f"--C auto: split {split!r} has {n_images} training image(s), fewer "
                         f"than the {args.cv[1]} folds; give fewer --folds or a fixed --C")


def _settings(args):
    """The training options as a ``TrainingSettings``, checked (UsageError)."""
    from segstruct.learn.methods import TrainingSettings
    grid, folds = args.cv or (None, None)
    return TrainingSettings(loss=args.loss, beta=args.beta or DEFAULTS.beta,
                            scope=args.scope, C=args.C, C_units=args.C_units,
                            node_weights=args.node_weights,
                            n_triangles=args.triangles, inference=args.inference,
                            polish=not args.no_polish, solver=args.solver, tol=args.tol,
                            max_iter=args.max_iter, C_grid=grid, folds=folds,
                            projection_set=args.projection_set)


def _estimator(args):
    """The StructuredSVM of ``--method`` and the training options.

    With ``--C auto`` its C is the grid's first value until the
    cross-validation has chosen one.
    """
    _check_loss_options(args, [args.method])
    _check_solver_options(args, [args.method])
    _check_C_options(args)
    return _make_estimator(args)


def _make_estimator(args):
    """The estimator of ``--method`` with the checked training options (and
    ``--n-jobs`` inference workers, where the method has them)."""
    C = args.cv[0][0] if args.cv is not None else args.C
    try:
        estimator = _settings(args).estimator(args.method, C=C)
    except ValueError as err:            # e.g. bl2 with area node weights, M < 2
        raise UsageError(str(err)) from err
    return with_workers(estimator, args.n_jobs)


def _cv_figure_path(model) -> Path:
    """Where ``train --C auto`` draws its curve: ``MODEL.cv.png``."""
    from segstruct.io.persistence import model_paths
    json_path, _ = model_paths(model)
    return json_path.with_name(json_path.name[: -len(".json")] + ".cv.png")


def _choose_C_for_train(args, dataset, X, Y) -> dict:
    """Cross-validate C on the training split, print the curve, draw it next to
    the model; returns the curve (with ``chosen_C``)."""
    from segstruct.learn.selection import format_curve, select_C
    from segstruct.report.figures import cv_figure, save_figure
    grid, folds = args.cv
    # the folds' estimators: same method and options, no log, checkpoint nor bar
    # of their own (the cross-validation has one)
    chosen, curve = select_C(lambda: _make_estimator(args), X, Y, grid,
                             folds, args.seed, show_progress(args), args.n_jobs)
    print(f"C chosen by {folds}-fold cross-validation on {dataset.name}/{args.split} "
          f"({args.method}, {args.class_name}): {chosen:g} (pooled held-out VOC IoU, "
          f"{curve['seconds']:.1f} s)")
    print("\n".join(format_curve(curve)))
    caption = (f"data {dataset.name}/{args.split}; class {args.class_name}; method "
               f"{args.method}; {folds} folds of the training split, seed {args.seed}; "
               f"scope {args.scope}, node weights {args.node_weights}, tol {args.tol:g}; "
               f"code {code_version()}")
    path = save_figure(cv_figure({args.method: curve}, caption=caption),
                       _cv_figure_path(args.out))
    print(f"wrote {path}")
    return curve


def cmd_train(args) -> int:
    from segstruct.io.persistence import checkpoint_path, log_path, model_paths
    from segstruct.workflow import check_training_set, train_model
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
    estimator = _checked(_estimator(args))
    _check_resume(args, estimator)
    if args.resume and not checkpoint.exists():
        print(f"no checkpoint at {checkpoint}: training from the start", file=sys.stderr)
    dataset = _dataset(args)
    _check_cv_size(args, dataset, args.split)
    val_split = _val_split(args, dataset)
    extractor = _extractor(args, dataset)
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
    extra = {}
    if args.cv is not None:
        curve = _choose_C_for_train(args, dataset, X, Y)
        estimator.C = curve["chosen_C"]       # the saved model: all of the split at that C
        extra = {"C_selection": curve}
    trained = train_model(estimator, X, Y, args.out, extractor, split=args.split,
                          class_name=args.class_name, method=args.method, metadata=extra,
                          progress=show_progress(args), resume=args.resume, val=val)
    train_score, diagnosis = trained.doc["train_score"], trained.doc["diagnosis"]
    val_score = trained.doc.get("val_score")
    status = "converged" if estimator.converged_ else "stopped at --max-iter"
    print(f"{args.method} on {dataset.name}/{args.split}, class {args.class_name}: "
          f"{status} after {estimator.n_iter_} iterations in {estimator.fit_seconds_:.1f} s; "
          f"primal {estimator.primal_:.6g}, dual {estimator.dual_:.6g}, "
          f"gap {estimator.gap_:.3g}; {estimator.loss_!r}")
    scores = f"VOC IoU {_fmt(train_score['voc_iou_percent'], '.2f')} % on {args.split}"
    if val_score is not None:
        scores += f", {_fmt(val_score['voc_iou_percent'], '.2f')} % on {val_split}"
    print(scores)
    for warning in diagnosis["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {model_paths(trained.path)[0]} (+ .npz) and {log_path(trained.path)}")
    if checkpoint.exists():
        print(f"kept {checkpoint}: rerun with --resume and a higher --max-iter to continue")
    return 0


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


def cmd_evaluate(args) -> int:
    if args.multiclass:
        return _evaluate_multiclass(args)
    if len(args.model) > 1:
        raise UsageError("several --model: add --multiclass to score them together "
                         "(one per class), or evaluate them one at a time")
    args.model = args.model[0]
    _refuse_overwriting(args.json, [args.model])
    model, = _load_models([args.model])
    estimator, doc = model.estimator, model.doc
    dataset = _dataset(args)
    _check_model_data(args, dataset, [args.model], [doc])
    extractor = _extractor(args, dataset, model.config, model.codebook,
                           _model_detectors([model]))
    examples = extractor.examples(args.split, doc["class"])
    voc = estimator.voc_score([ex.graph for ex in examples], [ex.pixel_counts for ex in examples])
    score = voc.to_dict()
    print(f"{doc['method']} model {args.model} ({doc['class']}, trained on "
          f"{doc['dataset']}/{doc['train_split']}) on {dataset.name}/{args.split}: "
          f"VOC IoU {_fmt(score['voc_iou_percent'], '.2f')} % "
          f"(precision {_fmt(score['precision_percent'], '.1f')}, "
          f"recall {_fmt(score['recall_percent'], '.1f')}, "
          f"F1 {_fmt(score['f1_percent'], '.1f')}, "
          f"mean per-image IoU {_fmt(score['mean_image_iou_percent'], '.1f')})")
    if args.json:
        write_json(args.json, {
            "dataset": dataset.name, "data_root": str(dataset.root), "split": args.split,
            "class": doc["class"], "method": doc["method"], "model": str(args.model),
            "estimator": doc["estimator"], "features": doc["features"],
            "model_code_version": doc["code_version"], "code_version": code_version(),
            "score": score,
            # per image, so two models can be compared image by image
            # (scripts/paired_iou.py)
            "per_image": [{"image_id": ex.graph.image_id, "tp": tp, "fp": fp, "fn": fn}
                          for ex, (tp, fp, fn) in zip(examples, voc.per_image)]})
        print(f"wrote {args.json}")
    return 0


def _evaluate_multiclass(args) -> int:
    """evaluate --multiclass: the models' combined labels scored on all 21 labels,
    beside each model scored alone."""
    from segstruct.datasets.voc import VOC_CLASSES
    from segstruct.predict import COMBINATION, multiclass_confusion
    _refuse_overwriting(args.json, args.model)
    models, detectors = _class_models(args.model)
    dataset = _dataset(args)
    _check_model_data(args, dataset, args.model, [m.doc for m in models])
    extractor = _extractor(args, dataset, models[0].config, models[0].codebook, detectors)
    ids = dataset.ids(args.split)
    confusion = multiclass_confusion(models, extractor, ids)
    alone = {}
    for m in models:           # each class model scored alone, as evaluate does
        examples = extractor.examples(args.split, m.class_name)
        alone[m.class_name] = m.estimator.voc_score(
            [ex.graph for ex in examples], [ex.pixel_counts for ex in examples]).to_dict()
    scores = confusion.to_dict()
    print(f"{len(models)} class models on {dataset.name}/{args.split} ({len(ids)} images), "
          "VOC IoU % per label:")
    print("| label | combined | alone |")
    print("|---|---|---|")
    for name in VOC_CLASSES:
        value = scores["iou_percent"][name]
        if value is None and name not in alone:
            continue                          # in neither the masks nor the labels
        single = alone.get(name, {}).get("voc_iou_percent")
        print(f"| {name} | {_fmt(value, '.2f')} | {_fmt(single, '.2f')} |")
    print(f"| **mean** | **{_fmt(scores['mean_iou_percent'], '.2f')}** | |")
    if args.json:
        write_json(args.json, {
            "format": "segstruct-multiclass-evaluation", "dataset": dataset.name,
            "data_root": str(dataset.root), "split": args.split,
            "models": [{"path": str(m.path), "class": m.class_name, "method": m.doc["method"],
                        "code_version": m.doc.get("code_version")} for m in models],
            "combination": COMBINATION,
            "features": models[0].config.to_dict(), "code_version": code_version(),
            "multiclass": scores, "alone": alone})
        print(f"wrote {args.json}")
    return 0


# --------------------------------------------------------------------------
# compare / visualize


def cmd_compare(args) -> int:
    from segstruct.compare import Comparison, classes_in
    if not args.no_figures and args.figure_images < 1 and not args.figure_ids:
        raise UsageError("--figure-images must be at least 1 (or give --no-figures)")
    if args.no_figures and args.figure_ids:
        raise UsageError("--figure-ids and --no-figures contradict each other; give one")
    if args.split_train == args.split_eval:
        raise UsageError(f"--split-train and --split-eval are both {args.split_train!r}: "
                         "the table would score the models on their own training data")
    if _codebook_split(args) == args.split_eval:
        raise UsageError(f"--codebook-split {args.split_eval!r} is the evaluation split: "
                         "the codebook must be learnt on training data only")
    _check_loss_options(args, args.methods)
    _check_solver_options(args, args.methods)
    _check_C_options(args)
    settings = _settings(args)
    for method in args.methods:          # each method's own checks, before any feature
        C = args.cv[0][0] if args.cv is not None else args.C
        _checked(settings.estimator(method, C=C))
    dataset = _dataset(args)
    _check_cv_size(args, dataset, args.split_train)
    extractor = _extractor(args, dataset)
    classes = args.classes or classes_in(dataset, args.split_train)
    # "every class" leaves out a class too small for a detector; a class asked
    # for by name stops the run instead
    comparison = Comparison(extractor, classes, args.methods, _settings(args), args.out,
                            train_split=args.split_train, eval_split=args.split_eval,
                            seed=args.seed, progress=show_progress(args),
                            skip_few_objects=args.classes is None, n_jobs=args.n_jobs)
    start = time.perf_counter()
    comparison.run(figures=not args.no_figures, figure_images=args.figure_images,
                   figure_ids=args.figure_ids, multiclass=args.multiclass)
    print()
    print((args.out / "table.md").read_text())
    if args.multiclass:
        print((args.out / "multiclass.md").read_text())
    print(f"compare finished in {time.perf_counter() - start:.1f} s")
    return 0


def cmd_visualize(args) -> int:
    import numpy as np

    from segstruct.compare import pick_images, save_qualitative
    if args.images and len(set(args.images)) < len(args.images):
        raise UsageError("an image id is given twice in --images")
    if not args.images and args.random < 1:
        raise UsageError("--random must be at least 1")
    _refuse_overwriting(args.out, args.model)
    loaded = _load_models(args.model)
    config, codebook, first = loaded[0].config, loaded[0].codebook, loaded[0].doc
    for path, m in zip(args.model[1:], loaded[1:]):
        if m.class_name != first["class"]:
            raise UsageError(f"{path} segments {m.class_name!r} but {args.model[0]} "
                             f"segments {first['class']!r}; give models of one class")
        same_codebook = (m.codebook is None) == (codebook is None) and (
            m.codebook is None or np.array_equal(m.codebook, codebook))
        if m.config.to_dict() != config.to_dict() or not same_codebook:
            raise UsageError(f"{path} was trained on other features than {args.model[0]}; "
                             "draw them in separate figures")
    names = [m.method for m in loaded]
    if len(set(names)) < len(names):       # e.g. two bl1 models: tell them apart by file
        names = [Path(path).name for path in args.model]
    dataset = _dataset(args)
    _check_model_data(args, dataset, args.model, [m.doc for m in loaded])
    extractor = _extractor(args, dataset, config, codebook, _model_detectors(loaded))
    ids = args.images or pick_images(dataset, args.split, first["class"], args.random,
                                     args.seed)
    missing = sorted(set(ids) - set(dataset.ids(args.split)))
    if missing:
        raise DatasetError(f"image id(s) {', '.join(missing)} are not in split "
                           f"{args.split!r} of {dataset.root}")
    versions = sorted({m.doc["code_version"] for m in loaded})
    caption = (f"data {dataset.name}/{args.split}; class {first['class']}; models "
               f"{', '.join(f'{n} ({p})' for n, p in zip(names, args.model))}; trained with "
               f"code {', '.join(versions)}; drawn with code {code_version()}")
    path = save_qualitative(extractor, first["class"], args.split, ids,
                            {n: m.estimator for n, m in zip(names, loaded)},
                            args.out, caption)
    print(f"wrote {path} ({len(ids)} images: {', '.join(ids)})")
    return 0


# --------------------------------------------------------------------------
# predict


def cmd_predict(args) -> int:
    from tqdm import tqdm

    from segstruct.datasets import ImageFiles
    from segstruct.predict import COMBINATION, predict_to_folder
    if (args.images is None) == (args.data is None):
        raise UsageError("give the images to label: --images FILE_OR_DIR ... (any images) "
                         "or --data ROOT with --split (a VOC-layout data set)")
    if args.images is not None and args.split is not None:
        raise UsageError("--split goes with --data; --images labels every image it names")
    out = args.out
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder")
    _refuse_overwriting(out / "index.json", args.model)
    models, detectors = _class_models(args.model)
    if args.images is not None:
        source = ImageFiles(args.images)
        source.check()                     # every file is an image, before any work
        ids = source.ids()
        described = {"images": [str(source.image_path(i)) for i in ids]}
    else:
        source = VOCDataset(args.data)
        split = args.split or "val"
        ids = source.ids(split)
        for image_id in ids:
            source.image_size(image_id)    # every header, before any work
        described = {"data_root": str(source.root), "split": split}
    # an output must never replace an input
    inputs = {source.image_path(i).resolve() for i in ids}
    suffixes = (".png", ".jpg") if args.overlay else (".png",)
    for image_id in ids:
        for suffix in suffixes:
            target = (out / f"{image_id}{suffix}").resolve()
            if target in inputs:
                raise UsageError(f"writing {target} would overwrite an input image: give "
                                 "another --out folder")
    first = models[0]
    extractor = _extractor(args, source, first.config, first.codebook, detectors)
    start = time.perf_counter()
    bar = (lambda total: tqdm(total=total, desc="predict", unit="image")) \
        if show_progress(args) else None
    entries = predict_to_folder(models, extractor, ids, out, overlay=args.overlay, bar=bar)
    index = {
        "format": "segstruct-predictions", "format_version": 1, **described,
        "models": [{"path": str(m.path), "class": m.class_name, "class_index": m.label,
                    "method": m.doc["method"], "dataset": m.doc.get("dataset"),
                    "train_split": m.doc.get("train_split"),
                    "code_version": m.doc.get("code_version")} for m in models],
        "combination": "the model's graph cut" if len(models) == 1 else COMBINATION,
        "features": first.config.to_dict(), "code_version": code_version(),
        "seconds": time.perf_counter() - start, "images": entries}
    write_json(out / "index.json", index)
    labelled = sum(1 for e in entries if e["class_pixels"])
    used = ", ".join(f"{m.class_name} ({m.doc['method']})" for m in models)
    print(f"labelled {len(entries)} images ({labelled} with some foreground) with {used} in "
          f"{index['seconds']:.1f} s; wrote {out}/<id>.png"
          f"{' and .jpg' if args.overlay else ''} and {out / 'index.json'}")
    return 0


# --------------------------------------------------------------------------
# Entry point

# name: (handler, help, takes feature options)
# --------------------------------------------------------------------------
# detector


def cmd_detector(args) -> int:
    from segstruct.evaluate.detection import best_images, detector_report
    from segstruct.report.figures import detector_figure, save_figure
    if args.figure_images < 1:
        raise UsageError("--figure-images must be at least 1")
    if args.no_top_down:
        raise UsageError("--no-top-down switches off the block whose detector this "
                         "command reports")
    dataset = _dataset(args)
    missing = sorted(set(args.images or ()) - set(dataset.ids(args.split)))
    if missing:
        raise DatasetError(f"image id(s) {', '.join(missing)} are not in split "
                           f"{args.split!r} of {dataset.root}")
    extractor = _extractor(args, dataset)
    if _codebook_split(args) == args.split:
        raise UsageError(f"--split {args.split} is the split the detector is trained on; "
                         "score it on another (e.g. val)")
    start = time.perf_counter()
    # the detectors the block of new images comes from: the folds' with
    # cross-fitting (each trained without a third of the split), else one
    detectors = extractor.block_detectors(args.class_name)
    reports = [detector_report(dataset, sd, args.split, n_jobs=args.n_jobs,
                               progress=show_progress(args)) for sd in detectors]
    aps = [r["average_precision"] for r in reports]
    known = [a for a in aps if a is not None]
    ap = float(np.mean(known)) if known else None
    report, sd = reports[0], detectors[0]
    which = (f"{len(detectors)} detectors, each trained on {dataset.name}/"
             f"{_codebook_split(args)} without one of {len(detectors)} folds"
             if len(detectors) > 1 else
             f"detector (trained on {dataset.name}/{_codebook_split(args)})")
    each = (" (per detector: " + ", ".join(_fmt(None if a is None else 100 * a, ".1f")
                                           for a in aps) + ")") if len(detectors) > 1 else ""
    print(f"{args.class_name} {which} on {dataset.name}/{args.split}: VOC AP "
          f"{_fmt(None if ap is None else 100 * ap, '.1f')} %{each} "
          f"over {report['n_objects']} objects in {report['n_images']} images "
          f"({report['n_ignored']} small or void boxes ignored; "
          f"{time.perf_counter() - start:.1f} s)")
    args.out.mkdir(parents=True, exist_ok=True)
    record = {**{k: v for k, v in report.items() if k != "per_image"},
              "average_precision": ap, "detector_average_precision": aps,
              **_provenance(dataset, extractor), "train_split": _codebook_split(args),
              "shape_counts": sd.shapes.counts.tolist()}
    json_path = args.out / f"detector-{args.class_name}.json"
    write_json(json_path, record)
    ids = args.images or best_images(report, args.figure_images)
    panels = [{"image_id": i, "image": dataset.read_image(i), **report["per_image"][i]}
              for i in ids]
    params = sd.params
    caption = (f"data {dataset.name}/{args.split}; class {args.class_name}; detector "
               f"{'1 of ' + str(len(detectors)) + ' (cross-fitted), ' if len(detectors) > 1 else ''}"
               f"trained on {_codebook_split(args)}: {params.n_components} components x "
               f"(root + {params.n_parts} parts), HOG cells {params.cell} px, seed "
               f"{params.seed}; VOC AP {_fmt(None if aps[0] is None else 100 * aps[0], '.1f')} %; "
               f"code {code_version()}")
    png = save_figure(detector_figure(panels, sd.shapes, caption),
                      args.out / f"detector-{args.class_name}.png")
    print(f"wrote {json_path} and {png}")
    return 0


_SUBCOMMANDS = {
    "inspect": (cmd_inspect, "check a data root and summarise it per split and class "
                             "(counts, foreground share, superpixels, oracle IoU)", True),
    "features": (cmd_features, "extract and cache superpixel graphs and features", True),
    "train": (cmd_train, "train a structural SVM for one class and save the model", True),
    "evaluate": (cmd_evaluate, "score a saved model on a split with the VOC measure", False),
    "compare": (cmd_compare, "train several methods for several classes and compare them "
                             "by VOC IoU (Table 1 of the paper), with figures", True),
    "visualize": (cmd_visualize, "draw input | ground truth | models' masks for some "
                                 "images as a PNG grid", False),
    "predict": (cmd_predict, "label new images with trained models: one VOC palette PNG "
                             "per image (class index per pixel), optional overlays, and an "
                             "index", False),
    "detector": (cmd_detector, "train (or load from the cache) a class's object detector "
                               "for the top-down features and report its VOC average "
                               "precision, with a figure of detections and average shapes",
                 True),
}


def _add_training_options(g) -> None:
    g.add_argument("--loss", choices=("iou", "fbeta", "f1"), default=None,
                   help=f"loss of bl2 / proposed / exact (default {DEFAULTS.loss})")
    g.add_argument("--beta", type=float, default=None,
                   help=f"beta of --loss fbeta (default {DEFAULTS.beta:g})")
    g.add_argument("--triangles", type=int, default=None,
                   help="loss-surface triangles M of the proposed method's triangle LPs "
                        "(--inference decomposition or lp; default "
                        f"{DEFAULTS.n_triangles}, as in the paper)")
    g.add_argument("--inference", choices=INFERENCE_CHOICES, default=None,
                   help="proposed: 'envelope' finds the exact maximiser of the true loss "
                        "by branch and bound with graph cuts; 'decomposition' and 'lp' "
                        "solve the paper's triangle LPs (by column generation with "
                        "graph-cut pricing, or by HiGHS on Eq. 22-26) (default "
                        f"{DEFAULTS.inference})")
    # the option's earlier name, kept so that recorded commands still run
    g.add_argument("--lp-solver", choices=INFERENCE_CHOICES, dest="inference",
                   help=argparse.SUPPRESS)
    g.add_argument("--no-polish", action="store_true",
                   help="proposed: skip the greedy single-node flips on the true loss "
                        "(with --inference decomposition or lp: the paper's method as "
                        "published)")
    g.add_argument("--C", default=DEFAULTS.C, metavar="C|auto",
                   help="regularisation trade-off, in --C-units. 'auto': choose C per "
                        "method and class by k-fold cross-validation on the training split "
                        "(pooled held-out VOC IoU, ties to the smaller C), then refit on the "
                        "whole split (default %(default)s)")
    g.add_argument("--C-units", choices=C_UNITS, default=DEFAULTS.C_units,
                   help="superpixel: the loss counted in missed superpixels and summed over "
                        "the examples, so that one C suits every method and both scopes; "
                        "paper: the C of the paper's Eq. 8 (its C = 1 is the paper's "
                        "setting); the model file and records give the objective's own C "
                        "(svm_C) either way (default %(default)s)")
    g.add_argument("--C-grid", nargs="+", type=float, default=None, metavar="C",
                   help="--C auto: the values of C tried (default: "
                        f"{' '.join(f'{c:g}' for c in DEFAULT_GRID)}, log-spaced)")
    g.add_argument("--folds", type=int, default=None, metavar="K",
                   help="--C auto: folds of the training split, by image, drawn with "
                        f"--seed (default {DEFAULT_FOLDS})")
    g.add_argument("--solver", choices=SOLVERS, default=DEFAULTS.solver,
                   help="learner of the structural SVM: cutting planes with one slack for "
                        "all constraints (stabilised as OCAS) or one slack per example; or, "
                        "with --scope image only, projected subgradient descent, stochastic "
                        "subgradient (SGD) over images, or block-coordinate Frank-Wolfe "
                        "(bcfw), for which --max-iter counts epochs and which cannot "
                        "--resume; all reach the same optimum (sgd and subgradient "
                        "approximately; bcfw to --tol). The lovasz method trains by its "
                        "1-slack cutting planes, or by SGD with --solver sgd; projection "
                        "by L-BFGS-B (default %(default)s)")
    g.add_argument("--projection-set", choices=SETS, default=DEFAULTS.projection_set,
                   help="the projection method's convex set: the unit cube (projection by "
                        "clipping; seconds), the cube with a foreground budget, or the "
                        "marginal polytope (Frank-Wolfe with graph cuts; exact for the "
                        "model's attractive edges, but seconds per image per step: small "
                        "data only); budget and marginal need --node-weights count "
                        "(default %(default)s)")
    g.add_argument("--scope", choices=SCOPES, default=DEFAULTS.scope,
                   help="one loss over the whole training set (the paper's setting), or "
                        "one loss per image (default %(default)s)")
    g.add_argument("--node-weights", choices=NODE_WEIGHT_MODES,
                   default=DEFAULTS.node_weights,
                   help="node weights a_i: FP and FN count superpixels (the paper's) or "
                        "non-void pixels (default %(default)s)")
    g.add_argument("--weights", choices=NODE_WEIGHT_MODES, dest="node_weights",
                   help=argparse.SUPPRESS)       # the option's earlier name
    g.add_argument("--tol", type=float, default=DEFAULTS.tol,
                   help="cutting-plane tolerance epsilon, in loss units: training stops "
                        "when the objective is within C * tol of the working-set QP's "
                        "lower bound (bcfw: of its dual; sgd and subgradient have no "
                        "stopping test) (default %(default)s)")
    g.add_argument("--max-iter", type=int, default=DEFAULTS.max_iter,
                   help="cutting-plane iterations at most; epochs for --solver subgradient, "
                        "sgd and bcfw (default %(default)s)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="segstruct",
        description="Structured SVMs for MRF segmentation under IoU, F-beta and Hamming "
                    "losses (Ranjbar, Mori & Wang, ECCV 2010).")
    parser.add_argument("--version", action="version", version=f"segstruct {code_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (func, help_text, with_features) in _SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        _add_data_options(p)
        if with_features:
            _add_feature_options(p)
        p.set_defaults(func=func)
    insp = sub.choices["inspect"]
    insp.add_argument("--split", nargs="+", help="splits to inspect (default: all)")
    insp.add_argument("--class", dest="class_names", nargs="+", metavar="CLASS",
                      help="VOC class names (default: every class found in the masks)")
    insp.add_argument("--json", type=Path,
                      help="also write the report as JSON here (default: not written)")
    feat = sub.choices["features"]
    feat.add_argument("--split", nargs="+", help="splits to extract (default: train)")
    feat.add_argument("--class", dest="class_name", metavar="CLASS",
                      help="also compute the targets of this VOC class and its top-down "
                           "block, training its detector if needed (default: none, graphs "
                           "and bottom-up features only)")
    for name in ("features", "train", "compare"):
        sub.choices[name].add_argument(
            "--scheduler", metavar="ADDRESS",
            help="a Dask scheduler (tcp://HOST:8786): feature extraction, the folds of --C "
                 "auto and compare's (class, method) pairs run on its workers, which must "
                 "read --data and --cache at the same paths; needs "
                 f"{DASK_EXTRA} (default: none, everything runs on this machine)")
    train = sub.choices["train"]
    g = train.add_argument_group("training")
    g.add_argument("--class", dest="class_name", required=True, metavar="CLASS",
                   help="VOC class name to segment")
    g.add_argument("--method", choices=sorted(METHODS), default="bl1",
                   help=f"{METHOD_HELP} (default %(default)s)")
    _add_training_options(g)
    g.add_argument("--split", default="train", help="training split (default %(default)s)")
    g.add_argument("--split-val", default=None, metavar="SPLIT",
                   help="validation split, scored beside the training split and checked for "
                        "over-fitting; 'none' scores no other split (default: val, when the "
                        "data has it)")
    g.add_argument("--out", required=True, type=Path, metavar="MODEL",
                   help="writes MODEL.json, MODEL.npz and MODEL.log.json; while training, "
                        "MODEL.ckpt.npz after every iteration")
    g.add_argument("--resume", action="store_true",
                   help="continue an interrupted run from MODEL.ckpt.npz (same data and "
                        "options; --max-iter may be raised)")
    g.add_argument("--force", action="store_true",
                   help="replace an existing model at --out (refused otherwise)")
    cmp = sub.choices["compare"]
    g = cmp.add_argument_group("comparison")
    g.add_argument("--classes", nargs="+", metavar="CLASS",
                   help="VOC class names; one the training split cannot teach stops the "
                        "run (default: every class in the training masks, leaving out, with "
                        "the reason, those it cannot teach, e.g. too few objects for a "
                        "detector)")
    g.add_argument("--methods", nargs="+", choices=sorted(METHODS), metavar="METHOD",
                   default=["bl1", "bl2", "proposed"],
                   help=f"methods to train (default: bl1 bl2 proposed). {METHOD_HELP}")
    _add_training_options(g)
    g.add_argument("--split-train", default="train",
                   help="training split (default %(default)s)")
    g.add_argument("--split-eval", default="val",
                   help="split the table scores (default %(default)s)")
    g.add_argument("--out", type=Path, default=Path("segstruct-compare"), metavar="DIR",
                   help="output folder; a second run resumes there (default: "
                        "./%(default)s)")
    g.add_argument("--figure-images", type=int, default=4, metavar="N",
                   help="images per qualitative figure, drawn with --seed from the "
                        "evaluation split, preferring ones that show the class (default "
                        "%(default)s)")
    g.add_argument("--figure-ids", nargs="+", metavar="ID",
                   help="draw these evaluation image ids instead (default: the "
                        "--figure-images draw)")
    g.add_argument("--no-figures", action="store_true", help="write the tables only")
    g.add_argument("--multiclass", action="store_true",
                   help="also combine each method's class models into one labelling per "
                        "image (by max-marginals) and score it over all 21 labels, the "
                        "VOC challenge measure: DIR/multiclass.json and multiclass.md")
    vis = sub.choices["visualize"]
    vis.add_argument("--model", nargs="+", action="extend", required=True, type=Path,
                     metavar="MODEL",
                     help="one or more models of the same class and features; one "
                          "column each")
    vis.add_argument("--split", default="val",
                     help="split the images come from (default %(default)s)")
    which = vis.add_mutually_exclusive_group()
    which.add_argument("--images", nargs="+", metavar="ID",
                       help="image ids to draw (default: the --random draw)")
    which.add_argument("--random", type=int, default=4, metavar="N",
                       help="draw N images of --split chosen with --seed, preferring ones "
                            "that show the class (default %(default)s)")
    vis.add_argument("--seed", type=int, default=0,
                     help="random seed of the --random draw (default %(default)s)")
    vis.add_argument("--out", required=True, type=Path, metavar="PNG",
                     help="the PNG file to write")
    pre = sub.choices["predict"]
    pre.add_argument("--model", nargs="+", action="extend", required=True, type=Path,
                     metavar="MODEL",
                     help="one model per class, all trained on the same features; with "
                          "several, each superpixel gets the class whose model is surest "
                          "(largest max-marginal difference), or background")
    pre.add_argument("--images", nargs="+", metavar="FILE_OR_DIR",
                     help="image files, or folders whose image files are labelled (any "
                          "size and colour mode; no masks needed) (default: none; then "
                          "--data gives the images)")
    pre.add_argument("--split", default=None,
                     help="with --data: the split to label (default val)")
    pre.add_argument("--out", required=True, type=Path, metavar="DIR",
                     help="writes DIR/<id>.png (VOC palette: class index per pixel, the "
                          "image's size) and DIR/index.json")
    pre.add_argument("--overlay", action="store_true",
                     help="also write DIR/<id>.jpg: the image with its labels drawn on it")
    det = sub.choices["detector"]
    det.add_argument("--class", dest="class_name", required=True, metavar="CLASS",
                     help="VOC class name to detect")
    det.add_argument("--split", default="val",
                     help="split the average precision is measured on (default "
                          "%(default)s; the detector is trained on --codebook-split, "
                          "default train)")
    det.add_argument("--out", type=Path, default=Path("segstruct-detector"), metavar="DIR",
                     help="writes DIR/detector-CLASS.json and .png (default ./%(default)s)")
    which = det.add_mutually_exclusive_group()
    which.add_argument("--images", nargs="+", metavar="ID",
                       help="image ids to draw (default: those with the most confident "
                            "detections)")
    which.add_argument("--figure-images", type=int, default=4, metavar="N",
                       help="images in the figure (default %(default)s)")
    ev = sub.choices["evaluate"]
    ev.add_argument("--model", nargs="+", action="extend", required=True, type=Path,
                    metavar="MODEL",
                    help="the model to score: the MODEL of train --out, or "
                         "DIR/models/<class>-<method> of compare (reads MODEL.json and "
                         "MODEL.npz; the features are computed as the model says); with "
                         "--multiclass, one model per class")
    ev.add_argument("--multiclass", action="store_true",
                    help="label each image with all the models at once (each superpixel: "
                         "the class whose model is surest, by max-marginals, or "
                         "background) and report the VOC challenge measure: IoU per label "
                         "over all 21, void ignored, and their mean, beside each model "
                         "scored alone")
    ev.add_argument("--split", default="val", help="split to score (default %(default)s)")
    for p in (ev, vis):
        p.add_argument("--other-data", action="store_true",
                       help="use --data (or, without it, the generated data set) even "
                            "when the model was trained on another data set; refused "
                            "otherwise")
    ev.add_argument("--json", type=Path,
                    help="also write the scores, with each image's TP, FP and FN, as JSON "
                         "here (default: not written)")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if hasattr(args, "loss"):
        args.loss_given = args.loss is not None
        args.loss = args.loss or DEFAULTS.loss
    try:
        with use_scheduler(getattr(args, "scheduler", None)):
            return args.func(args)
    except UsageError as err:
        parser.error(str(err))
    except (DatasetError, ValueError, RuntimeError, ImportError, OSError) as err:
        print(f"segstruct {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; finished cache entries are kept"
              + ("; continue training with --resume" if args.command == "train"
                 and _make_estimator(args).resumable else "")
              + ("; run the same command again to resume" if args.command == "compare"
                 else ""), file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
