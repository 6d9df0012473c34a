"""Does a photo's size change its mask? For each model, the share of pixels
on which the mask of a val image agrees with the masks of its 2x and 4x
up-sampled copies (bicubic; each copy's mask compared with the image's mask
blown up by pixel replication). Beside them, the floor: the agreement with a
copy of the same size whose pixels differ from the image's by at most one
grey level (random, seeded), a change no viewer sees and no size is in.

    python scripts/scale_agreement.py --data ../shared/data/weizmann_horse_voc \
        --model runs/horse-auto runs/horse-none --images 20 --out out/scale_agreement

Each model labels the image and its copies through ``SegmentationModel.predict``
(its own working resolution: a model trained with ``--long-side none`` works
on every copy at its own size). Writes ``results.json``, ``table.md`` and
``figure.png`` (per-image agreement) to ``--out``.

With ``--superpixels SETTING ...`` instead of ``--model``, no model is needed:
the image and each copy are brought to the working long side (``--long-side``;
auto: the training split's largest, as the library's default) and
over-segmented, and the table gives how much of the image's superpixels the
copy's keep (the share of pixels in the best-matching superpixel, the smaller
of the two directions) and the mean number of superpixels. A setting is a
method with optional parameters of ``SuperpixelParams``:

    python scripts/scale_agreement.py --data ../shared/data/weizmann_horse_voc \
        --superpixels felzenszwalb felzenszwalb:sigma=0.8,scale=100 slic \
        --images 12 --out out/scale_agreement/superpixels
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

FACTORS = (2, 4)
#: the model mode's columns: the copies compared on their own pixels, then
#: on the image's, then the noise floor
COLUMNS = (tuple(f"x{f}" for f in FACTORS) + tuple(f"x{f}_small" for f in FACTORS)
           + ("noise",))
#: their headings in the table and the figure
HEADINGS = {**{f"x{f}": f"{f}x" for f in FACTORS},
            **{f"x{f}_small": f"{f}x at the image's size" for f in FACTORS},
            "noise": "noise"}


def agreement(model, dataset, ids, cache, seed: int = 0, ensemble: int | None = None
              ) -> list[dict]:
    """Per image: the share of pixels where each copy's mask agrees with the
    image's, and where the mask of the image with one grey level of noise
    ("noise") does; each mask ``model.predict``'s with ``ensemble`` (None:
    the library's default).

    A copy's mask is compared twice: on the copy's pixels, with the image's
    mask blown up by pixel replication ("x2"), which also counts the pixels
    where the copy's finer mask draws a boundary through one of the image's
    pixels; and on the image's pixels, with the copy's mask brought down by
    nearest pixel ("x2_small"), which counts only where the two masks
    disagree about a pixel of the image."""
    from PIL import Image

    from segstruct.features.scale import resize_labels
    rng = np.random.default_rng(seed)
    rows = []
    for image_id in ids:
        image = Image.open(dataset.image_path(image_id)).convert("RGB")
        copies = [image.resize((image.width * f, image.height * f), Image.BICUBIC)
                  for f in FACTORS]
        pixels = np.asarray(image).astype(np.int16)
        noisy = np.clip(pixels + rng.integers(-1, 2, pixels.shape), 0, 255).astype(np.uint8)
        own, *larger, jittered = model.predict([image, *copies, noisy], cache=cache,
                                               ensemble=ensemble)
        rows.append({"id": image_id, "size": list(image.size),
                     "foreground_share": float(own.mean()),
                     **{f"x{f}": float(np.mean(m == np.kron(own, np.ones((f, f), own.dtype))))
                        for f, m in zip(FACTORS, larger)},
                     **{f"x{f}_small": float(np.mean(resize_labels(m, own.shape) == own))
                        for f, m in zip(FACTORS, larger)},
                     "noise": float(np.mean(jittered == own))})
        print(f"{image_id} {image.size} " + " ".join(
            f"{HEADINGS[k]} {100 * rows[-1][k]:.1f} %" for k in COLUMNS), flush=True)
    return rows


def superpixel_setting(text: str):
    """``method[:name=value,...]`` as a ``SuperpixelParams``."""
    from dataclasses import fields

    from segstruct.features.superpixels import SuperpixelParams
    method, _, rest = text.partition(":")
    types = {f.name: f.type for f in fields(SuperpixelParams)}
    values: dict = {"method": method}
    for item in filter(None, rest.split(",")):
        name, _, value = item.partition("=")
        if name not in types or name == "method":
            raise argparse.ArgumentTypeError(
                f"{text!r}: unknown superpixel parameter {name!r}; use "
                + ", ".join(n for n in types if n != "method"))
        try:
            values[name] = int(value) if types[name] in ("int", int) else float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: {name} must be a number, "
                                             f"got {value!r}") from None
    try:
        return SuperpixelParams(**values)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """How much two partitions of the same pixels agree: the share of pixels
    lying in the superpixel of ``b`` that overlaps their superpixel of ``a``
    most, and the same from ``b`` to ``a``; the smaller of the two (1 only
    for the same partition)."""
    table = np.zeros((a.max() + 1, b.max() + 1), np.int64)
    np.add.at(table, (a.ravel(), b.ravel()), 1)
    return float(min(table.max(1).sum(), table.max(0).sum()) / a.size)


def superpixel_agreement(settings, dataset, ids, long_side,
                         upsampling: str = "linear") -> list[dict]:
    """Per setting: per image, the overlap of the image's superpixels with
    each copy's, at the working long side, and the image's superpixel count."""
    from PIL import Image

    from segstruct.features.scale import resize_image, working_shape
    from segstruct.features.superpixels import segment
    working = []
    for image_id in ids:
        pixels = dataset.read_image(image_id)
        shape = working_shape(pixels.shape, long_side)
        image = Image.fromarray(pixels)
        copies = [np.asarray(image.resize((image.width * f, image.height * f), Image.BICUBIC))
                  for f in FACTORS]
        working.append((image_id, [resize_image(x, shape, upsampling)
                                   for x in (pixels, *copies)]))
    out = []
    for params in settings:
        rows = []
        for image_id, (own, *larger) in working:
            labels = segment(own, params)
            rows.append({"id": image_id, "superpixels": int(labels.max() + 1),
                         **{f"x{f}": overlap(labels, segment(x, params))
                            for f, x in zip(FACTORS, larger)}})
        out.append({"params": params.to_dict(), "rows": rows,
                    "mean_superpixels": float(np.mean([r["superpixels"] for r in rows])),
                    **{f"mean_x{f}": float(np.mean([r[f"x{f}"] for r in rows]))
                       for f in FACTORS},
                    **{f"min_x{f}": float(np.min([r[f"x{f}"] for r in rows]))
                       for f in FACTORS}})
        print(params.describe() + " " + " ".join(
            f"x{f} {100 * out[-1][f'mean_x{f}']:.1f} %" for f in FACTORS), flush=True)
    return out


def _superpixel_main(args, dataset, ids) -> int:
    from segstruct.features.scale import auto_long_side
    from segstruct.features.superpixels import SuperpixelParams
    from segstruct.io.files import write_json, write_text
    from segstruct.io.provenance import code_version, machine
    long_side = args.long_side
    if long_side == "auto":
        long_side = auto_long_side(dataset.image_size(i) for i in dataset.ids(args.train_split))
    results = superpixel_agreement(args.superpixels, dataset, ids, long_side, args.upsampling)
    doc = {"data": str(args.data), "split": args.split, "n_images": len(ids),
           "factors": list(FACTORS), "long_side": long_side, "upsampling": args.upsampling,
           "code_version": code_version(),
           "machine": machine(), "settings": results}
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "results.json", doc)
    side = ("images as given" if long_side is None
            else f"working long side {long_side} px, smaller images enlarged by "
                 f"{args.upsampling}")
    lines = ["| superpixels | superpixels per image | 2x: mean (min) % | 4x: mean (min) % |",
             "|---|---|---|---|"]
    for r in results:
        lines.append(f"| {SuperpixelParams(**r['params']).describe()} | "
                     f"{r['mean_superpixels']:.1f} | "
                     + " | ".join(f"{100 * r[f'mean_x{f}']:.1f} ({100 * r[f'min_x{f}']:.1f})"
                                  for f in FACTORS) + " |")
    write_text(args.out / "table.md",
               "# Same superpixels for an image and its enlarged copies\n\n"
               + "\n".join(lines)
               + f"\n\nAt the {side}: the share of pixels in the superpixel of a bicubic "
               "2x / 4x copy that overlaps their superpixel of the image most (the smaller "
               "of the two directions; 100 % only for the same superpixels); data "
               f"{dataset.name}, split {args.split}, its first {len(ids)} images; code "
               f"{code_version()}. Made by `python scripts/scale_agreement.py --superpixels "
               "...`.\n")
    print((args.out / "table.md").read_text())
    return 0


def main(argv=None) -> int:
    from segstruct import SegmentationModel
    from segstruct.datasets import VOCDataset
    from segstruct.ensemble import default_members
    from segstruct.features.cache import ArrayCache
    from segstruct.features.superpixels import SuperpixelParams
    from segstruct.io.files import write_json, write_text
    from segstruct.io.provenance import code_version, machine
    from segstruct.report.tables import blocks_text
    p = _parser()
    args = p.parse_args(argv)
    dataset = VOCDataset(args.data)
    ids = dataset.ids(args.split)[:args.images]
    if args.superpixels:
        return _superpixel_main(args, dataset, ids)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.model:
            model = SegmentationModel.load(path)
            long_side = model.config.long_side
            print(f"{path}: long side {long_side}", flush=True)
            runs = args.ensemble if args.ensemble is not None else default_members(model.config)
            rows = agreement(model, dataset, ids, ArrayCache(Path(tmp) / path.name),
                             ensemble=runs)
            results.append({"model": str(path), "method": model.doc["method"],
                            "superpixels": model.config.superpixels.to_dict(),
                            "features": blocks_text(model.doc["features"])
                            .removeprefix("features "),
                            "class": model.class_name, "long_side": long_side,
                            "ensemble": runs,
                            "upsampling": model.config.upsampling,
                            "model_code_version": model.doc.get("code_version"),
                            "rows": rows,
                            **{f"mean_{k}": float(np.mean([r[k] for r in rows]))
                               for k in COLUMNS},
                            **{f"min_{k}": float(np.min([r[k] for r in rows]))
                               for k in COLUMNS}})
    doc = {"data": str(args.data), "split": args.split, "n_images": len(ids),
           "factors": list(FACTORS), "code_version": code_version(), "machine": machine(),
           "models": results}
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "results.json", doc)
    caption = (f"data {dataset.name}, split {args.split}, its first {len(ids)} images; "
               f"code {code_version()}")
    lines = ["| model | method | class | long side, up-sampling | superpixels | features | "
             + " | ".join(f"{HEADINGS[k]}: mean (min) %" for k in COLUMNS) + " |",
             "|---" * (6 + len(COLUMNS)) + "|"]
    for r in results:
        side = ("as given" if r["long_side"] is None
                else f"{r['long_side']} px, {r.get('upsampling', 'linear')}")
        runs = r.get("ensemble", 1)
        name = _model_name(r["model"]) + (f", ensemble of {runs}" if runs > 1 else "")
        lines.append(f"| {name} | {r['method']} | {r['class']} | {side} | "
                     f"{SuperpixelParams(**r['superpixels']).describe()} | "
                     f"{r.get('features', '')} | "
                     + " | ".join(f"{100 * r[f'mean_{k}']:.1f} ({100 * r[f'min_{k}']:.1f})"
                                  for k in COLUMNS) + " |")
    write_text(args.out / "table.md",
               "# Same mask for an image and its enlarged copies\n\n" + "\n".join(lines)
               + "\n\nShare of pixels where the mask of a bicubic 2x / 4x copy agrees with "
               "the image's own mask (pixel-replicated); the same on the image's pixels "
               "(the copy's mask brought down by nearest pixel: no pixel counts only "
               "because the copy's finer mask cuts it); and where the mask of the image "
               "with one grey level of random noise (each channel of each pixel -1, 0 or "
               "+1; seed 0) does: a change in no way one of size, the floor of what the "
               "working resolution can give; " + caption + ".\n")
    _figure(results, args.out / "figure.png", caption)
    print((args.out / "table.md").read_text())
    return 0


def _parser() -> argparse.ArgumentParser:
    """The command line."""
    from segstruct.features.config import FeatureConfig
    from segstruct.features.scale import UPSAMPLINGS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path, help="a VOC-style data set")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", nargs="+", type=Path, help="model paths (without .json)")
    what.add_argument("--superpixels", nargs="+", type=superpixel_setting,
                      metavar="METHOD[:NAME=VALUE,...]",
                      help="superpixel settings to compare without a model, e.g. "
                           "felzenszwalb:sigma=0.8,scale=100 or slic:n_segments=50")
    p.add_argument("--long-side", type=_long_side, default="auto",
                   help="with --superpixels: the working long side in pixels, auto (the "
                        "training split's largest) or none (default auto)")
    p.add_argument("--upsampling", choices=UPSAMPLINGS, default=FeatureConfig().upsampling,
                   help="with --superpixels: how images smaller than the working long side "
                        "are enlarged to it (default %(default)s, the models' default)")
    p.add_argument("--train-split", default="train",
                   help="with --superpixels and --long-side auto: the split whose largest "
                        "long side is taken (default train)")
    p.add_argument("--split", default="val", help="split whose images are used (default val)")
    p.add_argument("--images", type=int, default=20,
                   help="the split's first N images (default 20)")
    p.add_argument("--ensemble", type=int, default=None, metavar="K",
                   help="with --model: label with predict --ensemble K (default: the "
                        "library's, 5 runs for a SLIC model, 1 for a Felzenszwalb one)")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    return p


def _model_name(path: str) -> str:
    """A model's folder and name (models of one class share the name)."""
    return "/".join(Path(path).parts[-2:])


def _long_side(text: str):
    if text in ("auto", "none"):
        return None if text == "none" else text
    return int(text)


def _figure(results, path: Path, caption: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(max(7, 3.2 * len(results)), 4.2))
    for k, r in enumerate(results):
        side = "as given" if r["long_side"] is None else f"{r['long_side']} px"
        for j, column in enumerate(COLUMNS):
            values = [100 * row[column] for row in r["rows"]]
            x = k * (len(COLUMNS) + 1) + j
            ax.scatter(np.full(len(values), x), values, s=12, alpha=0.6)
            ax.plot([x - 0.3, x + 0.3], [np.mean(values)] * 2, color="black")
            label = HEADINGS[column].replace(" at the image's size", "\nsmall")
            method = (r.get("superpixels") or {}).get("method", "")
            ax.annotate(f"{label}\n{_model_name(r['model'])}\n{method}\n{side}", (x, 0),
                        textcoords="offset points", xytext=(0, -40), ha="center",
                        fontsize=6, annotation_clip=False)
    ax.set_xticks([])
    ax.set_ylabel("pixels agreeing with the image's mask (%)")
    ax.set_ylim(0, 100)
    ax.set_title(caption, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
