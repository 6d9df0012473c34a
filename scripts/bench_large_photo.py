"""What a phone photo costs to label: seconds and peak memory of ``segstruct
predict`` on a 12-megapixel image, with the working resolution (the model's
``long_side``) and, for comparison, with images worked on as given.

A val image of the data set is up-sampled (bicubic) to 4000x3000 pixels, so
that the mask of the photo can also be compared with the mask of the image
itself (the share of pixels that agree). Each ``predict`` runs in its own
process, from an empty feature cache (``--no-cache``); its peak resident
memory is the child's ``ru_maxrss``.

    python scripts/bench_large_photo.py --data ../shared/data/weizmann_horse_voc \
        --class horse --out out/large_photo

``--ensemble 1 5`` also labels with ``predict --ensemble 5`` (SLIC models
only), one row per model and K. ``--photos 4 8`` also labels folders of
that many photos (the first val images, each up-sampled to the same size)
in one ``predict`` each, to show whether memory grows with the photos a
run labels. Without ``--model`` it trains the models first (bl1 at C 1, with the
command line's default features, and the same with ``--long-side none``).
Writes ``results.json``, ``table.md`` and ``figure.png`` to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def _segstruct(*args: str) -> list[str]:
    return [sys.executable, "-m", "segstruct", *args]


#: Runs a command and prints its peak resident memory (KiB on Linux): each
#: measurement in a fresh process, so that the peak is that command's alone.
_WRAPPER = ("import json, resource, subprocess, sys, time; t = time.perf_counter(); "
            "rc = subprocess.run(sys.argv[1:], capture_output=True).returncode; "
            "print(json.dumps({'rc': rc, 'seconds': time.perf_counter() - t, 'kib': "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))")


def run_measured(cmd: list[str]) -> dict:
    """Seconds and peak resident memory (MiB) of one command."""
    done = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True,
                          text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, check=True)
    measured = json.loads(done.stdout)
    if measured["rc"] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {measured['rc']})")
    return {"seconds": measured["seconds"], "peak_mib": measured["kib"] / 1024.0}


def main(argv=None) -> int:
    from PIL import Image

    from segstruct.datasets import VOCDataset
    from segstruct.features.config import FeatureConfig
    from segstruct.io.provenance import code_version, machine
    p = _parser()
    args = p.parse_args(argv)
    if any(n < 1 for n in args.photos):
        p.error("--photos: each N must be at least 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dataset = VOCDataset(args.data)
    image_id = args.image or dataset.ids("val")[0]
    width, height = (int(v) for v in args.size.lower().split("x"))
    work = Path(tempfile.mkdtemp(prefix="segstruct-photo-"))
    original = Image.open(dataset.image_path(image_id)).convert("RGB")
    photo = work / "photo.jpg"
    original.resize((width, height), Image.BICUBIC).save(photo, quality=92)
    small = work / "image.png"
    original.save(small)
    folders = {}
    if args.photos:
        val = dataset.ids("val")
        if max(args.photos) > len(val):
            p.error(f"--photos {max(args.photos)}: the val split has {len(val)} images")
        for i in val[:max(args.photos)]:
            Image.open(dataset.image_path(i)).convert("RGB").resize(
                (width, height), Image.BICUBIC).save(work / f"{i}.jpg", quality=92)
        for n in args.photos:
            folders[n] = work / f"photos-{n}"
            folders[n].mkdir()
            for i in val[:n]:
                os.link(work / f"{i}.jpg", folders[n] / f"{i}.jpg")

    models = _models(args, work)
    rows = []
    runs = [(n, m, e) for n, m in models.items() for e in args.ensemble]
    for k, (name, model, ensemble) in enumerate(runs):
        doc = json.loads(Path(model).with_suffix(".json").read_text())
        masks = {}
        for what, image in (("image", small), ("photo", photo)):
            folder = work / f"out-{k}-{what}"
            measured = run_measured(_segstruct(
                "predict", "--model", model, "--images", str(image), "--out", str(folder),
                "--no-cache", "-j", str(args.n_jobs), "--ensemble", str(ensemble), "-q"))
            masks[what] = np.array(Image.open(folder / f"{image.stem}.png"))
            rows.append({"model": name, "ensemble": ensemble, "method": doc.get("method"),
                         "C": doc.get("estimator", {}).get("C"),
                         "top_down": doc["features"].get("detector") is not None,
                         "long_side": doc["features"].get("long_side"),
                         "superpixels": FeatureConfig.from_dict(
                             doc["features"]).superpixels.describe(), "input": what,
                         "size": list(masks[what].shape[::-1]), **measured})
        up = np.array(Image.fromarray(masks["image"]).resize((width, height), Image.NEAREST))
        rows[-1]["agreement_with_image"] = float(np.mean(up == masks["photo"]))
        photo_row = {key: v for key, v in rows[-1].items() if key != "agreement_with_image"}
        for n, folder in folders.items():
            measured = run_measured(_segstruct(
                "predict", "--model", model, "--images", str(folder), "--out",
                str(work / f"out-{k}-{n}"), "--no-cache", "-j", str(args.n_jobs),
                "--ensemble", str(ensemble), "-q"))
            rows.append({**photo_row, "input": f"{n} photos", **measured})
    result = {"data": str(args.data), "class": args.class_name, "image": image_id,
              "photo": f"{width}x{height}",
              "code_version": code_version(), "machine": machine(), "rows": rows}
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = _table_lines(args, result, width, height)
    (out / "table.md").write_text("\n".join(lines) + "\n")
    _figure(rows, out / "figure.png", lines[2])
    print("\n".join(lines))
    return 0


def _models(args, work: Path) -> dict:
    """Name -> model file: those given (``--model``), else two trained here, at
    the working resolution and on images as given."""
    models = {}
    if args.model:
        # named by file, or by path where two files share a name
        names = [Path(m).name for m in args.model]
        models = {(n if names.count(n) == 1 else str(m)): m
                  for n, m in zip(names, args.model)}
    else:
        for name, extra in (("working resolution", []), ("as given", ["--long-side", "none"])):
            path = work / name.replace(" ", "_")
            subprocess.run(_segstruct("train", "--data", args.data, "--class", args.class_name,
                                      "--method", "bl1", "--C", "1", "--out", str(path),
                                      "-j", str(args.n_jobs), "-q", *extra), check=True)
            models[name] = str(path)
    return models


def _parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="a VOC-style data set")
    p.add_argument("--class", dest="class_name", required=True)
    p.add_argument("--image", help="the val image to up-sample (default: the first)")
    p.add_argument("--size", default="4000x3000", help="WxH of the photo")
    p.add_argument("--model", action="append",
                   help="a model to use (repeat for several; default: train them)")
    p.add_argument("--out", default="out/large_photo")
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--ensemble", type=int, nargs="+", default=[1], metavar="K",
                   help="predict --ensemble values to measure (default 1)")
    p.add_argument("--photos", type=int, nargs="*", default=[], metavar="N",
                   help="also label folders of N photos in one run each")
    return p


def _table_lines(args, result: dict, width: int, height: int) -> list[str]:
    """The Markdown table of the runs of ``result`` (its third line, the caption,
    goes on the figure too)."""
    rows = result["rows"]
    lines = [f"# A {width}x{height} photo labelled by `segstruct predict`",
             "", f"Data {Path(args.data).name}, class {args.class_name}, val image "
             f"{result['image']} up-sampled (bicubic); models: "
             + "; ".join(sorted({f"{r['model']} ({r['method']}, C {r['C']:g}, top-down "
                                 f"{'on' if r['top_down'] else 'off'})" for r in rows}))
             + f"; code {result['code_version']}; "
             f"{result['machine'].get('cpu_count', '?')} cores; one process per run, no cache.",
             "", "| model | superpixels | long side | input | size | seconds | "
             "peak memory MiB | mask agreement with the image's |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        agreement = (f"{100 * r['agreement_with_image']:.1f} %"
                     if "agreement_with_image" in r else "")
        ensemble = f", ensemble of {r['ensemble']}" if r.get("ensemble", 1) > 1 else ""
        lines.append(f"| {r['model']}{ensemble} | {r.get('superpixels', '')} | {r['long_side']} | "
                     f"{r['input']} | {r['size'][0]}x{r['size'][1]} | {r['seconds']:.1f} | "
                     f"{r['peak_mib']:.0f} | {agreement} |")
    return lines


def _figure(rows, path: Path, caption: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r.get('superpixels', '').split(',')[0]}\nlong side "
              f"{r['long_side'] or 'as given'}\n{r['input']}"
              + (f"\nensemble of {r['ensemble']}" if r.get("ensemble", 1) > 1 else "")
              for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, unit in zip(axes, ("seconds", "peak_mib"), ("seconds", "peak memory, MiB")):
        ax.bar(range(len(rows)), [r[key] for r in rows], color="tab:blue")
        ax.set_xticks(range(len(rows)), labels, fontsize=8)
        ax.set_ylabel(unit)
    fig.suptitle(caption, fontsize=7, wrap=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
