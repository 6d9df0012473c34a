"""The grid of fits (``lodo.py run``): every method at every C and setting, resumable."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from segstruct.cluster import parallel_map
from segstruct.datasets import VOCDataset
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.topdown.detector import DetectorParams
from segstruct.features.topdown.training import TooFewObjects
from segstruct.io.files import write_json
from segstruct.io.provenance import code_version, machine
from segstruct.learn.methods import estimator_for

from lodolib.examples import _examples
from lodolib.settings import (FOLD_SETTINGS, GRID, IOU_METHODS, MACHINE, METHODS, OTHER_SETTINGS,
                              SETTINGS, TOP_DOWN, feature_config, plan, planned_features)


def _key(r) -> tuple:
    return (r["dataset"], r["class"], r["method"], r["top_down"], r["sift_norm"], r["scope"],
            float(r["C"]))


def _done(path: Path) -> set:
    if not path.exists():
        return set()
    return {_key(json.loads(line)) for line in path.read_text().splitlines() if line.strip()}


def features_task(root: Path, td: str, class_name: str, n_jobs: int = 1,
                  features: str = "as-given", test_split: str | None = None) -> str | None:
    """Compute (and cache) one setting's features of a class: None, or why not."""
    try:
        for split in ("train", "val", *([test_split] if test_split else [])):
            _examples(root, td, "l1", class_name, split, n_jobs, features)
    except TooFewObjects as err:
        return str(err)
    return None


def calibrate(Xt, Yt, Xv, width: int) -> None:
    """Each top-down column mapped, in place, to sigma(a x + b) - sigma(b),
    a and b fitted by logistic regression of the training superpixels'
    targets on their (held-out) block values: a detector score becomes a
    probability of foreground, and no score stays 0."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit
    x_all = np.concatenate([g.unary[:, -width:] for g in Xt])
    t = np.concatenate([(y[:, 0] > y[:, 1]).astype(float) for y in Yt])
    maps = []
    for f in range(width):
        x = x_all[:, f]

        def loss(p):
            z = p[0] * x + p[1]
            value = -np.sum(t * log_expit(z) + (1 - t) * log_expit(-z)) + 1e-6 * p @ p
            r = expit(z) - t
            return value, np.array([r @ x, r.sum()]) + 2e-6 * p
        a, b = minimize(loss, np.zeros(2), jac=True, method="L-BFGS-B").x
        maps.append((a, b))
    for g in [*Xt, *Xv]:
        u = g.unary.copy()
        for f, (a, b) in enumerate(maps):
            u[:, u.shape[1] - width + f] = expit(a * u[:, u.shape[1] - width + f] + b) - expit(b)
        g.unary = u


def ensemble_scorer(root: Path, td: str, norm: str, class_name: str, split: str,
                    features: str, runs: int):
    """A function of a fitted estimator that gives a split's VOC IoU % with
    each image labelled as ``segstruct predict`` labels it: an ensemble of
    ``runs`` superpixelisations (:mod:`segstruct.ensemble`), scored on the
    image's pixels against its mask, void excluded. The runs' graphs and
    the masks are made once, here."""
    from types import SimpleNamespace

    from segstruct.datasets import class_index
    from segstruct.datasets.voc import VOID_LABEL
    from segstruct.ensemble import member_labels, superpixel_variants
    from segstruct.evaluate.scoring import VOCScore, pixel_confusion
    if (root / "EXPORTED").exists():
        raise SystemExit("--ensemble needs the images: give --data the data sets, not "
                         "exported arrays")
    dataset = VOCDataset(root)
    config = feature_config(td, norm, features)
    ids = dataset.ids(split)
    graphs = FeatureExtractor(dataset, config, progress=False).variant_graphs(
        ids, [c.superpixels for c in superpixel_variants(config, runs)],
        class_name if config.detector is not None else None)
    label = class_index(class_name)
    truths = [dataset.read_mask(i) for i in ids]

    def score(estimator) -> float:
        model = SimpleNamespace(estimator=estimator, label=1)
        voc = VOCScore()
        for image_runs, truth in zip(graphs, truths):
            labels = member_labels([model], [[g] for g in image_runs])
            voc.add(*pixel_confusion(labels == 1, truth == label, truth == VOID_LABEL))
        return 100 * voc.iou
    return score


def walk_task(root: Path, class_name: str, method: str, setting, grid,
              features: str = "as-given", test_split: str | None = None,
              ensemble: int = 1) -> list[dict]:
    """Fit one method along the grid of C (warm-started) on one setting's
    features; a record per C (with ``test_iou``, the IoU on ``test_split``,
    when one is given, and with ``ensemble`` > 1 the same scores of the
    masks of that ensemble in ``val_iou_ensemble`` and ``test_iou_ensemble``)."""
    td, norm, scope = setting
    base = td[:-len("-cal")] if td.endswith("-cal") else td
    Xt, Yt = _examples(root, base, norm, class_name, "train", features=features)
    Xv, Yv = _examples(root, base, norm, class_name, "val", features=features)
    Xs, Ys = (_examples(root, base, norm, class_name, test_split, features=features)
              if test_split else ([], []))
    if base != td:
        if ensemble > 1:
            raise ValueError("the calibrated block has no ensemble scores")
        calibrate(Xt, Yt, [*Xv, *Xs], DetectorParams().n_filters)
    scorers = {}
    if ensemble > 1:
        scorers = {f"{'val' if split == 'val' else 'test'}_iou_ensemble":
                   ensemble_scorer(root, base, norm, class_name, split, features, ensemble)
                   for split in ("val", *([test_split] if test_split else []))}
    est = estimator_for(method, scope=scope)
    est.warm_start = True
    out = []
    for C in grid:
        est.C = C
        start = time.perf_counter()
        est.fit(Xt, Yt)
        out.append({
            "dataset": root.name, "class": class_name, "method": method, "top_down": td,
            "sift_norm": norm, "scope": scope, "C": float(C), "C_units": est.C_units,
            "folds": TOP_DOWN[td].get("top_down_folds"),
            "train_iou": 100 * est.score(Xt, Yt), "val_iou": 100 * est.score(Xv, Yv),
            **({"test_split": test_split, "test_iou": 100 * est.score(Xs, Ys)}
               if test_split else {}),
            **({"ensemble": ensemble} if scorers else {}),
            **{key: score(est) for key, score in scorers.items()},
            "n_iter": int(est.n_iter_), "converged": bool(est.converged_),
            "fit_seconds": float(est.fit_seconds_), "wall_seconds": time.perf_counter() - start,
            "gap": float(est.gap_), "svm_C": float(est.svm_C_), "code_version": code_version(),
            "machine": MACHINE})
    return out

def _classes(args) -> dict:
    """Per data set, the classes to fit: those exported, or the plan's
    (``--min-images``), narrowed to ``--classes``."""
    if (Path(args.data) / args.datasets[0] / "EXPORTED").exists():
        classes = {d: sorted({p.name.split(".")[0] for p in (Path(args.data) / d).glob("*.npz")}
                             - {"train", "val"}) for d in args.datasets}
    else:
        classes = plan(Path(args.data), args.datasets, args.min_images)
    if args.classes:
        classes = {d: [c for c in names if f"{d}:{c}" in args.classes]
                   for d, names in classes.items()}
    return classes


def _check_and_write_plan(out: Path, args, classes: dict) -> None:
    """Refuse a folder whose fits were made otherwise, then record this run's plan."""
    made_with = planned_features(out, default=args.features)
    if made_with != args.features:
        raise SystemExit(f"{out} holds fits on --features {made_with}; give that, or "
                         f"another --out for --features {args.features}")
    earlier = json.loads((out / "plan.json").read_text()) if (out / "plan.json").exists() \
        else {}
    # a finished fit is not run again, so fits scored otherwise would mix
    for key, option, given, none in (("test_split", "--test-split", args.test_split, None),
                                     ("ensemble", "--ensemble", args.ensemble, 1)):
        made = earlier.get(key, none) if earlier else given
        if made != given:
            was, wanted = (f"{option} {v}" if v != none else f"no {option}"
                           for v in (made, given))
            raise SystemExit(f"{out} holds fits made with {was}; give that, or another "
                             f"--out for {wanted}")
    write_json(out / "plan.json", {"classes": classes, "grid": list(GRID),
                                   "features": args.features, "test_split": args.test_split,
                                   "ensemble": args.ensemble, "machine": machine(),
                                   "code_version": code_version()})


def _make_features(args, classes: dict, settings) -> dict:
    """Make the features, one data set and block at a time, on workers; the
    (data set, class, block) whose block could not be made, with why."""
    skipped = {}
    for name, names in classes.items():
        root = Path(args.data) / name
        for td in sorted({s[0] for s in settings} - {"folds-cal"}):
            if len(names) >= args.n_jobs:        # a class a worker
                why = parallel_map(features_task, [(root, td, c, 1, args.features,
                                                    args.test_split)
                                                   for c in names], args.n_jobs)
            else:                                # the workers on each class in turn
                why = [features_task(root, td, c, args.n_jobs, args.features, args.test_split)
                       for c in names]
            skipped.update({(name, c, td): w for c, w in zip(names, why) if w})
    return skipped


def _walks(args, classes: dict, settings, skipped: dict, done: set) -> list[tuple]:
    """The walk_task arguments of every walk along the grid with a fit not yet done."""
    tasks = []
    for name, names in classes.items():
        for c in names:
            for setting in settings:
                fold_count = setting[0] in ("folds2", "folds5")
                if (name, c, setting[0].replace("-cal", "")) in skipped or (
                        fold_count and name not in args.fold_datasets):
                    continue
                for m in args.methods:
                    if setting[2] == "image" and (m not in IOU_METHODS or (
                            m == "proposed" and setting[0] != "off")):
                        continue
                    if m not in METHODS[:3] and setting not in OTHER_SETTINGS:
                        continue
                    grid = [C for C in GRID if (name, c, m, *setting, C) not in done]
                    if grid:
                        tasks.append((Path(args.data) / name, c, m, setting, list(GRID),
                                      args.features, args.test_split, args.ensemble))
    return tasks


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = out / "runs.jsonl"
    classes = _classes(args)
    _check_and_write_plan(out, args, classes)
    settings = [s for s in SETTINGS + FOLD_SETTINGS
                if s[0].replace("-cal", "") in args.top_down
                and (not args.settings or "/".join(s) in args.settings)]
    skipped = _make_features(args, classes, settings)
    write_json(out / "skipped.json", [{"dataset": d, "class": c, "top_down": td, "why": w}
                                      for (d, c, td), w in skipped.items()])
    done = _done(runs)
    tasks = _walks(args, classes, settings, skipped, done)
    print(f"{len(tasks)} walks of {len(GRID)} fits to run", flush=True)
    # the paper's methods first; the slowest last would leave a worker idle:
    # proposed and CamVid first among them
    tasks.sort(key=lambda t: (METHODS.index(t[2]) > 2, t[2] != "proposed",
                              t[0].name != "camvid_voc"))
    start = time.perf_counter()
    # each walk's records are written as soon as it ends (in any order), so a
    # run stopped by a time limit keeps every finished walk
    runner = Parallel(n_jobs=args.n_jobs, return_as="generator_unordered")
    with runs.open("a") as f:
        for k, records in enumerate(runner(delayed(walk_task)(*t) for t in tasks)):
            for r in records:
                if _key(r) not in done:
                    f.write(json.dumps(r) + "\n")
            f.flush()
            last = records[-1]
            print(f"[{k + 1}/{len(tasks)}] {time.perf_counter() - start:.0f} s: "
                  f"{last['dataset']} {last['class']} {last['method']} {last['top_down']} "
                  f"{last['sift_norm']} {last['scope']}", flush=True)
