"""Loss in training or loss in the decision: val IoU of bl1, bl2, proposed and
the likelihood-trained crf, each decided four ways (map, marginal,
expected-iou, expected-fbeta), for every class of every data set under the
shared data, at the library's defaults (C chosen by cross-validation on the
training split, cross-fitted top-down block, working resolution). One
command makes the README's table:

    python scripts/decisions_table.py                  # everything: hours on 2 cores
    python scripts/decisions_table.py --datasets weizmann_horse_voc --out /tmp/d
    python scripts/decisions_table.py --table-only     # the table from finished runs

For every data set D under ``--data`` it picks the classes as
``scripts/topdown_table.py`` does and runs what a user would:

    OUT/D/     segstruct compare --classes ... --methods bl1 bl2 proposed crf
               --decisions marginal expected-iou expected-fbeta --no-figures

    OUT/D/perceptron/     segstruct compare --classes ... --methods hamming
                          --solver perceptron --scope image --C 1 --max-iter 100

(the averaged structured perceptron, the baseline that needs only MAP: no
loss, no C, so no cross-validation), then writes OUT/table.md and
OUT/table.json. Everything resumes (compare keeps finished pairs). The
decisions are made over the whole val split at once (the data-set scope,
as the VOC measure counts); the SSVMs' marginals
come from their scores at a temperature fitted by held-out likelihood on
training folds, the crf's are its own.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from methods_table import not_converged_note  # noqa: E402
from topdown_table import (dataset_names, finished_runs, plan,  # noqa: E402
                           run_and_tabulate, segstruct, table_parser)

from segstruct.io.provenance import code_version       # noqa: E402
from segstruct.report.tables import blocks_text, fmt  # noqa: E402

METHODS = ("bl1", "bl2", "proposed", "crf")
DECISIONS = ("map", "marginal", "expected-iou", "expected-fbeta")
#: The two routes the table sets side by side: the loss in training (the
#: paper's method, decided by its MAP) and in the decision (the CRF).
TRAINING_ROUTE, DECISION_ROUTE = ("proposed", "map"), ("crf", "expected-iou")
#: Epochs of the perceptron baseline (it stops earlier only on separable data).
PERCEPTRON_EPOCHS = 100


def run_dataset(root: Path, out: Path, min_images: int, n_jobs: int) -> dict:
    """compare over the plan's classes, every method and decision; returns the plan."""
    p = plan(root, min_images, n_jobs)
    if p["classes"]:
        rc, _ = segstruct("compare", "--data", str(root), "-j", str(n_jobs), "-q",
                          "--classes", *p["classes"], "--methods", *METHODS,
                          "--decisions", *DECISIONS[1:], "--no-figures", "--out", str(out))
        if rc == 130:
            raise KeyboardInterrupt
        if rc:
            raise SystemExit(f"compare failed on {root}")
        rc, _ = segstruct("compare", "--data", str(root), "-j", str(n_jobs), "-q",
                          "--classes", *p["classes"], "--methods", "hamming", "--solver",
                          "perceptron", "--scope", "image", "--C", "1", "--max-iter",
                          str(PERCEPTRON_EPOCHS), "--no-figures", "--out",
                          str(out / "perceptron"))
        if rc:
            raise SystemExit(f"compare --solver perceptron failed on {root}")
    return p


def _read(path: Path):
    import json
    return json.loads(path.read_text()) if path.is_file() else None


def _scores(record, decision):
    """(val, train) IoU % of a record's decision, or None."""
    if record is None:
        return None
    s = (record.get("decisions") or {}).get("scores", {}).get(decision)
    if s is None:
        return None
    return s["eval_score"]["voc_iou_percent"], s["train_score"]["voc_iou_percent"]


def _features(features, sides: dict) -> str:
    """The feature blocks, and each data set's working long side."""
    blocks = blocks_text(features)
    return blocks + "; images at a long side of " + ", ".join(
        f"{'their own size' if side is None else f'{side} px'} ({name})"
        for name, side in sides.items())


def _perceptron_cell(record) -> str:
    """val (train) IoU of the perceptron; * with its last epoch's mistakes when unconverged."""
    t = record["training"]
    star = "" if t["converged"] else "*"
    return (f"{fmt(record['eval_score']['voc_iou_percent'])}{star} "
            f"({fmt(record['train_score']['voc_iou_percent'], '.1f')})")


def _footnote(settings, features, sides: dict, versions: set) -> list[str]:
    """What the cells are, the settings and the features, and the code."""
    s = settings or {}
    return [f"VOC IoU % on val (train in brackets; pixels, void excluded), one training run "
            "each (one seed), trained on train; * = not converged (see the notes). map: the "
            "model's graph cut; marginal: superpixels with marginal above 1/2; "
            "expected-iou / expected-fbeta (beta 1): the labelling of the whole val split "
            "that maximises the measure of the expected counts (exact, one threshold of the "
            "marginals). The crf's marginals are its own (loopy belief propagation on its "
            "scores); the SSVMs' are an approximation: their scores divided by a "
            "temperature fitted by held-out likelihood on 3 folds of train. "
            f"Settings: the defaults (scope {s.get('scope')}, C {s.get('C')} over "
            f"{s.get('C_grid')}, loss of bl2/proposed {s.get('loss')}, crf likelihood "
            f"{s.get('likelihood', 'pseudo')}, tol {s.get('tol')}, max_iter "
            f"{s.get('max_iter')}). perceptron: the averaged structured perceptron "
            f"(--solver perceptron --scope image), decided by its MAP, {PERCEPTRON_EPOCHS} "
            "epochs at most; * = some training image still mislabelled in its last epoch "
            f"(the data are not separable). {_features(features, sides)}.",
            f"Code {', '.join(sorted(versions)) or code_version()}."]


def table(out: Path, datasets: list[str]) -> tuple[str, dict]:
    """(Markdown, JSON document) from the folders ``run_dataset`` wrote."""
    columns = [(m, d) for m in METHODS for d in DECISIONS]
    rows, doc_rows, notes, versions = [], [], [], set()
    values: dict = {c: [] for c in columns}
    route_wins = {"training": 0, "decision": 0, "tie": 0}
    settings = features = None
    sides: dict = {}            # each data set's working long side
    for name, _, results, records in finished_runs(out, datasets):
        settings, features = settings or results["settings"], features or results["features"]
        sides[name] = (results.get("features") or {}).get("long_side")
        versions.update(r["code_version"] for r in results["results"])
        for c in results["classes"]:
            cells, doc = [], {"dataset": name, "class": c}
            for m, d in columns:
                got = _scores(records.get((c, m)), d)
                star = "" if records.get((c, m)) is None or \
                    records[(c, m)]["training"]["converged"] else "*"
                cells.append(fmt(None) if got is None else
                             f"{fmt(got[0])}{star} ({fmt(got[1], '.1f')})")
                if got is not None:
                    values[(m, d)].append(got)
                doc[f"{m} {d}"] = None if got is None else {"val_iou_percent": got[0],
                                                            "train_iou_percent": got[1]}
            perceptron = (_read(out / name / "perceptron" / "runs" / f"{c}-hamming.json")
                          if (out / name / "perceptron").is_dir() else None)
            cells.append(fmt(None) if perceptron is None else _perceptron_cell(perceptron))
            doc["perceptron map"] = None if perceptron is None else {
                "val_iou_percent": perceptron["eval_score"]["voc_iou_percent"],
                "train_iou_percent": perceptron["train_score"]["voc_iou_percent"],
                "epochs": perceptron["training"]["n_iter"],
                "converged": perceptron["training"]["converged"]}
            if perceptron is not None:
                values.setdefault(("perceptron", "map"), []).append(
                    (perceptron["eval_score"]["voc_iou_percent"],
                     perceptron["train_score"]["voc_iou_percent"]))
            rows.append(f"| {name} | {c} | " + " | ".join(cells) + " |")
            doc["temperature"] = {m: (records.get((c, m)) or {}).get("decisions", {})
                                  .get("temperature") for m in METHODS}
            doc_rows.append(doc)
            a = _scores(records.get((c, TRAINING_ROUTE[0])), TRAINING_ROUTE[1])
            b = _scores(records.get((c, DECISION_ROUTE[0])), DECISION_ROUTE[1])
            if a is not None and b is not None:
                route_wins["tie" if abs(a[0] - b[0]) < 0.5 else
                           "training" if a[0] > b[0] else "decision"] += 1
            notes += [note for m in METHODS if (note := not_converged_note(
                f"{name}/{c}/{m}", records.get((c, m)))) is not None]
    columns.append(("perceptron", "map"))
    full = [k for k, v in values.items() if len(v) == len(rows) and rows]
    means = {k: (float(np.mean([v for v, _ in values[k]])),
                 float(np.mean([t for _, t in values[k]]))) for k in full}
    head = ["| data set | class | " + " | ".join(f"{m} {d}" for m, d in columns) + " |",
            "|---|---|" + "---|" * len(columns)]
    mean_row = ("| **all** | **mean** | " + " | ".join(
        f"**{fmt(means[k][0])}** ({fmt(means[k][1], '.1f')})" if k in means else fmt(None)
        for k in columns) + " |")
    foot = _footnote(settings, features, sides, versions)
    answer = (f"Loss in training ({' '.join(TRAINING_ROUTE)}) against loss in the decision "
              f"({' '.join(DECISION_ROUTE)}), per class (a difference under 0.5 points is a "
              f"tie): training better on {route_wins['training']}, decision better on "
              f"{route_wins['decision']}, tied on {route_wins['tie']}.")
    md = "\n".join(head + rows + [mean_row, "", answer, ""]
                   + [f"- {line}" for line in notes] + [""] + foot) + "\n"
    doc = {"format": "segstruct-decisions-table", "methods": list(METHODS),
           "decisions": list(DECISIONS), "rows": doc_rows,
           "mean_iou_percent": {f"{m} {d}": v for (m, d), v in means.items()},
           "routes": {"training": list(TRAINING_ROUTE), "decision": list(DECISION_ROUTE),
                      "wins": route_wins},
           "notes": notes, "settings": settings, "features": features,
           "code_versions": sorted(versions), "made_by": code_version()}
    return md, doc


def main(argv=None) -> int:
    args = table_parser(__doc__.split("\n\n")[0], "decisions").parse_args(argv)
    run_and_tabulate(args, dataset_names(args), run_dataset, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
