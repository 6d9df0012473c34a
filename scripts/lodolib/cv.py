"""Cross-validation of C at chosen settings (``lodo.py cv``)."""
from __future__ import annotations

import json
import time
from pathlib import Path

from segstruct.cluster import parallel_map
from segstruct.io.provenance import code_version, machine
from segstruct.learn.methods import DEFAULTS, TrainingSettings
from segstruct.learn.selection import DEFAULT_FOLD_TOL
from segstruct.workflow import cross_validate

from lodolib.choice import _cv_setting, _records
from lodolib.examples import _examples
from lodolib.extension import cv_extend_file, extended_fits
from lodolib.settings import GRID, METHODS, planned_features


def cv_task(root: Path, class_name: str, method: str, setting, grid, folds,
            groups=None, features: str = "as-given",
            fold_tol: float = DEFAULT_FOLD_TOL, extend: int = 0,
            test_split: str | None = None) -> dict:
    """One cross-validation of C as ``train --C auto`` runs it (with the grid
    extended past its ends, at most ``extend`` steps a side, and then the
    refits of :func:`lodolib.extension.extended_fits`, scored on val and
    ``test_split``)."""
    td, norm, scope = setting
    Xt, Yt = _examples(root, td, norm, class_name, "train", features=features)
    start = time.perf_counter()
    # the library's cross-validation of C, as train --C auto runs it
    settings = TrainingSettings(scope=scope, C="auto", C_grid=tuple(grid), folds=folds,
                                cv_tol=fold_tol, C_extend=extend)
    curve = cross_validate(settings, method, Xt, Yt, groups=groups)
    seconds = time.perf_counter() - start
    refits = extended_fits(root, class_name, method, setting, curve, features, test_split)
    return {"dataset": root.name, "class": class_name, "method": method, "top_down": td,
            "sift_norm": norm, "scope": scope, "chosen_C": curve["chosen_C"], "curve": curve,
            "fold_tol": fold_tol, "seconds": seconds,
            **({"C_extend": extend, "extended_fits": refits} if extend else {}),
            "code_version": code_version(), "machine": machine(),
            **({"fold_groups": "id-prefix"} if groups is not None else {})}


def cv_file(out: Path, grouped: bool, fold_tol: float) -> Path:
    """Where ``cv`` writes: cv.jsonl (cv_grouped.jsonl) for folds at the
    library's tol at every C, as every cross-validation before ``--cv-tol``
    existed; cv_tol-TOL.jsonl (cv_grouped_tol-TOL.jsonl) for another."""
    name = "cv_grouped" if grouped else "cv"
    return out / (f"{name}.jsonl" if fold_tol == DEFAULTS.tol else f"{name}_tol-{fold_tol:g}.jsonl")


def id_prefix_groups(data: Path, dataset: str, folds: int) -> list[str] | None:
    """The training images' ids up to their first "_" (a CamVid id names its
    video sequence so), or None where that gives fewer groups than folds."""
    ids = (data / dataset / "ImageSets" / "Segmentation" / "train.txt").read_text().split()
    groups = [i.split("_")[0] for i in ids]
    return groups if len(set(groups)) >= folds else None


def cv(args) -> None:
    """3-fold cross-validation of C (``--C auto``) at each of ``--cv-settings``
    for bl1, bl2 and proposed on every class; with ``--fold-groups
    id-prefix``, folds that keep each id prefix together (into
    cv_grouped.jsonl), on the data sets where that makes enough groups; with
    ``--C-extend K``, the grid extended past its ends (into
    cv_tol-TOL_extend-K.jsonl, with the refits at the C it added)."""
    out = Path(args.out)
    records = _records(out)
    plan = json.loads((out / "plan.json").read_text())
    classes = plan["classes"]
    args.features = planned_features(out)
    grouped = args.fold_groups == "id-prefix"
    path = cv_file(out, grouped, args.cv_tol)
    if args.C_extend:
        if grouped:
            raise SystemExit("--C-extend: with folds by image only (no --fold-groups)")
        path = cv_extend_file(out, args.cv_tol, args.C_extend)
    done = set()
    if path.exists():
        done = {(r["dataset"], r["class"], r["method"], _cv_setting(r)) for r in
                map(json.loads, path.read_text().splitlines())}
    settings = [tuple(x.split("/")) for x in args.cv_settings]
    tasks = []
    for d, names in classes.items():
        groups = id_prefix_groups(Path(args.data), d, 3) if grouped else None
        if grouped and groups is None:
            continue
        tasks += [(Path(args.export_root or args.data) / d, c, m, s, list(GRID), 3, groups,
                   args.features, args.cv_tol, args.C_extend, plan.get("test_split"))
                  for c in names for m in METHODS[:3] for s in settings
                  if (d, c, m, s) not in done
                  and any(r["dataset"] == d and r["class"] == c for r in records)]
    print(f"{len(tasks)} cross-validations to run", flush=True)
    with path.open("a") as f:
        for r in parallel_map(cv_task, tasks, args.n_jobs):
            f.write(json.dumps(r) + "\n")
            f.flush()
