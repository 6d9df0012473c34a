"""Defaults chosen on the other data sets, scored on the held-out one."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lodolib.settings import FOLD_SETTINGS, METHODS, SETTINGS


def _records(out: Path) -> list[dict]:
    lines = (out / "runs.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _setting(r) -> tuple:
    return (r["top_down"], r["sift_norm"], r["scope"])


def dataset_scores(records, method, datasets) -> dict:
    """(setting, C) -> {data set: mean val IoU over its classes}, for the
    settings evaluated on every class of every given data set."""
    by = {}
    for r in records:
        if r["method"] == method and r["dataset"] in datasets:
            by.setdefault((_setting(r), r["C"]), {}).setdefault(r["dataset"], {})[
                r["class"]] = r["val_iou"]
    classes = {}
    for r in records:
        if r["dataset"] in datasets:
            classes.setdefault(r["dataset"], set()).add(r["class"])
    out = {}
    for key, per_set in by.items():
        if set(per_set) == set(datasets) and all(set(per_set[d]) == classes[d] for d in datasets):
            out[key] = {d: float(np.mean(list(per_set[d].values()))) for d in datasets}
    return out


#: The library's default setting (FeatureConfig's and the command line's).
LIBRARY_DEFAULT = ("folds", "l1", "dataset")
#: Top-down settings that are library settings (FeatureConfig): the calibrated
#: block is measured only, so it is never chosen as a default.
LIBRARY_TOP_DOWN = ("off", "plain", "folds", "whole", "folds2", "folds5")


def choose(records, method, datasets, among=None) -> tuple | None:
    """The (setting, C) of the best mean over ``datasets`` of their mean val IoU,
    among the library's settings (and those of ``among``, if given); ties to
    the smaller C, then the earlier setting of SETTINGS.

    ``method`` may be a tuple of methods: the one (setting, C) of the best
    mean over them (the command line's default is one feature setting and
    one C for every method it compares)."""
    methods = method if isinstance(method, tuple) else (method,)
    per = [dataset_scores(records, m, datasets) for m in methods]
    common = set.intersection(*(set(p) for p in per))
    scores = {k: {(m, d): v for m, p in zip(methods, per) for d, v in p[k].items()}
              for k in common
              if k[0][0] in LIBRARY_TOP_DOWN and (among is None or k in among)}
    if not scores:
        return None
    order = {s: k for k, s in enumerate(SETTINGS + FOLD_SETTINGS)}
    return max(scores, key=lambda k: (round(np.mean(list(scores[k].values())), 6),
                                      -k[1], -order.get(k[0], len(order))))


def choose_all(records) -> dict:
    datasets = sorted({r["dataset"] for r in records})
    out = {}
    for m in METHODS:
        pick = choose(records, m, datasets)
        if pick is not None:
            out[m] = {"setting": pick[0], "C": pick[1]}
    return out


def _cell(records, d, c, m, setting, C, what="val_iou"):
    for r in records:
        if (r["dataset"], r["class"], r["method"], _setting(r), r["C"]) == (d, c, m, setting, C):
            return r[what]
    return None


def lodo(records, methods, joint=None) -> dict:
    """Per method, the default chosen on the other data sets scored on each
    held-out one, beside the best in grid there; with ``joint`` (a tuple of
    methods) the default is the one setting and C chosen for all of them."""
    datasets = sorted({r["dataset"] for r in records})
    table = {}
    for m in methods:
        rows = []
        # the settings run on every data set: a default must be scorable on each
        everywhere = set.intersection(*(set(dataset_scores(records, j, datasets))
                                        for j in (joint or (m,)) + (m,)))
        for held in datasets:
            others = [d for d in datasets if d != held]
            pick = choose(records, joint or m, others, everywhere)
            best = choose(records, m, [held], everywhere)
            if pick is None or best is None:
                continue
            here = dataset_scores(records, m, [held])
            at = [r for r in records if r["method"] == m and r["dataset"] == held
                  and (_setting(r), r["C"]) == pick]
            rows.append({
                "held_out": held, "default": {"setting": list(pick[0]), "C": pick[1]},
                "default_val": here[pick][held], "best": {"setting": list(best[0]),
                                                          "C": best[1]},
                "best_val": here[best][held], "gap": here[best][held] - here[pick][held],
                "default_train": float(np.mean([r["train_iou"] for r in at])),
                "seconds": float(np.sum([r["fit_seconds"] for r in at])),
                "iterations": float(np.mean([r["n_iter"] for r in at])),
                "converged": all(r["converged"] for r in at)})
        table[m] = {"rows": rows,
                    "mean_gap": float(np.mean([r["gap"] for r in rows])) if rows else None}
    return table


def _c(C) -> str:
    return C if isinstance(C, str) else f"{C:g}"


def _cv_setting(r) -> tuple:
    return (r["top_down"], r["sift_norm"], r["scope"])


def auto_cells(records, cvs, method, datasets) -> dict:
    """setting -> {data set: {class: record of the fit at the C that 3-fold
    cross-validation on the training split chose}}: ``--C auto``, for the
    settings cross-validated on every class of the given data sets."""
    classes = {}
    for r in records:
        if r["dataset"] in datasets:
            classes.setdefault(r["dataset"], set()).add(r["class"])
    fits = {(r["dataset"], r["class"], r["method"], _setting(r), r["C"]): r for r in records}
    out: dict = {}
    for cv_run in cvs:
        d, c = cv_run["dataset"], cv_run["class"]
        if cv_run["method"] != method or d not in datasets:
            continue
        fit = fits.get((d, c, method, _cv_setting(cv_run), cv_run["chosen_C"]))
        if fit is not None:
            out.setdefault(_cv_setting(cv_run), {}).setdefault(d, {})[c] = {
                **fit, "cv_seconds": cv_run["seconds"]}
    return {s: per for s, per in out.items()
            if set(per) == set(datasets) and all(set(per[d]) == classes[d] for d in datasets)}


def _auto_mean(cells, what="val_iou") -> float:
    return float(np.mean([r[what] for r in cells.values()]))


def lodo_auto(records, cvs, methods, setting=None) -> dict:
    """As :func:`lodo`, with ``--C auto``: for each held-out data set, the one
    setting (top-down block, words norm, scope) of the best mean over the
    other data sets and the methods of their val IoU at the cross-validated
    C (or the given ``setting``, the same for every held-out set), scored on
    the held-out set at its cross-validated C beside the best (setting, C)
    of the grid there. Seconds: the cross-validation and the refit together."""
    datasets = sorted({r["dataset"] for r in records})
    per = {m: auto_cells(records, cvs, m, datasets) for m in methods}
    settings = set.intersection(*(set(p) for p in per.values())) if per else set()
    table: dict = {m: {"rows": []} for m in methods}
    if not settings:
        return {m: {"rows": [], "mean_gap": None} for m in methods}
    everywhere = set.intersection(*(set(dataset_scores(records, m, datasets)) for m in methods))
    for held in datasets:
        others = [d for d in datasets if d != held]
        pick = tuple(setting) if setting is not None else max(sorted(settings), key=lambda s: (
            np.mean([_auto_mean(per[m][s][d]) for m in methods for d in others])))
        for m in methods:
            best = choose(records, m, [held], everywhere)
            if best is None:
                continue
            here = dataset_scores(records, m, [held])
            cells = per[m][pick][held]
            val = _auto_mean(cells)
            table[m]["rows"].append({
                "held_out": held, "default": {"setting": list(pick), "C": "auto"},
                "chosen_C": {c: r["C"] for c, r in cells.items()},
                "default_val": val, "default_train": _auto_mean(cells, "train_iou"),
                "best": {"setting": list(best[0]), "C": best[1]},
                "best_val": here[best][held], "gap": here[best][held] - val,
                "seconds": float(sum(r["cv_seconds"] + r["fit_seconds"]
                                     for r in cells.values())),
                "fit_seconds": float(sum(r["fit_seconds"] for r in cells.values())),
                "iterations": _auto_mean(cells, "n_iter"),
                "converged": all(r["converged"] for r in cells.values())})
    for m in methods:
        rows = table[m]["rows"]
        table[m]["mean_gap"] = float(np.mean([r["gap"] for r in rows])) if rows else None
    return table


def choose_auto(records, cvs, methods) -> tuple | None:
    """The setting of :func:`lodo_auto`'s rule on all the data sets."""
    datasets = sorted({r["dataset"] for r in records})
    per = {m: auto_cells(records, cvs, m, datasets) for m in methods}
    settings = set.intersection(*(set(p) for p in per.values())) if per else set()
    if not settings:
        return None
    return max(sorted(settings), key=lambda s: np.mean(
        [_auto_mean(per[m][s][d]) for m in methods for d in datasets]))
