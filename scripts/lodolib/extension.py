"""The grid of C that extends itself (``lodo.py cv --C-extend K``, ``lodo.py c-grid``).

``cv --C-extend K`` cross-validates with the library's extension past the
grid's ends (``segstruct.learn.selection.extension``) at a generous bound
K, and refits on the training split at each C it added and at the C the
grid alone chose (:func:`extended_fits`): their val (and test) IoU and
per-image counts. A curve extended with bound K holds, as its first k
steps past an end, exactly the fits a bound k < K makes (the steps are
taken one at a time, each warm-started from the one before), so
:func:`truncated` replays any smaller bound from it, and the bound is
chosen leaving one data set out (:func:`c_grid_table`): the steps the
curves of three data sets needed, judged on the fourth.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from segstruct.evaluate.bootstrap import resampled_iou
from segstruct.io.provenance import code_version, machine
from segstruct.learn.methods import TrainingSettings
from segstruct.learn.selection import choose_C, edge_warning, next_C_after_refit
from segstruct.learn.selection.extension import asked_grid, next_extension_C

from lodolib.examples import _examples
from lodolib.settings import GRID, METHODS

#: The data sets judged on another split than val (a folder of their own
#: under OUT, made by ``run --test-split``): CamVid's val split is one clip
#: of a training sequence.
HELD_SPLIT = {"camvid_voc": ("test_split", "test")}


def extended_fits(root: Path, class_name: str, method: str, setting, curve: dict,
                  features: str, test_split: str | None = None) -> list[dict]:
    """Refits on the whole training split at the grid's own choice and at
    every C the extension added, each from the start as ``--C auto``'s refit
    is: train, val (and ``test_split``) IoU % and the per-image [TP, FP, FN]
    of val (and the test split). [] where the grid was not extended."""
    ext = curve.get("extended") or {}
    if not (ext.get("below") or ext.get("above")):
        return []
    td, norm, scope = setting
    data = {split: _examples(root, td, norm, class_name, split, features=features)
            for split in ("train", "val", *([test_split] if test_split else []))}
    asked = set(asked_grid(curve))
    grid_only = choose_C(_grid_part(curve))
    out = []
    for C in sorted({grid_only, *(c for c in curve["grid"] if c not in asked)}):
        est = TrainingSettings(scope=scope).estimator(method, C=C).fit(*data["train"])
        rec = {"C": float(C), "in_grid": C in asked, "n_iter": int(est.n_iter_),
               "converged": bool(est.converged_), "fit_seconds": float(est.fit_seconds_),
               "train_iou": 100 * est.score(*data["train"])}
        for split in ("val", *([test_split] if test_split else [])):
            X, Y = data[split]
            pred = est.predict(X)
            per_image = [[int(v) for v in est.voc_score([x], [y], [p]).totals]
                         for x, y, p in zip(X, Y, pred)]
            key = "val" if split == "val" else "test"
            rec[f"{key}_iou"] = 100 * est.voc_score(X, Y, pred).iou
            rec[f"{key}_counts"] = per_image
        out.append(rec)
    return out


def _grid_part(curve: dict) -> dict:
    """The curve at the grid asked for only (as ``--C-extend 0`` makes it)."""
    return truncated(curve, 0)


def truncated(curve: dict, bound: int) -> dict:
    """``curve`` as a bound of ``bound`` steps a side would have made it:
    its first ``bound`` C past each end, the choice among them, and whether
    the bound stopped a curve still rising there."""
    asked = asked_grid(curve)
    lo, hi = min(asked), max(asked)
    below = sorted((c for c in curve["grid"] if c < lo), reverse=True)[:bound]
    above = sorted(c for c in curve["grid"] if c > hi)[:bound]
    keep = [j for j, c in enumerate(curve["grid"]) if c in asked or c in below or c in above]
    out = {"grid": [curve["grid"][j] for j in keep],
           "pooled_iou_percent": [curve["pooled_iou_percent"][j] for j in keep],
           "folds": curve["folds"]}
    out["extended"] = {"below": len(below), "above": len(above), "bound": bound,
                       "bound_reached": False, "grid_asked": asked}
    # sets bound_reached where the curve still rises at the end it reached
    next_extension_C(out)
    out["chosen_C"] = choose_C(out)
    return out


def steps_needed(curve: dict) -> int:
    """The steps past an end the curve took before it turned (its bound +
    1 where the bound stopped it still rising)."""
    ext = curve["extended"]
    return ext["below"] + ext["above"] + (1 if ext["bound_reached"] else 0)


def final_C(curve: dict, train_iou: dict) -> float:
    """The C ``--C auto`` refits at: the choice, or the next by pooled
    held-out IoU while a refit scores train IoU 0 (``train_iou``: C -> %)."""
    curve = json.loads(json.dumps(curve))
    while float(curve["chosen_C"]) in train_iou:
        if next_C_after_refit(curve, train_iou[float(curve["chosen_C"])]) is None:
            break
    return float(curve["chosen_C"])


def cv_extend_file(out: Path, fold_tol: float, extend: int) -> Path:
    """Where ``cv --C-extend K`` writes: cv_tol-TOL_extend-K.jsonl."""
    return out / f"cv_tol-{fold_tol:g}_extend-{extend}.jsonl"


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pairs(out: Path, fold_tol: float, extend: int, setting=("folds", "l1", "dataset")) -> list:
    """Every (data set, class, method) cross-validated with the extension,
    scored on its held-out split: the curve, the grid's fits, the refits."""
    rows = []
    for d_folder, score_key, split in [(out, "val_iou", "val")] + [
            (out / folder, "test_iou", s) for folder, s in set(HELD_SPLIT.values())]:
        runs = _read(d_folder / "runs.jsonl")
        for cv_run in _read(cv_extend_file(d_folder, fold_tol, extend)):
            d = cv_run["dataset"]
            judged_here = HELD_SPLIT.get(d, (None, "val"))[1] == split
            if not judged_here or (cv_run["top_down"], cv_run["sift_norm"],
                                   cv_run["scope"]) != tuple(setting):
                continue
            fits = {float(r["C"]): r for r in runs
                    if (r["dataset"], r["class"], r["method"], r["top_down"], r["sift_norm"],
                        r["scope"]) == (d, cv_run["class"], cv_run["method"], *setting)}
            if set(fits) < set(GRID):
                continue              # the grid's fits are not all there yet
            rows.append({"dataset": d, "class": cv_run["class"], "method": cv_run["method"],
                         "curve": cv_run["curve"], "fits": fits, "score": score_key,
                         "refits": {float(r["C"]): r for r in cv_run.get("extended_fits", [])},
                         "seconds": cv_run["seconds"]})
    return rows


def _at(pair: dict, bound: int) -> dict:
    """One pair's outcome at a bound: chosen C, its held-out IoU, the gap to
    the grid's best, whether the bound stopped a rising curve."""
    cut = truncated(pair["curve"], bound)
    key = pair["score"]
    train = {C: r["train_iou"] for C, r in pair["fits"].items()}
    train.update({C: r["train_iou"] for C, r in pair["refits"].items() if not r["in_grid"]})
    C = final_C(cut, train)
    best = max(r[key] for C_, r in pair["fits"].items() if C_ in GRID)
    source = pair["fits"].get(C) if C in GRID else pair["refits"].get(C)
    held = source[key] if source is not None else math.nan
    # the refit's C at an end of the (truncated) grid, the curve still rising there
    return {"C": C, "held": held, "gap": best - held, "best": best,
            "rising_end": edge_warning({**cut, "chosen_C": C}) is not None,
            "steps": cut["extended"]["below"] + cut["extended"]["above"]}


def _difference(pairs_: list, bounds: dict, split_key: str, seed: int = 0,
                n: int = 2000) -> np.ndarray | None:
    """Bootstrap draws (images resampled, paired) of the mean over the
    pairs' classes of held-out IoU at ``bounds[pair]`` minus at the grid
    alone, from the refits' per-image counts; None without them. Pairs
    whose choice does not move add 0."""
    counts_key = "val_counts" if split_key == "val_iou" else "test_counts"
    per = []
    for p in pairs_:
        with_, without = _at(p, bounds[id(p)])["C"], _at(p, 0)["C"]
        if with_ == without:
            per.append(None)
            continue
        a, b = p["refits"].get(with_), p["refits"].get(without)
        if a is None or b is None or counts_key not in a or counts_key not in b:
            return None
        per.append(np.stack([np.asarray(a[counts_key]), np.asarray(b[counts_key])], axis=1))
    moved = [x for x in per if x is not None]
    if not moved:
        return np.zeros(n)
    if len({x.shape[0] for x in moved}) != 1:
        return None
    ious = resampled_iou(np.stack(moved, axis=1), n, seed)    # (n, moved, 2)
    return (ious[..., 0] - ious[..., 1]).sum(axis=1) / len(per)


def _pair_lines(all_pairs: list, extend: int, doc: dict) -> list[str]:
    """A row per (data set, class, method): the grid alone against the
    extended grid; each also into ``doc["pairs"]``."""
    lines = []
    for p in sorted(all_pairs, key=lambda p: (p["dataset"], p["class"],
                                              METHODS.index(p["method"]))):
        a, b = _at(p, 0), _at(p, extend)
        lines.append(f"| {p['dataset']} | {p['class']} | {p['method']} | {a['C']:g} | "
                     f"{b['C']:g} ({b['steps']}) | {'yes' if a['rising_end'] else 'no'} / "
                     f"{'yes' if b['rising_end'] else 'no'} | {a['held']:.2f} / "
                     f"{b['held']:.2f} / {a['best']:.2f} | {a['gap']:.2f} / {b['gap']:.2f} |")
        doc["pairs"].append({"dataset": p["dataset"], "class": p["class"],
                             "method": p["method"], "grid_only": a, "extended": b,
                             "curve_grid": p["curve"]["grid"],
                             "pooled_iou_percent": p["curve"]["pooled_iou_percent"],
                             "cv_seconds": p["seconds"]})
    return lines


def c_grid_table(out: Path, fold_tol: float, extend: int) -> tuple[list[str], dict]:
    """The table of the self-extending grid: per data set, the steps its
    curves took, whether any ended on the grid's edge still rising, and the
    gap of the chosen C's held-out IoU to the best C of the grid, with and
    without extension; the bound chosen leaving one data set out."""
    all_pairs = pairs(out, fold_tol, extend)
    datasets = sorted({p["dataset"] for p in all_pairs})
    methods = [m for m in METHODS if any(p["method"] == m for p in all_pairs)]
    need = {d: max(steps_needed(p["curve"]) for p in all_pairs if p["dataset"] == d)
            for d in datasets}
    lines = ["## The self-extending grid of C", "",
             f"3-fold cross-validation of C (folds to tol {fold_tol:g} x C) at the library's "
             f"block (top-down folds, L1 words, data-set scope), the grid "
             f"{' '.join(f'{c:g}' for c in GRID)} extended by its own step while the best "
             f"pooled held-out IoU was at an end and still rising, measured with a bound of "
             f"{extend} steps a side. Held-out IoU %: val, CamVid's test split; the gap is "
             "the best C of the grid there minus the chosen C's.", "",
             "| data set | class | method | C grid only | C extended (steps) | rising end "
             "(grid / extended) | held-out grid only / extended / best of grid | gap grid "
             "only / extended |", "|---|---|---|---|---|---|---|---|"]
    doc: dict = {"pairs": [], "lodo": {}, "steps_needed": need, "bound_measured": extend}
    lines += _pair_lines(all_pairs, extend, doc)
    lines += ["", "Leave one data set out: the bound K is the most steps any curve of "
              "the other data sets needed (to its turn), judged on the held-out one:", "",
              "| held out | K (its own need) | "
              + " | ".join(f"{m}: gap grid only / extended, difference [95 % interval]"
                           for m in methods) + " | rising ends at K |",
              "|---|---|" + "---|" * len(methods) + "---|"]
    means: dict = {m: {"grid_only": [], "extended": [], "draws": []} for m in methods}
    for d in datasets:
        others = [need[o] for o in datasets if o != d]
        K = max(others) if others else extend
        K = min(K, extend)
        cells, rising = [], 0
        for m in methods:
            ps = [p for p in all_pairs if p["dataset"] == d and p["method"] == m]
            if not ps:
                cells.append("-")
                continue
            at0 = [_at(p, 0) for p in ps]
            atK = [_at(p, K) for p in ps]
            rising += sum(r["rising_end"] for r in atK)
            g0 = float(np.mean([r["gap"] for r in at0]))
            gK = float(np.mean([r["gap"] for r in atK]))
            draws = _difference(ps, {id(p): K for p in ps}, ps[0]["score"], seed=len(d))
            diff = float(np.mean([r["held"] for r in atK]) - np.mean([r["held"] for r in at0]))
            ci = ("" if draws is None else
                  f" [{np.percentile(draws, 2.5):+.2f}, {np.percentile(draws, 97.5):+.2f}]")
            cells.append(f"{g0:.2f} / {gK:.2f}, {diff:+.2f}{ci}")
            means[m]["grid_only"].append(g0)
            means[m]["extended"].append(gK)
            means[m]["draws"].append(draws)
            doc["lodo"].setdefault(d, {})[m] = {"K": K, "gap_grid_only": g0,
                                                "gap_extended": gK, "difference": diff,
                                                "interval": None if draws is None else
                                                [float(np.percentile(draws, 2.5)),
                                                 float(np.percentile(draws, 97.5))]}
        lines.append(f"| {d} | {K} ({need[d]}) | " + " | ".join(cells) + f" | {rising} |")
    cells = []
    for m in methods:
        g0, gK, draws = means[m]["grid_only"], means[m]["extended"], means[m]["draws"]
        if not g0:
            cells.append("-")
            continue
        ci = ""
        if all(x is not None for x in draws):
            mean_draws = np.mean(np.stack(draws), axis=0)   # data sets drawn independently
            ci = (f" [{np.percentile(mean_draws, 2.5):+.2f}, "
                  f"{np.percentile(mean_draws, 97.5):+.2f}]")
        cells.append(f"**{np.mean(g0):.2f} / {np.mean(gK):.2f}**, "
                     f"{np.mean(g0) - np.mean(gK):+.2f} less{ci}")
        doc.setdefault("mean_gap", {})[m] = {"grid_only": float(np.mean(g0)),
                                             "extended": float(np.mean(gK))}
    lines.append("| mean gap | | " + " | ".join(cells) + " | |")
    lines += ["", "Differences: extended minus grid only, mean held-out IoU over the data "
              "set's classes (the mean row: gap grid only minus extended); intervals from "
              "2000 paired image bootstrap resamples of the refits' per-image counts "
              "(segstruct.evaluate.bootstrap; where the choice moved; a refit is a fit from "
              "the start at that C, the grid's fits walk warm-started).", ""]
    doc.update(code_version=code_version(), machine=machine(), fold_tol=fold_tol,
               grid=list(GRID), setting=["folds", "l1", "dataset"], methods=methods,
               datasets=datasets, classes=sorted({(p["dataset"], p["class"])
                                                  for p in all_pairs}))
    return lines, doc


def c_grid(args) -> None:
    """``lodo.py c-grid``: the table of the self-extending grid into ``--to``
    (table.md and table.json)."""
    lines, doc = c_grid_table(Path(args.out), args.cv_tol, args.C_extend)
    to = Path(args.to or Path(args.out) / "c_grid")
    to.mkdir(parents=True, exist_ok=True)
    (to / "table.md").write_text("\n".join(["# The grid of C that extends itself", "",
                                            *lines]) + "\n")
    (to / "table.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(f"wrote {to / 'table.md'} and table.json")
