"""The grid's settings: data sets, methods, C, top-down blocks and feature settings."""
from __future__ import annotations

import json
from pathlib import Path

from segstruct.features.config import FeatureConfig
from segstruct.features.superpixels import SuperpixelParams
from segstruct.features.topdown.detector import DetectorParams
from segstruct.io.provenance import machine


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


def planned_features(out: Path, default: str = "as-given") -> str:
    """The ``--features`` a results folder's fits were made with (folders
    made before the option: images as given)."""
    path = out / "plan.json"
    if not path.exists():
        return default
    return json.loads(path.read_text()).get("features", "as-given")
