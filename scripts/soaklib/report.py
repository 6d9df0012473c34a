"""The soak's report: each run's summary, the progress lines and the Markdown
table of out/soak."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from segstruct.io.text import fmt

from soaklib.runs import RUNS


def summarise(r: dict, eval_pixels: int) -> dict:
    """The soak's view of one Comparison record."""
    t, d, ev, tr = r["training"], r["diagnosis"], r["eval_score"], r["train_score"]
    predicted = ev["tp"] + ev["fp"]
    val_share = predicted / eval_pixels if eval_pixels else None
    empty = {
        "train_no_foreground": d["collapse"] == "no foreground",
        "train_all_foreground": d["collapse"] == "all foreground",
        "val_no_foreground": predicted == 0,
        "val_all_foreground": bool(eval_pixels) and predicted == eval_pixels,
    }
    return {
        "converged": bool(t["converged"]), "iterations": int(t["n_iter"]),
        "seconds": float(t["fit_seconds"]), "eval_seconds": float(r["eval_seconds"]),
        "primal": t["primal"], "dual": t["dual"], "gap": d["gap"],
        "relative_gap": d["relative_gap"], "target_gap": d["target_gap"],
        "gap_within_target": bool(np.isfinite(d["gap"]) and d["gap"] <= d["target_gap"]),
        "oracle": t["oracle"], "loss": r["loss"],
        "train_iou_percent": tr["voc_iou_percent"], "val_iou_percent": ev["voc_iou_percent"],
        "train_score": tr, "val_score": ev,
        "train_foreground_share": d["foreground_share"], "val_foreground_share": val_share,
        "empty_predictions": empty,
        "any_empty_prediction": any(empty.values()),
        "warnings": list(d["warnings"]),
        "n_train_images": int(r["n_train_images"]), "n_eval_images": int(r["n_eval_images"]),
        "model_code_version": r["code_version"],
    }


def finite(obj):
    """``obj`` with every non-finite float replaced by None (strict JSON)."""
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def current_runs(doc) -> list[dict]:
    """Records made with this code and these settings (the others are kept, not shown)."""
    wanted = {name: v["settings"] for name, v in doc["settings"]["runs"].items()}
    return [r for r in doc["runs"] if r.get("code_version") == doc["code_version"]
            and r.get("source_digest") == doc["source_digest"]
            and r.get("settings") == wanted.get(r["run"])]


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# ---------------------------------------------------------------------- reporting
def _empty_marker(r) -> str:
    e = r.get("empty_predictions") or {}
    parts = []
    for side in ("train", "val"):
        if e.get(f"{side}_no_foreground"):
            parts.append(f"∅{side}")
        if e.get(f"{side}_all_foreground"):
            parts.append(f"■{side}")
    return " " + " ".join(parts) if parts else ""


def cell(r) -> str:
    if r is None:
        return ""
    if r["crashed"]:
        return ("**TIMEOUT** (killed)" if r["error_type"] == "Timeout"
                else f"**CRASH** {r['error_type']}")
    conv = "yes" if r["converged"] else "**no**"
    star = "" if r["converged"] else " ⚠"
    return (f"{fmt(r['val_iou_percent'])} ({r['iterations']}, {r['seconds']:.1f} s, "
            f"{conv}){star}{_empty_marker(r)}")


def progress_line(r) -> str:
    head = f"{r['dataset']}/{r['class']} {r['run']}:"
    if r["crashed"]:
        return f"{head} CRASHED after {r['wall_seconds']:.1f} s: {r['traceback_last_line']}"
    status = "converged" if r["converged"] else "NOT converged (max_iter)"
    warn = f"; {len(r['warnings'])} warning(s)" if r["warnings"] else ""
    return (f"{head} val IoU {fmt(r['val_iou_percent'])} %, train "
            f"{fmt(r['train_iou_percent'])} %; {status} after {r['iterations']} it, "
            f"{r['seconds']:.1f} s; gap {fmt(r['gap'], '.3g')} (target "
            f"{fmt(r['target_gap'], '.3g')}, rel {fmt(r['relative_gap'], '.2g')})"
            f"{_empty_marker(r)}{warn}")


def summary_line(runs) -> str:
    crashed = sum(r["crashed"] and r["error_type"] != "Timeout" for r in runs)
    timeouts = sum(r["crashed"] and r["error_type"] == "Timeout" for r in runs)
    ok = [r for r in runs if not r["crashed"]]
    converged = sum(r["converged"] for r in ok)
    empty = sum(r["any_empty_prediction"] for r in ok)
    within = sum(r["gap_within_target"] for r in ok)
    return (f"{len(runs)} runs: {crashed} crashed, {timeouts} timed out, "
            f"{converged} converged, "
            f"{len(ok) - converged} not converged, {within} with gap <= C*tol, "
            f"{empty} with empty predictions (no foreground or all foreground, train or val)")


def render_markdown(doc: dict) -> str:
    current = current_runs(doc)
    stale = len(doc["runs"]) - len(current)
    runs = [name for name in RUNS if any(r["run"] == name for r in current)]
    rows = sorted({(r["dataset"], r["class"]) for r in current})
    by = {(r["dataset"], r["class"], r["run"]): r for r in current}
    s = doc["settings"]["compare_settings"]
    lines = [
        "# Soak: every method on every class of the shared data",
        "",
        f"Trained on `{doc['settings']['train_split']}`, VOC IoU % on "
        f"`{doc['settings']['eval_split']}`. Settings: scope {s['scope']}, C {s['C']:g}, "
        f"tol {s['tol']:g}, max_iter {s['max_iter']}, solver {s['solver']}, node weights "
        f"{s.get('node_weights', s.get('weights'))}, loss of bl2/proposed {s['loss']}; "
        f"proposed's inference {s.get('inference', s.get('lp_solver'))}, "
        f"proposed-decomposition's decomposition (M {s['n_triangles']}); "
        "the library's default features (bottom-up; no top-down block). Code "
        f"`{doc['code_version']}` (source digest `{doc['source_digest'][:12]}`).",
        "",
        "Cells: val IoU % (cutting-plane iterations, training seconds, converged?). "
        "⚠ = stopped at max_iter; ∅train / ∅val = no foreground predicted on the "
        "training / validation split; ■train / ■val = foreground predicted everywhere.",
        "",
        "| data set | class | train images (with class / all) | " + " | ".join(runs) + " |",
        "|---|---|---|" + "---|" * len(runs),
    ]
    for ds, cls in rows:
        first = next(r for r in current if (r["dataset"], r["class"]) == (ds, cls))
        n = f"{first.get('n_train_images_with_class')} / {first.get('n_train_split_images')}"
        lines.append(f"| {ds} | {cls} | {n} | "
                     + " | ".join(cell(by.get((ds, cls, m))) for m in runs) + " |")
    lines += ["", f"**Summary:** {summary_line(current)}."]
    if stale:
        lines.append(f"({stale} record(s) made with other code or settings are kept in "
                     "soak.json but "
                     "not shown.)")
    crashes = [r for r in current if r["crashed"]]
    if crashes:
        lines += ["", "## Crashes and time-outs", ""]
        lines += [f"- {r['dataset']}/{r['class']} {r['run']}: `{r['traceback_last_line']}`"
                  for r in crashes]
    warned = [r for r in current if not r["crashed"] and r["warnings"]]
    if warned:
        lines += ["", "## Diagnosis warnings", ""]
        for r in warned:
            for w in r["warnings"]:
                lines.append(f"- {r['dataset']}/{r['class']} {r['run']}: {w}")
    skipped = {ds: v for ds, v in doc.get("skipped", {}).items() if v}
    if skipped:
        lines += ["", "## Not run", ""]
        for ds, v in sorted(skipped.items()):
            if "error" in v and isinstance(v["error"], str):
                lines.append(f"- {ds}: {v['error']}")
                continue
            for cls, reason in sorted(v.items()):
                lines.append(f"- {ds}/{cls}: {reason}")
    m = doc["machine"]
    lines += ["", f"Machine: {m.get('cpu_count')} cores, Python {m.get('python')}, numpy "
              f"{m.get('numpy')}, scipy {m.get('scipy')}, highspy {m.get('highspy')}, "
              f"PyMaxflow {m.get('PyMaxflow')}; {m.get('platform')}. Updated "
              f"{doc.get('updated', '-')}."]
    if doc.get("warnings"):
        lines += [""] + [f"- Warning: {w}" for w in doc["warnings"]]
    return "\n".join(lines) + "\n"
