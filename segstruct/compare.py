"""Train several methods on several classes and compare them by VOC IoU.

This is the experiment of the paper's Table 1: every (class, method) pair is
trained on one split with the same features and hyper-parameters, scored on
another split with the VOC measure, and summarised as a table (rows classes,
columns methods, plus the mean row).

Layout of an output folder ``DIR``::

    DIR/runs/<class>-<method>.json      one record per finished pair (resume)
    DIR/models/<class>-<method>.*       the trained model and its training log (and,
                                        while training, its checkpoint)
    DIR/results.json                    every record plus the table
    DIR/table.md, DIR/table.csv         the table
    DIR/figures/*.png                   training curves, qualitative grids,
                                        loss surfaces

A pair whose record exists is not trained again, and a pair interrupted
mid-training continues from its checkpoint; a record made with other
settings (or, with the top-down block, another detector) is an error rather
than silently mixed into the table.

With the top-down block, every class's detector is trained (or read from the
cache) before any pair: a class with too few objects for a detector stops the
run at once, or, with ``skip_few_objects``, is left out of the table with
the reason.
"""
from __future__ import annotations

import copy
import hashlib
import json
import time
from pathlib import Path
from typing import Callable

import numpy as np

from segstruct.cluster import on_cluster, parallel_map
from segstruct.datasets import DatasetError, VOCDataset, class_index
from segstruct.evaluate.diagnosis import generalisation
from segstruct.features.detection import detectors_digest
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.topdown.training import TooFewObjects
from segstruct.features.superpixels import paint
from segstruct.inference.losses import totals
from segstruct.io.files import write_json, write_text
from segstruct.io.persistence import checkpoint_path, load_model, log_path, model_paths
from segstruct.io.provenance import code_version, machine
from segstruct.learn.methods import METHODS, TrainingSettings, method_loss, with_workers
from segstruct.learn.selection import format_curve, select_C
from segstruct.learn.ssvm import oracle_name
from segstruct.report.tables import fmt, table_csv, table_markdown
from segstruct.workflow import check_training_set, train_model

RESULTS_FORMAT = "segstruct-comparison"


def _top_down_hint(theirs: dict | None, mine: dict) -> str:
    """Why features differ, when it is the top-down block alone."""
    theirs = dict(theirs or {})
    block = {k: mine[k] for k in ("detector", "top_down_folds", "top_down_detector")
             if k in mine}
    if theirs.get("detector") is None and mine.get("detector") is not None and \
            {**theirs, **block} == mine:
        return ("; it was made without the top-down block, which is now on by default: "
                "add --no-top-down to go on with it")
    return ""


def classes_in(dataset: VOCDataset, split: str) -> list[str]:
    """VOC class names present in any mask of ``split``, in VOC order."""
    from segstruct.datasets import VOC_CLASSES
    seen = set()
    for image_id in dataset.ids(split):
        seen.update(np.unique(dataset.read_mask(image_id)).tolist())
    return [name for value, name in enumerate(VOC_CLASSES) if value in seen and value != 0]


class Comparison:
    """Train ``methods`` for ``classes`` and score them (see the module docstring).

    Parameters
    ----------
    extractor : FeatureExtractor over the data set (its features are shared by
        every pair).
    classes, methods : lists of VOC class names and ``METHODS`` names.
    settings : TrainingSettings.
    out_dir : output folder (created).
    train_split, eval_split : split names.
    seed : recorded in every result and used to pick the qualitative images
        (the feature seed is the extractor's config seed).
    progress : show progress bars while training.
    say : called with one line of text per event (e.g. ``print``).
    skip_few_objects : leave out (and name in the results) a class whose
        training split cannot teach it (no usable object, too few for the
        folds of ``C = "auto"`` or, with the top-down block, for a detector),
        instead of stopping the run: for "every class of a data set"; a
        class asked for by name should stop it.

    Attributes
    ----------
    skipped : dict, class name -> why it was left out (filled by ``run``).
    detector_warnings : dict, class name -> what is wrong with its detector
        (filled by ``run``; e.g. one whose block is all zeros).
    """

    def __init__(self, extractor: FeatureExtractor, classes, methods,
                 settings: TrainingSettings, out_dir, train_split="train", eval_split="val",
                 seed=0, progress=True, say: Callable[[str], None] = print,
                 skip_few_objects=False, n_jobs=1):
        self.extractor = extractor
        self.dataset = extractor.dataset
        self.classes = list(classes)
        self.methods = list(methods)
        self.settings = settings
        self.out_dir = Path(out_dir)
        self.train_split = train_split
        self.eval_split = eval_split
        self.seed = seed
        self.progress = progress
        self.say = say
        self.skip_few_objects = skip_few_objects
        self.n_jobs = n_jobs
        self.skipped: dict[str, str] = {}
        self.detector_warnings: dict[str, str] = {}
        self._identity = None
        self._check()

    # ------------------------------------------------------------------ checks
    def _check(self):
        if not self.classes:
            raise ValueError("no classes to compare")
        if not self.methods:
            raise ValueError("no methods to compare")
        for name in self.methods:
            if name not in METHODS:
                raise ValueError(f"unknown method {name!r}; use some of {sorted(METHODS)}")
        for name in self.classes:
            class_index(name)               # raises for an unknown class name
        for what, items in (("class", self.classes), ("method", self.methods)):
            if len(set(items)) != len(items):
                raise ValueError(f"a {what} is listed twice: {items}")
        # bad C, grid, folds, tol, ... fail before any training
        C = self.settings.cv()[0][0] if self.settings.auto else None
        for method in self.methods:
            self.settings.estimator(method, C=C).check_params()
        train_ids = set(self.dataset.ids(self.train_split))   # DatasetError if missing
        shared = train_ids & set(self.dataset.ids(self.eval_split))
        if shared:
            raise ValueError(
                f"splits {self.train_split!r} and {self.eval_split!r} share {len(shared)} "
                f"image(s) (e.g. {sorted(shared)[0]}): the table would score models on "
                "their own training data")

    def identity(self) -> dict:
        """What a record must share with this run to count as already done: the
        data (split lists), features (settings and codebook) and settings."""
        if self._identity is None:
            ids = {s: self.dataset.ids(s) for s in (self.train_split, self.eval_split)}
            codebook = self.extractor.codebook()[1] if self.extractor.config.sift else None
            self._identity = {
                "data_root": str(self.dataset.root), "train_split": self.train_split,
                "eval_split": self.eval_split,
                "split_lists_sha256": hashlib.sha256(json.dumps(ids).encode()).hexdigest(),
                "features": self.extractor.config.to_dict(), "codebook": codebook,
                "settings": self.settings.to_dict(), "seed": self.seed}
        return self._identity

    # ------------------------------------------------------------------ paths
    def record_path(self, class_name, method) -> Path:
        return self.out_dir / "runs" / f"{class_name}-{method}.json"

    def model_path(self, class_name, method) -> Path:
        return self.out_dir / "models" / f"{class_name}-{method}"

    def _load_record(self, class_name, method, check_detector=True):
        """The pair's record if it is this run's; None if it is to be trained.

        Raises ValueError for a record made with other settings (or, with
        ``check_detector``, with another detector: that check trains or
        loads the class's detector).
        """
        path = self.record_path(class_name, method)
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.say(f"warning: {path} is unreadable; training {class_name}/{method} again")
            return None
        mine = self.identity()
        theirs = record.get("identity", {})
        differing = [k for k in mine if theirs.get(k) != mine[k]]
        if not differing and check_detector and \
                record.get("detector") != self._detector_digest(class_name):
            differing.append(f"its {class_name} detector")
        if differing:
            raise ValueError(
                f"{path} was made with other settings ({', '.join(differing)} "
                f"differ{'s' if len(differing) == 1 else ''}"
                f"{_top_down_hint(theirs.get('features'), mine['features'])}): use another "
                f"--out folder, or delete {path} to train that pair again")
        if not model_paths(self.model_path(class_name, method))[0].is_file():
            self.say(f"warning: the model of {path} is missing; training it again")
            return None
        return record

    # ------------------------------------------------------------------ run
    def run(self, figures=True, figure_images=4, figure_ids=None,
            multiclass=False) -> dict:
        """Train what is not done yet, then write results.json, the tables and figures
        (and, with ``multiclass``, multiclass.json and multiclass.md: :meth:`multiclass`).

        Returns
        -------
        dict, the content of results.json.
        """
        if figure_ids:
            missing = sorted(set(figure_ids) - set(self.dataset.ids(self.eval_split)))
            if missing:
                raise ValueError(f"--figure-ids {', '.join(missing)} are not in split "
                                 f"{self.eval_split!r} of {self.dataset.root}")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        # records of other settings are refused before minutes of detector training
        for c in self.classes:
            for m in self.methods:
                self._load_record(c, m, check_detector=False)
        # a class the training split cannot teach is refused (or skipped)
        # before its detector is tried, which would only say "too few objects"
        self._check_classes_present()
        self._train_detectors()
        classes = self.compared_classes
        if not classes:
            raise ValueError(f"no class to compare: {'; '.join(self.skipped.values())}")
        pending = [(c, m) for c in classes for m in self.methods
                   if self._load_record(c, m) is None]
        done = len(classes) * len(self.methods) - len(pending)
        if done:
            self.say(f"{done} (class, method) pair(s) already finished in {self.out_dir}; "
                     "not training them again")
        if pending:
            # every evaluation image and mask is readable before hours of training
            self.extractor.examples(self.eval_split, pending[0][0], with_features=False)
        # on a cluster the pairs train first, all at once; their records come back
        trained = self._train_on_cluster(pending) if on_cluster() else {}
        for k, (class_name, method) in enumerate(pending, 1):
            if trained:
                record = trained[class_name, method]
            else:
                self.say(f"[{k}/{len(pending)}] training {method} for {class_name} on "
                         f"{self.dataset.name}/{self.train_split}")
                record = self._train_and_score(class_name, method)
            chosen = (f", C {record['C']:g} by cross-validation"
                      if "C_selection" in record else "")
            self.say(f"      {method} {class_name}: {self.eval_split} VOC IoU "
                     f"{fmt(record['eval_score']['voc_iou_percent'])} %{chosen} "
                     f"({record['training']['fit_seconds']:.1f} s, "
                     f"{record['training']['n_iter']} iterations"
                     f"{'' if record['training']['converged'] else ', stopped at max_iter'})")
        results = self.results()
        write_json(self.out_dir / "results.json", results)
        write_text(self.out_dir / "table.md", table_markdown(results))
        write_text(self.out_dir / "table.csv", table_csv(results))
        self.say(f"wrote {self.out_dir / 'results.json'}, table.md and table.csv")
        if multiclass:
            self.multiclass()
            self.say(f"wrote {self.out_dir / 'multiclass.json'} and multiclass.md")
        if figures:
            for path in self.figures(figure_images, figure_ids):
                self.say(f"wrote {path}")
        return results

    @property
    def compared_classes(self) -> list:
        """The classes of the table: ``classes`` less the ``skipped``."""
        return [c for c in self.classes if c not in self.skipped]

    def _train_detectors(self):
        """With the top-down block, every class's detector, before any pair: a
        class that cannot have one stops the run now rather than hours in (or,
        with ``skip_few_objects``, is skipped, with the reason)."""
        if self.extractor.config.detector is None:
            return
        # every class's detectors at once, on the workers
        errors = self.extractor.train_detectors(self.compared_classes)
        for class_name in self.compared_classes:
            try:
                if class_name in errors:
                    raise errors[class_name]
                detectors = self.extractor.block_detectors(class_name)
            except TooFewObjects as err:
                if not self.skip_few_objects:
                    raise
                self.skipped[class_name] = str(err)
                self.say(f"skipping {class_name}: {err}")
                continue
            if not any(shape.any() for sd in detectors
                       for shape in [*sd.shapes.root, *sd.shapes.parts]):
                # no shape to vote for: the block is zero on every superpixel
                self.detector_warnings[class_name] = (
                    "its average shapes are all zero (it fired on no training object with a "
                    "positive score), so its top-down block is zero everywhere and adds "
                    "nothing: the models differ from those without it only within the "
                    "learner's tolerance")
                self.say(f"warning: {class_name}: {self.detector_warnings[class_name]}")

    def _detector_digest(self, class_name) -> str | None:
        """The class's detector by content (None without the top-down block):
        a record made with another detector is not this run's."""
        if self.extractor.config.detector is None:
            return None
        return detectors_digest(self.extractor.block_detectors(class_name))

    def _check_classes_present(self):
        """Refuse, before any training, a class the training split cannot
        teach (with ``skip_few_objects``: skip it, with the reason)."""
        folds = self.settings.cv()[1] if self.settings.auto else None
        for class_name in sorted(self.compared_classes):
            try:
                check_training_set(self.extractor, self.train_split, class_name, folds)
            except DatasetError as err:
                if not self.skip_few_objects:
                    raise
                self.skipped[class_name] = str(err)
                self.say(f"skipping {class_name}: {err}")

    def _train_on_cluster(self, pending) -> dict:
        """Every pending pair as one task on the Dask cluster
        (``segstruct.cluster.use_scheduler``): each writes its model and
        record as here. A pair whose worker dies runs again on another and
        resumes from its checkpoint. Returns {(class, method): record}."""
        # features first (on the cluster too), so that no two pairs of a class
        # compute them at once
        for class_name in dict.fromkeys(c for c, _ in pending):
            for split in (self.train_split, self.eval_split):
                self.extractor.examples(split, class_name)
        self.say(f"training {len(pending)} (class, method) pair(s) on the Dask cluster")
        worker_view = copy.copy(self)
        worker_view.progress, worker_view.n_jobs = False, 1
        worker_view.say = _discard
        worker_view.extractor = copy.copy(self.extractor)
        worker_view.extractor.n_jobs, worker_view.extractor.progress = 1, False
        records = parallel_map(_train_pair, [(worker_view, c, m) for c, m in pending],
                               progress=self.progress, desc="pairs on the cluster",
                               unit="pair")
        for record in records:       # what the workers would have said
            for warning in record["diagnosis"]["warnings"]:
                self.say(f"      warning: {record['class']}/{record['method']}: {warning}")
        return dict(zip(pending, records))

    def _train_and_score(self, class_name, method) -> dict:
        model_path = self.model_path(class_name, method)
        model_path.parent.mkdir(parents=True, exist_ok=True)
        train = self.extractor.examples(self.train_split, class_name)
        X, Y = [ex.graph for ex in train], [ex.pixel_counts for ex in train]
        C, extra = self.settings.C, {}
        if self.settings.auto:
            # (re)done before resuming: it is deterministic, so it picks the C
            # the checkpoint was made with
            C, curve = self._choose_C(class_name, method, X, Y)
            extra = {"C_selection": curve}
        # an interrupted pair continues from its last cutting-plane iteration
        if checkpoint_path(model_path).exists():
            self.say(f"      resuming from {checkpoint_path(model_path)}")
        # the checkpoint stays until the pair's record is written: an interruption
        # while the eval split is scored then restores the model at once
        estimator = with_workers(self.settings.estimator(method, C=C), self.n_jobs)
        trained = train_model(estimator, X, Y, model_path,
                              self.extractor, split=self.train_split, class_name=class_name,
                              method=method, metadata=extra, progress=self.progress,
                              keep_checkpoint=True)
        estimator, train_score, diagnosis = (trained.estimator, trained.doc["train_score"],
                                             trained.doc["diagnosis"])
        for warning in diagnosis["warnings"]:
            self.say(f"      warning: {class_name}/{method}: {warning}")
        start = time.perf_counter()
        evaluation = self.extractor.examples(self.eval_split, class_name)
        eval_score = estimator.voc_score([ex.graph for ex in evaluation],
                                         [ex.pixel_counts for ex in evaluation]).to_dict()
        config = self.extractor.config
        warning = generalisation(train_score["voc_iou_percent"], eval_score["voc_iou_percent"],
                                 {"top_down": config.detector is not None,
                                  "top_down_folds": config.top_down_folds})
        if warning:
            diagnosis = {**diagnosis, "warnings": [*diagnosis["warnings"], warning]}
            self.say(f"      warning: {class_name}/{method}: {warning}")
        record = {
            "dataset": self.dataset.name, "class": class_name, "method": method,
            "loss": estimator.loss_.to_dict(), "scope": self.settings.scope,
            "C": C, "C_units": self.settings.C_units, **extra, "M": self.settings.n_triangles,
            "inference": self.settings.inference,
            "node_weights": self.settings.node_weights, "seed": self.seed,
            "code_version": code_version(),
            "training": {"fit_seconds": estimator.fit_seconds_, "n_iter": estimator.n_iter_,
                         "converged": estimator.converged_, "primal": estimator.primal_,
                         "dual": estimator.dual_, "gap": estimator.gap_,
                         "svm_C": getattr(estimator, "svm_C_", None),
                         "oracle": oracle_name(getattr(estimator, "oracle", None))},
            "n_train_images": len(train), "n_eval_images": len(evaluation),
            "train_score": train_score, "eval_score": eval_score, "diagnosis": diagnosis,
            "eval_seconds": time.perf_counter() - start,
            "detector": self._detector_digest(class_name),
            "model": str(model_paths(trained.path)[0].relative_to(self.out_dir)),
            "training_log": str(log_path(trained.path).relative_to(self.out_dir)),
            "identity": self.identity(),
        }
        write_json(self.record_path(class_name, method), record)
        # the record is written: nothing to resume
        checkpoint_path(trained.path).unlink(missing_ok=True)
        return record

    def _choose_C(self, class_name, method, X, Y) -> tuple[float, dict]:
        """Cross-validate C for one pair on its training examples; say the curve."""
        grid, folds = self.settings.cv()
        self.say(f"      choosing C by {folds}-fold cross-validation over "
                 f"{' '.join(f'{c:g}' for c in grid)}")
        # fold estimators: the pair's settings, no log, checkpoint nor bar of their own
        C, curve = select_C(lambda: with_workers(self.settings.estimator(method, C=grid[0]),
                                                 self.n_jobs),
                            X, Y, grid, folds, self.seed, self.progress, self.n_jobs)
        for line in format_curve(curve):
            self.say(f"      {line}")
        self.say(f"      {method} {class_name}: C {C:g} (pooled held-out VOC IoU, "
                 f"{curve['seconds']:.1f} s); refitting on all of {self.train_split}")
        return C, curve

    # ------------------------------------------------------------------ results
    def results(self) -> dict:
        classes = self.compared_classes
        records = [self._load_record(c, m) for c in classes for m in self.methods]
        records = [r for r in records if r is not None]
        iou = {c: {m: None for m in self.methods} for c in classes}
        train_iou = {c: {m: None for m in self.methods} for c in classes}
        for r in records:
            iou[r["class"]][r["method"]] = r["eval_score"]["voc_iou_percent"]
            train_iou[r["class"]][r["method"]] = r["train_score"]["voc_iou_percent"]

        def means(table):
            out = {}
            for m in self.methods:
                # a class whose IoU is undefined (no positives, none predicted) has no say
                values = [table[c][m] for c in classes if table[c][m] is not None]
                out[m] = float(np.mean(values)) if values else None
            return out
        return {
            "format": RESULTS_FORMAT, "format_version": 1,
            "dataset": self.dataset.name, "data_root": str(self.dataset.root),
            "train_split": self.train_split, "eval_split": self.eval_split,
            "classes": classes, "skipped": self.skipped,
            "detector_warnings": self.detector_warnings, "methods": self.methods,
            "settings": self.settings.to_dict(), "seed": self.seed,
            "features": self.extractor.config.to_dict(),
            "code_version": code_version(), "machine": machine(),
            "total_fit_seconds": sum(r["training"]["fit_seconds"] for r in records),
            "table": {"iou_percent": iou, "mean_iou_percent": means(iou),
                      "train_iou_percent": train_iou,
                      "mean_train_iou_percent": means(train_iou)},
            "results": records,
        }

    # ------------------------------------------------------------------ multi-class
    def multiclass(self) -> dict:
        """Each method's class models combined into one labelling per image
        (``segstruct.predict``: per superpixel the class with the largest
        positive max-marginal difference, else background), scored on the
        evaluation split with the VOC challenge measure over all 21 labels,
        beside each class model scored alone. Writes DIR/multiclass.json and
        DIR/multiclass.md; returns the JSON document."""
        from segstruct.datasets.voc import VOC_CLASSES
        from segstruct.predict import COMBINATION, multiclass_confusion
        from segstruct.segmentation_model import SegmentationModel
        classes, ids = self.compared_classes, self.dataset.ids(self.eval_split)
        combined, alone = {}, {}
        for method in self.methods:
            models = [SegmentationModel.load(self.model_path(c, method)) for c in classes]
            combined[method] = multiclass_confusion(models, self.extractor, ids).to_dict()
            alone[method] = {c: self._load_record(c, method)["eval_score"]["voc_iou_percent"]
                             for c in classes}
        # the labels of the table: background, the compared classes, and any
        # other label present in the masks (never predicted: IoU 0)
        shown = [name for name in VOC_CLASSES
                 if name == "background" or name in classes
                 or any(combined[m]["iou_percent"][name] is not None for m in self.methods)]
        doc = {"format": "segstruct-multiclass", "format_version": 1,
               "dataset": self.dataset.name, "data_root": str(self.dataset.root),
               "train_split": self.train_split, "eval_split": self.eval_split,
               "classes": classes, "methods": self.methods,
               "combination": COMBINATION,
               "settings": self.settings.to_dict(), "features": self.extractor.config.to_dict(),
               "code_version": code_version(), "multiclass": combined,
               "alone_voc_iou_percent": alone}
        write_json(self.out_dir / "multiclass.json", doc)
        head = ("| label | " + " | ".join(f"{m} combined | {m} alone" for m in self.methods)
                + " |")
        rows = [head, "|---|" + "---|---|" * len(self.methods)]
        for name in shown:
            cells = []
            for m in self.methods:
                cells.append(fmt(combined[m]["iou_percent"][name]))
                cells.append(fmt(alone[m].get(name)) if name in classes else "")
            rows.append(f"| {name} | " + " | ".join(cells) + " |")
        rows.append("| **mean** | " + " | ".join(
            f"**{fmt(combined[m]['mean_iou_percent'])}** | " for m in self.methods) + "|")
        text = (f"# Multi-class VOC IoU % on {self.dataset.name} ({self.eval_split})\n\n"
                + "\n".join(rows) + "\n\n"
                f"Combined: the class models of a method label each superpixel together "
                f"(the class with the largest positive max-marginal difference, else "
                f"background), scored over all 21 labels, void excluded; the mean is over "
                f"the labels present in the masks or the labels. Alone: each class model's "
                f"own VOC IoU (as in table.md). {self.caption()}.\n")
        write_text(self.out_dir / "multiclass.md", text)
        return doc

    # ------------------------------------------------------------------ figures
    def caption(self, class_name=None, methods=None) -> str:
        s = self.settings
        loss = s.loss if s.loss != "fbeta" else f"fbeta(beta={s.beta:g})"
        parts = [f"data {self.dataset.name}", f"class {class_name}" if class_name else None,
                 f"methods {', '.join(methods or self.methods)}",
                 f"train {self.train_split} / eval {self.eval_split}",
                 f"loss {loss}, scope {s.scope}, {s.C_text()}, M {s.n_triangles}, "
                 f"node weights {s.node_weights}, seed {self.seed}", f"code {code_version()}"]
        return "; ".join(p for p in parts if p)

    def figures(self, n_images=4, ids=None) -> list[Path]:
        """Training curves, qualitative grids and loss surfaces, one set per class;
        with ``C = "auto"``, the cross-validation curves too."""
        from segstruct.report.figures import (cv_figure, loss_surface_figure, save_figure,
                                              training_figure)
        fig_dir = self.out_dir / "figures"
        written = []
        for class_name in self.compared_classes:
            records = {m: self._load_record(class_name, m) for m in self.methods}
            records = {m: r for m, r in records.items() if r is not None}
            logs = {m: json.loads((self.out_dir / r["training_log"]).read_text())
                    for m, r in records.items()}
            if logs:
                written.append(save_figure(
                    training_figure(logs, caption=self.caption(class_name),
                                    scopes={m: r.get("scope", self.settings.scope)
                                            for m, r in records.items()}),
                    fig_dir / f"training-{class_name}.png"))
            curves = {m: r["C_selection"] for m, r in records.items() if "C_selection" in r}
            if curves:
                written.append(save_figure(
                    cv_figure(curves, caption=self.caption(class_name, list(curves))),
                    fig_dir / f"cv-{class_name}.png"))
            models = {m: load_model(self.out_dir / r["model"])[0] for m, r in records.items()}
            if models:
                chosen = ids or pick_images(self.dataset, self.eval_split, class_name,
                                            n_images, self.seed)
                written.append(save_qualitative(
                    self.extractor, class_name, self.eval_split, chosen, models,
                    fig_dir / f"qualitative-{class_name}.png",
                    self.caption(class_name, list(models))))
            complex_methods = [m for m in self.methods if METHODS[m]["loss"] is None]
            if complex_methods:
                n_pos, n_neg = self._loss_lattice(class_name)
                loss = method_loss(complex_methods[0], self.settings.loss, self.settings.beta)
                fig, _ = loss_surface_figure(
                    loss, n_pos, n_neg, n_triangles=sorted({self.settings.n_triangles, 15},
                                                           reverse=True),
                    caption=f"{self.caption(class_name, complex_methods)}; "
                            f"Np {n_pos:g}, Nn {n_neg:g} ({self._lattice_note()})")
                written.append(save_figure(fig, fig_dir / f"loss-surface-{class_name}.png"))
        return written

    def _lattice_note(self) -> str:
        return ("the whole training set" if self.settings.scope == "dataset"
                else "the median training image showing the class")

    def _loss_lattice(self, class_name):
        """(Np, Nn) of the loss the oracle sees: training-set totals or a median image."""
        examples = self.extractor.examples(self.train_split, class_name, with_features=False)
        sizes = np.array([totals(ex.targets, ex.node_weights(self.settings.node_weights))
                          for ex in examples])
        if self.settings.scope == "dataset":
            return tuple(float(v) for v in sizes.sum(axis=0))
        showing = sizes[sizes[:, 0] > 0]     # an image without the class has a flat loss
        return tuple(float(v) for v in np.median(showing if len(showing) else sizes, axis=0))


def _train_pair(comparison: Comparison, class_name: str, method: str) -> dict:
    """A cluster task: one pair trained and scored (its record)."""
    return comparison._train_and_score(class_name, method)


def _discard(text: str) -> None:
    """A worker's messages: its task's record carries what matters."""


def pick_images(dataset: VOCDataset, split: str, class_name: str, n: int, seed: int) -> list[str]:
    """``n`` image ids of ``split`` drawn with ``seed``, preferring ones showing the class."""
    value = class_index(class_name)
    ids = dataset.ids(split)
    showing = [i for i in ids if (dataset.read_mask(i) == value).any()]
    rest = [i for i in ids if i not in set(showing)]
    rng = np.random.default_rng(seed)
    chosen = list(rng.permutation(showing)[:n])
    if len(chosen) < n:
        chosen += list(rng.permutation(rest)[: n - len(chosen)])
    return [str(i) for i in chosen]


def save_qualitative(extractor: FeatureExtractor, class_name: str, split: str, ids,
                     models: dict, path, caption: str) -> Path:
    """Draw input | ground truth | one column per model for images ``ids``.

    Parameters
    ----------
    models : method name -> fitted StructuredSVM (all on the extractor's features).
    """
    from segstruct.report.figures import qualitative_figure, save_figure
    dataset = extractor.dataset
    value = class_index(class_name)
    examples = extractor.examples(split, class_name, ids=list(ids))
    predictions = {m: est.predict([ex.graph for ex in examples]) for m, est in models.items()}
    panels = []
    for k, ex in enumerate(examples):
        raw = dataset.read_mask(ex.graph.image_id)
        truth = np.where(raw == 255, 255, raw == value).astype(np.uint8)
        panels.append({"image_id": ex.graph.image_id,
                       "image": dataset.read_image(ex.graph.image_id),
                       "truth": truth, "segments": ex.graph.segments,
                       "predictions": {m: paint(ex.graph.segments, y[k])
                                       for m, y in predictions.items()}})
    return save_figure(qualitative_figure(panels, list(models), caption), path)
