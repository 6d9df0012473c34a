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
  differences from ``proposed`` with theirs and their verdicts, and the mean
  over classes: compare's own intervals (results.json's ``intervals``),
  after a check that ``evaluate`` finds the same counts on every image;
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

SUMMARY = ("the README's first run: `segstruct compare` on the generated data set from an "
           "empty cache; val IoU with 95 % bootstrap intervals, time, figures")
DEFAULTS = ("data", "features", "training")

REFERENCE = "proposed"


def add_arguments(parser) -> None:
    """No options: the intervals are compare's own."""


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
    ids = None
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
        # ... image by image, the counts compare's intervals are made of
        counts = [[p["tp"], p["fp"], p["fn"]] for p in record["per_image"]]
        if counts != row["eval_score"]["per_image"] or these != row["eval_ids"]:
            raise RuntimeError(f"{key}: evaluate's per-image counts differ from compare's")
    summary = intervals(doc, classes, methods)
    (out / "intervals.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "timing.json").write_text(json.dumps(timing, indent=1) + "\n")
    (out / "summary.md").write_text(summary_table(summary) + "\n")
    return {"seconds": timing["seconds"], "mean_val_iou": summary["mean"]["iou"]}


def intervals(doc: dict, classes, methods) -> dict:
    """Val IoU, train IoU and intervals per class and method, differences from
    the reference with their verdicts, and the mean over classes, from
    compare's results.json (``doc``)."""
    spans = doc["intervals"]
    reference = spans["reference"]
    rows = {(r["class"], r["method"]): r for r in doc["results"]}

    def rounded(pair):
        return [round(pair[0], 2), round(pair[1], 2)]

    def difference(d):
        return {"difference": round(d["difference"], 2), "interval": rounded(d["interval"]),
                "verdict": d["verdict"]}

    table = {}
    for c in classes:
        table[c] = {}
        for m in methods:
            r = rows[c, m]
            entry = {"iou": round(r["eval_score"]["voc_iou_percent"], 2),
                     "interval": rounded(spans["iou_percent"][c][m]),
                     "train_iou": round(r["train_score"]["voc_iou_percent"], 2), "C": r["C"]}
            if m != reference:
                entry["minus_" + reference] = difference(spans["difference"][c][m])
            table[c][m] = entry
    mean = {}
    for m in methods:
        entry = {"iou": round(doc["table"]["mean_iou_percent"][m], 2),
                 "interval": rounded(spans["mean_iou_percent"][m])}
        if m != reference:
            entry["minus_" + reference] = difference(spans["mean_difference"][m])
        mean[m] = entry
    return {"data": doc["dataset"], "split": doc["eval_split"], "classes": classes,
            "methods": methods, "reference": reference, "confidence": spans["confidence"],
            "n_images": len(doc["results"][0]["eval_ids"]),
            "n_resamples": spans["n_resamples"],
            "resampling": "images drawn with replacement, the same draw for every class "
                          "and method; pooled VOC IoU per draw; percentile interval "
                          "(compare's results.json, 'intervals')",
            "code_version": doc["code_version"], "per_class": table,
            "mean": {"iou": {m: mean[m]["iou"] for m in methods}, "per_method": mean}}


def _fmt_cell(e: dict) -> str:
    return f"{e['iou']:.1f} [{e['interval'][0]:.1f}, {e['interval'][1]:.1f}]"


def _fmt_diff(e: dict) -> str:
    from segstruct.report.intervals import difference_text
    return f"{difference_text(e['difference'], e['interval'])}, {e['verdict']}"


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
