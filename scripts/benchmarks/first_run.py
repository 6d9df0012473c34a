"""The README's first run: ``segstruct compare`` on the generated data set, as
after a fresh install (an empty feature cache), with each cell's 95 %
bootstrap interval and each method's paired difference from ``proposed``.

Writes into its folder:

- ``compare/``: what the command wrote (``table.md``, ``table.csv``,
  ``results.json``, ``figures/``; the models are left out);
- ``evaluate/<class>-<method>.json``: each model scored again on the val
  split by ``segstruct evaluate --ensemble 1 --json`` (the graph cut, which
  is what compare's table scores), with each image's TP, FP and FN;
- ``intervals.json``: val IoU per class and method with its interval, the
  differences from ``proposed`` with theirs, and the mean over classes; the
  images are resampled together for every class and method, so every
  difference and mean keeps its pairing;
- ``summary.md``: that table, as the README shows it;
- ``timing.json``: wall and CPU seconds of the command, and the environment
  it ran in.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SUMMARY = ("the README's first run: `segstruct compare` on the generated data set from an "
           "empty cache; val IoU with 95 % bootstrap intervals, time, figures")
DEFAULTS = ("data", "features", "training")

REFERENCE = "proposed"


def add_arguments(parser) -> None:
    parser.add_argument("--resamples", type=int, default=10000,
                        help="bootstrap resamples (default %(default)s)")
    parser.add_argument("--confidence", type=float, default=0.95)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _segstruct(*args: str, env: dict, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "segstruct", *args], env=env, cwd=cwd, check=True)


def run(args, out: Path) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="bench-first-run-"))
    try:
        return _run(args, out, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(args, out: Path, scratch: Path) -> dict:
    # the user's environment, with a cache of its own: as after a fresh install
    env = {**os.environ, "SEGSTRUCT_CACHE": str(scratch / "cache")}
    compare = scratch / "segstruct-compare"
    cpu0, t0 = _children_cpu(), time.perf_counter()
    _segstruct("compare", "-q", "--out", str(compare), env=env, cwd=scratch)
    seconds, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    timing = {"command": "segstruct compare", "seconds": round(seconds, 1),
              "cpu_seconds": round(cpu, 1),
              "environment": {k: os.environ.get(k) for k in
                              ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
              "cache": "empty (a fresh SEGSTRUCT_CACHE folder)"}
    (out / "compare").mkdir()
    for name in ("table.md", "table.csv", "results.json"):
        shutil.copy2(compare / name, out / "compare" / name)
    shutil.copytree(compare / "figures", out / "compare" / "figures")

    doc = json.loads((compare / "results.json").read_text())
    classes, methods = doc["classes"], doc["methods"]
    (out / "evaluate").mkdir()
    per_image, ids = {}, None
    for row in doc["results"]:
        key = f"{row['class']}-{row['method']}"
        target = out / "evaluate" / f"{key}.json"
        _segstruct("evaluate", "-q", "--model", str(compare / "models" / key), "--split",
                   doc["eval_split"], "--ensemble", "1", "--json", str(target),
                   env=env, cwd=scratch)
        record = json.loads(target.read_text())
        record["model"] = f"models/{key}"          # not the scratch folder's path
        target.write_text(json.dumps(record, indent=1) + "\n")
        these = [p["image_id"] for p in record["per_image"]]
        if ids is None:
            ids = these
        if these != ids:
            raise RuntimeError(f"{key}: scored on other images than the first model")
        # evaluate --ensemble 1 must score what compare's table scores
        got, want = record["score"]["voc_iou_percent"], row["eval_score"]["voc_iou_percent"]
        if abs(got - want) > 1e-9:
            raise RuntimeError(f"{key}: evaluate --ensemble 1 gives {got} but compare's "
                               f"table {want}")
        per_image[row["class"], row["method"]] = [(p["tp"], p["fp"], p["fn"])
                                                  for p in record["per_image"]]
    summary = intervals(doc, per_image, classes, methods, args.resamples, args.confidence)
    (out / "intervals.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "timing.json").write_text(json.dumps(timing, indent=1) + "\n")
    (out / "summary.md").write_text(summary_table(summary) + "\n")
    return {"seconds": timing["seconds"], "mean_val_iou": summary["mean"]["iou"]}


def intervals(doc: dict, per_image: dict, classes, methods, n_resamples: int,
              confidence: float) -> dict:
    """Val IoU, train IoU and intervals per class and method, differences from
    :data:`REFERENCE`, and the mean over classes."""
    from segstruct.evaluate.bootstrap import percentile_interval, pooled_iou, resampled_iou

    counts = np.array([[per_image[c, m] for m in methods] for c in classes], np.float64)
    counts = counts.transpose(2, 0, 1, 3)                   # (images, classes, methods, 3)
    iou = pooled_iou(counts.sum(axis=0))                    # (classes, methods)
    samples = resampled_iou(counts, n_resamples, seed=0)    # (R, classes, methods)
    ref = methods.index(REFERENCE) if REFERENCE in methods else None
    rows = {(r["class"], r["method"]): r for r in doc["results"]}

    def cell(value, draws):
        low, high = percentile_interval(draws, confidence)
        return {"iou": round(float(value), 2), "interval": [round(low, 2), round(high, 2)]}

    def difference(value, draws):
        low, high = percentile_interval(draws, confidence)
        verdict = ("no clear difference" if low <= 0 <= high
                   else "higher" if low > 0 else "lower")
        return {"difference": round(float(value), 2),
                "interval": [round(low, 2), round(high, 2)], "verdict": verdict}

    table = {}
    for i, c in enumerate(classes):
        table[c] = {}
        for j, m in enumerate(methods):
            entry = cell(iou[i, j], samples[:, i, j])
            entry["train_iou"] = round(rows[c, m]["train_score"]["voc_iou_percent"], 2)
            entry["C"] = rows[c, m]["C"]
            if ref is not None and j != ref:
                entry["minus_" + REFERENCE] = difference(iou[i, j] - iou[i, ref],
                                                         samples[:, i, j] - samples[:, i, ref])
            table[c][m] = entry
    mean_samples = samples.mean(axis=1)                     # (R, methods)
    mean = {}
    for j, m in enumerate(methods):
        entry = cell(iou[:, j].mean(), mean_samples[:, j])
        if ref is not None and j != ref:
            entry["minus_" + REFERENCE] = difference(
                iou[:, j].mean() - iou[:, ref].mean(), mean_samples[:, j] - mean_samples[:, ref])
        mean[m] = entry
    return {"data": doc["dataset"], "split": doc["eval_split"], "classes": classes,
            "methods": methods, "reference": REFERENCE, "confidence": confidence,
            "n_images": int(counts.shape[0]), "n_resamples": n_resamples,
            "resampling": "images drawn with replacement, the same draw for every class "
                          "and method; pooled VOC IoU per draw; percentile interval",
            "code_version": doc["code_version"], "per_class": table,
            "mean": {"iou": {m: mean[m]["iou"] for m in methods}, "per_method": mean}}


def _fmt_cell(e: dict) -> str:
    return f"{e['iou']:.1f} [{e['interval'][0]:.1f}, {e['interval'][1]:.1f}]"


def _fmt_diff(e: dict) -> str:
    return (f"{e['difference']:+.1f} [{e['interval'][0]:+.1f}, {e['interval'][1]:+.1f}]")


def summary_table(s: dict) -> str:
    """The Markdown table of :func:`intervals`: val IoU % [95 % interval] per
    class and method, train IoU beside it, then each method minus the
    reference with its paired interval."""
    methods, ref = s["methods"], s["reference"]
    others = [m for m in methods if m != ref]
    head = (["class"] + [f"{m}: val [interval] (train)" for m in methods]
            + [f"{m} − {ref}" for m in others])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in s["classes"]:
        row = s["per_class"][c]
        lines.append("| " + " | ".join(
            [c] + [f"{_fmt_cell(row[m])} ({row[m]['train_iou']:.1f})" for m in methods]
            + [_fmt_diff(row[m]["minus_" + ref]) for m in others]) + " |")
    mean = s["mean"]["per_method"]
    lines.append("| " + " | ".join(
        ["mean"] + [_fmt_cell(mean[m]) for m in methods]
        + [_fmt_diff(mean[m]["minus_" + ref]) for m in others]) + " |")
    return "\n".join(lines)


def describe(folder: Path) -> str:
    """The table with intervals, the run's time, and its figures."""
    timing = json.loads((folder / "timing.json").read_text())
    s = json.loads((folder / "intervals.json").read_text())
    minutes, seconds = divmod(round(timing["seconds"]), 60)
    return (f"`segstruct compare` on the generated data set ({s['data']}), from an empty "
            f"cache, took {minutes} min {seconds:02d} s ({timing['seconds']:.0f} s; "
            f"{timing['cpu_seconds']:.0f} s of CPU). Val IoU % on its {s['n_images']} "
            f"{s['split']} images with the {100 * s['confidence']:.0f} % interval of "
            f"{s['n_resamples']} image bootstrap resamples, the training IoU in brackets, "
            f"and each method minus {s['reference']} with its paired interval:\n\n"
            + summary_table(s) + "\n\ncompare's own table: `compare/table.md`; "
            "each model's per-image counts: `evaluate/`; figures: `compare/figures/`.")
