"""What a phone photo costs to label: seconds and peak memory of ``segstruct
predict`` on a 12-megapixel photo (a horse val image up-sampled to 4000 x
3000), one photo and eight in one run, by the graph cut and by predict's
default ensemble; and how well the photo's mask agrees with the small image's.

Trains a bl1 horse model at C 1 with the command line's default features
(``segstruct train``), then runs ``scripts/bench_large_photo.py`` with it.
Writes ``results.json``, ``table.md`` and ``figure.png``.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

SUMMARY = "a 12-megapixel photo through `segstruct predict`: seconds and peak memory"
DEFAULTS = ("features", "prediction")

SCRIPTS = Path(__file__).resolve().parents[1]


def add_arguments(parser) -> None:
    parser.add_argument("--data", type=Path, default=SCRIPTS.parent.parent / "shared" / "data"
                        / "weizmann_horse_voc", help="the data set (default: the horses of "
                        "../shared/data)")
    parser.add_argument("--class", dest="class_name", default="horse")
    parser.add_argument("-j", "--n-jobs", type=int, default=2,
                        help="workers for training the model (predict runs on one)")


def run(args, out: Path) -> dict:
    sys.path.insert(0, str(SCRIPTS))
    import bench_large_photo
    with tempfile.TemporaryDirectory(prefix="bench-large-photo-") as scratch:
        model = Path(scratch) / "model"
        subprocess.run([sys.executable, "-m", "segstruct", "train", "--data", str(args.data),
                        "--class", args.class_name, "--method", "bl1", "--C", "1", "--out",
                        str(model), "-j", str(args.n_jobs), "-q"], check=True)
        bench_large_photo.main(["--data", str(args.data), "--class", args.class_name,
                                "--model", str(model), "--ensemble", "1", "5",
                                "--photos", "8", "--out", str(out)])
    rows = json.loads((out / "results.json").read_text())["rows"]
    return {"photo_seconds": {str(r["ensemble"]): round(r["seconds"], 1) for r in rows
                              if r["input"] == "photo"}}


def describe(folder: Path) -> str:
    """bench_large_photo.py's table without its title, and its figure."""
    lines = (folder / "table.md").read_text().splitlines()
    body = [line for line in lines if not line.startswith("# ")]
    return "\n".join(body).strip() + "\n\nFigure: `figure.png`."
