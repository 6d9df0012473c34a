"""Iterations and seconds to convergence, per method and class: the learner's table.

Two uses:

    # one training at the library's defaults, one JSON line on stdout
    python scripts/convergence.py run --data ROOT --class car --method bl2

    # the before / after table: JSON lines of `run` made by an older segstruct
    # beside a soak's records (scripts/soak.py) made by this one
    python scripts/convergence.py table BEFORE.jsonl out/soak/soak.json --out F.md

`run` needs only ``estimator_for``, the feature extractor and the cache, which
every segstruct version since the data-set scope has (before the package was
split into folders, at the top of ``segstruct``), so the same file measures an
older install: e.g. ``pip install --no-deps`` of commit aea6378 into a
virtual environment made with ``--system-site-packages``, then this script
with that environment's python.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path


def run(args) -> dict:
    """Train one method on one class (train split) and score it on val."""
    from threadpoolctl import threadpool_limits

    from segstruct import __version__
    from segstruct.datasets.voc import VOCDataset
    try:
        from segstruct.features.cache import ArrayCache
        from segstruct.features.extraction import FeatureExtractor
        from segstruct.learn.methods import estimator_for
    except ImportError:         # a version from before the folders
        from segstruct.cache import ArrayCache
        from segstruct.extraction import FeatureExtractor
        from segstruct.methods import estimator_for

    dataset = VOCDataset(args.data)
    extractor = FeatureExtractor(dataset, cache=ArrayCache(), n_jobs=1, progress=False)
    train = extractor.examples("train", args.class_name)
    val = extractor.examples("val", args.class_name)
    X, Y = [e.graph for e in train], [e.pixel_counts for e in train]
    params = {}
    if args.C is not None:
        params["C"] = args.C
    if args.max_iter is not None:
        params["max_iter"] = args.max_iter
    estimator = estimator_for(args.method, **params)
    with threadpool_limits(1, "blas"):
        start = time.perf_counter()
        estimator.fit(X, Y)
        seconds = time.perf_counter() - start
    log = estimator.log_
    return {
        "dataset": dataset.name, "class": args.class_name, "method": args.method,
        "code_version": __version__, "C": estimator.C, "tol": estimator.tol,
        "max_iter": estimator.max_iter, "converged": bool(estimator.converged_),
        "iterations": int(estimator.n_iter_), "seconds": round(seconds, 2),
        "qp_seconds": round(sum(e.get("qp_seconds", 0.0) for e in log), 2),
        "oracle_seconds": round(sum(e["oracle_seconds"] for e in log), 2),
        "primal": float(estimator.primal_), "dual": float(estimator.dual_),
        "gap": float(estimator.gap_), "target_gap": float(estimator.C * estimator.tol),
        "train_iou": round(100 * estimator.score(X, Y), 2),
        "val_iou": round(100 * estimator.score([e.graph for e in val],
                                               [e.pixel_counts for e in val]), 2),
        "python": platform.python_version(),
    }


def table(before_path: Path, soak_path: Path) -> str:
    """Markdown: per (data set, class, method) the old and the new run side by side."""
    before = {}
    for line in before_path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            before[(r["dataset"], r["class"], r["method"])] = r
    soak = json.loads(soak_path.read_text())
    # the soak keeps records of older code too: only its current code's runs
    after = {(r["dataset"], r["class"], r["run"]): r for r in soak["runs"]
             if r.get("code_version") == soak["code_version"]}
    old_versions = sorted({r["code_version"] for r in before.values()})
    rows = ["| data set | class | method | before: iterations | before: s | before: gap / C tol "
            "| after: iterations | after: s | after: gap / C tol | val IoU before / after |",
            "|---|---|---|---|---|---|---|---|---|---|"]

    def cell(r, it_key, s_key):
        if r is None:
            return "", "", ""
        if r.get("crashed"):
            return "crash", "", ""
        mark = "" if r["converged"] else "*"
        ratio = r["gap"] / r["target_gap"] if r["target_gap"] else float("nan")
        return f"{r[it_key]}{mark}", f"{r[s_key]:.0f}", f"{ratio:.2g}"
    for key in sorted(before):          # the soak's own table has the rest
        b, a = before.get(key), after.get(key)
        bi, bs, bg = cell(b, "iterations", "seconds")
        ai, as_, ag = cell(a, "iterations", "seconds")
        iou = f"{b['val_iou']:.2f} / " + (f"{a['val_iou_percent']:.2f}"
                                          if a and not a.get("crashed") else "")
        rows.append(f"| {key[0]} | {key[1]} | {key[2]} | {bi} | {bs} | {bg} | {ai} | {as_} "
                    f"| {ag} | {iou} |")
    note = (f"\nBefore: code {', '.join(old_versions)} (`scripts/convergence.py run`); after: "
            f"code {soak['code_version']} (`scripts/soak.py`). Both at the library's defaults "
            "(data-set scope, C 0.5, tol 1e-3; max_iter 200 before, 1000 after). * = stopped "
            "at max_iter. gap / C tol: the final gap over the target C * tol (<= 1 means "
            "certified). Seconds are wall-clock on the 2-core machine with other jobs running.\n")
    return "\n".join(rows) + "\n" + note


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train one method on one class; print a JSON line")
    r.add_argument("--data", required=True, help="VOC-layout data root")
    r.add_argument("--class", dest="class_name", required=True)
    r.add_argument("--method", required=True)
    r.add_argument("--C", type=float, default=None, help="C (default: the library's)")
    r.add_argument("--max-iter", type=int, default=None,
                   help="cutting-plane iterations (default: the library's)")
    t = sub.add_parser("table", help="before / after table in Markdown")
    t.add_argument("before", type=Path, help="JSON lines written by `run`")
    t.add_argument("soak", type=Path, help="soak.json written by scripts/soak.py")
    t.add_argument("--out", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    if args.command == "run":
        print(json.dumps(run(args)), flush=True)
        return 0
    text = table(args.before, args.soak)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
