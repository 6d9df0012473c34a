"""Speed-up of training with loss-augmented inference on worker processes.

For each shared data set (its first class), trains twice with the same
settings, once in this process (``n_jobs=1``) and once with ``--n-jobs``
workers, and reports the ratio of the times, measured in one run:

- the proposed method (IoU, envelope oracle) at the image scope: the oracle
  runs on each image, dealt out to the workers;
- bl1 (adjusted Hamming, graph cut) at the data-set scope: the union is cut
  back into its images for the workers.

Both fits must reach the same weights (the workers change only the time);
the script stops if they do not. Writes ``OUT/speedup.json``,
``OUT/speedup.md`` and ``OUT/speedup.png``.

    python scripts/parallel_inference.py --shared ../shared/data --out out/parallel
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np


def dataset_names(shared: Path) -> list[str]:
    """Every VOC-layout folder under ``shared``."""
    return sorted(d.name for d in shared.iterdir() if (d / "ImageSets" / "Segmentation").is_dir())

CASES = {
    # name: (estimator settings, what runs on the workers)
    "proposed-image": (dict(loss="iou", scope="image", oracle="proposed"),
                       "the envelope oracle per image"),
    "bl1-dataset": (dict(loss="adjusted_hamming", scope="dataset", oracle=None),
                    "the graph cut on one part of the union per worker"),
}


def first_class(root: Path) -> str:
    from segstruct.compare import classes_in
    from segstruct.datasets import VOCDataset
    return classes_in(VOCDataset(root), "train")[0]


def fit_pair(X, Y, settings: dict, C: float, n_jobs: int) -> dict:
    """Both fits of one case; their times and how far their weights differ."""
    from segstruct.inference.proposed import ProposedOracle
    from segstruct.learn.estimators.structured_svm import StructuredSVM
    fits = {}
    for jobs in (1, n_jobs):
        params = dict(settings, C=C, n_jobs=jobs)
        params["oracle"] = ProposedOracle() if settings["oracle"] == "proposed" else None
        est = StructuredSVM(**params).fit(X, Y)
        fits[jobs] = est
    one, many = fits[1], fits[n_jobs]
    return {
        "C": C, "n_iter": [one.n_iter_, many.n_iter_],
        "converged": [bool(one.converged_), bool(many.converged_)],
        "gap": [float(one.gap_), float(many.gap_)],
        "fit_seconds": [one.fit_seconds_, many.fit_seconds_],
        "oracle_seconds": [sum(e["oracle_seconds"] for e in one.log_),
                           sum(e["oracle_seconds"] for e in many.log_)],
        "max_weight_difference": float(np.abs(one.w_ - many.w_).max()),
        "speedup_fit": one.fit_seconds_ / many.fit_seconds_,
        "speedup_oracle": (sum(e["oracle_seconds"] for e in one.log_)
                           / sum(e["oracle_seconds"] for e in many.log_)),
    }


def write_outputs(out: Path, report: dict) -> None:
    import json

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    (out / "speedup.json").write_text(json.dumps(report, indent=2) + "\n")
    n = report["n_jobs"]
    lines = [f"# Training with {n} inference workers against one process",
             "", f"Machine: {report['machine']['processor']}, {report['cpu_count']} cores, Python "
             f"{report['machine']['python']}; code {report['code_version']}. "
             "Time of the whole fit and of its oracle calls (sum over iterations), "
             f"1 process / {n} workers; both fits reach the same weights.", "",
             "| data | class | case | C | iterations | fit s (1 / n) | fit speed-up "
             "| oracle speed-up | converged |", "|---|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        lines.append(
            f"| {row['data']} | {row['class']} | {row['case']} | {row['C']:g} | "
            f"{row['n_iter'][0]} | {row['fit_seconds'][0]:.1f} / {row['fit_seconds'][1]:.1f} | "
            f"{row['speedup_fit']:.2f}x | {row['speedup_oracle']:.2f}x | "
            f"{'yes' if all(row['converged']) else 'no (gap %.3g)' % row['gap'][0]} |")
    (out / "speedup.md").write_text("\n".join(lines) + "\n")
    fig, ax = plt.subplots(figsize=(7, 3.2))
    rows = report["rows"]
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["speedup_fit"] for r in rows], 0.4, label="whole fit")
    ax.bar(x + 0.2, [r["speedup_oracle"] for r in rows], 0.4, label="oracle calls")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(x, [f"{r['data']}\n{r['case']}" for r in rows], fontsize=7)
    ax.set_ylabel(f"speed-up, 1 process / {n} workers")
    ax.legend(fontsize=8)
    fig.suptitle(f"Inference workers ({report['cpu_count']} cores, code {report['code_version']})",
                 fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "speedup.png", dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    from segstruct.datasets import VOCDataset
    from segstruct.features.cache import ArrayCache
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.io.provenance import code_version, machine

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2]
                    / "shared" / "data")
    ap.add_argument("--out", type=Path, default=Path("out/parallel"))
    ap.add_argument("-j", "--n-jobs", type=int, default=2)
    ap.add_argument("--C", type=float, default=0.5, help="C of every fit (default 0.5)")
    ap.add_argument("--datasets", nargs="*", help="names under --shared (default: all)")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rows = []
    for name in args.datasets or dataset_names(args.shared):
        root = args.shared / name
        cls = first_class(root)
        extractor = FeatureExtractor(VOCDataset(root), cache=ArrayCache(),
                                     n_jobs=args.n_jobs, progress=False)
        train = extractor.examples("train", cls)
        X, Y = [e.graph for e in train], [e.pixel_counts for e in train]
        for case, (settings, _) in CASES.items():
            row = {"data": name, "class": cls, "case": case, "n_images": len(X),
                   **fit_pair(X, Y, settings, args.C, args.n_jobs)}
            if row["max_weight_difference"] > 1e-6 * max(1.0, float(np.abs(row["C"]))):
                raise SystemExit(f"{name} {case}: the fits differ by "
                                 f"{row['max_weight_difference']:.3g}")
            print(f"{name} {cls} {case}: fit {row['fit_seconds'][0]:.1f} s / "
                  f"{row['fit_seconds'][1]:.1f} s = {row['speedup_fit']:.2f}x, oracle "
                  f"{row['speedup_oracle']:.2f}x, {row['n_iter'][0]} iterations", flush=True)
            rows.append(row)
    report = {"n_jobs": args.n_jobs, "machine": machine(), "code_version": code_version(),
              "cpu_count": os.cpu_count(), "features": "default (bottom-up)",
              "cases": {k: v[1] for k, v in CASES.items()}, "rows": rows}
    write_outputs(args.out, report)
    print(f"wrote {args.out / 'speedup.md'}, speedup.json and speedup.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
