"""Per-case summaries of ``bench_images`` results and their Markdown table."""
from __future__ import annotations

import numpy as np

from benchlib.cases import BASELINE
from segstruct.report.tables import fmt
from benchlib.measure import EXACT_RTOL, bound_violated


def summarise(per_image: dict, baseline: str = BASELINE) -> dict:
    """Per case: median / mean time per image, ratio of medians to the
    baseline's, and quality against the exact optimum.

    Returns
    -------
    dict name -> {"n_images", "median_ms", "mean_ms", "ratio_to_baseline",
    "exact_share", "mean_rel_gap", "max_rel_gap", "bound_checked",
    "bound_violations", "inexact_images"} (quality entries None, 0 or empty
    for timing-only cases).
    """
    cases = per_image["cases"]
    base = float(np.median(cases[baseline]["ms"])) if baseline in cases else None
    summary = {}
    for name, rec in cases.items():
        ms = np.asarray(rec["ms"], np.float64)
        med = float(np.median(ms)) if ms.size else None
        row = {"n_images": int(ms.size), "median_ms": med,
               "mean_ms": float(ms.mean()) if ms.size else None,
               "ratio_to_baseline": (med / base) if (med is not None and base) else None,
               "exact_share": None, "mean_rel_gap": None, "max_rel_gap": None,
               "bound_checked": 0, "bound_violations": 0, "inexact_images": []}
        _add_quality(row, rec, per_image["images"])
        summary[name] = row
    return summary


def _add_quality(row: dict, rec: dict, images: list) -> None:
    gaps = [g for g in rec["rel_gap"] if g is not None]
    if not gaps:                 # a timing-only case
        return
    g = np.asarray(gaps)
    row["exact_share"] = float(np.mean(g <= EXACT_RTOL))
    row["inexact_images"] = [img for img, gap in zip(images, rec["rel_gap"])
                             if gap is not None and gap > EXACT_RTOL]
    row["mean_rel_gap"] = float(g.mean())
    row["max_rel_gap"] = float(g.max())
    for b, e in zip(rec["bound"], rec["exact_objective"]):
        if b is None or e is None:
            continue
        row["bound_checked"] += 1
        row["bound_violations"] += int(bound_violated(b, e))


def markdown_table(summaries: dict, baseline: str = BASELINE) -> str:
    """One row per (group, case): summaries is group -> summarise() output."""
    lines = [f"| data set | case | images | median ms / image | x {baseline} "
             "| exact | mean rel. gap | max rel. gap | bound < exact |",
             "|---|---|---|---|---|---|---|---|---|"]
    for group, summary in summaries.items():
        for name, r in summary.items():
            exact = None if r["exact_share"] is None else 100 * r["exact_share"]
            bound = (f"{r['bound_violations']} / {r['bound_checked']}"
                     if r["bound_checked"] else fmt(None))
            lines.append(
                f"| {group} | {name} | {r['n_images']} | {fmt(r['median_ms'], '.3f')} | "
                f"{fmt(r['ratio_to_baseline'], '.1f')} | "
                f"{fmt(None) if exact is None else f'{exact:.0f} %'} | "
                f"{fmt(r['mean_rel_gap'], '.2e')} | {fmt(r['max_rel_gap'], '.2e')} | "
                f"{bound} |")
    return "\n".join(lines) + "\n"
