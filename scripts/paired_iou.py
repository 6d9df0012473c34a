"""Is one model's VOC IoU really higher than another's? A paired bootstrap.

Takes two ``segstruct evaluate --json`` reports of models of one class,
scored on the same split of the same data, and resamples the evaluation
images (the same draw for both models) to give a percentile interval of
the IoU difference A - B and the share of resamples each model wins. An
interval that holds 0 means the split cannot tell the two models apart.

    segstruct evaluate --data ROOT --model A --split val --json a.json
    segstruct evaluate --data ROOT --model B --split val --json b.json
    python scripts/paired_iou.py a.json b.json --out paired.json

It measures evaluation-set noise only: training both models again on
another draw of training images would move them further.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from segstruct.evaluate.bootstrap import paired_bootstrap
from segstruct.io.provenance import code_version

# what must agree for the two reports to be paired image by image
SAME = ("dataset", "data_root", "split", "class")


class ReportError(ValueError):
    """The reports cannot be compared (unreadable, or not paired)."""


def read_report(path: Path) -> dict:
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReportError(f"cannot read {path} ({err})") from err
    if not isinstance(report, dict) or "per_image" not in report:
        raise ReportError(f"{path} has no per-image counts: write it with "
                          "`segstruct evaluate --json` of this version")
    return report


def paired_counts(report_a: dict, report_b: dict, names=("A", "B")):
    """Per-image (TP, FP, FN) lists of two reports, checked to be paired."""
    for key in SAME:
        if report_a.get(key) != report_b.get(key):
            raise ReportError(f"the reports differ in {key}: {names[0]} has "
                              f"{report_a.get(key)!r}, {names[1]} {report_b.get(key)!r}")
    try:
        ids_a = [r["image_id"] for r in report_a["per_image"]]
        ids_b = [r["image_id"] for r in report_b["per_image"]]
        counts = ([(r["tp"], r["fp"], r["fn"]) for r in report_a["per_image"]],
                  [(r["tp"], r["fp"], r["fn"]) for r in report_b["per_image"]])
    except (KeyError, TypeError) as err:
        raise ReportError(f"a per-image entry lacks {err}: write the reports with "
                          "`segstruct evaluate --json`") from err
    if ids_a != ids_b:
        missing = sorted(set(ids_a) ^ set(ids_b))
        detail = f"images in one only: {missing[:5]}" if missing else "same images, other order"
        raise ReportError(f"the reports are not scored on the same images ({detail})")
    return counts


def describe(report: dict, path: Path) -> dict:
    """What a reader needs to know of one model: method, settings, versions."""
    return {"report": str(path), "model": report.get("model"), "method": report.get("method"),
            "estimator": report.get("estimator"),
            "model_code_version": report.get("model_code_version"),
            "voc_iou_percent": report.get("score", {}).get("voc_iou_percent")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path, help="evaluate report of model A")
    ap.add_argument("b", type=Path, help="evaluate report of model B")
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="also write the result as JSON here")
    args = ap.parse_args(argv)
    try:
        report_a, report_b = read_report(args.a), read_report(args.b)
        counts_a, counts_b = paired_counts(report_a, report_b)
        result = paired_bootstrap(counts_a, counts_b, args.resamples, args.confidence,
                                  args.seed)
    except (ReportError, ValueError) as err:
        print(f"paired_iou: {err}", file=sys.stderr)
        return 2
    low, high = result["interval"]
    print(f"{report_a['dataset']}/{report_a['split']}, class {report_a['class']}, "
          f"{result['n_images']} images: A {result['iou_a']:.2f} % ({report_a.get('method')}), "
          f"B {result['iou_b']:.2f} % ({report_b.get('method')})")
    print(f"A - B = {result['difference']:+.2f} points; {100 * result['confidence']:.0f} % "
          f"interval [{low:+.2f}, {high:+.2f}]; A higher in "
          f"{100 * result['share_a_better']:.1f} % of {result['n_resamples']} resamples, "
          f"B in {100 * result['share_b_better']:.1f} %")
    if args.out:
        payload = {"format": "segstruct-paired-bootstrap", "format_version": 1,
                   **{key: report_a.get(key) for key in SAME},
                   "a": describe(report_a, args.a), "b": describe(report_b, args.b),
                   "bootstrap": result, "code_version": code_version()}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps(payload, indent=2) + "\n")
        tmp.replace(args.out)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
