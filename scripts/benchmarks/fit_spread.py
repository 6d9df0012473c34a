"""The fit-path spread: how far a model's val IoU moves between fits of the
same problem that stop at the same tolerance from different starts, by the
refit's tolerance; the table ``docs/reliability.md`` ("Fit-path spread")
shows and the refit's default tolerance is chosen from.

For each case (data set, class) and method (``segstruct compare``'s,
``METHODS_COMPARED``) at the commands' defaults (the default features, the
top-down block on; the C that ``--C auto`` chooses, by the workflow's own
cross-validation on the training split), the training split is fitted at
that C once per start and tolerance:

- ``cold``: from w = 0, as the workflow's refit;
- ``reordered``: from w = 0 with the training images in another order (a
  seeded permutation): the same problem, its sums added in another order,
  as a change of code would;
- ``from_below`` / ``from_above``: warm-started (``warm_start=True``: the
  working set and weights) from a fit at the grid's neighbouring C below /
  above, itself stopped at the same tolerance: the path cross-validation
  walks.

Each fit is scored on the case's evaluation split (pooled VOC IoU); the
spread of a (case, method, tolerance) is the largest minus the smallest of
the scores of every fit that reached it, in points: its starts, and the
starts stopped at a tighter tolerance (which reached this one on their
way: any of them is a fit another code version could have stopped at).
The cost of a tolerance is the cold fit's CPU seconds (the workflow's
refit; one process, one thread) against the cold fit's at
:data:`COST_REFERENCE` (the refit's default before this study), measured in
the same run.

Writes ``results.json`` (every fit: score, CPU and wall seconds,
iterations, objective, gap, convergence; the cases, C, settings and code
version); the runner's ``report.md`` holds its tables (:func:`table`).
"""
from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path

import numpy as np

SUMMARY = ("fit-path spread: val IoU of refits from different starts (cold, reordered, "
           "warm from the neighbouring C) at each refit tolerance; bl1, bl2, proposed")
DEFAULTS = ("data", "features", "training")

REPO = Path(__file__).resolve().parents[2]
#: The refit tolerances measured.
TOLS = (1e-2, 1e-3, 1e-4, 1e-5)
#: The starts of each fit (the module docstring).
STARTS = ("cold", "reordered", "from_below", "from_above")
#: The cases by default: the generated data set's classes, then two shared sets.
CASES = ("generated:car", "generated:person", "generated:horse",
         "pennfudan_voc:person", "weizmann_horse_voc:horse")
#: The spread the chosen tolerance must keep every case under, in points.
BOUND = 0.5
#: The cost the chosen tolerance may have, as a multiple of the refit at
#: COST_REFERENCE.
COST_LIMIT = 3.0
#: The tolerance the cost is relative to: the refit's default before this
#: study chose one (``segstruct.learn._problem.DEFAULT_TOL``, the learners' own).
COST_REFERENCE = 1e-3


def add_arguments(parser) -> None:
    parser.add_argument("--case", action="append", metavar="DATA:CLASS[:SPLIT]",
                        help="a data set (a folder of --shared, or 'generated' for the "
                             "command's generated set), its class and the split scored "
                             "(default val); repeat for more (default: "
                             f"{' '.join(CASES)})")
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data",
                        help="folder of the shared data sets (default %(default)s)")
    parser.add_argument("--methods", nargs="+", default=None,
                        help="default: segstruct compare's METHODS_COMPARED")
    parser.add_argument("--tols", nargs="+", type=float, default=list(TOLS))
    parser.add_argument("--seed", type=int, default=0,
                        help="the folds' seed and the reordered start's permutation")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _extractor(name: str, shared: Path):
    """The command's default features of data set ``name`` (the top-down
    block on, as the command has it)."""
    from segstruct.datasets import VOCDataset, default_synthetic_root, make_synthetic_voc
    from segstruct.features.cache import ArrayCache
    from segstruct.features.config import FeatureConfig
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.features.topdown.detector import DetectorParams
    if name == "generated":
        root = default_synthetic_root()
        make_synthetic_voc(root)
    else:
        root = shared / name
    config = FeatureConfig(detector=DetectorParams(seed=FeatureConfig().seed))
    return FeatureExtractor(VOCDataset(root), config, ArrayCache(), n_jobs=1, progress=False)


def _fit(settings, method: str, C: float, tol: float, X, Y, start=None, keep=False):
    """A fit at ``C`` and ``tol``, cold or warm-started from ``start`` (a
    fitted estimator of the same problem at another C), and its CPU seconds;
    ``keep``: a cold fit that a later one may warm-start from."""
    if start is None:
        est = settings.estimator(method, C=C)
        est.set_params(tol=tol, warm_start=keep)
    else:
        est = copy.deepcopy(start)
        est.set_params(C=C, tol=tol)
    # CPU seconds: the fit runs in this process on one thread (n_jobs 1, one
    # BLAS thread), and on a shared machine its wall seconds measure the others
    t0 = time.process_time()
    est.fit(X, Y)
    return est, time.process_time() - t0


def _record(est, seconds: float, X_eval, Y_eval) -> dict:
    return {"val_iou": float(est.voc_score(X_eval, Y_eval).to_dict()["voc_iou_percent"]),
            "seconds": round(seconds, 3), "wall_seconds": round(est.fit_seconds_, 3),
            "n_iter": int(est.n_iter_),
            "converged": bool(est.converged_), "primal": float(est.primal_),
            "gap": float(est.gap_), "svm_C": float(est.svm_C_)}


def measure_case(extractor, class_name: str, eval_split: str, method: str, tols, seed: int):
    """Every start at every tolerance for one (case, method): a dict of the
    C chosen, its neighbours and ``fits[tol][start]`` records."""
    from segstruct.learn.methods import DEFAULTS as SETTINGS
    from segstruct.workflow import cross_validate
    train = extractor.examples("train", class_name)
    held = extractor.examples(eval_split, class_name)
    X, Y = [e.graph for e in train], [e.pixel_counts for e in train]
    X_eval, Y_eval = [e.graph for e in held], [e.pixel_counts for e in held]
    t0 = time.perf_counter()
    curve = cross_validate(SETTINGS, method, X, Y, seed=seed)
    cv_seconds = time.perf_counter() - t0
    C = float(curve["chosen_C"])
    grid = [float(c) for c in curve["grid"]]
    i = grid.index(C)
    neighbours = {"from_below": grid[i - 1] if i > 0 else None,
                  "from_above": grid[i + 1] if i + 1 < len(grid) else None}
    order = np.random.default_rng(seed).permutation(len(X))
    X_r, Y_r = [X[k] for k in order], [Y[k] for k in order]
    fits: dict = {}
    for tol in tols:
        row = {}
        est, s = _fit(SETTINGS, method, C, tol, X, Y)
        row["cold"] = _record(est, s, X_eval, Y_eval)
        est, s = _fit(SETTINGS, method, C, tol, X_r, Y_r)
        row["reordered"] = _record(est, s, X_eval, Y_eval)
        for start, C_n in neighbours.items():
            if C_n is None:
                continue
            first, s_n = _fit(SETTINGS, method, C_n, tol, X, Y, keep=True)
            est, s = _fit(SETTINGS, method, C, tol, X, Y, start=first)
            row[start] = {**_record(est, s, X_eval, Y_eval), "start_C": C_n,
                          "start_seconds": round(s_n, 3)}
        fits[f"{tol:g}"] = row
        scores = [r["val_iou"] for r in row.values()]
        _say(f"  {method} tol {tol:g}: val IoU {min(scores):.2f}-{max(scores):.2f}, cold fit "
             f"{row['cold']['seconds']:.1f} CPU s")
    return {"C": C, "grid": grid, "neighbours": neighbours, "cv_seconds": round(cv_seconds, 1),
            "n_train": len(X), "n_eval": len(X_eval), "fits": fits}


def run(args, out: Path) -> dict:
    from segstruct.compare import METHODS_COMPARED
    from segstruct.learn.methods import DEFAULTS as SETTINGS
    from segstruct.io.provenance import code_version
    methods = list(args.methods or METHODS_COMPARED)
    cases = []
    for text in args.case or CASES:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise SystemExit(f"--case {text!r}: give DATA:CLASS or DATA:CLASS:SPLIT")
        cases.append((parts[0], parts[1], parts[2] if len(parts) == 3 else "val"))
    doc = {"code_version": code_version(), "methods": methods, "tols": list(args.tols),
           "starts": list(STARTS), "default_tol": SETTINGS.tol,
           "cost_reference_tol": COST_REFERENCE, "seed": args.seed,
           "settings": SETTINGS.to_dict(), "n_jobs": 1, "cases": []}
    for data, class_name, split in cases:
        extractor = _extractor(data, args.shared)
        for method in methods:
            _say(f"{data} {class_name} {method}")
            entry = measure_case(extractor, class_name, split, method, args.tols, args.seed)
            doc["cases"].append({"data": data, "class": class_name, "eval_split": split,
                                 "method": method, **entry})
            # written after every case, so that a long run shows what it has
            (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    return {"chosen_tol": choose_tol(doc)["tol"], "cases": len(doc["cases"])}


def spread(fits: dict, tol: str) -> float:
    """Largest minus smallest val IoU, in points, of every fit of one case
    that reached tolerance ``tol`` (a key of ``fits``): the starts stopped
    at it, and those stopped at a tighter one, which reached it on their way
    (their gap is below it too)."""
    scores = [r["val_iou"] for key, row in fits.items() if float(key) <= float(tol)
              for r in row.values()]
    return max(scores) - min(scores)


def choose_tol(doc: dict, bound: float = BOUND, cost_limit: float = COST_LIMIT) -> dict:
    """The loosest tolerance whose spread stays under ``bound`` in every case
    and whose cold fits cost at most ``cost_limit`` times those at the cost
    reference (the median over cases of the seconds' ratio); ``tol`` None
    when none does. Returns the tolerance with, per tolerance, the largest
    spread and that cost ratio."""
    default = f"{doc.get('cost_reference_tol', doc['default_tol']):g}"
    rows = {}
    for tol in sorted(doc["tols"], reverse=True):
        key = f"{tol:g}"
        spreads = [spread(c["fits"], key) for c in doc["cases"]]
        ratios = [c["fits"][key]["cold"]["seconds"] / c["fits"][default]["cold"]["seconds"]
                  for c in doc["cases"] if default in c["fits"]]
        rows[key] = {"max_spread": max(spreads),
                     "cost": float(np.median(ratios)) if ratios else None,
                     "all_converged": all(r["converged"] for c in doc["cases"]
                                          for r in c["fits"][key].values())}
    chosen = next((float(k) for k, r in rows.items()
                   if r["max_spread"] < bound and r["all_converged"]
                   and (r["cost"] is None or r["cost"] <= cost_limit)), None)
    return {"tol": chosen, "bound": bound, "cost_limit": cost_limit, "by_tol": rows}


def table(doc: dict) -> str:
    """The Markdown tables: spread per tolerance and method (the largest over
    cases), cost, and every case's spreads."""
    tols = [f"{t:g}" for t in sorted(doc["tols"], reverse=True)]
    methods = doc["methods"]
    default = f"{doc['default_tol']:g}"
    reference = f"{doc.get('cost_reference_tol', doc['default_tol']):g}"
    lines = ["### Spread of val IoU over the starts, by refit tolerance", "",
             "The largest spread over the cases (points of pooled VOC IoU: the largest "
             "minus the smallest score of the fits that reached the tolerance: the starts "
             "cold, reordered and warm from the neighbouring C stopped at it, and those "
             "stopped at a tighter one); cost: the cold refit's CPU seconds over those at "
             f"tol {reference} "
             "(median over the cases), and its iterations (median).", "",
             "| tol | " + " | ".join(f"{m} spread" for m in methods)
             + " | all | cost | iterations | converged |",
             "|---|" + "---:|" * (len(methods) + 4)]
    chosen = choose_tol(doc)
    for tol in tols:
        cells = []
        for m in methods:
            cases = [c for c in doc["cases"] if c["method"] == m]
            cells.append(f"{max(spread(c['fits'], tol) for c in cases):.2f}" if cases else "")
        r = chosen["by_tol"][tol]
        iters = np.median([c["fits"][tol]["cold"]["n_iter"] for c in doc["cases"]])
        cost = "" if r["cost"] is None else f"{r['cost']:.2f}x"
        lines.append(f"| {tol} | " + " | ".join(cells) + f" | {r['max_spread']:.2f} | "
                     f"{cost} | {iters:g} | {'yes' if r['all_converged'] else 'no'} |")
    pick = ("none" if chosen["tol"] is None else f"{chosen['tol']:g}")
    lines += ["", f"Loosest tolerance with every spread under {chosen['bound']:g} points, "
              f"every fit converged and a cost of at most {chosen['cost_limit']:g}x the refit "
              f"at {reference}: "
              f"**{pick}** (today's default: {default}).", "",
              "### Every case", "",
              "| data | class | method | C | " + " | ".join(f"tol {t}" for t in tols)
              + " | cold refit CPU s at " + " / ".join(tols) + " |",
              "|---|---|---|---:|" + "---:|" * (len(tols) + 1)]
    for c in doc["cases"]:
        spreads = " | ".join(f"{spread(c['fits'], t):.2f}" for t in tols)
        secs = " / ".join(f"{c['fits'][t]['cold']['seconds']:.1f}" for t in tols)
        lines.append(f"| {c['data']} | {c['class']} ({c['eval_split']}) | {c['method']} | "
                     f"{c['C']:g} | {spreads} | {secs} |")
    lines += ["", f"Code {doc['code_version']}; -j 1; the folds' seed and the reordered "
              f"start's permutation {doc['seed']}."]
    return "\n".join(lines) + "\n"


def describe(folder: Path) -> str:
    """The tables, made from ``results.json`` alone."""
    return table(json.loads((folder / "results.json").read_text()))
