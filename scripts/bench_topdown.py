"""Measure the top-down block on the real data sets and write the numbers as JSON.

Per class: detector training time (roots stage and with parts), val AP of
the root-only and the part-based detector, the time of average shapes, and
the per-image time of ``topdown_features`` beside the bottom-up extraction
(superpixels, dense opponent SIFT quantised against a 1000-word codebook,
colour, position, pairwise) on the same val images. The codebook here is
random: quantisation costs the same whatever the words are, and learning a
real one takes minutes per data set.

    OMP_NUM_THREADS=1 python scripts/bench_topdown.py --out out/topdown_bench.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

CLASSES = (("camvid_voc", "car"), ("camvid_voc", "person"), ("weizmann_horse_voc", "horse"),
           ("pennfudan_voc", "person"), ("coco128panoptic_voc", "person"))


class Lazy:
    """Images or masks of a split, read on every access (training reads each a few times)."""

    def __init__(self, dataset, ids, masks):
        self.dataset, self.ids, self.masks = dataset, list(ids), masks

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        read = self.dataset.read_mask if self.masks else self.dataset.read_image
        return read(self.ids[i])


def bottom_up_seconds(image, codebook):
    from segstruct.features import descriptors as F
    from segstruct.features.superpixels import adjacency, segment
    config = F.FeatureConfig()
    start = time.perf_counter()
    labels = segment(image, config.superpixels)
    edges, boundary = adjacency(labels)
    lab = F.rgb_to_lab(image)
    F.unary_features(image, labels, config, codebook, lab=lab)
    lab_mean = F.superpixel_means(lab, labels, int(labels.max()) + 1)
    F.pairwise_features(lab_mean, edges, boundary / config.boundary_unit, config.tau1, config.tau2)
    return time.perf_counter() - start, labels


def main(argv=None) -> int:
    from segstruct.datasets.voc import VOCDataset, class_index
    from segstruct.features.topdown import (DetectorParams, average_precision, average_shapes,
                                            boxes_from_mask, topdown_features, train_detector)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--out", type=Path, default=Path("out/topdown_bench.json"))
    ap.add_argument("--only", default=None, help="dataset:class to run one")
    ap.add_argument("--timing-images", type=int, default=8)
    ap.add_argument("--shape-images", type=int, default=40)   # the recorded run's (row["shapes"]["images"])
    args = ap.parse_args(argv)
    import cv2
    cv2.setNumThreads(1)
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    rng = np.random.default_rng(0)
    codebook = rng.random((1000, 384)).astype(np.float32)
    for name, cls in CLASSES:
        if args.only and args.only != f"{name}:{cls}":
            continue
        ds = VOCDataset(args.data / name)
        ci = class_index(cls)
        train_ids, val_ids = ds.ids("train"), ds.ids("val")
        params = DetectorParams()
        stages = {}
        det = train_detector(Lazy(ds, train_ids, False), Lazy(ds, train_ids, True), ci, params,
                             on_stage=lambda s, d, t: stages.__setitem__(s, (d, t)))
        row = {"params": params.to_dict(), "train_images": len(train_ids),
               "val_images": len(val_ids)}
        truths, ignored = [], []
        for i in val_ids:
            kept, ign = boxes_from_mask(ds.read_mask(i), ci, params.min_box_area,
                                        params.max_void_fraction, return_ignored=True)
            truths.append(kept)
            ignored.append(ign)
        row["val_objects"] = int(sum(len(t) for t in truths))
        for stage, (d, seconds) in stages.items():
            start = time.perf_counter()
            dets = [d.detect(ds.read_image(i)) for i in val_ids]
            row[stage] = {"train_seconds": round(seconds, 1),
                          "val_ap": round(average_precision(dets, truths, ignored), 4),
                          "detect_seconds_per_image": round((time.perf_counter() - start) / len(val_ids), 3)}
            print(name, cls, stage, row[stage], flush=True)
        sub = train_ids[:args.shape_images]
        start = time.perf_counter()
        shapes = average_shapes(det, Lazy(ds, sub, False), Lazy(ds, sub, True), ci)
        row["shapes"] = {"seconds": round(time.perf_counter() - start, 1), "images": len(sub),
                         "detections_per_component": shapes.counts.tolist()}
        td, bu, ncols = [], [], None
        for i in val_ids[:args.timing_images]:
            image = ds.read_image(i)
            seconds, labels = bottom_up_seconds(image, codebook)
            bu.append(seconds)
            start = time.perf_counter()
            feats = topdown_features(det, shapes, image, labels)
            td.append(time.perf_counter() - start)
            ncols = feats.shape[1]
        row["per_image"] = {"images": len(td), "bottom_up_seconds": round(float(np.mean(bu)), 3),
                            "topdown_seconds": round(float(np.mean(td)), 3),
                            "ratio": round(float(np.mean(td) / np.mean(bu)), 2),
                            "topdown_columns": ncols}
        print(name, cls, row["shapes"], row["per_image"], flush=True)
        results[f"{name}:{cls}"] = row
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
