"""One Markdown table of cross-validated comparisons (``compare --C auto``)
beside the same pairs at the paper's C, for the README.

    python scripts/cv_table.py out/compare/*-Cauto --soak out/soak/soak.json

For each (data set, class, method) record in the given compare folders it
lists the chosen C, the pooled held-out IoU of every C of the grid, whether
every fold fit and the final fit converged, and the val IoU of the final
model; with ``--soak``, the val IoU of the soak's run of the same pair at the
paper's C. Prints the table (or writes it with ``--out``).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from segstruct.report.tables import fmt


def _records(folder: Path):
    for path in sorted(Path(folder).glob("runs/*.json")):
        record = json.loads(path.read_text())
        if "C_selection" in record:
            yield record


def _soak_index(path) -> dict:
    if path is None:
        return {}
    doc = json.loads(Path(path).read_text())
    # "run" tells proposed with its default oracle from proposed-decomposition
    # only the runs of the soak's current code (it keeps older records too)
    return {(r["dataset"], r["class"], r["run"]): r for r in doc["runs"]
            if not r.get("crashed") and r.get("val_iou_percent") is not None
            and r.get("code_version") == doc["code_version"]}


def table(folders, soak=None) -> str:
    soak_runs = _soak_index(soak)
    rows, versions, grids = [], set(), set()
    for folder in folders:
        for r in _records(folder):
            cv = r["C_selection"]
            grids.add(tuple(cv["grid"]))
            versions.add(r["code_version"])
            curve = " / ".join(fmt(v, ".1f") for v in cv["pooled_iou_percent"])
            folds_ok = all(all(row) for row in cv["converged"])
            final_ok = r["training"]["converged"]
            paper = soak_runs.get((r["dataset"], r["class"], r["method"]))
            paper_cell = "" if paper is None else f"{paper['val_iou_percent']:.2f}"
            rows.append(
                f"| {r['dataset']} | {r['class']} | {r['method']} | {r['C']:g} | {curve} | "
                f"{'yes' if folds_ok else 'NO'} / {'yes' if final_ok else 'NO'} "
                f"({r['training']['n_iter']}) | {r['eval_score']['voc_iou_percent']:.2f} | "
                f"{paper_cell} |")
    grid_text = "; ".join(" ".join(f"{c:g}" for c in g) for g in sorted(grids))
    head = [f"| data set | class | method | chosen C | held-out IoU at C = {grid_text} | "
            "converged: folds / final (iterations) | val IoU, chosen C | val IoU, C 0.5 |",
            "|---|---|---|---|---|---|---|---|"]
    foot = [f"Code {', '.join(sorted(versions))}."]
    return "\n".join(head + rows + ["", *foot]) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="compare output folders (--C auto)")
    ap.add_argument("--soak", type=Path, help="soak.json with the same pairs at the paper's C")
    ap.add_argument("--out", type=Path, help="write the table here instead of printing it")
    args = ap.parse_args(argv)
    text = table(args.folders, args.soak)
    if args.out:
        args.out.write_text(text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
