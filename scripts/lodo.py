"""Defaults chosen on held-out data sets: leave one data set out.

A default chosen and judged on the same data over-fits the data. This script
evaluates a grid of settings on every class of every shared data set, then,
for each data set D in turn, chooses each method's default on the *other*
data sets and scores it on D, beside the best setting of the grid on D:

    python scripts/lodo.py export --to DIR     # the features as arrays, once (optional)
    python scripts/lodo.py run                 # the grid: hours on 2 cores, resumable
    python scripts/lodo.py cv                  # --C auto at the plain and cross-fitted blocks
    python scripts/lodo.py cv --fold-groups id-prefix   # ... with folds by video sequence
    python scripts/lodo.py table               # out/lodo/table.md and table.json

out/lodo was made with Felzenszwalb superpixels on images as given
(``--features as-given``, the default of ``run`` so that it resumes alike);
out/lodo/defaults with the library's feature defaults, on the main
classes and settings only:

    python scripts/lodo.py run --features defaults --out out/lodo/defaults \
        --top-down off plain folds --methods bl1 bl2 proposed \
        --settings off/l1/dataset plain/l1/dataset folds/l1/dataset \
        --classes camvid_voc:car camvid_voc:person coco128panoptic_voc:person \
                  coco128panoptic_voc:diningtable pennfudan_voc:person weizmann_horse_voc:horse
    python scripts/lodo.py cv --out out/lodo/defaults --cv-settings folds/l1/dataset \
        --cv-tol 0.001          # cv.jsonl: every fold fit at tol 0.001, as before --cv-tol
    python scripts/lodo.py cv --out out/lodo/defaults --cv-settings folds/l1/dataset
    python scripts/lodo.py table --out out/lodo/defaults

CamVid's val split is one clip (101 frames) of a sequence that 204 training
frames come from; its test split holds the 62 frames that follow the
training frames of another sequence and 171 of a sequence no training frame
comes from. Its fits made again and scored on the test split too
(``--test-split``), with their cross-validation, for the table's section
that scores the held-out CamVid on its test split:

    python scripts/lodo.py run --features defaults --out out/lodo/defaults/test_split \
        --datasets camvid_voc --top-down off plain folds --methods bl1 bl2 proposed \
        --settings off/l1/dataset plain/l1/dataset folds/l1/dataset --test-split test
    python scripts/lodo.py cv --out out/lodo/defaults/test_split \
        --cv-settings folds/l1/dataset --cv-tol 0.001
    python scripts/lodo.py table --out out/lodo/defaults    # reads test_split/ too

``predict`` and ``evaluate`` label with an ensemble of superpixelisations by
default (segstruct.ensemble); ``--ensemble K`` scores every fit both ways,
by its graph cut and by the ensemble's masks, for the table's section
that compares the default with the best both ways (CamVid's fits so far):

    python scripts/lodo.py run --features defaults --out out/lodo/defaults/ensemble \
        --datasets camvid_voc --top-down off plain folds --methods bl1 bl2 proposed \
        --settings off/l1/dataset plain/l1/dataset folds/l1/dataset --ensemble 5 -j 2
    python scripts/lodo.py table --out out/lodo/defaults    # reads ensemble/ too

The grid (``run``): for every data set under ``--data`` and every class with
at least ``--min-images`` training images showing it (the soak's rule), every
method of ``--methods`` is trained on the train split at every C of ``GRID``
(superpixel units, warm-started along the grid) for every feature setting of
``SETTINGS`` (the top-down block off, plain, or cross-fitted with the folds'
or the whole split's detector for other images; bag of words L1 or square
root; the per-image loss scope for the IoU methods), and scored on train and
val. One JSON line per fit goes to ``OUT/runs.jsonl`` (resume: finished fits
are not run again). ``cv`` adds the 3-fold cross-validation of C (``--C
auto``) of bl1, bl2 and proposed at ``--cv-settings``, with its cost, into
``OUT/cv.jsonl`` (``cv_grouped.jsonl`` with ``--fold-groups``). ``table``
writes the leave-one-out tables (``--C auto`` at the library's block, and
the block, or the block and a fixed C, chosen on the other data sets), the
per-class table at the library's defaults (train and val IoU side by side,
against the bottom-up results at the earlier C of out/soak), the
cross-fitting table, the choice of the fold count, how far the methods'
best C agree, and the cross-validations.

A data set's score is the mean val IoU over its classes; a setting's score
on several data sets is the mean of theirs, so that COCO's seven classes do
not outvote the single classes of the other sets.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

sys.path.insert(0, str(Path(__file__).resolve().parent))

from segstruct.cluster import parallel_map  # noqa: E402
from segstruct.datasets import VOCDataset  # noqa: E402
from segstruct.features.config import FeatureConfig  # noqa: E402
from segstruct.features.extraction import FeatureExtractor  # noqa: E402
from segstruct.features.superpixels import SuperpixelParams  # noqa: E402
from segstruct.features.topdown.detector import DetectorParams  # noqa: E402
from segstruct.features.topdown.training import TooFewObjects  # noqa: E402
from segstruct.io.files import write_json, write_text  # noqa: E402
from segstruct.io.provenance import code_version, machine  # noqa: E402
from segstruct.learn.methods import DEFAULTS, estimator_for  # noqa: E402
from segstruct.learn.selection import (DEFAULT_FOLD_TOL, next_C_after_refit,  # noqa: E402
                                       select_C)
from segstruct.report.tables import fmt  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Where a fit ran (its seconds are that machine's).
_HERE = machine(versions=True)
MACHINE = f"{_HERE['cpu_count']} cores, Python {_HERE['python']}, numpy {_HERE['numpy']}"
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
DATASETS = ("camvid_voc", "coco128panoptic_voc", "pennfudan_voc", "weizmann_horse_voc")
METHODS = ("bl1", "bl2", "proposed", "lovasz", "projection")
IOU_METHODS = ("bl2", "proposed")
#: C in superpixel units, a factor of about 3 apart (square-rooted words are
#: about ten times the L1 ones, and want a C about ten times smaller). C 10
#: was dropped after the first walks: the best C nowhere, and the slowest fits
#: (proposed on CamVid car: 55-165 s of a walk's 150-470 s).
GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
#: The top-down block of each feature setting: FeatureConfig keyword arguments.
TOP_DOWN = {
    "off": {"detector": None},
    "plain": {"detector": DetectorParams(), "top_down_folds": 1},
    "folds": {"detector": DetectorParams(), "top_down_folds": 3, "top_down_detector": "folds"},
    "whole": {"detector": DetectorParams(), "top_down_folds": 3, "top_down_detector": "whole"},
    "folds2": {"detector": DetectorParams(), "top_down_folds": 2, "top_down_detector": "folds"},
    "folds5": {"detector": DetectorParams(), "top_down_folds": 5, "top_down_detector": "folds"},
    # the folds' block, each column calibrated on the training images' held-out
    # blocks (calibrate): measured here, not a library setting
    "folds-cal": {"detector": DetectorParams(), "top_down_folds": 3,
                  "top_down_detector": "folds"},
}
#: The settings of the grid: (top-down block, bag-of-words norm, loss scope).
#: Square-rooted words with the block off and cross-fitted only (with the
#: plain and whole-split blocks they were 12-14 points below L1 words on
#: CamVid car); the per-image scope for bl2 both ways, for proposed (whose
#: per-image oracle calls cost most) with the block off.
SETTINGS = (("off", "l1", "dataset"), ("off", "sqrt", "dataset"),
            ("plain", "l1", "dataset"), ("folds", "l1", "dataset"),
            ("folds", "sqrt", "dataset"), ("whole", "l1", "dataset"),
            ("folds-cal", "l1", "dataset"), ("off", "l1", "image"), ("folds", "l1", "image"))
#: Measured on some data sets only, for the choice of the fold count.
FOLD_SETTINGS = (("folds2", "l1", "dataset"), ("folds5", "l1", "dataset"))
#: The settings of the other learners (each fit starts afresh): the block off
#: or cross-fitted, L1 words.
OTHER_SETTINGS = (("off", "l1", "dataset"), ("folds", "l1", "dataset"))


def setting_name(setting) -> str:
    td, norm, scope = setting
    return "/".join([f"top-down {td}", f"words {norm}"] + ([f"scope {scope}"]
                                                           if scope != "dataset" else []))


#: The feature settings under the grid's (``--features``): the library's
#: defaults (SLIC superpixels at the working resolution), or those
#: out/lodo was made with before either existed: the paper's Felzenszwalb
#: superpixels on images as given.
FEATURES = {
    "defaults": {},
    "as-given": {"long_side": None, "superpixels": SuperpixelParams(method="felzenszwalb")},
}


def feature_config(td: str, norm: str, features: str = "as-given") -> FeatureConfig:
    return FeatureConfig(sift_norm=norm, **FEATURES[features], **TOP_DOWN[td])


def plan(data: Path, datasets, min_images: int) -> dict:
    """Per data set, the classes the grid covers (topdown_table's rule)."""
    from topdown_table import plan as class_plan
    return {name: class_plan(data / name, min_images)["classes"] for name in datasets}


# ------------------------------------------------------------------------- export
# The grid's fits need only the graphs and their counts: ``export`` writes them
# (from the cache) as compact arrays that travel to a machine without the
# images, where ``run --data FOLDER`` reads them instead of the data sets.

def _export_graphs(graphs, path: Path) -> None:
    from scipy import sparse
    n_words = FeatureConfig().n_words
    unary = np.concatenate([g.unary for g in graphs])
    words = sparse.csr_matrix(unary[:, :n_words])          # exact: float64
    np.savez_compressed(
        path, nodes=np.array([g.unary.shape[0] for g in graphs]),
        n_edges=np.array([len(g.edges) for g in graphs]),
        words_data=words.data, words_indices=words.indices.astype(np.int32),
        words_indptr=words.indptr.astype(np.int64), dense=unary[:, n_words:],
        edges=np.concatenate([g.edges for g in graphs]),
        pairwise=np.concatenate([g.pairwise for g in graphs]))


def export(args) -> None:
    """The graphs (bottom-up, words L1) of each data set's splits as
    TO/<data set>/<split>.npz, and each planned class's pixel counts and
    top-down blocks as TO/<data set>/<class>.<split>.npz."""
    to = Path(args.to)
    classes = plan(Path(args.data), args.datasets, args.min_images)
    width = DetectorParams().n_filters
    for name, names in classes.items():
        root = Path(args.data) / name
        (to / name).mkdir(parents=True, exist_ok=True)
        (to / name / "EXPORTED").write_text("arrays of scripts/lodo.py export\n")
        for split in ("train", "val"):
            for k, c in enumerate(names):
                X, Y = _examples(root, "off", "l1", c, split)
                if k == 0:
                    _export_graphs(X, to / name / f"{split}.npz")
                blocks = {}
                for td in args.top_down:
                    if td == "off":
                        continue
                    try:
                        Xt, _ = _examples(root, td, "l1", c, split)
                    except TooFewObjects:
                        continue
                    blocks[f"block_{td}"] = np.concatenate([g.unary[:, -width:] for g in Xt])
                np.savez_compressed(to / name / f"{c}.{split}.npz",
                                    counts=np.concatenate(Y), **blocks)
        print(f"exported {name}: {', '.join(names)}", flush=True)


def _exported(root: Path, td: str, norm: str, class_name: str, split: str):
    """``_examples`` from the arrays of ``export``."""
    from scipy import sparse

    from segstruct.features.descriptors import normalise_words
    from segstruct.model import Graph
    with np.load(root / f"{split}.npz") as f:
        a = {k: f[k] for k in f.files}
    with np.load(root / f"{class_name}.{split}.npz") as f:
        a.update({k: f[k] for k in f.files})
    if td != "off" and f"block_{td}" not in a:
        raise TooFewObjects(f"{root.name}/{class_name}: no {td} block was exported")
    n_words = FeatureConfig().n_words
    words = sparse.csr_matrix((a["words_data"], a["words_indices"], a["words_indptr"]),
                              shape=(a["dense"].shape[0], n_words)).toarray()
    unary = np.hstack([words, a["dense"]] + ([a[f"block_{td}"]] if td != "off" else []))
    unary = normalise_words(unary, feature_config(td, norm))
    X, Y, start, e0 = [], [], 0, 0
    for n, e in zip(a["nodes"], a["n_edges"]):
        X.append(Graph(unary[start:start + n], a["edges"][e0:e0 + e], a["pairwise"][e0:e0 + e]))
        Y.append(a["counts"][start:start + n])
        start, e0 = start + n, e0 + e
    return X, Y


# ---------------------------------------------------------------------------- run

def _key(r) -> tuple:
    return (r["dataset"], r["class"], r["method"], r["top_down"], r["sift_norm"], r["scope"],
            float(r["C"]))


def _done(path: Path) -> set:
    if not path.exists():
        return set()
    return {_key(json.loads(line)) for line in path.read_text().splitlines() if line.strip()}


def _examples(root: Path, td: str, norm: str, class_name: str, split: str, n_jobs: int = 1,
              features: str = "as-given"):
    """(graphs, pixel counts) of a split: from the exported arrays when
    ``root`` is such a folder (``export``), else from the data set."""
    if (root / "EXPORTED").exists():
        return _exported(root, td, norm, class_name, split)
    extractor = FeatureExtractor(VOCDataset(root), feature_config(td, norm, features),
                                 n_jobs=n_jobs, progress=False)
    ex = extractor.examples(split, class_name)
    return [e.graph for e in ex], [e.pixel_counts for e in ex]


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
    from segstruct.ensemble import run_labels, superpixel_variants
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
            labels = run_labels([model], [[g] for g in image_runs])
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


FEATURE_NOTES = {
    "as-given": "Every image was worked on as given (`--long-side none`) and cut into "
                "Felzenszwalb superpixels: the table was made before the working resolution "
                "(which leaves CamVid's images as they are and enlarges the horses' and "
                "Penn-Fudan's) and before SLIC became the default (docs/results.md).",
    "defaults": "Features at the library's defaults: SLIC superpixels (80 segments, "
                "compactness 20) at the working resolution.",
}


def planned_features(out: Path, default: str = "as-given") -> str:
    """The ``--features`` a results folder's fits were made with (folders
    made before the option: images as given)."""
    path = out / "plan.json"
    if not path.exists():
        return default
    return json.loads(path.read_text()).get("features", "as-given")


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = out / "runs.jsonl"
    if (Path(args.data) / args.datasets[0] / "EXPORTED").exists():
        classes = {d: sorted({p.name.split(".")[0] for p in (Path(args.data) / d).glob("*.npz")}
                             - {"train", "val"}) for d in args.datasets}
    else:
        classes = plan(Path(args.data), args.datasets, args.min_images)
    if args.classes:
        classes = {d: [c for c in names if f"{d}:{c}" in args.classes]
                   for d, names in classes.items()}
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
    settings = [s for s in SETTINGS + FOLD_SETTINGS
                if s[0].replace("-cal", "") in args.top_down
                and (not args.settings or "/".join(s) in args.settings)]
    skipped = {}
    # features first, one data set and setting at a time, on workers
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
    write_json(out / "skipped.json", [{"dataset": d, "class": c, "top_down": td, "why": w}
                                      for (d, c, td), w in skipped.items()])
    done = _done(runs)
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


# ----------------------------------------------------------------------------- cv

def cv_task(root: Path, class_name: str, method: str, setting, grid, folds,
            groups=None, features: str = "as-given",
            fold_tol: float = DEFAULT_FOLD_TOL) -> dict:
    td, norm, scope = setting
    Xt, Yt = _examples(root, td, norm, class_name, "train", features=features)
    start = time.perf_counter()
    C, curve = select_C(lambda: estimator_for(method, scope=scope), Xt, Yt, grid, folds,
                        groups=groups, fold_tol=fold_tol)
    return {"dataset": root.name, "class": class_name, "method": method, "top_down": td,
            "sift_norm": norm, "scope": scope, "chosen_C": C, "curve": curve,
            "fold_tol": fold_tol, "seconds": time.perf_counter() - start,
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
    cv_grouped.jsonl), on the data sets where that makes enough groups."""
    out = Path(args.out)
    records = _records(out)
    classes = json.loads((out / "plan.json").read_text())["classes"]
    args.features = planned_features(out)
    grouped = args.fold_groups == "id-prefix"
    path = cv_file(out, grouped, args.cv_tol)
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
                   args.features, args.cv_tol)
                  for c in names for m in METHODS[:3] for s in settings
                  if (d, c, m, s) not in done
                  and any(r["dataset"] == d and r["class"] == c for r in records)]
    print(f"{len(tasks)} cross-validations to run", flush=True)
    with path.open("a") as f:
        for r in parallel_map(cv_task, tasks, args.n_jobs):
            f.write(json.dumps(r) + "\n")
            f.flush()


# -------------------------------------------------------------------------- table

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


def c_agreement_lines(records, cvs, setting, methods, min_iou: float = 5.0) -> list[str]:
    """One meaning of C: per class (where some method's val IoU reaches
    ``min_iou``) and method, the C of the grid best on val and the C that
    cross-validation on the training split chose, at ``setting``; and the
    ratio of the largest to the smallest over the methods."""
    lines = ["## One meaning of C", "",
             f"At {setting_name(setting)} (superpixel units), per class with a val IoU of "
             f"at least {min_iou:g} %: the C of the grid best on val, and the C chosen by "
             "3-fold cross-validation on the training split (in brackets the C values "
             "whose pooled held-out IoU is within 1 point of the best), per method; the "
             "last columns: the largest over the smallest C across the methods.", "",
             "| data set | class | " + " | ".join(methods)
             + " | ratio, best on val | ratio, chosen by CV |",
             "|---|---|" + "---|" * len(methods) + "---|---|"]
    classes = sorted({(r["dataset"], r["class"]) for r in records})
    for d, c in classes:
        best_val, chosen, cells = [], [], []
        for m in methods:
            # the grid's C only: a few extra fits (C 10, proposed on two data
            # sets) would make the methods' best C incomparable
            fits = [r for r in records if (r["dataset"], r["class"], r["method"])
                    == (d, c, m) and _setting(r) == tuple(setting) and r["C"] in GRID]
            cv_run = next((r for r in cvs if (r["dataset"], r["class"], r["method"])
                           == (d, c, m) and _cv_setting(r) == tuple(setting)), None)
            if not fits or cv_run is None:
                break
            top = max(fits, key=lambda r: (r["val_iou"], -r["C"]))
            curve = cv_run["curve"]
            scores = curve["pooled_iou_percent"]
            near = [g for g, v in zip(curve["grid"], scores) if v is not None
                    and v >= max(x for x in scores if x is not None) - 1.0]
            best_val.append((top["C"], top["val_iou"]))
            chosen.append(cv_run["chosen_C"])
            cells.append(f"{top['C']:g} / {cv_run['chosen_C']:g} "
                         f"({' '.join(f'{g:g}' for g in near)})")
        else:
            if max(v for _, v in best_val) < min_iou:
                continue
            ratio_val = max(C for C, _ in best_val) / min(C for C, _ in best_val)
            ratio_cv = max(chosen) / min(chosen)
            lines.append(f"| {d} | {c} | " + " | ".join(cells)
                         + f" | {ratio_val:.3g} | {ratio_cv:.3g} |")
    return lines + [""]


def with_refit_guard(cvs, records) -> list[dict]:
    """The cross-validations as the library uses them now: a refit that
    scores IoU 0 on its own training split gives way to the next C by pooled
    held-out IoU (:func:`segstruct.learn.selection.next_C_after_refit`),
    replayed here with the grid's fit at a C standing in for the refit at it
    (the same data, setting and C; only the warm start differs). Each
    record's ``chosen_C`` and curve are updated, with the refused C in
    ``curve["refused"]``, and its ``seconds`` include the refused refits';
    runs recorded before the guard existed thus read as they would run
    today."""
    fits = {(r["dataset"], r["class"], r["method"], _setting(r), r["C"]): r for r in records}
    out = []
    for run in cvs:
        curve = {**run["curve"], "chosen_C": run["chosen_C"]}
        curve.pop("refused", None)
        key = (run["dataset"], run["class"], run["method"], _cv_setting(run))
        seconds = run["seconds"]
        while True:
            fit = fits.get((*key, curve["chosen_C"]))
            if (fit is None or not fit["converged"]
                    or next_C_after_refit(curve, fit["train_iou"]) is None):
                break
            seconds += fit["fit_seconds"]          # the refused refit's time is spent too
        out.append({**run, "chosen_C": curve["chosen_C"], "curve": curve, "seconds": seconds})
    return out


def refused_lines(records, cvs) -> list[str]:
    """The refits the guard refused: where, at which C, and what it took instead."""
    rows = []
    for run in cvs:
        key = (run["dataset"], run["class"], run["method"], _cv_setting(run))
        for refused in run["curve"].get("refused", []):
            C = refused["C"]
            rows.append(f"| {key[0]} | {key[1]} | {key[2]} | {setting_name(key[3])} | {C:g} | "
                        f"{fmt(_cell(records, *key, C))} "
                        f"({fmt(_cell(records, *key, C, 'train_iou'), '.1f')}) | "
                        f"{run['chosen_C']:g} | {fmt(_cell(records, *key, run['chosen_C']))} "
                        f"({fmt(_cell(records, *key, run['chosen_C'], 'train_iou'), '.1f')}) |")
    if not rows:
        return []
    return ["## Refits refused", "",
            "`--C auto` refuses a refit that scores IoU 0 on its own training split and "
            "refits at the next C by pooled held-out IoU (with a pooled IoU above 0); "
            "replayed here on the grid's fits. Val IoU % (train in brackets):", "",
            "| data set | class | method | setting | refused C | val (train) | refit at C "
            "| val (train) |", "|---|---|---|---|---|---|---|---|", *rows, ""]


def _cv_key(r) -> tuple:
    """(data set, class, method, setting) of a cross-validation record."""
    return (r["dataset"], r["class"], r["method"], _cv_setting(r))


def _same_pair(cvs, r):
    """The record of ``cvs`` of ``r``'s pair and setting, or None."""
    return next((t for t in cvs if _cv_key(t) == _cv_key(r)), None)


def fold_tol_lines(out: Path, records, cvs, methods) -> list[str]:
    """The folds' tolerance (``cv --cv-tol``): each cv_tol-TOL.jsonl against
    cv.jsonl (folds at the library's tol at every C): the chosen C, the val
    IoU of the refit there, the folds' iterations and seconds, and the mean
    gaps of the library's default with either."""
    lines: list[str] = []
    for path in sorted(out.glob("cv_tol-*.jsonl")):
        loose = with_refit_guard([json.loads(x) for x in path.read_text().splitlines()],
                                 records)
        tol = loose[0]["fold_tol"] if loose else None
        lines += [f"## The folds' tolerance: {tol:g} x C against {DEFAULTS.tol:g}", "",
                  f"3-fold cross-validation of C (`--C auto`) with the folds' fits at "
                  f"{DEFAULTS.tol:g} for every C (cv.jsonl) and at {tol:g} x C between "
                  f"{DEFAULTS.tol:g} and {tol:g} ({path.name}): the chosen C (after the refit "
                  "guard), val IoU % of the model refitted at it (train in brackets), and the "
                  "folds' iterations and seconds (summed over the grid).", "",
                  f"| data set | class | method | C at {DEFAULTS.tol:g} | val (train) | "
                  f"iterations | seconds | C at {tol:g} x C | val (train) | iterations | "
                  "seconds |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        iters = {m: [0, 0] for m in methods}
        for r in loose:
            key, tight = _cv_key(r), _same_pair(cvs, r)
            if tight is None:
                continue
            cells = []
            for k, run in enumerate((tight, r)):
                v = _cell(records, *key, run["chosen_C"])
                t = _cell(records, *key, run["chosen_C"], "train_iou")
                n = int(np.sum(run["curve"]["n_iter"]))
                if key[2] in iters:
                    iters[key[2]][k] += n
                cells += [f"{run['chosen_C']:g}", f"{fmt(v)} ({fmt(t, '.1f')})", str(n),
                          f"{float(np.sum(run['curve']['fit_seconds'])):.0f}"]
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
        tight_gaps = lodo_auto(records, cvs, methods, LIBRARY_DEFAULT)
        loose_gaps = lodo_auto(records, loose, methods, LIBRARY_DEFAULT)
        lines.append("")
        for m in methods:
            a, b = iters[m]
            if a:
                lines.append(f"- {m}: the folds' iterations {b} against {a} ({b / a:.2f}); "
                             f"mean gap of the library's default "
                             f"{fmt(tight_gaps[m]['mean_gap'])} at {DEFAULTS.tol:g}, "
                             f"{fmt(loose_gaps[m]['mean_gap'])} at {tol:g} x C")
        lines.append("")
    return lines


def grouped_cv_lines(records, cvs, grouped) -> list[str]:
    """Cross-validation with folds by image against folds that keep each id
    prefix (a CamVid video sequence) together: the chosen C and the val IoU
    of the model refitted at it."""
    if not grouped:
        return []
    lines = ["## Folds that keep video sequences together", "",
             "3-fold cross-validation of C with folds dealt by image (`--C auto`) and "
             "with folds of whole id prefixes (a CamVid id names its video sequence; "
             "`cv --fold-groups id-prefix`): the chosen C, and val IoU % (train in "
             "brackets) of the model refitted at it.", "",
             "| data set | class | method | block | folds by image: C | val (train) "
             "| folds by sequence: C | val (train) |", "|---|---|---|---|---|---|---|---|"]
    for g in grouped:
        key, plain = _cv_key(g), _same_pair(cvs, g)
        if plain is None:
            continue
        cells = []
        for run in (plain, g):
            v = _cell(records, *key, run["chosen_C"])
            t = _cell(records, *key, run["chosen_C"], "train_iou")
            cells += [f"{run['chosen_C']:g}", f"{fmt(v)} ({fmt(t, '.1f')})"]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3][0]} | " + " | ".join(cells)
                     + " |")
    return lines + [""]


#: Rules that pick C from a cross-validation curve: the best pooled IoU
#: (``--C auto``), the smallest C within one standard error of the folds at
#: the best, or within 2 % or 5 % of the best pooled IoU.
C_RULES = ("best", "one standard error", "within 2 %", "within 5 %")


def rule_C(curve: dict, rule: str) -> float:
    """The C of the grid that ``rule`` (one of C_RULES) picks from a curve."""
    grid, pooled = curve["grid"], np.asarray(curve["pooled_iou_percent"])
    best = int(np.argmax(pooled))
    if rule == "best":
        # --C auto's own choice (after the refit guard, :func:`with_refit_guard`)
        return curve.get("chosen_C", grid[best])
    if rule == "one standard error":
        folds = np.asarray(curve["fold_iou_percent"][best])
        floor = pooled[best] - folds.std(ddof=1) / np.sqrt(len(folds))
    else:
        floor = pooled[best] * (1 - float(rule.split()[1]) / 100)
    return grid[min(i for i in range(len(grid)) if pooled[i] >= floor)]


def C_rule_lines(records, cvs, methods, setting=LIBRARY_DEFAULT) -> list[str]:
    """Rules that prefer a smaller C than the best of the curve, scored as
    the defaults are: per method and data set, val IoU at each rule's C
    (mean over the classes); then, leaving one data set out, the rule best
    on the other three, and its gap to the best of the grid on the held-out
    set."""
    datasets = sorted({r["dataset"] for r in records})
    val: dict = {}                       # (method, rule, data set) -> [val IoU]
    for cv_run in cvs:
        if _cv_setting(cv_run) != tuple(setting) or cv_run["method"] not in methods:
            continue
        for rule in C_RULES:
            v = _cell(records, cv_run["dataset"], cv_run["class"], cv_run["method"],
                      tuple(setting), rule_C(cv_run["curve"], rule))
            if v is not None:
                val.setdefault((cv_run["method"], rule, cv_run["dataset"]), []).append(v)
    if not val:
        return []
    everywhere = set.intersection(*(set(dataset_scores(records, m, datasets)) for m in methods))
    lines = ["## Rules that pick C from the cross-validation curve", "",
             f"At {setting_name(setting)}: mean val IoU % per data set at the C each rule "
             "picks from the same 3-fold curves, and the mean gap to the best of the grid "
             "on each data set. Last row: for each held-out data set, the rule best on the "
             "other three (mean over them), scored on it.", "",
             "| method | rule | " + " | ".join(datasets) + " | mean gap |",
             "|---|---|" + "---|" * (len(datasets) + 1)]
    for m in methods:
        best_val = {}
        for d in datasets:
            pick = choose(records, m, [d], everywhere)
            best_val[d] = dataset_scores(records, m, [d])[pick][d] if pick else np.nan
        mean = {(rule, d): float(np.mean(val[(m, rule, d)])) for rule in C_RULES
                for d in datasets if (m, rule, d) in val}
        for rule in C_RULES:
            if all((rule, d) in mean for d in datasets):
                gap = np.mean([best_val[d] - mean[(rule, d)] for d in datasets])
                lines.append(f"| {m} | {rule} | " + " | ".join(
                    fmt(mean[(rule, d)]) for d in datasets) + f" | {fmt(gap)} |")
        chosen, gaps = [], []
        for held in datasets:
            others = [d for d in datasets if d != held]
            rules = [r for r in C_RULES if all((r, d) in mean for d in datasets)]
            if not rules:
                continue
            rule = max(rules, key=lambda r: np.mean([mean[(r, d)] for d in others]))
            chosen.append(rule)
            gaps.append(best_val[held] - mean[(rule, held)])
        if gaps:
            lines.append(f"| {m} | chosen on the others ({', '.join(chosen)}) | " + " | ".join(
                fmt(best_val[d] - g) for d, g in zip(datasets, gaps)) +
                f" | {fmt(float(np.mean(gaps)))} |")
    return lines + [""]


def soak_reference(path: Path) -> dict:
    """(data set, class, method) -> val IoU % of the bottom-up soak at the paper's C."""
    if not path.exists():
        return {}
    doc = json.loads(path.read_text())
    out = {}
    for r in doc.get("runs", doc.get("results", [])):
        if r.get("val_iou_percent") is not None:
            out[(r["dataset"], r["class"], r["method"])] = r["val_iou_percent"]
    return out


def fold_count_lines(records, chosen) -> list[str]:
    """The fold count K of the cross-fitted block: 2, 3 and 5 folds on the data
    sets where all three were run, per method at its chosen C and norm, and
    best in grid."""
    ks = {"folds2": 2, "folds": 3, "folds5": 5}
    sets = sorted({r["dataset"] for r in records if r["top_down"] == "folds2"})
    if not sets:
        return []
    lines = ["## The fold count of the cross-fitted block", "",
             "Val IoU % (train in brackets) at each method's chosen C and words norm, and "
             "the best over the grid of C, for K = 2, 3, 5 folds.", "",
             "| data set | method | " + " | ".join(f"K {k}" for k in ks.values())
             + " | " + " | ".join(f"K {k} best in grid" for k in ks.values()) + " |",
             "|---|---|" + "---|" * (2 * len(ks))]
    for d in sets:
        c = next(r["class"] for r in records if r["dataset"] == d and r["top_down"] == "folds2")
        for m in chosen:
            _, norm, scope = chosen[m]["setting"]
            C = chosen[m]["C"]
            at, best = [], []
            for td in ks:
                v = _cell(records, d, c, m, (td, norm, scope), C)
                t = _cell(records, d, c, m, (td, norm, scope), C, "train_iou")
                at.append(fmt(None) if v is None else f"{fmt(v)} ({fmt(t, '.1f')})")
                vals = [r["val_iou"] for r in records if (r["dataset"], r["class"], r["method"],
                        _setting(r)) == (d, c, m, (td, norm, scope))]
                best.append(fmt(max(vals) if vals else None))
            if any(a != fmt(None) for a in at):
                lines.append(f"| {d} | {m} | " + " | ".join(at + best) + " |")
    return lines + [""]


def _class_mean(records, d, m, setting, C_of: dict, what: str) -> float | None:
    """The mean over the classes of ``C_of`` (class -> C) of their fits' ``what``."""
    vals = [_cell(records, d, c, m, setting, C, what) for c, C in C_of.items()]
    return None if None in vals else float(np.mean(vals))


def _best(records, d, m, settings, classes, what: str) -> tuple:
    """(mean ``what`` over ``classes``, setting, C) of the best (setting, C)
    of ``m``'s fits on data set ``d``, one (setting, C) for all the classes;
    of equal means, the smallest C."""
    scored = [(v, -C, s) for s in settings for C in GRID
              if (v := _class_mean(records, d, m, s, dict.fromkeys(classes, C), what))
              is not None]
    v, C, s = max(scored)
    return v, s, -C


def _held_out_defaults(records, cvs, methods, setting, what: str):
    """Yield (method, data set, its classes, {class: the C cross-validation
    chose}) for each method and data set of ``records`` whose default
    (``setting`` at those C) has ``what`` for every class."""
    for m in methods:
        for d in sorted({r["dataset"] for r in records}):
            classes = sorted({r["class"] for r in records if r["dataset"] == d})
            chosen = {r["class"]: r["chosen_C"] for r in cvs
                      if (r["dataset"], r["method"], _cv_setting(r)) == (d, m, setting)}
            if not set(classes) - set(chosen) and _class_mean(
                    records, d, m, setting, chosen, what) is not None:
                yield m, d, classes, chosen


def ensemble_lines(ens, cvs, methods, setting=LIBRARY_DEFAULT) -> list[str]:
    """The fits of ``run --ensemble K`` (``ens``), each scored by its graph
    cut and as predict labels (the ensemble): the library's default
    (``setting`` at the C that ``cvs`` chose) beside the best (setting, C) of
    these fits, both ways, and each method's mean gap over the data sets
    they cover."""
    ens = [r for r in ens if "val_iou_ensemble" in r]
    if not ens or not cvs:
        return []
    runs = ens[0]["ensemble"]
    datasets = sorted({r["dataset"] for r in ens})
    settings = sorted({_setting(r) for r in ens})
    lines = [f"## Scored as predict labels: the ensemble of {runs}", "",
             f"The fits of {', '.join(setting_name(x) for x in settings)} on "
             f"{', '.join(datasets)} made again, each scored on val by its graph cut (as "
             f"training and the tables above score it) and by the masks `segstruct predict` "
             f"makes by default (an ensemble of {runs} superpixelisations, on the image's "
             f"pixels). Mean val IoU % over the classes: the library's default "
             f"({setting_name(setting)}, C auto: the C that 3-fold cross-validation on the "
             "training split chose, in brackets) beside the best (setting, C) of these fits "
             "by each score; the gap is best minus default.", "",
             "| method | held out | default: graph cut (train) | default: ensemble | "
             "best by graph cut | gap | best by ensemble | gap |",
             "|---|---|---|---|---|---|---|---|"]
    gaps: dict = {}
    for m, d, classes, chosen in _held_out_defaults(ens, cvs, methods, setting,
                                                    "val_iou_ensemble"):
        at = {w: _class_mean(ens, d, m, setting, chosen, w)
              for w in ("val_iou", "val_iou_ensemble", "train_iou")}
        best = {w: _best(ens, d, m, settings, classes, w)
                for w in ("val_iou", "val_iou_ensemble")}
        gaps[m, d] = {w: best[w][0] - at[w] for w in best}
        lines.append(
            f"| {m} | {d} | {fmt(at['val_iou'])} ({fmt(at['train_iou'], '.1f')}) | "
            f"{fmt(at['val_iou_ensemble'])} "
            f"({', '.join(f'{c} {chosen[c]:g}' for c in classes)}) | "
            + " | ".join(f"{setting_name(best[w][1])}, C {best[w][2]:g}: "
                         f"{fmt(best[w][0])} | {fmt(gaps[m, d][w])}"
                         for w in ("val_iou", "val_iou_ensemble")) + " |")
    lines.append("")
    for m in methods:
        mine = [g for (n, _), g in gaps.items() if n == m]
        if mine:
            lines.append(f"- {m}: mean gap over {len(mine)} held-out set(s) "
                         f"{fmt(float(np.mean([g['val_iou_ensemble'] for g in mine])))} "
                         "scored as predict labels, "
                         f"{fmt(float(np.mean([g['val_iou'] for g in mine])))} by graph cut")
    made = sorted({f"code {r['code_version']}, {r['machine']}" for r in ens})
    return lines + ["", f"These fits: {'; '.join(made)}.", ""]


def test_split_lines(tests, records, cvs, library, methods,
                     setting=LIBRARY_DEFAULT, own_cv: bool = False) -> list[str]:
    """The held-out sets whose fits were also scored on a test split
    (``run --test-split``): the library's default (``setting`` at the C that
    cross-validation on the training split chose) and the best (setting, C)
    of those fits, on val and on the test split, and each method's mean gap
    over all held-out sets with these scored on their test split. ``cvs``:
    the cross-validations of C made with these fits (``own_cv``), or the
    grid's."""
    if not tests or not cvs:
        return []
    split = tests[0]["test_split"]
    datasets = sorted({r["dataset"] for r in tests})
    settings = sorted({_setting(r) for r in tests})
    moved = [abs(r["val_iou"] - v) for r in tests
             if (v := _cell(records, r["dataset"], r["class"], r["method"], _setting(r),
                            r["C"])) is not None]
    repeat = (f"against the grid's fits, their val IoU moved by {np.median(moved):.2g} points "
              f"(median), by at most 1 in {sum(x <= 1 for x in moved)} of {len(moved)}, "
              f"by {max(moved):.2g} at most" if moved else "not in the grid")
    lines = [f"## The held-out {', '.join(datasets)} scored on its {split} split", "",
             f"The fits of {', '.join(setting_name(x) for x in settings)} made again and scored "
             f"on the {split} split as well as on val ({repeat}). Mean IoU "
             f"% over the classes: the library's default ({setting_name(setting)}, C auto: "
             "the C that 3-fold cross-validation on the training split chose, "
             f"{'made again with these fits' if own_cv else 'as above'}"
             "; the chosen C in brackets) beside the best (setting, C) "
             f"of these fits, on val and on {split}; the gap is best minus default.", "",
             f"| method | held out | default: val (train) | default: {split} | best on val "
             f"| gap on val | best on {split} | gap on {split} |",
             "|---|---|---|---|---|---|---|---|"]
    gaps: dict = {}
    for m, d, classes, chosen in _held_out_defaults(tests, cvs, methods, setting, "val_iou"):
        at = {w: _class_mean(tests, d, m, setting, chosen, w)
              for w in ("val_iou", "test_iou", "train_iou")}
        best = {w: _best(tests, d, m, settings, classes, w) for w in ("val_iou", "test_iou")}
        gaps[m, d] = best["test_iou"][0] - at["test_iou"]
        lines.append(
            f"| {m} | {d} | {fmt(at['val_iou'])} ({fmt(at['train_iou'], '.1f')}) | "
            f"{fmt(at['test_iou'])} ({', '.join(f'{c} {chosen[c]:g}' for c in classes)})"
            f" | {setting_name(best['val_iou'][1])}, C "
            f"{best['val_iou'][2]:g}: {fmt(best['val_iou'][0])} | "
            f"{fmt(best['val_iou'][0] - at['val_iou'])} | "
            f"{setting_name(best['test_iou'][1])}, C {best['test_iou'][2]:g}: "
            f"{fmt(best['test_iou'][0])} | {fmt(gaps[m, d])} |")
    lines.append("")
    for m in methods:
        rows = library.get(m, {}).get("rows", [])
        if not rows or not any((m, r["held_out"]) in gaps for r in rows):
            continue
        mixed = [gaps.get((m, r["held_out"]), r["gap"]) for r in rows]
        lines.append(f"- {m}: mean gap of the library's default {fmt(float(np.mean(mixed)))} "
                     f"with {', '.join(datasets)} scored on {split} (the others on val), "
                     f"{fmt(library[m]['mean_gap'])} on val")
    made = sorted({f"code {r['code_version']}, {r['machine']}" for r in tests})
    return lines + ["", f"These fits: {'; '.join(made)}.", ""]


def table(args) -> None:
    out = Path(args.out)
    records = _records(out)
    methods = [m for m in METHODS if any(r["method"] == m for r in records)]
    datasets = sorted({r["dataset"] for r in records})
    result = lodo(records, methods)
    chosen = choose_all(records)
    # the command line's default: one feature setting and one C for the paper's methods
    joint = tuple(m for m in METHODS[:3] if m in methods)
    joint_result = lodo(records, joint, joint) if joint else {}
    joint_pick = choose(records, joint, datasets) if joint else None
    if joint_pick is not None:
        chosen.update({m: {"setting": joint_pick[0], "C": joint_pick[1]} for m in joint})
    soak = soak_reference(REPO_ROOT / "out" / "soak" / "soak.json")
    cv_path = out / "cv.jsonl"
    cvs = with_refit_guard([json.loads(line) for line in cv_path.read_text().splitlines()]
                           if cv_path.exists() else [], records)
    lines = ["# Defaults chosen on held-out data sets (leave one data set out)", ""]
    lines += ["For each held-out data set, each method's default (C in superpixel units, "
              "top-down block, bag-of-words norm, loss scope) is the setting of the grid "
              "with the best mean val IoU over the *other* data sets (each data set the mean "
              "of its classes); it is scored on the held-out set beside the best setting of "
              "the grid there. Cells: mean val IoU % over the held-out set's classes (train "
              "IoU in brackets), seconds of all its fits and mean iterations at the default.",
              "With `--C auto` the default fixes the setting only: each class's C is chosen "
              "by 3-fold cross-validation over the grid on its training split, and the "
              "seconds are the cross-validation's and the refit's together. The library's "
              "default block is the cross-fitted one, fixed by design (the columns the "
              "learner sees on its training images are then those of images their "
              "detector never saw, as on new images), not chosen on this grid; the "
              "sections after it choose the block on the other data sets too.",
              FEATURE_NOTES[planned_features(out)], ""]
    auto = lodo_auto(records, cvs, joint) if joint and cvs else {}
    auto_pick = choose_auto(records, cvs, joint) if joint and cvs else None
    # the library's default: the cross-fitted block, fixed by design (its
    # training columns are those of images its detector never saw), not by
    # this grid; C by cross-validation
    shipped = LIBRARY_DEFAULT
    library = lodo_auto(records, cvs, joint, shipped) if joint and cvs else {}
    sections = [(f"{m}: --C auto and {setting_name(shipped)} (the library's default)",
                 library[m]) for m in joint if library.get(m, {}).get("rows")]
    sections += [(f"{m}: --C auto, the setting chosen on the others for {', '.join(joint)}",
                  auto[m]) for m in joint if auto.get(m, {}).get("rows")]
    sections += [(f"{m}: one fixed C and setting for {', '.join(joint)}", joint_result[m])
                 for m in joint]
    sections += [(f"{m}: a fixed C and setting of its own", result[m]) for m in methods]
    for title, res in sections:
        lines += [f"## {title}", "", "| held out | default | val (train) | "
                  "best in grid on it | val | gap | seconds / iterations |",
                  "|---|---|---|---|---|---|---|"]
        for r in res["rows"]:
            d, b = r["default"], r["best"]
            lines.append(
                f"| {r['held_out']} | {setting_name(d['setting'])}, C {_c(d['C'])} | "
                f"{fmt(r['default_val'])} ({fmt(r['default_train'], '.1f')}) | "
                f"{setting_name(b['setting'])}, C {b['C']:g} | {fmt(r['best_val'])} | "
                f"{fmt(r['gap'])} | {r['seconds']:.0f} s / {r['iterations']:.0f}"
                f"{'' if r['converged'] else '*'} |")
        lines += ["", f"Mean gap (best in grid − default): **{fmt(res['mean_gap'])}** "
                  "points.", ""]
    # the defaults chosen on all data sets, per class
    fixed_C: dict = {}
    if library:
        fixed_C = {m: chosen[m]["C"] for m in joint}
        chosen.update({m: {"setting": shipped, "C": "auto"} for m in joint})
    if auto_pick is not None:
        lines += [f"With `--C auto`, the setting chosen on all four data sets is "
                  f"{setting_name(auto_pick)}.", ""]
    lines += ["## The library's defaults", "",
              f"One setting for {', '.join(joint)} (the command line's default), "
              "and the fixed C and setting chosen on all four data sets for each other "
              "method:", ""]
    for m in methods:
        if m in chosen:
            lines.append(f"- {m}: {setting_name(chosen[m]['setting'])}, "
                         f"C {_c(chosen[m]['C'])}")
    lines += ["", "Per class at those defaults: val IoU % (train in brackets, and @ the C "
              "that cross-validation chose); the bottom-up soak at the paper's C "
              "(out/soak) beside it.", "",
              "| data set | class | " + " | ".join(f"{m} | {m} soak" for m in methods) + " |",
              "|---|---|" + "---|---|" * len(methods)]
    classes = sorted({(r["dataset"], r["class"]) for r in records})
    per_class = []
    for d, c in classes:
        cells = []
        for m in methods:
            if m not in chosen:
                cells += ["", ""]
                continue
            s, C = tuple(chosen[m]["setting"]), chosen[m]["C"]
            if C == "auto":
                C = next((r["chosen_C"] for r in cvs if (r["dataset"], r["class"], r["method"],
                                                         _cv_setting(r)) == (d, c, m, s)), None)
            v, t = _cell(records, d, c, m, s, C), _cell(records, d, c, m, s, C, "train_iou")
            at = f" @{C:g}" if chosen[m]["C"] == "auto" and C is not None else ""
            cells += [f"{fmt(v)} ({fmt(t, '.1f')}){at}", fmt(soak.get((d, c, m)))]
            per_class.append({"dataset": d, "class": c, "method": m, "val_iou": v,
                              "train_iou": t, "soak_val_iou": soak.get((d, c, m))})
        lines.append(f"| {d} | {c} | " + " | ".join(cells) + " |")
    # cross-fitting against plain, per class, at each method's chosen C and norm
    lines += ["", "## The top-down block: off, plain, cross-fitted", "",
              "At each method's fixed C (chosen on all four data sets) and bag-of-words norm; "
              "val IoU % (train in brackets).",
              ""]
    tds = ("off", "plain", "folds", "whole", "folds-cal")
    at_fixed = {m: {"setting": chosen[m]["setting"],
                    "C": fixed_C[m] if chosen[m]["C"] == "auto" else chosen[m]["C"]}
                for m in chosen}
    for m in methods:
        if m not in chosen:
            continue
        _, norm, scope = at_fixed[m]["setting"]
        C = at_fixed[m]["C"]
        lines += [f"### {m} (C {C:g}, words {norm})", "",
                  "| data set | class | " + " | ".join(tds) + " |",
                  "|---|---|" + "---|" * len(tds)]
        for d, c in classes:
            cells = []
            for td in tds:
                v = _cell(records, d, c, m, (td, norm, scope), C)
                t = _cell(records, d, c, m, (td, norm, scope), C, "train_iou")
                cells.append(fmt(None) if v is None else f"{fmt(v)} ({fmt(t, '.1f')})")
            lines.append(f"| {d} | {c} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += fold_count_lines(records, at_fixed)
    if library:
        lines += c_agreement_lines(records, cvs, shipped, joint)
    grouped_path = out / "cv_grouped.jsonl"
    if grouped_path.exists():
        grouped = with_refit_guard(
            [json.loads(line) for line in grouped_path.read_text().splitlines()], records)
        lines += grouped_cv_lines(records, cvs, grouped)
    lines += refused_lines(records, cvs)
    lines += fold_tol_lines(out, records, cvs, joint)
    if cvs and joint:
        lines += C_rule_lines(records, cvs, joint)
    test_path = out / "test_split" / "runs.jsonl"
    if test_path.exists() and library:
        tests = _records(test_path.parent)
        # the cross-validation made with the test split's fits, where there is one
        test_cv = cv_file(test_path.parent, False, DEFAULTS.tol)
        test_cvs = with_refit_guard([json.loads(line) for line in
                                     test_cv.read_text().splitlines()], tests) \
            if test_cv.exists() else cvs
        lines += test_split_lines(tests, records, test_cvs, library, joint,
                                  own_cv=test_cv.exists())
    ens_path = out / "ensemble" / "runs.jsonl"
    if ens_path.exists():
        # the library's cross-validation: folds to its fold tolerance
        lib_cv = cv_file(out, False, DEFAULT_FOLD_TOL)
        ens = _records(ens_path.parent)
        lines += ensemble_lines(ens, with_refit_guard(
            [json.loads(line) for line in lib_cv.read_text().splitlines()], ens)
            if lib_cv.exists() else [], joint)
    if cvs:
        lines += ["## --C auto at the chosen settings", "",
                  "3-fold cross-validation of C over the grid on the training split; the val "
                  "IoU of the model refitted at the chosen C (looked up in the grid), against "
                  "the fixed default.", "",
                  "| data set | class | method | chosen C | val at chosen C | val at default C "
                  "| CV seconds | one fit's seconds |", "|---|---|---|---|---|---|---|---|"]
        for r in cvs:
            s = (r["top_down"], r["sift_norm"], r["scope"])
            fixed = at_fixed[r["method"]]["C"]
            lines.append(
                f"| {r['dataset']} | {r['class']} | {r['method']} | {r['chosen_C']:g} | "
                f"{fmt(_cell(records, r['dataset'], r['class'], r['method'], s, r['chosen_C']))}"
                f" | {fmt(_cell(records, r['dataset'], r['class'], r['method'], s, fixed))} | "
                f"{r['seconds']:.0f} | "
                f"{_cell(records, r['dataset'], r['class'], r['method'], s, fixed, 'fit_seconds'):.0f} |")
    versions = sorted({r["code_version"] for r in records + cvs})
    machines = sorted({r["machine"] for r in records if isinstance(r.get("machine"), str)})
    lines += ["", f"Data {', '.join(datasets)} (train / val splits); methods "
              f"{', '.join(methods)}; grid C {' '.join(f'{c:g}' for c in GRID)} (superpixel "
              f"units); tol {DEFAULTS.tol:g}, max_iter {DEFAULTS.max_iter}; * = a fit stopped "
              f"at max_iter; code {', '.join(versions)}; machines: "
              f"{'; '.join(machines) or 'not recorded'}. Made by `python scripts/lodo.py`."]
    write_text(out / "table.md", "\n".join(lines) + "\n")
    write_json(out / "table.json", {"lodo": result, "lodo_joint": joint_result,
                                    "lodo_auto": auto, "lodo_library": library,
                                    "library_default": list(shipped),
                                    "joint_methods": list(joint), "chosen": chosen, "per_class": per_class,
                                    "grid": list(GRID), "code_version": versions})
    print("\n".join(lines))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=("run", "cv", "table", "export"))
    p.add_argument("--to", help="export: the folder to write the arrays to")
    p.add_argument("--data", default=str(DEFAULT_DATA),
                   help="the folder of the shared data sets (default %(default)s)")
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--top-down", nargs="+", default=["off", "plain", "folds", "whole"],
                   choices=sorted(TOP_DOWN), help="the top-down settings to run")
    p.add_argument("--fold-datasets", nargs="+", default=["weizmann_horse_voc",
                                                          "pennfudan_voc"],
                   help="data sets the fold counts 2 and 5 are measured on")
    p.add_argument("--min-images", type=int, default=5)
    p.add_argument("--out", default=str(REPO_ROOT / "out" / "lodo"))
    p.add_argument("--cv-settings", nargs="+", default=["plain/l1/dataset", "folds/l1/dataset"],
                   help="cv: the settings (block/norm/scope) to cross-validate C at")
    p.add_argument("--cv-tol", type=float, default=DEFAULT_FOLD_TOL,
                   help="cv: the folds' fits stop at this times C, between the library's tol "
                        "and this (segstruct's --cv-tol); at the library's tol (0.001: "
                        "every fit at it, as before the option) into cv.jsonl, else into "
                        "cv_tol-TOL.jsonl (default %(default)g)")
    p.add_argument("--fold-groups", choices=("none", "id-prefix"), default="none",
                   help="cv: folds by image (none), or by the id up to its first '_'")
    p.add_argument("--export-root", help="cv: the folder of exported arrays (export --to), "
                   "read instead of --data's images")
    p.add_argument("--features", choices=sorted(FEATURES), default="as-given",
                   help="run: the feature settings under the grid: the library's defaults, "
                        "or Felzenszwalb superpixels on images as given (what out/lodo "
                        "was made with); cv and table read it from the folder")
    p.add_argument("--settings", nargs="+", metavar="BLOCK/NORM/SCOPE",
                   choices=["/".join(s) for s in SETTINGS + FOLD_SETTINGS],
                   help="run: only these settings of the grid (default: every setting of "
                        "--top-down's blocks)")
    p.add_argument("--classes", nargs="+", metavar="DATASET:CLASS",
                   help="run: only these classes (default: every class with --min-images)")
    p.add_argument("--test-split",
                   help="run: also score every fit on this split (its IoU in test_iou), "
                        "into an --out of its own; table adds a section for the fits "
                        "under OUT/test_split/")
    p.add_argument("--ensemble", type=int, default=1, metavar="K",
                   help="run: also score every fit on val (and --test-split) as predict "
                        "labels by default, the ensemble of K superpixelisations (its IoU "
                        "in val_iou_ensemble), into an --out of its own; table adds a "
                        "section for the fits under OUT/ensemble/ (default 1: the graph "
                        "cut only)")
    p.add_argument("-j", "--n-jobs", type=int, default=1)
    args = p.parse_args(argv)
    {"run": run, "cv": cv, "table": table, "export": export}[args.command](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
