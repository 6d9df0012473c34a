"""Time and quality of loss-augmented inference: every case on every image
(``bench_images``), and one call on a big problem (the union of a training
split, ``measure_dataset_scope``; a pixel grid, ``measure_pixel``).

Quality is measured against the exact optimum of the same problem (MILP with
the same u, p, t, a and loss; p = 0 for unary-only cases).
"""
from __future__ import annotations

import statistics
from typing import Sequence

import numpy as np

from benchlib.cases import TARGET_M, Case, clear_triangulation_cache, prepare
from benchlib.instances import Instance
from benchlib.timelimit import proposed_with_time_limit
from benchlib.timing import scalars, timed

EXACT_RTOL = 1e-6      # "exact": relative gap to the optimum at most this
BOUND_TOL = 1e-6       # bound violation: bound < exact - BOUND_TOL * max(1, |exact|)


def relative_gap(exact: float, objective: float) -> float:
    """(exact - objective) / max(|exact|, 1e-12): 0 when optimal, > 0 when worse."""
    return (exact - objective) / max(abs(exact), 1e-12)


def bound_violated(bound: float, exact: float) -> bool:
    """Whether an upper bound lies below the exact optimum (beyond ``BOUND_TOL``)."""
    return bound < exact - BOUND_TOL * max(1.0, abs(exact))


def _problem(inst: Instance, case: Case):
    p = np.zeros_like(inst.p) if case.unary_only else inst.p
    return inst.u, inst.edges, p, inst.t, inst.a


def _empty_block(cases) -> dict:
    return {"images": [], "n_nodes": [], "n_edges": [], "n_pos": [], "n_neg": [],
            "cases": {name: {"ms": [], "ms_runs": [], "objective": [], "bound": [],
                             "exact_objective": [], "rel_gap": [], "info": []}
                      for name in cases}}


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

    if exact is None:
        from segstruct.inference.milp import milp_oracle as exact
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    if timer not in ("median", "min"):
        raise ValueError(f"timer must be 'median' or 'min', got {timer!r}")
    aggregate = statistics.median if timer == "median" else min
    out = _empty_block(cases)
    if warmup and instances:
        for case in cases.values():
            case.make(*_problem(instances[0], case), case.loss)()
    for inst in tqdm(instances, desc=desc, unit="img", disable=not progress):
        _add_sizes(out, inst)
        references = {}        # (loss, unary_only) -> the exact optimum
        for name, case in cases.items():
            problem = _problem(inst, case)
            runs, result = _repeat(case, problem, repeats)
            rec = out["cases"][name]
            rec["ms"].append(float(aggregate(runs)))
            rec["ms_runs"].append(runs)
            if not case.quality:
                for key in ("objective", "bound", "exact_objective", "rel_gap", "info"):
                    rec[key].append(None)
                continue
            key = (case.loss, case.unary_only)
            if key not in references:
                references[key] = float(exact(*problem, case.loss).objective)
            _add_quality(rec, result, references[key])
    return out


def _add_sizes(out: dict, inst: Instance) -> None:
    from segstruct.inference.losses import totals
    n_pos, n_neg = totals(inst.t, inst.a)
    out["images"].append(inst.name)
    out["n_nodes"].append(int(inst.u.size))
    out["n_edges"].append(int(len(inst.edges)))
    out["n_pos"].append(float(n_pos))
    out["n_neg"].append(float(n_neg))


def _repeat(case: Case, problem, repeats: int):
    """(milliseconds of each call, the first call's result); set-up untimed."""
    runs, result = [], None
    for _ in range(repeats):
        call = case.make(*problem, case.loss)
        seconds, res = timed(call)
        runs.append(1e3 * seconds)
        result = res if result is None else result
    return runs, result


def _add_quality(rec: dict, result, best: float) -> None:
    rec["info"].append(scalars(getattr(result, "info", None)))
    rec["objective"].append(float(result.objective))
    rec["bound"].append(None if result.bound is None else float(result.bound))
    rec["exact_objective"].append(best)
    rec["rel_gap"].append(relative_gap(best, float(result.objective)))


def merge(blocks: Sequence[dict]) -> dict:
    """The per-image results of several ``bench_images`` runs as one."""
    blocks = list(blocks)
    out = {k: [v for b in blocks for v in b[k]]
           for k in ("images", "n_nodes", "n_edges", "n_pos", "n_neg")}
    names = list(blocks[0]["cases"]) if blocks else []
    out["cases"] = {n: {k: [v for b in blocks for v in b["cases"][n][k]]
                        for k in blocks[0]["cases"][n]} for n in names}
    return out


def _hamming_cut_ms(inst: Instance, repeats: int) -> list[float]:
    """Milliseconds of ``repeats`` Hamming graph cuts on ``inst``."""
    from segstruct.inference import loss_augmented
    return [1e3 * timed(lambda: loss_augmented(inst.u, inst.edges, inst.p, inst.t,
                                               inst.a, "hamming"))[0]
            for _ in range(repeats)]


def _sizes(inst: Instance) -> dict:
    from segstruct.inference.losses import totals
    n_pos, n_neg = totals(inst.t, inst.a)
    return {"n_nodes": int(inst.u.size), "n_edges": int(len(inst.edges)),
            "n_pos": float(n_pos), "n_neg": float(n_neg)}


def measure_dataset_scope(inst: Instance, repeats: int = 3, n_triangles: int = TARGET_M,
                          loss: str = "iou") -> dict:
    """One proposed call (fresh oracle, triangulation built first) and the Hamming
    graph cut (aggregate: median of ``repeats``) on one big instance."""
    from segstruct.inference.proposed import ProposedOracle

    gc_ms = _hamming_cut_ms(inst, repeats)
    clear_triangulation_cache()
    oracle = ProposedOracle(n_triangles)
    tri_s = prepare(oracle, loss, inst.t, inst.a)
    seconds, res = timed(lambda: oracle(inst.u, inst.edges, inst.p, inst.t, inst.a, loss))
    bound = None if res.bound is None else float(res.bound)
    gc = float(statistics.median(gc_ms))
    return {"instance": inst.name, **_sizes(inst), "loss": loss,
            "n_triangles": n_triangles, "triangulation_s": tri_s, "proposed_s": seconds,
            "graphcut_ms": gc, "graphcut_ms_runs": gc_ms,
            "ratio_to_graphcut": 1e3 * seconds / gc,
            "objective": float(res.objective), "bound": bound,
            "bound_gap": None if bound is None else bound - float(res.objective),
            "info": scalars(res.info)}


def measure_pixel(inst: Instance, params: dict, repeats: int = 3, timeout: float | None = 120.0,
                  n_triangles: int = TARGET_M) -> dict:
    """Hamming graph cut (median of ``repeats``) and one proposed IoU call on a grid
    (in a worker killed after ``timeout`` s; None: in this process, no limit)."""
    gc_ms = _hamming_cut_ms(inst, repeats)
    res = proposed_with_time_limit(inst, timeout, n_triangles)
    gc = float(statistics.median(gc_ms))
    bound = res["bound"]
    return {"image": inst.name, **_sizes(inst), "grid": params,
            "n_triangles": n_triangles, "timeout_s": timeout,
            "graphcut_ms": gc, "graphcut_ms_runs": gc_ms, **res,
            "ratio_to_graphcut": 1e3 * res["proposed_s"] / gc,
            "bound_gap": None if bound is None else bound - res["objective"]}
