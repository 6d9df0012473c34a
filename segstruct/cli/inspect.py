"""``segstruct inspect``: check a data root and summarise it per split and class."""
from __future__ import annotations

from pathlib import Path

from segstruct.cli.common import open_dataset, voc_class
from segstruct.cli.settings import make_extractor
from segstruct.io.files import write_json
from segstruct.report.tables import inspection_text

HELP = ("check a data root and summarise it per split and class (counts, foreground "
        "share, superpixels, oracle IoU)")
#: the command takes the feature options (the oracle IoU is over superpixels)
FEATURES = True


def add_arguments(p) -> None:
    p.add_argument("--split", nargs="+", help="splits to inspect (default: all)")
    p.add_argument("--class", dest="class_names", nargs="+", type=voc_class, metavar="CLASS",
                   help="VOC class names (default: every class found in the masks)")
    p.add_argument("--json", type=Path,
                   help="also write the report as JSON here (default: not written)")


def execute(args) -> int:
    from segstruct.evaluate.inspection import inspection_report
    dataset = open_dataset(args)
    report = inspection_report(make_extractor(args, dataset), args.split, args.class_names)
    print(inspection_text(report))
    if args.json:
        write_json(args.json, report)
        print(f"wrote {args.json}")
    return 1 if report["problems"] else 0

