"""What a run writes: the JSON document (settings, measurements, targets) and
the Markdown file (targets, then the per-image table)."""
from __future__ import annotations

from benchlib.cases import BASELINE
from benchlib.instances import PIXEL_LAMBDA
from benchlib.measure import BOUND_TOL, EXACT_RTOL
from benchlib.run import m_values, scope_on
from benchlib.targets import GOALS, OBJECTIVE_RTOL, TARGET_MEASURES


def settings(args, cases: dict) -> dict:
    """The run's settings as the JSON records them."""
    return {
        "data_sets": [{"name": n, "class": c} for n, c in args.data_sets],
        "split": args.split, "n_images": None if args.full else args.images,
        "full": args.full, "seed": args.seed, "repeats": args.repeats,
        "timer": args.timer, "m_values": m_values(args),
        "lp_m": args.lp_triangles or None, "C": args.C,
        "loss": {n: c.loss for n, c in cases.items()},
        "unary_only": [n for n, c in cases.items() if c.unary_only],
        "node_weights": "count", "blas_threads": 1, "warmup": True,
        "gc_disabled_while_timing": True,
        "timed": {n: c.timed for n, c in cases.items()},
        "fresh_oracle_per_call": True,
        "exact_reference": "milp_oracle on the same u, p, t, a and loss "
                           "(p = 0 for unary-only cases)",
        "exact_rtol": EXACT_RTOL, "bound_tol": f"{BOUND_TOL} * max(1, |exact|)",
        "baseline": BASELINE,
        "targets": _target_settings(args)}


def _target_settings(args) -> dict:
    return {
        "goals": {n: {"goal": g, "met_when": f"value {op} goal"}
                  for n, (g, op) in GOALS.items()},
        "measures": TARGET_MEASURES,
        "objective_rtol": OBJECTIVE_RTOL,
        "random": {"n": args.random, "n_nodes": 50, "degree": 4, "seed": args.seed,
                   "unaries": "N(0, 1)", "pairwise": "-Uniform(0, 1)",
                   "targets": "P(1) = 0.3; every 10th instance all background",
                   "node_weights": "count (1)", "repeats": 1},
        "scope_data_set": {"name": args.scope_data_set[0],
                           "class": args.scope_data_set[1]} if scope_on(args) else None,
        "pixel_images": args.pixel_images,
        "pixel_timeout_s": args.pixel_timeout or None,
        "pixel_grid": {"unary": "BL1 superpixel unary / superpixel pixel count",
                       "pairwise": "-lambda exp(-||Lab_i - Lab_j||^2 / (2 sigma^2))",
                       "lambda": f"{PIXEL_LAMBDA} * median |u_pixel|",
                       "sigma^2": "mean ||Lab_i - Lab_j||^2 over the grid's pairs",
                       "targets": "class pixels; weight 0 on void, else 1",
                       "choice": "first images of a seeded order of the split "
                                 "that contain the class"}}


def document(args, cases: dict, m, inputs: dict, targets: list, seconds: float) -> dict:
    """The JSON document of a run; ``m`` is its ``run.Measurements``."""
    from segstruct.io.provenance import code_version, machine
    return {
        "code_version": code_version(), "machine": machine(),
        "settings": settings(args, cases),
        "models": m.models,
        "targets": targets,
        "target_measurements": inputs,
        "per_image": m.per_image,
        "summary": m.summaries,
        "random": None if m.random_block is None else {
            "per_instance": m.random_block, "summary": m.summaries["random50"]},
        "run_seconds": seconds,
    }


def markdown(args, table: str, ttable: str, targets: list, seconds: float) -> str:
    """The Markdown file: a head line, the targets, the per-image table, a note."""
    from segstruct.io.provenance import code_version
    head = (f"Loss-augmented inference per image ({args.split} split, "
            f"{'all' if args.full else args.images} images per data set, seed {args.seed}; "
            f"{args.timer} of {args.repeats} calls; code {code_version()}; run "
            f"{seconds:.0f} s). `python scripts/bench_inference.py`\n\n")
    targets_md = ("## Targets (issue 7)\n\n" + ttable + "\n"
                  + "".join(f"- `{t['name']}`: {t['detail']}. Measured: "
                            f"{TARGET_MEASURES[t['name']]}.\n" for t in targets)
                  + "\n## Per image\n\n")
    note = ("\nEach call gets a fresh oracle. The proposed_* rows time the triangle LPs "
            "only (the triangulation is built before the call); triangulation_M* rows "
            "time building it alone, cold. bl2 solves the unary-only problem (p = 0) and "
            "is compared with the MILP on that problem. 'exact': relative gap to the "
            f"MILP optimum <= {EXACT_RTOL:g}; last column: images whose reported upper "
            "bound is below the exact optimum / images with a bound. random50: "
            f"{args.random} seeded random 50-node instances (about 4-regular, u ~ N(0, 1), "
            "p ~ -U(0, 1), P(t = 1) = 0.3, every 10th all background), one call each; "
            "'overall' is over the real images only.\n")
    return head + targets_md + table + note
