"""``--C auto`` in ``compare``: the cross-validation of its pairs, all at once,
and what it says (functions of a :class:`segstruct.compare.comparison.Comparison`).

:func:`cross_validate_pairs` runs every fold of every pending pair as one
task on the workers and saves each pair's curve beside its model as soon
as its folds are done; a pair's refit (``Comparison._train_and_score``)
takes that curve, which :func:`curve_identity` ties to the run (a pair
whose curve file has gone runs :func:`cross_validate_pairs` alone). On a
Dask cluster the folds are the cluster's tasks in the same way.
"""
from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable

from segstruct.io.files import write_json
from segstruct.learn.selection import cross_validate_many, with_choice
from segstruct.workflow import curve_lines, curve_path, fresh_estimator, resumable_curve

__all__ = ["cross_validate_pairs", "curve_identity", "say_curve"]

#: A method's cross-validation time against bl1's on the same data, for
#: dealing the longest folds first: rounded medians of the times of the
#: leave-one-data-set-out cross-validations on the six classes
#: (docs/history/studies-2026-12.md; proposed slower than bl1, bl2 faster);
#: every other method 1.
_RELATIVE_COST = {"bl2": 0.45, "proposed": 3.5}


def cross_validate_pairs(comparison, todo) -> None:
    """``--C auto``: cross-validate every pending pair at once, each fold of
    each pair one task on the workers (a pair's folds alone would leave
    workers idle), and save each pair's curve beside its model
    (:func:`segstruct.workflow.curve_path`) as soon as its folds are done, so that the pairs'
    refits find it and an interruption loses only the pairs in progress."""
    grid, folds = comparison.settings.cv()
    pending = [(c, m) for c, m in todo
               if resumable_curve(comparison.model_path(c, m), grid, folds,
                                  curve_identity(comparison, c, m),
                                  fold_tol=comparison.settings.cv_tol,
                                  extend=comparison.settings.C_extend) is None]
    if not pending:
        return
    data = {}            # a class's examples once, shared by its methods
    for class_name in dict.fromkeys(c for c, _ in pending):
        train = comparison.extractor.examples(comparison.train_split, class_name)
        data[class_name] = ([ex.graph for ex in train], [ex.pixel_counts for ex in train])
    problems = [(_fold_estimator(comparison, method), *data[class_name], None)
                for class_name, method in pending]
    comparison.say(f"choosing C for {len(pending)} (class, method) pair(s) by {folds}-fold "
                   f"cross-validation over {' '.join(f'{c:g}' for c in grid)} "
                   f"({len(pending) * folds} folds of {len(grid)} fits each)")

    def save(p: int, curve: dict) -> None:
        class_name, method = pending[p]
        curve = with_choice(curve)
        curve["identity"] = curve_identity(comparison, class_name, method)
        path = comparison.model_path(class_name, method)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(curve_path(path), curve)

    # a fold's fits take about (method's factor) x (its class's superpixels)
    costs = [_RELATIVE_COST.get(method, 1.0) * sum(len(g.unary) for g in data[class_name][0])
             for class_name, method in pending]
    cross_validate_many(problems, grid, folds, comparison.seed, comparison.progress,
                        comparison.n_jobs, on_curve=save, costs=costs,
                        fold_tol=comparison.settings.cv_tol,
                        extend=comparison.settings.C_extend)


def _fold_estimator(comparison, method) -> Callable:
    """Makes the folds' estimators: the pair's settings, no log, checkpoint
    nor bar of their own."""
    return functools.partial(fresh_estimator, comparison.settings, method,
                             comparison.settings.cv()[0][0], comparison.n_jobs)


def curve_identity(comparison, class_name, method) -> str:
    """What a pair's saved curve must carry to be reused without a
    checkpoint: this run's identity, the class's detectors and the pair."""
    doc = {"identity": comparison.identity(),
           "detector": comparison._detector_digest(class_name),
           "class": class_name, "method": method}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=repr).encode()).hexdigest()


def say_curve(comparison, class_name, method, curve: dict) -> None:
    """The curve's lines and the C it chose, as the workflow says them
    (:func:`segstruct.workflow.curve_lines`)."""
    where = f"{comparison.dataset.name}/{comparison.train_split}"
    for line in curve_lines(curve, where, class_name, method):
        comparison.say(f"      {line}")
