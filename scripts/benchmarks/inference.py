"""Loss-augmented inference on real superpixel graphs: time per image of every
oracle against the Hamming graph cut, and its gap to the exact optimum (MILP).

Runs ``scripts/bench_inference.py`` (its docstring says what each case and
target measures) on its default data sets, CamVid's cars and the Weizmann
horses of the shared data, with a BL1 model trained at the default features.
Writes ``results.json`` and ``table.md``.
"""
from __future__ import annotations

import sys
from pathlib import Path

SUMMARY = ("the oracles on real superpixel graphs: ms per image, ratio to one graph cut, "
           "gap to the exact MILP optimum")
DEFAULTS = ("features",)

SCRIPTS = Path(__file__).resolve().parents[1]


def add_arguments(parser) -> None:
    parser.add_argument("--shared-data", type=Path, default=SCRIPTS.parent.parent / "shared"
                        / "data", help="the folder of the real data sets (default "
                        "../shared/data from the repository root)")
    parser.add_argument("-j", "--n-jobs", type=int, default=2)


def run(args, out: Path) -> dict:
    sys.path.insert(0, str(SCRIPTS))
    import bench_inference
    bench_inference.main(["--shared-data", str(args.shared_data), "-j", str(args.n_jobs),
                          "-q", "--out", str(out / "results.json"),
                          "--md", str(out / "table.md")])
    import json
    doc = json.loads((out / "results.json").read_text())
    return {t["name"]: t["value"] for t in doc["targets"]}


def describe(folder: Path) -> str:
    """bench_inference.py's Markdown, its sections one level down."""
    import re
    text = (folder / "table.md").read_text()
    text = re.sub(r" \(issue \d+\)", "", text)
    return re.sub(r"^## ", "### ", text, flags=re.M)
