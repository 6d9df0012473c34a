"""What every command shares: usage errors, the data options, the data set,
saved models and the checks on them."""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from segstruct.datasets import VOCDataset, default_synthetic_root, make_synthetic_voc


class UsageError(Exception):
    """Conflicting or invalid command-line options."""


class EarlierName(argparse.Action):
    """An option's earlier name: parsed as ``instead`` is, with a FutureWarning,
    so that recorded commands still run while they are being updated."""

    def __init__(self, option_strings, dest, instead: str, **kwargs):
        self.instead = instead
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        warnings.warn(f"{option_string} is an earlier name and will be removed: give "
                      f"{self.instead}", FutureWarning, stacklevel=2)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def add_data_options(p: argparse.ArgumentParser) -> None:
    """Where the data and cache are, workers and progress: every command's."""
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
                        "(default %(default)s, every core; the folds of --C auto take no more "
                        "than fit in the memory available)")
    out = g.add_mutually_exclusive_group()
    out.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    out.add_argument("--progress", action="store_true",
                     help="show progress (the default unless -q: a bar when stderr is a "
                          "terminal, else a plain line every 30 s, so that a log shows how "
                          "far the work got and stays small)")


def voc_class(value: str) -> str:
    """A --class / --classes value as its VOC class name (lower case), or an
    argparse error listing the names: "Horse" and "horse" are one class."""
    from segstruct.datasets import DatasetError
    from segstruct.datasets.voc import class_index
    try:
        class_index(value)
    except DatasetError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return value.lower()


def show_progress(args) -> bool:
    """Progress, unless -q: a bar when stderr is a terminal, else a plain
    line every ``LOG_INTERVAL`` seconds (:mod:`segstruct.io.progress`;
    a bar redrawn into a log file writes every update, which bloats the log,
    and none at all leaves a log silent through a long stage)."""
    return bool(args.progress or not args.quiet)


def open_dataset(args) -> VOCDataset:
    """The data set of --data, or the generated one (written once) without it."""
    if args.data is None:
        root = default_synthetic_root()
        if not args.quiet:
            print(f"no --data given: using the generated data set at {root}", file=sys.stderr)
        make_synthetic_voc(root)
        return VOCDataset(root)
    return VOCDataset(args.data)


def load_models(paths) -> list:
    """The SegmentationModels of ``paths`` (each once)."""
    from segstruct.segmentation_model import SegmentationModel
    if len(set(paths)) < len(paths):
        raise UsageError("a --model is given twice")
    return [SegmentationModel.load(path) for path in paths]


def model_detectors(models) -> dict:
    """{class: [ShapeDetector, ...]} of SegmentationModels with a top-down block
    (models of one class must share their detectors)."""
    from segstruct.features.detection import detectors_digest
    found: dict[str, list] = {}
    for m in models:
        if m.detectors is None:
            continue
        if m.class_name in found and \
                detectors_digest(found[m.class_name]) != detectors_digest(m.detectors):
            raise UsageError(f"{', '.join(str(x.path) for x in models)} have different "
                             f"{m.class_name} detectors: draw them in separate figures")
        found[m.class_name] = m.detectors
    return found


def class_models(paths) -> tuple[list, dict]:
    """Saved models (SegmentationModels) to label images together, checked,
    and their detectors by class."""
    from segstruct.predict import check_models
    models = load_models(paths)
    try:
        check_models(models)
    except ValueError as err:
        raise UsageError(str(err)) from None
    return models, model_detectors(models)


def refuse_overwriting(output, models) -> None:
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


def check_model_data(args, dataset: VOCDataset, paths, docs) -> None:
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


def add_other_data_option(p) -> None:
    """--other-data, of the commands that read a saved model's data."""
    p.add_argument("--other-data", action="store_true",
                   help="use --data (or, without it, the generated data set) even "
                        "when the model was trained on another data set; refused "
                        "otherwise")


def add_ensemble_option(p, what: str = "label") -> None:
    """--ensemble, of the commands that label images with saved models."""
    p.add_argument("--ensemble", type=int, default=None, metavar="K",
                   help=f"{what} each image K times (1 to 5), SLIC's number of segments "
                        "varied (x 1, 0.8, 1.25, 0.9, 1.125, the first K), deciding per "
                        "pixel on the mean max-marginal difference: steadier edges and, "
                        "on held-out data, mostly higher IoU, for about twice the work "
                        "at K 5 (the members share each image's descriptors and detector "
                        "masks); more than 1 with SLIC models and --decision map only. "
                        "1 is the model's own graph cut, which train and compare score "
                        "(default: 5 for a SLIC model, 1 for a Felzenszwalb one or "
                        "another --decision)")


def ensemble_configs(args, config, decision: str = "map") -> list:
    """The feature settings of the members that label each image: --ensemble's,
    or by default :func:`segstruct.ensemble.default_members`' (one member for a
    decision other than "map", which reads one graph's marginals).

    Raises
    ------
    UsageError
        A size out of range, or more than one member for a Felzenszwalb model.
    """
    from segstruct.ensemble import default_members, superpixel_variants
    members = args.ensemble
    if members is None:
        members = default_members(config) if decision == "map" else 1
    try:
        return superpixel_variants(config, members)
    except ValueError as err:
        raise UsageError(f"--ensemble {members}: {err}") from None


def add_scheduler_option(p) -> None:
    """--scheduler, of the commands whose work can go to a Dask cluster."""
    from segstruct.cluster import DASK_EXTRA
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a Dask scheduler (tcp://HOST:8786): feature extraction, the folds "
                        "of --C auto and compare's (class, method) pairs run on its "
                        "workers, which must read --data and --cache at the same paths; "
                        f"needs {DASK_EXTRA} (default: none, everything runs on this "
                        "machine)")
