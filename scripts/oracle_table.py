"""Oracle IoU of the shared real data sets (the README's table).

Runs the ``segstruct inspect`` workflow (``segstruct.cli.inspect_report``) on
camvid_voc (car, person) and weizmann_horse_voc (horse), writes each report as
JSON under --out (what ``inspect --json`` writes), and prints a Markdown table
of the val splits: counts, foreground share, superpixels per image and the
oracle IoU (every superpixel labelled with its own majority target, painted
back to pixels, VOC measure), the ceiling of any superpixel model.

    python scripts/oracle_table.py --shared ../shared/data --out out/inspect
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from segstruct.cli import build_parser, inspect_report
from segstruct.io.files import write_json

RUNS = [("camvid_voc", ["car", "person"]), ("weizmann_horse_voc", ["horse"])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2]
                    / "shared" / "data", help="folder holding the shared data sets")
    ap.add_argument("--out", type=Path, default=Path("out/inspect"))
    ap.add_argument("--split", default="val")
    ap.add_argument("-j", "--n-jobs", type=int, default=2)
    ap.add_argument("extra", nargs=argparse.REMAINDER,
                    help="further options for segstruct inspect (e.g. --superpixels "
                         "felzenszwalb --fz-min-size 300), parsed by its own parser")
    args = ap.parse_args(argv)
    if args.extra[:1] == ["--"]:
        args.extra = args.extra[1:]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, classes in RUNS:
        report = inspect_report(build_parser().parse_args(
            ["inspect", "--data", str(args.shared / name), "-q", "-j", str(args.n_jobs),
             "--class", *classes, *args.extra]))
        out = args.out / f"{name}.json"
        write_json(out, report)
        print(f"wrote {out}", file=sys.stderr)
        if report["problems"]:
            print(f"inspect of {name} reported {len(report['problems'])} problem(s); "
                  f"see {out}", file=sys.stderr)
        for cls in classes:
            s = report["splits"][args.split][cls]
            rows.append((name, cls, s, report["code_version"], report["features"]["superpixels"]))
    print(f"| data set | class | {args.split} images | with class | fg pixels % "
          f"| superpixels / image | oracle IoU % |")
    print("|---|---|---|---|---|---|---|")
    for name, cls, s, _, _ in rows:
        print(f"| {name} | {cls} | {s['images']} | {s['images_with_class']} | "
              f"{100 * s['foreground_pixel_share']:.2f} | "
              f"{s['superpixels_per_image']['mean']:.1f} | {s['oracle_voc_iou_percent']:.2f} |")
    sp = rows[0][4]
    print(f"\nsuperpixels: {sp}; code {rows[0][3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
