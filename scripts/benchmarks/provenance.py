"""What made a benchmark's folder: command, code version, machine, date, and
the defaults it depends on.

Every folder under ``results/`` holds a ``provenance.json`` written by
``scripts/bench.py``. Besides the command and the code, it records the
library defaults the benchmark's numbers depend on (:func:`defaults`), by
group, so that a change of one of them is seen: ``scripts/bench.py check``
and the test suite compare the recorded values with today's, and name each
default that moved, so the benchmark is run again before its numbers are
quoted.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import shlex
import sys
from pathlib import Path

#: The groups of defaults a benchmark may depend on.
GROUPS = ("data", "features", "training", "prediction")

def _feature_options() -> dict:
    """The feature options of ``train`` and ``compare`` (by their argparse
    names) at their defaults, read from ``FeatureConfig``: each option's
    default is the setting it sets, or its negation for a ``--no-BLOCK``
    switch."""
    from segstruct.features.config import FeatureConfig
    d = FeatureConfig()
    s = d.superpixels
    return {"superpixels": s.method, "fz_scale": s.scale, "fz_sigma": s.sigma,
            "fz_min_size": s.min_size, "slic_segments": s.n_segments,
            "slic_compactness": s.compactness, "slic_sigma": s.sigma, "words": d.n_words,
            "codebook_descriptors": d.codebook_descriptors,
            # None: the training split (the command's own)
            "codebook_split": None,
            "no_sift": not d.sift, "no_colour": not d.colour, "no_position": not d.position,
            "no_bias": not d.bias,
            # the commands switch the top-down block on (DetectorParams, recorded in the
            # features group); "top_down" is the switch's earlier name, off
            "no_top_down": False, "top_down": False,
            "top_down_folds": d.top_down_folds, "top_down_detector": d.top_down_detector,
            "sift_norm": d.sift_norm, "long_side": d.long_side, "upsampling": d.upsampling,
            "seed": d.seed}


def _training_options() -> dict:
    """The training options of ``train`` and ``compare`` at their defaults.

    None stands for an option left unset, whose value the library's
    ``TrainingSettings`` defaults (``DEFAULTS``, recorded beside) supply: the
    loss, C and its cross-validation, the proposed method's triangles and
    inference. "node_weights" is None too, as every record has held it: the
    option's earlier name ``--weights`` (default None) shares its
    destination, and the record kept the last one's default.
    """
    from segstruct.learn.methods import DEFAULTS
    unset = ("loss", "beta", "triangles", "inference", "C", "C_grid", "folds", "cv_tol",
             "C_extend", "node_weights")
    return {**dict.fromkeys(unset), "no_polish": not DEFAULTS.polish,
            "C_units": DEFAULTS.C_units, "solver": DEFAULTS.solver,
            "projection_set": DEFAULTS.projection_set, "likelihood": DEFAULTS.likelihood,
            "scope": DEFAULTS.scope, "tol": DEFAULTS.tol, "max_iter": DEFAULTS.max_iter}


def _command_defaults(name: str) -> dict:
    """The defaults of a ``segstruct`` command's options that say what it
    computes (not where or how it runs: data, cache, workers, output), by
    their argparse names, from the library objects that hold them.

    Read from the library, not the command line's parsers (scripts use the
    library only): the command line takes each of these defaults from the
    same objects, except ``train --method``'s "bl1" and the plain switches
    (off), which only its parser states; ``tests/test_results.py`` checks
    that this record and the parsers agree.
    """
    from segstruct.compare import EVAL_SPLIT, FIGURE_IMAGES, METHODS_COMPARED, TRAIN_SPLIT
    if name == "train":
        return {**_feature_options(), **_training_options(), "class_name": None,
                "method": "bl1", "split": TRAIN_SPLIT,
                # None: the evaluation split when the data set has one
                "split_val": None, "calibrate": False}
    if name == "compare":
        from segstruct.learn.methods import DEFAULTS
        return {**_feature_options(), **_training_options(), "classes": None,
                "methods": METHODS_COMPARED, "decisions": DEFAULTS.decisions,
                "train_split": TRAIN_SPLIT, "eval_split": EVAL_SPLIT,
                "figure_images": FIGURE_IMAGES, "figure_ids": None, "no_figures": False,
                "multiclass": False}
    if name == "predict":
        from segstruct import predict
        # split None: the data set's evaluation split; ensemble None:
        # ensemble.default_members of the model's features
        return {"decision": predict.DECISION, "beta": predict.BETA,
                "samples": predict.SAMPLES, "split": None, "ensemble": None,
                "overlay": False, "recursive": False, "skip_bad": False}
    raise ValueError(f"no recorded defaults of command {name!r}; one of train, compare, "
                     "predict")


def _group(name: str) -> dict:
    if name == "data":
        from segstruct.datasets.synthetic import GENERATOR_VERSION, make_synthetic_voc
        return {"synthetic_generator": GENERATOR_VERSION,
                "make_synthetic_voc": make_synthetic_voc.__defaults__}
    if name == "features":
        from segstruct import DetectorParams, FeatureConfig
        return {"FeatureConfig": FeatureConfig(), "DetectorParams": DetectorParams()}
    if name == "training":
        from segstruct.learn.selection import cross_validation
        from segstruct.learn.methods import DEFAULTS, METHODS
        # what each method computes; its learner and step are where the code
        # lives, and moving code changes no number
        recipes = {name: {k: v for k, v in spec.items() if k not in ("learner", "step")}
                   for name, spec in METHODS.items()}
        return {"TrainingSettings": DEFAULTS, "METHODS": recipes,
                "C_grid": cross_validation.DEFAULT_GRID,
                "folds": cross_validation.DEFAULT_FOLDS,
                "fold_tol": cross_validation.DEFAULT_FOLD_TOL,
                "train": _command_defaults("train"), "compare": _command_defaults("compare")}
    if name == "prediction":
        from segstruct import ensemble
        return {"ensemble_factors": ensemble.FACTORS,
                "predict": _command_defaults("predict")}
    raise ValueError(f"unknown group of defaults {name!r}; one of {', '.join(GROUPS)}")


def _plain(value):
    """A JSON-able form of a default that reads the same on every machine and
    Python version (reprs of dataclasses and paths, lists for tuples)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    return repr(value)


def defaults(groups) -> dict:
    """Today's defaults of each group in ``groups``, as JSON-able values."""
    return {g: _plain(_group(g)) for g in groups}


def digest(values: dict) -> str:
    """SHA-256 of :func:`defaults`' values (canonical JSON)."""
    text = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def changed_defaults(recorded: dict, current: dict, prefix: str = "") -> list[str]:
    """The dotted names of the defaults that differ between two :func:`defaults`."""
    out = []
    for key in sorted(set(recorded) | set(current)):
        a, b = recorded.get(key, "<absent>"), current.get(key, "<absent>")
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += changed_defaults(a, b, name + ".")
        elif a != b:
            out.append(f"{name}: {a!r} -> {b!r}")
    return out


def machine() -> dict:
    """The machine and the Python a run used."""
    from segstruct.io.provenance import machine as segstruct_machine
    out = segstruct_machine(versions=True)
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    out["cpu_model"] = model or platform.processor()
    try:
        out["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
                                  / 2 ** 30, 1)
    except (ValueError, OSError, AttributeError):
        out["memory_gib"] = None
    try:
        out["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        out["load_average_at_start"] = None
    return out


def record(name: str, argv: list[str], groups, started: datetime.datetime,
           seconds: float, summary: dict | None) -> dict:
    """The ``provenance.json`` of one run of benchmark ``name``."""
    from segstruct.io.provenance import code_version
    values = defaults(groups)
    return {
        "benchmark": name,
        "command": "python scripts/bench.py " + " ".join(shlex.quote(a) for a in argv),
        "code_version": code_version(),
        "python": sys.version.split()[0],
        "machine": machine(),
        "started": started.isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        "defaults": values,
        "defaults_digest": digest(values),
        "summary": summary or {},
    }
