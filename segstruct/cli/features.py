"""``segstruct features``: extract and cache superpixel graphs and features."""
from __future__ import annotations

import sys
import time

from segstruct.cli.common import UsageError, add_scheduler_option, open_dataset, voc_class
from segstruct.cli.settings import make_extractor
from segstruct.io.text import count

HELP = "extract and cache superpixel graphs and features"
FEATURES = True


def add_arguments(p) -> None:
    add_scheduler_option(p)
    p.add_argument("--split", nargs="+", help="splits to extract (default: train)")
    p.add_argument("--class", dest="class_name", type=voc_class, metavar="CLASS",
                   help="also compute the targets of this VOC class and its top-down "
                        "block, training its detector if needed (default: none, graphs "
                        "and bottom-up features only)")


def execute(args) -> int:
    if args.top_down and not args.class_name:
        raise UsageError("--top-down features are per class: give --class")
    bottom_up_only = not args.class_name and not args.no_top_down
    if bottom_up_only:
        # the bottom-up blocks are shared by every class; the top-down one is not
        if not args.quiet:
            print("no --class given: bottom-up features only (the top-down block is per "
                  "class)", file=sys.stderr)
    dataset = open_dataset(args)
    extractor = make_extractor(args, dataset, bottom_up_only=bottom_up_only)
    start = time.perf_counter()
    for split in args.split or ["train"]:
        if args.class_name:
            examples = extractor.examples(split, args.class_name)
            graphs = [ex.graph for ex in examples]
            fg_sp = sum(int(ex.targets[~ex.void_only].sum()) for ex in examples)
            extra = f", {count(fg_sp, args.class_name + ' superpixel')}"
        else:
            graphs = extractor.graphs(split)
            extra = ""
        n_nodes = sum(g.n_nodes for g in graphs)
        n_edges = sum(len(g.edges) for g in graphs)
        dim = 0
        if graphs:
            unary = graphs[0].unary
            assert unary is not None    # graphs and examples compute the features by default
            dim = unary.shape[1]
        print(f"{dataset.name}/{split}: {count(len(graphs), 'image')}, "
              f"{count(n_nodes, 'superpixel')}, {count(n_edges, 'edge')}, unary dim {dim}, "
              f"pairwise dim 3{extra}")
    where = "disabled" if not extractor.cache.enabled else extractor.cache.directory
    print(f"done in {time.perf_counter() - start:.1f} s; cache: {where}")
    return 0

