"""What the top-down block brings: val IoU of bl1 / bl2 / proposed without and
with it, for every class of every data set under the shared data, beside each
class's detector AP. One command makes the README's table:

    python scripts/topdown_table.py                  # everything: hours on 2 cores
    python scripts/topdown_table.py --datasets weizmann_horse_voc --out /tmp/td
    python scripts/topdown_table.py --table-only     # the table from finished runs

For every data set D under ``--data`` and every class with at least
``--min-images`` training images showing it (the soak's rule; the others are
listed with their counts), it runs the commands a user would, at the defaults:

    OUT/D/without/          segstruct compare --no-top-down --classes ...
    OUT/D/detector-C.json   segstruct detector --class C: val AP and a figure
                            (a class too small for a detector is listed with
                            the reason, and compared without the block only)
    OUT/D/with/             segstruct compare --classes ... (the block is on
                            by default) over the classes that have a detector

then writes OUT/table.md and OUT/table.json. Everything resumes: compare keeps
finished pairs and detectors are cached, so a second run trains nothing.

Each command runs as a user runs it, ``python -m segstruct ...`` in a process
of its own (:func:`segstruct`; ``methods_table.py``, ``decisions_table.py``
and ``superpixel_table.py`` run theirs through it too): the table is of what
the command line makes from its defaults, its option checks and its
fallbacks included (e.g. a fixed C where the training split is too small for
the folds of ``--C auto``), which a script building the library's objects
itself would have to repeat, and could miss.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from segstruct.io.files import write_json, write_text
from segstruct.io.provenance import code_version
from segstruct.report.intervals import difference_text
from segstruct.report.tables import features_text, fmt

METHODS = ("bl1", "bl2", "proposed")
REPO_ROOT = Path(__file__).resolve().parents[1]


def segstruct(*argv) -> tuple[int, str]:
    """Run one ``segstruct`` command in a process of its own, as a user does.

    Its output goes to this process's (its stderr line by line, as it comes),
    and its stderr is also kept: why a command failed (e.g. a class with too
    few objects for a detector).

    Returns
    -------
    (int, str)
        The command's exit status (2: a usage error; 130: interrupted) and
        everything it wrote to stderr.
    """
    print("$ segstruct " + " ".join(argv), flush=True)
    proc = subprocess.Popen([sys.executable, "-m", "segstruct", *argv],
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    copy = []
    for line in proc.stderr:
        sys.stderr.write(line)
        copy.append(line)
    return proc.wait(), "".join(copy)


def plan(root: Path, min_images: int, n_jobs: int = 1) -> dict:
    """The soak's rule: classes with >= min_images training images showing
    them that the library accepts for training; the others with the reason."""
    from segstruct.datasets import VOCDataset
    from segstruct.evaluate.inspection import training_set_problem
    from segstruct.features.extraction import FeatureExtractor
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from soak import classes_with_images        # the soak's count, one copy
    dataset = VOCDataset(root)
    counts = classes_with_images(dataset, "train")
    # superpixels only (cached): the check `segstruct compare` makes first
    extractor = FeatureExtractor(dataset, n_jobs=n_jobs, progress=False)
    refused = {}
    for c, n in counts.items():
        if n >= min_images:
            examples = extractor.examples("train", c, with_features=False)
            problem = training_set_problem(examples, c, "train")
            if problem:
                refused[c] = problem
    return {"classes": [c for c, n in counts.items() if n >= min_images and c not in refused],
            "too_few_images": {c: n for c, n in counts.items() if n < min_images},
            "refused": refused, "train_images": counts}


def run_dataset(root: Path, out: Path, min_images: int, n_jobs: int) -> dict:
    """The three steps above for one data set; returns its plan (written as
    OUT/D/plan.json) with the classes that have no detector and why."""
    p = plan(root, min_images, n_jobs)
    if not p["classes"]:
        return {**p, "no_detector": {}}
    common = ["--data", str(root), "-j", str(n_jobs), "-q"]
    rc, _ = segstruct("compare", *common, "--no-top-down", "--classes", *p["classes"],
                      "--out", str(out / "without"))
    if rc:
        raise SystemExit(f"compare without the top-down block failed on {root}")
    no_detector = {}
    for class_name in p["classes"]:
        rc, err = segstruct("detector", *common, "--class", class_name, "--out", str(out))
        if rc == 130:                       # Ctrl-C (segstruct's exit code for it)
            raise KeyboardInterrupt
        if rc and "too few objects" in err:
            no_detector[class_name] = err.strip().splitlines()[-1]
        elif rc:
            raise SystemExit(f"segstruct detector failed on {root}, class {class_name}")
    with_detector = [c for c in p["classes"] if c not in no_detector]
    if with_detector:
        rc, _ = segstruct("compare", *common, "--classes", *with_detector,
                          "--out", str(out / "with"))
        if rc:
            raise SystemExit(f"compare with the top-down block failed on {root}")
    return {**p, "no_detector": no_detector}


# ---------------------------------------------------------------------- table
def _read(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


def _paired(without, with_) -> dict | None:
    """With minus without, by the paired image bootstrap of the two records'
    per-image counts (None where a record has none, or they were scored on
    other images)."""
    from segstruct.evaluate.bootstrap import paired_bootstrap
    from segstruct.evaluate.intervals import verdict
    if without is None or with_ is None:
        return None
    a, b = with_["eval_score"].get("per_image"), without["eval_score"].get("per_image")
    if a is None or b is None or with_.get("eval_ids") != without.get("eval_ids"):
        return None
    result = paired_bootstrap(a, b)
    return {"difference": result["difference"], "interval": result["interval"],
            "verdict": verdict(result["difference"], result["interval"], "with", "without")}


def _cell(without, with_) -> str:
    def one(r):
        if r is None:
            return fmt(None)
        star = "" if r["training"]["converged"] else "*"
        return f"{fmt(r['eval_score']['voc_iou_percent'])}{star}"
    paired = _paired(without, with_)
    change = "" if paired is None else \
        f" ({difference_text(paired['difference'], paired['interval'])})"
    return f"{one(without)} → {one(with_)}{change}"


def _notes(name: str, plan: dict, with_block: dict | None) -> list[str]:
    """What the table of data set ``name`` leaves out or cannot tell, and why."""
    notes = []
    blind = sorted((with_block or {}).get("detector_warnings", {}))
    if blind:
        notes.append(f"{name}: the detectors of {', '.join(blind)} have all-zero average "
                     "shapes (they fired on no training object with a positive score): "
                     "their block is zero everywhere and adds nothing; those models "
                     "differ only within the learner's tolerance")
    for c, why in plan["no_detector"].items():
        notes.append(f"{name}/{c}: no detector, so compared without the block only ({why})")
    for c, why in plan.get("refused", {}).items():
        notes.append(f"{name}/{c}: not compared, the library refuses to train on it: {why}")
    if plan["too_few_images"]:
        listed = ", ".join(f"{c} ({n})" for c, n in plan["too_few_images"].items())
        notes.append(f"{name}: not compared, fewer than {plan['min_images']} training "
                     f"images: {listed}")
    return notes


def _summary(changes: dict) -> list[str]:
    """Per method, how often the block raised or lowered val IoU, and by how much."""
    summary = []
    for m in METHODS:
        d = changes[m]
        if d:
            summary.append(f"{m}: higher with the block in {sum(x > 0 for x in d)} of "
                           f"{len(d)} classes, lower in {sum(x < 0 for x in d)}, by more than "
                           f"one point in {sum(x > 1 for x in d)} and {sum(x < -1 for x in d)} "
                           f"(change {min(d):+.2f} to {max(d):+.2f} points, mean "
                           f"{sum(d) / len(d):+.2f})")
    return summary


def table(out: Path, datasets: list[str]) -> tuple[str, dict]:
    """(Markdown, JSON document) from the folders ``run_dataset`` wrote."""
    rows, doc_rows, notes, versions, changes = [], [], [], set(), {m: [] for m in METHODS}
    settings = features = None
    for name in datasets:
        p = _read(out / name / "plan.json")
        if p is None:
            continue
        results = {side: _read(out / name / side / "results.json")
                   for side in ("without", "with")}
        records = {side: {(r["class"], r["method"]): r for r in (doc or {}).get("results", [])}
                   for side, doc in results.items()}
        for side, doc in results.items():
            if doc is not None:
                settings = settings or doc["settings"]
                features = features or {}
                features[side] = doc["features"]
                versions.update(r["code_version"] for r in doc["results"])
        for c in p["classes"]:
            det = _read(out / name / f"detector-{c}.json") or {}
            # None: no detector, or no object of the class in val to score it on
            ap = det.get("average_precision")
            ap = None if ap is None else 100 * ap
            cells, row = [], {"dataset": name, "class": c, "train_images": p["train_images"][c],
                              "detector_ap_percent": ap}
            for m in METHODS:
                w, t = records["without"].get((c, m)), records["with"].get((c, m))
                cells.append(_cell(w, t))
                row[m] = {side: None if r is None else {
                    "val_iou_percent": r["eval_score"]["voc_iou_percent"],
                    "converged": r["training"]["converged"], "n_iter": r["training"]["n_iter"],
                    "code_version": r["code_version"]} for side, r in (("without", w),
                                                                        ("with", t))}
                row[m]["with_minus_without"] = _paired(w, t)
                values = [None if r is None else r["eval_score"]["voc_iou_percent"]
                          for r in (w, t)]
                if None not in values:
                    changes[m].append(values[1] - values[0])
            rows.append(f"| {name} | {c} | {p['train_images'][c]} | {fmt(ap, '.1f')} | "
                        + " | ".join(cells) + " |")
            doc_rows.append(row)
        notes += _notes(name, p, results["with"])
    head = ["| data set | class | train images showing it | detector val AP % | "
            + " | ".join(f"{m}: without → with" for m in METHODS) + " |",
            "|---|---|---|---|" + "---|" * len(METHODS)]
    summary = _summary(changes)
    s = settings or {}
    feats = "; ".join(f"{side}: {features_text(f).removeprefix('features ')}"
                      for side, f in (features or {}).items())
    foot = [f"VOC IoU % on val (pixels, void excluded), one training run each (one seed), "
            f"trained on train; * = stopped at max_iter (not converged); in round "
            "brackets: with minus without, with the paired 95 % interval of an image "
            "bootstrap of val (where the records keep each image's counts); – = not run; - = "
            "undefined (IoU: no foreground in val and none predicted; AP: no object in val). "
            "Detector AP: VOC "
            "average precision (box IoU 0.5) on val of the class's detector, trained on train "
            "(the MRF's training split too). Settings: the defaults (scope "
            f"{s.get('scope')}, C {s.get('C')}, loss of bl2/proposed {s.get('loss')}, tol "
            f"{s.get('tol')}, max_iter {s.get('max_iter')}). Features, {feats}.",
            f"Code {', '.join(sorted(versions)) or code_version()}."]
    md = "\n".join(head + rows + [""] + [f"- {line}" for line in summary + notes]
                   + [""] + foot) + "\n"
    doc = {"format": "segstruct-topdown-table", "rows": doc_rows, "summary": summary,
           "notes": notes, "settings": settings, "features": features,
           "code_versions": sorted(versions), "made_by": code_version()}
    return md, doc


def table_parser(description: str, out: str) -> argparse.ArgumentParser:
    """The options of a table script over the shared data sets (this one's and
    ``methods_table.py``'s); ``out`` is the default folder under out/."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data",
                        help="folder of VOC-layout data sets (default: ../shared/data)")
    parser.add_argument("--datasets", nargs="+",
                        help="data set folder names (default: every one under --data)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "out" / out,
                        help=f"output folder (default: out/{out})")
    parser.add_argument("--min-images", type=int, default=5,
                        help="classes with fewer training images are listed, not compared "
                             "(default 5, the soak's)")
    parser.add_argument("-j", "--n-jobs", type=int, default=2,
                        help="feature extraction workers (default 2)")
    parser.add_argument("--table-only", action="store_true",
                        help="write the table from finished runs; train nothing")
    return parser


def dataset_names(args) -> list[str]:
    """--datasets; else, with --table-only, what was run (even without the
    data at hand); else every VOC-layout folder under --data."""
    if args.datasets:
        return args.datasets
    if args.table_only:
        return sorted(d.parent.name for d in args.out.glob("*/plan.json"))
    return sorted(d.name for d in args.data.iterdir()
                  if (d / "ImageSets" / "Segmentation").is_dir())


def finished_runs(out: Path, datasets):
    """(name, plan, results, records by (class, method)) of every data set
    whose OUT/D holds both plan.json and a compare's results.json."""
    for name in datasets:
        p, results = _read(out / name / "plan.json"), _read(out / name / "results.json")
        if p is not None and results is not None:
            yield name, p, results, {(r["class"], r["method"]): r for r in results["results"]}


def run_and_tabulate(args, names, run_dataset, table) -> None:
    """The loop of a table script: ``run_dataset(root, out, min_images, n_jobs)``
    into OUT/D with its plan.json (unless ``--table-only``), then ``table(out,
    names)`` into OUT/table.md and OUT/table.json, printed."""
    if not args.table_only:
        for name in names:
            p = run_dataset(args.data / name, args.out / name, args.min_images, args.n_jobs)
            write_json(args.out / name / "plan.json",
                       {**p, "min_images": args.min_images, "data_root": str(args.data / name)})
    write_tables(args.out, *table(args.out, names))


def write_tables(out: Path, md: str, doc: dict) -> None:
    """OUT/table.md and OUT/table.json, the Markdown printed."""
    write_text(out / "table.md", md)
    write_json(out / "table.json", doc)
    print(md)
    print(f"wrote {out / 'table.md'} and table.json")


def main(argv=None) -> int:
    args = table_parser(__doc__.split("\n\n")[0], "topdown").parse_args(argv)
    names = dataset_names(args)
    if not args.table_only:
        for name in names:
            out = args.out / name
            p = run_dataset(args.data / name, out, args.min_images, args.n_jobs)
            write_json(out / "plan.json", {**p, "min_images": args.min_images,
                                           "data_root": str(args.data / name)})
    write_tables(args.out, *table(args.out, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
