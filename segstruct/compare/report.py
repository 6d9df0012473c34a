"""A comparison's ``report.html`` (:mod:`segstruct.report.html`): written by
``segstruct compare`` at the end of a run and rebuilt from a finished
comparison's folder by ``segstruct report DIR``.

The gallery labels every evaluation image with each pair's saved model, as
compare's evaluation did (the same graph cut on the same features: the
model's own codebook and detectors), and scores each image by its (TP, FP,
FN) foreground pixels: the record's ``eval_score["per_image"]`` where the
record holds them, else counted from the labelling.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from segstruct.compare.figures import qualitative_panels
from segstruct.datasets import VOCDataset
from segstruct.features.cache import ArrayCache
from segstruct.features.extraction import FeatureExtractor
from segstruct.io.files import write_text
from segstruct.report.gallery import THUMBNAIL_SIDE, gallery_row, sorted_rows
from segstruct.report.html import FIGURE_TITLES, ClassSection, report_html
from segstruct.segmentation_model import SegmentationModel

__all__ = ["GALLERY_IMAGES", "REPORT_FILE", "class_section", "read_results", "write_report"]

REPORT_FILE = "report.html"
#: Images of a class's gallery unless told otherwise: those where the methods
#: disagree most. Every picture is inline, so a data set's whole evaluation
#: split would make a page too large to open quickly.
GALLERY_IMAGES = 40
#: Images labelled at a time: their full-size masks are dropped once drawn.
_CHUNK = 8


def read_results(out_dir) -> dict:
    """results.json of a finished comparison's folder.

    Raises
    ------
    ValueError
        No results.json there, or not a comparison's.
    """
    path = Path(out_dir) / "results.json"
    if not path.is_file():
        raise ValueError(f"{out_dir} holds no results.json: give the --out folder of a "
                         "finished `segstruct compare` (its results.json is written once "
                         "every pair is trained)")
    try:
        results = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not readable JSON ({err}): run `segstruct compare` "
                         "again with the same --out to write it anew") from None
    if not isinstance(results, dict) or results.get("format") != "segstruct-comparison":
        raise ValueError(f"{path} is not a comparison's results (its 'format' is not "
                         "'segstruct-comparison'): give the --out folder of `segstruct compare`")
    return results


def _record_counts(record: dict) -> dict | None:
    """image id -> (TP, FP, FN) of a record's evaluation, where it holds them."""
    per_image, ids = record.get("eval_score", {}).get("per_image"), record.get("eval_ids")
    if per_image is None or ids is None or len(per_image) != len(ids):
        return None
    return {str(i): tuple(int(v) for v in c) for i, c in zip(ids, per_image)}


def class_section(out_dir, results: dict, class_name: str, dataset: VOCDataset,
                  extractor: FeatureExtractor | None = None, cache: ArrayCache | None = None,
                  max_images: int | None = GALLERY_IMAGES, side: int = THUMBNAIL_SIDE,
                  n_jobs: int = 1) -> ClassSection:
    """One class of the page: its figures (read from ``DIR/figures``) and its
    gallery.

    Parameters
    ----------
    out_dir : the comparison's folder.
    results : its results.json.
    class_name : a class of ``results["classes"]``.
    dataset : the comparison's data.
    extractor : the comparison's own features (compare's run passes its
        extractor); default the first model's (its codebook and detectors).
    cache, n_jobs : feature cache and worker processes of that default
        extractor (features not in the cache are computed).
    max_images : gallery rows kept, most disagreement first (None: every image).
    side : longest side of the gallery's pictures, pixels.
    """
    out_dir = Path(out_dir)
    records = [r for r in results["results"] if r["class"] == class_name]
    section = ClassSection(class_name)
    for key in FIGURE_TITLES:
        path = out_dir / "figures" / f"{key}-{class_name}.png"
        if path.is_file():
            section.figures[key] = path.read_bytes()
    if not records:
        section.notes.append("No finished pair of this class.")
        return section
    models = {r["method"]: SegmentationModel.load(out_dir / r["model"]) for r in records}
    if extractor is None:
        extractor = next(iter(models.values())).extractor(dataset, cache, n_jobs)
    estimators = {m: model.estimator for m, model in models.items()}
    recorded = {r["method"]: _record_counts(r) for r in records}
    ids = dataset.ids(results["eval_split"])
    rows = []
    for start in range(0, len(ids), _CHUNK):
        for panel in qualitative_panels(extractor, class_name, results["eval_split"],
                                        ids[start:start + _CHUNK], estimators):
            counts = {m: c[panel["image_id"]] for m, c in recorded.items()
                      if c is not None and panel["image_id"] in c}
            rows.append(gallery_row(panel, list(estimators), counts, side))
    rows = sorted_rows(rows)
    section.n_images = len(rows)
    section.rows = rows if max_images is None else rows[:max_images]
    return section


def write_report(out_dir, results: dict | None = None, dataset: VOCDataset | None = None,
                 extractor: FeatureExtractor | None = None, cache: ArrayCache | None = None,
                 max_images: int | None = GALLERY_IMAGES, path=None,
                 say: Callable[[str], None] | None = None, n_jobs: int = 1) -> Path:
    """Write a comparison's report.html; its path.

    Parameters
    ----------
    out_dir : the comparison's folder.
    results : its results.json's content (default: read from there).
    dataset : its data (default: results' ``data_root``).
    extractor, cache, max_images, n_jobs : of :func:`class_section`.
    path : where to write (default ``DIR/report.html``).
    say : called with one line per class drawn (default: silent).

    Raises
    ------
    ValueError
        No comparison's results.json in ``out_dir``.
    """
    out_dir = Path(out_dir)
    results = read_results(out_dir) if results is None else results
    dataset = VOCDataset(results["data_root"]) if dataset is None else dataset
    if max_images is not None and max_images < 1:
        raise ValueError(f"the gallery's images must be at least 1, got {max_images}")
    sections = []
    for class_name in results["classes"]:
        if say:
            say(f"report: labelling the {results['eval_split']} images of {class_name}")
        sections.append(class_section(out_dir, results, class_name, dataset, extractor, cache,
                                      max_images, n_jobs=n_jobs))
    target = Path(path) if path is not None else out_dir / REPORT_FILE
    write_text(target, report_html(results, sections))
    return target
