"""Does a photo's size change its mask? For each model, the share of pixels
on which the mask of a val image agrees with the masks of its 2x and 4x
up-sampled copies (bicubic; each copy's mask compared with the image's mask
blown up by pixel replication).

    python scripts/scale_agreement.py --data ../shared/data/weizmann_horse_voc \
        --model runs/horse-auto runs/horse-none --images 20 --out results/scale_agreement

Each model labels the image and its copies through ``SegmentationModel.predict``
(its own working resolution: a model trained with ``--long-side none`` works
on every copy at its own size). Writes ``results.json``, ``table.md`` and
``figure.png`` (per-image agreement) to ``--out``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

FACTORS = (2, 4)


def agreement(model, dataset, ids, cache) -> list[dict]:
    """Per image: the share of pixels where each copy's mask agrees with the image's."""
    from PIL import Image
    rows = []
    for image_id in ids:
        image = Image.open(dataset.image_path(image_id))
        copies = [image.resize((image.width * f, image.height * f), Image.BICUBIC)
                  for f in FACTORS]
        own, *larger = model.predict([image, *copies], cache=cache)
        rows.append({"id": image_id, "size": list(image.size),
                     "foreground_share": float(own.mean()),
                     **{f"x{f}": float(np.mean(m == np.kron(own, np.ones((f, f), own.dtype))))
                        for f, m in zip(FACTORS, larger)}})
        print(f"{image_id} {image.size} " + " ".join(
            f"x{f} {100 * rows[-1][f'x{f}']:.1f} %" for f in FACTORS), flush=True)
    return rows


def main(argv=None) -> int:
    from segstruct import SegmentationModel
    from segstruct.datasets import VOCDataset
    from segstruct.features.cache import ArrayCache
    from segstruct.io.files import write_json, write_text
    from segstruct.io.provenance import code_version, machine
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path, help="a VOC-style data set")
    p.add_argument("--model", nargs="+", required=True, type=Path,
                   help="model paths (without .json)")
    p.add_argument("--split", default="val", help="split whose images are used (default val)")
    p.add_argument("--images", type=int, default=20,
                   help="the split's first N images (default 20)")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    args = p.parse_args(argv)
    dataset = VOCDataset(args.data)
    ids = dataset.ids(args.split)[:args.images]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.model:
            model = SegmentationModel.load(path)
            long_side = model.config.long_side
            print(f"{path}: long side {long_side}", flush=True)
            rows = agreement(model, dataset, ids, ArrayCache(Path(tmp) / path.name))
            results.append({"model": str(path), "method": model.doc["method"],
                            "class": model.class_name, "long_side": long_side,
                            "model_code_version": model.doc.get("code_version"),
                            "rows": rows,
                            **{f"mean_x{f}": float(np.mean([r[f"x{f}"] for r in rows]))
                               for f in FACTORS},
                            **{f"min_x{f}": float(np.min([r[f"x{f}"] for r in rows]))
                               for f in FACTORS}})
    doc = {"data": str(args.data), "split": args.split, "n_images": len(ids),
           "factors": list(FACTORS), "code_version": code_version(), "machine": machine(),
           "models": results}
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "results.json", doc)
    caption = (f"data {dataset.name}, split {args.split}, its first {len(ids)} images; "
               f"code {code_version()}")
    lines = ["| model | method | class | long side | 2x: mean (min) % | 4x: mean (min) % |",
             "|---|---|---|---|---|---|"]
    for r in results:
        side = "as given" if r["long_side"] is None else f"{r['long_side']} px"
        lines.append(f"| {Path(r['model']).name} | {r['method']} | {r['class']} | {side} | "
                     + " | ".join(f"{100 * r[f'mean_x{f}']:.1f} ({100 * r[f'min_x{f}']:.1f})"
                                  for f in FACTORS) + " |")
    write_text(args.out / "table.md",
               "# Same mask for an image and its enlarged copies\n\n" + "\n".join(lines)
               + "\n\nShare of pixels where the mask of a bicubic 2x / 4x copy agrees with "
               "the image's own mask (pixel-replicated); " + caption + ".\n")
    _figure(results, args.out / "figure.png", caption)
    print((args.out / "table.md").read_text())
    return 0


def _figure(results, path: Path, caption: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, r in enumerate(results):
        side = "as given" if r["long_side"] is None else f"long side {r['long_side']}"
        for j, f in enumerate(FACTORS):
            values = [100 * row[f"x{f}"] for row in r["rows"]]
            x = k * (len(FACTORS) + 1) + j
            ax.scatter(np.full(len(values), x), values, s=12, alpha=0.6)
            ax.plot([x - 0.3, x + 0.3], [np.mean(values)] * 2, color="black")
            ax.annotate(f"{f}x\n{side}", (x, 0), textcoords="offset points",
                        xytext=(0, -28), ha="center", fontsize=7, annotation_clip=False)
    ax.set_xticks([])
    ax.set_ylabel("pixels agreeing with the image's mask (%)")
    ax.set_ylim(0, 100)
    ax.set_title(caption, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
