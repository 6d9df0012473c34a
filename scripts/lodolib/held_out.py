"""The table's sections that score a held-out data set otherwise: on its test
split, and by the ensemble's masks."""
from __future__ import annotations

import numpy as np

from segstruct.report.tables import fmt

from lodolib.choice import LIBRARY_DEFAULT, _cell, _cv_setting, _setting
from lodolib.settings import GRID, setting_name


def _class_mean(records, d, m, setting, C_of: dict, what: str) -> float | None:
    """The mean over the classes of ``C_of`` (class -> C) of their fits' ``what``."""
    vals = [_cell(records, d, c, m, setting, C, what) for c, C in C_of.items()]
    return None if None in vals else float(np.mean(vals))


def _best(records, d, m, settings, classes, what: str) -> tuple:
    """(mean ``what`` over ``classes``, setting, C) of the best (setting, C)
    of ``m``'s fits on data set ``d``, one (setting, C) for all the classes;
    of equal means, the smallest C."""
    scored = [(v, -C, s) for s in settings for C in GRID
              if (v := _class_mean(records, d, m, s, dict.fromkeys(classes, C), what))
              is not None]
    v, C, s = max(scored)
    return v, s, -C


def _held_out_defaults(records, cvs, methods, setting, what: str):
    """Yield (method, data set, its classes, {class: the C cross-validation
    chose}) for each method and data set of ``records`` whose default
    (``setting`` at those C) has ``what`` for every class."""
    for m in methods:
        for d in sorted({r["dataset"] for r in records}):
            classes = sorted({r["class"] for r in records if r["dataset"] == d})
            chosen = {r["class"]: r["chosen_C"] for r in cvs
                      if (r["dataset"], r["method"], _cv_setting(r)) == (d, m, setting)}
            if not set(classes) - set(chosen) and _class_mean(
                    records, d, m, setting, chosen, what) is not None:
                yield m, d, classes, chosen


def ensemble_lines(ens, cvs, methods, setting=LIBRARY_DEFAULT) -> list[str]:
    """The fits of ``run --ensemble K`` (``ens``), each scored by its graph
    cut and as predict labels (the ensemble): the library's default
    (``setting`` at the C that ``cvs`` chose) beside the best (setting, C) of
    these fits, both ways, and each method's mean gap over the data sets
    they cover."""
    ens = [r for r in ens if "val_iou_ensemble" in r]
    if not ens or not cvs:
        return []
    runs = ens[0]["ensemble"]
    datasets = sorted({r["dataset"] for r in ens})
    settings = sorted({_setting(r) for r in ens})
    lines = [f"## Scored as predict labels: the ensemble of {runs}", "",
             f"The fits of {', '.join(setting_name(x) for x in settings)} on "
             f"{', '.join(datasets)} made again, each scored on val by its graph cut (as "
             f"training and the tables above score it) and by the masks `segstruct predict` "
             f"makes by default (an ensemble of {runs} superpixelisations, on the image's "
             f"pixels). Mean val IoU % over the classes: the library's default "
             f"({setting_name(setting)}, C auto: the C that 3-fold cross-validation on the "
             "training split chose, in brackets) beside the best (setting, C) of these fits "
             "by each score; the gap is best minus default.", "",
             "| method | held out | default: graph cut (train) | default: ensemble | "
             "best by graph cut | gap | best by ensemble | gap |",
             "|---|---|---|---|---|---|---|---|"]
    gaps: dict = {}
    for m, d, classes, chosen in _held_out_defaults(ens, cvs, methods, setting,
                                                    "val_iou_ensemble"):
        at = {w: _class_mean(ens, d, m, setting, chosen, w)
              for w in ("val_iou", "val_iou_ensemble", "train_iou")}
        best = {w: _best(ens, d, m, settings, classes, w)
                for w in ("val_iou", "val_iou_ensemble")}
        gaps[m, d] = {w: best[w][0] - at[w] for w in best}
        lines.append(
            f"| {m} | {d} | {fmt(at['val_iou'])} ({fmt(at['train_iou'], '.1f')}) | "
            f"{fmt(at['val_iou_ensemble'])} "
            f"({', '.join(f'{c} {chosen[c]:g}' for c in classes)}) | "
            + " | ".join(f"{setting_name(best[w][1])}, C {best[w][2]:g}: "
                         f"{fmt(best[w][0])} | {fmt(gaps[m, d][w])}"
                         for w in ("val_iou", "val_iou_ensemble")) + " |")
    lines.append("")
    for m in methods:
        mine = [g for (n, _), g in gaps.items() if n == m]
        if mine:
            lines.append(f"- {m}: mean gap over {len(mine)} held-out set(s) "
                         f"{fmt(float(np.mean([g['val_iou_ensemble'] for g in mine])))} "
                         "scored as predict labels, "
                         f"{fmt(float(np.mean([g['val_iou'] for g in mine])))} by graph cut")
    made = sorted({f"code {r['code_version']}, {r['machine']}" for r in ens})
    return lines + ["", f"These fits: {'; '.join(made)}.", ""]


def test_split_lines(tests, records, cvs, library, methods,
                     setting=LIBRARY_DEFAULT, own_cv: bool = False) -> list[str]:
    """The held-out sets whose fits were also scored on a test split
    (``run --test-split``): the library's default (``setting`` at the C that
    cross-validation on the training split chose) and the best (setting, C)
    of those fits, on val and on the test split, and each method's mean gap
    over all held-out sets with these scored on their test split. ``cvs``:
    the cross-validations of C made with these fits (``own_cv``), or the
    grid's."""
    if not tests or not cvs:
        return []
    split = tests[0]["test_split"]
    datasets = sorted({r["dataset"] for r in tests})
    settings = sorted({_setting(r) for r in tests})
    moved = [abs(r["val_iou"] - v) for r in tests
             if (v := _cell(records, r["dataset"], r["class"], r["method"], _setting(r),
                            r["C"])) is not None]
    repeat = (f"against the grid's fits, their val IoU moved by {np.median(moved):.2g} points "
              f"(median), by at most 1 in {sum(x <= 1 for x in moved)} of {len(moved)}, "
              f"by {max(moved):.2g} at most" if moved else "not in the grid")
    lines = [f"## The held-out {', '.join(datasets)} scored on its {split} split", "",
             f"The fits of {', '.join(setting_name(x) for x in settings)} made again and scored "
             f"on the {split} split as well as on val ({repeat}). Mean IoU "
             f"% over the classes: the library's default ({setting_name(setting)}, C auto: "
             "the C that 3-fold cross-validation on the training split chose, "
             f"{'made again with these fits' if own_cv else 'as above'}"
             "; the chosen C in brackets) beside the best (setting, C) "
             f"of these fits, on val and on {split}; the gap is best minus default.", "",
             f"| method | held out | default: val (train) | default: {split} | best on val "
             f"| gap on val | best on {split} | gap on {split} |",
             "|---|---|---|---|---|---|---|---|"]
    gaps: dict = {}
    for m, d, classes, chosen in _held_out_defaults(tests, cvs, methods, setting, "val_iou"):
        at = {w: _class_mean(tests, d, m, setting, chosen, w)
              for w in ("val_iou", "test_iou", "train_iou")}
        best = {w: _best(tests, d, m, settings, classes, w) for w in ("val_iou", "test_iou")}
        gaps[m, d] = best["test_iou"][0] - at["test_iou"]
        lines.append(
            f"| {m} | {d} | {fmt(at['val_iou'])} ({fmt(at['train_iou'], '.1f')}) | "
            f"{fmt(at['test_iou'])} ({', '.join(f'{c} {chosen[c]:g}' for c in classes)})"
            f" | {setting_name(best['val_iou'][1])}, C "
            f"{best['val_iou'][2]:g}: {fmt(best['val_iou'][0])} | "
            f"{fmt(best['val_iou'][0] - at['val_iou'])} | "
            f"{setting_name(best['test_iou'][1])}, C {best['test_iou'][2]:g}: "
            f"{fmt(best['test_iou'][0])} | {fmt(gaps[m, d])} |")
    lines.append("")
    for m in methods:
        rows = library.get(m, {}).get("rows", [])
        if not rows or not any((m, r["held_out"]) in gaps for r in rows):
            continue
        mixed = [gaps.get((m, r["held_out"]), r["gap"]) for r in rows]
        lines.append(f"- {m}: mean gap of the library's default {fmt(float(np.mean(mixed)))} "
                     f"with {', '.join(datasets)} scored on {split} (the others on val), "
                     f"{fmt(library[m]['mean_gap'])} on val")
    made = sorted({f"code {r['code_version']}, {r['machine']}" for r in tests})
    return lines + ["", f"These fits: {'; '.join(made)}.", ""]
