"""``segstruct visualize``: input, ground truth and models' masks of some
images as a PNG grid."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from segstruct.cli.common import (UsageError, add_ensemble_option, add_other_data_option,
                                  check_model_data, ensemble_configs, load_models,
                                  model_detectors, open_dataset, refuse_overwriting)
from segstruct.cli.settings import make_extractor
from segstruct.datasets import DatasetError
from segstruct.io.provenance import code_version
from segstruct.io.text import count

HELP = "draw input | ground truth | models' masks for some images as a PNG grid"
FEATURES = False


def add_arguments(p) -> None:
    p.add_argument("--model", nargs="+", action="extend", required=True, type=Path,
                   metavar="MODEL",
                   help="one or more models of the same class and features; one column each")
    p.add_argument("--split", default="val",
                   help="split the images come from (default %(default)s)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--images", nargs="+", metavar="ID",
                       help="image ids to draw (default: the --random draw)")
    which.add_argument("--random", type=int, default=4, metavar="N",
                       help="draw N images of --split chosen with --seed, preferring ones "
                            "that show the class (default %(default)s)")
    p.add_argument("--seed", type=int, default=0,
                   help="random seed of the --random draw (default %(default)s)")
    add_other_data_option(p)
    add_ensemble_option(p, "draw the masks of predict: label")
    p.add_argument("--out", required=True, type=Path, metavar="PNG",
                   help="the PNG file to write")


def execute(args) -> int:
    from segstruct.compare import pick_images, save_qualitative
    if args.images and len(set(args.images)) < len(args.images):
        raise UsageError("an image id is given twice in --images")
    if not args.images and args.random < 1:
        raise UsageError("--random must be at least 1")
    refuse_overwriting(args.out, args.model)
    loaded = load_models(args.model)
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
    dataset = open_dataset(args)
    check_model_data(args, dataset, args.model, [m.doc for m in loaded])
    configs = ensemble_configs(args, config)
    extractor, *variants = [make_extractor(args, dataset, c, codebook, model_detectors(loaded))
                            for c in configs]
    ids = args.images or pick_images(dataset, args.split, first["class"], args.random,
                                     args.seed)
    missing = sorted(set(ids) - set(dataset.ids(args.split)))
    if missing:
        raise DatasetError(f"image id(s) {', '.join(missing)} are not in split "
                           f"{args.split!r} of {dataset.root}")
    masks = None
    if variants:               # the masks predict writes: each model's ensemble
        from segstruct.predict import label_images
        masks = {n: [(labels == m.label).astype(np.uint8) for _, labels in
                     label_images([m], extractor, ids, variants=variants)]
                 for n, m in zip(names, loaded)}
    versions = sorted({m.doc["code_version"] for m in loaded})
    labelled = f"ensemble of {len(configs)}" if variants else "graph cut"
    caption = (f"data {dataset.name}/{args.split}; class {first['class']}; models "
               f"{', '.join(f'{n} ({p})' for n, p in zip(names, args.model))}, each "
               f"{labelled}; trained with code {', '.join(versions)}; drawn with code "
               f"{code_version()}")
    path = save_qualitative(extractor, first["class"], args.split, ids,
                            {n: m.estimator for n, m in zip(names, loaded)},
                            args.out, caption, masks=masks)
    print(f"wrote {path} ({count(len(ids), 'image')}: {', '.join(ids)})")
    return 0

