"""Loss-augmented inference on real superpixel graphs: time per image and gap to the exact optimum.

For each data set / class (default camvid_voc:car and weizmann_horse_voc:horse)
a BL1 model is trained on the training split (data-set scope, C = 0.5, as in
the README's results; or ``--model`` loads a saved one), and its potentials
u, p = MRFModel(pairwise=True).potentials(graph, w) on a seeded sample of
val images are handed to every inference case of ``default_cases()``:

    graphcut_hamming   Hamming loss folded into the unaries, one graph cut
    proposed_M15/M40   IoU, TriangleOracle(M) with the decomposition solver
    proposed_M40_lp    IoU, TriangleOracle(40, solver="lp") (per-triangle LP)
    bl2                IoU, unary-only problem (same u, p = 0): Joachims' sort
    exact_milp         IoU, the MILP (HiGHS)
    triangulation_M*   building the triangulation alone (cold), no quality

Each case is timed per image as the median (``--timer min``: the minimum) of
``--repeats`` calls. Every call gets a fresh oracle built outside the timed
region, so nothing carries over between calls (TriangleOracle keeps
triangulations and seeds its columns with the labellings of its previous
call); the oracle's triangulation is built before the timed call, so the
proposed cases time the LPs only and the triangulation_M* cases time the
triangulation alone (with segstruct.triangulation's module cache cleared).
Quality is measured against the exact optimum of the same problem (MILP with
the same u, p, t, a and loss; p = 0 for the unary-only case).

    python scripts/bench_inference.py --out results/bench_inference.json \\
        --md results/bench_inference.md
    python scripts/bench_inference.py --data-sets camvid_voc:car --images 5 --repeats 1
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO_ROOT.parent / "shared" / "data"
DEFAULT_DATA_SETS = ("camvid_voc:car", "weizmann_horse_voc:horse")
BASELINE = "graphcut_hamming"
EXACT_RTOL = 1e-6      # "exact": relative gap to the optimum at most this
BOUND_TOL = 1e-6       # bound violation: bound < exact - BOUND_TOL * max(1, |exact|)


# --------------------------------------------------------------------------
# Problems and cases


@dataclass
class Instance:
    """One loss-augmented inference problem on plain arrays.

    Attributes
    ----------
    name : str, e.g. ``"camvid_voc:car/0001TP_008550"``.
    u : (N,) float64 unary potentials.
    edges : (E, 2) int64 adjacent pairs.
    p : (E,) float64 pairwise potentials (<= 0).
    t : (N,) uint8 targets; a : (N,) float64 node weights (0 or 1, count mode).
    """

    name: str
    u: np.ndarray
    edges: np.ndarray
    p: np.ndarray
    t: np.ndarray
    a: np.ndarray


@dataclass(frozen=True)
class Case:
    """An inference method to time.

    ``make(u, edges, p, t, a, loss)`` runs outside the timed region and returns
    a zero-argument callable; only that call is timed. It returns an
    ``InferenceResult`` (its quality is measured when ``quality``) or anything
    else (timing only). ``unary_only`` cases get p = 0 (BL2's model).
    """

    name: str
    loss: str
    make: Callable
    unary_only: bool = False
    quality: bool = True
    timed: str = ""          # what the timed call includes, for the JSON


def _plain(oracle):
    def make(u, edges, p, t, a, loss):
        return lambda: oracle(u, edges, p, t, a, loss)
    return make


def _proposed(n_triangles, solver):
    def make(u, edges, p, t, a, loss):
        from segstruct.losses import totals
        from segstruct.oracles import TriangleOracle
        oracle = TriangleOracle(n_triangles, solver=solver)   # fresh: no seeds
        oracle.triangulation(loss, *totals(t, a))              # built untimed
        return lambda: oracle(u, edges, p, t, a, loss)
    return make


def _triangulation(n_triangles):
    def make(u, edges, p, t, a, loss):
        from segstruct import triangulation as tri
        from segstruct.losses import totals
        n_pos, n_neg = totals(t, a)
        cache = getattr(tri, "_CACHE", None)
        if cache is not None:       # time a cold build, not a cache hit
            cache.clear()
        return lambda: tri.triangulate(loss, n_pos, n_neg, n_triangles=n_triangles)
    return make


def default_cases(m_values: Sequence[int] = (15, 40), lp_m: int | None = 40,
                  triangulation: bool = True) -> dict[str, Case]:
    """The benchmark's cases, name -> Case (add entries to time more methods)."""
    from segstruct.inference import bl2, loss_augmented
    from segstruct.inference.milp import milp_oracle

    lp_note = ("the {M} triangle LPs, candidates and their true objectives; "
               "triangulation built before the call (not timed)")
    cases = [Case(BASELINE, "hamming", _plain(loss_augmented),
                  timed="one graph cut with the loss in the unaries, incl. input checks")]
    for m in m_values:
        cases.append(Case(f"proposed_M{m}", "iou", _proposed(m, "decomposition"),
                          timed="decomposition solver: " + lp_note.format(M=m)))
    if lp_m:
        cases.append(Case(f"proposed_M{lp_m}_lp", "iou", _proposed(lp_m, "lp"),
                          timed="per-triangle HiGHS LP of Eq. 22-26: " + lp_note.format(M=lp_m)))
    cases.append(Case("bl2", "iou", _plain(bl2), unary_only=True,
                      timed="sort + prefix sums over all (FP, FN), unary-only (p = 0)"))
    cases.append(Case("exact_milp", "iou", _plain(milp_oracle),
                      timed="building and solving the MILP with HiGHS"))
    if triangulation:
        for m in sorted(set(m_values) | ({lp_m} if lp_m else set())):
            cases.append(Case(f"triangulation_M{m}", "iou", _triangulation(m), quality=False,
                              timed="triangulate(iou, Np, Nn, M) with its module cache "
                                    "cleared (cold); no inference"))
    return {c.name: c for c in cases}


# --------------------------------------------------------------------------
# Timing and quality


def _timed(fn):
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    finally:
        if gc_was_on:
            gc.enable()


def _problem(inst: Instance, case: Case):
    p = np.zeros_like(inst.p) if case.unary_only else inst.p
    return inst.u, inst.edges, p, inst.t, inst.a


def _scalars(info) -> dict:
    """The JSON-able scalar entries of an InferenceResult's info (graph cuts, ...)."""
    if not isinstance(info, dict):
        return {}
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in info.items()
            if isinstance(v, (str, bool, int, float, np.integer, np.floating))}


def relative_gap(exact: float, objective: float) -> float:
    """(exact - objective) / max(|exact|, 1e-12): 0 when optimal, > 0 when worse."""
    return (exact - objective) / max(abs(exact), 1e-12)


def bench_images(instances: Sequence[Instance], cases: dict[str, Case], repeats: int = 3,
                 timer: str = "median", exact=None, warmup: bool = True,
                 progress: bool = False, desc: str = "images") -> dict:
    """Time every case on every instance and compare with the exact optimum.

    Parameters
    ----------
    instances : problems to solve.
    cases : name -> Case.
    repeats : timed calls per case and instance.
    timer : "median" or "min" of the repeats.
    exact : reference oracle ``(u, edges, p, t, a, loss) -> InferenceResult``
        (default ``milp_oracle``), run once per instance, loss and problem
        (with or without p).
    warmup : one untimed call of every case on the first instance first.

    Returns
    -------
    dict with "images", "n_nodes", "n_edges", "n_pos", "n_neg" (lists per
    instance) and "cases": name -> {"ms" (per image, aggregated), "ms_runs"
    (every repeat), "objective", "bound", "exact_objective", "rel_gap",
    "info" (the result's scalar info: graph cuts, lattice size, ...)} lists
    (all but the times None for timing-only cases).
    """
    from tqdm.auto import tqdm

    from segstruct.losses import totals
    if exact is None:
        from segstruct.inference.milp import milp_oracle as exact
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    if timer not in ("median", "min"):
        raise ValueError(f"timer must be 'median' or 'min', got {timer!r}")
    aggregate = statistics.median if timer == "median" else min
    out = {"images": [], "n_nodes": [], "n_edges": [], "n_pos": [], "n_neg": [],
           "cases": {name: {"ms": [], "ms_runs": [], "objective": [], "bound": [],
                            "exact_objective": [], "rel_gap": [], "info": []}
                     for name in cases}}
    if warmup and instances:
        for case in cases.values():
            case.make(*_problem(instances[0], case), case.loss)()
    for inst in tqdm(instances, desc=desc, unit="img", disable=not progress):
        n_pos, n_neg = totals(inst.t, inst.a)
        out["images"].append(inst.name)
        out["n_nodes"].append(int(inst.u.size))
        out["n_edges"].append(int(len(inst.edges)))
        out["n_pos"].append(float(n_pos))
        out["n_neg"].append(float(n_neg))
        references = {}
        for name, case in cases.items():
            problem = _problem(inst, case)
            runs, result = [], None
            for _ in range(repeats):
                call = case.make(*problem, case.loss)       # untimed set-up
                seconds, res = _timed(call)
                runs.append(1e3 * seconds)
                result = res if result is None else result
            rec = out["cases"][name]
            rec["ms"].append(float(aggregate(runs)))
            rec["ms_runs"].append(runs)
            if not case.quality:
                for key in ("objective", "bound", "exact_objective", "rel_gap", "info"):
                    rec[key].append(None)
                continue
            rec["info"].append(_scalars(getattr(result, "info", None)))
            key = (case.loss, case.unary_only)
            if key not in references:
                references[key] = float(exact(*problem, case.loss).objective)
            best = references[key]
            rec["objective"].append(float(result.objective))
            rec["bound"].append(None if result.bound is None else float(result.bound))
            rec["exact_objective"].append(best)
            rec["rel_gap"].append(relative_gap(best, float(result.objective)))
    return out


def merge(blocks: Sequence[dict]) -> dict:
    """The per-image results of several ``bench_images`` runs as one."""
    blocks = list(blocks)
    out = {k: [v for b in blocks for v in b[k]]
           for k in ("images", "n_nodes", "n_edges", "n_pos", "n_neg")}
    names = list(blocks[0]["cases"]) if blocks else []
    out["cases"] = {n: {k: [v for b in blocks for v in b["cases"][n][k]]
                        for k in blocks[0]["cases"][n]} for n in names}
    return out


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
        gaps = [g for g in rec["rel_gap"] if g is not None]
        if gaps:
            g = np.asarray(gaps)
            row["exact_share"] = float(np.mean(g <= EXACT_RTOL))
            row["inexact_images"] = [img for img, gap in zip(per_image["images"],
                                                             rec["rel_gap"])
                                     if gap is not None and gap > EXACT_RTOL]
            row["mean_rel_gap"] = float(g.mean())
            row["max_rel_gap"] = float(g.max())
            for b, e in zip(rec["bound"], rec["exact_objective"]):
                if b is None or e is None:
                    continue
                row["bound_checked"] += 1
                row["bound_violations"] += int(b < e - BOUND_TOL * max(1.0, abs(e)))
        summary[name] = row
    return summary


# --------------------------------------------------------------------------
# Report


def _fmt(x, spec):
    return "–" if x is None else format(x, spec)


def markdown_table(summaries: dict, baseline: str = BASELINE) -> str:
    """One row per (group, case): summaries is group -> summarise() output."""
    lines = [f"| data set | case | images | median ms / image | x {baseline} "
             "| exact | mean rel. gap | max rel. gap | bound < exact |",
             "|---|---|---|---|---|---|---|---|---|"]
    for group, summary in summaries.items():
        for name, r in summary.items():
            exact = None if r["exact_share"] is None else 100 * r["exact_share"]
            bound = (f"{r['bound_violations']} / {r['bound_checked']}"
                     if r["bound_checked"] else "–")
            lines.append(
                f"| {group} | {name} | {r['n_images']} | {_fmt(r['median_ms'], '.3f')} | "
                f"{_fmt(r['ratio_to_baseline'], '.1f')} | "
                f"{'–' if exact is None else f'{exact:.0f} %'} | "
                f"{_fmt(r['mean_rel_gap'], '.2e')} | {_fmt(r['max_rel_gap'], '.2e')} | "
                f"{bound} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Real data


def _parse_data_set(spec: str) -> tuple[str, str]:
    name, sep, cls = spec.partition(":")
    if not sep or not name or not cls:
        raise argparse.ArgumentTypeError(f"data set {spec!r} must look like NAME:CLASS, "
                                         "e.g. camvid_voc:car")
    return name, cls


def _check_root(shared: Path, name: str) -> Path:
    root = shared / name
    if not (root / "ImageSets" / "Segmentation").is_dir():
        raise SystemExit(
            f"error: shared data set {name!r} not found: {root}/ImageSets/Segmentation "
            f"does not exist. Give the folder holding the data sets with --shared-data DIR "
            f"(default {DEFAULT_SHARED}).")
    return root


def load_instances(shared: Path, name: str, class_name: str, split: str, n_images, seed,
                   args, progress: bool):
    """Potentials of a trained (or loaded) BL1 model on sampled images of a split."""
    from segstruct.cache import ArrayCache
    from segstruct.datasets import VOCDataset
    from segstruct.extraction import FeatureExtractor
    from segstruct.features import FeatureConfig
    from segstruct.model import MRFModel
    from segstruct.ssvm import StructuredSVM

    dataset = VOCDataset(_check_root(shared, name))
    cache = ArrayCache(args.cache)
    model_info = {}
    if args.model is not None:
        from segstruct.persistence import load_model
        estimator, config, codebook, doc = load_model(args.model)
        if not estimator.pairwise:
            raise SystemExit(f"error: {args.model} is a unary-only model; the benchmark "
                             "needs pairwise potentials (a bl1/hamming/proposed model)")
        extractor = FeatureExtractor(dataset, config, cache, n_jobs=args.n_jobs,
                                     progress=progress, codebook=codebook)
        w = estimator.w_
        model_info = {"source": str(args.model), "class": doc.get("class"),
                      "dataset": doc.get("dataset"), "method": doc.get("method"),
                      "loss": repr(estimator.loss_)}
        if doc.get("class") not in (None, class_name):
            print(f"warning: {args.model} was trained for class {doc.get('class')!r}, "
                  f"benchmarking it on {class_name!r}", file=sys.stderr)
    else:
        extractor = FeatureExtractor(dataset, FeatureConfig(), cache, n_jobs=args.n_jobs,
                                     progress=progress)
        train = extractor.examples("train", class_name)
        start = time.perf_counter()
        estimator = StructuredSVM(loss="adjusted_hamming", scope="dataset", C=args.C,
                                  max_iter=args.max_iter, progress=False)
        estimator.fit([e.graph for e in train], [e.counts for e in train])
        w = estimator.w_
        model_info = {"source": "BL1 trained here", "train_split": "train",
                      "n_train_images": len(train), "loss": repr(estimator.loss_),
                      "C": args.C, "scope": "dataset", "weights": "count",
                      "max_iter": args.max_iter, "n_iter": estimator.n_iter_,
                      "converged": bool(estimator.converged_),
                      "fit_seconds": time.perf_counter() - start}
    ids = dataset.ids(split)
    if n_images is not None and n_images < len(ids):
        rng = np.random.default_rng(seed)
        ids = [ids[k] for k in sorted(rng.choice(len(ids), n_images, replace=False))]
    model = MRFModel(pairwise=True)
    instances = []
    for ex in extractor.examples(split, class_name, ids=ids):
        u, p = model.potentials(ex.graph, w)
        instances.append(Instance(f"{name}:{class_name}/{ex.graph.image_id}", u,
                                  np.asarray(ex.graph.edges, np.int64), p,
                                  ex.targets.astype(np.uint8), ex.weights("count")))
    return instances, model_info


def main(argv=None) -> int:
    from threadpoolctl import threadpool_limits

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared-data", type=Path, default=DEFAULT_SHARED,
                    help="folder holding the shared data sets (default: %(default)s)")
    ap.add_argument("--data-sets", nargs="+", type=_parse_data_set,
                    default=[_parse_data_set(s) for s in DEFAULT_DATA_SETS],
                    metavar="NAME:CLASS", help="default: " + " ".join(DEFAULT_DATA_SETS))
    ap.add_argument("--split", default="val", help="split to sample images from")
    ap.add_argument("--images", type=int, default=20, help="images per data set")
    ap.add_argument("--full", action="store_true", help="every image of the split")
    ap.add_argument("--seed", type=int, default=0, help="seed of the image sample")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per case and image")
    ap.add_argument("--timer", choices=("median", "min"), default="median",
                    help="aggregate of the repeats (default: %(default)s)")
    ap.add_argument("--triangles", type=int, nargs="+", default=[15, 40], metavar="M",
                    help="M of the proposed cases (decomposition solver)")
    ap.add_argument("--lp-triangles", type=int, default=40, metavar="M",
                    help="M of the plain-LP proposed case (0: leave it out)")
    ap.add_argument("--C", type=float, default=0.5, help="C of the BL1 model trained here")
    ap.add_argument("--max-iter", type=int, default=200, help="its cutting-plane iterations")
    ap.add_argument("--model", type=Path, help="use a saved model instead of training BL1 "
                    "(one data set only)")
    ap.add_argument("--cache", type=Path, default=None,
                    help="feature cache folder (default: $SEGSTRUCT_CACHE or ~/.cache/segstruct)")
    ap.add_argument("-j", "--n-jobs", type=int, default=1,
                    help="worker processes for loading features")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--md", type=Path, help="write the Markdown table here")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    if args.images < 1 or args.repeats < 1:
        ap.error("--images and --repeats must be >= 1")
    if args.model is not None and len(args.data_sets) != 1:
        ap.error("--model needs exactly one --data-sets entry (the model's data set and class)")
    if not args.shared_data.is_dir():
        raise SystemExit(f"error: shared data folder {args.shared_data} not found; give it "
                         "with --shared-data DIR")
    for name, _ in args.data_sets:
        _check_root(args.shared_data, name)

    from segstruct.cache import atomic_write_bytes
    from segstruct.provenance import code_version, machine

    run_start = time.perf_counter()
    cases = default_cases(args.triangles, args.lp_triangles or None)
    per_image, summaries, models = {}, {}, {}
    # BLAS threads: 1 (DESIGN.md: OpenBLAS's spinning threads slow small work).
    with threadpool_limits(limits=1):
        for name, cls in args.data_sets:
            group = f"{name}:{cls}"
            instances, models[group] = load_instances(
                args.shared_data, name, cls, args.split, None if args.full else args.images,
                args.seed, args, progress=not args.quiet)
            per_image[group] = bench_images(instances, cases, args.repeats, args.timer,
                                            progress=not args.quiet, desc=group)
            summaries[group] = summarise(per_image[group])
    if len(per_image) > 1:
        summaries["overall"] = summarise(merge(per_image.values()))
    table = markdown_table(summaries)
    seconds = time.perf_counter() - run_start
    print(table)
    print(f"{args.timer} of {args.repeats} call(s) per case and image; ratios are medians "
          f"over images divided by {BASELINE}'s; run took {seconds:.0f} s")
    doc = {
        "code_version": code_version(), "machine": machine(),
        "settings": {
            "data_sets": [{"name": n, "class": c} for n, c in args.data_sets],
            "split": args.split, "n_images": None if args.full else args.images,
            "full": args.full, "seed": args.seed, "repeats": args.repeats,
            "timer": args.timer, "m_values": args.triangles,
            "lp_m": args.lp_triangles or None, "C": args.C,
            "loss": {n: c.loss for n, c in cases.items()},
            "unary_only": [n for n, c in cases.items() if c.unary_only],
            "weights": "count", "blas_threads": 1, "warmup": True,
            "gc_disabled_while_timing": True,
            "timed": {n: c.timed for n, c in cases.items()},
            "fresh_oracle_per_call": True,
            "exact_reference": "milp_oracle on the same u, p, t, a and loss "
                               "(p = 0 for unary-only cases)",
            "exact_rtol": EXACT_RTOL, "bound_tol": f"{BOUND_TOL} * max(1, |exact|)",
            "baseline": BASELINE},
        "models": models,
        "per_image": per_image,
        "summary": summaries,
        "run_seconds": seconds,
    }
    if args.out is not None:
        text = json.dumps(doc, indent=1) + "\n"
        atomic_write_bytes(args.out, lambda f: f.write(text.encode()))
        print(f"wrote {args.out}")
    if args.md is not None:
        head = (f"Loss-augmented inference per image ({args.split} split, "
                f"{'all' if args.full else args.images} images per data set, seed {args.seed}; "
                f"{args.timer} of {args.repeats} calls; code {code_version()}). "
                f"`python scripts/bench_inference.py`\n\n")
        note = ("\nEach call gets a fresh oracle. The proposed_* rows time the triangle LPs "
                "only (the triangulation is built before the call); triangulation_M* rows "
                "time building it alone, cold. bl2 solves the unary-only problem (p = 0) and "
                "is compared with the MILP on that problem. 'exact': relative gap to the "
                f"MILP optimum <= {EXACT_RTOL:g}; last column: images whose reported upper "
                "bound is below the exact optimum / images with a bound.\n")
        atomic_write_bytes(args.md, lambda f: f.write((head + table + note).encode()))
        print(f"wrote {args.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
