"""Parsed options to settings: the feature options to a ``FeatureConfig`` (and
its ``FeatureExtractor``), the training options to ``TrainingSettings`` and
the estimator of a method, each checked before any feature is computed.

The estimators' own rules (``_parameter_constraints``, ``check_params``,
``resumable``) are not repeated here: their errors become usage errors."""
from __future__ import annotations

import argparse

from segstruct.cli.c_options import C_choice, C_extend, add_C_options, fold_tol
from segstruct.cli.common import EarlierName, UsageError, show_progress
from segstruct.features.cache import ArrayCache
from segstruct.features.config import SIFT_NORMS, TOP_DOWN_DETECTORS, FeatureConfig
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.scale import MIN_LONG_SIDE, UPSAMPLINGS
from segstruct.features.superpixels import SuperpixelParams
from segstruct.features.topdown.detector import DetectorParams
from segstruct.inference.proposed import INFERENCE_CHOICES
from segstruct.learn.solvers.fenchel_young import SETS
from segstruct.learn.solvers.likelihood import LIKELIHOODS
from segstruct.learn.methods import (DEFAULTS, METHODS, SINGLE_RUN_METHODS, SINGLE_RUN_SOLVERS,
                                     TrainingSettings)
from segstruct.learn.estimators.structured_svm import NODE_WEIGHT_MODES, SCOPES, SOLVERS
from segstruct.workflow import fresh_estimator


def add_feature_options(p: argparse.ArgumentParser) -> None:
    d = FeatureConfig()
    s = d.superpixels
    g = p.add_argument_group("superpixels and features")
    g.add_argument("--superpixels", choices=("slic", "felzenszwalb"), default=s.method,
                   help="over-segmentation: SLIC, or Felzenszwalb's graph-based method "
                        "(the paper's); default %(default)s, chosen on held-out data sets")
    g.add_argument("--fz-scale", type=float, default=s.scale,
                   help="Felzenszwalb k, with --superpixels felzenszwalb; larger gives "
                        "larger superpixels (default "
                        "%(default)s, the paper's)")
    g.add_argument("--fz-sigma", type=float, default=s.sigma,
                   help="Felzenszwalb Gaussian pre-smoothing, pixels (default %(default)s, "
                        "the paper's)")
    g.add_argument("--fz-min-size", type=int, default=s.min_size,
                   help="Felzenszwalb minimum superpixel area, pixels (default "
                        "%(default)s, the paper's)")
    g.add_argument("--slic-segments", type=int, default=s.n_segments,
                   help="SLIC: target number of superpixels per image (default "
                        "%(default)s)")
    g.add_argument("--slic-compactness", type=float, default=s.compactness,
                   help="SLIC: colour/space trade-off, larger gives more compact "
                        "superpixels (default %(default)s)")
    g.add_argument("--slic-sigma", type=float, default=s.sigma,
                   help="SLIC: Gaussian pre-smoothing of the working image, pixels; "
                        "steadier superpixels under resizing, masks barely steadier "
                        "(default %(default)s: none)")
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
    # the switch of the days the block was off by default
    g.add_argument("--top-down", nargs=0, const=True, default=False, action=EarlierName,
                   instead="nothing (the top-down block is on by default)")
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
    g.add_argument("--long-side", type=long_side, default=d.long_side, metavar="PIXELS",
                   help="the working resolution: every image is resized to this long side "
                        "before superpixels, descriptors and detectors see it, and its "
                        "labels are painted back on its own pixels; auto: the largest long "
                        "side of the training split's images, at most 1024; none: images "
                        "as given (default %(default)s)")
    g.add_argument("--upsampling", choices=UPSAMPLINGS, default=d.upsampling,
                   help="how an image smaller than the working resolution is enlarged to "
                        "it: linear interpolation, or Lanczos's windowed sinc, which keeps "
                        "more fine detail (default %(default)s)")
    g.add_argument("--seed", type=int, default=d.seed,
                   help="random seed of the codebook's descriptor sample and k-means, of "
                        "each class's detector (another seed trains other detectors), and "
                        "of the --C auto folds and the figures' images where the command "
                        "has them (default %(default)s)")


def long_side(text: str) -> int | str | None:
    """``--long-side``'s value: "auto", "none" (None) or a number of pixels."""
    if text.lower() in ("auto", "none"):
        return None if text.lower() == "none" else "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected auto, none or a number of pixels, got {text!r}") from None
    if value < MIN_LONG_SIDE:
        raise argparse.ArgumentTypeError(f"a long side of at least {MIN_LONG_SIDE} pixels, "
                                         f"got {value}")
    return value


def check_feature_options(args, top_down: bool = True) -> None:
    """Refuse feature options that the other options make meaningless
    (``top_down`` False: the command makes no top-down block, whatever they say)."""
    d = FeatureConfig()
    s = d.superpixels

    def given(name, default):
        return getattr(args, name) != default

    if args.superpixels == "slic":
        unused = [f for f, n, v in (("--fz-scale", "fz_scale", s.scale),
                                    ("--fz-sigma", "fz_sigma", s.sigma),
                                    ("--fz-min-size", "fz_min_size", s.min_size)) if given(n, v)]
        if unused:
            raise UsageError(f"{', '.join(unused)} set Felzenszwalb, but --superpixels is slic "
                             "(the default): add --superpixels felzenszwalb")
    else:
        unused = [f for f, n, v in (("--slic-segments", "slic_segments", s.n_segments),
                                    ("--slic-compactness", "slic_compactness",
                                     s.compactness),
                                    ("--slic-sigma", "slic_sigma", s.sigma)) if given(n, v)]
        if unused:
            raise UsageError(f"{', '.join(unused)} set SLIC, but --superpixels is "
                             f"{args.superpixels}")
    if args.top_down and args.no_top_down:
        raise UsageError("--top-down and --no-top-down contradict each other; give one")
    if args.top_down_folds < 1:
        raise UsageError(f"--top-down-folds must be at least 1, got {args.top_down_folds}")
    off = ("--no-top-down switches it off" if args.no_top_down else
           None if top_down else "without --class there is none")
    for flag, name in (("--top-down-folds", "top_down_folds"),
                       ("--top-down-detector", "top_down_detector")):
        if off and given(name, getattr(d, name)):
            raise UsageError(f"{flag} sets the top-down block, but {off}")
    if args.no_sift:
        # --codebook-split also names the detector's training split
        split_used = off is None and args.command != "inspect"
        unused = [f for f, n, v in (("--words", "words", d.n_words),
                                    ("--codebook-descriptors", "codebook_descriptors",
                                     d.codebook_descriptors),
                                    ("--codebook-split", "codebook_split", None))
                  if given(n, v) and not (n == "codebook_split" and split_used)]
        if unused:
            raise UsageError(f"{', '.join(unused)} set the SIFT codebook, but --no-sift "
                             "switches SIFT off")


#: The settings the options set, by the name a setting's error gives.
OPTION_OF_SETTING = {"SuperpixelParams.scale": "--fz-scale",
                     "SuperpixelParams.sigma": "--fz-sigma",
                     "SuperpixelParams.min_size": "--fz-min-size",
                     "SuperpixelParams.n_segments": "--slic-segments",
                     "SuperpixelParams.compactness": "--slic-compactness",
                     "FeatureConfig.n_words": "--words",
                     "FeatureConfig.codebook_descriptors": "--codebook-descriptors",
                     "FeatureConfig.seed": "--seed"}


def feature_config(args, top_down: bool = True) -> FeatureConfig:
    """The feature settings of the options; a bad value is a UsageError
    naming its option."""
    try:
        return _feature_config(args, top_down)
    except ValueError as err:
        text = str(err)
        options = dict(OPTION_OF_SETTING)
        if args.superpixels == "slic":
            options["SuperpixelParams.sigma"] = "--slic-sigma"
        for setting, option in options.items():
            if text.startswith(setting + " "):
                raise UsageError(option + text[len(setting):]) from err
        raise


def _feature_config(args, top_down: bool = True) -> FeatureConfig:
    check_feature_options(args, top_down)
    sigma = args.slic_sigma if args.superpixels == "slic" else args.fz_sigma
    sp = SuperpixelParams(method=args.superpixels, scale=args.fz_scale, sigma=sigma,
                          min_size=args.fz_min_size, n_segments=args.slic_segments,
                          compactness=args.slic_compactness)
    return FeatureConfig(superpixels=sp, sift=not args.no_sift, colour=not args.no_colour,
                         position=not args.no_position, bias=not args.no_bias,
                         n_words=args.words,
                         codebook_descriptors=args.codebook_descriptors, seed=args.seed,
                         sift_norm=args.sift_norm,
                         detector=(DetectorParams(seed=args.seed)
                                   if top_down and not args.no_top_down else None),
                         top_down_folds=args.top_down_folds,
                         top_down_detector=args.top_down_detector,
                         long_side=args.long_side, upsampling=args.upsampling)


def codebook_split(args) -> str:
    """The codebook is learnt on training data: --codebook-split, else the training split."""
    given = getattr(args, "codebook_split", None)
    training = getattr(args, "train_split", None) or (
        args.split if args.command == "train" else "train")
    return given or training


def make_extractor(args, dataset, config=None, codebook=None, detectors=None, *,
                   bottom_up_only: bool = False) -> FeatureExtractor:
    """Features as the options say (``bottom_up_only``: without the top-down
    block, whatever they say), or as a saved model's ``config``, ``codebook``
    and ``detectors`` say (evaluation must see the features it was trained
    on)."""
    if args.no_cache and args.cache is not None:
        raise UsageError("--no-cache and --cache contradict each other; give one")
    if args.n_jobs == 0:
        raise UsageError("--n-jobs must be a positive number or -1")
    cache = ArrayCache(args.cache, enabled=not args.no_cache)
    if config is None:
        return FeatureExtractor(dataset, feature_config(args, not bottom_up_only), cache,
                                n_jobs=args.n_jobs,
                                progress=show_progress(args),
                                codebook_split=codebook_split(args))
    return FeatureExtractor(dataset, config, cache, n_jobs=args.n_jobs,
                            progress=show_progress(args), codebook=codebook,
                            detectors=detectors, from_model=True)


def add_training_options(g) -> None:
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
    g.add_argument("--lp-solver", choices=INFERENCE_CHOICES, dest="inference",
                   action=EarlierName, instead="--inference")
    g.add_argument("--no-polish", action="store_true",
                   help="proposed: skip the greedy single-node flips on the true loss "
                        "(with --inference decomposition or lp: the paper's method as "
                        "published)")
    add_C_options(g)
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
    g.add_argument("--likelihood", choices=LIKELIHOODS, default=DEFAULTS.likelihood,
                   help="the crf method's likelihood: pseudo-likelihood (exact, convex, "
                        "seconds) or the likelihood with log Z and marginals by loopy "
                        "belief propagation (bethe; the Bethe approximation on loopy "
                        "superpixel graphs) (default %(default)s)")
    g.add_argument("--scope", choices=SCOPES, default=DEFAULTS.scope,
                   help="one loss over the whole training set (the paper's setting), or "
                        "one loss per image (default %(default)s)")
    g.add_argument("--node-weights", choices=NODE_WEIGHT_MODES,
                   default=DEFAULTS.node_weights,
                   help="node weights a_i: FP and FN count superpixels (the paper's) or "
                        "non-void pixels (default %(default)s)")
    g.add_argument("--weights", choices=NODE_WEIGHT_MODES, dest="node_weights",
                   action=EarlierName, instead="--node-weights")
    g.add_argument("--tol", type=float, default=DEFAULTS.tol,
                   help="cutting-plane tolerance epsilon, in loss units: training stops "
                        "when the objective is within C * tol of the working-set QP's "
                        "lower bound (bcfw: of its dual; sgd and subgradient have no "
                        "stopping test) (default %(default)s)")
    g.add_argument("--max-iter", type=int, default=DEFAULTS.max_iter,
                   help="cutting-plane iterations at most; epochs for --solver subgradient, "
                        "sgd and bcfw (default %(default)s)")


def check_loss_options(args, methods) -> None:
    """Refuse options that the chosen loss or methods would silently ignore."""
    if args.loss is not None and all(METHODS[m]["loss"] is not None for m in methods):
        raise UsageError(f"--loss does not apply to {', '.join(methods)}: their losses are "
                         "fixed (it sets the loss of bl2, proposed and exact)")
    if args.beta is not None and (args.loss or DEFAULTS.loss) != "fbeta":
        raise UsageError(f"--beta applies only to --loss fbeta (the loss is "
                         f"{args.loss or DEFAULTS.loss})")
    if args.beta is not None and not args.beta > 0:
        raise UsageError(f"--beta must be positive, got {args.beta}")
    if "proposed" not in methods:
        for flag, value in (("--triangles", args.triangles), ("--inference", args.inference),
                            ("--no-polish", args.no_polish or None)):
            if value is not None:
                raise UsageError(f"{flag} applies only to the proposed method")
    if args.triangles is not None and (args.inference or DEFAULTS.inference) == "envelope":
        raise UsageError("--triangles applies to --inference decomposition or lp; the "
                         "envelope inference (the default) uses no triangles")


def check_solver_options(args, methods) -> None:
    """Refuse a --solver or --projection-set that the methods rule out (the
    estimators refuse what their own settings rule out: check_params)."""
    if args.solver != DEFAULTS.solver and all(
            args.solver not in SINGLE_RUN_SOLVERS.get(m, SOLVERS) for m in methods):
        raise UsageError(f"--solver {args.solver} does not apply to {' and '.join(methods)}: "
                         "lovasz trains by 1-slack cutting planes (oneslack) or sgd, "
                         "projection and crf by L-BFGS-B")
    if args.likelihood != DEFAULTS.likelihood and "crf" not in methods:
        raise UsageError(f"--likelihood {args.likelihood} applies to the crf method only")
    if args.projection_set != DEFAULTS.projection_set and "projection" not in methods:
        raise UsageError(f"--projection-set {args.projection_set} applies to the projection "
                         f"method only, which {' and '.join(methods)} "
                         f"{'is' if len(methods) == 1 else 'are'} not")


def training_settings(args, methods) -> TrainingSettings:
    """The training options as ``TrainingSettings``, checked against each
    other and the ``methods`` they train (UsageError); the parsed options
    are read, never changed."""
    check_loss_options(args, methods)
    check_solver_options(args, methods)
    C, cv = C_choice(args)
    grid, folds = cv or (None, None)
    return TrainingSettings(loss=args.loss or DEFAULTS.loss, beta=args.beta or DEFAULTS.beta,
                            scope=args.scope, C=C, C_units=args.C_units,
                            node_weights=args.node_weights,
                            n_triangles=(DEFAULTS.n_triangles if args.triangles is None
                                         else args.triangles),
                            inference=args.inference or DEFAULTS.inference,
                            polish=not args.no_polish, solver=args.solver, tol=args.tol,
                            max_iter=args.max_iter, C_grid=grid, folds=folds,
                            cv_tol=fold_tol(args), C_extend=C_extend(args),
                            projection_set=args.projection_set,
                            likelihood=args.likelihood,
                            decisions=decisions_of(getattr(args, "decisions", None)))


def decisions_of(asked) -> tuple:
    """The decisions to score: "map" first, then those asked for, once each."""
    return tuple(dict.fromkeys(["map", *(asked or [])]))


def first_estimator(settings: TrainingSettings, method: str, n_jobs: int, args=None):
    """The learner of ``method`` at the settings' C (with ``C = "auto"`` the
    grid's first, until cross-validation has chosen), ``n_jobs`` inference
    workers where the method has them, checked: a bad value is a usage
    error naming its option (``args``: the parsed options)."""
    C = settings.cv()[0][0] if settings.auto else float(settings.C)
    try:
        estimator = fresh_estimator(settings, method, C, n_jobs)
    except ValueError as err:            # e.g. bl2 with area node weights, M < 2
        raise UsageError(option_message(str(err), args)) from err
    return checked(estimator, args)


def option_message(text: str, args=None) -> str:
    """An estimator's message about one of its parameters ("max_iter must
    be ...") about the option that sets it ("--max-iter must be ..."), where
    the command has that option (``args``: its parsed options; None: any)."""
    name = text.split(" ", 1)[0]
    if name.isidentifier() and (args is None or name in vars(args)) and \
            text.startswith(name + " "):
        return f"--{name.replace('_', '-')}{text[len(name):]}"
    return text


def checked(estimator, args=None):
    """``estimator`` after its own checks (check_params), as usage errors
    naming the option (:func:`option_message`)."""
    try:
        estimator.check_params()
    except ValueError as err:
        raise UsageError(option_message(str(err), args)) from err
    return estimator


def resumable(args) -> bool:
    """Whether ``train``'s learner keeps a checkpoint to continue from (False
    for options that do not make one)."""
    try:
        return first_estimator(training_settings(args, [args.method]), args.method, 1).resumable
    except (UsageError, ValueError):
        return False


def check_resume(args, estimator) -> None:
    """Refuse --resume for a learner that keeps no checkpoint (``resumable``)."""
    if args.resume and not estimator.resumable:
        what = (f"the {args.method} method" if args.method in SINGLE_RUN_METHODS
                else f"--solver {args.solver}")
        raise UsageError(f"--resume: {what} keeps no checkpoint to continue from; train "
                         "without --resume (from the start)")

