"""Seconds of a class's cross-fitted detectors on a real data set: their
training (with their average shapes) and the top-down blocks they give,
for this checkout and, with ``--before``, another one, run in turn.

Each measurement runs in a fresh process (one core: ``OMP_NUM_THREADS=1``,
OpenCV on one thread, no feature cache), on the images at the working
resolution the command line would choose (the training images' largest
long side, at most 1024 px). It trains the K fold detectors of
``detector_folds`` on the first ``--train-images`` training images (as
``segstruct train`` does, with ``train_shape_detector``) and then computes
the top-down block of the first ``--val-images`` val images (each the mean
of the K detectors' blocks, with ``top_down_task``, on a grid of 16x16-pixel
superpixels: the detectors' time does not depend on the superpixels),
all in one process, as a worker of the command line would: the images'
HOG maps shared through the process memo where the checkout has one.
The checkouts alternate ``--repeats`` times, so a slow spell of the
machine falls on both. The other checkout runs from a copy of its packages
(``segstruct`` with its ``inference`` and ``datasets`` folders inside), so
that the installed ``segstruct`` lends it none of this one's. Every run
records a digest of its detectors and blocks: equal digests mean the two
checkouts computed the same numbers.

    OMP_NUM_THREADS=1 python scripts/bench_detector_time.py \\
        --data ../shared/data/weizmann_horse_voc --class horse \\
        --before /path/to/an/older/checkout --out out/detector_time/horse

Writes ``results.json`` and ``table.md`` to ``--out``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
# benchlib lies next to this file: Python puts the script's folder first on sys.path
sys.path.insert(0, str(HERE.parent))
from benchlib.checkouts import in_turn, machine_text, median_ratio, run_worker  # noqa: E402


def measure(data: Path, class_name: str, n_train: int | None, n_val: int, folds: int) -> dict:
    """One measurement in this process (the code is whatever ``segstruct`` imports)."""
    import cv2

    cv2.setNumThreads(1)
    try:
        # as the command line trains them: the detectors of a class, and its
        # blocks, share the images' HOG maps through the process memo (code
        # before it has none)
        from segstruct.io.process_memo import sharing
    except ImportError:
        sharing = contextlib.nullcontext
    with sharing():
        return _measure(data, class_name, n_train, n_val, folds)


def _measure(data: Path, class_name: str, n_train: int | None, n_val: int, folds: int) -> dict:
    import hashlib

    import numpy as np

    from segstruct.datasets.voc import VOCDataset
    from segstruct.features.cache import ArrayCache
    from segstruct.features.detection import detector_folds, train_shape_detector
    from segstruct.features.per_image import top_down_task
    from segstruct.features.scale import AUTO_MAX_LONG_SIDE, working_shape
    from segstruct.features.topdown import DetectorParams
    from segstruct.io.provenance import code_version

    dataset = VOCDataset(data)
    train = dataset.ids("train")[:n_train]
    val = dataset.ids("val")[:n_val]
    long_side = min(AUTO_MAX_LONG_SIDE, max(max(dataset.image_size(i)) for i in train))
    fold_of = {i: f for i, f in detector_folds(dataset, class_name, "train", folds, 0).items()
               if i in set(train)}
    cache = ArrayCache(None, enabled=False)
    digest = hashlib.sha256()
    start = time.perf_counter()
    detectors = []
    for k in range(folds):
        ids = [i for i in train if fold_of[i] != k]
        sd = train_shape_detector(dataset, class_name, "train", DetectorParams(), cache,
                                  ids=ids, long_side=long_side)
        digest.update(sd.digest.encode())
        detectors.append(sd)
    detector_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for image_id in val:
        h, w = working_shape(dataset.image_size(image_id), long_side)
        grid = (np.arange(h)[:, None] // 16) * (-(-w // 16)) + np.arange(w)[None, :] // 16
        block = top_down_task(dataset, image_id, grid.astype(np.int32), detectors, None, False)
        digest.update(np.ascontiguousarray(block).tobytes())
    block_seconds = time.perf_counter() - start
    return {"code_version": code_version(), "train_images": len(train), "val_images": len(val),
            "long_side": long_side, "folds": folds, "detector_seconds": detector_seconds,
            "block_seconds": block_seconds, "digest": digest.hexdigest()}


def worker_args(args) -> list[str]:
    """The ``--worker`` options of one measurement."""
    extra = ["--data", str(args.data.resolve()), "--class", args.class_name, "--val-images",
             str(args.val_images), "--folds", str(args.folds)]
    return extra + (["--train-images", str(args.train_images)]
                    if args.train_images is not None else [])


def table(doc: dict) -> str:
    rows = doc["runs"]
    lines = ["# Seconds of a class's cross-fitted detectors", "",
             "| code | detectors (training and shapes), s | top-down blocks, s | total, s "
             "| digest |", "|---|---|---|---|---|"]
    for r in rows:
        total = r["detector_seconds"] + r["block_seconds"]
        lines.append(f"| {r['code_version']} | {r['detector_seconds']:.1f} | "
                     f"{r['block_seconds']:.1f} | {total:.1f} | {r['digest'][:12]} |")
    lines.append("")
    for key, text in (("detector_seconds", "detectors"), ("block_seconds", "blocks"),
                      ("total", "total")):
        if "ratio" in doc and key in doc["ratio"]:
            lines.append(f"- {text}: this checkout's median over the other's, "
                         f"{doc['ratio'][key]:.2f}")
    first = rows[0]
    lines += ["", f"Data {doc['data']}, class {doc['class']}: the first {first['train_images']} "
              f"training images in {first['folds']} folds, blocks of the first "
              f"{first['val_images']} val images; working long side {first['long_side']} px; "
              f"{machine_text(doc['machine'])}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="a VOC-layout data set")
    ap.add_argument("--class", dest="class_name", required=True)
    ap.add_argument("--train-images", type=int, default=None,
                    help="the first N training images (default all)")
    ap.add_argument("--val-images", type=int, default=20)
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--before", type=Path, default=None,
                    help="another checkout (its root folder) to measure in turn")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(measure(args.data, args.class_name, args.train_images,
                                 args.val_images, args.folds)))
        return 0
    if args.out is None:
        ap.error("give --out DIR")
    sys.path.insert(0, str(HERE.parent.parent))
    from segstruct.io.provenance import machine

    scratch = tempfile.TemporaryDirectory()
    runs = in_turn(lambda tree: run_worker(HERE, tree, worker_args(args)),
                   args.before.resolve() if args.before else None, args.repeats,
                   Path(scratch.name),
                   lambda row: f"detectors {row['detector_seconds']:.1f} s, blocks "
                               f"{row['block_seconds']:.1f} s")
    doc = {"data": str(args.data.resolve()), "class": args.class_name,
           "machine": machine(), "runs": runs}
    if args.before:
        doc["ratio"] = {
            "detector_seconds": median_ratio(runs, lambda r: r["detector_seconds"]),
            "block_seconds": median_ratio(runs, lambda r: r["block_seconds"]),
            "total": median_ratio(runs, lambda r: r["detector_seconds"] + r["block_seconds"])}
        doc["same_numbers"] = len({r["digest"] for r in runs}) == 1
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(doc, indent=1))
    (args.out / "table.md").write_text(table(doc))
    print(table(doc))
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
