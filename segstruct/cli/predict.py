"""``segstruct predict``: label new images with trained models."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from segstruct.cli.common import (UsageError, add_ensemble_option, class_models, ensemble_configs,
                                  refuse_overwriting, show_progress)
from segstruct.cli.settings import make_extractor
from segstruct.datasets import DatasetError, ImageFiles, VOCDataset
from segstruct.decisions import DECISIONS
from segstruct.io.files import write_json
from segstruct.io.text import count
from segstruct.predict import BETA, DECISION, SAMPLES

HELP = ("label new images with trained models: one VOC palette PNG per image (class index "
        "per pixel), optional overlays, and an index")
FEATURES = False


def add_arguments(p) -> None:
    p.add_argument("--model", nargs="+", action="extend", required=True, type=Path,
                   metavar="MODEL",
                   help="one model per class (its path without suffix, or a folder that "
                        "holds just it), all trained on the same features; with "
                        "several, each superpixel gets the class whose model is surest "
                        "(largest max-marginal difference), or background")
    p.add_argument("--images", nargs="+", metavar="FILE_OR_DIR",
                   help="image files, or folders whose image files are labelled (any "
                        "size and colour mode; no masks needed) (default: none; then "
                        "--data gives the images)")
    p.add_argument("--split", default=None,
                   help="with --data: the split to label (default val)")
    p.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="writes DIR/<id>.png (VOC palette: class index per pixel, the "
                        "image's size) and DIR/index.json")
    p.add_argument("--decision", choices=DECISIONS, default=DECISION,
                   help="how a model's labels are chosen: map (its graph cut), marginal "
                        "(superpixels whose marginal is above 1/2) or the labelling of "
                        "largest expected IoU / F-beta (--beta) under the marginals, each "
                        "image on its own; other than map, one model, which needs a "
                        "temperature: a crf model, or one trained with --calibrate "
                        "(default %(default)s)")
    p.add_argument("--beta", type=float, default=BETA,
                   help="beta of --decision expected-fbeta (default %(default)s)")
    p.add_argument("--samples", type=int, default=SAMPLES, metavar="S",
                   help="with --decision expected-iou or expected-fbeta: estimate each "
                        "image's expected measure from S Gibbs samples of the model "
                        "(candidates: the thresholds of the marginals and the samples), "
                        "instead of taking the measure of the expected counts (default "
                        "%(default)s)")
    add_ensemble_option(p)
    p.add_argument("--overlay", action="store_true",
                   help="also write DIR/<id>.jpg: the image with its labels drawn on it")
    p.add_argument("--recursive", action="store_true",
                   help="with --images: also label the images in the folders' subfolders "
                        "(default: only the folders' own files; skipped subfolders are "
                        "named)")
    p.add_argument("--skip-bad", action="store_true",
                   help="label the images that can be read and list the others, with "
                        "why, under 'unreadable' in index.json (default: every image is "
                        "checked before any work, and one that cannot be read stops the "
                        "run, with every such file named)")
    p.add_argument("--force", action="store_true",
                   help="delete the files an earlier run wrote to --out that this run does "
                        "not write again (default: they are kept and named)")


def _source(args):
    """(images, their ids, how the index names them, {path: why} of the
    images that cannot be read), every image checked before any work.

    Raises
    ------
    UsageError
        Some image cannot be read and ``--skip-bad`` is not given: every
        such file is named, and nothing has been written.
    """
    if args.images is not None:
        given = ImageFiles(args.images, recursive=args.recursive)
        for folder in given.skipped_folders:
            print(f"note: images in subfolder {folder} are not labelled (give it in "
                  "--images, or --recursive, to label them)", file=sys.stderr)
        # every file decoded once here: a bad one is named before any work
        _, failed = given.check_each(decode=True)
        source, ids = given.without(failed), [i for i in given.ids() if i not in failed]
        bad = {str(given.image_path(i)): why for i, why in failed.items()}
        described: dict = {"images": [str(source.image_path(i)) for i in ids]}
    else:
        if args.recursive:
            raise UsageError("--recursive goes with --images; --data labels a split")
        source = VOCDataset(args.data)
        split = args.split or "val"
        failed = {}
        for image_id in source.ids(split):
            try:
                source.image_size(image_id)        # every header, before any work
            except DatasetError as err:
                failed[image_id] = str(err)
        ids = [i for i in source.ids(split) if i not in failed]
        bad = {str(source.image_path(i)): why for i, why in failed.items()}
        described = {"data_root": str(source.root), "split": split}
    if bad and not args.skip_bad:
        raise UsageError(f"{count(len(bad), 'image')} cannot be read (label the others with "
                         "--skip-bad):\n" + "\n".join(f"  {why}" for why in bad.values()))
    if bad:
        print(f"skipping {count(len(bad), 'image')} that cannot be read (--skip-bad; listed under "
              "'unreadable' in index.json):", file=sys.stderr)
        for why in bad.values():
            print(f"  {why}", file=sys.stderr)
    return source, ids, described, bad


def _check_out(out: Path, inputs: set, overlay: bool, ids, folders=()) -> None:
    """Refuse an --out that would mix the predictions with the images (it
    holds input images, or is or lies inside a folder given in ``folders``,
    whose subfolders a later --recursive run would read), or with files that
    are not an earlier run's predictions."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder")
    folder = out.resolve()
    given_folders = {Path(f).resolve() for f in folders}
    for given in sorted({path.parent for path in inputs} | given_folders):
        if folder == given or (given in given_folders and given in folder.parents):
            raise UsageError(f"--out {out} is{' inside' if folder != given else ''} the input "
                             f"folder {given}: the masks would mix with the images (and be "
                             "taken for images by a later run); give a folder outside it")
    if out.is_dir() and any(out.iterdir()) and not (out / "index.json").exists():
        raise UsageError(f"--out {out} is not empty and holds no earlier predictions "
                         "(index.json): give a new or empty folder")
    suffixes = (".png", ".jpg") if overlay else (".png",)
    for image_id in ids:
        for suffix in suffixes:
            target = (out / f"{image_id}{suffix}").resolve()
            if target in inputs:
                raise UsageError(f"writing {target} would overwrite an input image: give "
                                 "another --out folder")


def _stale(out: Path, entries: list[dict]) -> list[str]:
    """Files of earlier runs in ``out`` that this run did not write again: the
    earlier index.json's masks and overlays, and the files it kept from runs
    before it (``stale``), those that still exist."""
    path = out / "index.json"
    if not path.exists():
        return []
    try:
        earlier = json.loads(path.read_text())
        named = [e[k] for e in earlier.get("images", []) if isinstance(e, dict)
                 for k in ("mask", "overlay") if k in e]
        named += [name for name in earlier.get("stale", []) if isinstance(name, str)]
    except (OSError, ValueError, AttributeError, TypeError):
        return []
    written = {e[k] for e in entries for k in ("mask", "overlay") if k in e}
    return sorted({name for name in named if name not in written and "/" not in name
                   and (out / name).is_file()})


def _check_decision(args, models) -> None:
    """Refuse a --decision the models cannot make (before any feature)."""
    if args.beta != 1.0 and args.decision != "expected-fbeta":
        raise UsageError("--beta applies only to --decision expected-fbeta")
    if not (args.beta > 0 and args.beta < float("inf")):
        raise UsageError(f"--beta must be a positive number, got {args.beta}")
    if args.samples < 0 or (args.samples and not args.decision.startswith("expected")):
        raise UsageError("--samples takes a count >= 0 and applies only to --decision "
                         "expected-iou or expected-fbeta")
    if args.ensemble not in (None, 1) and args.decision != "map":
        raise UsageError(f"--ensemble decides by the models' scores: it goes with --decision "
                         f"map, not {args.decision}")
    if args.decision == "map":
        return
    if len(models) != 1:
        raise UsageError(f"--decision {args.decision} labels one class from its marginals: "
                         f"give one --model (got {len(models)}), or use --decision map to "
                         "combine class models")
    if getattr(models[0].estimator, "temperature_", None) is None:
        raise UsageError(f"{models[0].path} has no temperature for its marginals (its "
                         f"method, {models[0].doc.get('method')}, scores by margins): train "
                         "it again with --calibrate, or use a crf model, or --decision map")


def execute(args) -> int:
    from segstruct.io.progress import progress_bar
    from segstruct.predict import predict_to_folder, prediction_index
    if args.images is not None and args.data is not None:
        raise UsageError("give --images (any image files) or --data (a VOC-layout data set "
                         "with --split), not both")
    if args.images is None and args.data is None:
        raise UsageError("give the images to label: --images FILE_OR_DIR ... (any images) "
                         "or --data ROOT with --split (a VOC-layout data set)")
    if args.images is not None and args.split is not None:
        raise UsageError("--split goes with --data; --images labels every image it names")
    out = args.out
    refuse_overwriting(out / "index.json", args.model)
    models, detectors = class_models(args.model)
    source, ids, described, bad = _source(args)
    if not ids:
        raise UsageError("no image could be read:\n" + "\n".join(
            f"  {path}: {why}" for path, why in bad.items()))
    # an output must never replace an input, nor mix with the images
    folders = [f for f in args.images or () if Path(f).is_dir()]
    _check_out(out, {source.image_path(i).resolve() for i in ids}, args.overlay, ids, folders)
    first = models[0]
    _check_decision(args, models)
    configs = ensemble_configs(args, first.config, args.decision)
    extractor, *variants = [make_extractor(args, source, c, first.codebook, detectors)
                            for c in configs]
    start = time.perf_counter()
    bar = (lambda total: progress_bar(total, "predict", unit="image")) \
        if show_progress(args) else None
    entries = predict_to_folder(models, extractor, ids, out, overlay=args.overlay, bar=bar,
                                decision=args.decision, beta=args.beta,
                                samples=args.samples, variants=variants)
    stale = _stale(out, entries)
    index = prediction_index(models, described, entries, time.perf_counter() - start,
                             decision=args.decision, beta=args.beta, samples=args.samples,
                             superpixels=[c.superpixels for c in configs])
    if bad:
        index["unreadable"] = [{"image": path, "error": why} for path, why in bad.items()]
    if stale and args.force:
        for name in stale:
            (out / name).unlink()
    elif stale:
        index["stale"] = stale            # still named by the next run, and by --force
    write_json(out / "index.json", index)
    labelled = sum(1 for e in entries if e["class_pixels"])
    used = ", ".join(f"{m.class_name} ({m.doc['method']})" for m in models)
    if variants:
        used += f", an ensemble of {len(configs)} members (--ensemble 1: the graph cut alone)"
    print(f"labelled {count(len(entries), 'image')} ({labelled} with some foreground) with "
          f"{used} in {index['seconds']:.1f} s; wrote {out}/<id>.png"
          f"{' and .jpg' if args.overlay else ''} and {out / 'index.json'}")
    if stale:
        said = ", ".join(stale[:5]) + (", ..." if len(stale) > 5 else "")
        files = count(len(stale), "file")
        print(f"note: deleted {files} of an earlier run that this one did not "
              f"write (--force): {said}" if args.force else
              f"note: {out} keeps {files} of an earlier run that this one did not "
              f"write (not in index.json now; --force deletes them): {said}", file=sys.stderr)
    return 0
