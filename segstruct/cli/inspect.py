"""``segstruct inspect``: check a data root and summarise it per split and class."""
from __future__ import annotations

from pathlib import Path

from segstruct.cli.common import open_dataset, provenance, voc_class
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


def inspect_report(args) -> dict:
    """The inspect workflow on parsed ``segstruct inspect`` options: the data
    root and features they name, checked and summarised per split and class.

    Returns the report ``--json`` writes: provenance (data set, features, code
    version), then ``inspect_dataset``'s "splits" and "problems". Scripts that
    inspect several data sets call this with ``build_parser().parse_args(
    ["inspect", ...])``, so they and the command share one workflow.
    """
    from segstruct.evaluate.inspection import inspect_dataset
    dataset = open_dataset(args)
    extractor = make_extractor(args, dataset)
    return {**provenance(dataset, extractor),
            **inspect_dataset(extractor, args.split, args.class_names)}


def run(args) -> int:
    report = inspect_report(args)
    print(inspection_text(report))
    if args.json:
        write_json(args.json, report)
        print(f"wrote {args.json}")
    return 1 if report["problems"] else 0

