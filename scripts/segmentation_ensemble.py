"""Does averaging over several superpixelisations help? Each model labels a
split's images as ``segstruct predict --ensemble K`` does (``segstruct.ensemble``):
once per SLIC setting (its own number of segments times each ``--factors``
value, its codebook, detectors and weights unchanged), a pixel's score the
mean of the max-marginals (``decision_function``) of the superpixels holding
it, and the pixel the class where that mean is > 0. With one factor of 1
this is the model's own prediction. The default factors and their order
(``segstruct.ensemble.FACTORS``) were chosen on the first 30 horse val
images (bl1); judge them on other data.

    python scripts/segmentation_ensemble.py --data ../shared/data/weizmann_horse_voc \
        --model runs/horse-bl1 --out out/segmentation_ensemble/weizmann_horse_voc

For each ensemble size in ``--sizes`` (the first k factors, in the order
given) it reports the split's VOC IoU % of the class, and with ``--scale N``
also, on the split's first N images, the share of pixels on which the mask
of the image agrees with the masks of its bicubic 2x and 4x copies, as
``scripts/scale_agreement.py`` measures it. Writes ``results.json`` and
``table.md`` to ``--out``; a second run reuses the cached features (``--cache``).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

CHUNK = 16          # images whose painted scores are held at once
SIZES = (1, 3, 5)


def ensemble_masks(model, source, ids, configs, sizes, cache, n_jobs) -> dict:
    """Per ensemble size k: per image, the mask of the first k configs'
    mean scores (``segstruct.ensemble``), (H, W) bool at the image's size;
    and per ("alone", n): the mask of the n-th config's run alone."""
    from segstruct.ensemble import add_painted_scores, combine_scores
    from segstruct.features.scale import resize_labels
    totals: list = [None] * len(ids)
    out: dict = {}
    # the members made together: each image's descriptors and detector masks once
    per_image = replace(model, config=configs[0]).extractor(source, cache, n_jobs).variant_graphs(
        ids, [c.superpixels for c in configs],
        model.class_name if configs[0].detector else None)
    for n in range(1, len(configs) + 1):
        graphs = [runs[n - 1] for runs in per_image]
        shapes = [g.shape for g in graphs]
        # summed at the working resolution; each decision resized to the image
        scores = [add_painted_scores(None, [model], [g]) for g in graphs]
        out["alone", n] = [resize_labels(s[0] > 0, shape) for s, shape in zip(scores, shapes)]
        totals = [s if t is None else t + s for t, s in zip(totals, scores)]
        if n in sizes:
            out[n] = [resize_labels(combine_scores(t, [1]).astype(bool), shape)
                      for t, shape in zip(totals, shapes)]
    return out


def per_image_counts(model, dataset, ids, configs, sizes, cache, n_jobs) -> dict:
    """Per ensemble size and per ("alone", n) as :func:`ensemble_masks`:
    (images, 3) int64 (TP, FP, FN) pixels of the class per image of ``ids``
    (VOC: void pixels excluded)."""
    counts: dict = {}
    for start in range(0, len(ids), CHUNK):
        part = ids[start:start + CHUNK]
        masks = ensemble_masks(model, dataset, part, configs, sizes, cache, n_jobs)
        truth = [dataset.read_mask(i) for i in part]
        for key, per_image in masks.items():
            for mask, gt in zip(per_image, truth):
                valid = gt != 255
                obj = (gt == model.label) & valid
                counts.setdefault(key, []).append(
                    [np.sum(mask & obj), np.sum(mask & ~obj & valid), np.sum(~mask & obj)])
        print(f"{model.path.name}: {min(start + CHUNK, len(ids))}/{len(ids)} images "
              + " ".join(f"{k}: {pooled_iou(counts[k]):.2f}" for k in sizes), flush=True)
    return {key: np.array(c, np.int64) for key, c in counts.items()}


def pooled_iou(per_image) -> float:
    """VOC IoU % of (images, 3) (TP, FP, FN) counts, pooled."""
    tp, fp, fn = np.sum(per_image, axis=0)
    return 100 * float(tp) / max(int(tp + fp + fn), 1)


def scale_agreement(model, dataset, ids, configs, sizes, cache, n_jobs) -> dict:
    """Per ensemble size and factor 2 / 4: per image, the share of the copy's
    pixels whose mask agrees with the image's mask blown up by pixel replication."""
    from PIL import Image

    from segstruct.datasets import ImageFiles
    out = {k: {"x2": [], "x4": []} for k in sizes}
    with tempfile.TemporaryDirectory(prefix="segstruct-") as folder:
        for image_id in ids:
            image = Image.open(dataset.image_path(image_id)).convert("RGB")
            files = []
            for f in (1, 2, 4):
                files.append(Path(folder) / f"{image_id}-x{f}.png")
                copy = image if f == 1 else image.resize((image.width * f, image.height * f),
                                                         Image.BICUBIC)
                copy.save(files[-1])
            masks = ensemble_masks(model, ImageFiles(files), [p.stem for p in files],
                                   configs, sizes, cache, n_jobs)
            for k in sizes:
                own, *larger = masks[k]
                for f, m in zip((2, 4), larger):
                    out[k][f"x{f}"].append(float(np.mean(m == np.kron(own, np.ones((f, f),
                                                                                   bool)))))
    return out


def write_table(out: Path, doc: dict, name: str) -> None:
    """``table.md`` of a results document: per model, its C, its own train
    IoU and the IoU (and agreement) of each ensemble size and each run alone."""
    from segstruct.io.files import write_text
    sizes, scale = doc["sizes"], doc["scale_images"]
    head = ["model", "class", "method", "C", "train IoU % (own)"]
    head += [f"IoU % of {k}" for k in sizes] + ["each run alone: IoU %"]
    head += [f"{max(sizes)} - {min(sizes)}: points [95 % interval]"] if len(sizes) > 1 else []
    head += [f"{k}: 2x / 4x agreement %" for k in sizes] if scale else []
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in doc["models"]:
        own = r["train_iou_own"]
        cells = ["/".join(Path(r["model"]).parts[-2:]), r["class"], r["method"], f"{r['C']:g}",
                 "?" if own is None else f"{own:.2f}"]
        cells += [f"{r['iou'][str(k)]:.2f}" for k in sizes]
        cells.append(" / ".join(f"{v:.2f}" for v in r["iou_alone"].values()))
        if "bootstrap" in r:
            b = r["bootstrap"]
            cells.append(f"{b['difference']:+.2f} [{b['interval'][0]:+.2f}, "
                         f"{b['interval'][1]:+.2f}]")
        if scale:
            cells += [f"{r['agreement'][str(k)]['x2']:.1f} / {r['agreement'][str(k)]['x4']:.1f}"
                      for k in sizes]
        lines.append("| " + " | ".join(cells) + " |")
    text = ("# Masks averaged over several superpixelisations\n\n" + "\n".join(lines)
            + "\n\nEnsemble of k: the mean max-marginal per pixel over the first k SLIC "
            f"settings (segment counts {doc['factors']} times the model's, in that order; "
            "1 = the model's own prediction); each run alone: the model's masks at each of "
            "those segment counts, in that order; the difference of the largest and the "
            "smallest ensemble, with its paired bootstrap interval over the images. Train "
            "IoU: the model's own masks on its training split, from its file. VOC IoU on "
            f"data {name}, split {doc['split']} ({doc['n_images']} images)")
    if scale:
        text += (f"; agreement of the masks of its first {scale} images with those of "
                 "their bicubic 2x / 4x copies")
    text += f"; code {doc['code_version']}. Made by `python scripts/segmentation_ensemble.py`.\n"
    write_text(out / "table.md", text)


def main(argv=None) -> int:
    from segstruct import SegmentationModel
    from segstruct.datasets import VOCDataset
    from segstruct.ensemble import FACTORS, superpixel_variants
    from segstruct.evaluate.bootstrap import paired_bootstrap
    from segstruct.features.cache import ArrayCache
    from segstruct.io.files import write_json
    from segstruct.io.provenance import code_version, machine
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path, help="a VOC-style data set")
    p.add_argument("--model", nargs="+", required=True, type=Path,
                   help="model paths (without .json)")
    p.add_argument("--factors", nargs="+", type=float, default=list(FACTORS),
                   help="SLIC segment counts as multiples of the model's, in the order "
                        "the ensembles take them (default %(default)s)")
    p.add_argument("--sizes", nargs="+", type=int, default=list(SIZES),
                   help="ensemble sizes: the first k factors (default %(default)s)")
    p.add_argument("--split", default="val", help="split scored (default val)")
    p.add_argument("--images", type=int, default=None,
                   help="score the split's first N images only (default all)")
    p.add_argument("--scale", type=int, default=0, metavar="N",
                   help="also the agreement under 2x / 4x enlargement on the split's "
                        "first N images (default 0: not measured)")
    p.add_argument("--cache", type=Path, default=None,
                   help="feature cache folder (default: the user's)")
    p.add_argument("-j", "--n-jobs", type=int, default=1, help="feature workers (default 1)")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    args = p.parse_args(argv)
    if any(f <= 0 for f in args.factors) or any(not 1 <= k <= len(args.factors)
                                                for k in args.sizes):
        p.error("--factors must be > 0 and every --sizes value between 1 and their number")
    dataset = VOCDataset(args.data)
    ids = dataset.ids(args.split)[:args.images]
    cache = ArrayCache(args.cache) if args.cache else ArrayCache()
    results = []
    for path in args.model:
        model = SegmentationModel.load(path)
        try:
            configs = superpixel_variants(model.config, len(args.factors), args.factors)
        except ValueError as err:
            raise SystemExit(f"{path}: {err}") from None
        counts = per_image_counts(model, dataset, ids, configs, args.sizes, cache,
                                  args.n_jobs)
        row = {"model": str(path), "class": model.class_name, "method": model.method,
               "C": model.estimator.C, "n_segments": [c.superpixels.n_segments
                                                       for c in configs],
               "model_code_version": model.doc.get("code_version"),
               "train_iou_own": (model.doc.get("train_score") or {}).get("voc_iou_percent"),
               "iou": {str(k): pooled_iou(counts[k]) for k in args.sizes},
               "iou_alone": {f"{f:g}": pooled_iou(counts["alone", n])
                             for n, f in enumerate(args.factors, 1)},
               "per_image_tp_fp_fn": {str(k): counts[k].tolist() for k in args.sizes}}
        if len(args.sizes) > 1:
            # is the largest ensemble's gain over the smallest more than the
            # luck of which images the split holds?
            row["bootstrap"] = paired_bootstrap(counts[max(args.sizes)],
                                                counts[min(args.sizes)])
        if args.scale:
            agree = scale_agreement(model, dataset, ids[:args.scale], configs, args.sizes,
                                    cache, args.n_jobs)
            row["agreement"] = {str(k): {f: 100 * float(np.mean(v)) for f, v in a.items()}
                                for k, a in agree.items()}
            row["agreement_per_image"] = {str(k): a for k, a in agree.items()}
        results.append(row)
    doc = {"data": str(args.data), "split": args.split, "n_images": len(ids),
           "scale_images": min(args.scale, len(ids)), "factors": args.factors,
           "sizes": args.sizes, "code_version": code_version(), "machine": machine(),
           "models": results}
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "results.json", doc)
    write_table(args.out, doc, dataset.name)
    print((args.out / "table.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
