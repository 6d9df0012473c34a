"""The leave-one-out tables (``lodo.py table``): table.md and table.json."""
from __future__ import annotations

import json
from pathlib import Path

from segstruct.io.files import write_json, write_text
from segstruct.learn.methods import DEFAULTS
from segstruct.learn.selection import DEFAULT_FOLD_TOL
from segstruct.report.tables import fmt

from lodolib.choice import (LIBRARY_DEFAULT, _c, _cell, _cv_setting, _records, choose, choose_all,
                            choose_auto, lodo, lodo_auto)
from lodolib.cv import cv_file
from lodolib.held_out import ensemble_lines, test_split_lines
from lodolib.sections import (C_rule_lines, c_agreement_lines, fold_count_lines, fold_tol_lines,
                              grouped_cv_lines, refused_lines, soak_reference, with_refit_guard)
from lodolib.settings import GRID, METHODS, REPO_ROOT, planned_features, setting_name


FEATURE_NOTES = {
    "as-given": "Every image was worked on as given (`--long-side none`) and cut into "
                "Felzenszwalb superpixels: the table was made before the working resolution "
                "(which leaves CamVid's images as they are and enlarges the horses' and "
                "Penn-Fudan's) and before SLIC became the default (docs/results.md).",
    "defaults": "Features at the library's defaults: SLIC superpixels (80 segments, "
                "compactness 20) at the working resolution.",
}


#: The table's opening paragraph (the features' note follows it).
INTRO = (
    "For each held-out data set, each method's default (C in superpixel units, "
    "top-down block, bag-of-words norm, loss scope) is the setting of the grid "
    "with the best mean val IoU over the *other* data sets (each data set the mean "
    "of its classes); it is scored on the held-out set beside the best setting of "
    "the grid there. Cells: mean val IoU % over the held-out set's classes (train "
    "IoU in brackets), seconds of all its fits and mean iterations at the default.",
    "With `--C auto` the default fixes the setting only: each class's C is chosen "
    "by 3-fold cross-validation over the grid on its training split, and the "
    "seconds are the cross-validation's and the refit's together. The library's "
    "default block is the cross-fitted one, fixed by design (the columns the "
    "learner sees on its training images are then those of images their "
    "detector never saw, as on new images), not chosen on this grid; the "
    "sections after it choose the block on the other data sets too.",
)
#: The top-down blocks the block section compares.
BLOCKS = ("off", "plain", "folds", "whole", "folds-cal")


def _read_cvs(path: Path, records) -> list[dict]:
    """The cross-validations of a cv*.jsonl file as the library uses them now
    (:func:`with_refit_guard`); none where there is no file."""
    if not path.exists():
        return []
    return with_refit_guard([json.loads(line) for line in path.read_text().splitlines()],
                            records)


def _section_lines(title: str, res: dict) -> list[str]:
    """One leave-one-out section: per held-out set, the default beside the grid's best."""
    lines = [f"## {title}", "", "| held out | default | val (train) | "
             "best in grid on it | val | gap | seconds / iterations |",
             "|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        d, b = r["default"], r["best"]
        lines.append(
            f"| {r['held_out']} | {setting_name(d['setting'])}, C {_c(d['C'])} | "
            f"{fmt(r['default_val'])} ({fmt(r['default_train'], '.1f')}) | "
            f"{setting_name(b['setting'])}, C {b['C']:g} | {fmt(r['best_val'])} | "
            f"{fmt(r['gap'])} | {r['seconds']:.0f} s / {r['iterations']:.0f}"
            f"{'' if r['converged'] else '*'} |")
    return lines + ["", f"Mean gap (best in grid − default): **{fmt(res['mean_gap'])}** "
                    "points.", ""]


def _per_class_lines(records, cvs, methods, chosen: dict, classes) -> tuple[list[str], list]:
    """Per class at the defaults of ``chosen``, beside the bottom-up soak; the
    table's lines and the same cells as records."""
    soak = soak_reference(REPO_ROOT / "out" / "soak" / "soak.json")
    lines = ["", "Per class at those defaults: val IoU % (train in brackets, and @ the C "
             "that cross-validation chose); the bottom-up soak at the paper's C "
             "(out/soak) beside it.", "",
             "| data set | class | " + " | ".join(f"{m} | {m} soak" for m in methods) + " |",
             "|---|---|" + "---|---|" * len(methods)]
    per_class = []
    for d, c in classes:
        cells = []
        for m in methods:
            if m not in chosen:
                cells += ["", ""]
                continue
            s, C = tuple(chosen[m]["setting"]), chosen[m]["C"]
            if C == "auto":
                C = next((r["chosen_C"] for r in cvs if (r["dataset"], r["class"], r["method"],
                                                         _cv_setting(r)) == (d, c, m, s)), None)
            v, t = _cell(records, d, c, m, s, C), _cell(records, d, c, m, s, C, "train_iou")
            at = f" @{C:g}" if chosen[m]["C"] == "auto" and C is not None else ""
            cells += [f"{fmt(v)} ({fmt(t, '.1f')}){at}", fmt(soak.get((d, c, m)))]
            per_class.append({"dataset": d, "class": c, "method": m, "val_iou": v,
                              "train_iou": t, "soak_val_iou": soak.get((d, c, m))})
        lines.append(f"| {d} | {c} | " + " | ".join(cells) + " |")
    return lines, per_class


def _block_lines(records, methods, at_fixed: dict, classes) -> list[str]:
    """Cross-fitting against plain, per class, at each method's fixed C and norm."""
    lines = ["", "## The top-down block: off, plain, cross-fitted", "",
             "At each method's fixed C (chosen on all four data sets) and bag-of-words norm; "
             "val IoU % (train in brackets).",
             ""]
    for m in methods:
        if m not in at_fixed:
            continue
        _, norm, scope = at_fixed[m]["setting"]
        C = at_fixed[m]["C"]
        lines += [f"### {m} (C {C:g}, words {norm})", "",
                  "| data set | class | " + " | ".join(BLOCKS) + " |",
                  "|---|---|" + "---|" * len(BLOCKS)]
        for d, c in classes:
            cells = []
            for td in BLOCKS:
                v = _cell(records, d, c, m, (td, norm, scope), C)
                t = _cell(records, d, c, m, (td, norm, scope), C, "train_iou")
                cells.append(fmt(None) if v is None else f"{fmt(v)} ({fmt(t, '.1f')})")
            lines.append(f"| {d} | {c} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _other_splits_lines(out: Path, records, cvs, library: dict, joint) -> list[str]:
    """The sections of the fits under ``out/test_split`` and ``out/ensemble``, where made."""
    lines = []
    test_path = out / "test_split" / "runs.jsonl"
    if test_path.exists() and library:
        tests = _records(test_path.parent)
        # the cross-validation made with the test split's fits, where there is one
        test_cv = cv_file(test_path.parent, False, DEFAULTS.tol)
        test_cvs = _read_cvs(test_cv, tests) if test_cv.exists() else cvs
        lines += test_split_lines(tests, records, test_cvs, library, joint,
                                  own_cv=test_cv.exists())
    ens_path = out / "ensemble" / "runs.jsonl"
    if ens_path.exists():
        # the library's cross-validation: folds to its fold tolerance
        ens = _records(ens_path.parent)
        lines += ensemble_lines(ens, _read_cvs(cv_file(out, False, DEFAULT_FOLD_TOL), ens), joint)
    return lines


def _cv_auto_lines(records, cvs, at_fixed: dict) -> list[str]:
    """``--C auto`` at the cross-validated settings, against the fixed default C."""
    if not cvs:
        return []
    lines = ["## --C auto at the chosen settings", "",
             "3-fold cross-validation of C over the grid on the training split; the val "
             "IoU of the model refitted at the chosen C (looked up in the grid), against "
             "the fixed default.", "",
             "| data set | class | method | chosen C | val at chosen C | val at default C "
             "| CV seconds | one fit's seconds |", "|---|---|---|---|---|---|---|---|"]
    for r in cvs:
        key = (r["dataset"], r["class"], r["method"],
               (r["top_down"], r["sift_norm"], r["scope"]))
        fixed = at_fixed[r["method"]]["C"]
        lines.append(
            f"| {r['dataset']} | {r['class']} | {r['method']} | {r['chosen_C']:g} | "
            f"{fmt(_cell(records, *key, r['chosen_C']))}"
            f" | {fmt(_cell(records, *key, fixed))} | "
            f"{r['seconds']:.0f} | "
            f"{_cell(records, *key, fixed, 'fit_seconds'):.0f} |")
    return lines


def _footer(records, cvs, datasets, methods) -> tuple[list[str], list[str]]:
    """The closing note on the data, grid and code; and the code versions."""
    versions = sorted({r["code_version"] for r in records + cvs})
    machines = sorted({r["machine"] for r in records if isinstance(r.get("machine"), str)})
    return ["", f"Data {', '.join(datasets)} (train / val splits); methods "
            f"{', '.join(methods)}; grid C {' '.join(f'{c:g}' for c in GRID)} (superpixel "
            f"units); tol {DEFAULTS.tol:g}, max_iter {DEFAULTS.max_iter}; * = a fit stopped "
            f"at max_iter; code {', '.join(versions)}; machines: "
            f"{'; '.join(machines) or 'not recorded'}. Made by `python scripts/lodo.py`."], \
        versions


def table(args) -> None:
    out = Path(args.out)
    records = _records(out)
    methods = [m for m in METHODS if any(r["method"] == m for r in records)]
    datasets = sorted({r["dataset"] for r in records})
    result = lodo(records, methods)
    chosen = choose_all(records)
    # the command line's default: one feature setting and one C for the paper's methods
    joint = tuple(m for m in METHODS[:3] if m in methods)
    joint_result = lodo(records, joint, joint) if joint else {}
    joint_pick = choose(records, joint, datasets) if joint else None
    if joint_pick is not None:
        chosen.update({m: {"setting": joint_pick[0], "C": joint_pick[1]} for m in joint})
    cvs = _read_cvs(out / "cv.jsonl", records)
    lines = ["# Defaults chosen on held-out data sets (leave one data set out)", ""]
    lines += [*INTRO, FEATURE_NOTES[planned_features(out)], ""]
    auto = lodo_auto(records, cvs, joint) if joint and cvs else {}
    auto_pick = choose_auto(records, cvs, joint) if joint and cvs else None
    # the library's default: the cross-fitted block, fixed by design (its
    # training columns are those of images its detector never saw), not by
    # this grid; C by cross-validation
    shipped = LIBRARY_DEFAULT
    library = lodo_auto(records, cvs, joint, shipped) if joint and cvs else {}
    sections = [(f"{m}: --C auto and {setting_name(shipped)} (the library's default)",
                 library[m]) for m in joint if library.get(m, {}).get("rows")]
    sections += [(f"{m}: --C auto, the setting chosen on the others for {', '.join(joint)}",
                  auto[m]) for m in joint if auto.get(m, {}).get("rows")]
    sections += [(f"{m}: one fixed C and setting for {', '.join(joint)}", joint_result[m])
                 for m in joint]
    sections += [(f"{m}: a fixed C and setting of its own", result[m]) for m in methods]
    for title, res in sections:
        lines += _section_lines(title, res)
    # the defaults chosen on all data sets, per class
    fixed_C: dict = {}
    if library:
        fixed_C = {m: chosen[m]["C"] for m in joint}
        chosen.update({m: {"setting": shipped, "C": "auto"} for m in joint})
    if auto_pick is not None:
        lines += [f"With `--C auto`, the setting chosen on all four data sets is "
                  f"{setting_name(auto_pick)}.", ""]
    lines += ["## The library's defaults", "",
              f"One setting for {', '.join(joint)} (the command line's default), "
              "and the fixed C and setting chosen on all four data sets for each other "
              "method:", ""]
    lines += [f"- {m}: {setting_name(chosen[m]['setting'])}, C {_c(chosen[m]['C'])}"
              for m in methods if m in chosen]
    classes = sorted({(r["dataset"], r["class"]) for r in records})
    class_lines, per_class = _per_class_lines(records, cvs, methods, chosen, classes)
    lines += class_lines
    at_fixed = {m: {"setting": chosen[m]["setting"],
                    "C": fixed_C[m] if chosen[m]["C"] == "auto" else chosen[m]["C"]}
                for m in chosen}
    lines += _block_lines(records, methods, at_fixed, classes)
    lines += fold_count_lines(records, at_fixed)
    if library:
        lines += c_agreement_lines(records, cvs, shipped, joint)
    if (out / "cv_grouped.jsonl").exists():
        lines += grouped_cv_lines(records, cvs, _read_cvs(out / "cv_grouped.jsonl", records))
    lines += refused_lines(records, cvs)
    lines += fold_tol_lines(out, records, cvs, joint)
    if cvs and joint:
        lines += C_rule_lines(records, cvs, joint)
    lines += _other_splits_lines(out, records, cvs, library, joint)
    lines += _cv_auto_lines(records, cvs, at_fixed)
    footer, versions = _footer(records, cvs, datasets, methods)
    lines += footer
    write_text(out / "table.md", "\n".join(lines) + "\n")
    write_json(out / "table.json", {"lodo": result, "lodo_joint": joint_result,
                                    "lodo_auto": auto, "lodo_library": library,
                                    "library_default": list(shipped),
                                    "joint_methods": list(joint), "chosen": chosen,
                                    "per_class": per_class,
                                    "grid": list(GRID), "code_version": versions})
    print("\n".join(lines))
