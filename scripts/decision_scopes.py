"""A model's decisions per image against one decision over the whole split:
the VOC measure (pooled over the split) and the mean of per-image IoU of
``map``, ``expected-iou`` per image (the measure of the expected counts, as
``predict --decision expected-iou`` decides), the same from Gibbs samples
(``predict --samples``), and ``expected-iou`` over the whole split (as
``compare --decisions`` decides).

    python scripts/decision_scopes.py --data ../shared/data/weizmann_horse_voc \
        --model runs/horse-crf --out out/decisions/scopes-horse

Each model needs a temperature (a crf model, or one trained with
``--calibrate``). Writes ``results.json`` and ``table.md`` to ``--out``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np


def scores(estimator, X, Y, labellings) -> tuple[float, float]:
    """(pooled VOC IoU %, mean per-image IoU % over images where it is defined)."""
    from segstruct.evaluate.scoring import VOCScore, superpixel_confusion
    from segstruct.learn.estimators.structured_svm import label_counts
    per_image = []
    for y, counts in zip(labellings, Y):
        one = VOCScore()
        one.add(*superpixel_confusion(y, *label_counts(counts)))
        if one.iou == one.iou:            # NaN: no object and none predicted
            per_image.append(one.iou)
    return 100 * estimator.voc_score(X, Y, labellings).iou, 100 * float(np.mean(per_image))


def main(argv=None) -> int:
    from segstruct import SegmentationModel
    from segstruct.datasets import VOCDataset
    from segstruct.decisions import decide
    from segstruct.features.cache import ArrayCache
    from segstruct.io.files import write_json, write_text
    from segstruct.io.provenance import code_version, machine
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path, help="a VOC-style data set")
    p.add_argument("--model", nargs="+", required=True, type=Path,
                   help="model paths (without .json), each with a temperature")
    p.add_argument("--split", default="val", help="split to decide on (default val)")
    p.add_argument("--samples", type=int, default=200,
                   help="Gibbs samples per image (default 200)")
    p.add_argument("--cache", type=Path, default=None,
                   help="feature cache (default: the library's)")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    args = p.parse_args(argv)
    dataset = VOCDataset(args.data)
    cache = ArrayCache(args.cache) if args.cache else None
    rows = []
    for path in args.model:
        model = SegmentationModel.load(path)
        examples = model.extractor(dataset, cache=cache).examples(args.split, model.class_name)
        X, Y = [e.graph for e in examples], [e.pixel_counts for e in examples]
        for name, kw in (("map", {"decision": "map"}),
                         ("expected-iou per image",
                          {"decision": "expected-iou", "scope": "image"}),
                         (f"expected-iou per image, {args.samples} samples",
                          {"decision": "expected-iou", "scope": "image",
                           "samples": args.samples}),
                         ("expected-iou over the split",
                          {"decision": "expected-iou", "scope": "dataset"})):
            start = time.perf_counter()
            labellings = decide(model.estimator, X, **kw)
            seconds = time.perf_counter() - start
            pooled, mean = scores(model.estimator, X, Y, labellings)
            rows.append({"model": str(path), "method": model.doc["method"],
                         "class": model.class_name, "decision": name,
                         "voc_iou_percent": pooled, "mean_image_iou_percent": mean,
                         "seconds": seconds})
            print(f"{path.name} {name}: VOC {pooled:.2f} %, per image {mean:.2f} % "
                  f"({seconds:.1f} s)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"data": str(args.data), "split": args.split, "samples": args.samples,
           "code_version": code_version(), "machine": machine(), "rows": rows}
    write_json(args.out / "results.json", doc)
    lines = ["| model | method | class | decision | VOC IoU % | mean image IoU % | seconds |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {Path(r['model']).name} | {r['method']} | {r['class']} | {r['decision']} | "
              f"{r['voc_iou_percent']:.2f} | {r['mean_image_iou_percent']:.2f} | "
              f"{r['seconds']:.1f} |" for r in rows]
    write_text(args.out / "table.md",
               f"# Decisions per image against one over the split ({dataset.name}, "
               f"{args.split})\n\n" + "\n".join(lines)
               + f"\n\nVOC IoU: pooled over the split; mean image IoU: over the images where "
               f"it is defined. Gibbs samples seeded (0). Code {code_version()}.\n")
    print((args.out / "table.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
