"""``segstruct predict``: label new images with trained models."""
from __future__ import annotations

import time
from pathlib import Path

from segstruct.cli.common import UsageError, class_models, refuse_overwriting, show_progress
from segstruct.cli.settings import make_extractor
from segstruct.datasets import ImageFiles, VOCDataset
from segstruct.io.files import write_json

HELP = ("label new images with trained models: one VOC palette PNG per image (class index "
        "per pixel), optional overlays, and an index")
FEATURES = False


def add_arguments(p) -> None:
    p.add_argument("--model", nargs="+", action="extend", required=True, type=Path,
                   metavar="MODEL",
                   help="one model per class, all trained on the same features; with "
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
    p.add_argument("--overlay", action="store_true",
                   help="also write DIR/<id>.jpg: the image with its labels drawn on it")


def _source(args):
    """(images, their ids, how the index names them), every header read."""
    if args.images is not None:
        source = ImageFiles(args.images)
        source.check()                     # every file is an image, before any work
        ids = source.ids()
        return source, ids, {"images": [str(source.image_path(i)) for i in ids]}
    source = VOCDataset(args.data)
    split = args.split or "val"
    ids = source.ids(split)
    for image_id in ids:
        source.image_size(image_id)        # every header, before any work
    return source, ids, {"data_root": str(source.root), "split": split}


def run(args) -> int:
    from tqdm import tqdm

    from segstruct.predict import predict_to_folder, prediction_index
    if (args.images is None) == (args.data is None):
        raise UsageError("give the images to label: --images FILE_OR_DIR ... (any images) "
                         "or --data ROOT with --split (a VOC-layout data set)")
    if args.images is not None and args.split is not None:
        raise UsageError("--split goes with --data; --images labels every image it names")
    out = args.out
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder")
    refuse_overwriting(out / "index.json", args.model)
    models, detectors = class_models(args.model)
    source, ids, described = _source(args)
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
    extractor = make_extractor(args, source, first.config, first.codebook, detectors)
    start = time.perf_counter()
    bar = (lambda total: tqdm(total=total, desc="predict", unit="image")) \
        if show_progress(args) else None
    entries = predict_to_folder(models, extractor, ids, out, overlay=args.overlay, bar=bar)
    index = prediction_index(models, described, entries, time.perf_counter() - start)
    write_json(out / "index.json", index)
    labelled = sum(1 for e in entries if e["class_pixels"])
    used = ", ".join(f"{m.class_name} ({m.doc['method']})" for m in models)
    print(f"labelled {len(entries)} images ({labelled} with some foreground) with {used} in "
          f"{index['seconds']:.1f} s; wrote {out}/<id>.png"
          f"{' and .jpg' if args.overlay else ''} and {out / 'index.json'}")
    return 0
