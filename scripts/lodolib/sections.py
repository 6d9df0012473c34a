"""The table's sections on C: how the choices of C agree, its rules, and the fold count."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from segstruct.learn.methods import DEFAULTS
from segstruct.learn.selection import next_C_after_refit
from segstruct.report.tables import fmt

from lodolib.choice import (LIBRARY_DEFAULT, _cell, _cv_setting, _setting, choose, dataset_scores,
                            lodo_auto)
from lodolib.settings import GRID, setting_name


def c_agreement_lines(records, cvs, setting, methods, min_iou: float = 5.0) -> list[str]:
    """One meaning of C: per class (where some method's val IoU reaches
    ``min_iou``) and method, the C of the grid best on val and the C that
    cross-validation on the training split chose, at ``setting``; and the
    ratio of the largest to the smallest over the methods."""
    lines = ["## One meaning of C", "",
             f"At {setting_name(setting)} (superpixel units), per class with a val IoU of "
             f"at least {min_iou:g} %: the C of the grid best on val, and the C chosen by "
             "3-fold cross-validation on the training split (in brackets the C values "
             "whose pooled held-out IoU is within 1 point of the best), per method; the "
             "last columns: the largest over the smallest C across the methods.", "",
             "| data set | class | " + " | ".join(methods)
             + " | ratio, best on val | ratio, chosen by CV |",
             "|---|---|" + "---|" * len(methods) + "---|---|"]
    classes = sorted({(r["dataset"], r["class"]) for r in records})
    for d, c in classes:
        best_val, chosen, cells = [], [], []
        for m in methods:
            # the grid's C only: a few extra fits (C 10, proposed on two data
            # sets) would make the methods' best C incomparable
            fits = [r for r in records if (r["dataset"], r["class"], r["method"])
                    == (d, c, m) and _setting(r) == tuple(setting) and r["C"] in GRID]
            cv_run = next((r for r in cvs if (r["dataset"], r["class"], r["method"])
                           == (d, c, m) and _cv_setting(r) == tuple(setting)), None)
            if not fits or cv_run is None:
                break
            top = max(fits, key=lambda r: (r["val_iou"], -r["C"]))
            curve = cv_run["curve"]
            scores = curve["pooled_iou_percent"]
            near = [g for g, v in zip(curve["grid"], scores) if v is not None
                    and v >= max(x for x in scores if x is not None) - 1.0]
            best_val.append((top["C"], top["val_iou"]))
            chosen.append(cv_run["chosen_C"])
            cells.append(f"{top['C']:g} / {cv_run['chosen_C']:g} "
                         f"({' '.join(f'{g:g}' for g in near)})")
        else:
            if max(v for _, v in best_val) < min_iou:
                continue
            ratio_val = max(C for C, _ in best_val) / min(C for C, _ in best_val)
            ratio_cv = max(chosen) / min(chosen)
            lines.append(f"| {d} | {c} | " + " | ".join(cells)
                         + f" | {ratio_val:.3g} | {ratio_cv:.3g} |")
    return lines + [""]


def with_refit_guard(cvs, records) -> list[dict]:
    """The cross-validations as the library uses them now: a refit that
    scores IoU 0 on its own training split gives way to the next C by pooled
    held-out IoU (:func:`segstruct.learn.selection.next_C_after_refit`),
    replayed here with the grid's fit at a C standing in for the refit at it
    (the same data, setting and C; only the warm start differs). Each
    record's ``chosen_C`` and curve are updated, with the refused C in
    ``curve["refused"]``, and its ``seconds`` include the refused refits';
    runs recorded before the guard existed thus read as they would run
    today."""
    fits = {(r["dataset"], r["class"], r["method"], _setting(r), r["C"]): r for r in records}
    out = []
    for run in cvs:
        curve = {**run["curve"], "chosen_C": run["chosen_C"]}
        curve.pop("refused", None)
        key = (run["dataset"], run["class"], run["method"], _cv_setting(run))
        seconds = run["seconds"]
        while True:
            fit = fits.get((*key, curve["chosen_C"]))
            if (fit is None or not fit["converged"]
                    or next_C_after_refit(curve, fit["train_iou"]) is None):
                break
            seconds += fit["fit_seconds"]          # the refused refit's time is spent too
        out.append({**run, "chosen_C": curve["chosen_C"], "curve": curve, "seconds": seconds})
    return out


def refused_lines(records, cvs) -> list[str]:
    """The refits the guard refused: where, at which C, and what it took instead."""
    rows = []
    for run in cvs:
        key = (run["dataset"], run["class"], run["method"], _cv_setting(run))
        for refused in run["curve"].get("refused", []):
            C = refused["C"]
            rows.append(f"| {key[0]} | {key[1]} | {key[2]} | {setting_name(key[3])} | {C:g} | "
                        f"{fmt(_cell(records, *key, C))} "
                        f"({fmt(_cell(records, *key, C, 'train_iou'), '.1f')}) | "
                        f"{run['chosen_C']:g} | {fmt(_cell(records, *key, run['chosen_C']))} "
                        f"({fmt(_cell(records, *key, run['chosen_C'], 'train_iou'), '.1f')}) |")
    if not rows:
        return []
    return ["## Refits refused", "",
            "`--C auto` refuses a refit that scores IoU 0 on its own training split and "
            "refits at the next C by pooled held-out IoU (with a pooled IoU above 0); "
            "replayed here on the grid's fits. Val IoU % (train in brackets):", "",
            "| data set | class | method | setting | refused C | val (train) | refit at C "
            "| val (train) |", "|---|---|---|---|---|---|---|---|", *rows, ""]


def _cv_key(r) -> tuple:
    """(data set, class, method, setting) of a cross-validation record."""
    return (r["dataset"], r["class"], r["method"], _cv_setting(r))


def _same_pair(cvs, r):
    """The record of ``cvs`` of ``r``'s pair and setting, or None."""
    return next((t for t in cvs if _cv_key(t) == _cv_key(r)), None)


def fold_tol_lines(out: Path, records, cvs, methods) -> list[str]:
    """The folds' tolerance (``cv --cv-tol``): each cv_tol-TOL.jsonl against
    cv.jsonl (folds at the library's tol at every C): the chosen C, the val
    IoU of the refit there, the folds' iterations and seconds, and the mean
    gaps of the library's default with either."""
    lines: list[str] = []
    for path in sorted(out.glob("cv_tol-*.jsonl")):
        loose = with_refit_guard([json.loads(x) for x in path.read_text().splitlines()],
                                 records)
        tol = loose[0]["fold_tol"] if loose else None
        lines += [f"## The folds' tolerance: {tol:g} x C against {DEFAULTS.tol:g}", "",
                  f"3-fold cross-validation of C (`--C auto`) with the folds' fits at "
                  f"{DEFAULTS.tol:g} for every C (cv.jsonl) and at {tol:g} x C between "
                  f"{DEFAULTS.tol:g} and {tol:g} ({path.name}): the chosen C (after the refit "
                  "guard), val IoU % of the model refitted at it (train in brackets), and the "
                  "folds' iterations and seconds (summed over the grid).", "",
                  f"| data set | class | method | C at {DEFAULTS.tol:g} | val (train) | "
                  f"iterations | seconds | C at {tol:g} x C | val (train) | iterations | "
                  "seconds |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        iters = {m: [0, 0] for m in methods}
        for r in loose:
            key, tight = _cv_key(r), _same_pair(cvs, r)
            if tight is None:
                continue
            cells = []
            for k, run in enumerate((tight, r)):
                v = _cell(records, *key, run["chosen_C"])
                t = _cell(records, *key, run["chosen_C"], "train_iou")
                n = int(np.sum(run["curve"]["n_iter"]))
                if key[2] in iters:
                    iters[key[2]][k] += n
                cells += [f"{run['chosen_C']:g}", f"{fmt(v)} ({fmt(t, '.1f')})", str(n),
                          f"{float(np.sum(run['curve']['fit_seconds'])):.0f}"]
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
        tight_gaps = lodo_auto(records, cvs, methods, LIBRARY_DEFAULT)
        loose_gaps = lodo_auto(records, loose, methods, LIBRARY_DEFAULT)
        lines.append("")
        for m in methods:
            a, b = iters[m]
            if a:
                lines.append(f"- {m}: the folds' iterations {b} against {a} ({b / a:.2f}); "
                             f"mean gap of the library's default "
                             f"{fmt(tight_gaps[m]['mean_gap'])} at {DEFAULTS.tol:g}, "
                             f"{fmt(loose_gaps[m]['mean_gap'])} at {tol:g} x C")
        lines.append("")
    return lines


def grouped_cv_lines(records, cvs, grouped) -> list[str]:
    """Cross-validation with folds by image against folds that keep each id
    prefix (a CamVid video sequence) together: the chosen C and the val IoU
    of the model refitted at it."""
    if not grouped:
        return []
    lines = ["## Folds that keep video sequences together", "",
             "3-fold cross-validation of C with folds dealt by image (`--C auto`) and "
             "with folds of whole id prefixes (a CamVid id names its video sequence; "
             "`cv --fold-groups id-prefix`): the chosen C, and val IoU % (train in "
             "brackets) of the model refitted at it.", "",
             "| data set | class | method | block | folds by image: C | val (train) "
             "| folds by sequence: C | val (train) |", "|---|---|---|---|---|---|---|---|"]
    for g in grouped:
        key, plain = _cv_key(g), _same_pair(cvs, g)
        if plain is None:
            continue
        cells = []
        for run in (plain, g):
            v = _cell(records, *key, run["chosen_C"])
            t = _cell(records, *key, run["chosen_C"], "train_iou")
            cells += [f"{run['chosen_C']:g}", f"{fmt(v)} ({fmt(t, '.1f')})"]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3][0]} | " + " | ".join(cells)
                     + " |")
    return lines + [""]


#: Rules that pick C from a cross-validation curve: the best pooled IoU
#: (``--C auto``), the smallest C within one standard error of the folds at
#: the best, or within 2 % or 5 % of the best pooled IoU.
C_RULES = ("best", "one standard error", "within 2 %", "within 5 %")


def rule_C(curve: dict, rule: str) -> float:
    """The C of the grid that ``rule`` (one of C_RULES) picks from a curve."""
    grid, pooled = curve["grid"], np.asarray(curve["pooled_iou_percent"])
    best = int(np.argmax(pooled))
    if rule == "best":
        # --C auto's own choice (after the refit guard, :func:`with_refit_guard`)
        return curve.get("chosen_C", grid[best])
    if rule == "one standard error":
        folds = np.asarray(curve["fold_iou_percent"][best])
        floor = pooled[best] - folds.std(ddof=1) / np.sqrt(len(folds))
    else:
        floor = pooled[best] * (1 - float(rule.split()[1]) / 100)
    return grid[min(i for i in range(len(grid)) if pooled[i] >= floor)]


def C_rule_lines(records, cvs, methods, setting=LIBRARY_DEFAULT) -> list[str]:
    """Rules that prefer a smaller C than the best of the curve, scored as
    the defaults are: per method and data set, val IoU at each rule's C
    (mean over the classes); then, leaving one data set out, the rule best
    on the other three, and its gap to the best of the grid on the held-out
    set."""
    datasets = sorted({r["dataset"] for r in records})
    val: dict = {}                       # (method, rule, data set) -> [val IoU]
    for cv_run in cvs:
        if _cv_setting(cv_run) != tuple(setting) or cv_run["method"] not in methods:
            continue
        for rule in C_RULES:
            v = _cell(records, cv_run["dataset"], cv_run["class"], cv_run["method"],
                      tuple(setting), rule_C(cv_run["curve"], rule))
            if v is not None:
                val.setdefault((cv_run["method"], rule, cv_run["dataset"]), []).append(v)
    if not val:
        return []
    everywhere = set.intersection(*(set(dataset_scores(records, m, datasets)) for m in methods))
    lines = ["## Rules that pick C from the cross-validation curve", "",
             f"At {setting_name(setting)}: mean val IoU % per data set at the C each rule "
             "picks from the same 3-fold curves, and the mean gap to the best of the grid "
             "on each data set. Last row: for each held-out data set, the rule best on the "
             "other three (mean over them), scored on it.", "",
             "| method | rule | " + " | ".join(datasets) + " | mean gap |",
             "|---|---|" + "---|" * (len(datasets) + 1)]
    for m in methods:
        best_val = {}
        for d in datasets:
            pick = choose(records, m, [d], everywhere)
            best_val[d] = dataset_scores(records, m, [d])[pick][d] if pick else np.nan
        mean = {(rule, d): float(np.mean(val[(m, rule, d)])) for rule in C_RULES
                for d in datasets if (m, rule, d) in val}
        for rule in C_RULES:
            if all((rule, d) in mean for d in datasets):
                gap = np.mean([best_val[d] - mean[(rule, d)] for d in datasets])
                lines.append(f"| {m} | {rule} | " + " | ".join(
                    fmt(mean[(rule, d)]) for d in datasets) + f" | {fmt(gap)} |")
        chosen, gaps = [], []
        for held in datasets:
            others = [d for d in datasets if d != held]
            rules = [r for r in C_RULES if all((r, d) in mean for d in datasets)]
            if not rules:
                continue
            rule = max(rules, key=lambda r: np.mean([mean[(r, d)] for d in others]))
            chosen.append(rule)
            gaps.append(best_val[held] - mean[(rule, held)])
        if gaps:
            lines.append(f"| {m} | chosen on the others ({', '.join(chosen)}) | " + " | ".join(
                fmt(best_val[d] - g) for d, g in zip(datasets, gaps)) +
                f" | {fmt(float(np.mean(gaps)))} |")
    return lines + [""]


def soak_reference(path: Path) -> dict:
    """(data set, class, method) -> val IoU % of the bottom-up soak at the paper's C."""
    if not path.exists():
        return {}
    doc = json.loads(path.read_text())
    out = {}
    for r in doc.get("runs", doc.get("results", [])):
        if r.get("val_iou_percent") is not None:
            out[(r["dataset"], r["class"], r["method"])] = r["val_iou_percent"]
    return out


def fold_count_lines(records, chosen) -> list[str]:
    """The fold count K of the cross-fitted block: 2, 3 and 5 folds on the data
    sets where all three were run, per method at its chosen C and norm, and
    best in grid."""
    ks = {"folds2": 2, "folds": 3, "folds5": 5}
    sets = sorted({r["dataset"] for r in records if r["top_down"] == "folds2"})
    if not sets:
        return []
    lines = ["## The fold count of the cross-fitted block", "",
             "Val IoU % (train in brackets) at each method's chosen C and words norm, and "
             "the best over the grid of C, for K = 2, 3, 5 folds.", "",
             "| data set | method | " + " | ".join(f"K {k}" for k in ks.values())
             + " | " + " | ".join(f"K {k} best in grid" for k in ks.values()) + " |",
             "|---|---|" + "---|" * (2 * len(ks))]
    for d in sets:
        c = next(r["class"] for r in records if r["dataset"] == d and r["top_down"] == "folds2")
        for m in chosen:
            _, norm, scope = chosen[m]["setting"]
            C = chosen[m]["C"]
            at, best = [], []
            for td in ks:
                v = _cell(records, d, c, m, (td, norm, scope), C)
                t = _cell(records, d, c, m, (td, norm, scope), C, "train_iou")
                at.append(fmt(None) if v is None else f"{fmt(v)} ({fmt(t, '.1f')})")
                vals = [r["val_iou"] for r in records if (r["dataset"], r["class"], r["method"],
                        _setting(r)) == (d, c, m, (td, norm, scope))]
                best.append(fmt(max(vals) if vals else None))
            if any(a != fmt(None) for a in at):
                lines.append(f"| {d} | {m} | " + " | ".join(at + best) + " |")
    return lines + [""]
