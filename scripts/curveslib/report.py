"""The learners' curves as a report: each curve's summary, the figure (F and
val IoU against seconds) and the table of times to reach F*."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from curveslib.learners import LABELS, TARGETS


def summarise(learners: dict) -> dict:
    """F*, the best lower bound, and per learner the times to reach F* within ``TARGETS``."""
    f_star = min(p["primal"] for s in learners.values() for p in s["points"])
    bounds = {name: s["lower_bound"] for name, s in learners.items()
              if s["lower_bound"] is not None}
    lower_from = max(bounds, key=bounds.get) if bounds else None
    f_lower = bounds[lower_from] if bounds else None
    for s in learners.values():
        last = s["points"][-1]
        s["final_primal"], s["final_val_iou"] = last["primal"], last["val_iou"]
        s["relative_to_F_star"] = (last["primal"] - f_star) / abs(f_star)
        s["time_to"] = {f"{r:g}": _first_time(s["points"], f_star, r) for r in TARGETS}
    return {"learners": learners, "F_star": f_star, "F_lower": f_lower,
            "lower_bound_from": lower_from}


def _first_time(points, f_star: float, rel: float) -> float | None:
    """The first recorded time whose F is within ``rel`` (relative) of ``f_star``."""
    for p in points:
        if p["primal"] - f_star <= rel * abs(f_star):
            return p["seconds"]
    return None


def caption(doc: dict) -> str:
    """What the figure and the table show, in one line."""
    s = doc["settings"]
    return (f"{s['dataset']} {s['class']}, {s['method']} ({s['loss']}), per-image scope, "
            f"C {s['C']:g}, tol {s['tol']:g}, budget {s['budget_seconds']:g} s per learner; "
            f"{s['n_train']} train / {s['n_val']} val images; code {doc['code_version']}")


def figure(doc: dict, path: Path) -> Path:
    """Two panels against training seconds: F(w) - F_lower (log) and val IoU."""
    from matplotlib.figure import Figure

    from segstruct.report.figures import save_figure
    res = doc["results"]
    lower = res["F_lower"] if res["F_lower"] is not None else res["F_star"]
    # F* itself would sit at -inf on a log axis: clip at a millionth of it
    floor = 1e-6 * max(abs(lower), 1e-12)
    fig = Figure(figsize=(12, 4.8))
    ax_f, ax_iou = fig.subplots(1, 2)
    for name, s in res["learners"].items():
        t = np.array([max(p["seconds"], 1e-3) for p in s["points"]])
        f = np.array([max(p["primal"] - lower, floor) for p in s["points"]])
        iou = np.array([100 * p["val_iou"] for p in s["points"]])
        style = {"marker": ".", "label": LABELS[name] + ("" if s["converged"] else
                                                        f" (not converged: {s['stopped']})")}
        ax_f.plot(t, f, **style)
        ax_iou.plot(t, iou, **style)
    which = ("F_lower = " + res["lower_bound_from"] + "'s lower bound"
             if res["F_lower"] is not None else "F_lower = F* (no certified bound)")
    ax_f.set(xscale="log", yscale="log", xlabel="training seconds",
             ylabel=f"F(w) - F_lower (clipped at {floor:.1e})", title=f"objective ({which}, {lower:.6g})")
    ax_iou.set(xscale="log", xlabel="training seconds", ylabel="val VOC IoU (%)",
               title="validation IoU")
    for ax in (ax_f, ax_iou):
        ax.grid(True, which="both", alpha=0.3)
    # below the panels, where it hides no curve
    fig.legend(*ax_f.get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=9,
               bbox_to_anchor=(0.5, 0.0))
    fig.suptitle("\n".join(textwrap.wrap(caption(doc), 140)), fontsize=9)
    fig.subplots_adjust(top=0.83, bottom=0.24, wspace=0.25)
    return save_figure(fig, path)


def table(doc: dict) -> str:
    """Markdown: per learner, times to F*, final F, gap, val IoU, convergence, oracle calls."""
    from segstruct.report.tables import fmt
    res = doc["results"]
    f_star, f_lower = res["F_star"], res["F_lower"]
    head = [f"Learners on one problem: {caption(doc)}.", "",
            "| learner | to 1% of F* (s) | to 0.1% of F* (s) | final F | (F - F*) / F* "
            "| own gap | F - F_lower | val IoU % | converged | training s | oracle calls |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]

    def secs(v):
        return fmt(v, ".2f")
    rows = []
    for name, s in res["learners"].items():
        gap = fmt(s["final_gap"], ".3g")
        to_lower = fmt(None if f_lower is None else s["final_primal"] - f_lower, ".3g")
        converged = "yes" if s["converged"] else f"no (stopped: {s['stopped']})"
        rows.append(f"| {LABELS[name]} | {secs(s['time_to']['0.01'])} | "
                    f"{secs(s['time_to']['0.001'])} | {s['final_primal']:.6g} | "
                    f"{s['relative_to_F_star']:.2e} | {gap} | {to_lower} | "
                    f"{100 * s['final_val_iou']:.2f} | {converged} | "
                    f"{s['training_seconds']:.1f} | {s['oracle_calls']} |")
    lower_text = ("none" if f_lower is None else
                  f"{f_lower:.10g} ({res['lower_bound_from']})")
    note = ["", f"F* = {f_star:.10g} (the lowest F recorded by any learner); F_lower = "
            f"{lower_text}, the highest certified lower bound (cutting planes: the working-set "
            "QP's value; BCFW: its dual). Times are training seconds (the recording "
            "excluded) at the first recorded point within the target, so they are upper "
            "bounds at the resolution of the recording times; – = not reached. 'own gap': "
            "the learner's certified gap at the end (cutting planes: best F - QP value; "
            "BCFW: its duality gap; none for subgradient and SGD). Subgradient descent "
            "shows the best of its recorded iterates, SGD its weighted average. Oracle "
            "calls include those a learner spends on its own objective evaluations "
            "(subgradient descent's every pass, BCFW's gap each epoch), not the script's. "
            f"Run {doc['run_seconds']:.0f} s on {doc['machine']['cpu_count']} cores "
            "(seconds compare learners within this run only).", ""]
    return "\n".join(head + rows + note)
