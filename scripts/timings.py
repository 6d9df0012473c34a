"""Timings the README quotes, measured in one run and written as JSON.

1. Dense opponent SIFT on a 6 px grid at keypoint sizes 4, 8 and 12 on one
   camvid image (why size 4 is the default).
2. The proposed method's oracle on the whole camvid training set (one
   data-set-scope call) with the default envelope inference and with the
   decomposition inference (40 triangles), at the weights of a BL1 model trained
   here, with their ratios to one graph cut on the same graph.

    python scripts/timings.py --shared ../shared/data --out timings.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    from segstruct.datasets import VOCDataset
    from segstruct.features.descriptors import dense_opponent_sift
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.inference import maximize
    from segstruct.inference.proposed import ProposedOracle
    from segstruct.inference.triangulation import N_TRIANGLES
    from segstruct.io.provenance import code_version, machine
    from segstruct.learn.estimators.structured_svm import StructuredSVM, targets_and_node_weights
    from segstruct.feature_map import MRFModel, disjoint_union

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2]
                    / "shared" / "data")
    ap.add_argument("--out", type=Path, default=Path("timings.json"))
    ap.add_argument("-j", "--n-jobs", type=int, default=2)
    args = ap.parse_args(argv)
    ds = VOCDataset(args.shared / "camvid_voc")
    image = ds.read_image(ds.ids("train")[0])
    sift = {str(size): best_of(lambda: dense_opponent_sift(image, 6, size), 3)
            for size in (4.0, 8.0, 12.0)}
    print("dense SIFT s:", {k: round(v, 3) for k, v in sift.items()},
          f"size 12 / size 4 = {sift['12.0'] / sift['4.0']:.1f}x")

    examples = FeatureExtractor(ds, n_jobs=args.n_jobs, progress=False).examples("train", "car")
    X, Y = [e.graph for e in examples], [e.pixel_counts for e in examples]
    bl1 = StructuredSVM().fit(X, Y)
    union = disjoint_union(X)
    tw = [targets_and_node_weights(y, "count") for y in Y]
    t = np.concatenate([x[0] for x in tw])
    a = np.concatenate([x[1] for x in tw])
    u, p = MRFModel().potentials(union, bl1.w_)
    cut = best_of(lambda: maximize(u, union.edges, p), 3)
    scope = {"class": "car", "nodes": int(u.size), "edges": int(len(union.edges)),
             "graph_cut_seconds": cut, "inference": {}}
    for inference in ("envelope", "decomposition"):
        oracle = ProposedOracle(N_TRIANGLES, inference=inference)
        start = time.perf_counter()
        res = oracle(u, union.edges, p, t, a, "iou")      # triangulation included
        proposed = time.perf_counter() - start
        print(f"data-set scope, {u.size} nodes, {len(union.edges)} edges: graph cut "
              f"{cut:.4f} s, proposed oracle ({inference}) {proposed:.2f} s = "
              f"{proposed / cut:.0f}x; objective {res.objective:.4f}, bound {res.bound:.4f}, "
              f"{res.info['graph_cuts']} graph cuts")
        scope["inference"][inference] = {"proposed_oracle_seconds": proposed,
                                    "ratio_to_graph_cut": proposed / cut,
                                    "objective": res.objective, "bound": res.bound,
                                    "graph_cuts": res.info["graph_cuts"]}
    out = {"code_version": code_version(), "machine": machine(), "data": "camvid_voc",
           "sift_seconds_by_keypoint_size": sift, "dataset_scope": scope}
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
