"""``segstruct compare``: train several methods for several classes and compare
them by VOC IoU (Table 1 of the paper), with figures; and ``segstruct report
DIR`` (:data:`REPORT`), which writes a finished comparison's report.html again."""
from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from segstruct.cli.c_options import fit_split
from segstruct.cli.common import (UsageError, add_scheduler_option, open_dataset, show_progress,
                                  voc_class)
from segstruct.cli.settings import (add_training_options, codebook_split, first_estimator,
                                    make_extractor, training_settings)
from segstruct.compare.figures import FIGURE_IMAGES
from segstruct.compare.planner import EVAL_SPLIT, METHODS_COMPARED, TRAIN_SPLIT
from segstruct.decisions import DECISIONS
from segstruct.learn.methods import DEFAULTS, METHOD_HELP, METHODS

HELP = ("train several methods for several classes and compare them by VOC IoU (Table 1 "
        "of the paper), with figures")
FEATURES = True


def add_arguments(p) -> None:
    add_scheduler_option(p)
    g = p.add_argument_group("comparison")
    g.add_argument("--classes", nargs="+", type=voc_class, metavar="CLASS",
                   help="VOC class names; one the training split cannot teach stops the "
                        "run (default: every class in the training masks, leaving out, with "
                        "the reason, those it cannot teach, e.g. too few objects for a "
                        "detector)")
    g.add_argument("--methods", nargs="+", choices=sorted(METHODS), metavar="METHOD",
                   default=list(METHODS_COMPARED),
                   help=f"methods to train (default: {' '.join(METHODS_COMPARED)}). "
                        f"{METHOD_HELP}")
    add_training_options(g)
    g.add_argument("--decisions", nargs="+", choices=DECISIONS, default=list(DEFAULTS.decisions),
                   metavar="DECISION",
                   help="also score these decisions from each model's marginals (map, "
                        "the graph cut, is always scored): marginal (q > 1/2), "
                        "expected-iou, expected-fbeta (the beta of --loss fbeta, else 1) "
                        "over the whole evaluation split; the SSVMs' marginals need a "
                        "temperature, fitted by held-out likelihood on --folds folds of "
                        "the training split: that many more fits per pair (default: map)")
    g.add_argument("--split-train", dest="train_split", default=TRAIN_SPLIT,
                   help="training split (default %(default)s)")
    g.add_argument("--split-eval", dest="eval_split", default=EVAL_SPLIT,
                   help="split the table scores (default %(default)s)")
    g.add_argument("--out", type=Path, default=Path("segstruct-compare"), metavar="DIR",
                   help="output folder; a second run resumes there (default: "
                        "./%(default)s)")
    g.add_argument("--figure-images", type=int, default=FIGURE_IMAGES, metavar="N",
                   help="images per qualitative figure, drawn with --seed from the "
                        "evaluation split, preferring ones that show the class (default "
                        "%(default)s)")
    g.add_argument("--figure-ids", nargs="+", metavar="ID",
                   help="draw these evaluation image ids instead (default: the "
                        "--figure-images draw)")
    g.add_argument("--no-figures", action="store_true",
                   help="write no figures (report.html then shows the table and gallery)")
    g.add_argument("--no-report", action="store_true",
                   help="write no report.html (the table, figures and gallery as one page; "
                        "`segstruct report DIR` writes it later)")
    g.add_argument("--multiclass", action="store_true",
                   help="also combine each method's class models into one labelling per "
                        "image (by max-marginals) and score it over all 21 labels, the "
                        "VOC challenge measure: DIR/multiclass.json and multiclass.md")


def execute(args) -> int:
    from segstruct.compare import Comparison, classes_in
    if not args.no_figures and args.figure_images < 1 and not args.figure_ids:
        raise UsageError("--figure-images must be at least 1 (or give --no-figures)")
    if args.no_figures and args.figure_ids:
        raise UsageError("--figure-ids and --no-figures contradict each other; give one")
    if args.train_split == args.eval_split:
        raise UsageError(f"--split-train and --split-eval are both {args.train_split!r}: "
                         "the table would score the models on their own training data")
    if codebook_split(args) == args.eval_split:
        raise UsageError(f"--codebook-split {args.eval_split!r} is the evaluation split: "
                         "the codebook must be learnt on training data only")
    settings = training_settings(args, args.methods)
    for method in args.methods:          # each method's own checks, before any feature
        first_estimator(settings, method, args.n_jobs, args)
    dataset = open_dataset(args)
    settings = fit_split(settings, args.C is not None, dataset, args.train_split)
    extractor = make_extractor(args, dataset)
    classes = args.classes or classes_in(dataset, args.train_split)
    # "every class" leaves out a class too small for a detector; a class asked
    # for by name stops the run instead
    comparison = Comparison(extractor, classes, args.methods, settings, args.out,
                            train_split=args.train_split, eval_split=args.eval_split,
                            seed=args.seed, progress=show_progress(args),
                            skip_few_objects=args.classes is None, n_jobs=args.n_jobs)
    start = time.perf_counter()
    comparison.run(figures=not args.no_figures, figure_images=args.figure_images,
                   figure_ids=args.figure_ids, multiclass=args.multiclass,
                   report=not args.no_report)
    print()
    print((args.out / "table.md").read_text())
    if args.multiclass:
        print((args.out / "multiclass.md").read_text())
    print(f"compare finished in {time.perf_counter() - start:.1f} s")
    return 0


# ---------------------------------------------------------------- segstruct report
REPORT_HELP = ("write a finished comparison's report.html again: its table, figures and a "
               "gallery of every method's masks, as one page any browser opens")


def add_report_arguments(p) -> None:
    from segstruct.compare.report import GALLERY_IMAGES
    p.add_argument("dir", type=Path, metavar="DIR",
                   help="the --out folder of a finished `segstruct compare` (its results.json, "
                        "models and figures); --data defaults to the comparison's data root")
    p.add_argument("--gallery-images", type=int, default=GALLERY_IMAGES, metavar="N",
                   help="images per class in the gallery, those where the methods disagree "
                        "most (default %(default)s); 0 for every evaluation image")
    p.add_argument("--output", type=Path, metavar="FILE",
                   help="where to write the page (default: DIR/report.html)")


def execute_report(args) -> int:
    from segstruct.compare.report import read_results, write_report
    from segstruct.datasets import VOCDataset
    from segstruct.features.cache import ArrayCache
    if args.gallery_images < 0:
        raise UsageError(f"--gallery-images must be 0 (every image) or more, got "
                         f"{args.gallery_images}")
    if args.no_cache and args.cache is not None:
        raise UsageError("--no-cache and --cache contradict each other; give one")
    if args.n_jobs == 0:
        raise UsageError("--n-jobs must be a positive number or -1")
    results = read_results(args.dir)
    root = args.data if args.data is not None else Path(results["data_root"])
    if not root.is_dir():
        raise UsageError(f"the comparison's data root {root} is not a folder: give --data "
                         "ROOT, where its data are now")
    dataset = VOCDataset(root)
    say = print if show_progress(args) else None
    path = write_report(args.dir, results, dataset, cache=ArrayCache(args.cache,
                                                                     enabled=not args.no_cache),
                        max_images=args.gallery_images or None, path=args.output, say=say,
                        n_jobs=args.n_jobs)
    print(f"wrote {path}")
    return 0


#: The ``report`` command, as ``main.COMMANDS`` takes a command (its own
#: module would crowd segstruct/cli past its 15 modules).
REPORT = SimpleNamespace(HELP=REPORT_HELP, FEATURES=False, add_arguments=add_report_arguments,
                         execute=execute_report)
