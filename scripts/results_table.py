"""Table 1 style summary of runs made by scripts/train_shared.sh.

Reads DIR/<method>_<dataset>_<class>.json (model) and .val.json (scores) and
prints a Markdown table: val VOC IoU %, then training time, iterations and
whether the cutting planes converged.

    python scripts/results_table.py runs
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path)
    args = ap.parse_args(argv)
    rows = {}
    versions = set()
    for scores in sorted(args.runs.glob("*.val.json")):
        model = json.loads(scores.with_name(scores.name.replace(".val.json", ".json")).read_text())
        val = json.loads(scores.read_text())
        key = (val["dataset"], val["class"])
        rows.setdefault(key, {})[val["method"]] = (val["score"]["voc_iou_percent"], model)
        versions.add(model["code_version"])
    methods = sorted({m for r in rows.values() for m in r})
    print("| data set | class | " + " | ".join(methods) + " |")
    print("|---|---|" + "---|" * len(methods))
    for (dataset, cls), r in sorted(rows.items()):
        cells = []
        for m in methods:
            if m not in r:
                cells.append("-")
                continue
            iou, model = r[m]
            tr = model["training"]
            mark = "" if tr["converged"] else "*"
            cells.append(f"{iou:.2f} ({tr['fit_seconds']:.0f} s, {tr['n_iter']} it{mark})")
        print(f"| {dataset} | {cls} | " + " | ".join(cells) + " |")
    print(f"\nval VOC IoU % (training seconds, cutting-plane iterations; * = stopped at "
          f"--max-iter before the tolerance); code {', '.join(sorted(versions))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
