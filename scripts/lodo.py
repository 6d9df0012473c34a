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

The grid of C that extends itself past its edge (``--C-extend``; the
library's default bound was chosen so, leaving one data set out): ``cv``
with a generous bound on the main classes at the library's block (CamVid's
in test_split/, judged on its test split), then ``c-grid``, which replays
every smaller bound from those curves:

    python scripts/lodo.py cv --out out/lodo/defaults --cv-settings folds/l1/dataset \
        --C-extend 6
    python scripts/lodo.py cv --out out/lodo/defaults/test_split \
        --cv-settings folds/l1/dataset --C-extend 6
    python scripts/lodo.py c-grid --out out/lodo/defaults --C-extend 6 --to docs/studies/c_grid

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
import sys
from pathlib import Path

# the parts, in scripts/lodolib/, import each other as lodolib.*
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lodolib.choice import choose, choose_all, dataset_scores, lodo, lodo_auto  # noqa: E402
from lodolib.cv import cv, cv_task  # noqa: E402
from lodolib.examples import _examples, export  # noqa: E402
from lodolib.extension import c_grid  # noqa: E402
from lodolib.grid import calibrate, ensemble_scorer, features_task, run, walk_task  # noqa: E402
from lodolib.held_out import ensemble_lines, test_split_lines  # noqa: E402
from lodolib.sections import (C_rule_lines, c_agreement_lines, fold_count_lines,  # noqa: E402
                              fold_tol_lines, grouped_cv_lines, refused_lines, rule_C,
                              with_refit_guard)
from lodolib.settings import (DATASETS, DEFAULT_DATA, FEATURES, FOLD_SETTINGS, GRID,  # noqa: E402
                              METHODS, REPO_ROOT, SETTINGS, TOP_DOWN, feature_config, plan,
                              setting_name)
from lodolib.table import table  # noqa: E402

from segstruct.learn.selection import DEFAULT_FOLD_TOL  # noqa: E402

#: What the tests and other scripts use, re-exported from the parts.
__all__ = ["C_rule_lines", "GRID", "_examples", "c_agreement_lines", "c_grid", "calibrate",
           "choose",
           "choose_all", "cv", "cv_task", "dataset_scores", "ensemble_lines", "ensemble_scorer",
           "export", "feature_config", "features_task", "fold_count_lines", "fold_tol_lines",
           "grouped_cv_lines", "lodo", "lodo_auto", "main", "plan", "refused_lines", "rule_C",
           "run", "setting_name", "table", "test_split_lines", "walk_task", "with_refit_guard"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=("run", "cv", "table", "export", "c-grid"))
    p.add_argument("--to", help="export: the folder to write the arrays to; c-grid: the "
                                "folder of its table (default OUT/c_grid)")
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
    p.add_argument("--C-extend", type=int, default=0, metavar="K",
                   help="cv: extend the grid past an end where held-out IoU still rises "
                        "towards it, at most K steps a side (segstruct's --C-extend), into "
                        "cv_tol-TOL_extend-K.jsonl with refits at the C it added; c-grid: "
                        "the K of the file to read (default 0: the grid only)")
    p.add_argument("-j", "--n-jobs", type=int, default=1)
    args = p.parse_args(argv)
    {"run": run, "cv": cv, "table": table, "export": export,
     "c-grid": c_grid}[args.command](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
