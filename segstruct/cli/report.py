"""``segstruct report DIR``: write a finished comparison's report.html again
(the table, figures and gallery as one self-contained page)."""
from __future__ import annotations

from pathlib import Path

from segstruct.cli.common import UsageError, show_progress

HELP = ("write a finished comparison's report.html again: its table, figures and a gallery "
        "of every method's masks, as one page any browser opens")
FEATURES = False


def add_arguments(p) -> None:
    from segstruct.compare.report import GALLERY_IMAGES
    p.add_argument("dir", type=Path, metavar="DIR",
                   help="the --out folder of a finished `segstruct compare` (its results.json, "
                        "models and figures); --data defaults to the comparison's data root")
    p.add_argument("--gallery-images", type=int, default=GALLERY_IMAGES, metavar="N",
                   help="images per class in the gallery, those where the methods disagree "
                        "most (default %(default)s); 0 for every evaluation image")
    p.add_argument("--output", type=Path, metavar="FILE",
                   help="where to write the page (default: DIR/report.html)")


def execute(args) -> int:
    from segstruct.compare.report import read_results, write_report
    from segstruct.datasets import VOCDataset
    from segstruct.features.cache import ArrayCache
    if args.gallery_images < 0:
        raise UsageError(f"--gallery-images must be 0 (every image) or more, got "
                         f"{args.gallery_images}")
    if args.no_cache and args.cache is not None:
        raise UsageError("--no-cache and --cache contradict each other; give one")
    results = read_results(args.dir)
    root = args.data if args.data is not None else Path(results["data_root"])
    if not root.is_dir():
        raise UsageError(f"the comparison's data root {root} is not a folder: give --data "
                         "ROOT, where its data are now")
    dataset = VOCDataset(root)
    say = print if show_progress(args) else None
    path = write_report(args.dir, results, dataset, cache=ArrayCache(args.cache,
                                                                     enabled=not args.no_cache),
                        max_images=args.gallery_images or None, path=args.output, say=say)
    print(f"wrote {path}")
    return 0
