"""Every learner side by side: val IoU of bl1, bl2, proposed, lovasz and
projection for every class of every data set under the shared data, at the
defaults (top-down block on, data-set scope, C 0.5). One command makes the
README's table:

    python scripts/methods_table.py                  # everything: hours on 2 cores
    python scripts/methods_table.py --datasets weizmann_horse_voc --out /tmp/m
    python scripts/methods_table.py --table-only     # the table from finished runs

For every data set D under ``--data`` it picks the classes as
``scripts/topdown_table.py`` does (at least ``--min-images`` training images
showing them, accepted for training; the others are listed) and runs what a
user would:

    OUT/D/                  segstruct compare --classes ... --methods bl1 bl2
                            proposed lovasz projection --multiclass

then writes OUT/table.md and OUT/table.json, and OUT/multiclass.md: each
method's class models combined into one labelling (the VOC challenge
measure over 21 labels) against each class model alone. Everything resumes: compare keeps
finished (class, method) pairs, so a folder of an earlier compare with the
same data, features and settings (``out/topdown/D/with`` of the top-down
table) only gains the missing methods.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# one copy of each, shared with the top-down table
from topdown_table import (dataset_names, finished_runs, plan,  # noqa: E402
                           run_and_tabulate, segstruct, table_parser)

from segstruct.io.files import write_text  # noqa: E402
from segstruct.io.provenance import code_version       # noqa: E402
from segstruct.report.intervals import interval_text  # noqa: E402
from segstruct.report.tables import features_text, fmt  # noqa: E402

METHODS = ("bl1", "bl2", "proposed", "lovasz", "projection")
REPO_ROOT = Path(__file__).resolve().parents[1]


def run_dataset(root: Path, out: Path, min_images: int, n_jobs: int) -> dict:
    """compare over the plan's classes and every method; returns the plan."""
    p = plan(root, min_images, n_jobs)
    if p["classes"]:
        rc, _ = segstruct("compare", "--data", str(root), "-j", str(n_jobs), "-q",
                          "--classes", *p["classes"], "--methods", *METHODS,
                          "--multiclass", "--out", str(out))
        if rc == 130:
            raise KeyboardInterrupt
        if rc:
            raise SystemExit(f"compare failed on {root}")
    return p


# ---------------------------------------------------------------------- table
def _read(path: Path):
    import json
    return json.loads(path.read_text()) if path.is_file() else None


def _cell(record, interval=None) -> str:
    if record is None:
        return fmt(None)
    star = "" if record["training"]["converged"] else "*"
    collapse = record.get("diagnosis", {}).get("collapse")
    mark = {"no foreground": "⁰", "all foreground": "¹"}.get(collapse, "")
    return f"{fmt(record['eval_score']['voc_iou_percent'])}{interval_text(interval)}{star}{mark}"


def _doc_cell(r: dict | None, interval, minus_proposed) -> dict | None:
    """table.json's entry of one class and method (None: not run)."""
    if r is None:
        return None
    return {"val_iou_percent": r["eval_score"]["voc_iou_percent"],
            "converged": r["training"]["converged"], "n_iter": r["training"]["n_iter"],
            "fit_seconds": r["training"]["fit_seconds"],
            "relative_gap": r.get("diagnosis", {}).get("relative_gap"),
            "collapse": r.get("diagnosis", {}).get("collapse"),
            "interval": interval, "minus_proposed": minus_proposed,
            "code_version": r["code_version"]}


def _count_verdicts(verdicts: dict, differences: dict) -> None:
    """Add one class's clear differences from proposed to ``verdicts``
    ({method: [classes clearly above, classes clearly below]})."""
    for m, d in differences.items():
        if m in verdicts and d["verdict"].endswith("better"):
            verdicts[m][0 if d["difference"] > 0 else 1] += 1


def not_converged_note(where: str, r: dict | None) -> str | None:
    """The note on a fit (``where``: data set/class/method) that stopped before
    it converged: its iterations and its certified gap; None for one that
    converged or was not made."""
    if r is None or r["training"]["converged"]:
        return None
    d = r.get("diagnosis", {})
    return (f"{where}: not converged after {r['training']['n_iter']} iterations, the "
            f"objective {100 * d.get('relative_gap', np.nan):.3g} % above its certified "
            "lower bound")


def table(out: Path, datasets: list[str]) -> tuple[str, dict]:
    """(Markdown, JSON document) from the folders ``run_dataset`` wrote."""
    rows, time_rows, doc_rows, notes, versions = [], [], [], [], set()
    values = {m: [] for m in METHODS}            # IoU of every class, per method
    wins = {m: 0 for m in METHODS}
    # classes where a method is clearly above / below proposed (its paired interval)
    verdicts = {m: [0, 0] for m in METHODS}
    settings = features = None
    for name, p, results, records in finished_runs(out, datasets):
        settings, features = settings or results["settings"], features or results["features"]
        versions.update(r["code_version"] for r in results["results"])
        spans = results.get("intervals") or {}
        for c in results["classes"]:
            got = {m: records.get((c, m)) for m in METHODS}
            cell_spans = spans.get("iou_percent", {}).get(c, {})
            differences = spans.get("difference", {}).get(c, {})
            _count_verdicts(verdicts, differences)
            ious = {m: None if r is None else r["eval_score"]["voc_iou_percent"]
                    for m, r in got.items()}
            defined = [v for v in ious.values() if v is not None]
            if defined and max(defined) > 0:
                for m, v in ious.items():
                    wins[m] += v == max(defined)
            for m, v in ious.items():
                if v is not None:
                    values[m].append(v)
            rows.append(f"| {name} | {c} | " + " | ".join(_cell(got[m], cell_spans.get(m))
                                                          for m in METHODS) + " |")
            time_rows.append(f"| {name} | {c} | " + " | ".join(
                fmt(None) if r is None else f"{r['training']['fit_seconds']:.0f} s / "
                f"{r['training']['n_iter']}" for r in got.values()) + " |")
            doc_rows.append({"dataset": name, "class": c,
                             **{m: _doc_cell(r, cell_spans.get(m), differences.get(m))
                                for m, r in got.items()}})
            notes += [note for m, r in got.items()
                      if (note := not_converged_note(f"{name}/{c}/{m}", r)) is not None]
        blind = sorted(results.get("detector_warnings", {}))
        if blind:
            notes.append(f"{name}: the detectors of {', '.join(blind)} have all-zero average "
                         "shapes: their top-down block is zero everywhere")
        for c, why in p.get("refused", {}).items():
            notes.append(f"{name}/{c}: not compared, the library refuses to train on it: {why}")
        if p.get("too_few_images"):
            listed = ", ".join(f"{c} ({n})" for c, n in p["too_few_images"].items())
            notes.append(f"{name}: not compared, fewer than {p['min_images']} training "
                         f"images: {listed}")
    means = {m: float(np.mean(v)) if v else None for m, v in values.items()}
    head = ["| data set | class | " + " | ".join(METHODS) + " |",
            "|---|---|" + "---|" * len(METHODS)]
    mean_row = ("| **all** | **mean** | "
                + " | ".join(f"**{fmt(means[m])}**" for m in METHODS) + " |")
    win_row = "| | best in (classes) | " + " | ".join(str(wins[m]) for m in METHODS) + " |"
    verdict_row = ("| | clearly above / below proposed (classes) | "
                   + " | ".join("" if m == "proposed" else f"{verdicts[m][0]} / {verdicts[m][1]}"
                                for m in METHODS) + " |")
    s = settings or {}
    foot = [f"VOC IoU % on val (pixels, void excluded), one training run each (one seed), "
            "trained on train; * = not converged (see the notes); ⁰ = predicts no "
            "foreground on its own training set; – = not run; - = undefined (no "
            "foreground in val and none predicted). The mean is over classes; \"best in\" "
            "counts the classes where a method has the highest IoU (ties count for each; "
            "classes where every method scores 0 count for none), whether or not the "
            "difference is clear; \"clearly above / below proposed\" counts the classes "
            "where the paired 95 % interval of the difference from proposed excludes 0 "
            "(and the difference exceeds the fit-path spread). In square brackets: the 95 % "
            "interval of an image bootstrap of the val images (compare's results.json). "
            f"Settings: the defaults (scope {s.get('scope')}, C {s.get('C')}, loss of "
            f"bl2/proposed {s.get('loss')}, tol {s.get('tol')}, max_iter "
            f"{s.get('max_iter')}); lovasz and projection train by their own solvers "
            "(cutting planes on the Lovász hinge; L-BFGS-B on the cube projection's loss). "
            f"{features_text(features or {})}.",
            f"Code {', '.join(sorted(versions)) or code_version()}."]
    times = (["", "Training seconds / iterations (cutting-plane iterations; objective "
              "evaluations for projection):", ""] + head + time_rows)
    md = "\n".join(head + rows + [mean_row, win_row, verdict_row] + times + [""]
                   + [f"- {line}" for line in notes] + [""] + foot) + "\n"
    doc = {"format": "segstruct-methods-table", "methods": list(METHODS), "rows": doc_rows,
           "mean_iou_percent": means, "best_in": wins,
           "clearly_above_below_proposed": verdicts, "notes": notes, "settings": settings,
           "features": features, "code_versions": sorted(versions),
           "made_by": code_version()}
    return md, doc


def multiclass_table(out: Path, datasets: list[str]) -> str:
    """Markdown: per data set and method, the combined models' mean IoU over
    the 21 labels, and how far each class's combined IoU is from its model's
    own (from the OUT/D/multiclass.json that compare --multiclass writes)."""
    rows, shifts, versions = [], {m: [] for m in METHODS}, set()
    for name in datasets:
        doc = _read(out / name / "multiclass.json")
        if doc is None:
            continue
        versions.add(doc["code_version"])
        cells = []
        for m in METHODS:
            combined = doc["multiclass"].get(m)
            cells.append(fmt(None if combined is None else combined["mean_iou_percent"]))
            for c in doc["classes"]:
                alone = doc["alone_voc_iou_percent"].get(m, {}).get(c)
                mine = None if combined is None else combined["iou_percent"][c]
                if alone is not None and mine is not None:
                    shifts[m].append(mine - alone)
        rows.append(f"| {name} | {', '.join(doc['classes'])} | " + " | ".join(cells) + " |")
    if not rows:
        return ""
    head = ["| data set | classes | " + " | ".join(METHODS) + " |",
            "|---|---|" + "---|" * len(METHODS)]
    shift_row = "| | combined − alone, per class (points) | " + " | ".join(
        f"{min(d):+.2f} to {max(d):+.2f}" if d else fmt(None) for d in shifts.values()) + " |"
    foot = ("Mean VOC IoU % over the 21 labels (background included; labels in neither "
            "the masks nor the predictions left out) on val, when each method's class "
            "models label every superpixel together: the class with the largest positive "
            "max-marginal difference, else background. The last row: each class's IoU "
            "in that combined labelling less its model's own VOC IoU. "
            f"Code {', '.join(sorted(versions))}.")
    return "\n".join(head + rows + [shift_row, "", foot]) + "\n"


def main(argv=None) -> int:
    args = table_parser(__doc__.split("\n\n")[0], "methods").parse_args(argv)
    names = dataset_names(args)
    run_and_tabulate(args, names, run_dataset, table)
    multi = multiclass_table(args.out, names)
    if multi:
        write_text(args.out / "multiclass.md", multi)
        print(multi)
        print(f"wrote {args.out / 'multiclass.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
