"""``segstruct detector``: train (or read from the cache) a class's detectors
for the top-down block and report their VOC average precision, with a figure
of detections and average shapes."""
from __future__ import annotations

import time
from pathlib import Path

from segstruct.cli.common import UsageError, open_dataset, show_progress, voc_class
from segstruct.cli.settings import codebook_split, make_extractor
from segstruct.datasets import DatasetError
from segstruct.io.files import write_json
from segstruct.io.provenance import code_version, data_provenance
from segstruct.io.text import count
from segstruct.report.tables import fmt

HELP = ("train (or load from the cache) a class's object detector for the top-down "
        "features and report its VOC average precision, with a figure of detections and "
        "average shapes")
FEATURES = True


def add_arguments(p) -> None:
    p.add_argument("--class", dest="class_name", required=True, type=voc_class,
                   metavar="CLASS",
                   help="VOC class name to detect")
    p.add_argument("--split", default="val",
                   help="split the average precision is measured on (default "
                        "%(default)s; the detector is trained on --codebook-split, "
                        "default train)")
    p.add_argument("--out", type=Path, default=Path("segstruct-detector"), metavar="DIR",
                   help="writes DIR/detector-CLASS.json and .png (default ./%(default)s)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--images", nargs="+", metavar="ID",
                       help="image ids to draw (default: those with the most confident "
                            "detections)")
    which.add_argument("--figure-images", type=int, default=4, metavar="N",
                       help="images in the figure (default %(default)s)")


def _percent(ap) -> str:
    return fmt(None if ap is None else 100 * ap, ".1f")


def execute(args) -> int:
    from segstruct.evaluate.detection import best_images, detectors_report
    from segstruct.report.figures import detector_figure, save_figure
    if args.figure_images < 1:
        raise UsageError("--figure-images must be at least 1")
    if args.no_top_down:
        raise UsageError("--no-top-down switches off the block whose detector this "
                         "command reports")
    dataset = open_dataset(args)
    missing = sorted(set(args.images or ()) - set(dataset.ids(args.split)))
    if missing:
        raise DatasetError(f"image id(s) {', '.join(missing)} are not in split "
                           f"{args.split!r} of {dataset.root}")
    extractor = make_extractor(args, dataset)
    trained_on = codebook_split(args)
    if trained_on == args.split:
        raise UsageError(f"--split {args.split} is the split the detector is trained on; "
                         "score it on another (e.g. val)")
    start = time.perf_counter()
    # the detectors the block of new images comes from: the folds' with
    # cross-fitting (each trained without one fold of the split), else one
    detectors = extractor.block_detectors(args.class_name)
    report = detectors_report(dataset, detectors, args.split, n_jobs=args.n_jobs,
                              progress=show_progress(args), long_side=extractor.long_side,
                              upsampling=extractor.config.upsampling)
    aps = report["detector_average_precision"]
    k = len(detectors)
    which = (f"{k} detectors, each trained on {dataset.name}/{trained_on} without one of "
             f"{k} folds" if k > 1 else f"detector (trained on {dataset.name}/{trained_on})")
    each = f" (per detector: {', '.join(_percent(a) for a in aps)})" if k > 1 else ""
    print(f"{args.class_name} {which} on {dataset.name}/{args.split}: VOC AP "
          f"{_percent(report['average_precision'])} %{each} "
          f"over {count(report['n_objects'], 'object')} in {count(report['n_images'], 'image')} "
          f"({count(report['n_ignored'], 'small or void box', 'small or void boxes')} ignored; "
          f"{time.perf_counter() - start:.1f} s)")
    args.out.mkdir(parents=True, exist_ok=True)
    sd = detectors[0]
    record = {**{key: v for key, v in report.items() if key != "per_image"},
              **data_provenance(extractor), "train_split": trained_on,
              "shape_counts": sd.shapes.counts.tolist()}
    json_path = args.out / f"detector-{args.class_name}.json"
    write_json(json_path, record)
    ids = args.images or best_images(report, args.figure_images)
    panels = [{"image_id": i, "image": dataset.read_image(i), **report["per_image"][i]}
              for i in ids]
    params = sd.params
    caption = (f"data {dataset.name}/{args.split}; class {args.class_name}; detector "
               f"{f'1 of {k} (cross-fitted), ' if k > 1 else ''}"
               f"trained on {trained_on}: {params.n_components} components x "
               f"(root + {params.n_parts} parts), HOG cells {params.cell} px, seed "
               f"{params.seed}; VOC AP {_percent(aps[0])} %; code {code_version()}")
    png = save_figure(detector_figure(panels, sd.shapes, caption),
                      args.out / f"detector-{args.class_name}.png")
    print(f"wrote {json_path} and {png}")
    return 0
