"""Oracle IoU of the shared real data sets (the README's table).

Runs the ``segstruct inspect`` workflow (the library's
``segstruct.evaluate.inspection.inspection_report``) on camvid_voc (car,
person) and weizmann_horse_voc (horse), writes each report as JSON under
--out (what ``inspect --json`` writes), and prints a Markdown table of the val
splits: counts, foreground share, superpixels per image and the oracle IoU
(every superpixel labelled with its own majority target, painted back to
pixels, VOC measure), the ceiling of any superpixel model.

    python scripts/oracle_table.py --shared ../shared/data --out out/inspect
    python scripts/oracle_table.py -- --superpixels felzenszwalb --fz-min-size 300

The options after ``--`` are those of ``segstruct inspect`` that set what is
inspected (``--split``, the superpixel and feature options below, ``--cache``),
with the command's names and defaults, parsed by this script's own parser
(:func:`inspect_parser`) into a ``FeatureConfig``: the same options give the
same report as the command.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from segstruct.datasets import VOCDataset
from segstruct.evaluate.inspection import inspection_report
from segstruct.features.cache import ArrayCache
from segstruct.features.config import FeatureConfig
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.superpixels import SuperpixelParams
from segstruct.features.topdown.detector import DetectorParams
from segstruct.io.files import write_json

RUNS = [("camvid_voc", ["car", "person"]), ("weizmann_horse_voc", ["horse"])]


def _long_side(text: str) -> int | str | None:
    """``--long-side``: "auto", "none" (None) or a number of pixels
    (``FeatureConfig`` checks the number)."""
    low = text.lower()
    return None if low == "none" else "auto" if low == "auto" else int(text)


def inspect_parser() -> argparse.ArgumentParser:
    """The options after ``--``: what ``segstruct inspect`` is given to set
    the splits, the cache and the features, with its names and defaults
    (those of ``FeatureConfig``; the top-down block on, as the command has it)."""
    d = FeatureConfig()
    s = d.superpixels
    p = argparse.ArgumentParser(prog="oracle_table.py ... --", add_help=False)
    p.add_argument("--split", nargs="+", help="splits to inspect (default: all)")
    p.add_argument("--cache", type=Path, help="feature cache folder (default: the library's)")
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--superpixels", choices=("slic", "felzenszwalb"), default=s.method)
    p.add_argument("--fz-scale", type=float, default=s.scale)
    p.add_argument("--fz-sigma", type=float, default=s.sigma)
    p.add_argument("--fz-min-size", type=int, default=s.min_size)
    p.add_argument("--slic-segments", type=int, default=s.n_segments)
    p.add_argument("--slic-compactness", type=float, default=s.compactness)
    p.add_argument("--slic-sigma", type=float, default=s.sigma)
    p.add_argument("--long-side", type=_long_side, default=d.long_side)
    p.add_argument("--upsampling", default=d.upsampling)
    p.add_argument("--words", type=int, default=d.n_words)
    p.add_argument("--codebook-descriptors", type=int, default=d.codebook_descriptors)
    p.add_argument("--no-top-down", action="store_true")
    p.add_argument("--seed", type=int, default=d.seed)
    return p


def feature_config(opts: argparse.Namespace) -> FeatureConfig:
    """The ``FeatureConfig`` of :func:`inspect_parser`'s options, built as
    ``segstruct inspect`` builds it from the same options (one sigma: the
    method's own)."""
    sigma = opts.slic_sigma if opts.superpixels == "slic" else opts.fz_sigma
    sp = SuperpixelParams(method=opts.superpixels, scale=opts.fz_scale, sigma=sigma,
                          min_size=opts.fz_min_size, n_segments=opts.slic_segments,
                          compactness=opts.slic_compactness)
    return FeatureConfig(superpixels=sp, n_words=opts.words,
                         codebook_descriptors=opts.codebook_descriptors, seed=opts.seed,
                         detector=None if opts.no_top_down else DetectorParams(seed=opts.seed),
                         long_side=opts.long_side, upsampling=opts.upsampling)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2]
                    / "shared" / "data", help="folder holding the shared data sets")
    ap.add_argument("--out", type=Path, default=Path("out/inspect"))
    ap.add_argument("--split", default="val")
    ap.add_argument("-j", "--n-jobs", type=int, default=2)
    ap.add_argument("extra", nargs=argparse.REMAINDER,
                    help="after --, options of segstruct inspect that set the splits, the "
                         "cache and the features (e.g. --superpixels felzenszwalb "
                         "--fz-min-size 300): --split, --cache, --no-cache, --superpixels, "
                         "--fz-scale, --fz-sigma, --fz-min-size, --slic-segments, "
                         "--slic-compactness, --slic-sigma, --long-side, --upsampling, "
                         "--words, --codebook-descriptors, --no-top-down, --seed")
    args = ap.parse_args(argv)
    if args.extra[:1] == ["--"]:
        args.extra = args.extra[1:]
    opts = inspect_parser().parse_args(args.extra)
    try:
        config = feature_config(opts)
    except ValueError as err:
        ap.error(f"options after --: {err}")
    cache = ArrayCache(opts.cache, enabled=not opts.no_cache)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, classes in RUNS:
        extractor = FeatureExtractor(VOCDataset(args.shared / name), config, cache,
                                     n_jobs=args.n_jobs, progress=False)
        report = inspection_report(extractor, opts.split, classes)
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
