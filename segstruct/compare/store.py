"""The records and models of a comparison's folder.

``DIR/runs/<class>-<method>.json`` holds a finished pair's record and
``DIR/models/<class>-<method>.*`` its model. A record counts as done only
when it was made with this run's data, features and settings (its
``identity``) and, with the top-down block, the same detectors.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from segstruct.evaluate.intervals import comparison_intervals
from segstruct.io.files import write_json
from segstruct.io.persistence import model_paths
from segstruct.learn.methods import FIT_SPREAD_POINTS

__all__ = ["RecordStore", "score_table", "table_intervals"]


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


class RecordStore:
    """Records and model paths of the (class, method) pairs under ``out_dir``.

    Parameters
    ----------
    out_dir : path of the comparison's folder.
    identity : returns what a record must share with this run (data, features,
        settings); called when first needed.
    detector_digest : class name -> its detectors' digest (None without the
        top-down block); may train or load the detectors.
    say : called with one line of text per warning.
    """

    def __init__(self, out_dir, identity: Callable[[], dict],
                 detector_digest: Callable[[str], str | None],
                 say: Callable[[str], None] = print):
        self.out_dir = Path(out_dir)
        self._identity = identity
        self._digest = detector_digest
        self.say = say

    def record_path(self, class_name: str, method: str) -> Path:
        return self.out_dir / "runs" / f"{class_name}-{method}.json"

    def model_path(self, class_name: str, method: str) -> Path:
        return self.out_dir / "models" / f"{class_name}-{method}"

    def load(self, class_name: str, method: str, check_detector: bool = True) -> dict | None:
        """The pair's record if it is this run's; None if it is to be trained.

        Raises
        ------
        ValueError
            A record made with other settings (or, with ``check_detector``,
            with other detectors: that check trains or loads the class's
            detectors).
        """
        path = self.record_path(class_name, method)
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.say(f"warning: {path} is unreadable; training {class_name}/{method} again")
            return None
        mine = self._identity()
        theirs = record.get("identity", {})
        differing = [k for k in mine if theirs.get(k) != mine[k]]
        if not differing and check_detector and \
                record.get("detector") != self._digest(class_name):
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

    def write(self, record: dict) -> Path:
        """Store a finished pair's record (atomically); its path."""
        path = self.record_path(record["class"], record["method"])
        write_json(path, record)
        return path

    def records(self, classes, methods) -> list[dict]:
        """The finished records of the pairs, in class then method order."""
        found = [self.load(c, m) for c in classes for m in methods]
        return [r for r in found if r is not None]


def score_table(records: list[dict], classes, methods) -> dict:
    """The comparison's table: VOC IoU % per class and method on the evaluation
    and training splits, and their means over the classes (a class whose IoU
    is undefined has no say in a mean)."""
    iou = {c: {m: None for m in methods} for c in classes}
    train_iou = {c: {m: None for m in methods} for c in classes}
    for r in records:
        iou[r["class"]][r["method"]] = r["eval_score"]["voc_iou_percent"]
        train_iou[r["class"]][r["method"]] = r["train_score"]["voc_iou_percent"]

    def means(table):
        out = {}
        for m in methods:
            values = [table[c][m] for c in classes if table[c][m] is not None]
            out[m] = float(np.mean(values)) if values else None
        return out
    return {"iou_percent": iou, "mean_iou_percent": means(iou),
            "train_iou_percent": train_iou, "mean_train_iou_percent": means(train_iou)}


def table_intervals(records: list[dict], classes, methods, seed: int = 0) -> dict:
    """The table's bootstrap intervals and verdicts
    (:func:`segstruct.evaluate.intervals.comparison_intervals`) from the
    records' per-image counts; a record made before they were kept has no
    interval (named under ``without_counts``)."""
    counts: dict[str, dict[str, list]] = {c: {} for c in classes}
    ids: dict[str, list[str]] = {}
    without = []
    for r in records:
        per_image = r["eval_score"].get("per_image")
        if per_image is None or r["class"] not in counts:
            without.append(f"{r['class']}/{r['method']}")
            continue
        counts[r["class"]][r["method"]] = per_image
        if "eval_ids" in r:
            ids[r["class"]] = r["eval_ids"]
    # the methods in the table's order, the reference among them
    ordered = {c: {m: counts[c][m] for m in methods if m in counts[c]} for c in classes}
    out = comparison_intervals(ordered, ids if len(ids) == len(classes) else None,
                               spread=FIT_SPREAD_POINTS, seed=seed)
    out["without_counts"] = without
    return out
