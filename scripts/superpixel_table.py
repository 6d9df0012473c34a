"""Felzenszwalb or SLIC superpixels: val and train IoU of bl1 / bl2 /
proposed with each over-segmentation, everything else at the defaults, and
the over-segmentation that leaving one data set out would choose.

    python scripts/superpixel_table.py                   # hours on 2 cores
    python scripts/superpixel_table.py --datasets weizmann_horse_voc --out /tmp/sp
    python scripts/superpixel_table.py --table-only      # the table from finished runs

For every data set D under ``--data`` and each of its classes in ``--classes``
(by default the shared data sets' classes on which some method scored at
least 0.5 % val IoU at the defaults; the other COCO classes are left out for
time), and every setting of SETTINGS, it runs the command a user would:

    OUT/<setting>/D/    segstruct compare --classes ... <the setting's options>

then writes OUT/table.md and OUT/table.json. Compare keeps finished pairs, so
a second run trains nothing. The stability of each over-segmentation under
resizing is ``scripts/scale_agreement.py``'s.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topdown_table import (  # noqa: E402  (a sibling script)
    METHODS, dataset_names, finished_runs, segstruct, table_parser, write_tables,
)

from segstruct.io.files import write_json  # noqa: E402
from segstruct.io.provenance import code_version  # noqa: E402
from segstruct.features.config import FeatureConfig  # noqa: E402
from segstruct.features.superpixels import SuperpixelParams  # noqa: E402
from segstruct.report.tables import blocks_text, fmt  # noqa: E402

#: name: the compare options of the over-segmentation (each explicit: SLIC
#: became the default after this table chose it; the runs of out/superpixels
#: /felzenszwalb, made before, gave no option).
#: SLIC's 80 segments leave about 70 superpixels per horse image at the working
#: size, near Felzenszwalb's 54 there; compactness 20 is the smallest of 10 / 20 / 40
#: whose superpixels moved on at most 4 % of pixels between a horse image and
#: its 2x / 4x copies (neither number chosen by IoU).
#: slic-c40: compactness 40, whose bl1 masks on the horses changed least
#: between an image and its enlarged copies (out/scale_agreement/
#: compactness): is it as good on held-out data?
#: slic-s2-lanczos: SLIC smoothed by a Gaussian of 2 pixels, on images enlarged
#: to the working size by Lanczos, whose masks changed less still under
#: enlargement: the same question. The other three smooth nothing and enlarge
#: linearly (the defaults), said explicitly.
_BEFORE = ["--upsampling", "linear"]
_SLIC = ["--superpixels", "slic", "--slic-segments", "80"]
SETTINGS = {
    "felzenszwalb": ["--superpixels", "felzenszwalb", *_BEFORE],
    "slic": [*_SLIC, "--slic-compactness", "20", "--slic-sigma", "0.01", *_BEFORE],
    "slic-c40": [*_SLIC, "--slic-compactness", "40", "--slic-sigma", "0.01", *_BEFORE],
    "slic-s2-lanczos": [*_SLIC, "--slic-compactness", "20", "--slic-sigma", "2",
                        "--upsampling", "lanczos"],
}
#: the shared data sets' classes on which some method scored at least 0.5 %
#: val IoU at the defaults (out/decisions)
CLASSES = {"weizmann_horse_voc": ["horse"], "pennfudan_voc": ["person"],
           "camvid_voc": ["car", "person"], "coco128panoptic_voc": ["person", "diningtable"]}


def run_dataset(root: Path, out: Path, classes: list[str], n_jobs: int) -> None:
    """compare over ``classes`` with every setting, into OUT/<setting>/D."""
    for name, options in SETTINGS.items():
        rc, _ = segstruct("compare", "--data", str(root), "-j", str(n_jobs), "-q",
                          "--classes", *classes, "--methods", *METHODS, *options,
                          "--no-figures", "--out", str(out / name / root.name))
        if rc:
            raise SystemExit(f"compare with {name} superpixels failed on {root}")
        write_json(out / name / root.name / "plan.json",
                   {"classes": classes, "data_root": str(root), "options": options})


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def _markdown(rows, lodo_rows, datasets, names, seconds: dict, ran, features: dict,
              versions: set) -> str:
    """The table's Markdown: the per-class rows, the leave-one-out rows, the
    fits' seconds and the settings."""
    cost = ["| data set | " + " | ".join(f"{s}: fit seconds" for s in names) + " |",
            "|---|" + "---|" * len(names)]
    cost += [f"| {d} | " + " | ".join(f"{seconds[(d, s)]:.0f}" if (d, s) in ran else fmt(None)
                                      for s in names) + " |"
             for d in datasets]
    settings_text = "; ".join(
        f"{s}: " + SuperpixelParams(**features[s]["superpixels"]).describe()
        + f", images enlarged by {FeatureConfig.from_dict(features[s]).upsampling}"
        for s in names)
    blocks = next((blocks_text(f) for f in features.values()), "features not recorded")
    md = "\n".join(
        ["# Superpixels: Felzenszwalb or SLIC, and SLIC's compactness", "",
         "VOC IoU % on val (train in brackets), one training run each, at the defaults "
         "otherwise (C chosen by 3-fold cross-validation, the cross-fitted top-down block, "
         "the working resolution); * = not converged.", ""] + rows
        + ["", "## Leaving one data set out", "",
           "Each data set's score: the mean val IoU over its classes and the three methods. "
           "For each held-out data set, the over-segmentation with the best mean score on "
           "the other three, and each scored on it.", ""] + lodo_rows
        + ["", "Training seconds (the three methods' fits, cross-validation included):", ""]
        + cost + ["", f"Superpixels: {settings_text}. The same {blocks}, each data set "
                  "at its working long side.",
                  f"Code {', '.join(sorted(versions)) or code_version()}. Made by "
                  "`python scripts/superpixel_table.py`."]) + "\n"
    return md


def table(out: Path, datasets: list[str]) -> tuple[str, dict]:
    """(Markdown, JSON document) from the folders ``run_dataset`` wrote."""
    names = list(SETTINGS)
    cells: dict = {}            # (dataset, class, method, setting) -> (val, train, s, it, ok)
    planned: dict = {}          # dataset -> each setting's classes
    versions, features = set(), {}
    for setting in names:
        for name, p, results, records in finished_runs(out / setting, datasets):
            planned.setdefault(name, []).append(p["classes"])
            features.setdefault(setting, results["features"])
            for (c, m), r in records.items():
                if m in METHODS:
                    versions.add(r["code_version"])
                    t = r["training"]
                    seconds = t["fit_seconds"] + (r.get("C_selection") or {}).get("seconds", 0)
                    cells[(name, c, m, setting)] = (
                        r["eval_score"]["voc_iou_percent"], r["train_score"]["voc_iou_percent"],
                        seconds, t["n_iter"], t["converged"])
    # the settings with runs (one not run yet gets no column), and the
    # classes every one of them ran on a data set (a run may have had more)
    names = [s for s in names if s in features]
    classes = {d: [c for c in lists[0] if all(c in other for other in lists[1:])]
               for d, lists in planned.items()}
    datasets = [d for d in datasets if d in classes]

    def cell(key):
        v = cells.get(key)
        return fmt(None) if v is None else f"{fmt(v[0])}{'' if v[4] else '*'} ({fmt(v[1], '.1f')})"

    head = ("| data set | class | " + " | ".join(f"{m} {s}" for m in METHODS for s in names)
            + " |")
    rows = [head, "|---|---|" + "---|" * (len(METHODS) * len(names))]
    for d in datasets:
        for c in classes[d]:
            rows.append(f"| {d} | {c} | " + " | ".join(cell((d, c, m, s)) for m in METHODS
                                                       for s in names) + " |")
    every = [(d, c) for d in datasets for c in classes[d]]
    # over every class or not at all: a mean over the classes a setting has
    # run so far would not compare with the others'
    means = {(m, s): (_mean(cells[(d, c, m, s)][0] for d, c in every)
                      if all((d, c, m, s) in cells for d, c in every) else None)
             for m in METHODS for s in names}
    rows.append("| **all** | **mean** | " + " | ".join(
        f"**{fmt(means[(m, s)])}**" for m in METHODS for s in names) + " |")
    # a data set's score: the mean over its classes and the three methods
    score = {(d, s): _mean(cells.get((d, c, m, s), (None,))[0]
                           for c in classes[d] for m in METHODS)
             for d in datasets for s in names}
    train = {(d, s): _mean(cells.get((d, c, m, s), (None, None))[1]
                           for c in classes[d] for m in METHODS)
             for d in datasets for s in names}
    seconds = {(d, s): sum(cells[(d, c, m, s)][2] for c in classes[d] for m in METHODS
                           if (d, c, m, s) in cells) for d in datasets for s in names}
    ran = {(d, s) for (d, _, _, s) in cells}
    lodo_rows, lodo = ["| held out | chosen on the others | " + " | ".join(
        f"{s}: val (train)" for s in names) + " | chosen minus best |",
        "|---|---|" + "---|" * (len(names) + 1)], []
    for d in datasets:
        others = [o for o in datasets if o != d]
        # a setting competes where it ran on the held-out set and on every other
        # (a setting not yet run everywhere is judged only where it can be)
        candidates = [s for s in names if score[(d, s)] is not None
                      and all(score[(o, s)] is not None for o in others)]
        if not others or len(candidates) < 2:
            continue
        on_others = {s: _mean(score[(o, s)] for o in others) for s in candidates}
        chosen = max(candidates, key=lambda s: on_others[s])
        best = max(score[(d, s)] for s in candidates)
        lodo.append({"held_out": d, "chosen": chosen, "on_others": on_others,
                     "val": {s: score[(d, s)] for s in names},
                     "train": {s: train[(d, s)] for s in names},
                     "gap": best - score[(d, chosen)]})
        lodo_rows.append(f"| {d} | {chosen} | " + " | ".join(
            f"{fmt(score[(d, s)])} ({fmt(train[(d, s)], '.1f')})" for s in names)
            + f" | {fmt(score[(d, chosen)] - best)} |")
    md = _markdown(rows, lodo_rows, datasets, names, seconds, ran, features, versions)
    doc = {"format": "segstruct-superpixel-table", "settings": SETTINGS, "classes": classes,
           "rows": [{"dataset": d, "class": c, "method": m, "superpixels": s,
                     "val_iou_percent": v[0], "train_iou_percent": v[1], "seconds": v[2],
                     "iterations": v[3], "converged": v[4]}
                    for (d, c, m, s), v in sorted(cells.items())],
           "mean_val_iou_percent": {f"{m} {s}": v for (m, s), v in means.items()},
           "lodo": lodo, "features": features, "code_versions": sorted(versions),
           "made_by": code_version()}
    return md, doc


def main(argv=None) -> int:
    parser = table_parser(__doc__.split("\n\n")[0], "superpixels")
    parser.add_argument("--classes", nargs="+", metavar="DATASET:CLASS,...",
                        help="the classes of each data set (default: "
                             + " ".join(f"{d}:{','.join(c)}" for d, c in CLASSES.items())
                             + "; a data set not named is not run)")
    args = parser.parse_args(argv)
    chosen = dict(CLASSES)
    if args.classes:
        chosen = {d: c.split(",") for d, _, c in (x.partition(":") for x in args.classes)}
    if args.table_only and not args.datasets:
        names = sorted({p.parent.name for p in args.out.glob("*/*/plan.json")})
    else:
        names = [d for d in dataset_names(args) if d in chosen]
    if not args.table_only:
        for name in names:
            run_dataset(args.data / name, args.out, chosen[name], args.n_jobs)
    write_tables(args.out, *table(args.out, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
