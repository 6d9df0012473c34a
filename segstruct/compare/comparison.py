"""The comparison itself: train and score every pending (class, method) pair,
here or on a Dask cluster, and write the results, tables and figures (see
the package docstring for the folder's layout)."""
from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path

from segstruct.cluster import on_cluster, parallel_map
from segstruct.compare import choosing, planner
from segstruct.compare.figures import comparison_figures
from segstruct.compare.multiclass import multiclass
from segstruct.compare.report import write_report
from segstruct.compare.store import RecordStore, score_table, table_intervals
from segstruct.datasets import class_index
from segstruct.decisions import decide
from segstruct.evaluate.diagnosis import generalisation
from segstruct.features.detection import detectors_digest
from segstruct.features.extraction import FeatureExtractor
from segstruct.io.files import write_json, write_text
from segstruct.io.persistence import checkpoint_path, log_path, model_paths
from segstruct.io.provenance import code_version, machine
from segstruct.learn.methods import METHODS, TrainingSettings
from segstruct.learn.estimators.structured_svm import oracle_name
from segstruct.report.tables import fmt, table_csv, table_markdown
from segstruct.workflow import curve_path, train

__all__ = ["RESULTS_FORMAT", "Comparison"]

RESULTS_FORMAT = "segstruct-comparison"


class Comparison:
    """Train ``methods`` for ``classes`` and score them (see the package docstring).

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
    n_jobs : worker processes of the pairs' inference and cross-validation.

    Attributes
    ----------
    store : RecordStore of ``out_dir``.
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
        self._identity: dict | None = None
        self.store = RecordStore(self.out_dir, self.identity, self._detector_digest,
                                 self._say)
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

    def _detector_digest(self, class_name) -> str | None:
        """The class's detectors by content (None without the top-down block):
        a record made with other detectors is not this run's."""
        if self.extractor.config.detector is None:
            return None
        return detectors_digest(self.extractor.block_detectors(class_name))

    def _say(self, text: str) -> None:
        self.say(text)          # ``say`` may be replaced after the store is made

    def record_path(self, class_name, method) -> Path:
        return self.store.record_path(class_name, method)

    def model_path(self, class_name, method) -> Path:
        return self.store.model_path(class_name, method)

    @property
    def compared_classes(self) -> list:
        """The classes of the table: ``classes`` less the ``skipped``."""
        return [c for c in self.classes if c not in self.skipped]

    # ------------------------------------------------------------------ run
    def run(self, figures=True, figure_images=4, figure_ids=None,
            multiclass=False, report=True) -> dict:
        """Train what is not done yet, then write results.json, the tables and figures
        (and, with ``multiclass``, multiclass.json and multiclass.md: :meth:`multiclass`),
        and, with ``report``, report.html (:func:`segstruct.compare.report.write_report`).

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
        self._plan()
        todo = planner.pending(self.store, self.compared_classes, self.methods)
        done = len(self.compared_classes) * len(self.methods) - len(todo)
        if done:
            self.say(f"{done} (class, method) pair(s) already finished in {self.out_dir}; "
                     "not training them again")
        if todo:
            # every evaluation image and mask is readable before hours of training
            self.extractor.examples(self.eval_split, todo[0][0], with_features=False)
            # every pending class's features and blocks at once, into the cache,
            # where the folds and the pairs then find them
            self.extractor.prefetch([self.train_split, self.eval_split],
                                    list(dict.fromkeys(c for c, _ in todo)))
        if self.settings.auto:
            choosing.cross_validate_pairs(self, todo)      # every pair's folds at once
        if self._pairs_on_workers(todo):
            self._train_on_workers(todo)
        else:
            for k, (class_name, method) in enumerate(todo, 1):
                self.say(f"[{k}/{len(todo)}] training {method} for {class_name} on "
                         f"{self.dataset.name}/{self.train_split}")
                self._say_done(self._train_and_score(class_name, method))
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
        if report:
            self.say(f"wrote {self.report(results)}")
        return results

    def _plan(self) -> None:
        """Refuse records of other settings, then leave out (or refuse) the
        classes that cannot be compared; each class's detectors are trained
        here, before any pair."""
        # records of other settings are refused before minutes of detector training
        for c in self.classes:
            for m in self.methods:
                self.store.load(c, m, check_detector=False)
        # a class the training split cannot teach is refused (or skipped)
        # before its detector is tried, which would only say "too few objects"
        folds = self.settings.cv()[1] if self.settings.auto else None
        self.skipped.update(planner.teachable(self.extractor, self.train_split,
                                              self.compared_classes, folds,
                                              self.skip_few_objects, self.say))
        skipped, warnings = planner.with_detectors(self.extractor, self.compared_classes,
                                                   self.skip_few_objects, self.say)
        self.skipped.update(skipped)
        self.detector_warnings.update(warnings)
        if not self.compared_classes:
            raise ValueError(f"no class to compare: {'; '.join(self.skipped.values())}")

    def _say_done(self, record: dict) -> None:
        chosen = f", C {record['C']:g} by cross-validation" if "C_selection" in record else ""
        training = record["training"]
        self.say(f"      {record['method']} {record['class']}: {self.eval_split} VOC IoU "
                 f"{fmt(record['eval_score']['voc_iou_percent'])} %{chosen} "
                 f"({training['fit_seconds']:.1f} s, {training['n_iter']} iterations"
                 f"{'' if training['converged'] else ', stopped at max_iter'})")

    def _pairs_on_workers(self, todo) -> bool:
        """Whether the pending pairs train as tasks of their own: on a Dask
        cluster, and with local workers when there are several pairs at the
        data-set scope (whose training keeps its inference in one process,
        so that a pair at a time would use one core)."""
        if on_cluster():
            return True
        return self.n_jobs != 1 and len(todo) > 1 and self.settings.scope == "dataset"

    def _train_on_workers(self, todo) -> None:
        """Every pending pair as one task on the workers (the Dask cluster of
        ``segstruct.cluster.use_scheduler``, or ``n_jobs`` local processes):
        each writes its model and record as here, and what it would have
        said is said as its record comes back. A pair whose worker dies runs
        again on another and resumes from its checkpoint."""
        # features first (on the cluster too), so that no two pairs of a class
        # compute them at once
        for class_name in dict.fromkeys(c for c, _ in todo):
            for split in (self.train_split, self.eval_split):
                self.extractor.examples(split, class_name)
        where = "on the Dask cluster" if on_cluster() else "on worker processes"
        self.say(f"training {len(todo)} (class, method) pair(s) {where}")
        worker_view = self.worker_view()

        def report(k: int, record: dict) -> None:       # what the worker would have said
            class_name, method = todo[k]
            self.say(f"[{k + 1}/{len(todo)}] {method} for {class_name} on "
                     f"{self.dataset.name}/{self.train_split}")
            if "C_selection" in record:
                choosing.say_curve(self, class_name, method, record["C_selection"])
            for warning in record["diagnosis"]["warnings"]:
                self.say(f"      warning: {class_name}/{method}: {warning}")
            self._say_done(record)

        parallel_map(_train_pair, [(worker_view, c, m) for c, m in todo], self.n_jobs,
                     self.progress, "training pairs", unit="pair", on_result=report)

    def worker_view(self) -> "Comparison":
        """This comparison as a worker's task sees it: quiet, one process
        (its workers are the tasks' own), its messages dropped (what matters
        comes back in the task's result)."""
        view = copy.copy(self)
        view.progress, view.n_jobs = False, 1
        view.say = _discard
        view.extractor = copy.copy(self.extractor)
        view.extractor.n_jobs, view.extractor.progress = 1, False
        return view

    def _train_and_score(self, class_name, method) -> dict:
        model_path = self.store.model_path(class_name, method)
        model_path.parent.mkdir(parents=True, exist_ok=True)
        if self.settings.auto:
            # run() cross-validated every pair at once; a curve gone since is made
            # again by the same path (nothing to do where it is there)
            choosing.cross_validate_pairs(self, [(class_name, method)])

        def warn(text: str) -> None:
            self.say(f"      warning: {class_name}/{method}: {text}")

        # the checkpoint stays until the pair's record is written: an interruption
        # while the eval split is scored then restores the model at once
        trained = train(self.extractor, self.train_split, class_name, method, self.settings,
                        model_path, calibrate=self._needs_temperature(method),
                        keep_checkpoint=True,
                        curve_identity=choosing.curve_identity(self, class_name, method),
                        seed=self.seed, n_jobs=self.n_jobs, progress=self.progress,
                        say=lambda text: self.say(f"      {text}"), warn=warn)
        C = trained.estimator.C
        extra = {key: trained.doc[key] for key in ("C_selection", "temperature_fit")
                 if key in trained.doc}
        estimator, train_score, diagnosis = (trained.estimator, trained.doc["train_score"],
                                             trained.doc["diagnosis"])
        for warning in diagnosis["warnings"]:
            warn(warning)
        start = time.perf_counter()
        evaluation = self.extractor.examples(self.eval_split, class_name)
        voc = estimator.voc_score([ex.graph for ex in evaluation],
                                  [ex.pixel_counts for ex in evaluation])
        # each image's counts, so that the table's intervals can be made (and
        # made again) from the record alone
        eval_score = {**voc.to_dict(), "per_image": [list(c) for c in voc.per_image]}
        config = self.extractor.config
        warning = generalisation(train_score["voc_iou_percent"], eval_score["voc_iou_percent"],
                                 {"top_down": config.detector is not None,
                                  "top_down_folds": config.top_down_folds,
                                  "C": estimator.C, "C_auto": self.settings.auto})
        if warning:
            diagnosis = {**diagnosis, "warnings": [*diagnosis["warnings"], warning]}
            warn(warning)
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
            "n_train_images": trained.doc["n_train_images"],
            "n_eval_images": len(evaluation),
            "eval_ids": [ex.graph.image_id for ex in evaluation],
            "train_score": train_score, "eval_score": eval_score, "diagnosis": diagnosis,
            "eval_seconds": time.perf_counter() - start,
            "detector": self._detector_digest(class_name),
            "model": str(model_paths(trained.path)[0].relative_to(self.out_dir)),
            "training_log": str(log_path(trained.path).relative_to(self.out_dir)),
            "identity": self.identity(),
        }
        if len(self.settings.decisions) > 1:
            # the training examples again only here: train() read them for the fit
            examples = self.extractor.examples(self.train_split, class_name)
            X, Y = [ex.graph for ex in examples], [ex.pixel_counts for ex in examples]
            record["decisions"] = self._score_decisions(
                estimator, X, Y, evaluation, {"train_score": train_score,
                                              "eval_score": eval_score})
        self.store.write(record)
        # the record is written: nothing to resume
        checkpoint_path(trained.path).unlink(missing_ok=True)
        curve_path(trained.path).unlink(missing_ok=True)
        return record

    def _needs_temperature(self, method: str) -> bool:
        """Whether the pair's decisions need an SSVM's marginals calibrated
        (a CRF's scores are its log-probabilities already)."""
        return method != "crf" and any(d != "map" for d in self.settings.decisions)

    def _score_decisions(self, estimator, X, Y, evaluation, map_scores: dict) -> dict:
        """Train and eval VOC scores of every decision (one decision over a
        whole split: the data-set scope, the way VOC counts); ``map_scores``
        are the record's own (the graph cut's), not computed again."""
        start = time.perf_counter()
        X_eval = [ex.graph for ex in evaluation]
        Y_eval = [ex.pixel_counts for ex in evaluation]
        scores = {"map": map_scores}
        for decision in (d for d in self.settings.decisions if d != "map"):
            scores[decision] = {
                split: estimator.voc_score(
                    graphs, labels, decide(estimator, graphs, decision, "dataset",
                                           self.settings.beta)).to_dict()
                for split, graphs, labels in (("train_score", X, Y),
                                              ("eval_score", X_eval, Y_eval))}
        return {"scope": "dataset", "beta": self.settings.beta,
                "temperature": getattr(estimator, "temperature_", None),
                "scores": scores, "seconds": time.perf_counter() - start}

    # ------------------------------------------------------------------ results
    def results(self) -> dict:
        """results.json's content: every finished record, the table and what made it."""
        classes = self.compared_classes
        records = self.store.records(classes, self.methods)
        return {
            "format": RESULTS_FORMAT, "format_version": 2,
            "dataset": self.dataset.name, "data_root": str(self.dataset.root),
            "train_split": self.train_split, "eval_split": self.eval_split,
            "classes": classes, "skipped": self.skipped,
            "detector_warnings": self.detector_warnings, "methods": self.methods,
            "settings": self.settings.to_dict(), "seed": self.seed,
            "features": self.extractor.config.to_dict(),
            "code_version": code_version(), "machine": machine(),
            "total_fit_seconds": sum(r["training"]["fit_seconds"] for r in records),
            "table": score_table(records, classes, self.methods),
            "intervals": table_intervals(records, classes, self.methods),
            "results": records,
        }

    def multiclass(self) -> dict:
        """:func:`segstruct.compare.multiclass.multiclass` of this comparison."""
        return multiclass(self)

    def caption(self, class_name=None, methods=None) -> str:
        """What made a table or figure: data, class, methods, splits, settings, code."""
        s = self.settings
        loss = s.loss if s.loss != "fbeta" else f"fbeta(beta={s.beta:g})"
        parts = [f"data {self.dataset.name}", f"class {class_name}" if class_name else None,
                 f"methods {', '.join(methods or self.methods)}",
                 f"train {self.train_split} / eval {self.eval_split}",
                 f"loss {loss}, scope {s.scope}, {s.C_text()}, M {s.n_triangles}, "
                 f"node weights {s.node_weights}, seed {self.seed}", f"code {code_version()}"]
        return "; ".join(p for p in parts if p)

    def report(self, results: dict | None = None) -> Path:
        """:func:`segstruct.compare.report.write_report` of this comparison
        (its features; ``results``: results.json's content, default read)."""
        return write_report(self.out_dir, results, self.dataset, self.extractor)

    def figures(self, n_images=4, ids=None) -> list[Path]:
        """:func:`segstruct.compare.figures.comparison_figures` of this comparison."""
        return comparison_figures(self, n_images, ids)


def _train_pair(comparison: Comparison, class_name: str, method: str) -> dict:
    """A cluster task: one pair trained and scored (its record)."""
    return comparison._train_and_score(class_name, method)


def _discard(text: str) -> None:
    """A worker's messages: its task's record carries what matters."""
