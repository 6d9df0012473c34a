"""Loss-augmented inference on real superpixel graphs: time per image and gap to the exact optimum.

For each data set / class (default camvid_voc:car and weizmann_horse_voc:horse)
a BL1 model is trained on the training split (data-set scope, C = 0.5, as in
the README's results; or ``--model`` loads a saved one), and its potentials
u, p = MRFModel(pairwise=True).potentials(graph, w) on a seeded sample of
val images are handed to every inference case of ``default_cases()``:

    graphcut_hamming   Hamming loss folded into the unaries, one graph cut
    proposed_M40       IoU, ProposedOracle(40): the default envelope inference
                       (exact branch and bound with graph cuts; M unused)
    proposed_M40_decomposition
                       IoU, ProposedOracle(40, inference="decomposition")
    proposed_M40_lp    IoU, ProposedOracle(40, inference="lp") (per-triangle LP)
    bl2                IoU, unary-only problem (same u, p = 0): Joachims' sort
    exact_milp         IoU, the MILP (HiGHS)
    triangulation_M*   building the triangulation alone (cold), no quality

Each case is timed per image as the median (``--timer min``: the minimum) of
``--repeats`` calls. Every call gets a fresh oracle built outside the timed
region, so nothing carries over between calls (ProposedOracle keeps
triangulations and seeds its columns with the labellings of its previous
call); the triangle LPs' triangulation is built before the timed
call, so those cases time the LPs only and the triangulation_M* cases time the
triangulation alone (the envelope inference needs none) (with segstruct.inference.triangulation's module cache cleared).
Quality is measured against the exact optimum of the same problem (MILP with
the same u, p, t, a and loss; p = 0 for the unary-only case).

The run ends with issue 7's four targets (``targets_from``; JSON ``targets``,
each {name, value, goal, met, detail}; what each measures: ``TARGET_MEASURES``):

    superpixel_M40_ratio   median over the real images of proposed_M40 / Hamming
                           graph cut time (<= 50), and proposed_M40's objective
                           >= proposed_M40_lp's on every image
    exact_share            share of real images and ``--random`` seeded random
                           50-node instances where proposed_M40 is exact
                           (MILP, rel. 1e-6) (>= 0.99), with a finite bound
                           never below the optimum on every call
    dataset_scope_seconds  one ProposedOracle(40) call (default solver) on the
                           disjoint union of all training graphs of
                           ``--scope-data-set`` (< 5 s)
    pixel_level_ratio      one ProposedOracle(40) IoU call / one Hamming graph
                           cut on a 4-connected pixel grid of a full image
                           (``pixel_grid``) (<= 20); the proposed call runs in
                           a worker killed after ``--pixel-timeout`` s, and
                           then the value is a lower bound (detail ">= X")
                           and not met

``--full``: every image of the split at superpixel scope and 1000 random
instances (unless ``--random`` says otherwise); the data-set scope always
uses every training image.

    python scripts/bench_inference.py --out out/bench_inference.json \\
        --md out/bench_inference.md
    python scripts/bench_inference.py --data-sets camvid_voc:car --images 5 --repeats 1
    python scripts/bench_inference.py --random 0 --no-dataset-scope --pixel-images 0

The pieces live in ``scripts/benchlib/`` (one module a job, listed in its
``__init__``); this file parses the options, runs them and writes the outputs.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# benchlib lies next to this file: Python puts the script's folder first on sys.path
from benchlib import record, run
from benchlib.cases import BASELINE
from benchlib.report import markdown_table
from benchlib.sources import DEFAULT_SHARED, check_root
from benchlib.targets import targets_from, targets_table

DEFAULT_DATA_SETS = ("camvid_voc:car", "weizmann_horse_voc:horse")
DEFAULT_SCOPE = "camvid_voc:car"      # data-set scope and pixel-level targets


def _parse_data_set(spec: str) -> tuple[str, str]:
    name, sep, cls = spec.partition(":")
    if not sep or not name or not cls:
        raise argparse.ArgumentTypeError(f"data set {spec!r} must look like NAME:CLASS, "
                                         "e.g. camvid_voc:car")
    return name, cls


def parse_args(argv=None) -> argparse.Namespace:
    """The options, checked; a missing data set ends the run before any work."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared-data", type=Path, default=DEFAULT_SHARED,
                    help="folder holding the shared data sets (default: %(default)s)")
    ap.add_argument("--data-sets", nargs="+", type=_parse_data_set,
                    default=[_parse_data_set(s) for s in DEFAULT_DATA_SETS],
                    metavar="NAME:CLASS", help="default: " + " ".join(DEFAULT_DATA_SETS))
    ap.add_argument("--split", default="val", help="split to sample images from")
    ap.add_argument("--images", type=int, default=20, help="images per data set")
    ap.add_argument("--full", action="store_true", help="every image of the split")
    ap.add_argument("--seed", type=int, default=0, help="seed of the image sample")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per case and image")
    ap.add_argument("--timer", choices=("median", "min"), default="median",
                    help="aggregate of the repeats (default: %(default)s)")
    ap.add_argument("--triangles", type=int, nargs="+", default=[40], metavar="M",
                    help="M of the proposed_M*_decomposition cases")
    ap.add_argument("--lp-triangles", type=int, default=40, metavar="M",
                    help="M of the plain-LP proposed case (0: leave it out)")
    ap.add_argument("--C", type=float, default=0.5, help="C of the BL1 model trained here")
    ap.add_argument("--max-iter", type=int, default=200, help="its cutting-plane iterations")
    ap.add_argument("--model", type=Path, help="use a saved model instead of training BL1 "
                    "(one data set only)")
    ap.add_argument("--cache", type=Path, default=None,
                    help="feature cache folder (default: $SEGSTRUCT_CACHE or ~/.cache/segstruct)")
    ap.add_argument("-j", "--n-jobs", type=int, default=1,
                    help="worker processes for loading features")
    ap.add_argument("--random", type=int, default=None, metavar="N",
                    help="random 50-node instances for the exactness target (default 100, "
                         "1000 with --full; 0: none)")
    ap.add_argument("--scope-data-set", type=_parse_data_set,
                    default=_parse_data_set(DEFAULT_SCOPE), metavar="NAME:CLASS",
                    help="data set of the data-set scope and pixel-level targets "
                         "(default: " + DEFAULT_SCOPE + ")")
    ap.add_argument("--no-dataset-scope", action="store_true",
                    help="skip the data-set scope target (union of all training images)")
    ap.add_argument("--pixel-images", type=int, default=3, metavar="N",
                    help="images of the pixel-level target (default 3; 0: skip it)")
    ap.add_argument("--pixel-timeout", type=float, default=120.0, metavar="S",
                    help="time limit of one pixel-level proposed call, run in a worker "
                         "process (default %(default)s s; 0: in this process, no limit)")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--md", type=Path, help="write the Markdown table here")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    _check(ap, args)
    return args


def _check(ap, args) -> None:
    """Refuse bad values and missing data sets here, before any training."""
    if args.images < 1 or args.repeats < 1:
        ap.error("--images and --repeats must be >= 1")
    if args.random is None:
        args.random = 1000 if args.full else 100
    if args.random < 0 or args.pixel_images < 0 or args.pixel_timeout < 0:
        ap.error("--random, --pixel-images and --pixel-timeout must be >= 0")
    if args.model is not None and len(args.data_sets) != 1:
        ap.error("--model needs exactly one --data-sets entry (the model's data set and class)")
    if not args.shared_data.is_dir():
        raise SystemExit(f"error: shared data folder {args.shared_data} not found; give it "
                         "with --shared-data DIR")
    for name, _ in args.data_sets:
        check_root(args.shared_data, name)
    if run.scope_on(args):
        check_root(args.shared_data, args.scope_data_set[0])


def print_summary(args, table: str, ttable: str, targets: list, seconds: float) -> None:
    print(table)
    print(f"{args.timer} of {args.repeats} call(s) per case and image (random50: 1 call); "
          f"ratios are medians over images divided by {BASELINE}'s\n")
    print("Targets (issue 7):")
    print(ttable)
    for t in targets:
        print(f"  {t['name']}: {t['detail']}")
    print(f"run took {seconds:.0f} s")


def write(path: Path, text: str) -> None:
    from segstruct.io.files import atomic_write_bytes
    atomic_write_bytes(path, lambda f: f.write(text.encode()))
    print(f"wrote {path}")


def main(argv=None) -> int:
    args = parse_args(argv)
    run_start = time.perf_counter()
    cases = run.cases_for(args)
    measured = run.measure_all(args, cases)
    inputs = run.target_inputs(measured)
    targets = targets_from(inputs)
    table, ttable = markdown_table(measured.summaries), targets_table(targets)
    seconds = time.perf_counter() - run_start
    print_summary(args, table, ttable, targets, seconds)
    if args.out is not None:
        doc = record.document(args, cases, measured, inputs, targets, seconds)
        write(args.out, json.dumps(doc, indent=1) + "\n")
    if args.md is not None:
        write(args.md, record.markdown(args, table, ttable, targets, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
