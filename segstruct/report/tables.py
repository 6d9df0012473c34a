"""The comparison's tables (Table 1 of the paper) from its results.json content.

``results`` is the dict :meth:`segstruct.compare.Comparison.results` returns
(and results.json holds): rows are classes and their mean, columns methods,
cells VOC IoU %; a caption names the data, settings and code version.
"""
from __future__ import annotations

import csv
import io

from segstruct.features.config import FeatureConfig
from segstruct.io.text import MISSING, count, fmt
from segstruct.learn.methods import c_text, fold_tol_text
from segstruct.report.intervals import interval_note, interval_rows, table_html

__all__ = ["comparison_multiclass_markdown", "fmt", "inspection_text", "multiclass_markdown",
           "table_csv", "table_html", "table_markdown"]


def table_markdown(results: dict) -> str:
    """Table 1 style: rows classes (and the mean), columns methods, IoU % on
    the evaluation split with the training split's beside it."""
    s = results["settings"]
    methods = results["methods"]
    out = io.StringIO()
    reference = (results.get("intervals") or {}).get("reference")
    others = [m for m in methods if m != reference] if reference else []
    spans = ", with its 95 % interval" if results.get("intervals") else ""
    out.write(f"# VOC IoU % on {results['dataset']} ({results['eval_split']}{spans}; in "
              f"brackets on {results['train_split']})\n\n")
    out.write("| class | " + " | ".join([*methods, *(f"{m} − {reference}" for m in others)])
              + " |\n")
    out.write("|---|" + "---|" * (len(methods) + len(others)) + "\n")
    for name, cells, diffs in interval_rows(results):
        texts = [c.text() for c in cells] + [diffs[m].text() for m in others]
        if name == "mean":
            name, texts = f"**{name}**", [f"**{t}**" for t in texts]
        out.write(f"| {name} | " + " | ".join(texts) + " |\n")
    out.write(f"\n{interval_note(results)}\n")
    out.write(f"\nIn round brackets: the same models on their own training split "
              f"({results['train_split']}); a training IoU far above the "
              f"{results['eval_split']} IoU is over-fitting. Each cell scores the "
              f"model's graph cut (`segstruct evaluate --ensemble 1`)"
              f"{_ensemble_note(results.get('features'))}.\n")
    by_pair = {(r["class"], r["method"]): r["training"] for r in results["results"]}
    out.write("\nTraining seconds / cutting-plane iterations (* = stopped at max_iter):\n\n")
    out.write("| class | " + " | ".join(methods) + " |\n")
    out.write("|---|" + "---|" * len(methods) + "\n")
    for c in results["classes"]:
        cells = []
        for m in methods:
            t = by_pair.get((c, m))
            cells.append(MISSING if t is None else
                         f"{t['fit_seconds']:.0f} s / {t['n_iter']}{'' if t['converged'] else '*'}")
        out.write(f"| {c} | " + " | ".join(cells) + " |\n")
    if s["C"] == "auto":
        _chosen_C_table(out, results)
    if len(s.get("decisions", ["map"])) > 1:
        _decisions_table(out, results)
    for r in results["results"]:
        for warning in r.get("diagnosis", {}).get("warnings", []):
            out.write(f"\n- Warning, {r['class']} / {r['method']}: {warning}")
    for name, why in results.get("skipped", {}).items():
        out.write(f"\n- Not compared, {name}: {why}")
    for name, why in results.get("detector_warnings", {}).items():
        out.write(f"\n- Warning, {name} detector: {why}")
    loss = s["loss"] if s["loss"] != "fbeta" else f"fbeta (beta {s['beta']:g})"
    versions = sorted({r["code_version"] for r in results["results"]})
    # records made before the settings' renaming name them lp_solver and weights
    inference = s.get("inference", s.get("lp_solver", "decomposition"))
    oracle = (f"{inference} (exact)" if inference == "envelope"
              else f"{inference}, M {s['n_triangles']}")
    node_weights = s.get("node_weights", s.get("weights"))
    out.write(
        f"\nData {results['data_root']}; trained on {results['train_split']}, scored on "
        f"{results['eval_split']} (VOC measure, pixels, void excluded). Loss of bl2/proposed "
        f"{loss}; scope {s['scope']}; {c_text(s)}; proposed oracle {oracle}"
        f"{'' if s.get('polish', True) else ', no polish'}; node weights {node_weights}; "
        f"solver {s['solver']}, tol {s['tol']:g}, "
        f"max_iter {s['max_iter']}; seed {results['seed']}; "
        f"{features_text(results.get('features') or {})}; code "
        f"{', '.join(versions) or results['code_version']}.\n")
    return out.getvalue()


def _ensemble_note(features: dict | None) -> str:
    """What predict and evaluate do by default with such models, where it
    is not the graph cut the tables score."""
    from segstruct.ensemble import default_members
    members = default_members(FeatureConfig.from_dict(features)) if features else 1
    return (f"; `segstruct predict` and `evaluate` label with an ensemble of {members} members "
            "by default") if members > 1 else ""


def blocks_text(features: dict) -> str:
    """The unary blocks in use, e.g. "features sift (1000), colour (6), ...,
    top_down (14)": name and width, as ``FeatureConfig.unary_blocks`` gives them."""
    if not features:
        return "features not recorded"
    return "features " + ", ".join(f"{name} ({width})" for name, width in
                                   FeatureConfig.from_dict(features).unary_blocks())


def features_text(features: dict) -> str:
    """The unary blocks, the superpixels and the working resolution, e.g.
    "features sift (1000), ..., top_down (14) (superpixels SLIC, 80
    segments, compactness 20; images at a long side of 560 px)"."""
    if not features:
        return "features not recorded"
    config = FeatureConfig.from_dict(features)
    side = config.long_side
    where = "images as given" if side is None else f"images at a long side of {side} px"
    if side is not None and config.upsampling != "linear":
        where += f", enlarged by {config.upsampling}"
    return f"{blocks_text(features)} (superpixels {config.superpixels.describe()}; {where})"


def _chosen_C_table(out, results: dict) -> None:
    """With ``--C auto``: each pair's chosen C and its pooled held-out IoU."""
    s = results["settings"]
    methods = results["methods"]
    by_pair = {(r["class"], r["method"]): r for r in results["results"]}
    # records made before cv_tol: their folds stopped at tol
    tol = "" if s.get("cv_tol") is None else f", the folds' fits to {fold_tol_text(s)}"
    out.write(f"\nC chosen by {s['folds']}-fold cross-validation on {results['train_split']} "
              f"(pooled held-out VOC IoU %, seconds of the cross-validation's fits{tol}) over "
              f"{' '.join(f'{c:g}' for c in s['C_grid'])}:\n\n")
    out.write("| class | " + " | ".join(methods) + " |\n")
    out.write("|---|" + "---|" * len(methods) + "\n")
    for c in results["classes"]:
        cells = []
        for m in methods:
            curve = by_pair.get((c, m), {}).get("C_selection")
            if curve is None:
                cells.append("-")
                continue
            j = curve["grid"].index(curve["chosen_C"])
            ext = curve.get("extended") or {}
            # how far the grid extended itself past its ends: "+2 above", "+1 below"
            steps = ", ".join(f"+{ext[side]} {side}" for side in ("below", "above")
                              if ext.get(side))
            cells.append(f"{curve['chosen_C']:g} ({fmt(curve['pooled_iou_percent'][j])}, "
                         f"{sum(map(sum, curve['fit_seconds'])):.0f} s"
                         f"{f'; grid {steps}' if steps else ''})")
        out.write(f"| {c} | " + " | ".join(cells) + " |\n")
    out.write("\n+k below / above: cross-validation's held-out IoU still rose at an end of "
              "the grid, which then extended itself k steps past it (`--C-extend`).\n")


def _decisions_table(out, results: dict) -> None:
    """With decisions besides the MAP: val IoU % (train in brackets) of every
    method and decision, and the temperatures of the SSVMs' marginals."""
    decisions = results["settings"]["decisions"]
    methods = results["methods"]
    by_pair = {(r["class"], r["method"]): r.get("decisions") for r in results["results"]}
    columns = [(m, d) for m in methods for d in decisions]
    out.write("\nVOC IoU % by decision (in brackets on the training split): map is the "
              "model's graph cut; marginal labels q_i > 1/2; expected-iou / expected-fbeta "
              "maximise the measure of the expected counts over the whole split (one "
              "threshold of the marginals q, exact). A CRF's marginals are its own; an "
              "SSVM's are exp(score / T) with T fitted by held-out likelihood on training "
              "folds (an approximation; T in the last table):\n\n")
    out.write("| class | " + " | ".join(f"{m} {d}" for m, d in columns) + " |\n")
    out.write("|---|" + "---|" * len(columns) + "\n")
    sums: dict = {}
    for c in results["classes"]:
        cells = []
        for m, d in columns:
            scores = (by_pair.get((c, m)) or {}).get("scores", {}).get(d)
            if scores is None:
                cells.append(MISSING)
                continue
            val, train = (scores[k]["voc_iou_percent"] for k in ("eval_score", "train_score"))
            sums.setdefault((m, d), []).append((val, train))
            cells.append(f"{fmt(val)} ({fmt(train, '.1f')})")
        out.write(f"| {c} | " + " | ".join(cells) + " |\n")
    if len(results["classes"]) > 1:
        cells = []
        for key in columns:
            pairs = sums.get(key, [])
            cells.append(MISSING if len(pairs) < len(results["classes"]) else
                         f"**{fmt(sum(v for v, _ in pairs) / len(pairs))}** "
                         f"({fmt(sum(t for _, t in pairs) / len(pairs), '.1f')})")
        out.write("| **mean** | " + " | ".join(cells) + " |\n")
    out.write("\nTemperature T of each model's marginals:\n\n")
    out.write("| class | " + " | ".join(methods) + " |\n")
    out.write("|---|" + "---|" * len(methods) + "\n")
    for c in results["classes"]:
        cells = []
        for m in methods:
            t = (by_pair.get((c, m)) or {}).get("temperature")
            cells.append(MISSING if t is None else f"{t:.3g}")
        out.write(f"| {c} | " + " | ".join(cells) + " |\n")


def table_csv(results: dict) -> str:
    """The same table as CSV: a header ``class,<methods>,<method> train...``,
    then one row per class and the mean (evaluation-split IoU %, then the
    training split's), then each method's interval (``<method> low``,
    ``<method> high``) and each difference from the reference
    (``<method> - <reference>``, its ``low``, ``high`` and ``verdict``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    methods = results["methods"]
    reference = (results.get("intervals") or {}).get("reference")
    others = [m for m in methods if m != reference] if reference else []
    writer.writerow(["class", *methods, *(f"{m} train" for m in methods),
                     *(f"{m} {end}" for m in methods for end in ("low", "high")),
                     *(f"{m} - {reference}{end}" for m in others
                       for end in ("", " low", " high", " verdict"))])

    def number(v):
        return "" if v is None else f"{v:.4f}"
    for name, cells, diffs in interval_rows(results):
        spans = [number(None if c.interval is None else c.interval[k])
                 for c in cells for k in (0, 1)]
        differences = []
        for m in others:
            d = diffs[m]
            low, high = d.interval if d.interval is not None else (None, None)
            differences += [number(d.value), number(low), number(high), d.verdict or ""]
        writer.writerow([name, *(number(c.value) for c in cells),
                         *(number(c.train) for c in cells), *spans, *differences])
    return out.getvalue()


def inspection_text(report: dict) -> str:
    """``segstruct inspect``'s table: a row per split and class.

    Parameters
    ----------
    report : dict
        ``segstruct.evaluate.inspection.inspection_report``'s: provenance ("dataset",
        "data_root", "code_version"), "splits" ({split: {class: summary}}, as
        ``segstruct.evaluate.inspection.inspect_dataset`` gives) and "problems".

    Returns
    -------
    str
        Fixed-width text, the problems (or "no problems found") below it.
    """
    lines = [f"data set {report['dataset']} ({report['data_root']}), code "
             f"{report['code_version']}"]
    header = (f"{'split':<10} {'class':<12} {'images':>6} {'with':>6} {'fg px %':>8} "
              f"{'void %':>7} {'sp/img':>7} {'fg sp':>6} {'bg sp':>6} {'kappa':>7} "
              f"{'oracle IoU %':>12}")
    lines += [header, "-" * len(header)]
    for split, per_class in report["splits"].items():
        for name, s in per_class.items():
            sp = s["superpixels_per_image"]
            lines.append(
                f"{split:<10} {name:<12} {s['images']:>6} {s['images_with_class']:>6} "
                f"{100 * s['foreground_pixel_share']:>8.2f} "
                f"{100 * s['void_pixel_share']:>7.2f} "
                f"{sp['mean']:>7.1f} {s['foreground_superpixels']:>6} "
                f"{s['background_superpixels']:>6} "
                f"{fmt(s['kappa_fg_bg_superpixel_ratio'], '7.4f'):>7} "
                f"{fmt(s['oracle_voc_iou_percent'], '12.2f'):>12}")
    if report["problems"]:
        lines.append(f"\n{count(len(report['problems']), 'problem')}:")
        lines += [f"  - {msg}" for msg in report["problems"]]
    else:
        lines.append("\nno problems found")
    return "\n".join(lines)


def multiclass_markdown(scores: dict, alone: dict) -> str:
    """``evaluate --multiclass``'s table: IoU % per label, combined and alone.

    Parameters
    ----------
    scores : dict
        ``ConfusionMatrix.to_dict()`` of the combined labels ("iou_percent"
        per label name, "mean_iou_percent").
    alone : dict
        {class: ``VOCScore.to_dict()``} of each class model scored alone.

    Returns
    -------
    str
        A Markdown table: a row per label that the masks or the labels hold,
        then the mean.
    """
    from segstruct.datasets.voc import VOC_CLASSES
    lines = ["| label | combined | alone |", "|---|---|---|"]
    for name in VOC_CLASSES:
        value = scores["iou_percent"][name]
        if value is None and name not in alone:
            continue                          # in neither the masks nor the labels
        single = alone.get(name, {}).get("voc_iou_percent")
        lines.append(f"| {name} | {fmt(value, '.2f')} | {fmt(single, '.2f')} |")
    lines.append(f"| **mean** | **{fmt(scores['mean_iou_percent'], '.2f')}** | |")
    return "\n".join(lines)


def comparison_multiclass_markdown(doc: dict, shown, caption: str) -> str:
    """``compare --multiclass``'s multiclass.md: per label, each method's
    combined IoU % beside its class model's own.

    Parameters
    ----------
    doc : dict
        multiclass.json's content ("dataset", "eval_split", "methods",
        "classes", "multiclass" {method: ConfusionMatrix.to_dict()},
        "alone_voc_iou_percent" {method: {class: IoU %}}).
    shown : the label names of the rows, in order.
    caption : what made the table (data, settings, code version).
    """
    methods, classes = doc["methods"], doc["classes"]
    combined, alone = doc["multiclass"], doc["alone_voc_iou_percent"]
    rows = ["| label | " + " | ".join(f"{m} combined | {m} alone" for m in methods) + " |",
            "|---|" + "---|---|" * len(methods)]
    for name in shown:
        cells = []
        for m in methods:
            cells.append(fmt(combined[m]["iou_percent"][name]))
            cells.append(fmt(alone[m].get(name)) if name in classes else "")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    rows.append("| **mean** | " + " | ".join(
        f"**{fmt(combined[m]['mean_iou_percent'])}** | " for m in methods) + "|")
    return (f"# Multi-class VOC IoU % on {doc['dataset']} ({doc['eval_split']})\n\n"
            + "\n".join(rows) + "\n\n"
            "Combined: the class models of a method label each superpixel together "
            "(the class with the largest positive max-marginal difference, else "
            "background), scored over all 21 labels, void excluded; the mean is over "
            "the labels present in the masks or the labels. Alone: each class model's "
            f"own VOC IoU (as in table.md). {caption}.\n")
